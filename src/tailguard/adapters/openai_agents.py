"""The guard inside the OpenAI Agents SDK's ``OpenAIResponsesCompactionSession``.

``GuardedResponsesCompactionSession`` is a drop-in subclass (same arguments, plus
``recovery_floor_span``, ``on_refuse``, ``store``, ``log``, ``profile``, ``state_store`` and
``on_unknown_history``). It decides every compaction at the one point all of the SDK's paths
pass through, the ``responses.compact`` call (its ``client`` is wrapped), **before** the request
is sent and before the store is touched: it knows there exactly what the summarizer is shown
(the request's ``input``; nothing in ``previous_response_id`` mode) and what the SDK will
replace:

- a manual ``run_compaction()``, and the Runner's automatic compaction over a store without
  suffix replacement: the **whole** store is replaced (under ``SessionSettings(limit=N)`` a
  fresh session object shows only the newest ``N`` items: the older ones leave unseen);
- the Runner's automatic compaction over a native store with ``_get_compaction_snapshot``
  (``SQLiteSession``): only the suffix it sends (the items of the latest model exchange) is
  replaced; the older items stay in the store **verbatim**.

Offsets: one per stored item, given when the guard first observes it (at the start of each
compaction run). Items have no stable ids: the guard keeps, per stored item, the digest of its
API form and its role: a *unit* of the verbatim tail (its offset), a *carrier* of a summary
(the summary's content is in it), or an *echo* (the user messages the compact endpoint
returns beside its compaction item, which carry nothing the compaction item does not).

The modelling of a compaction, in ledger terms (profile ``partitioned``): the store after it
is ``P + O``, the kept older items ``P`` then the compacted output ``O`` (echoes, then the
compaction item), so no unit stays in the tail (``tail_start = n``). The new summary is
``O``'s compaction item **together with the items of P that stay verbatim** and would otherwise
be lost to the tail: the units of ``P`` and the carriers in ``P`` of a summary shown only in
part. A verbatim copy is a perfect summary of itself, so this composite summarizer saw, whole,
every unit it either kept verbatim or sent, and every earlier summary all of whose carriers
it kept or sent (``saw``: its coverage flows into the new one). An earlier summary all of
whose carriers stay in ``P`` is kept beside it (``keeps``). A unit, or a carrier, that is
neither sent nor kept leaves unseen: a hole, refused. So the native suffix replacement (which
keeps what it does not send) is never refused, and the whole-store replacement under a window
is refused exactly when something older than the window would go. The compaction item is
taken to summarize everything it was sent, user messages included (the assumption made of
every summarizer, and the preset's); the echoes add nothing to it. Sound: the new summary is
in the context only while every carrier of it is in the store (a popped carrier evicts it),
and it is seen only when all of its carriers are sent or kept.

State. The guard's state (the ledger's snapshot, spec section 11, and the digest and role
of each stored item) is kept beside the items by a state store: for ``SQLiteSession`` a side
table ``tailguard_state`` in the same database (default), for any other store one you pass
(``state_store=``: :class:`FileStateStore`, :class:`MemoryStateStore` or your own ``load`` and
``save``). A new session object over the same store restores it and continues exactly (its
log, a path, gets a ``resume`` line). Not a dedicated item in the store: the SDK reads the
underlying store directly (its compaction input, its suffix match against the model exchange),
so such an item would be sent to ``responses.compact`` and would stop every automatic
compaction from matching. A store that already holds a compaction item the guard did not make
is *adopted* (``Ledger.adopt``: everything up to its last compaction item predates the guard,
unverified, one summary all of whose items are its carriers), or refused with
``on_unknown_history="refuse"`` (a :class:`~tailguard.adapters._guard.GuardOptions` field, as in
every adapter). The log's header names the session (the underlying store's ``session_id``);
``log=`` may be a directory or a function from session id to path (one file per session).

``compaction_mode="previous_response_id"`` (and ``"auto"`` when it resolves to it) is decided
as a compaction whose summarizer saw nothing: the server compacts what the client never sees.
The compacted output keeps no verbatim tail, so a ``recovery_floor_span`` above 0 is refused
with ``floor_in_tail`` on every compaction (the default is 0). Under ``on_refuse="defer"``
the compaction is skipped before the request; under ``"spill"`` the units it deletes are
spilled first.

The guard's options are one :class:`~tailguard.adapters._guard.GuardOptions` (``options=``), or
the keywords above, from which it is built once; giving both is a ``TypeError``. A compaction
takes the adapters' named steps: ``_observe`` (the store, at the start of the compaction run),
``_plan`` and ``_resolve`` (at the compact request), then, once the SDK has replaced the store,
``_confirm`` and ``_apply``.

Validated with the versions in :data:`SUPPORTED` (the OpenAI Agents SDK preset's
``validated_on``). Private hooks of the SDK this module relies on:
``OpenAIResponsesCompactionSession._run_compaction_locked`` (its keyword arguments, among them
``read_snapshot``), the ``client`` property and ``client.responses.compact`` as the only
request, ``SQLiteSession._get_compaction_snapshot`` (its ``replace_suffix``) and
``SQLiteSession._locked_connection`` and
``agents.run_internal.items.normalize_input_items_for_api``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    OnUnknownHistory,
    Resolution,
    SessionLogs,
    SpillFailed,
    StoreArg,
    Unset,
    guard_options,
    missing_framework,
)
from tailguard.adapters._offsets import AdapterError, OffsetTracker, Plan
from tailguard.adapters._sessions import integrity as _integrity
from tailguard.adapters._spill_tool import encode_spill
from tailguard.base.errors import SnapshotError
from tailguard.base.intervals import difference, interval, normalize
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.openai_agents import PRESET

try:
    from agents import SQLiteSession
    from agents.memory.openai_responses_compaction_session import OpenAIResponsesCompactionSession
    from agents.run_internal.items import normalize_input_items_for_api
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("openai_agents", "the OpenAI Agents SDK", "openai-agents",
                                        PRESET.validated_on)) from exc

__all__ = ["SUPPORTED", "FileStateStore", "GuardedResponsesCompactionSession", "MemoryStateStore",
           "SQLiteStateTable", "StateStore"]

#: The versions this adapter is validated with: the OpenAI Agents SDK preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

_ALL = 2_147_483_647
STATE_FORMAT = "tailguard.openai-agents"
STATE_VERSION = 1


def _digest(item: Any) -> str:
    return hashlib.sha256(json.dumps(item, sort_keys=True, default=str).encode()).hexdigest()


def _digests(items: list[Any]) -> list[str]:
    return [_digest(x) for x in normalize_input_items_for_api(list(items))]


def _is_summary(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "compaction"


# -- where the state is kept ------------------------------------------------------------------

class StateStore(Protocol):
    """Where a guarded session's state lives: one JSON text per session key."""

    def load(self, key: str) -> str | None: ...

    def save(self, key: str, value: str) -> None: ...


