"""The guard inside LangChain v1's ``SummarizationMiddleware``.

``GuardedSummarizationMiddleware`` is a drop-in subclass: every keyword of the base class, plus
``recovery_floor_span``, ``floor_unit``, ``on_refuse``, ``store``, ``log`` and ``profile``.
Before the base class would return its update (``RemoveMessage(REMOVE_ALL_MESSAGES)``, the
summary, the kept messages), the guard has

- given every message offsets by its id (one per message, or its token count with
  ``floor_unit="tokens"``), and recorded messages someone else removed as truncations;
- taken the summarizer's input from the trimmed list the base class hands its summarizer
  (``_trim_messages_for_summary``); a message the trimmer cut part-way (``allow_partial=True``
  keeps the id and cuts the content) is unseen, and so is the whole input when the base class
  falls back to cutting the middle out of the prompt (``_overflow_retry_prompt``);
- recorded whether the earlier summary (the message with ``lc_source == "summarization"``)
  reached the summarizer whole (lineage: ``saw``);
- decided, **before anything is deleted**: ``halt`` raises ``UnrecoverableCompactionError``
  and the graph state stays as it was, ``spill`` writes the messages about to be deleted to
  the store and proceeds, ``defer`` skips this compaction and logs the refusal.

The summary message gets the id ``tailguard-summary-<id>`` and names one handle, the session's
spill index (in its text and in ``additional_kwargs["tailguard"]``, beside this compaction's own
spills); ``spill_reader_tool(store)`` is a tool the agent calls with the index to list the
spills and with a spill's handle to read its messages back.

One middleware serves any number of LangGraph threads (SPEC.md section 11): each thread's guard
state is the agent-state key :data:`STATE_KEY` (private, checkpointed), restored per thread
(an LRU of restored guards, used only when it is what the thread holds); each session writes
its own log (``log=`` a directory or a function from session id to path); a lock per thread
serializes its compactions. Without a checkpointer, messages are known by content and the state
rides in the newest summary the guard wrote. A thread LangChain compacted before the guard came
is adopted (``on_unknown_history``). Calls outside a graph run (``before_model(state, None)``)
are one session of their own, :attr:`GuardedSummarizationMiddleware.guard`.

The guard's options are one :class:`~tailguard.adapters._guard.GuardOptions` (``options=``), or
the keywords above, from which it is built once; giving both is a ``TypeError``. A compaction
takes the adapters' named steps (``_observe``, ``_plan``, ``_resolve``, ``_confirm``,
``_apply``), written once for ``before_model`` and ``abefore_model``: they differ only in the
summarizer they hand it (``_create_summary`` or ``_acreate_summary``).

Validated with the versions in :data:`SUPPORTED` (the LangChain preset's ``validated_on``). Private
hooks of ``SummarizationMiddleware`` this module relies on (see docs/integrations.md):
``_ensure_message_ids``, ``_should_summarize``, ``_determine_cutoff_index``,
``_partition_messages``, ``_trim_messages_for_summary``, ``_create_summary``,
``_acreate_summary``, ``_build_new_messages`` and, where present, ``_overflow_retry_prompt``.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Generator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal, NotRequired

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    Resolution,
    SessionLogs,
    StoreArg,
    Unset,
    arun_steps,
    guard_options,
    missing_framework,
    open_store,
    run_steps,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import (
    POLL_FIRST as _POLL_FIRST,  # noqa: F401 - the names before _sessions
    POLL_MAX as _POLL_MAX,  # noqa: F401 - the names before _sessions
    LockEntry as _LockEntry,
    SessionTable,
    canonical as _canonical,
    check_state_value,
    integrity as _integrity,
)
from tailguard.adapters._spill_tool import (
    decode_index,
    encode_index,
    encode_run,
    encode_spill,
    read_index,
    read_spill,
)
from tailguard.base.args import is_int
from tailguard.base.errors import SnapshotError
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.langchain import PRESET
from tailguard.spill import SpillError, SpillStore

try:
    from langchain.agents.middleware.summarization import SummarizationMiddleware
    from langchain.agents.middleware.types import AgentState, PrivateStateAttr
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        messages_from_dict,
        messages_to_dict,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("langchain", "LangChain", "langchain", PRESET.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardState", "GuardedSummarizationMiddleware", "messages_from_spill",
           "spill_index", "spill_reader_tool"]

#: The versions this adapter is validated with: the LangChain preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

SUMMARY_ID_PREFIX = "tailguard-summary-"
#: The agent-state key that holds the guard's state of a thread (checkpointed, private).
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.langchain"
STATE_VERSION = 1
_OUTSIDE = "\x00outside-a-graph"  # the lock key of the one session of calls outside a graph run

_trimmed: contextvars.ContextVar[list[list[AnyMessage]] | None] = contextvars.ContextVar(
    "tailguard_langchain_trimmed", default=None)
_overflowed: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "tailguard_langchain_overflowed", default=None)


class GuardState(AgentState[Any]):
    """The agent state with the guard's key: neither input nor output of the agent, checkpointed."""

    tailguard: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


