"""The guard inside LlamaIndex's chat memories: ``GuardedMemory`` and ``GuardedChatSummaryMemoryBuffer``.

**``GuardedMemory``** is a ``Memory`` (``llama_index.core.memory``) whose flushes are decided
before any message leaves the short-term history. ``Memory._manage_queue`` flushes by calling
its store's ``archive_oldest_messages(session_id, n)`` and then handing the archived messages to
its blocks; the guard wraps the store (:class:`GuardedChatStore`, every other call passed
through) and, at that call, *observes* the active history (one offset per message, unit
``messages``), *plans* the flush (the oldest ``n`` active messages leave; a covering
``FactExtractionMemoryBlock``, priority 0, is shown them whole and writes the new facts, which
then stand for them: a compaction; without one it is a truncation) and *resolves* it with the
ledger **before archiving**: ``halt`` raises ``UnrecoverableCompactionError`` with nothing
archived, ``spill`` writes the messages (their stored JSON, byte-exact) to the spill store first,
``defer`` archives nothing. The flush is *confirmed* when the blocks took it (``_manage_queue``
returned) and *applied* (committed); a block that failed turns it into the truncation it was.

**``GuardedChatSummaryMemoryBuffer``** is a ``ChatSummaryMemoryBuffer`` deciding each ``get()``:
at the split (``_split_messages_summary_or_full_text``), before the llm runs and before the chat
store is reset, the messages that do not fit are planned to leave; what the llm is shown is its
transcript (``_get_prompt_to_summarize``: a message is shown when its text is there); without an
llm they are deleted (a truncation).

Both keep the guard's state in LlamaIndex's own persistence, beside the session: one message
under the key ``<session key>`` + :data:`STATE_SUFFIX` of the same store (the ``Memory``'s SQL
store, the buffer's chat store), holding a versioned, integrity-checked value. A process that
builds a new memory over the same store and session continues it. A ``FactExtractionMemoryBlock``
keeps its facts in the Python object only: when a new process's block does not hold the facts
the state recorded, their summary has left the context (the ledger records it; the next flush
names the holes). Messages carry no ids: they are matched by a digest of their stored JSON, in
order. History the guard did not record (archived messages, a summary it did not write) is
adopted as unverified (``on_unknown_history="adopt"``) or refused.

Validated with the versions in :data:`SUPPORTED` (the LlamaIndex presets' ``validated_on``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    SessionLogs,
    StoreArg,
    Unset,
    guard_options,
    missing_framework,
    open_store,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import SessionTable, canonical, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.errors import TailguardError
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.llamaindex import MEMORY
from tailguard.spill import SpillStore

try:
    from llama_index.core.async_utils import asyncio_run
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.memory import ChatSummaryMemoryBuffer, Memory
    from llama_index.core.memory.memory_blocks import FactExtractionMemoryBlock
    from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("llamaindex", "LlamaIndex", "llamaindex", MEMORY.validated_on)) from exc

__all__ = ["STATE_KEY", "STATE_SUFFIX", "SUPPORTED", "GuardedChatStore", "GuardedChatSummaryMemoryBuffer",
           "GuardedMemory", "messages_from_spill"]

#: The versions this adapter is validated with: the LlamaIndex presets' ``validated_on``.
SUPPORTED: tuple[str, ...] = MEMORY.validated_on

#: The guard's state is one message under ``<session key> + STATE_SUFFIX``, in its
#: ``additional_kwargs[STATE_KEY]``.
STATE_SUFFIX = "::tailguard"
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.llamaindex"
STATE_VERSION = 1
FRAMEWORK = "llamaindex"
ADOPTED = "adopted"

_LOCKS: SessionTable[Any] = SessionTable(1)


def _to_json(message: ChatMessage) -> Any:
    return message.model_dump(mode="json")


def _digest(message: ChatMessage) -> str:
    return hashlib.sha256(canonical(_to_json(message))).hexdigest()[:16]


def _facts_digest(facts: Sequence[str]) -> str:
    return hashlib.sha256(canonical(list(facts))).hexdigest()[:16]


@dataclass(slots=True, eq=False)
class _Session:
    """One session's guard as this process holds it: ``summary``, the key of the summary in the
    context the guard wrote (with the digest of its message, for the buffer; of the facts, for
    Memory); ``persisted``, the integrity digest of the state last stored."""

    sid: str
    guard: CompactionGuard
    summary: list[str] | None = None
    persisted: str | None = None
    pending: list[tuple[Plan, str]] = field(default_factory=list)

    def close(self) -> None:
        self.guard.close()


class _Guard:
    """What both memories share: the options, the logs, the spill store, the session cache
    (this process's copy of each session's guard) and the steps over an offset tracker."""

    def __init__(self, options: GuardOptions) -> None:
        if options.floor_unit != "messages":
            raise ValueError(f"floor_unit: llamaindex offsets can be 'messages', got {options.floor_unit!r}")
        self.options = options
        self.logs = SessionLogs(options.log)
        self.store = open_store(options.store)
        self.cached: _Session | None = None

    # -- the state value ----------------------------------------------------------------------

    def state_value(self, sess: _Session) -> dict[str, Any]:
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
            "summary": sess.summary,
        }
        value["integrity"] = integrity(value)
        return value

    @staticmethod
    def read_state(stored: Sequence[ChatMessage], sid: str, where: str) -> dict[str, Any] | None:
        if not stored:
            return None
        value = stored[-1].additional_kwargs.get(STATE_KEY)
        check_state_value(value, where, fmt=STATE_FORMAT, version=STATE_VERSION, framework="LlamaIndex")
        assert isinstance(value, dict)
        if value["session"] != sid:
            raise AdapterError(f"{where}: holds the guard state of session {value['session']!r}, not {sid!r}")
        summary = value.get("summary")
        if summary is not None and not (isinstance(summary, list) and len(summary) == 2
                                        and all(isinstance(x, str) for x in summary)):
            raise AdapterError(f"{where}: bad 'summary' in the guard state")
        return value

    @staticmethod
    def state_message(value: dict[str, Any]) -> ChatMessage:
        return ChatMessage(role=MessageRole.SYSTEM, content="", additional_kwargs={STATE_KEY: value})

    def load(self, sid: str, value: dict[str, Any] | None) -> _Session:
        """The session's guard: this process's copy when the store holds the state it last wrote,
        else restored from the store's state, else new."""
        cached = self.cached
        if cached is not None and cached.sid == sid \
                and cached.persisted == (None if value is None else value["integrity"]):
            return cached
        owned = None
        if value is None:
            ledger, owned = self.logs.start(self.options, sid)
            tracker = OffsetTracker(ledger, remember=False)
        else:
            ledger = self.logs.resume(value["ledger"], sid)
            tracker = OffsetTracker.restore(ledger, value.get("tracker"))
        guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                ledger=ledger, tracker=tracker, store=self.store, owned=owned)
        sess = _Session(sid, guard, None if value is None else value["summary"],
                        None if value is None else value["integrity"])
        if cached is not None:
            cached.close()
        self.cached = sess
        return sess

    # -- observing: messages by digest, in order -----------------------------------------------

    def entries(self, sess: _Session, messages: Sequence[ChatMessage], *, summary_at: int | None = None
                ) -> list[Entry]:
        """The tracker's entries for ``messages`` (oldest first): known units matched in order by
        digest, the rest new (keys ``m<offset>:<digest>``); ``summary_at``: the index of the
        summary message the guard wrote (the buffer's first message)."""
        tracker = sess.guard.tracker
        known = list(tracker.units)
        at, fresh = 0, tracker.ledger.history_end
        out: list[Entry] = [Entry(k, True, 0) for k in tracker.summaries if k == ADOPTED]
        for i, m in enumerate(messages):
            if i == summary_at and sess.summary is not None:
                out.append(Entry(sess.summary[0], True, 0))
                continue
            d = _digest(m)
            j = next((j for j in range(at, len(known)) if known[j].rsplit(":", 1)[1] == d), None)
            if j is not None:
                out.append(Entry(known[j]))
                at = j + 1
            else:
                out.append(Entry(f"m{fresh}:{d}"))
                fresh += 1
        if sess.summary is not None and summary_at is None and sess.summary[0] in tracker.summaries:
            out.append(Entry(sess.summary[0], True, 0))  # Memory's facts: beside the history
        return out

    def adopt(self, sess: _Session, count: int, reason: str) -> None:
        if self.options.on_unknown_history == "refuse":
            raise AdapterError(f"session {sess.sid!r}: {reason} before the guard came: that history is not "
                               "verified (on_unknown_history='refuse'; 'adopt' records it as unverified)")
        sess.guard.tracker.adopt(ADOPTED, count, reason=reason)

    # -- resolving -----------------------------------------------------------------------------

    def resolve(self, sess: _Session, plan: Plan, held: dict[str, ChatMessage]) -> str:
        tracker = sess.guard.tracker

        def payload(run: Pair) -> bytes:
            return encode_run(FRAMEWORK, sess.guard.unit, run, tracker, held, _to_json)

        return sess.guard.resolve(plan, payload).action