class MemoryStateStore:
    """States in a dict (one process; tests, or a store you persist yourself)."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def load(self, key: str) -> str | None:
        return self.values.get(key)

    def save(self, key: str, value: str) -> None:
        self.values[key] = value


class FileStateStore:
    """One JSON file per session in ``directory`` (written whole, then renamed into place)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")

    def load(self, key: str) -> str | None:
        path = self._path(key)
        return path.read_text(encoding="utf-8") if path.exists() else None

    def save(self, key: str, value: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(value)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._path(key))


class SQLiteStateTable:
    """A side table ``tailguard_state`` in a ``SQLiteSession``'s own database, written through
    the session's own connection and lock (so an in-memory database works too)."""

    TABLE = "tailguard_state"

    def __init__(self, session: SQLiteSession) -> None:
        self.session = session
        with session._locked_connection() as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {self.TABLE} "
                         "(session_id TEXT PRIMARY KEY, state TEXT NOT NULL)")
            conn.commit()

    def load(self, key: str) -> str | None:
        with self.session._locked_connection() as conn:
            row = conn.execute(f"SELECT state FROM {self.TABLE} WHERE session_id = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def save(self, key: str, value: str) -> None:
        with self.session._locked_connection() as conn:
            conn.execute(f"INSERT OR REPLACE INTO {self.TABLE} (session_id, state) VALUES (?, ?)", (key, value))
            conn.commit()


def _default_state_store(under: Any) -> StateStore | None:
    return SQLiteStateTable(under) if isinstance(under, SQLiteSession) else None


# -- what the guard knows of each stored item ---------------------------------------------------

Kind = Literal["unit", "carrier", "echo"]


@dataclass(frozen=True, slots=True)
class _Slot:
    """One stored item: its digest, and a unit (``ref``: its offset), a carrier of summary
    ``ref`` or an echo (carries nothing)."""

    digest: str
    kind: Kind
    ref: int | str

    def dump(self) -> list[Any]:
        return [self.digest, self.kind, self.ref]

    @classmethod
    def load(cls, value: Any) -> _Slot:
        if (not isinstance(value, list) or len(value) != 3 or not isinstance(value[0], str)
                or value[1] not in ("unit", "carrier", "echo")
                or not isinstance(value[2], int if value[1] == "unit" else str)):
            raise AdapterError(f"state: not an item record: {value!r}")
        return cls(value[0], value[1], value[2])


@dataclass(slots=True)
class _Compaction:
    """One compaction run: the store as it began, the snapshot the SDK read (the native suffix
    replacement), and once decided at the compact request, the plan, how many older items it
    keeps and the summary's carriers among them."""

    items: list[Any]
    snapshot: Any = None
    start: int | None = None
    replaced: bool | None = None
    plan: Plan | None = None
    kept: int = 0
    window: list[str] = field(default_factory=list)
    composite: frozenset[str] = frozenset()


class _Deferred(Exception):
    """Raised at the compact request to skip the compaction (``on_refuse="defer"``)."""


class _GuardedResponses:
    def __init__(self, responses: Any, session: GuardedResponsesCompactionSession) -> None:
        self._responses = responses
        self._session = session

    async def compact(self, **kwargs: Any) -> Any:
        self._session._before_compact(kwargs)
        return await self._responses.compact(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._responses, name)


class _GuardedClient:
    """The session's OpenAI client with ``responses.compact`` decided first."""

    def __init__(self, client: Any, session: GuardedResponsesCompactionSession) -> None:
        self._client = client
        self.responses = _GuardedResponses(client.responses, session)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class GuardedResponsesCompactionSession(OpenAIResponsesCompactionSession):
    """``OpenAIResponsesCompactionSession`` that refuses to delete stored items unseen."""

    def __init__(
        self,
        session_id: str,
        underlying_session: Any,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        state_store: StateStore | Unset | None = UNSET,
        on_unknown_history: str | Unset = UNSET,
        **kwargs: Any,
    ) -> None:
        super().__init__(session_id, underlying_session, **kwargs)
        self.options = guard_options(options, "GuardedResponsesCompactionSession", {"recovery_floor_span": 0},
                                     recovery_floor_span=recovery_floor_span, on_refuse=on_refuse,
                                     store=store, log=log, profile=profile, on_unknown_history=on_unknown_history)
        self.state_store = _default_state_store(underlying_session) if state_store is UNSET else state_store
        self._state_key = str(getattr(underlying_session, "session_id", session_id))
        self._slots: list[_Slot] = []
        self._items: list[Any] = []  # the store as last observed (spill payloads)
        self._run: _Compaction | None = None
        saved = self.state_store.load(self._state_key) if self.state_store is not None else None
        if saved is None:
            ledger, owned = SessionLogs(self.options.log).start(self.options, self._state_key)  # header: session
            self.guard = CompactionGuard(self.options, framework="openai-agents", units=("messages",),
                                         session=self._state_key, ledger=ledger, owned=owned)
            self._fresh = True  # the first store read may adopt what predates the guard
        else:
            self._fresh = False
            self.guard = self._restore(saved)
        self._save()  # from now on the state store holds the session: a restart at any point continues it

    @property
    def on_unknown_history(self) -> OnUnknownHistory:
        """What a first store holding a compaction item the guard did not make does
        (``options.on_unknown_history``)."""
        return self.options.on_unknown_history

    # -- state ----------------------------------------------------------------------------------

    def _restore(self, text: str) -> CompactionGuard:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise AdapterError(f"state: not JSON ({exc})") from None
        if not isinstance(value, dict) or value.get("format") != STATE_FORMAT:
            raise AdapterError("state: not a tailguard OpenAI Agents SDK state")
        if value.get("version") != STATE_VERSION:
            raise AdapterError(f"state: version {value.get('version')!r}; this tailguard reads {STATE_VERSION}")
        if value.get("integrity") != _integrity(value):
            raise AdapterError("state: it does not match its integrity digest (altered or damaged)")
        if value.get("session") != self._state_key:
            raise AdapterError(f"state: of session {value.get('session')!r}, not {self._state_key!r}")
        slots = value.get("slots")
        if not isinstance(slots, list):
            raise AdapterError("state: slots: expected a list")
        self._slots = [_Slot.load(s) for s in slots]
        fresh = value.get("fresh", False)
        if not isinstance(fresh, bool):
            raise AdapterError("state: fresh: expected true or false")
        self._fresh = fresh
        try:
            ledger = SessionLogs(self.options.log).resume(value.get("ledger"), self._state_key)
        except SnapshotError as exc:
            raise AdapterError(f"state: cannot continue session {self._state_key!r} from it: {exc}") from exc
        return CompactionGuard(self.options, framework="openai-agents", units=("messages",),
                               session=self._state_key, ledger=ledger, tracker=OffsetTracker(ledger))

    def state(self) -> dict[str, Any]:
        """The guard's state as the state store keeps it (a JSON value)."""
        value: dict[str, Any] = {"format": STATE_FORMAT, "version": STATE_VERSION, "session": self._state_key,
                                 "ledger": self.guard.ledger.snapshot(),
                                 "slots": [s.dump() for s in self._slots], "fresh": self._fresh}
        value["integrity"] = _integrity(value)
        return value

    def _save(self) -> None:
        if self.state_store is not None:
            self.state_store.save(self._state_key, json.dumps(self.state(), sort_keys=True))

    def close(self) -> None:
        """Close the guard's log (a file it opened)."""
        self.guard.close()
        self.guard.ledger.close()

    async def pop_item(self) -> Any:
        """The SDK's ``pop_item``. Under ``spill`` the item about to be popped is spilled first,
        so its removal (a truncation, recorded when the guard next reads the store) is
        recoverable and later compactions are not refused for it. Under ``halt`` and ``defer``
        the removal of an item no summary covers is a prior truncation: the guard cannot tell an
        undo from budget enforcement, and a later compaction across it is refused."""
        await self._spill_before_removal(last=1)
        return await super().pop_item()

    async def clear_session(self) -> None:
        """The SDK's ``clear_session``; under ``spill`` every item is spilled first (as
        :meth:`pop_item` does for one)."""
        await self._spill_before_removal(last=None)
        await super().clear_session()

    async def _spill_before_removal(self, *, last: int | None) -> None:
        """Under ``spill``: spill the newest ``last`` stored items (all when None) that are the
        session's own offsets, before the store loses them."""
        if self.guard.on_refuse != "spill" or self.guard.store is None:
            return
        items = await self.underlying_session.get_items(limit=_ALL)
        try:
            self._observe(items)
            going = self._slots if last is None else self._slots[-last:]
            offsets = [s.ref for s in going if s.kind == "unit" and isinstance(s.ref, int)]
            try:
                self.guard.spill_runs(normalize((o, o + 1) for o in offsets), self._payload)
            except SpillFailed as exc:
                raise AdapterError(f"{exc}: {exc.__cause__}; nothing was removed") from exc.__cause__
        finally:
            self._save()

    # -- the points the SDK gives: the compaction run, its snapshot, the compact request ------

    @property  # type: ignore[override]
    def client(self) -> Any:
        return _GuardedClient(super().client, self)

    async def _run_compaction_locked(self, args: Any, *, wrapper: Any, **kwargs: Any) -> None:
        items = await self.underlying_session.get_items(limit=_ALL)
        try:
            self._observe(items)
            run = _Compaction(items)
            reader = kwargs.get("read_snapshot") or getattr(self.underlying_session, "_get_compaction_snapshot", None)
            if reader is not None:
                kwargs["read_snapshot"] = self._snapshot_reader(reader, run)
            self._run = run
            try:
                await super()._run_compaction_locked(args, wrapper=wrapper, **kwargs)
            except _Deferred:
                return
            finally:
                self._run = None
            if run.plan is None:
                return  # not approved by the SDK: nothing was decided
            after = await self.underlying_session.get_items(limit=_ALL)
            plan = self._confirm(run, after)
            if plan is not None:
                self._apply(run, plan, after)
        finally:
            self._save()

    def _snapshot_reader(self, reader: Callable[[int], Awaitable[Any]],
                         run: _Compaction) -> Callable[[int], Awaitable[Any]]:
        async def read(limit: int) -> Any:
            snapshot = await reader(limit)
            if snapshot is None:
                return None
            run.snapshot = snapshot

            async def replace(start: int, output: list[Any]) -> bool:
                run.start = start
                run.replaced = bool(await snapshot.replace_suffix(start, output))
                return run.replaced

            return dataclasses.replace(snapshot, replace_suffix=replace)
        return read

    def _before_compact(self, request: dict[str, Any]) -> None:
        """The compact request, before it is sent: decide it (``halt`` raises from here)."""
        run = self._run
        if run is None:
            raise AdapterError("responses.compact was called outside a compaction run; the guard cannot "
                               "know what it replaces")
        window = [] if "input" not in request else [_digest(x) for x in request["input"]]
        total = len(self._slots)
        kept = 0
        if run.snapshot is not None and window:
            kept = max(0, total - len(window))  # the native suffix replacement keeps the rest
        run.window = window
        plan, composite = self._plan(kept, window)
        if self._resolve(plan).action == "defer":
            raise _Deferred
        run.plan, run.kept, run.composite = plan, kept, composite

    # -- the steps ----------------------------------------------------------------------------

    def _observe(self, items: list[Any]) -> None:
        """Items appended get the next offsets, items popped off the end are truncations (or
        evict their summary). The store changes only by appending, popping off the end and
        clearing, so the items after the longest common prefix with what the guard last saw were
        popped (truncations) and the store's items after it are new (popped, then appended). A first store that holds a
        compaction item the guard did not make is adopted (or refused)."""
        known = [s.digest for s in self._slots]
        if self._items and items[:len(self._items)] == self._items:  # the usual case: appended
            digests = known + _digests(items[len(known):])
        else:
            digests = _digests(items)
        led = self.guard.ledger
        keep = 0  # the store's API appends, pops off the end and clears: a common prefix, then new items
        for a, b in zip(known, digests, strict=False):
            if a != b:
                break
            keep += 1
        gone = self._slots[keep:]
        for lo, hi in normalize((s.ref, s.ref + 1) for s in gone if s.kind == "unit" and isinstance(s.ref, int)):
            led.truncate(lo, hi)
        for sid in dict.fromkeys(str(s.ref) for s in gone if s.kind == "carrier"):
            if sid in led.summaries:
                led.evict_summary(sid)
        slots = self._slots[:keep]
        new = list(range(keep, len(items)))
        if self._fresh and new:
            last = max((i for i in new if _is_summary(items[i])), default=-1)
            if last >= 0:
                if self.on_unknown_history == "refuse":
                    raise AdapterError(f"the store holds a compaction item the guard did not make (item {last}); "
                                       "on_unknown_history='refuse'")
                sid = led.adopt(last + 1, reason=f"the store held {last + 1} items up to a compaction item "
                                                 "when the guard came")
                slots += [_Slot(digests[i], "carrier", sid) for i in range(last + 1)]
                new = new[last + 1:]
        if new:
            bad = next((i for i in new if _is_summary(items[i])), None)
            if bad is not None:
                raise AdapterError(f"a compaction item the guard did not record appeared in the store (item {bad})")
            at = led.history_end
            led.append(len(new))
            slots += [_Slot(digests[i], "unit", at + j) for j, i in enumerate(new)]
        self._fresh = False
        self._slots = slots
        self._items = list(items)

    def _plan(self, kept: int, window: list[str]) -> tuple[Plan, frozenset[str]]:
        """The compaction that keeps the first ``kept`` stored items verbatim and replaces the
        rest, its summarizer sent ``window`` (digests). Returns the plan and the summaries the
        composite summarizer saw with carriers among the kept items (they carry over)."""
        led = self.guard.ledger
        n = led.history_end
        slots = self._slots
        sent: set[int] = set()
        i, j = len(slots) - 1, len(window) - 1
        while i >= kept and j >= 0 and slots[i].digest == window[j]:
            sent.add(i)
            i, j = i - 1, j - 1
        units = [(k, s) for k, s in enumerate(slots) if s.kind == "unit"]
        seen = [int(s.ref) for k, s in units if k < kept or k in sent]
        deleted = tuple(normalize((int(s.ref), int(s.ref) + 1) for _, s in units))
        run = next((r for r in normalize((o, o + 1) for o in seen) if r[1] == n), (n, n))
        saw: list[str] = []
        keeps: list[str] = []
        composite: set[str] = set()
        dropped: list[str] = []
        for sid in led.summaries:
            where = [k for k, s in enumerate(slots) if s.kind == "carrier" and s.ref == sid]
            if where and all(k < kept for k in where):
                keeps.append(sid)
            elif where and all(k < kept or k in sent for k in where):
                saw.append(sid)
                if any(k < kept for k in where):
                    composite.add(sid)
            else:
                dropped.append(sid)
        plan = Plan(run, run, n, tuple(saw), tuple(keeps), deleted, tuple(difference(list(deleted), interval(*run))),
                    tuple(str(int(s.ref)) for _, s in units), tuple(dropped))
        return plan, frozenset(composite)

    def _resolve(self, plan: Plan) -> Resolution:
        return self.guard.resolve(plan, self._payload)

    def _confirm(self, run: _Compaction, after: list[Any]) -> Plan | None:
        """The plan to commit, or None when the SDK did not replace the store after all."""
        if run.snapshot is not None:  # the native suffix replacement
            if not run.replaced:
                return None
            if run.start is None or len(run.snapshot.items) - run.start != len(self._slots) - run.kept:
                raise AdapterError("the SDK replaced another suffix than the one it sent; nothing was recorded")
        elif after == run.items:
            return None
        if _digests(after[:run.kept]) != [s.digest for s in self._slots[:run.kept]]:
            raise AdapterError("the items the compaction kept changed; nothing was recorded")
        return run.plan

    def _apply(self, run: _Compaction, plan: Plan, after: list[Any]) -> None:
        """Commit ``plan``: the new summary is the output's compaction item with the kept units
        and the kept carriers of the summaries it saw in part."""
        led = self.guard.ledger
        sid = led.next_summary_id
        led.commit(summary_input=plan.summary_input, summary_covers=plan.summary_covers,
                   tail_start=plan.tail_start, summary=sid, saw=list(plan.saw), keeps=list(plan.keeps))
        alive = set(plan.keeps)
        fresh: list[_Slot] = []
        for s in self._slots[:run.kept]:
            if s.kind == "unit" or (s.kind == "carrier" and s.ref in run.composite):
                fresh.append(_Slot(s.digest, "carrier", sid))
            elif s.kind == "carrier" and s.ref not in alive:
                fresh.append(_Slot(s.digest, "echo", s.ref))  # its summary was seen whole: it left
            else:
                fresh.append(s)
        output = after[run.kept:]
        digests = _digests(output)
        anchor = any(_is_summary(x) for x in output)
        for item, d in zip(output, digests, strict=True):
            fresh.append(_Slot(d, "carrier" if _is_summary(item) or not anchor else "echo", sid))
        self._slots = fresh
        self._items = list(after)

    # -- helpers ------------------------------------------------------------------------------

    def _payload(self, run: Pair) -> bytes:
        items = []
        for s, item in zip(self._slots, self._items, strict=False):
            if s.kind == "unit" and isinstance(s.ref, int) and run[0] <= s.ref < run[1]:
                items.append(((s.ref, s.ref + 1), f"item-{s.ref}", item))
        return encode_spill("openai-agents", self.guard.unit, run, items)

