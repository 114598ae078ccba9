"""The guard around langmem's ``summarize_messages`` and ``SummarizationNode``.

langmem summarizes the oldest unsummarized messages once they pass
``max_tokens_before_summary``, but shows its model only the newest ``max_tokens`` of them
(``trim_messages(..., allow_partial=True)``) and then marks **every** one of them summarized:
they leave the model's context. ``GuardedSummarizer.summarize_messages`` takes the same
arguments, works out first what langmem will mark and what its model will be shown (langmem's
own ``_preprocess_messages`` and ``_adjust_messages_before_summarization``), decides before
the model is called, then runs the real ``summarize_messages`` with the model wrapped in a
recorder and checks that the model was shown exactly that. Offsets are given by message id; the
running summary is the one summary in the context, always shown whole to the next summarizer
(langmem passes it in the prompt). ``halt`` raises, ``defer`` returns the messages with the
running summary unchanged (nothing newly marked), ``spill`` writes the messages about to be
marked to the store first. ``GuardedSummarizationNode`` is ``SummarizationNode`` with the guard.

Sessions (SPEC.md section 11). Called without ``guard_state=``, a :class:`GuardedSummarizer` is
one session (:attr:`GuardedSummarizer.guard`), as before. Called with ``guard_state=`` (``None``
and a ``session_id`` for a new session, else the value the previous call returned), it serves
any number of sessions: the result is a :class:`GuardedSummarizationResult` (langmem's result
plus ``guard_state``, the state to pass next time, and this call's ``spills``). The state is a
versioned JSON value (format ``tailguard.langmem``): the ledger's snapshot, the offsets of the
messages not yet marked summarized, the digest of the running summary it goes with, and an
integrity digest; a value of another format, version or session, altered, or beside another
running summary is an ``AdapterError`` naming why (fail closed). Restored sessions stay in an
LRU (``cache_size``), each used only when the state given is the one it last handed out; a lock
per session serializes its calls (sync and async). Each session writes its own log (``log=`` a
directory or a function from session id to path); a continued session appends a ``resume``
line. A running summary the guard meets first and did not make is adopted (an ``adopt`` line:
offsets ``[0, a)``, one per message it marked or their tokens, are unverified) or, with
``on_unknown_history="refuse"``, refused. In a LangGraph run, ``GuardedSummarizationNode`` does
this per thread: the session id is the thread id and the state rides in langmem's ``context``
dict at :data:`STATE_KEY`, beside ``running_summary``, returned in every update (so any
checkpointer keeps it with the thread). The framework-free parts are in
:mod:`tailguard.adapters._sessions`, shared with the LangChain adapter.

The guard's options are one :class:`~tailguard.adapters._guard.GuardOptions` (``options=``), or
the keywords, from which it is built once; giving both is a ``TypeError``. A call takes the
adapters' named steps (``_observe``, ``_plan``, ``_resolve``, ``_confirm``, ``_apply``), written
once for ``summarize_messages`` and ``asummarize_messages``: they differ only in which of
langmem's two functions runs the summary.

Validated with the versions in :data:`SUPPORTED` (the langmem preset's ``validated_on``).
Private functions of langmem this module relies on:
``langmem.short_term.summarization._preprocess_messages``,
``_adjust_messages_before_summarization`` and ``_prepare_summarization_result``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
from tailguard.adapters._sessions import SessionTable, canonical, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run
from tailguard.base.args import is_int
from tailguard.base.errors import SnapshotError
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.langmem import PRESET

try:
    from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage, messages_to_dict
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import RunnableLambda
    from langmem.short_term import summarization as _lm
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("langmem", "langmem", "langmem", PRESET.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardedSummarizationNode", "GuardedSummarizationResult", "GuardedSummarizer"]

#: The versions this adapter is validated with: the langmem preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

SUMMARY_KEY = "langmem-summary:"
#: The key of langmem's ``context`` dict (beside ``running_summary``) that holds a thread's guard state.
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.langmem"
STATE_VERSION = 1
_OUTSIDE = "\x00one-session"  # the lock key of the one session of calls without guard_state=


_KWARGS = frozenset({"max_tokens", "max_tokens_before_summary", "max_summary_tokens", "token_counter",
                     "initial_summary_prompt", "existing_summary_prompt", "final_prompt"})


@dataclass
class GuardedSummarizationResult(_lm.SummarizationResult):  # type: ignore[misc]
    """langmem's ``SummarizationResult`` of a call given ``guard_state=``, with the session's new
    guard state (``guard_state``: keep it beside the running summary and pass it to the next
    call) and the spills this call wrote (``spills``: ``(offsets, handle)``)."""

    guard_state: dict[str, Any] | None = None
    spills: list[tuple[Pair, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Compaction:
    """One call between its decision and langmem's result: the plan, langmem's preprocessing
    (what it will mark) and what its model will be shown."""

    plan: Plan
    pre: Any  # langmem's PreprocessedMessages
    shown: list[BaseMessage]


@dataclass(slots=True, eq=False)
class _Session:
    """One session's guard as this process holds it: the guard, the digest of the running summary
    its state goes with, and the integrity digest of the state value it last handed out."""

    sid: str | None
    guard: CompactionGuard
    summary: str | None = None
    persisted: str | None = None

    def close(self) -> None:
        self.guard.close()


@dataclass(frozen=True, slots=True)
class _Where:
    """Which session a call belongs to: ``one`` (no ``guard_state=``: the summarizer's one
    session), or ``state`` (the session ``value`` holds; ``value`` None: a new session ``sid``)."""

    kind: str
    sid: str | None
    value: dict[str, Any] | None = None


def _summary_digest(running: Any) -> str | None:
    """A running summary's identity: its text, the ids it marked and the last one."""
    if running is None:
        return None
    text = running.summary if isinstance(running.summary, (str, list, dict)) else str(running.summary)
    doc = [text, sorted(str(x) for x in running.summarized_message_ids), running.last_summarized_message_id]
    return "sha256:" + hashlib.sha256(canonical(doc)).hexdigest()


