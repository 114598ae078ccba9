"""A ``SqliteSaver`` thread's message history from its ``writes`` table: each checkpoint costs
what changed, not its whole message list.

``langgraph-checkpoint-sqlite`` (3.1) stores every checkpoint whole: its ``checkpoint`` blob
holds the full ``messages`` channel again, so a thread of 200 turns (about 800 checkpoints)
stores and deserializes its context 800 times. The ``writes`` table holds what each super-step's
tasks wrote, saved on the checkpoint they ran from; LangGraph makes the next checkpoint by
applying them (``apply_writes``, in ``writes_sort_key`` order) with the channel's reducer, for
``messages`` ``add_messages``. This module replays those writes from the oldest checkpoint's
messages, applying ``add_messages``'s own rule by message id in O(changes), and gives the same
``(checkpoint id, messages)`` chain :func:`tailguard.importers.langgraph._history` reads
through ``SqliteSaver.list``.

It only answers when it can show the chain is the one the checkpoints hold; otherwise it
returns None and the importer reads every checkpoint (the full read, which also gives the
errors). It gives up on: a thread that is not a single chain (a fork or time travel: a
checkpoint with two children, a parent missing, a loop); a write to a reserved channel other
than ``__pregel_tasks`` (an error, an interrupt, a resume: not a plain super-step); a
``messages`` write that is not a list of plain LangChain messages (what ``add_messages`` would
convert first, an ``Overwrite``); a removal of an id that is not there; a blob that cannot be
read. And it checks what it rebuilt against the checkpoint blobs themselves, where a mistake
could hide: a step that removes or replaces a message, or where several tasks wrote messages
(their order), or that names a message (a message written without an id gets a random one from
``add_messages``, known only to the checkpoint, whose list is then taken), is checked on both
sides (the context before it and after it), and so is the newest checkpoint; the rebuilt list
must equal the stored one (a reducer other than ``add_messages`` shows there). Between two
checked checkpoints the rebuilt chain only appends messages with new ids, in the writes'
order; about 40 blobs of a 200-turn thread's 800 are read.
"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["writes_history"]

_HARMLESS_RESERVED = frozenset({"__pregel_tasks"})  # a Send: its task writes on the next checkpoint


class _Unproven(Exception):
    """The writes cannot be shown to rebuild the checkpoints: read them whole instead."""


def writes_history(conn: sqlite3.Connection, serde: Any, thread: str) -> list[tuple[str, list[Any]]] | None:
    """``(checkpoint id, messages)`` of the thread's root chain, oldest first (a checkpoint whose
    messages did not change shares its parent's list), or None: read the checkpoints whole."""
    try:
        return _history(conn, serde, thread)
    except Exception:  # _Unproven, an SQLite error, a blob the serializer cannot read: the full read decides
        return None


def _chain(conn: sqlite3.Connection, thread: str) -> list[str]:
    """The checkpoint ids of the chain from the newest checkpoint back, oldest first. (Only
    columns stored before the blob are read: the metadata after it would cost a walk through
    the blob's overflow pages per checkpoint.)"""
    rows = conn.execute("SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? "
                        "AND checkpoint_ns = '' ORDER BY checkpoint_id DESC", (thread,)).fetchall()
    if not rows:
        raise _Unproven("no checkpoint")
    parent: dict[str, str | None] = dict(rows)
    parents = [pid for _, pid in rows if pid is not None]
    if len(set(parents)) != len(parents):
        raise _Unproven("a checkpoint with two children (a fork, time travel)")
    chain: list[str] = []
    current: str | None = rows[0][0]
    while current is not None:
        if current not in parent or len(chain) > len(rows):
            raise _Unproven("a parent is missing, or the parents loop")
        chain.append(current)
        current = parent[current]
    chain.reverse()
    return chain