def _is_summary(m: BaseMessage) -> bool:
    return isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_source") == "summarization"


def _meta(m: BaseMessage) -> dict[str, Any] | None:
    """The guard's metadata of a summary it wrote, else None."""
    meta = m.additional_kwargs.get("tailguard") if _is_summary(m) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("summary"), str) else None


def _content_digest(m: BaseMessage) -> str:
    """A message's identity when it has no stable id: what a client re-sends of it (type, content,
    name, tool calls, tool call id), never its id or metadata."""
    calls = [[c.get("name"), c.get("args"), c.get("id")] for c in getattr(m, "tool_calls", None) or []]
    doc = [m.type, m.content, m.name, calls, getattr(m, "tool_call_id", None)]
    return hashlib.sha256(_canonical(doc)).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class _Probe:
    """What the base class's hooks report while the summarizer runs: each list the trimmer
    returned, and whether the overflow retry cut the middle out of the prompt."""

    trims: list[list[AnyMessage]]
    overflowed: list[bool]


@contextmanager
def _probing() -> Iterator[_Probe]:
    probe = _Probe([], [])
    trimmed, overflowed = _trimmed.set(probe.trims), _overflowed.set(probe.overflowed)
    try:
        yield probe
    finally:
        _overflowed.reset(overflowed)
        _trimmed.reset(trimmed)


@dataclass(frozen=True, slots=True)
class _Compaction:
    """One compaction between its decision and its update: the plan, the base class's partition
    of the messages, and their keys (message id -> tracker key)."""

    plan: Plan
    to_summarize: list[AnyMessage]
    preserved: list[AnyMessage]
    keys: dict[str, str]


@dataclass(slots=True, eq=False)
class _Session:
    """One session's guard as this process holds it: the guard, the next content-key serial, the
    session's spill index and the integrity digest of the state value it last handed out."""

    sid: str | None
    guard: CompactionGuard
    serial: int = 0
    index: str | None = None
    persisted: str | None = None

    def close(self) -> None:
        self.guard.close()


@dataclass(frozen=True, slots=True)
class _Where:
    """Where a call's session comes from. ``kind``: ``outside`` (a call outside a graph run: the
    middleware's one session), ``state`` (the thread's state key), ``summary`` (the snapshot the
    newest guard summary carries: no persistent state) or ``new``."""

    kind: Literal["outside", "state", "summary", "new"]
    sid: str | None
    stateless: bool
    thread: str | None = None
    value: dict[str, Any] | None = None