@dataclass(frozen=True, slots=True)
class _Raised:
    error: BaseException


async def _carry(coro: Coroutine[Any, Any, None]) -> _Raised | None:
    try:
        await coro
    except TailguardError as exc:
        return _Raised(exc)
    return None


def _reraise(result: _Raised | None) -> None:
    if result is not None:
        raise result.error


def _built(memory: Any) -> _Guard:
    """The memory's guard; a memory built without ``from_defaults`` has none (fail closed)."""
    guard = memory._tg
    if not isinstance(guard, _Guard):
        name = type(memory).__name__
        raise AdapterError(f"{name} has no guard: build it with {name}.from_defaults(..., recovery_floor_span=...)")
    return guard


# == Memory ========================================================================================

class _GuardAccess:
    """The guard's accessors, shared by both guarded memories (each keeps its ``_Guard`` in the
    private attribute ``_tg``, set by ``from_defaults``)."""

    _tg: Any

    @property
    def guard(self) -> CompactionGuard | None:
        """This process's guard of the session (None before the first put or get)."""
        return None if self._tg is None or self._tg.cached is None else self._tg.cached.guard

    @property
    def options(self) -> GuardOptions:
        return self._tgg.options

    @property
    def _tgg(self) -> _Guard:
        return _built(self)


class GuardedChatStore(AsyncDBChatStore):
    """A ``Memory``'s store with its flushes decided first: every call goes to ``inner``;
    ``archive_oldest_messages`` asks ``memory`` before it archives anything."""

    inner: AsyncDBChatStore
    _memory: Any = PrivateAttr(default=None)

    async def get_messages(self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE,
                           limit: int | None = None, offset: int | None = None) -> list[ChatMessage]:
        return await self.inner.get_messages(key, status=status, limit=limit, offset=offset)

    async def count_messages(self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE) -> int:
        return await self.inner.count_messages(key, status=status)

    async def add_message(self, key: str, message: ChatMessage,
                          status: MessageStatus = MessageStatus.ACTIVE) -> None:
        await self.inner.add_message(key, message, status=status)

    async def add_messages(self, key: str, messages: list[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        await self.inner.add_messages(key, messages, status=status)

    async def set_messages(self, key: str, messages: list[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        await self.inner.set_messages(key, messages, status=status)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        return await self.inner.delete_message(key, idx)

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        await self.inner.delete_messages(key, status=status)

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        return await self.inner.delete_oldest_messages(key, n)

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        memory = self._memory
        if memory is None or key != memory.session_id:
            return await self.inner.archive_oldest_messages(key, n)
        if not await memory._tg_flush(n):
            return []  # deferred: nothing archived
        return await self.inner.archive_oldest_messages(key, n)

    async def get_keys(self) -> list[str]:
        return await self.inner.get_keys()

    @classmethod
    def class_name(cls) -> str:
        return "GuardedChatStore"


class GuardedMemory(_GuardAccess, Memory):
    """``Memory`` with every flush decided before a message leaves the short-term history.

    Build it as ``Memory``: ``GuardedMemory.from_defaults(session_id=..., token_limit=...,
    memory_blocks=[...], ..., recovery_floor_span=8, on_refuse="spill", store="spills/")``; the
    guard keywords build one :class:`~tailguard.adapters._guard.GuardOptions` (or give
    ``options=``). One ``GuardedMemory`` is one session (its ``session_id``); ``log=`` a
    directory gives each session its own event log.
    """

    _tg: Any = PrivateAttr(default=None)
    _tg_current: Any = PrivateAttr(default=None)

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
        **memory: Any,
    ) -> GuardedMemory:
        opts = guard_options(options, "GuardedMemory", recovery_floor_span=recovery_floor_span,
                             floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log, profile=profile,
                             on_unknown_history=on_unknown_history)
        made = super().from_defaults(**memory)
        assert isinstance(made, GuardedMemory)
        made._tg = _Guard(opts)
        wrapped = GuardedChatStore(inner=made.sql_store)
        wrapped._memory = made
        made.sql_store = wrapped
        return made

    # LlamaIndex's sync wrappers (``asyncio_run``) catch a ``RuntimeError`` and retry the spent
    # coroutine ("Detected nested async"): the guard's refusal is one, so it is carried out of
    # the loop as a value and raised here.
    def put(self, message: ChatMessage) -> None:
        _reraise(asyncio_run(_carry(self.aput(message))))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        _reraise(asyncio_run(_carry(self.aput_messages(messages))))

    def _inner(self) -> AsyncDBChatStore:
        store = self.sql_store
        return store.inner if isinstance(store, GuardedChatStore) else store

    def _covering(self) -> FactExtractionMemoryBlock | None:
        return next((b for b in self.memory_blocks if isinstance(b, FactExtractionMemoryBlock)
                     and b.accept_short_term_memory and b.priority == 0), None)

    async def _manage_queue(self) -> None:
        _built(self)
        async with _LOCKS.alocked(f"{id(self._inner())}:{self.session_id}"):
            sess = await self._tg_load()
            self._tg_current = sess
            try:
                await self._observe(sess)
                await super()._manage_queue()  # each flush: GuardedChatStore -> _tg_flush
            except BaseException:
                self._tg_current = None
                sess.pending.clear()  # a block failed: what was archived left unseen (a truncation)
                await self._observe(sess)
                await self._tg_save(sess)
                raise
            self._tg_current = None
            await self._observe(sess)
            await self._tg_save(sess)

    async def _tg_load(self) -> _Session:
        """The session's guard: cached, restored from the store's state, or new (adopting
        messages flushed before the guard came)."""
        inner, sid = self._inner(), self.session_id
        stored = await inner.get_messages(sid + STATE_SUFFIX, status=None)
        value = self._tgg.read_state(stored, sid, f"session {sid!r} state ({sid + STATE_SUFFIX})")
        sess = self._tgg.load(sid, value)
        tracker = sess.guard.tracker
        if value is None and tracker.ledger.history_end == 0 and not tracker.units and not tracker.summaries:
            archived = await inner.count_messages(sid, status=MessageStatus.ARCHIVED)
            if archived:
                self._tgg.adopt(sess, archived, f"{archived} message(s) flushed from the history")
        return sess

    async def _tg_flush(self, n: int) -> bool:
        """The steps of one flush, at the store's archive call: whether to archive."""
        sess = self._tg_current
        if sess is None:
            raise AdapterError("a flush outside Memory._manage_queue: the guard cannot place it")
        active = await self._observe(sess)
        plan, held, kind = self._plan(sess, active, n)
        if self._resolve(sess, plan, held) == "defer":
            return False
        sess.pending.append((plan, kind))
        return True

    async def _observe(self, sess: _Session) -> list[ChatMessage]:
        """Bring the tracker up to date with the active history (after confirming and applying
        the flushes whose blocks took them); returns it."""
        active = await self._inner().get_messages(self.session_id, status=MessageStatus.ACTIVE)
        self._confirm(sess, active)
        self._apply(sess)
        tracker = sess.guard.tracker
        covering = self._covering()
        if sess.summary is not None and sess.summary[0] in tracker.summaries and (
                covering is None or _facts_digest(covering.facts) != sess.summary[1]):
            sess.summary = None  # a new process: the block does not hold the facts any more
        tracker.observe(self._tgg.entries(sess, active))
        return active

    def _plan(self, sess: _Session, active: list[ChatMessage], n: int
              ) -> tuple[Plan, dict[str, ChatMessage], str]:
        """The flush of the oldest ``n`` active messages: a compaction when a fact block is shown
        them (and the existing facts), else a truncation; and the messages that leave."""
        tracker = sess.guard.tracker
        summaries = set(tracker.summaries)
        units = [e.key for e in self._tgg.entries(sess, active) if e.key not in summaries]
        gone, kept = units[:n], units[n:]
        old = [sess.summary[0]] if sess.summary is not None and sess.summary[0] in summaries else []
        adopted = [k for k in summaries if k == ADOPTED]
        if self._covering() is not None:
            plan = tracker.plan(deleted=[*old, *gone], shown=[*old, *gone], kept=[*adopted, *kept])
        else:
            plan = tracker.plan(deleted=gone, shown=[], kept=[*old, *adopted, *kept])
        leaving = set(gone)
        held = {k: m for k, m in zip(units, active, strict=True) if k in leaving}
        return plan, held, "compact" if self._covering() is not None else "truncate"

    def _resolve(self, sess: _Session, plan: Plan, held: dict[str, ChatMessage]) -> str:
        return self._tgg.resolve(sess, plan, held)

    def _confirm(self, sess: _Session, active: list[ChatMessage]) -> None:
        """The archive took what was decided: the active history is the history before the
        pending flushes without what they let go (no put can come between: the session is locked)."""
        if not sess.pending:
            return
        let_go = {k for plan, _ in sess.pending for k in plan.deleted_keys}
        expected = Counter(k.rsplit(":", 1)[1] for k in sess.guard.tracker.units if k not in let_go)
        if Counter(_digest(m) for m in active) != expected:
            raise AdapterError(f"session {sess.sid!r}: the store's active history is not what the decided flush "
                               "leaves; nothing more is recorded")

    def _apply(self, sess: _Session) -> None:
        """Commit the flushes whose blocks took them."""
        tracker = sess.guard.tracker
        for plan, kind in sess.pending:
            if kind == "compact":
                covering = self._covering()
                key = f"facts:{tracker.ledger.history_end}:{tracker.ledger.next_summary_id}"
                tracker.commit(plan, key=key)
                sess.summary = [key, _facts_digest(covering.facts if covering is not None else [])]
            else:  # the archived messages vanish from the history: a truncation (spilled or not)
                left = [k for k in tracker.units if k not in set(plan.deleted_keys)]
                tracker.observe([*(Entry(k) for k in left),
                                 *(Entry(k, True, 0) for k in tracker.summaries)])
        sess.pending.clear()

    async def _tg_save(self, sess: _Session) -> None:
        covering = self._covering()
        if sess.summary is not None and covering is not None:
            sess.summary = [sess.summary[0], _facts_digest(covering.facts)]
        value = self._tgg.state_value(sess)
        await self._inner().set_messages(self.session_id + STATE_SUFFIX, [self._tgg.state_message(value)])
        sess.persisted = value["integrity"]


# == ChatSummaryMemoryBuffer =======================================================================

class GuardedChatSummaryMemoryBuffer(_GuardAccess, ChatSummaryMemoryBuffer):
    """``ChatSummaryMemoryBuffer`` with every ``get()`` decided before the chat store is reset.

    Build it as the buffer: ``GuardedChatSummaryMemoryBuffer.from_defaults(llm=..., token_limit=...,
    chat_store=..., chat_store_key=..., recovery_floor_span=8, on_refuse="spill", store=...)``.
    One buffer is one session (its ``chat_store_key``).
    """

    _tg: Any = PrivateAttr(default=None)
    _tg_sess: Any = PrivateAttr(default=None)

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        chat_history: list[ChatMessage] | None = None,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
        **buffer: Any,
    ) -> GuardedChatSummaryMemoryBuffer:
        opts = guard_options(options, "GuardedChatSummaryMemoryBuffer", recovery_floor_span=recovery_floor_span,
                             floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log, profile=profile,
                             on_unknown_history=on_unknown_history)
        made = super().from_defaults(chat_history=chat_history, **buffer)
        assert isinstance(made, GuardedChatSummaryMemoryBuffer)
        made._tg = _Guard(opts)
        return made

    def get_all(self) -> list[ChatMessage]:
        """A copy (the buffer's split pops from the list it is given; a refused ``get()`` must
        leave the chat store as it was)."""
        return list(super().get_all())

    def _state_key(self) -> str:
        return self.chat_store_key + STATE_SUFFIX

    def get(self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any) -> list[ChatMessage]:
        _built(self)
        with _LOCKS.locked(f"{id(self.chat_store)}:{self.chat_store_key}"):
            sid = self.chat_store_key
            stored = self.chat_store.get_messages(self._state_key())
            value = self._tgg.read_state(stored, sid, f"session {sid!r} state ({self._state_key()})")
            sess = self._tgg.load(sid, value)
            history = self.get_all()
            self._observe(sess, history)
            self._tg_sess = (sess, history)
            try:
                out = super().get(input=input, initial_token_count=initial_token_count, **kwargs)
                self._confirm(sess, out)
                self._apply(sess, out)
            finally:
                sess.pending.clear()
                self._tg_sess = None
                saved = self._tgg.state_value(sess)
                self.chat_store.set_messages(self._state_key(), [self._tgg.state_message(saved)])
                sess.persisted = saved["integrity"]
            return out

    def _summary_at(self, sess: _Session, history: list[ChatMessage]) -> int | None:
        """0 when the first message is the summary the guard committed, else None."""
        if sess.summary is not None and history and history[0].role == MessageRole.SYSTEM \
                and _digest(history[0]) == sess.summary[1] and sess.summary[0] in sess.guard.tracker.summaries:
            return 0
        return None

    def _observe(self, sess: _Session, history: list[ChatMessage]) -> None:
        """The chat store's messages in the tracker (a summary the guard wrote that is gone leaves)."""
        at = self._summary_at(sess, history)
        if at is None:
            sess.summary = None
        sess.guard.tracker.observe(self._tgg.entries(sess, history, summary_at=at))

    def _split_messages_summary_or_full_text(
        self, chat_history: list[ChatMessage]
    ) -> tuple[list[ChatMessage], list[ChatMessage]]:
        full, rest = super()._split_messages_summary_or_full_text(chat_history)
        if self._tg_sess is None or not rest:
            return full, rest
        sess, history = self._tg_sess
        if self.llm is not None and len(rest) == 1 and rest[0].role == MessageRole.SYSTEM:
            return full, rest  # a lone system message is kept as it is
        plan, held = self._plan(sess, history, rest)
        if self._resolve(sess, plan, held) == "defer":
            return list(history), []  # keep everything; nothing is summarized
        sess.pending.append((plan, "compact" if self.llm is not None else "truncate"))
        return full, rest

    def _plan(self, sess: _Session, history: list[ChatMessage], rest: list[ChatMessage]
              ) -> tuple[Plan, dict[str, ChatMessage]]:
        """The oldest ``len(rest)`` messages leave; the llm is shown those its transcript holds."""
        keys = [e.key for e in self._tgg.entries(sess, history, summary_at=self._summary_at(sess, history))]
        adopted = [k for k in keys if k == ADOPTED]
        keys = [k for k in keys if k != ADOPTED]
        gone, kept = keys[: len(rest)], keys[len(rest):]
        shown: list[str] = []
        if self.llm is not None:
            transcript = self._get_prompt_to_summarize(list(rest))
            shown = [k for k, m in zip(gone, rest, strict=True)
                     if isinstance(m.content, str) and f"{m.role.value}: {m.content}" in transcript]
        plan = sess.guard.tracker.plan(deleted=gone, shown=shown, kept=[*adopted, *kept])
        return plan, dict(zip(gone, rest, strict=True))

    def _resolve(self, sess: _Session, plan: Plan, held: dict[str, ChatMessage]) -> str:
        return self._tgg.resolve(sess, plan, held)

    def _confirm(self, sess: _Session, out: list[ChatMessage]) -> None:
        """``get()`` returned what was decided: the summary first (with an llm), then the kept messages."""
        for plan, kind in sess.pending:
            summary = 1 if kind == "compact" else 0
            kept = [k for k in sess.guard.tracker.units if k not in set(plan.deleted_keys)]
            if (summary and (not out or out[0].role != MessageRole.SYSTEM)) or len(out) - summary != len(kept):
                raise AdapterError(f"session {sess.sid!r}: get() returned {len(out)} message(s), not the "
                                   f"{summary} summary and {len(kept)} kept message(s) decided")

    def _apply(self, sess: _Session, out: list[ChatMessage]) -> None:
        tracker = sess.guard.tracker
        for plan, kind in sess.pending:
            if kind == "compact":
                key = f"summary:{tracker.ledger.history_end}:{tracker.ledger.next_summary_id}"
                tracker.commit(plan, key=key)
                sess.summary = [key, _digest(out[0])]
            else:
                left = [k for k in tracker.units if k not in set(plan.deleted_keys)]
                tracker.observe([*(Entry(k) for k in left), *(Entry(k, True, 0) for k in tracker.summaries)])
        sess.pending.clear()


def messages_from_spill(store: SpillStore, handle: str) -> list[ChatMessage]:
    """The messages of a spill, as they were stored when they left the history."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return [ChatMessage.model_validate(x["item"]) for x in doc["items"]]

