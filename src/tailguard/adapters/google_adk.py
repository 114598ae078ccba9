"""The guard around Google ADK 2's event compaction (``EventsCompactionConfig``).

ADK never deletes an event: a compaction appends an event whose ``actions.compaction`` holds a
summary and a timestamp range, and prompt assembly (``_process_compaction_events``) drops every
raw event inside a kept range and every summary a later range contains. So what a compaction
*deletes* is what leaves the model's context: the guard decides that, before the compaction event
is written.

``GuardedCompaction(inner, ...)`` is both the compaction's summarizer and an ADK plugin: give it as
``EventsCompactionConfig(summarizer=guard, ...)`` and in ``App(plugins=[guard])``. ADK calls
``maybe_summarize_events(events=...)`` for every compaction, sliding-window and token-threshold
alike, and appends the event it returns. The guard

- *observes* the session's context (``_process_compaction_events`` over the session's events, the
  plugin's ``before_run_callback`` having named the session): raw events by id, one offset each
  (unit ``messages``), summaries by the id of their compaction event;
- runs ``inner`` (default: ``LlmEventSummarizer`` on the agent's model, as ADK would build it), and
  *plans* its compaction: what leaves the context when its event is added, what the summarizer
  was shown whole (``inner._format_events_for_prompt``, the prompt's conversation text: a part is
  shown when its text, its call or its response is there unclipped; images, files and clipped tool
  content are not), what stays;
- *resolves* it with the ledger **before returning the event**: ``halt`` returns nothing (no
  compaction event is written, nothing leaves) and raises ``UnrecoverableCompactionError`` at the
  session's next model request or run (ADK swallows a summarizer's exceptions, so the guard
  re-raises it from its plugin callbacks, which ADK wraps in a ``RuntimeError``); ``spill`` writes
  the events that leave (their JSON, byte-exact) to the store and proceeds; ``defer`` returns
  nothing and logs the refusal;
- *confirms* the event covers the range planned and *applies* it: the guard's state rides in the
  compaction event's ``actions.state_delta`` (key :data:`STATE_KEY`), so any session service
  (in memory, SQLite, a database) keeps it in the session's state and a new runner or process
  continues the session from it. A compaction that writes no event (refused, or the summarizer
  returned none) hands its state to the session's next event (``on_event_callback``); a process
  that ended before that rebuilds the ledger from the log (:meth:`GuardedCompaction._recover`).

A session compacted before the guard came is adopted (its summaries' coverage unverified,
``on_unknown_history="adopt"``) or refused. One guard serves any number of sessions (a lock per
session, an LRU of restored sessions).

Validated with the versions in :data:`SUPPORTED` (the Google ADK preset's ``validated_on``).
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
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
    guard_options,
    missing_framework,
    open_store,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker, Plan
from tailguard.adapters._sessions import SessionTable, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.errors import SnapshotError
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.google_adk import PRESET
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.runtime.snapshot import header_of
from tailguard.spill import SpillStore

try:
    from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.events._rewind_events import _apply_rewinds
    from google.adk.events.event import Event
    from google.adk.flows.llm_flows.context._compaction import _process_compaction_events
    from google.adk.plugins.base_plugin import BasePlugin
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("google_adk", "Google ADK", "google-adk", PRESET.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardedCompaction", "events_from_spill"]

#: The versions this adapter is validated with: the Google ADK preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

#: The session-state key the guard's state is kept under (written by each compaction event).
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.google_adk"
STATE_VERSION = 1
FRAMEWORK = "google_adk"
SUMMARY_PREFIX = "compaction:"

_current: contextvars.ContextVar[Any] = contextvars.ContextVar("tailguard_google_adk_invocation", default=None)


def _is_compaction(e: Event) -> bool:
    return bool(e.actions and e.actions.compaction)


def _to_json(e: Event) -> Any:
    return json.loads(e.model_dump_json(exclude_none=True))


def _part_shown(part: Any, haystack: str) -> bool:
    """Whether one content part reached the summarizer's text whole."""
    if part.text:
        return part.text in haystack
    if part.function_call:
        call = part.function_call
        return f"{call.name}({call.args})" in haystack
    if part.function_response:
        resp = part.function_response
        return f"{resp.name}: {resp.response}" in haystack
    # inline data, files, code execution, a bare thought signature: nothing the summarizer reads
    return not any(getattr(part, f, None) for f in ("inline_data", "file_data", "executable_code",
                                                   "code_execution_result", "video_metadata"))


def _shown_whole(e: Event, haystack: str) -> bool:
    parts = (e.content.parts if e.content else None) or []
    return all(_part_shown(p, haystack) for p in parts)


