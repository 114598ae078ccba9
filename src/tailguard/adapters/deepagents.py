"""The guard inside deepagents' summarization (``create_deep_agent``'s).

``GuardedDeepAgentsSummarizationMiddleware`` subclasses deepagents'
``_DeepAgentsSummarizationMiddleware`` (what ``create_summarization_middleware(model, backend)``
returns): every keyword of it, plus the guard's options (``options=`` or
``recovery_floor_span``, ``floor_unit``, ``on_refuse``, ``store``, ``log``, ``profile``,
``on_unknown_history``). :func:`guarded_summarization_middleware` mirrors
``create_summarization_middleware`` (the same model-aware defaults, argument truncation
included). Its ``name`` is deepagents' public alias ``"SummarizationMiddleware"``, so
``create_deep_agent(..., middleware=[guarded])`` replaces the default **in place**, in the main
agent and in the general-purpose subagent (which inherits a middleware whose name matches one
of its default slots), and in a fork (``mode="fork"``, which inherits the main agent's
``middleware=``). A declarative subagent gets deepagents' own
``create_summarization_middleware(its model, backend)`` unless its spec's ``middleware`` lists the
guarded one too (docs/integrations.md, deepagents).

What deepagents (:data:`SUPPORTED`) does in ``wrap_model_call`` (``deepagents/middleware/summarization.py``)
and what the guard makes of it:

- **The context** is ``_get_effective_messages``: the summary of the newest
  ``_summarization_event`` then ``state["messages"][cutoff_index:]``. Messages never leave the
  state; the event's cutoff decides what the model sees. The guard gives offsets to the messages
  of that list by id; the summary message it writes gets the id ``tailguard-summary-<id>``.
- **Argument truncation** (``_truncate_args``, on by default via
  ``compute_summarization_defaults``) clips string arguments over ``max_length`` of
  ``write_file``/``edit_file`` tool calls in messages older than its ``keep``, in the view the
  model, the offload and the summarizer get (the state keeps the original). A clipped message is
  never *whole* to the summarizer or the offload. Before the model call the guard decides each
  clip: a clip of offsets already spilled (and outside the floor) proceeds; otherwise ``halt``
  raises, ``defer`` leaves that message unclipped for this call, ``spill`` writes the original
  message to the store first (a clip inside the floor is never made under ``defer``/``spill``:
  the floor stays verbatim). A refused clip is a ``refusal`` line of the log, like a refused
  compaction (:meth:`GuardedDeepAgentsSummarizationMiddleware._guard_clips`); a clip that goes
  ahead is no event of its own: what the log shows is the spill that made it recoverable, and
  every compaction's decision counts clipped messages as unseen.
- **The offload** (``_offload_to_backend``) appends the candidates (the earlier summary filtered
  out) to ``/conversation_history/<session>.md`` before summarizing; a failed write warns and
  summarization proceeds. The guard counts it as a spill only when it succeeded **and** the file
  re-reads ending with the section written, and then only for messages written whole (not
  clipped, no media rewritten): those runs are recorded as spills with the handle
  ``deepagents-offload:<path>``. A failed or unverifiable offload is no spill.
- **The summarizer** is LangChain's (``self._lc_helper._create_summary``), which trims its input
  with ``trim_tokens_to_summarize`` (the factory's ``None``, the class's own 4000): a message the
  trimmer cut is unseen, and so is everything when it falls back to cutting the middle out of the
  prompt (``_overflow_retry_prompt``).
- **The decision** comes after the offload and before the summary replaces anything: ``halt``
  raises ``UnrecoverableCompactionError`` (the node fails, the state stays as it was), ``defer``
  calls the model with the context as it is (no event), ``spill`` writes what is deleted to the
  store first. The compaction is committed to the ledger after the model call returned, so a
  failed model call records nothing.

One middleware serves any number of threads: each thread's guard state is the private agent-state
key :data:`STATE_KEY` (checkpointed), cached in an LRU, one lock per session (sync and async);
each session writes its own log (``log=`` a directory or a function from session id to path).
A call inside a subgraph (the ``task`` tool's subagent) is a session of its own, named by the
thread id and the subgraph's checkpoint namespace. Without a checkpointer a graph run is its own
session (deepagents' own ``_summarization_event`` does not outlive a run either). A thread whose
event holds a summary the guard did not make is adopted (``on_unknown_history``).

Not guarded (documented, not modelled): ``_clip_overflow_tail`` (only when the request is over
the model profile's input budget or the provider raised a context overflow: large trailing tool
results are moved to ``/large_tool_results/`` in the backend) and ``SummarizationToolMiddleware``'s
``compact_conversation`` tool, which runs its own compaction outside ``wrap_model_call``: the next
model call meets a summary the guard did not make and raises ``AdapterError`` (do not register
the tool on a guarded agent).

Validated with the versions in :data:`SUPPORTED` (the deepagents preset's ``validated_on``).
"""