class GuardedSummarizationMiddleware(SummarizationMiddleware):
    """``SummarizationMiddleware`` that refuses a compaction losing what it never summarized.

    One middleware serves any number of threads: each thread's guard state lives in the agent
    state (:data:`STATE_KEY`, checkpointed with the thread), or, without a checkpointer, in the
    newest summary message the guard wrote. ``cache_size`` guards stay restored in memory (an
    LRU by session id); a cached guard is used only when the state it last handed out is the
    state the thread holds.
    """

    state_schema = GuardState  # type: ignore[assignment]

    def __init__(
        self,
        model: Any,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
        cache_size: int = 256,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        self.options = guard_options(options, "GuardedSummarizationMiddleware",
                                     recovery_floor_span=recovery_floor_span, floor_unit=floor_unit,
                                     on_refuse=on_refuse, store=store, log=log, profile=profile,
                                     on_unknown_history=on_unknown_history)
        if self.options.floor_unit not in ("messages", "tokens"):
            raise ValueError(f"floor_unit: langchain offsets can be 'messages' or 'tokens', "
                             f"got {self.options.floor_unit!r}")
        if not is_int(cache_size) or cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {cache_size!r}")
        self.cache_size = cache_size
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self._sessions: SessionTable[_Session] = SessionTable(cache_size)
        self._mutex: threading.Lock = self._sessions.mutex  # guards the cache and the lock table, never held long
        self._cache: OrderedDict[str, _Session] = self._sessions.cache
        self._locks: dict[str, _LockEntry] = self._sessions.locks
        self._outside: _Session | None = None

    # -- the sessions ---------------------------------------------------------------------

    @property
    def guard(self) -> CompactionGuard:
        """The guard of the one session of calls outside a graph run (``before_model(state,
        None)`` called directly); graph threads have their own (:meth:`session_guard`)."""
        with self._locked(_OUTSIDE):
            return self._outside_session().guard

    def session_guard(self, session_id: str) -> CompactionGuard | None:
        """The guard this process holds for ``session_id`` (a thread id), if cached."""
        with self._mutex:
            sess = self._cache.get(session_id)
        return None if sess is None else sess.guard

    def close(self) -> None:
        """Close every log this middleware opened (its cached sessions' and the outside one's)."""
        with self._mutex:
            sessions = [*self._cache.values(), *([self._outside] if self._outside else [])]
            self._cache.clear()
            self._outside = None
        for sess in sessions:
            sess.guard.close()

    def _outside_session(self) -> _Session:
        if self._outside is None:
            self._outside = self._new_session(None)
        return self._outside

    def _new_session(self, sid: str | None) -> _Session:
        ledger, owned = self._logs.start(self.options, sid)
        tracker = OffsetTracker(ledger, remember=sid is None)
        guard = CompactionGuard(self.options, framework="langchain", session=sid, ledger=ledger,
                                tracker=tracker, store=self._store, owned=owned)
        return _Session(sid, guard)

    def _where(self, state: Any) -> _Where:
        """Which session a call belongs to (read only: no lock, nothing opened)."""
        try:
            from langgraph.config import get_config

            conf = get_config().get("configurable", {})
        except (ImportError, RuntimeError):
            return _Where("outside", None, stateless=False)
        thread = conf.get("thread_id")
        thread = None if thread is None else str(thread)
        stateless = thread is None or conf.get("__pregel_checkpointer") is None
        value = state.get(STATE_KEY) if hasattr(state, "get") else None
        if value is not None:
            sid = self._check_value(value, "the thread's state")
            if not stateless and sid != thread:
                raise AdapterError(f"the state of thread {thread!r} holds the guard state of session {sid!r} "
                                   "(a copied or forked thread): a session is continued only by its own thread")
            return _Where("state", sid, stateless, thread, value)
        carrier = self._carrier(state["messages"])
        if carrier is not None:
            cvalue = carrier.additional_kwargs["tailguard"].get("state")
            if cvalue is None:
                raise AdapterError(f"the history holds the guard's summary {carrier.id!r} but not the guard "
                                   "state it carried (additional_kwargs['tailguard']['state']): re-send the "
                                   "messages whole, or give the agent a checkpointer")
            sid = self._check_value(cvalue, f"summary {carrier.id!r}")
            if not stateless and sid != thread:
                raise AdapterError(f"thread {thread!r} holds the summary of session {sid!r} but no guard state "
                                   "of its own: a session is continued only by its own thread")
            return _Where("summary", sid, stateless, thread, cvalue)
        new = thread if thread is not None and not stateless else f"stateless-{uuid.uuid4().hex}"
        return _Where("new", new, stateless, thread)

    @staticmethod
    def _carrier(messages: Sequence[AnyMessage]) -> AnyMessage | None:
        for m in reversed(messages):
            if _meta(m) is not None:
                return m
        return None

    @staticmethod
    def _check_value(value: object, where: str) -> str:
        return check_state_value(value, where, fmt=STATE_FORMAT, version=STATE_VERSION, framework="LangChain")

    def _load(self, where: _Where) -> _Session:
        """The session of ``where`` (its lock held): cached when the cache is what the thread
        holds, else restored from the state value, else new."""
        if where.kind == "outside":
            return self._outside_session()
        assert where.sid is not None
        sid = where.sid
        with self._mutex:
            cached = self._cache.get(sid)
        if where.value is None:
            if cached is not None:
                raise AdapterError(f"session {sid!r} has a guard in this process but the thread holds no guard "
                                   "state (its state was reset?): a session is not started twice")
            sess = self._new_session(sid)
        elif cached is not None and cached.persisted == where.value["integrity"]:
            sess = cached
        else:
            try:
                ledger = self._logs.resume(where.value["ledger"], sid)
            except SnapshotError as exc:
                raise AdapterError(f"session {sid!r}: cannot continue from the guard state the "
                                   f"{'thread' if where.kind == 'state' else 'history'} holds: {exc}. The log "
                                   "has moved past that state (a run that failed after the guard recorded, "
                                   "an older copy of the history, or another process continued the session)"
                                   ) from exc
            tracker = OffsetTracker.restore(ledger, where.value.get("tracker"))
            guard = CompactionGuard(self.options, framework="langchain", session=sid, ledger=ledger,
                                    tracker=tracker, store=self._store)
            serial, index = where.value.get("serial"), where.value.get("spill_index")
            if type(serial) is not int or not (index is None or isinstance(index, str)):
                raise AdapterError(f"session {sid!r}: bad 'serial' or 'spill_index' in the guard state")
            sess = _Session(sid, guard, serial, index, where.value["integrity"])
            if cached is not None:
                cached.guard.close()
        self._remember(sess)
        return sess

    def _remember(self, sess: _Session) -> None:
        assert sess.sid is not None
        self._sessions.remember(sess.sid, sess)

    # -- locks: one compaction of a session at a time ---------------------------------------

    def _enter(self, key: str) -> _LockEntry:
        return self._sessions.enter(key)

    def _leave(self, key: str, entry: _LockEntry) -> None:
        self._sessions.leave(key, entry)

    @contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        with self._sessions.locked(key):
            yield

    @asynccontextmanager
    async def _alocked(self, key: str) -> AsyncIterator[None]:
        """:meth:`_locked` without blocking the event loop: a task waits by sleeping, so two
        tasks of one thread on one loop never deadlock, and cancelling the wait takes nothing."""
        async with self._sessions.alocked(key):
            yield

    # -- the base class's two entry points, one body ----------------------------------------

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        where = self._where(state)
        with self._locked(_OUTSIDE if where.sid is None else where.sid):
            sess = self._load(where)
            update = run_steps(self._compaction(state, sess, where), self._create_summary)
            return self._settle(where, sess, update)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        where = self._where(state)
        async with self._alocked(_OUTSIDE if where.sid is None else where.sid):
            sess = self._load(where)
            update = await arun_steps(self._compaction(state, sess, where), self._acreate_summary)
            return self._settle(where, sess, update)

    def _settle(self, where: _Where, sess: _Session, update: dict[str, Any] | None) -> dict[str, Any] | None:
        """The call's update, less a stateless request's new session that has nowhere to live on.
        Without a checkpointer the state rides in the newest guard summary; a request that starts
        a session and ends with no guard summary in its history leaves nothing the next request
        could continue from, so the next one starts anew. When such a session recorded nothing but
        appends (no compaction, refusal, spill or adoption), it is dropped with its log: a
        stateless server does not keep a log per request before a conversation's first
        compaction. A session that recorded a decision keeps its log. A dropped session's state
        leaves the update too: a later model call of the same run (after a tool call) must start
        anew, not continue a session whose log is gone."""
        if where.kind != "new" or not where.stateless or update is None or "messages" in update:
            return update
        ledger = sess.guard.ledger
        if ledger.refusals or sess.guard.spills or ledger.unverified or ledger.summaries:
            return update
        assert sess.sid is not None
        self._sessions.forget(sess.sid)
        sess.close()
        self._logs.discard(sess.sid)
        rest = {k: v for k, v in update.items() if k != STATE_KEY}
        return rest or None

    def _compaction(self, state: Any, sess: _Session,
                    where: _Where) -> Generator[list[AnyMessage], str, dict[str, Any] | None]:
        """The steps of one call; yields what the summarizer is given and receives its summary."""
        messages: list[AnyMessage] = state["messages"]
        keys = self._observe(messages, sess, where)
        update = None
        total_tokens = self.token_counter(messages)
        if self._should_summarize(messages, total_tokens):
            cutoff = self._determine_cutoff_index(messages)
            if cutoff > 0:
                to_summarize, preserved = self._partition_messages(messages, cutoff)
                compaction = _Compaction(self._plan(to_summarize, preserved,
                                                    self._trim_messages_for_summary(to_summarize), sess, keys),
                                         to_summarize, preserved, keys)
                spilled = len(sess.guard.spills)
                res = self._resolve(compaction.plan, sess, compaction)
                if res.action == "proceed":
                    with _probing() as probe:
                        summary = yield to_summarize
                    confirmed = self._confirm(compaction, probe, sess)
                    if confirmed is not None:
                        update = self._apply(compaction, confirmed, summary, sess, spilled)
        return self._finish(update, sess, where, messages)

    # -- hooks: what the summarizer was really shown ----------------------------------------

    def _trim_messages_for_summary(self, messages: list[AnyMessage]) -> list[AnyMessage]:
        out: list[AnyMessage] = super()._trim_messages_for_summary(messages)
        record = _trimmed.get()
        if record is not None:
            record.append(list(out))
        return out

    def _overflow_retry_prompt(self, messages: list[AnyMessage]) -> str | None:
        record = _overflowed.get()
        if record is not None:
            record.append(True)
        parent = getattr(super(), "_overflow_retry_prompt", None)
        if parent is None:
            return None
        prompt: str | None = parent(messages)
        return prompt

    # -- the steps ------------------------------------------------------------------------

    def _observe(self, messages: list[AnyMessage], sess: _Session, where: _Where) -> dict[str, str]:
        """Offsets for new messages (by id, or by content without a checkpointer); messages someone
        else removed become truncations; history the guard meets first and did not record is
        adopted (or refused). Returns each message's key by message id."""
        self._ensure_message_ids(messages)
        ids = [str(m.id) for m in messages]
        if len(set(ids)) != len(ids):
            raise AdapterError("two messages of the context have the same id")
        tracker = sess.guard.tracker
        keys = self._content_keys(messages, sess) if where.stateless else [self._key(m) for m in messages]
        if where.kind == "summary":
            missing = [k for k in tracker.units if k not in set(keys)]
            if missing:
                raise AdapterError(f"the history does not match the guard state its summary carries: "
                                   f"{len(missing)} message(s) the state holds are not in it (an edited "
                                   "history, or a summary from another conversation)")
        fresh = not tracker.units and not tracker.summaries and sess.guard.ledger.history_end == 0
        unknown = [i for i, (m, k) in enumerate(zip(messages, keys, strict=True))
                   if _is_summary(m) and k not in tracker.summaries]
        if fresh and unknown:
            self._adopt(messages, keys, unknown, sess)
        entries = [Entry(k, _is_summary(m), 0 if _is_summary(m) else self._size(m))
                   for m, k in zip(messages, keys, strict=True)]
        tracker.observe(entries)
        return dict(zip(ids, keys, strict=True))

    def _adopt(self, messages: list[AnyMessage], keys: list[str], unknown: list[int], sess: _Session) -> None:
        first = messages[unknown[0]]
        if self.options.on_unknown_history == "refuse":
            raise AdapterError(f"the context holds a summary the guard did not make ({first.id!r}, lc_source "
                               "'summarization'): its history predates the guard and is not verified "
                               "(on_unknown_history='refuse'; 'adopt' records it as unverified)")
        if unknown != [0]:
            raise AdapterError(f"cannot adopt the history: the summary the guard did not make ({first.id!r}) "
                               "must be the first message and the only one")
        count = 1 if self.options.floor_unit == "messages" else self._size(first)
        sess.guard.tracker.adopt(keys[0], count, reason=f"summary {first.id!r} (lc_source 'summarization') "
                                 "was made before the guard")

    def _key(self, m: AnyMessage) -> str:
        meta = _meta(m)
        return SUMMARY_ID_PREFIX + meta["summary"] if meta is not None else str(m.id)

    def _content_keys(self, messages: list[AnyMessage], sess: _Session) -> list[str]:
        """Keys by content (no persistent state: ids are not stable). A known message is matched
        to the oldest unmatched known unit of the same content after the last one matched; the
        rest are new and get ``~DIGEST.SERIAL``."""
        known: dict[str, list[int]] = {}
        order = list(sess.guard.tracker.units)
        for j, k in enumerate(order):
            known.setdefault(k[1:].split(".")[0], []).append(j)
        at = 0
        out: list[str] = []
        for m in messages:
            meta = _meta(m)
            if meta is not None:
                out.append(SUMMARY_ID_PREFIX + meta["summary"])
                continue
            d = _content_digest(m)
            if _is_summary(m):
                out.append(f"~s{d}")
                continue
            slots = known.get(d, [])
            while slots and slots[0] < at:
                slots.pop(0)
            if slots:
                j = slots.pop(0)
                out.append(order[j])
                at = j + 1
            else:
                out.append(f"~{d}.{sess.serial}")
                sess.serial += 1
        return out

    def _plan(self, to_summarize: Sequence[AnyMessage], preserved: Sequence[AnyMessage],
              trimmed: Sequence[AnyMessage] | None, sess: _Session, keys: dict[str, str]) -> Plan:
        """The compaction deleting ``to_summarize``, its summarizer shown ``trimmed`` (what of it is
        whole: same id, same message), keeping ``preserved``."""
        by_id = {str(m.id): m for m in to_summarize}
        shown = [] if trimmed is None else [
            keys[str(t.id)] for t in trimmed if t.id is not None and str(t.id) in by_id and t == by_id[str(t.id)]
        ]
        return sess.guard.tracker.plan(deleted=[keys[str(m.id)] for m in to_summarize], shown=shown,
                                       kept=[keys[str(m.id)] for m in preserved])

    def _resolve(self, plan: Plan, sess: _Session, compaction: _Compaction) -> Resolution:
        """Decide ``plan``. Under ``spill``, an adopted summary (history from before the guard) that
        leaves the context unseen is spilled too: the message is all there is of its offsets."""
        held = {compaction.keys[str(m.id)]: m for m in compaction.to_summarize if not _is_summary(m)}
        tracker = sess.guard.tracker
        unit = sess.guard.unit
        adopted: dict[Pair, tuple[str, AnyMessage]] = {}
        unverified = sess.guard.ledger.unverified
        if self.options.on_refuse == "spill" and unverified and "adopted" in plan.dropped_summaries \
                and "adopted" not in plan.saw:
            key = next(k for k, s in tracker.summaries.items() if s == "adopted")
            msg = next(m for m in compaction.to_summarize if compaction.keys[str(m.id)] == key)
            adopted[unverified[0]] = (key, msg)
            plan = replace(plan, deleted=(unverified[0], *plan.deleted))

        def payload(run: Pair) -> bytes:
            if run in adopted:
                key, msg = adopted[run]
                return encode_spill("langchain", unit, run, [(run, key, messages_to_dict([msg])[0])])
            return encode_run("langchain", unit, run, tracker, held, lambda m: messages_to_dict([m])[0])

        return sess.guard.resolve(plan, payload)

    def _confirm(self, compaction: _Compaction, probe: _Probe, sess: _Session) -> Plan | None:
        """The summarizer must have been shown what was decided on; else decide again, smaller.

        Returns the plan to commit, or None when the new decision defers.
        """
        if probe.overflowed:  # the base class cut the middle out of the prompt: nothing was seen whole
            smaller = self._plan(compaction.to_summarize, compaction.preserved, None, sess, compaction.keys)
            res = self._resolve(smaller, sess, compaction)
            return None if res.action == "defer" else smaller
        if probe.trims and [(m.id, m) for m in probe.trims[-1]] != [
                (m.id, m) for m in self._decided_trim(compaction.to_summarize)]:
            raise AdapterError("the summarizer was shown other messages than the guard decided on; "
                               "nothing was deleted")
        return compaction.plan

    def _apply(self, compaction: _Compaction, plan: Plan, summary: str, sess: _Session,
               spilled: int) -> dict[str, Any]:
        """Commit ``plan`` with the summary message; the update the base class would return.

        The summary names the session's spill index (one handle, whatever the number of spills)
        and this compaction's spills."""
        new = self._build_new_messages(summary)
        if len(new) != 1 or not _is_summary(new[0]):
            raise AdapterError("SummarizationMiddleware._build_new_messages no longer returns one "
                               "summary message; this LangChain version is not supported")
        msg = new[0]
        guard = sess.guard
        sid = guard.ledger.next_summary_id
        msg.id = SUMMARY_ID_PREFIX + sid
        fresh = guard.spills[spilled:]
        if fresh:
            assert guard.store is not None
            listed = read_index(guard.store, sess.index) if sess.index is not None else []
            data = encode_index("langchain", guard.unit, sess.sid, [*listed, *fresh])
            sess.index = guard.store.put(data, session=sess.sid, unit=guard.unit)
            if guard.store.get(sess.index) != data:
                raise AdapterError(f"the spill index {sess.index} did not re-read to the bytes written; "
                                   "nothing was deleted")
        if sess.sid is not None or len(guard.spills) > 256:
            del guard.spills[:spilled]  # the index lists them: keep this compaction's only
        if sess.index is not None:
            msg.content = (f"{msg.content}\n\n[tailguard] Earlier messages were spilled losslessly before they "
                           f"left the context. Call read_spilled_messages with {sess.index} to list the spills, "
                           "then with a spill's handle to read its messages back.")
        msg.additional_kwargs["tailguard"] = {
            "summary": sid, "unit": guard.unit, "spill_index": sess.index,
            "spills": [{"range": [lo, hi], "handle": h} for (lo, hi), h in fresh],
        }
        guard.tracker.commit(plan, key=str(msg.id), summary=sid)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), msg, *compaction.preserved]}

    def _finish(self, update: dict[str, Any] | None, sess: _Session, where: _Where,
                messages: list[AnyMessage]) -> dict[str, Any] | None:
        """The call's update: for a graph thread, with the guard's state (every turn, so the
        offsets of new messages persist); without a checkpointer, the newest guard summary
        carries it too."""
        if where.kind == "outside":
            return update
        value = self._state_value(sess)
        sess.persisted = value["integrity"]
        out: dict[str, Any] = dict(update or {})
        out[STATE_KEY] = value
        if where.stateless:
            if update is not None:
                update["messages"][1].additional_kwargs["tailguard"]["state"] = value
            else:
                carrier = self._carrier(messages)
                if carrier is not None:
                    meta = {**carrier.additional_kwargs["tailguard"], "state": value}
                    kwargs = {**carrier.additional_kwargs, "tailguard": meta}
                    out["messages"] = [carrier.model_copy(update={"additional_kwargs": kwargs})]
        return out

    def _state_value(self, sess: _Session) -> dict[str, Any]:
        """The session's state as the agent state holds it: the ledger's snapshot (O(merged
        intervals + summaries in the context)), the offsets of the messages in the context, the
        next content-key serial and the spill index handle."""
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
            "serial": sess.serial, "spill_index": sess.index,
        }
        value["integrity"] = _integrity(value)
        return value

    # -- helpers --------------------------------------------------------------------------

    def _size(self, m: AnyMessage) -> int:
        if self.options.floor_unit == "messages":
            return 1
        counter: Any = getattr(self, "_partial_token_counter", None) or self.token_counter
        return int(counter([m]))

    def _decided_trim(self, to_summarize: list[AnyMessage]) -> list[AnyMessage]:
        token = _trimmed.set(None)
        try:
            return self._trim_messages_for_summary(to_summarize)
        finally:
            _trimmed.reset(token)