@dataclass(slots=True, eq=False)
class _Session:
    """One ADK session's guard as this process holds it; ``adopted``: the ids of the summaries
    adopted as one unverified block (under the key :data:`ADOPTED`); ``persisted``: the integrity
    digest of the state the session last stored (None: none yet)."""

    sid: str
    guard: CompactionGuard
    adopted: list[str]
    persisted: str | None = None
    failure: BaseException | None = None

    def close(self) -> None:
        self.guard.close()


ADOPTED = "adopted"


@dataclass(slots=True)
class _Observed:
    """The session's context before the compaction: raw events in scope (all, in order), the
    context's keys, and the key of the latest summary (the seed's)."""

    scoped: list[Event]
    keys: list[str]
    latest: str | None


class GuardedCompaction(BasePlugin, BaseEventsSummarizer):
    """ADK's compaction summarizer and a plugin: decides every compaction before its event is
    written.

    ``inner``: the summarizer that writes the summary (default: ``LlmEventSummarizer`` on the
    agent's model); ``render``: what ``inner`` shows its model for a list of events (default: its
    ``_format_events_for_prompt``, which ``LlmEventSummarizer`` has). The guard keywords build one
    :class:`~tailguard.adapters._guard.GuardOptions` (or give ``options=``); the unit is
    ``messages`` (one event, one offset). ``log=`` a directory or a function from session id to
    path gives each session its own event log.
    """

    def __init__(
        self,
        inner: BaseEventsSummarizer | None = None,
        *,
        render: Callable[[list[Event]], str] | None = None,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
        name: str = "tailguard",
        cache_size: int = 256,
    ) -> None:
        BasePlugin.__init__(self, name=name)
        if inner is not None and not isinstance(inner, BaseEventsSummarizer):
            raise TypeError(f"inner: expected a BaseEventsSummarizer, got {type(inner).__name__}")
        if render is None and inner is not None and not hasattr(inner, "_format_events_for_prompt"):
            raise TypeError("render=: the guard must know what the summarizer shows its model; "
                            f"{type(inner).__name__} has no _format_events_for_prompt, so give render=")
        self.inner = inner
        self.render = render
        self.options = guard_options(options, "GuardedCompaction", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile, on_unknown_history=on_unknown_history)
        if self.options.floor_unit != "messages":
            raise ValueError(f"floor_unit: google_adk offsets can be 'messages', got {self.options.floor_unit!r}")
        if type(cache_size) is not int or cache_size < 1:
            raise ValueError(f"cache_size: expected an integer >= 1, got {cache_size!r}")
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self._sessions: SessionTable[_Session] = SessionTable(cache_size)
        self._failures: dict[str, BaseException] = {}
        self._pending: dict[str, dict[str, Any]] = {}  # state to store with the session's next event

    # -- public helpers --------------------------------------------------------------------

    def session_guard(self, session_id: str) -> CompactionGuard | None:
        """The guard this process holds for ``session_id``, if cached."""
        sess = self._sessions.get(session_id)
        return None if sess is None else sess.guard

    async def close(self) -> None:
        """Close every log this guard opened (ADK awaits it when the runner closes)."""
        for sess in self._sessions.drain():
            sess.close()

    # -- the plugin: which session, and a refusal made loud ---------------------------------

    def _raise_pending(self, sid: str) -> None:
        failure = self._failures.pop(sid, None)
        if failure is not None:
            raise failure

    async def before_run_callback(self, *, invocation_context: Any) -> Any:
        _current.set(invocation_context)
        self._raise_pending(invocation_context.session.id)
        return None

    async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> Any:
        self._raise_pending(callback_context.session.id)
        return None

    async def on_event_callback(self, *, invocation_context: Any, event: Event) -> Any:
        """A compaction the guard refused (or that wrote nothing) still recorded the session's new
        events in its ledger and log: the state goes into the session with its next event."""
        sid = invocation_context.session.id
        value = self._pending.get(sid)
        if value is not None and event.partial is not True:
            del self._pending[sid]
            event.actions.state_delta[STATE_KEY] = value
            sess = self._sessions.get(sid)
            if sess is not None:
                sess.persisted = value["integrity"]
        return None

    # -- the summarizer ----------------------------------------------------------------------

    async def maybe_summarize_events(self, *, events: list[Event]) -> Event | None:
        ctx = _current.get()
        if ctx is None:
            raise AdapterError("GuardedCompaction is the summarizer but not a plugin of this App: give it in "
                               "App(plugins=[guard]) too, so it knows the session it compacts")
        session = ctx.session
        if not events or all(e.id != events[-1].id for e in session.events):
            raise AdapterError(f"session {session.id!r}: the events to compact are not this session's")
        sid = session.id
        async with self._sessions.alocked(sid):
            try:
                out = await self._compaction(ctx, events)
            except (UnrecoverableCompactionError, AdapterError, SnapshotError) as exc:
                self._failures[sid] = exc  # ADK swallows it; the next callback raises it
                self._hold(sid)
                raise
            except BaseException:  # the summarizer failed: ADK logs it and goes on uncompacted
                self._hold(sid)
                raise
            if out is None:
                self._hold(sid)
            return out

    def _hold(self, sid: str) -> None:
        """Keep the state of a session whose compaction wrote no event, for its next event."""
        sess = self._sessions.get(sid)
        if sess is None:
            return
        try:
            self._pending[sid] = self._state_value(sess)
        except Exception:  # a ledger whose log failed decides nothing more; nothing to keep
            self._pending.pop(sid, None)

    async def _compaction(self, ctx: Any, events: list[Event]) -> Event | None:
        session = ctx.session
        value = session.state.get(STATE_KEY)
        scoped = self._scoped(session, events)
        context = [e for e in _process_compaction_events(scoped) if not _is_compaction(e)]
        sess = self._load(session.id, value, context)
        observed = self._observe(session, events, sess)
        inner = self.inner or LlmEventSummarizer(llm=ctx.agent.canonical_model)
        haystack = (self.render or inner._format_events_for_prompt)(events)  # type: ignore[attr-defined]
        new = await inner.maybe_summarize_events(events=events)
        if new is None:
            return None
        self._confirm(observed, events, new)  # before anything is decided: a bad event records nothing
        plan, held = self._plan(observed, events, new, haystack, sess)
        res = self._resolve(plan, sess, held)
        if res.action == "defer":
            return None
        return self._apply(plan, new, sess)

    # -- sessions ----------------------------------------------------------------------------

    def _load(self, sid: str, value: Any, context: list[Event]) -> _Session:
        """The session's guard: cached, restored from the session's state, or new. ``context``:
        the raw events of ADK's assembled context (for :meth:`_recover`)."""
        cached = self._sessions.get(sid)
        if value is not None:
            check_state_value(value, f"session {sid!r} state[{STATE_KEY!r}]", fmt=STATE_FORMAT,
                              version=STATE_VERSION, framework="Google ADK")
            if value["session"] != sid:
                raise AdapterError(f"session {sid!r}: its state holds the guard state of session {value['session']!r}")
            adopted = value.get("adopted")
            if not (isinstance(adopted, list) and all(isinstance(a, str) for a in adopted)):
                raise AdapterError(f"session {sid!r}: bad 'adopted' in the guard state")
        if cached is not None and cached.persisted == (None if value is None else value["integrity"]):
            return cached
        owned = None
        try:
            if value is None:
                ledger, owned = self._logs.start(self.options, sid)
                tracker = OffsetTracker(ledger, remember=False)
            else:
                ledger = self._logs.resume(value["ledger"], sid)
                tracker = OffsetTracker.restore(ledger, value.get("tracker"))
        except (SnapshotError, AdapterError) as exc:
            recovered = self._recover(sid, value, context)
            if recovered is None:
                raise AdapterError(f"session {sid!r}: cannot continue from the guard state the session holds: "
                                   f"{exc}. The log has moved past that state (a compaction event that was "
                                   "never stored, an older copy of the session, or another process continued "
                                   "it)") from exc
            ledger, tracker = recovered
        guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                ledger=ledger, tracker=tracker, store=self._store, owned=owned)
        sess = _Session(sid, guard, [] if value is None else list(value["adopted"]),
                        None if value is None else value["integrity"])
        if cached is not None:
            cached.close()
        self._sessions.remember(sid, sess)
        return sess

    def _recover(self, sid: str, value: Any, context: list[Event]) -> tuple[Ledger, OffsetTracker] | None:
        """A log past the session's state by ``append`` and ``refusal`` lines only: compactions the
        guard refused (no event written) after recording the session's newer events, and the
        process ended before a later event carried the state. ADK never deletes an event, so
        those appends are the context's raw events the state does not place, in order: the
        ledger is rebuilt from the log and they get its offsets. Anything else: None."""
        path = self._logs.path(sid)
        if path is None or not path.is_file():
            return None
        lines = path.read_text(encoding="utf-8").splitlines()
        known = 1 if value is None else header_of(value["ledger"]).get("log", {}).get("lines")
        if type(known) is not int or not 1 <= known < len(lines):
            return None
        try:
            extra = [json.loads(x).get("event") for x in lines[known:]]
            if json.loads(lines[0]).get("session_id") != sid or any(k not in ("append", "refusal") for k in extra):
                return None
            start = 0 if value is None else Ledger.restore(value["ledger"]).history_end
            ledger = Ledger.from_log(path, profile=self.options.profile)
        except (ValueError, SnapshotError):
            return None
        tracker_value = {"units": [], "summaries": []} if value is None else value["tracker"]
        placed = {row[0] for row in tracker_value.get("units", []) if isinstance(row, list) and row}
        fresh = [e.id for e in context if e.id not in placed][: ledger.history_end - start]
        if len(fresh) != ledger.history_end - start:
            ledger.close()
            return None
        units = [*tracker_value["units"], *([k, start + j, start + j + 1] for j, k in enumerate(fresh))]
        return ledger, OffsetTracker.restore(ledger, {"units": units, "summaries": tracker_value["summaries"]})

    def _state_value(self, sess: _Session) -> dict[str, Any]:
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": sess.sid,
            "ledger": sess.guard.ledger.snapshot(), "tracker": sess.guard.tracker.export(),
            "adopted": list(sess.adopted),
        }
        value["integrity"] = integrity(value)
        return value

    # -- the steps -------------------------------------------------------------------------

    @staticmethod
    def _scoped(session: Any, events: list[Event]) -> list[Event]:
        scope = events[-1].isolation_scope
        return [e for e in _apply_rewinds(session.events) if e.isolation_scope == scope]

    def _keys(self, context: Sequence[Event], compactions: dict[int, Event], sess: _Session) -> list[str]:
        """The keys of ADK's assembled context: raw events by id, summaries by their event's id
        (an adopted one by the adopted block's key, once)."""
        out: list[str] = []
        for e in context:
            if _is_compaction(e):
                source = compactions[id(e.actions)]
                key = ADOPTED if source.id in sess.adopted else SUMMARY_PREFIX + source.id
                if key not in out:
                    out.append(key)
            else:
                out.append(e.id)
        return out

    def _observe(self, session: Any, events: list[Event], sess: _Session) -> _Observed:
        """The context's keys in the tracker (new events get the next offsets; a summary the guard
        did not make is adopted, first only, or refused)."""
        scoped = self._scoped(session, events)
        compactions = {id(e.actions): e for e in scoped if _is_compaction(e)}
        context = _process_compaction_events(scoped)
        tracker = sess.guard.tracker
        fresh = not tracker.units and not tracker.summaries and sess.guard.ledger.history_end == 0
        known = set(tracker.summaries)
        foreign = [compactions[id(e.actions)].id for e in context if _is_compaction(e)
                   and compactions[id(e.actions)].id not in sess.adopted
                   and SUMMARY_PREFIX + compactions[id(e.actions)].id not in known]
        if foreign:
            if not fresh:
                raise AdapterError(f"session {sess.sid!r}: the context holds a compaction the guard did not make "
                                   f"(event {foreign[0]}) after the guard started")
            if self.options.on_unknown_history == "refuse":
                raise AdapterError(f"session {sess.sid!r} was compacted before the guard came (event "
                                   f"{foreign[0]}): that history is not verified (on_unknown_history='refuse'; "
                                   "'adopt' records it as unverified)")
            raw = [e for e in scoped if not _is_compaction(e)]
            in_context = {e.id for e in context if not _is_compaction(e)}
            first = next((i for i, e in enumerate(raw) if e.id in in_context), len(raw))
            if any(e.id not in in_context for e in raw[first:]):
                raise AdapterError(f"session {sess.sid!r}: the compacted history is not a prefix of the session; "
                                   "it cannot be adopted")
            sess.adopted = list(foreign)
            tracker.adopt(ADOPTED, first, reason=f"{len(foreign)} ADK compaction event(s) made before the guard")
        keys = self._keys(context, compactions, sess)
        summaries = set(tracker.summaries)
        tracker.observe([Entry(k, k in summaries, 0 if k in summaries else 1) for k in keys])
        latest = None
        for e in reversed(context):
            if _is_compaction(e):
                source = compactions[id(e.actions)]
                latest = ADOPTED if source.id in sess.adopted else SUMMARY_PREFIX + source.id
                break
        return _Observed(scoped, keys, latest)

    def _plan(self, observed: _Observed, events: list[Event], new: Event, haystack: str,
              sess: _Session) -> tuple[Plan, dict[str, Event]]:
        """What leaves the context when ``new`` is added, what the summarizer saw whole, what stays."""
        after = _process_compaction_events([*observed.scoped, new])
        compactions = {id(e.actions): e for e in [*observed.scoped, new] if _is_compaction(e)}
        after_keys = set(self._keys(after, compactions, sess))
        deleted = [k for k in observed.keys if k not in after_keys]
        kept = [k for k in observed.keys if k in after_keys]
        by_id = {e.id: e for e in observed.scoped}
        shown: list[str] = []
        session_ids = set(by_id)
        for e in events:
            if e.id in session_ids:
                if _shown_whole(e, haystack):
                    shown.append(e.id)
            elif observed.latest is not None and _shown_whole(e, haystack):
                shown.append(observed.latest)  # the rolling summary's seed: the latest summary
        plan = sess.guard.tracker.plan(deleted=deleted, shown=shown, kept=kept)
        plan = self._reread(plan, observed, set(shown), sess)
        held = {k: by_id[k] for k in deleted if k in by_id}
        return plan, held

    @staticmethod
    def _reread(plan: Plan, observed: _Observed, shown: set[str], sess: _Session) -> Plan:
        """A sliding window re-reads raw events already out of the context (its overlap, or a range
        containing an earlier summary's): shown whole right before the run it summarizes, they are
        covered by the new summary too. Their offsets are their places among the raw events, which
        the tracker's offsets must match (else nothing is extended: stricter, never looser)."""
        raw = [e for e in observed.scoped if not _is_compaction(e)]
        units = sess.guard.tracker.units
        base = 0
        if units:
            first_key, (lo, _) = next(iter(units.items()))
            at = next((i for i, e in enumerate(raw) if e.id == first_key), None)
            if at is None:
                return plan
            base = lo - at
        if any(units.get(e.id, (i + base, 0))[0] != i + base for i, e in enumerate(raw)):
            return plan
        offsets = {i + base for i, e in enumerate(raw) if e.id in shown}
        lo, tail = plan.summary_input
        while lo - 1 >= 0 and lo - 1 in offsets:
            lo -= 1
        if lo == plan.summary_input[0]:
            return plan
        return replace(plan, summary_input=(lo, tail), summary_covers=(lo, tail))

    def _resolve(self, plan: Plan, sess: _Session, held: dict[str, Event]) -> Resolution:
        tracker = sess.guard.tracker

        def payload(run: Pair) -> bytes:
            return encode_run(FRAMEWORK, sess.guard.unit, run, tracker, held, _to_json)

        return sess.guard.resolve(plan, payload)

    @staticmethod
    def _confirm(observed: _Observed, events: list[Event], new: Event) -> None:
        """The summarizer's event is a compaction over the events it was given. (ADK's
        summarizer has run before the decision, so this comes right after it; nothing has been
        written yet.)"""
        compaction = new.actions.compaction if new.actions else None
        if compaction is None or compaction.compacted_content is None:
            raise AdapterError("the summarizer returned an event without a compaction; nothing was written")
        lo, hi = compaction.start_timestamp, compaction.end_timestamp
        if lo is None or hi is None or lo > events[0].timestamp or hi < events[-1].timestamp \
                or any(lo <= e.timestamp <= hi for e in observed.scoped
                       if not _is_compaction(e) and e.timestamp > events[-1].timestamp):
            raise AdapterError(f"the compaction's range [{lo}, {hi}] is not the range of the events it was given; "
                               "nothing was written")

    def _apply(self, plan: Plan, new: Event, sess: _Session) -> Event:
        """Commit ``plan`` and put the session's state in the event's ``state_delta``."""
        guard = sess.guard
        sid = guard.ledger.next_summary_id
        guard.tracker.commit(plan, key=SUMMARY_PREFIX + new.id, summary=sid)
        still = {k for k in guard.tracker.summaries if k == ADOPTED}
        if not still:
            sess.adopted = []
        value = self._state_value(sess)
        sess.persisted = value["integrity"]
        self._pending.pop(sess.sid, None)
        new.actions.state_delta[STATE_KEY] = value
        new.custom_metadata = {**(new.custom_metadata or {}), STATE_KEY: {
            "summary": sid, "spills": [{"range": [lo, hi], "handle": h} for (lo, hi), h in guard.spills]}}
        guard.spills.clear()
        return new


def events_from_spill(store: SpillStore, handle: str) -> list[Event]:
    """The ADK events of a spill, as they were when they left the context."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return [Event.model_validate(x["item"]) for x in doc["items"]]