from __future__ import annotations

import contextvars
import logging
import uuid
import warnings
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NotRequired

from tailguard._generated.checker import Decision
from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    SessionLogs,
    SpillFailed,
    StoreArg,
    Unset,
    arun_steps,
    guard_options,
    missing_framework,
    open_store,
    run_steps,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import SessionTable, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.args import is_int
from tailguard.base.errors import SnapshotError
from tailguard.base.intervals import normalize
from tailguard.base.vocab import FLOOR_IN_TAIL, NO_HOLE, Pair
from tailguard.pipeline.presets.deepagents import PRESET
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import SpillStore

try:
    from deepagents.middleware.summarization import (
        SUMMARIZATION_EVENT_KEY,
        SUMMARIZATION_SESSION_ID_KEY,
        SummarizationEvent,
        SummarizationState,
        _DeepAgentsSummarizationMiddleware,
        _drop_bound_reasoning,
        _is_context_overflow,
        compute_summarization_defaults,
    )
    from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        HumanMessage,
        get_buffer_string,
        messages_from_dict,
        messages_to_dict,
    )
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("deepagents", "deepagents", "deepagents", PRESET.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardState", "GuardedDeepAgentsSummarizationMiddleware",
           "guarded_summarization_middleware", "messages_from_spill"]

#: The versions this adapter is validated with: the deepagents preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

SUMMARY_ID_PREFIX = "tailguard-summary-"
OFFLOAD_HANDLE_PREFIX = "deepagents-offload:"
#: The agent-state key that holds the guard's state of a thread (checkpointed, private).
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.deepagents"
STATE_VERSION = 1
FRAMEWORK = "deepagents"
_OUTSIDE = "\x00outside-a-graph"  # the lock key of the one session of calls outside a graph run

_log = logging.getLogger(__name__)

_trimmed: contextvars.ContextVar[list[list[AnyMessage]] | None] = contextvars.ContextVar(
    "tailguard_deepagents_trimmed", default=None)
_overflowed: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "tailguard_deepagents_overflowed", default=None)


class GuardState(SummarizationState):
    """deepagents' summarization state with the guard's key: private, checkpointed."""

    tailguard: NotRequired[Annotated[dict[str, Any] | None, PrivateStateAttr]]


def _is_summary(m: BaseMessage) -> bool:
    return isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_source") == "summarization"


def _meta(m: BaseMessage) -> dict[str, Any] | None:
    meta = m.additional_kwargs.get("tailguard") if _is_summary(m) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("summary"), str) else None


@dataclass(slots=True, eq=False)
class _Session:
    """One session's guard as this process holds it, and the integrity digest of the state value
    it last handed out."""

    sid: str | None
    guard: CompactionGuard
    persisted: str | None = None

    def close(self) -> None:
        self.guard.close()


@dataclass(frozen=True, slots=True)
class _Where:
    kind: Literal["outside", "state", "new"]
    sid: str | None
    value: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class _Probe:
    trims: list[list[AnyMessage]]
    overflowed: list[bool]