class GuardedSummarizer:
    """langmem's ``summarize_messages`` with the guard, for one session or any number of them.

    - Without ``guard_state=``: one session, :attr:`guard` (the use before sessions existed).
    - With ``guard_state=`` (``None`` for a new session, else the value the previous call
      returned in :attr:`GuardedSummarizationResult.guard_state`): the session that state
      holds. The result carries the session's new state; keep it beside the running summary.
      ``session_id=`` names a new session (default ``session-<random>``) and, for a continued
      one, must be the session the state names.

    ``cache_size`` restored sessions stay in memory (an LRU by session id), each used only when
    the state it last handed out is the state given. A lock per session serializes its calls.
    """

    def __init__(
        self,
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
    ) -> None:
        self.options = guard_options(options, "GuardedSummarizer", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile, on_unknown_history=on_unknown_history)
        if self.options.floor_unit not in ("messages", "tokens"):
            raise ValueError(f"floor_unit: langmem offsets can be 'messages' or 'tokens', "
                             f"got {self.options.floor_unit!r}")
        if not is_int(cache_size) or cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {cache_size!r}")
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self._sessions: SessionTable[_Session] = SessionTable(cache_size)
        self._one: _Session | None = None

    # -- the sessions ---------------------------------------------------------------------

    @property
    def guard(self) -> CompactionGuard:
        """The guard of the one session of calls without ``guard_state=``."""
        with self._sessions.locked(_OUTSIDE):
            return self._one_session().guard

    def session_guard(self, session_id: str) -> CompactionGuard | None:
        """The guard this process holds for ``session_id``, if cached."""
        sess = self._sessions.get(session_id)
        return None if sess is None else sess.guard

    def close(self) -> None:
        """Close every log this summarizer opened."""
        sessions = self._sessions.drain()
        with self._sessions.mutex:
            if self._one is not None:
                sessions.append(self._one)
            self._one = None
        for sess in sessions:
            sess.close()

    def _one_session(self) -> _Session:
        if self._one is None:
            ledger, owned = self._logs.start(self.options, None)
            self._one = _Session(None, CompactionGuard(self.options, framework="langmem", ledger=ledger,
                                                       tracker=OffsetTracker(ledger), store=self._store,
                                                       owned=owned))
        return self._one

    def _where(self, guard_state: Any, session_id: str | None) -> _Where:
        if guard_state is UNSET:
            if session_id is not None:
                raise TypeError("summarize_messages: session_id= goes with guard_state= (None for a new session)")
            return _Where("one", None)
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id: expected a string, got {session_id!r}")
        if guard_state is None:
            return _Where("state", session_id if session_id is not None else f"session-{uuid.uuid4().hex}")
        sid = check_state_value(guard_state, "guard_state", fmt=STATE_FORMAT, version=STATE_VERSION,
                                framework="langmem")
        if session_id is not None and sid != session_id:
            raise AdapterError(f"guard_state: it holds the guard state of session {sid!r}, not of {session_id!r} "
                               "(a copied or forked thread): a session is continued only by its own thread")
        return _Where("state", sid, guard_state)

    def _load(self, where: _Where) -> _Session:
        """The session of ``where`` (its lock held): cached when the cache is what the state
        says, else restored from the state, else new."""
        if where.kind == "one":
            return self._one_session()
        assert where.sid is not None
        sid, value = where.sid, where.value
        cached = self._sessions.get(sid)
        if value is None:
            if cached is not None:
                raise AdapterError(f"session {sid!r} has a guard in this process but no guard state was given "
                                   "(its state was reset?): a session is not started twice")
            ledger, owned = self._logs.start(self.options, sid)
            guard = CompactionGuard(self.options, framework="langmem", session=sid, ledger=ledger,
                                    tracker=OffsetTracker(ledger, remember=False), store=self._store, owned=owned)
            sess = _Session(sid, guard)
        elif (hit := self._sessions.cached_for(cached, value)) is not None:
            sess = hit
        else:
            summary = value.get("running_summary")
            if not (summary is None or isinstance(summary, str)):
                raise AdapterError(f"guard_state of session {sid!r}: bad 'running_summary'")
            try:
                ledger = self._logs.resume(value["ledger"], sid)
            except SnapshotError as exc:
                raise AdapterError(f"session {sid!r}: cannot continue from the guard state given: {exc}. The log "
                                   "has moved past that state (a run that failed after the guard recorded, an "
                                   "older copy of the state, or another process continued the session)") from exc
            try:
                tracker = OffsetTracker.restore(ledger, value.get("tracker"))
            except AdapterError as exc:
                ledger.close()
                raise AdapterError(f"guard_state of session {sid!r}: {exc}") from exc
            guard = CompactionGuard(self.options, framework="langmem", session=sid, ledger=ledger,
                                    tracker=tracker, store=self._store)
            sess = _Session(sid, guard, summary, value["integrity"])
            if cached is not None:
                cached.close()
        self._sessions.remember(sid, sess)
        return sess

    def _state_value(self, sess: _Session) -> dict[str, Any]:
        """The session's state: the ledger's snapshot, the offsets of the messages not yet
        summarized, and the digest of the running summary it goes with."""
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
            "running_summary": sess.summary,
        }
        value["integrity"] = integrity(value)
        return value

    def _finish(self, result: Any, sess: _Session, where: _Where, spilled: int) -> Any:
        if where.kind == "one":
            return result
        sess.summary = _summary_digest(result.running_summary)
        value = self._state_value(sess)
        sess.persisted = value["integrity"]
        spills = list(sess.guard.spills[spilled:])
        del sess.guard.spills[:]  # the store lists them by session: keep memory bounded
        return GuardedSummarizationResult(messages=result.messages, running_summary=result.running_summary,
                                          guard_state=value, spills=spills)

    # -- the entry points, one body ---------------------------------------------------------

    def summarize_messages(self, messages: list[AnyMessage], *, running_summary: Any, model: Any,
                           guard_state: dict[str, Any] | Unset | None = UNSET, session_id: str | None = None,
                           **kwargs: Any) -> Any:
        """``langmem.short_term.summarize_messages`` with the guard; same arguments, same result.

        With ``guard_state=`` the result is a :class:`GuardedSummarizationResult` whose
        ``guard_state`` is the state to pass next time (see the class)."""

        def call(m: Any) -> Any:
            return _lm.summarize_messages(messages, running_summary=running_summary, model=m, **kwargs)

        where = self._where(guard_state, session_id)
        with self._sessions.locked(_OUTSIDE if where.sid is None else where.sid):
            sess = self._load(where)
            spilled = len(sess.guard.spills)
            result = run_steps(self._compaction(sess, where, messages, running_summary, model, kwargs), call)
            return self._finish(result, sess, where, spilled)

    async def asummarize_messages(self, messages: list[AnyMessage], *, running_summary: Any, model: Any,
                                  guard_state: dict[str, Any] | Unset | None = UNSET, session_id: str | None = None,
                                  **kwargs: Any) -> Any:
        """``langmem.short_term.asummarize_messages`` with the guard."""

        async def call(m: Any) -> Any:
            return await _lm.asummarize_messages(messages, running_summary=running_summary, model=m, **kwargs)

        where = self._where(guard_state, session_id)
        async with self._sessions.alocked(_OUTSIDE if where.sid is None else where.sid):
            sess = self._load(where)
            spilled = len(sess.guard.spills)
            result = await arun_steps(self._compaction(sess, where, messages, running_summary, model, kwargs), call)
            return self._finish(result, sess, where, spilled)

    def _compaction(self, sess: _Session, where: _Where, messages: list[AnyMessage], running: Any, model: Any,
                    kwargs: dict[str, Any]) -> Generator[Any, Any, Any]:
        """The steps of one call; yields the model langmem is to run with, receives its result."""
        unknown = set(kwargs) - _KWARGS
        if unknown:
            raise TypeError(f"summarize_messages: unexpected keyword arguments {sorted(unknown)}")
        if "max_tokens" not in kwargs:
            raise TypeError("summarize_messages: max_tokens is required")
        counter = kwargs.get("token_counter", count_tokens_approximately)
        live = self._observe(messages, running, counter, sess, where)
        pre = _lm._preprocess_messages(
            messages=messages, running_summary=running, max_tokens=kwargs["max_tokens"],
            max_tokens_before_summary=kwargs.get("max_tokens_before_summary"),
            max_summary_tokens=kwargs.get("max_summary_tokens", 256), token_counter=counter)
        if not pre.messages_to_summarize:
            return (yield model)  # nothing to summarize: langmem runs as it is
        shown = _lm._adjust_messages_before_summarization(pre, counter)
        plan = self._plan(pre, shown, live, running, sess)
        res = self._resolve(plan, sess, {str(m.id): m for m in live})
        if res.action == "defer":
            return self._unchanged(messages, running, pre, kwargs)
        compaction = _Compaction(plan, pre, shown)
        seen: list[Any] = []
        result = yield _recorder(model, seen)
        return self._apply(self._confirm(compaction, running, result, seen), result, sess)

    # -- the steps ------------------------------------------------------------------------

    def _observe(self, messages: list[AnyMessage], running: Any, counter: Any, sess: _Session,
                 where: _Where) -> list[AnyMessage]:
        """Offsets by message id for the messages not yet summarized (returned), and the running
        summary as the one summary in the context. A running summary the guard did not make, met
        first, is adopted (``on_unknown_history``); with a guard state, the running summary
        must be the one that state goes with."""
        body = messages[1:] if messages and isinstance(messages[0], SystemMessage) else list(messages)
        for i, m in enumerate(body):
            if m.id is None:
                raise AdapterError(f"message {i} has no id; langmem and the guard need message ids")
        tracker = sess.guard.tracker
        fresh = not tracker.units and not tracker.summaries and sess.guard.ledger.history_end == 0
        if where.kind == "state" and where.value is not None and _summary_digest(running) != sess.summary:
            what = "no running summary" if running is None else "a running summary"
            raise AdapterError(f"session {sess.sid!r}: the context holds {what} other than the one its guard "
                               "state goes with (a reset or edited context, or another thread's summary)")
        done: set[str] = set(running.summarized_message_ids) if running is not None else set()
        if running is not None and fresh:
            self._adopt(body, running, counter, sess)
        live = [m for m in body if m.id not in done]
        by_tokens = sess.guard.unit == "tokens"
        entries = [Entry(k, True, 0) for k in _summary_keys(running)]
        entries += [Entry(str(m.id), False, int(counter([m])) if by_tokens else 1) for m in live]
        tracker.observe(entries)
        return live

    def _adopt(self, body: list[AnyMessage], running: Any, counter: Any, sess: _Session) -> None:
        """A running summary the guard meets first and did not make: offsets ``[0, a)`` (one per
        message it marked, or their tokens where the context still holds them and one per message
        it does not) predate the guard and are unverified."""
        ids = {str(x) for x in running.summarized_message_ids}
        what = f"the running summary of {len(ids)} message(s), last {running.last_summarized_message_id!r}"
        if self.options.on_unknown_history == "refuse":
            raise AdapterError(f"the context holds a running summary the guard did not make ({what}): its "
                               "history predates the guard and is not verified (on_unknown_history='refuse'; "
                               "'adopt' records it as unverified)")
        if sess.guard.unit == "messages":
            count = len(ids)
        else:
            present = [m for m in body if str(m.id) in ids]
            count = sum(int(counter([m])) for m in present) + len(ids) - len(present)
        sess.guard.tracker.adopt(_summary_keys(running)[0], max(1, count),
                                 reason=f"{what} was made before the guard")

    def _plan(self, pre: Any, shown: Sequence[BaseMessage], live: Sequence[AnyMessage], running: Any,
              sess: _Session) -> Plan:
        """The compaction marking ``pre.messages_to_summarize``, its model shown ``shown`` (what of
        it is whole) and the running summary, keeping the rest of ``live``."""
        marked = {str(m.id) for m in pre.messages_to_summarize}
        by_id = {str(m.id): m for m in pre.messages_to_summarize}
        shown_keys = [str(m.id) for m in shown if str(m.id) in by_id and m == by_id[str(m.id)]]
        summary_keys = _summary_keys(running)
        return sess.guard.tracker.plan(
            deleted=[*summary_keys, *(str(m.id) for m in pre.messages_to_summarize)],
            shown=[*summary_keys, *shown_keys],  # the running summary is always in the prompt
            kept=[str(m.id) for m in live if str(m.id) not in marked])

    def _resolve(self, plan: Plan, sess: _Session, held: Mapping[str, BaseMessage]) -> Resolution:
        guard = sess.guard

        def payload(run: Pair) -> bytes:
            return encode_run("langmem", guard.unit, run, guard.tracker, held, lambda m: messages_to_dict([m])[0])

        return guard.resolve(plan, payload)

    def _confirm(self, compaction: _Compaction, running: Any, result: Any, seen: list[Any]) -> Plan:
        """langmem must have summarized once, marked what was decided and shown its model what was
        decided; else nothing is recorded."""
        new = result.running_summary
        if new is None or len(seen) != 1:
            raise AdapterError("langmem did not summarize as planned; nothing was recorded")
        before = set(running.summarized_message_ids) if running is not None else set()
        marked = {str(m.id) for m in compaction.pre.messages_to_summarize}
        if set(new.summarized_message_ids) - before != marked:
            raise AdapterError("langmem marked other messages summarized than the guard decided on")
        prompt = seen[0]
        prompt_messages = list(prompt.to_messages() if hasattr(prompt, "to_messages") else prompt)
        if not all(any(p == m for p in prompt_messages) for m in compaction.shown):
            raise AdapterError("langmem's model was not shown the messages the guard decided on")
        return compaction.plan

    def _apply(self, plan: Plan, result: Any, sess: _Session) -> Any:
        """Commit ``plan`` under the new running summary's key; langmem's result, unchanged."""
        sess.guard.tracker.commit(plan, key=SUMMARY_KEY + str(result.running_summary.last_summarized_message_id))
        return result

    # -- helpers --------------------------------------------------------------------------

    def _unchanged(self, messages: list[AnyMessage], running: Any, pre: Any, kwargs: dict[str, Any]) -> Any:
        body = messages[1:] if pre.existing_system_message is not None else messages
        nothing = dataclasses.replace(pre, messages_to_summarize=[])
        return _lm._prepare_summarization_result(
            preprocessed_messages=nothing, messages=body, existing_summary=running, running_summary=running,
            final_prompt=kwargs.get("final_prompt", _lm.DEFAULT_FINAL_SUMMARY_PROMPT))