def messages_from_spill(store: SpillStore, handle: str) -> list[BaseMessage]:
    """The LangChain messages of a spill, as they were before they were deleted."""
    doc = read_spill(store, handle)
    if doc.get("framework") != "langchain":
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not langchain")
    return list(messages_from_dict([x["item"] for x in doc["items"]]))


def spill_index(store: SpillStore, handle: str) -> list[tuple[Pair, str]]:
    """The spills a summary's spill index lists (``additional_kwargs["tailguard"]["spill_index"]``):
    ``(offsets, handle)`` of every spill of the session so far, oldest first."""
    return read_index(store, handle)


def spill_reader_tool(store: SpillStore, *, name: str = "read_spilled_messages") -> BaseTool:
    """A LangChain tool the agent calls with a spill handle to read the spilled messages back.

    Given the spill index the summary names, it returns the index (every spill of the session:
    offsets and handle); given a spill's handle, the spill's bytes as stored (canonical JSON:
    offsets, message ids and ``messages_to_dict`` of each message); or a one-line reason when
    the handle is unusable.
    """

    def read_spilled_messages(handle: str) -> str:
        """Read back messages the context guard spilled before they were deleted.

        Args:
            handle: the spill index named in the conversation summary, or a spill handle it lists
                ("sha256:...").
        """
        try:
            data = store.get(handle.strip())
        except (SpillError, ValueError) as exc:
            return f"cannot read spill {handle!r}: {exc}"
        try:
            decode_index(data)
            return data.decode("utf-8")
        except ValueError:
            pass
        try:
            doc = read_spill(store, handle.strip())
        except (SpillError, ValueError) as exc:
            return f"cannot read spill {handle!r}: {exc}"
        if doc.get("framework") != "langchain":
            return f"cannot read spill {handle!r}: it holds {doc.get('framework')!r} items"
        return data.decode("utf-8")

    return StructuredTool.from_function(read_spilled_messages, name=name)