@contextmanager
def _probing() -> Iterator[_Probe]:
    probe = _Probe([], [])
    t1, t2 = _trimmed.set(probe.trims), _overflowed.set(probe.overflowed)
    try:
        yield probe
    finally:
        _overflowed.reset(t2)
        _trimmed.reset(t1)


class GuardedDeepAgentsSummarizationMiddleware(_DeepAgentsSummarizationMiddleware):
    """deepagents' summarization middleware that refuses a compaction or an argument clip losing
    what nothing else holds (see the module docstring)."""

    state_schema = GuardState  # type: ignore[assignment]

    @property
    def name(self) -> str:
        """deepagents' public alias, so that ``middleware=[this]`` replaces the default in place."""
        return "SummarizationMiddleware"

    def __init__(
        self,
        model: Any,
        *,
        backend: Any,
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
        super().__init__(model, backend=backend, **kwargs)
        self.options = guard_options(options, "GuardedDeepAgentsSummarizationMiddleware",
                                     recovery_floor_span=recovery_floor_span, floor_unit=floor_unit,
                                     on_refuse=on_refuse, store=store, log=log, profile=profile,
                                     on_unknown_history=on_unknown_history)
        if self.options.floor_unit not in ("messages", "tokens"):
            raise ValueError(f"floor_unit: deepagents offsets can be 'messages' or 'tokens', "
                             f"got {self.options.floor_unit!r}")
        if not is_int(cache_size) or cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {cache_size!r}")
        self.cache_size = cache_size
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self._sessions: SessionTable[_Session] = SessionTable(cache_size)
        self._outside: _Session | None = None
        self._instrument(self._lc_helper)

    @staticmethod
    def _instrument(helper: Any) -> None:
        """Record, on the LangChain helper that writes the summary, what its trimmer returned and
        whether it fell back to the overflow retry (instance attributes: the class is untouched)."""
        trim = helper._trim_messages_for_summary
        retry = getattr(helper, "_overflow_retry_prompt", None)

        def recording_trim(messages: list[AnyMessage]) -> list[AnyMessage]:
            out: list[AnyMessage] = trim(messages)
            record = _trimmed.get()
            if record is not None:
                record.append(list(out))
            return out

        helper._trim_messages_for_summary = recording_trim
        if retry is not None:
            def recording_retry(messages: list[AnyMessage]) -> Any:
                record = _overflowed.get()
                if record is not None:
                    record.append(True)
                return retry(messages)

            helper._overflow_retry_prompt = recording_retry

    # -- sessions -------------------------------------------------------------------------

    @property
    def guard(self) -> CompactionGuard:
        """The guard of the one session of calls outside a graph run."""
        with self._sessions.locked(_OUTSIDE):
            return self._outside_session().guard

    def session_guard(self, session_id: str) -> CompactionGuard | None:
        """The guard this process holds for ``session_id``, if cached."""
        sess = self._sessions.get(session_id)
        return None if sess is None else sess.guard

    def close(self) -> None:
        """Close every log this middleware opened."""
        sessions = self._sessions.drain()
        with self._sessions.mutex:
            if self._outside is not None:
                sessions.append(self._outside)
            self._outside = None
        for sess in sessions:
            sess.close()

    def _outside_session(self) -> _Session:
        if self._outside is None:
            self._outside = self._new_session(None)
        return self._outside

    def _new_session(self, sid: str | None) -> _Session:
        ledger, owned = self._logs.start(self.options, sid)
        tracker = OffsetTracker(ledger, remember=sid is None)
        guard = CompactionGuard(self.options, framework=FRAMEWORK, session=sid, ledger=ledger,
                                tracker=tracker, store=self._store, owned=owned)
        return _Session(sid, guard)

    def _where(self, state: Any) -> _Where:
        try:
            from langgraph.config import get_config

            conf = get_config().get("configurable", {})
        except (ImportError, RuntimeError):
            return _Where("outside", None)
        value = state.get(STATE_KEY) if hasattr(state, "get") else None
        if value is not None:
            return _Where("state", self._check_value(value), value)
        thread = conf.get("thread_id")
        ns = str(conf.get("checkpoint_ns") or "")
        if thread is None or conf.get("__pregel_checkpointer") is None:
            return _Where("new", f"run-{uuid.uuid4().hex}")
        # a subgraph (the task tool's subagent) is a session of its own: its namespace names the task
        sub = "|" in ns or (ns and not ns.startswith("model:"))
        return _Where("new", f"{thread}|{ns}" if sub else str(thread))

    @staticmethod
    def _check_value(value: object) -> str:
        return check_state_value(value, "the thread's state", fmt=STATE_FORMAT, version=STATE_VERSION,
                                 framework=FRAMEWORK)

    def _load(self, where: _Where) -> _Session:
        if where.kind == "outside":
            return self._outside_session()
        assert where.sid is not None
        sid = where.sid
        cached = self._sessions.get(sid)
        if where.value is None:
            if cached is not None:
                raise AdapterError(f"session {sid!r} has a guard in this process but the thread holds no guard "
                                   "state (its state was reset?): a session is not started twice")
            sess = self._new_session(sid)
        elif (hit := self._sessions.cached_for(cached, where.value)) is not None:
            sess = hit
        else:
            try:
                ledger = self._logs.resume(where.value["ledger"], sid)
            except SnapshotError as exc:
                raise AdapterError(f"session {sid!r}: cannot continue from the guard state the thread holds: "
                                   f"{exc}. The log has moved past that state (a run that failed after the guard "
                                   "recorded, or another process continued the session)") from exc
            try:
                tracker = OffsetTracker.restore(ledger, where.value.get("tracker"))
            except AdapterError as exc:
                ledger.close()
                raise AdapterError(f"the guard state of session {sid!r}: {exc}") from exc
            guard = CompactionGuard(self.options, framework=FRAMEWORK, session=sid, ledger=ledger,
                                    tracker=tracker, store=self._store)
            sess = _Session(sid, guard, where.value["integrity"])
            if cached is not None:
                cached.close()
        self._sessions.remember(sid, sess)
        return sess

    # -- the two entry points, one body -----------------------------------------------------

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        where = self._where(request.state)
        with self._sessions.locked(_OUTSIDE if where.sid is None else where.sid):
            sess = self._load(where)

            def call(req: tuple[Any, ...]) -> Any:
                kind = req[0]
                if kind == "media":
                    return self._offload_inline_media(self._backend, req[1])
                if kind == "offload":
                    return self._offload_to_backend(self._backend, req[1], req[2])
                if kind == "reread":
                    return self._backend.download_files([req[1]])
                if kind == "summary":
                    return self._create_summary(req[1])
                if kind == "model":
                    try:
                        return handler(req[1]), None
                    except Exception as exc:
                        if not _is_context_overflow(exc):
                            raise
                        return None, exc
                return self._call_with_budget(req[1], handler, error=req[2], rejected=req[3])

            return run_steps(self._steps(request, sess, where), call)

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        where = self._where(request.state)
        async with self._sessions.alocked(_OUTSIDE if where.sid is None else where.sid):
            sess = self._load(where)

            async def call(req: tuple[Any, ...]) -> Any:
                kind = req[0]
                if kind == "media":
                    return await self._aoffload_inline_media(self._backend, req[1])
                if kind == "offload":
                    return await self._aoffload_to_backend(self._backend, req[1], req[2])
                if kind == "reread":
                    return await self._backend.adownload_files([req[1]])
                if kind == "summary":
                    return await self._acreate_summary(req[1])
                if kind == "model":
                    try:
                        return await handler(req[1]), None
                    except Exception as exc:
                        if not _is_context_overflow(exc):
                            raise
                        return None, exc
                return await self._acall_with_budget(req[1], handler, error=req[2], rejected=req[3])

            return await arun_steps(self._steps(request, sess, where), call)

    def _steps(self, request: Any, sess: _Session, where: _Where) -> Generator[tuple[Any, ...], Any, Any]:
        """deepagents' ``wrap_model_call``, step by step, with the guard's decisions in it."""
        effective = self._get_effective_messages(request)
        keys = self._observe(effective, sess)
        total = self._count_tokens(effective, request.system_message, request.tools)
        truncated, modified = self._truncate_args(effective, total)
        if modified:
            truncated = self._guard_clips(effective, truncated, keys, sess)
            modified = any(a is not b for a, b in zip(effective, truncated, strict=True))
        if modified:
            total = self._count_tokens(truncated, request.system_message, request.tools)
        should = self._should_summarize(truncated, total) or self._over_budget(request, total)
        overflow: Exception | None = None
        if not should:
            response, overflow = yield ("model", request.override(messages=truncated))
            if overflow is None:
                return self._finish(response, None, sess, where)
        cutoff = self._determine_cutoff_index(truncated)
        if cutoff <= 0:
            response, tail = yield ("budget", request.override(messages=truncated), overflow, None)
            return self._finish(response, {"messages": tail} if tail else None, sess, where)
        to_summarize, preserved = self._partition_messages(truncated, cutoff)
        media, failed_media = yield ("media", to_summarize)
        session_id = self._get_session_id(request.state)
        originals = dict(zip((str(m.id) for m in effective), effective, strict=True))
        file_path = yield ("offload", media, session_id)
        if file_path is not None:
            file_path = yield from self._verify_offload(file_path, media, originals, keys, sess)
        if file_path is None:
            msg = ("Offloading conversation history to backend failed during summarization. Older messages "
                   "will not be recoverable.")
            _log.error(msg)
            warnings.warn(msg, stacklevel=2)
        elif failed_media:
            warnings.warn(f"Conversation history was offloaded to {file_path}, but {failed_media} media "
                          "block(s) could not be offloaded", stacklevel=2)
        plan = self._plan(to_summarize, media, preserved, self._decided_trim(media), originals, keys, sess)
        res = self._resolve(plan, to_summarize, originals, keys, sess)
        if res == "defer":
            response, tail = yield ("budget", request.override(messages=truncated), overflow, None)
            return self._finish(response, {"messages": tail} if tail else None, sess, where)
        with _probing() as probe:
            summary = yield ("summary", media)
        confirmed = self._confirm(plan, probe, to_summarize, media, preserved, originals, keys, sess)
        if confirmed is None:  # the summarizer was shown less than decided and the new decision defers
            response, tail = yield ("budget", request.override(messages=truncated), overflow, None)
            return self._finish(response, {"messages": tail} if tail else None, sess, where)
        note, sid = self._summary_message(summary, file_path, sess)
        previous = request.state.get(SUMMARIZATION_EVENT_KEY)
        event: SummarizationEvent = {
            "cutoff_index": self._compute_state_cutoff(previous, cutoff),
            "summary_message": note,  # type: ignore[typeddict-item]
            "file_path": file_path,
            "created_at_index": len(request.messages),
        }
        modified_request = request.override(messages=[note, *map(_drop_bound_reasoning, preserved)])
        response, tail = yield ("budget", modified_request, overflow, request.override(messages=truncated))
        update = self._apply(confirmed, note, sid, event, session_id, sess)  # after the model call returned
        if tail:
            update["messages"] = list(tail)
        return self._finish(response, update, sess, where)

    # -- the steps ------------------------------------------------------------------------

    def _observe(self, messages: list[AnyMessage], sess: _Session) -> dict[str, str]:
        """Offsets for new messages (by id); the summary of the newest event by the guard's id;
        a summary the guard did not make, met first, is adopted (or refused)."""
        keys: list[str] = []
        for i, m in enumerate(messages):
            meta = _meta(m)
            if meta is not None:
                keys.append(SUMMARY_ID_PREFIX + meta["summary"])
            elif _is_summary(m):
                keys.append(f"adopted-summary-{i}")
            elif m.id is None:
                raise AdapterError(f"message {i} of the context has no id (the messages reducer gives every "
                                   "message one): the guard cannot follow it")
            else:
                keys.append(str(m.id))
        if len(set(keys)) != len(keys):
            raise AdapterError("two messages of the context have the same id")
        tracker = sess.guard.tracker
        fresh = not tracker.units and not tracker.summaries and sess.guard.ledger.history_end == 0
        unknown = [i for i, (m, k) in enumerate(zip(messages, keys, strict=True))
                   if _is_summary(m) and k not in tracker.summaries]
        if unknown:
            first = messages[unknown[0]]
            if not fresh or unknown != [0]:
                raise AdapterError("the context holds a summary the guard did not make, after the guard recorded "
                                   "the session: its coverage is unknown")
            if self.options.on_unknown_history == "refuse":
                raise AdapterError("the context holds a summary the guard did not make (the thread's "
                                   "_summarization_event): its history predates the guard and is not verified "
                                   "(on_unknown_history='refuse'; 'adopt' records it as unverified)")
            count = 1 if self.options.floor_unit == "messages" else self._size(first)
            tracker.adopt(keys[0], count, reason="the thread's _summarization_event holds a summary made "
                          "before the guard")
        tracker.observe([Entry(k, _is_summary(m), 0 if _is_summary(m) else self._size(m))
                         for m, k in zip(messages, keys, strict=True)])
        return dict(zip((str(m.id) for m in messages), keys, strict=True))

    def _guard_clips(self, effective: list[AnyMessage], truncated: list[AnyMessage], keys: dict[str, str],
                     sess: _Session) -> list[AnyMessage]:
        """Decide each argument clip before the model, the offload or the summarizer gets the clipped
        message. Returns the view to use (clips the guard does not allow undone).

        A refused clip is a ``refusal`` line of the session's log, like a refused compaction (and
        counted by the ledger): ``tail_start`` is the end ``t`` of the newest clipped message,
        ``summary_input`` and ``summary_covers`` are ``[t, t)`` (no summary holds a clipped
        argument), ``failed`` is ``floor_in_tail`` for a clip inside the floor and ``no_hole`` for
        one no spill holds, ``holes`` are the latter's offsets."""
        guard = sess.guard
        ledger = guard.ledger
        spilled = ledger.core.spilled
        phi = max(0, ledger.history_end - self.options.recovery_floor_span)
        out = list(truncated)
        lossy: list[tuple[int, Pair]] = []
        floor: list[tuple[int, Pair]] = []
        for i, (orig, view) in enumerate(zip(effective, truncated, strict=True)):
            if orig is view:
                continue
            lo, hi = guard.tracker.interval(keys[str(orig.id)])
            if hi > phi and self.options.recovery_floor_span > 0:
                floor.append((i, (lo, hi)))
            elif lo < hi and not spilled.covers(lo, hi):
                lossy.append((i, (lo, hi)))
        if not lossy and not floor:
            return out
        sentences = [f"deepagents' argument truncation would clip write_file/edit_file arguments of the "
                     f"message at [{lo}, {hi}), which no spill holds" for _, (lo, hi) in lossy]
        sentences += [f"deepagents' argument truncation would clip the message at [{lo}, {hi}) inside the "
                      f"floor (the last {self.options.recovery_floor_span} {guard.unit})" for _, (lo, hi) in floor]
        failed = (*((FLOOR_IN_TAIL,) if floor else ()), *((NO_HOLE,) if lossy else ()))
        holes = tuple(normalize(r for _, r in lossy))
        decision = Decision("refuse", failed, holes)
        end = max(hi for _, (_, hi) in (*floor, *lossy))
        ledger.log_refusal(decision, summary_input=(end, end), summary_covers=(end, end), tail_start=end)
        if self.options.on_refuse == "halt":
            raise UnrecoverableCompactionError.from_decision(decision, [*sentences, "nothing was clipped"])
        for i, _ in floor:
            out[i] = effective[i]
        if self.options.on_refuse == "defer":
            for i, _ in lossy:
                out[i] = effective[i]
            _log.warning("tailguard: %s; the message is left unclipped", "; ".join(sentences))
            return out
        held = {keys[str(effective[i].id)]: effective[i] for i, _ in lossy}
        try:
            guard.spill_runs(holes, lambda run: self._payload(run, held, sess))
        except SpillFailed as exc:
            raise UnrecoverableCompactionError.from_decision(
                decision, [f"{exc}, nothing was clipped: {exc.__cause__}"]) from exc.__cause__
        return out

    def _verify_offload(self, file_path: str, media: list[AnyMessage], originals: dict[str, AnyMessage],
                        keys: dict[str, str], sess: _Session) -> Generator[tuple[Any, ...], Any, str | None]:
        """The offload is a spill when the file re-reads ending with the section written; then every
        message it wrote whole (not clipped, no media rewritten) is recorded as spilled."""
        written = [m for m in media if not _is_summary(m)]
        expected = get_buffer_string(written, format="xml") + "\n\n"
        try:
            responses = yield ("reread", file_path)
            data = responses[0].content if responses and responses[0].error is None else None
            text = data.decode("utf-8") if data is not None else None
        except Exception:  # an unreadable offload is no spill
            text = None
        if text is None or not text.endswith(expected):
            _log.warning("tailguard: the offload to %s does not re-read as written; it is not counted as a spill",
                         file_path)
            return file_path
        tracker = sess.guard.tracker
        whole = [tracker.interval(keys[str(m.id)]) for m in written
                 if m.id is not None and originals.get(str(m.id)) is m]
        for lo, hi in normalize(whole):
            sess.guard.ledger.spill(lo, hi, handle=OFFLOAD_HANDLE_PREFIX + file_path)
        return file_path

    def _plan(self, to_summarize: Sequence[AnyMessage], media: Sequence[AnyMessage],
              preserved: Sequence[AnyMessage], trimmed: Sequence[AnyMessage] | None,
              originals: dict[str, AnyMessage], keys: dict[str, str], sess: _Session) -> Plan:
        """Deleting ``to_summarize`` (keys of the originals), its summarizer shown ``trimmed`` of
        ``media``: a message is shown when it reaches the summarizer as the original (not clipped,
        no media rewritten, not cut by the trimmer)."""
        whole = {str(m.id) for m in media if originals.get(str(m.id)) is m}
        shown = [] if trimmed is None else [
            keys[str(t.id)] for t in trimmed if str(t.id) in whole and t == originals[str(t.id)]]
        return sess.guard.tracker.plan(deleted=[keys[str(m.id)] for m in to_summarize], shown=shown,
                                       kept=[keys[str(m.id)] for m in preserved])

    def _payload(self, run: Pair, held: dict[str, AnyMessage], sess: _Session) -> bytes:
        return encode_run(FRAMEWORK, sess.guard.unit, run, sess.guard.tracker, held,
                          lambda m: messages_to_dict([m])[0])

    def _resolve(self, plan: Plan, to_summarize: Sequence[AnyMessage], originals: dict[str, AnyMessage],
                 keys: dict[str, str], sess: _Session) -> str:
        held = {keys[str(m.id)]: originals[str(m.id)] for m in to_summarize if not _is_summary(m)}
        res = sess.guard.resolve(plan, lambda run: self._payload(run, held, sess))
        return res.action

    def _confirm(self, plan: Plan, probe: _Probe, to_summarize: Sequence[AnyMessage], media: Sequence[AnyMessage],
                 preserved: Sequence[AnyMessage], originals: dict[str, AnyMessage], keys: dict[str, str],
                 sess: _Session) -> Plan | None:
        if probe.overflowed:
            smaller = self._plan(to_summarize, media, preserved, None, originals, keys, sess)
            return None if self._resolve(smaller, to_summarize, originals, keys, sess) == "defer" else smaller
        if probe.trims and [(m.id, m) for m in probe.trims[-1]] != [(m.id, m) for m in self._decided_trim(media)]:
            raise AdapterError("the summarizer was shown other messages than the guard decided on; "
                               "nothing was replaced")
        return plan

    def _decided_trim(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        token = _trimmed.set(None)
        try:
            out: list[AnyMessage] = self._lc_helper._trim_messages_for_summary(list(messages))
            return out
        finally:
            _trimmed.reset(token)

    def _summary_message(self, summary: str, file_path: str | None, sess: _Session) -> tuple[AnyMessage, str]:
        """deepagents' summary message with the guard's id and metadata (the ledger id it will get,
        and this compaction's spills, named in its text too)."""
        new = self._build_new_messages_with_path(summary, file_path)
        if len(new) != 1 or not _is_summary(new[0]):
            raise AdapterError("_build_new_messages_with_path no longer returns one summary message; this "
                               "deepagents version is not supported")
        note: AnyMessage = new[0]
        sid = sess.guard.ledger.next_summary_id
        note.id = SUMMARY_ID_PREFIX + sid
        fresh = [{"range": [lo, hi], "handle": h} for (lo, hi), h in sess.guard.spills]
        del sess.guard.spills[:]
        note.additional_kwargs["tailguard"] = {"summary": sid, "unit": sess.guard.unit, "spills": fresh}
        if fresh:
            handles = ", ".join(str(x["handle"]) for x in fresh)
            note.content = (f"{note.content}\n\n[tailguard] Earlier messages were spilled losslessly before they "
                            f"left the context: {handles}")
        return note, sid

    def _apply(self, plan: Plan, note: AnyMessage, sid: str, event: SummarizationEvent, session_id: str,
               sess: _Session) -> dict[str, Any]:
        """Commit ``plan`` with its summary ``note`` (once the model call with it returned); the state
        update deepagents would return: its ``_summarization_event`` and session id."""
        sess.guard.tracker.commit(plan, key=str(note.id), summary=sid)
        return {SUMMARIZATION_EVENT_KEY: event, SUMMARIZATION_SESSION_ID_KEY: session_id}

    def _finish(self, response: Any, update: dict[str, Any] | None, sess: _Session, where: _Where) -> Any:
        """The model response, with the guard's state in the update (every call of a graph thread)."""
        if where.kind == "outside":
            if update is None:
                return response
            return ExtendedModelResponse(model_response=response, command=Command(update=update))
        value = self._state_value(sess)
        sess.persisted = value["integrity"]
        out = dict(update or {})
        out[STATE_KEY] = value
        return ExtendedModelResponse(model_response=response, command=Command(update=out))

    def _state_value(self, sess: _Session) -> dict[str, Any]:
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
        }
        value["integrity"] = integrity(value)
        return value

    def _size(self, m: AnyMessage) -> int:
        if self.options.floor_unit == "messages":
            return 1
        return int(self._lc_helper._partial_token_counter([m]))


def guarded_summarization_middleware(model: Any, backend: Any, *, options: GuardOptions | None = None,
                                     **kwargs: Any) -> GuardedDeepAgentsSummarizationMiddleware:
    """``create_summarization_middleware(model, backend)`` guarded: the same model-aware defaults
    (``compute_summarization_defaults``: trigger, keep and ``truncate_args_settings``;
    ``trim_tokens_to_summarize=None``), any of which a keyword overrides, plus the guard's options
    (``options=`` or their keywords)."""
    from langchain.chat_models import BaseChatModel

    if not isinstance(model, BaseChatModel):
        raise TypeError("guarded_summarization_middleware expects model to be a BaseChatModel instance")
    defaults: dict[str, Any] = dict(compute_summarization_defaults(model))
    defaults["trim_tokens_to_summarize"] = None
    return GuardedDeepAgentsSummarizationMiddleware(model, backend=backend, options=options,
                                                    **{**defaults, **kwargs})


def messages_from_spill(store: SpillStore, handle: str) -> list[BaseMessage]:
    """The messages of a spill this adapter wrote, as they were before they left the context."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return list(messages_from_dict([x["item"] for x in doc["items"]]))
