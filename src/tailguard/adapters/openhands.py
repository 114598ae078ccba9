"""The guard around the OpenHands SDK's condensers (``LLMSummarizingCondenser``, ``PipelineCondenser``).

The SDK never deletes an event: a condenser returns a ``Condensation`` (the forgotten event ids,
the summary, where it goes), the agent appends it to the conversation's event log, and every
later ``View`` leaves the forgotten events out. ``GuardedCondenser(inner=...)`` is a condenser
that runs ``inner`` and decides each ``Condensation`` **before it enters the event log**:

- it observes the view: every event is one offset (unit ``messages``), in the order the view
  first holds it, except the events the SDK never condenses (the leading ``SystemPromptEvent``
  and the first ``keep_first`` events: *pinned*, outside the offsets); a summary event is the
  summary of the ``Condensation`` whose id it carries (``<id>-summary``);
- it records what the summarizer was sent (every ``generate``/``agenerate`` call on the
  summarizing LLMs of ``inner`` while it runs) and counts a forgotten event as shown whole only
  when every text the agent's LLM would be sent for it (its text contents, tool-call arguments,
  reasoning) is in that prompt: the SDK shows ``str(event)``, cut at 500 characters, and an
  action without its arguments, so a long event or a tool call is shown in part (brief 4c);
- it decides with the ledger (profile ``partitioned``): ``halt`` raises
  ``UnrecoverableCompactionError`` naming the holes (the event log is untouched), ``spill``
  writes the forgotten events (``Event.model_dump(mode="json")``, byte-exact, re-read) to the
  store first, ``defer`` returns the view uncondensed and logs the refusal.

State (brief 9). A conversation's guard state is one versioned JSON value kept in the
conversation's own persisted state, ``ConversationState.agent_state["tailguard"]``, rewritten at
every ``condense`` (so it always matches the session's event log of the guard). ``condense``
receives only the view, so the conversation's state is bound around it: :class:`GuardedAgent`
(an ``Agent`` whose ``step``/``astep`` bind ``conversation.state``) or ``with
bind(state): ...``. A restarted process (a new ``GuardedCondenser`` over the persisted
conversation) continues from that value; one ``GuardedCondenser`` serves any number of
conversations (a lock per conversation, an LRU of restored sessions). The condenser's fields
are plain values (directories), so the agent holding it round-trips through the SDK's JSON.

Limits, fail closed: a ``Condensation`` that forgets a pinned event (a hard context reset) or
forgets an event newer than one it keeps raises :class:`~tailguard.adapters._offsets.AdapterError`
before it enters the log; a summary the guard did not make is adopted (``on_unknown_history``)
only in a view the guard meets first.

Validated with the versions in :data:`SUPPORTED` (the OpenHands preset's ``validated_on``).
"""

from __future__ import annotations