def _summary_keys(running: Any) -> list[str]:
    """The running summary's key in the context, when there is one."""
    return [] if running is None else [SUMMARY_KEY + str(running.last_summarized_message_id)]


def _recorder(model: Any, seen: list[Any]) -> Any:
    """``model`` as a Runnable that records what it is shown (sync and async)."""

    def call(x: Any) -> Any:
        seen.append(x)
        return model.invoke(x)

    async def acall(x: Any) -> Any:
        seen.append(x)
        return await model.ainvoke(x)

    return RunnableLambda(call, afunc=acall)


class GuardedSummarizationNode(_lm.SummarizationNode):  # type: ignore[misc]
    """``SummarizationNode`` whose summarization goes through a :class:`GuardedSummarizer`.

    In a LangGraph run, each thread is its own session (its id the thread id): the guard state
    rides in the state's ``context`` dict at :data:`STATE_KEY`, beside langmem's
    ``running_summary``, and is returned in every update, so any checkpointer keeps it with the
    thread. One node serves any number of threads; a new process continues a thread from its
    checkpoint. Called outside a graph run, it is the summarizer's one session.
    """

    def __init__(self, *, guard: GuardedSummarizer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tailguard = guard

    def _arguments(self, context: dict[str, Any]) -> dict[str, Any]:
        return {"running_summary": context.get("running_summary"), "model": self.model,
                "max_tokens": self.max_tokens, "max_tokens_before_summary": self.max_tokens_before_summary,
                "max_summary_tokens": self.max_summary_tokens, "token_counter": self.token_counter,
                "initial_summary_prompt": self.initial_summary_prompt,
                "existing_summary_prompt": self.existing_summary_prompt, "final_prompt": self.final_prompt,
                **self._session(context)}

    @staticmethod
    def _session(context: dict[str, Any]) -> dict[str, Any]:
        """The thread's session: its guard state and id (none outside a graph run)."""
        try:
            from langgraph.config import get_config

            conf = get_config().get("configurable", {})
        except (ImportError, RuntimeError):
            return {}
        thread = conf.get("thread_id")
        return {"guard_state": context.get(STATE_KEY), "session_id": None if thread is None else str(thread)}

    @staticmethod
    def _with_state(update: dict[str, Any], context: dict[str, Any], result: Any) -> dict[str, Any]:
        if isinstance(result, GuardedSummarizationResult):
            update["context"] = {**update.get("context", context), STATE_KEY: result.guard_state}
        return update

    def _func(self, input: Any) -> dict[str, Any]:
        messages, context = self._parse_input(input)
        context = dict(context or {})
        result = self.tailguard.summarize_messages(messages, **self._arguments(context))
        update: dict[str, Any] = self._prepare_state_update(context, result)
        return self._with_state(update, context, result)

    async def _afunc(self, input: Any) -> dict[str, Any]:
        messages, context = self._parse_input(input)
        context = dict(context or {})
        result = await self.tailguard.asummarize_messages(messages, **self._arguments(context))
        update: dict[str, Any] = self._prepare_state_update(context, result)
        return self._with_state(update, context, result)