def _writes(conn: sqlite3.Connection, thread: str, chain: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The ``messages`` writes saved on each checkpoint of the chain but the newest (whose writes
    no checkpoint applied yet), each as ``(sort key, task id, type, value)``, in the order
    ``apply_writes`` applies them (LangGraph's ``writes_sort_key``)."""
    from langgraph.checkpoint.base import writes_sort_key

    applied = set(chain[:-1])
    reserved = conn.execute("SELECT DISTINCT checkpoint_id, channel FROM writes WHERE thread_id = ? AND "
                            "checkpoint_ns = '' AND substr(channel, 1, 2) = '__' AND channel <> '__pregel_tasks'",
                            (thread,)).fetchall()
    for cid, channel in reserved:
        if cid in applied:
            raise _Unproven(f"a write to channel {channel!r}")
    out: dict[str, list[tuple[Any, ...]]] = {}
    rows = conn.execute("SELECT checkpoint_id, task_path, task_id, idx, type, value FROM writes WHERE thread_id = ? "
                        "AND checkpoint_ns = '' AND channel = 'messages'", (thread,)).fetchall()
    for cid, task_path, task_id, idx, type_, value in rows:
        if cid in applied:
            out.setdefault(cid, []).append((task_path, task_id, idx, type_, value))
    for found in out.values():
        if len(found) > 1:
            found.sort(key=lambda w: writes_sort_key(w[0] or "", w[1], w[2]))
    return out


def _stored(conn: sqlite3.Connection, serde: Any, thread: str, cid: str) -> list[Any]:
    """The ``messages`` channel of one checkpoint blob, as ``SqliteSaver`` would load it."""
    row = conn.execute("SELECT type, checkpoint FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
                       "AND checkpoint_id = ?", (thread, cid)).fetchone()
    if row is None or row[1] is None:
        raise _Unproven("a missing checkpoint blob")
    checkpoint = serde.loads_typed((row[0], row[1]))
    msgs = (checkpoint.get("channel_values") or {}).get("messages")
    if msgs is None:
        return []
    if not isinstance(msgs, list):
        raise _Unproven("channel messages is not a list")
    return msgs


class _Messages:
    """The ``messages`` channel as ``add_messages`` keeps it, changed in O(changes).

    A message written without an id gets a random one from ``add_messages`` when it is applied
    (``SummarizationMiddleware`` writes its summary so): only the checkpoint knows it, so such a
    step sets ``unnamed`` and the caller takes the list from that checkpoint's blob."""

    def __init__(self, msgs: list[Any]) -> None:
        from langchain_core.messages import (
            AIMessage,
            BaseMessage,
            BaseMessageChunk,
            HumanMessage,
            RemoveMessage,
            SystemMessage,
            ToolMessage,
        )
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        self._appendable = frozenset({AIMessage, HumanMessage, SystemMessage, ToolMessage})  # exactly these: plain

        self._base, self._chunk, self._remove, self._remove_all = (BaseMessage, BaseMessageChunk, RemoveMessage,
                                                                   REMOVE_ALL_MESSAGES)
        self.unnamed = False
        self.value: list[Any] = []
        self.pos: dict[str, int] = {}
        self.reset(msgs)

    def reset(self, msgs: list[Any]) -> None:
        """Take ``msgs`` (a checkpoint's list) as the channel's value."""
        pos: dict[str, int] = {}
        for i, m in enumerate(msgs):
            if self._plain(m) is None:
                raise _Unproven("a stored message without an id")
            pos[m.id] = i  # add_messages indexes a repeated id at its last position
        self.value, self.pos, self.unnamed = msgs, pos, False

    def _plain(self, m: Any) -> str | None:
        """The message's id (None: add_messages gives it one); anything but a plain message is unproven."""
        if not isinstance(m, self._base) or isinstance(m, self._chunk):
            raise _Unproven("not a plain LangChain message")
        if m.id is None and not isinstance(m, self._remove):
            return None
        if not isinstance(m.id, str) or not m.id:
            raise _Unproven("a message id that is not a string")
        return m.id

    def apply(self, right: Any) -> bool:
        """``add_messages(value, right)``; True when it removed or replaced a message."""
        if type(right) is list and len(right) == 1:  # most writes: one new message (the general case below)
            m = right[0]
            if type(m) in self._appendable and type(m.id) is str and m.id and m.id not in self.pos:
                self.pos[m.id] = len(self.value)
                self.value = [*self.value, m]
                return False
        if not isinstance(right, list):
            right = [right]
        ids = [self._plain(m) for m in right]
        if None in ids:
            self.unnamed = True
        cut = None
        for i, m in enumerate(right):
            if isinstance(m, self._remove) and m.id == self._remove_all:
                cut = i
        if cut is not None:
            value = right[cut + 1:]
            if any(isinstance(m, self._remove) for m in value):
                raise _Unproven("a RemoveMessage kept in the channel")
            self.value = value
            self.pos = {m.id: i for i, m in enumerate(value) if m.id is not None}
            return True
        if not right:
            return False
        merged = self.value.copy()
        remove: set[str] = set()
        changed = False
        for m, key in zip(right, ids, strict=True):
            if key is not None and (at := self.pos.get(key)) is not None:
                changed = True
                if isinstance(m, self._remove):
                    remove.add(key)
                else:
                    remove.discard(key)
                    merged[at] = m
            elif isinstance(m, self._remove):
                raise _Unproven(f"a removal of id {m.id!r}, which is not there")
            else:
                if key is not None:
                    self.pos[key] = len(merged)
                merged.append(m)
        if remove:
            merged = [m for m in merged if m.id not in remove]
            self.pos = {m.id: i for i, m in enumerate(merged) if m.id is not None}
        self.value = merged
        return changed


def _same(rebuilt: list[Any], stored: list[Any]) -> bool:
    """Whether the stored list is the rebuilt one, a message rebuilt without an id matching the
    stored message with that id (the one ``add_messages`` gave it)."""
    if len(rebuilt) != len(stored):
        return False
    for r, m in zip(rebuilt, stored, strict=True):
        if r is m or r == m:
            continue
        if r.id is not None or type(r) is not type(m) or r.model_copy(update={"id": m.id}) != m:
            return False
    return True


def _history(conn: sqlite3.Connection, serde: Any, thread: str) -> list[tuple[str, list[Any]]]:
    chain = _chain(conn, thread)
    writes = _writes(conn, thread, chain)
    state = _Messages(_stored(conn, serde, thread, chain[0]))
    out: list[tuple[str, list[Any]]] = [(chain[0], state.value)]
    check: list[int] = []  # chain indexes to compare with their blobs
    for index in range(1, len(chain)):
        cid = chain[index]
        found = writes.get(chain[index - 1])
        if found is None:
            out.append((cid, state.value))
            continue
        changed = len(found) > 1 and len({w[1] for w in found}) > 1
        for _, _, _, type_, value in found:
            changed = state.apply(serde.loads_typed((type_, value))) or changed
        if changed or state.unnamed:  # also the context before it: what a removal hides must be right
            check.append(index - 1)
        if state.unnamed:  # the ids add_messages gave are in the checkpoint only
            stored = _stored(conn, serde, thread, cid)
            if not _same(state.value, stored):
                raise _Unproven(f"checkpoint {cid}: the writes do not rebuild its messages")
            state.reset(stored)
        elif changed:
            check.append(index)
        out.append((cid, state.value))
    for index in sorted({*check, len(chain) - 1}):
        if not _same(out[index][1], _stored(conn, serde, thread, chain[index])):
            raise _Unproven(f"checkpoint {chain[index]}: the writes do not rebuild its messages")
    if not any(msgs for _, msgs in out):
        raise _Unproven("no messages")
    return out