import contextvars
import functools
import os
import sys
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from tailguard.adapters._guard import (
    CompactionGuard,
    GuardOptions,
    Resolution,
    SessionLogs,
    arun_steps,
    missing_framework,
    open_store,
    run_steps,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import SessionTable, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.errors import SnapshotError
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.openhands import PRESET
from tailguard.spill import SpillStore

try:
    from openhands.sdk import Agent
    from openhands.sdk.context.condenser import LLMSummarizingCondenser, PipelineCondenser
    from openhands.sdk.context.condenser.base import CondenserBase
    from openhands.sdk.context.view import View
    from openhands.sdk.event import Condensation
    from openhands.sdk.event.base import Event, LLMConvertibleEvent
    from openhands.sdk.event.condenser import CondensationSummaryEvent
    from openhands.sdk.event.llm_convertible import SystemPromptEvent
    from openhands.sdk.llm import LLM, Message, TextContent
    from pydantic import PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("openhands", "the OpenHands SDK", "openhands",
                                        PRESET.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardedAgent", "GuardedCondenser", "bind", "events_from_spill"]

#: The versions this adapter is validated with: the OpenHands preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

#: The key of ``ConversationState.agent_state`` that holds the guard's state.
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.openhands"
STATE_VERSION = 1
FRAMEWORK = "openhands"
_SUMMARY_SUFFIX = "-summary"

_state: contextvars.ContextVar[Any] = contextvars.ContextVar("tailguard_openhands_state", default=None)
_recording: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "tailguard_openhands_recording", default=None)


@contextmanager
def bind(state: Any) -> Iterator[None]:
    """Bind a ``ConversationState`` to the ``condense`` calls made inside: the guard reads and
    writes its state in ``state.agent_state["tailguard"]`` (:class:`GuardedAgent` does this)."""
    if not hasattr(state, "agent_state") or not hasattr(state, "id"):
        raise TypeError(f"bind: expected a ConversationState, got {type(state).__name__}")
    token = _state.set(state)
    try:
        yield
    finally:
        _state.reset(token)


class GuardedAgent(Agent):
    """An ``Agent`` that binds its conversation's state around each step, so that a
    :class:`GuardedCondenser` keeps its state in the conversation's persistence."""

    @property
    def prompt_dir(self) -> str:
        """The SDK's ``Agent`` prompts (the SDK looks beside the class's module)."""
        module_file = sys.modules[Agent.__module__].__file__
        assert module_file is not None
        return os.path.join(os.path.dirname(module_file), "prompts")

    def step(self, conversation: Any, on_event: Any, on_token: Any = None) -> None:
        with bind(conversation.state):
            super().step(conversation, on_event, on_token)

    async def astep(self, conversation: Any, on_event: Any, on_token: Any = None) -> None:
        with bind(conversation.state):
            await super().astep(conversation, on_event, on_token)


def _prompt_text(messages: Sequence[Message]) -> str:
    return "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))


def _record(messages: Any) -> None:
    record = _recording.get()
    if record is not None and isinstance(messages, list):
        record.append(_prompt_text(messages))


def _watch(llm: LLM) -> None:
    """Record the prompts of ``llm``'s ``generate``/``agenerate`` while the guard runs ``inner``
    (an instance attribute shadowing the method; outside a guarded call it only passes through)."""
    if getattr(llm, "__dict__", {}).get("_tailguard_watched") == id(llm):
        return  # a copy of a watched LLM (model_copy copies __dict__) is watched anew
    sync, asynchronous = type(llm).generate.__get__(llm), type(llm).agenerate.__get__(llm)

    @functools.wraps(sync)
    def generate(*args: Any, **kwargs: Any) -> Any:
        _record(kwargs.get("messages", args[0] if args else None))
        return sync(*args, **kwargs)

    @functools.wraps(asynchronous)
    async def agenerate(*args: Any, **kwargs: Any) -> Any:
        _record(kwargs.get("messages", args[0] if args else None))
        return await asynchronous(*args, **kwargs)

    object.__setattr__(llm, "generate", generate)
    object.__setattr__(llm, "agenerate", agenerate)
    object.__setattr__(llm, "_tailguard_watched", id(llm))


def _condensers(inner: CondenserBase) -> list[CondenserBase]:
    if isinstance(inner, PipelineCondenser):
        return [c for sub in inner.condensers for c in _condensers(sub)]
    return [inner]


def _texts(event: LLMConvertibleEvent) -> list[str] | None:
    """What the agent's LLM is sent for ``event`` as texts; None when it holds more (an image)."""
    message = event.to_llm_message()
    out: list[str] = []
    for c in message.content:
        if not isinstance(c, TextContent):
            return None
        out.append(c.text)
    for call in message.tool_calls or []:
        out.append(call.arguments)
    if message.reasoning_content:
        out.append(message.reasoning_content)
    return [t for t in out if t]


def _shown_whole(event: LLMConvertibleEvent, prompts: Sequence[str]) -> bool:
    texts = _texts(event)
    return texts is not None and bool(prompts) and all(any(t in p for p in prompts) for t in texts)


def _to_json(event: Event) -> Any:
    return event.model_dump(mode="json")


@dataclass(slots=True, eq=False)
class _Session:
    """One conversation as this process holds it: its guard, the pinned event ids, and the
    integrity digest of the state value it last wrote."""

    sid: str
    guard: CompactionGuard
    pinned: list[str] = field(default_factory=list)
    persisted: str | None = None

    def close(self) -> None:
        self.guard.close()


@dataclass(slots=True)
class _Observed:
    units: list[str]  # the unpinned event ids of the view (summaries included), in order
    events: dict[str, LLMConvertibleEvent]


class GuardedCondenser(CondenserBase):
    """A condenser that decides every ``Condensation`` of ``inner`` before it enters the log.

    The guard keywords are :class:`~tailguard.adapters._guard.GuardOptions`' as plain values
    (so the agent round-trips through JSON): ``store`` the directory of a spill store, ``log`` a
    directory (one event log per conversation). The unit is ``messages`` (one event, one offset).
    """

    inner: CondenserBase
    recovery_floor_span: int = 0
    on_refuse: Literal["halt", "spill", "defer"] = "halt"
    store: str | None = None
    log: str | None = None
    profile: str = "partitioned"
    on_unknown_history: Literal["adopt", "refuse"] = "adopt"
    cache_size: int = 256

    _options: GuardOptions = PrivateAttr()
    _logs: SessionLogs = PrivateAttr()
    _store: SpillStore | None = PrivateAttr(default=None)
    _sessions: SessionTable[_Session] = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        if isinstance(self.inner, GuardedCondenser):
            raise ValueError("inner: a GuardedCondenser inside a GuardedCondenser decides twice")
        if self.cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {self.cache_size!r}")
        self._options = GuardOptions(recovery_floor_span=self.recovery_floor_span, floor_unit="messages",
                                     on_refuse=self.on_refuse, store=self.store, log=self.log,
                                     profile=self.profile, on_unknown_history=self.on_unknown_history)
        if self.log is not None and SessionLogs(self.log).kind != "dir":
            raise ValueError(f"log: expected a directory (one log per conversation), got {self.log!r}; "
                             "a path ending in '/' is created")
        self._logs = SessionLogs(self.log)
        self._store = open_store(self.store)
        self._sessions = SessionTable(self.cache_size)

    @property
    def options(self) -> GuardOptions:
        """The guard's options, built from the fields."""
        return self._options

    @property
    def spill_store(self) -> SpillStore | None:
        """The spill store ``store`` names, opened."""
        return self._store

    def get_llm(self) -> LLM | None:
        return self.inner.get_llm()

    def handles_condensation_requests(self) -> bool:
        return bool(self.inner.handles_condensation_requests())

    def session_guard(self, conversation_id: object) -> CompactionGuard | None:
        """The guard this process holds for a conversation, if cached."""
        sess = self._sessions.get(str(conversation_id))
        return None if sess is None else sess.guard

    def close(self) -> None:
        """Close every log this condenser opened."""
        for sess in self._sessions.drain():
            sess.close()

    # -- the entry points ----------------------------------------------------------------

    def condense(self, view: View, agent_llm: LLM | None = None) -> View | Condensation:
        state = self._bound()
        sid = str(state.id)
        with self._sessions.locked(sid):
            return run_steps(self._steps(view, sid, state), lambda v: self.inner.condense(v, agent_llm=agent_llm))

    async def acondense(self, view: View, agent_llm: LLM | None = None) -> View | Condensation:
        state = self._bound()
        sid = str(state.id)
        async with self._sessions.alocked(sid):
            return await arun_steps(self._steps(view, sid, state),
                                    lambda v: self.inner.acondense(v, agent_llm=agent_llm))

    def _steps(self, view: View, sid: str, state: Any) -> Generator[View, Any, View | Condensation]:
        """One ``condense``: observe the view, yield it where ``inner`` condenses it (its
        summarizer's prompts recorded meanwhile), decide, persist. Driven by ``run_steps`` or
        ``arun_steps`` under the conversation's lock; on any error the session is settled."""
        sess = self._load(sid, state)
        try:
            observed = self._observe(view, sess, state)
            prompts: list[str] = []
            token = _recording.set(prompts)
            try:
                result = yield view
            finally:
                _recording.reset(token)
            decided = self._decide(view, observed, result, prompts, sess)
        except BaseException:
            if not self._settle(sess):
                self._persist(sess, state)
            raise
        self._persist(sess, state)
        return decided

    def _decide(self, view: View, observed: _Observed, result: View | Condensation, prompts: list[str],
                sess: _Session) -> View | Condensation:
        if not isinstance(result, Condensation):
            return result
        plan, held = self._plan(observed, result, prompts, sess)
        self._confirm(view, result, sess)
        res = self._resolve(plan, sess, held)
        if res.action == "defer":
            return view
        self._apply(plan, result, sess)
        return result

    # -- sessions ----------------------------------------------------------------------------

    def _bound(self) -> Any:
        state = _state.get()
        if state is None:
            raise AdapterError("GuardedCondenser keeps its state in the conversation's state: run the agent as "
                               "tailguard.adapters.openhands.GuardedAgent, or call condense inside "
                               "`with bind(conversation.state): ...`")
        for c in _condensers(self.inner):
            llm = c.get_llm()
            if llm is not None:
                _watch(llm)
        return state

    def _pinned_count(self, view: View) -> int:
        """Events at the view's start every condenser of ``inner`` leaves alone (the SDK's
        protected prefix); 0 when ``inner`` holds a condenser the guard does not know."""
        counts = []
        system = next((i for i, e in enumerate(view.events) if isinstance(e, SystemPromptEvent)), None)
        for c in _condensers(self.inner):
            if isinstance(c, LLMSummarizingCondenser):
                counts.append(max(c.keep_first, 0 if system is None else system + 1))
            elif c.__class__.__name__ != "NoOpCondenser":
                counts.append(0)
        return min(counts, default=0)

    def _load(self, sid: str, state: Any) -> _Session:
        value = (state.agent_state or {}).get(STATE_KEY)
        cached = self._sessions.get(sid)
        if value is None:
            if cached is not None and cached.persisted is None:
                return cached
            if cached is not None:
                raise AdapterError(f"conversation {sid}: the guard state in agent_state[{STATE_KEY!r}] is gone "
                                   "while this process holds the session; refusing to start over")
            ledger, owned = self._logs.start(self._options, sid)
            guard = CompactionGuard(self._options, framework=FRAMEWORK, units=("messages",), session=sid,
                                    ledger=ledger, tracker=OffsetTracker(ledger, remember=False),
                                    store=self._store, owned=owned)
            sess = _Session(sid, guard)
            self._sessions.remember(sid, sess)
            return sess
        where = f"conversation {sid}: agent_state[{STATE_KEY!r}]"
        if check_state_value(value, where, fmt=STATE_FORMAT, version=STATE_VERSION, framework="OpenHands") != sid:
            raise AdapterError(f"{where} holds the guard state of conversation {value['session']!r}")
        if cached is not None and cached.persisted == value["integrity"]:
            return cached
        try:
            ledger = self._logs.resume(value["ledger"], sid)
        except SnapshotError as exc:
            raise AdapterError(f"{where}: cannot continue from it: {exc}") from exc
        tracker = OffsetTracker.restore(ledger, value.get("tracker"))
        pinned = value.get("pinned")
        if not (isinstance(pinned, list) and all(isinstance(x, str) for x in pinned)):
            raise AdapterError(f"{where}: bad 'pinned'")
        guard = CompactionGuard(self._options, framework=FRAMEWORK, units=("messages",), session=sid,
                                ledger=ledger, tracker=tracker, store=self._store)
        sess = _Session(sid, guard, list(pinned), value["integrity"])
        if cached is not None:
            cached.close()
        self._sessions.remember(sid, sess)
        return sess

    def _settle(self, sess: _Session) -> bool:
        """A session this call started that failed before recording anything is dropped with its
        log (the conversation keeps no guard state); True when it was."""
        ledger = sess.guard.ledger
        if sess.persisted is not None or ledger.history_end or ledger.refusals or ledger.summaries:
            return False
        self._sessions.forget(sess.sid)
        sess.close()
        self._logs.discard(sess.sid)
        return True

    def _persist(self, sess: _Session, state: Any) -> None:
        """The session's state into ``state.agent_state`` (reassigned: the SDK autosaves it)."""
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
            "pinned": list(sess.pinned),
        }
        value["integrity"] = integrity(value)
        state.agent_state = {**(state.agent_state or {}), STATE_KEY: value}
        sess.persisted = value["integrity"]

    # -- the steps -------------------------------------------------------------------------

    def _observe(self, view: View, sess: _Session, state: Any) -> _Observed:
        """Offsets for the view's events: pinned ones first met are pinned, new ones appended,
        ones that vanished recorded as evicted (the tracker). A summary the guard did not make
        is adopted in a view it meets first, and refused anywhere else."""
        events = list(view.events)
        tracker = sess.guard.tracker
        fresh = sess.guard.ledger.history_end == 0 and not tracker.summaries
        want = self._pinned_count(view)
        for i, e in enumerate(events[:want]):
            if i == len(sess.pinned) and not isinstance(e, CondensationSummaryEvent) and fresh \
                    and e.id not in tracker.units:
                sess.pinned.append(e.id)
        head = [e.id for e in events[:len(sess.pinned)]]
        if head != sess.pinned:
            raise AdapterError(f"the view does not open with the pinned events {sess.pinned} (it opens with "
                               f"{head}): a pinned event was forgotten")
        rest = events[len(sess.pinned):]
        known = tracker.summaries
        entries: list[Entry] = []
        for i, e in enumerate(rest):
            if isinstance(e, CondensationSummaryEvent):
                if e.id not in known:
                    where = f"view event {len(sess.pinned) + i} is a summary the guard did not make ({e.id})"
                    if not (fresh and not entries):
                        raise AdapterError(f"{where}: only the first summary of a conversation the guard meets "
                                           "first can be adopted")
                    if self._options.on_unknown_history == "refuse":
                        raise AdapterError(f"{where}: it predates the guard and is not verified "
                                           "(on_unknown_history='refuse'; 'adopt' records it as unverified)")
                    in_view = {x.id for x in events}
                    before = sum(1 for x in state.events if isinstance(x, LLMConvertibleEvent)
                                 and x.id not in in_view)
                    tracker.adopt(e.id, max(before, 1), reason=f"a Condensation made before the guard "
                                  f"({before} events of the conversation's log it forgot or summarized)")
                    known = tracker.summaries
                entries.append(Entry(e.id, True, 0))
            else:
                entries.append(Entry(e.id, False, 1))
        tracker.observe(entries)
        return _Observed([x.key for x in entries], {e.id: e for e in rest})

    def _plan(self, observed: _Observed, result: Condensation, prompts: list[str],
              sess: _Session) -> tuple[Plan, dict[str, Event]]:
        """The condensation in ledger terms: forgotten, shown whole (in a recorded prompt), kept."""
        forgotten = set(result.forgotten_event_ids)
        pinned = forgotten & set(sess.pinned)
        if pinned:
            raise AdapterError(f"the condensation forgets the pinned event(s) {sorted(pinned)} (a hard context "
                               "reset); the guard cannot place them. Nothing entered the event log")
        unknown = forgotten - set(observed.units)
        if unknown:
            raise AdapterError(f"the condensation forgets {len(unknown)} event(s) not in the view "
                               f"({sorted(unknown)[:3]}); nothing entered the event log")
        deleted = [k for k in observed.units if k in forgotten]
        kept = [k for k in observed.units if k not in forgotten]
        shown = [k for k in deleted if _shown_whole(observed.events[k], prompts)]
        held: dict[str, Event] = {k: observed.events[k] for k in deleted if k not in sess.guard.tracker.summaries}
        return sess.guard.tracker.plan(deleted=deleted, shown=shown, kept=kept), held

    def _confirm(self, view: View, result: Condensation, sess: _Session) -> None:
        """The summary goes where the forgotten events began, after the pinned ones."""
        if result.summary is not None and result.summary_offset is not None \
                and result.summary_offset < len(sess.pinned):
            raise AdapterError(f"the condensation puts its summary at {result.summary_offset}, among the pinned "
                               f"events (the first {len(sess.pinned)}); nothing entered the event log")
        if result.id + _SUMMARY_SUFFIX in {e.id for e in view.events}:
            raise AdapterError(f"condensation id {result.id} is already in the view")

    def _resolve(self, plan: Plan, sess: _Session, held: dict[str, Event]) -> Resolution:
        tracker = sess.guard.tracker

        def payload(run: Pair) -> bytes:
            return encode_run(FRAMEWORK, sess.guard.unit, run, tracker, held, _to_json)

        return sess.guard.resolve(plan, payload)

    def _apply(self, plan: Plan, result: Condensation, sess: _Session) -> None:
        """Commit: the summary event the SDK will build from ``result`` is the new summary
        (a condensation without a summary leaves none: the next view records it evicted)."""
        sess.guard.tracker.commit(plan, key=result.id + _SUMMARY_SUFFIX)


def events_from_spill(store: SpillStore, handle: str) -> list[Event]:
    """The OpenHands events of a spill, as they were before they were forgotten."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return [Event.model_validate(x["item"]) for x in doc["items"]]

