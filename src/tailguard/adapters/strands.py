"""The guard around a Strands Agents conversation manager (strands-agents 1.x).

``GuardedConversationManager(inner, ...)`` is a ``ConversationManager`` that wraps the real one
(default ``SlidingWindowConversationManager()``, what ``Agent()`` gets) and gives it to the agent:
``Agent(conversation_manager=GuardedConversationManager(inner, recovery_floor_span=...))``.
Every entry point of ``inner`` goes through the guard: ``apply_management`` (after each
invocation), ``reduce_context`` (on a context-window overflow, and from ``inner``'s own hooks:
``per_turn`` trims and ``proactive_compression``, which the guard registers wrapped). For each,
the guard

- *observes* ``agent.messages`` (one offset per message, unit ``messages``; messages are keyed by
  their durable ``tracking_id``, summaries the guard committed by theirs);
- runs ``inner`` **on a copy** of the messages (a view of the agent whose other attributes are the
  agent's own; the summarizer's model is wrapped to record what it is shown), so nothing has left
  ``agent.messages`` yet, and *plans* the change: the messages that leave, those the summarizer
  was shown whole, those kept, and those kept but cut (tool results cut to 200 + 200 characters,
  text blocks to head and tail previews);
- *resolves* it with the ledger: ``halt`` raises ``UnrecoverableCompactionError`` naming the
  evicted offsets and leaves ``agent.messages`` and ``inner``'s state as they were; ``spill``
  writes every message that leaves, and the original of every message that is cut, to the store
  (their JSON, byte-exact, re-read before anything changes) and proceeds; ``defer`` leaves the
  messages as they were (on an overflow it re-raises the overflow, since the model call cannot
  proceed);
- *applies* it: ``agent.messages`` becomes ``inner``'s result (kept messages are the same
  objects), and a summary is committed to the ledger; a trim without a summary is recorded as
  truncations.

The guard's state travels with the conversation manager's own (``get_state`` /
``restore_from_session``), which every Strands session manager persists (``FileSessionManager``,
``S3SessionManager``, ...): a restarted agent with the same session continues the ledger, the
offsets and the log. A session that ran before the guard (messages already removed, a summary it
did not make) is adopted as unverified (``on_unknown_history="adopt"``) or refused.

Validated with the versions in :data:`SUPPORTED` (the Strands presets' ``validated_on``).
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    SessionLogs,
    SpillFailed,
    StoreArg,
    Unset,
    guard_options,
    missing_framework,
    open_store,
)
from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker
from tailguard.adapters._sessions import check_state_value, integrity
from tailguard.adapters._spill_tool import encode_run, encode_spill, read_spill
from tailguard.base.errors import SnapshotError
from tailguard.base.vocab import NO_HOLE, Pair
from tailguard.pipeline.presets.strands import SLIDING
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.runtime.snapshot import header_of
from tailguard.spill import SpillStore

try:
    from strands.agent.conversation_manager import ConversationManager, SlidingWindowConversationManager
    from strands.models.model import Model
    from strands.types.session import decode_bytes_values, encode_bytes_values
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("strands", "Strands Agents", "strands", SLIDING.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardedConversationManager", "messages_from_spill"]

#: The versions this adapter is validated with: the Strands presets' ``validated_on``.
SUPPORTED: tuple[str, ...] = SLIDING.validated_on

#: The key of the guard's state inside the conversation manager's state.
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.strands"
STATE_VERSION = 1
FRAMEWORK = "strands"
ADOPTED = "adopted"
SUMMARY_REQUEST = "Please summarize this conversation."


def _key(message: dict[str, Any]) -> str:
    """A message's durable key: its ``tracking_id`` (assigned, as Strands does, when missing)."""
    tid = message.get("tracking_id")
    if not isinstance(tid, str) or not tid:
        tid = message["tracking_id"] = str(uuid.uuid4())
    return tid


def _body(message: dict[str, Any]) -> Any:
    """What a model is shown of a message: its role and content (Strands strips the rest)."""
    return {"role": message.get("role"), "content": message.get("content")}


def _to_json(message: dict[str, Any]) -> Any:
    """A message as JSON, bytes as Strands' session encoding (base64), byte-exact on the way back."""
    return encode_bytes_values(copy.deepcopy(dict(message)))


class _View:
    """The agent as ``inner`` sees it: a copy of its messages, every other attribute the agent's
    own, its summarizer models wrapped to record what they are shown."""

    def __init__(self, agent: Any, messages: list[Any], record: Callable[[Any], Any]) -> None:
        object.__setattr__(self, "_agent", agent)
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "_record", record)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._agent, name)
        if name in ("model", "aux_model"):
            return self._record(value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "messages":
            object.__setattr__(self, "messages", value)
        else:
            setattr(self._agent, name, value)


class _Recording(Model):
    """A provider that forwards every call to ``inner`` and records the messages of each stream."""

    def __init__(self, inner: Any, seen: list[list[Any]]) -> None:
        self._inner = inner
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def stateful(self) -> bool:
        return bool(self._inner.stateful)

    def update_config(self, **model_config: Any) -> None:
        self._inner.update_config(**model_config)

    def get_config(self) -> Any:
        return self._inner.get_config()

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None,
                          **kwargs: Any) -> Any:
        return self._inner.structured_output(output_model, prompt, system_prompt, **kwargs)

    def stream(self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kwargs: Any) -> Any:
        self._seen.append([_body(m) for m in messages])
        return self._inner.stream(messages, tool_specs, system_prompt, **kwargs)


class _Event:
    """A hook event whose ``agent`` is the view (every other attribute the event's own)."""

    def __init__(self, event: Any, agent: Any) -> None:
        self._event = event
        self.agent = agent

    def __getattr__(self, name: str) -> Any:
        return getattr(self._event, name)


class _Registry:
    """The hook registry as ``inner`` registers into it: each callback wrapped by the guard."""

    def __init__(self, registry: Any, wrap: Callable[[Callable[[Any], Any]], Callable[[Any], Any]]) -> None:
        self._registry = registry
        self._wrap = wrap

    def add_callback(self, event_type: Any, callback: Callable[[Any], Any], **kwargs: Any) -> Any:
        return self._registry.add_callback(event_type, self._wrap(callback), **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)


@dataclass(slots=True)
class _Change:
    """What ``inner`` did to a copy of the messages."""

    before: list[dict[str, Any]]
    after: list[dict[str, Any]]
    deleted: list[str]
    kept: list[str]
    cut: list[str]  # kept, but their content changed
    summary: str | None  # the new summary's key
    shown: list[str]


class GuardedConversationManager(ConversationManager):
    """A Strands conversation manager that decides every removal of ``inner`` before it happens.

    ``inner``: the real manager (default ``SlidingWindowConversationManager()``). The guard
    keywords build one :class:`~tailguard.adapters._guard.GuardOptions` (or give ``options=``);
    the unit is ``messages``. ``session_id`` names the session in the log (default: the agent's
    session manager's ``session_id``, else its ``agent_id``).
    """

    def __init__(
        self,
        inner: ConversationManager | None = None,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
        session_id: str | None = None,
    ) -> None:
        if inner is None:
            inner = SlidingWindowConversationManager()
        if not isinstance(inner, ConversationManager) or isinstance(inner, GuardedConversationManager):
            raise TypeError(f"inner: expected a Strands ConversationManager, got {type(inner).__name__}")
        if getattr(inner, "pin_first", None):
            raise ValueError("inner: pin_first keeps pinned messages in front of the ones it deletes, which offsets "
                             "cannot describe as a cut; guard a manager with pin_first=None")
        super().__init__()
        self.inner = inner
        self.options = guard_options(options, "GuardedConversationManager", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile, on_unknown_history=on_unknown_history)
        if self.options.floor_unit != "messages":
            raise ValueError(f"floor_unit: strands offsets can be 'messages', got {self.options.floor_unit!r}")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id: expected a string, got {type(session_id).__name__}")
        self.session_id = session_id
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self.guard: CompactionGuard | None = None
        self._restored: dict[str, Any] | None = None  # the guard state a session handed back, until used

    # -- the state Strands persists --------------------------------------------------------

    @property  # type: ignore[override]
    def removed_message_count(self) -> int:
        """``inner``'s count (Strands' session managers read it to skip removed messages)."""
        return int(self.inner.removed_message_count)

    @removed_message_count.setter
    def removed_message_count(self, value: int) -> None:
        if hasattr(self, "inner"):
            self.inner.removed_message_count = value

    def get_state(self) -> dict[str, Any]:
        state = {"__name__": type(self).__name__, "removed_message_count": self.removed_message_count,
                 "inner": self.inner.get_state()}
        if self.guard is not None:
            state[STATE_KEY] = self._state_value()
        elif self._restored is not None:
            state[STATE_KEY] = self._restored
        return state

    def restore_from_session(self, state: dict[str, Any]) -> list[Any] | None:
        if state.get("__name__") == type(self.inner).__name__:
            # a session that ran before the guard: inner's own state; adopted at the first call
            self._close()
            self._restored = None
            adopted: list[Any] | None = self.inner.restore_from_session(state)
            return adopted
        if state.get("__name__") != type(self).__name__:
            raise ValueError("Invalid conversation manager state.")
        inner = state.get("inner")
        if not isinstance(inner, dict):
            raise AdapterError("conversation manager state: no 'inner' state of the guarded manager")
        prepend: list[Any] | None = self.inner.restore_from_session(inner)
        value = state.get(STATE_KEY)
        if value is not None:
            check_state_value(value, f"conversation manager state[{STATE_KEY!r}]", fmt=STATE_FORMAT,
                              version=STATE_VERSION, framework="Strands")
        self._close()
        self._restored = value
        return prepend

    def _state_value(self) -> dict[str, Any]:
        assert self.guard is not None
        value: dict[str, Any] = {"format": STATE_FORMAT, "version": STATE_VERSION, "session": self.guard.session,
                                 "ledger": self.guard.ledger.snapshot(), "tracker": self.guard.tracker.export()}
        value["integrity"] = integrity(value)
        return value

    def _close(self) -> None:
        if self.guard is not None:
            self.guard.close()
            self.guard = None

    def close(self) -> None:
        """Close the session's log file."""
        self._close()

    def _session(self, agent: Any) -> CompactionGuard:
        if self.guard is not None:
            return self.guard
        value = self._restored
        if value is not None:
            sid = value["session"]
            owned = None
            try:
                ledger = self._logs.resume(value["ledger"], sid)
                tracker = OffsetTracker.restore(ledger, value.get("tracker"))
            except (SnapshotError, AdapterError) as exc:
                recovered = self._recover(sid, value, agent)
                if recovered is None:
                    raise AdapterError(f"session {sid!r}: cannot continue from the guard state the session holds: "
                                       f"{exc}. The log has moved past that state (a process that ended before "
                                       "Strands stored the agent, an older copy of the session, or another "
                                       "process continued it)") from exc
                ledger, tracker = recovered
        else:
            manager = getattr(agent, "_session_manager", None)
            sid = self.session_id or getattr(manager, "session_id", None) or str(getattr(agent, "agent_id", "default"))
            ledger, owned = self._logs.start(self.options, sid)
            tracker = OffsetTracker(ledger, remember=False)
        self.guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                     ledger=ledger, tracker=tracker, store=self._store, owned=owned)
        self._restored = None
        return self.guard

    def _recover(self, sid: str, value: dict[str, Any], agent: Any) -> tuple[Ledger, OffsetTracker] | None:
        """A log past the stored state by ``append`` (and ``refusal``) lines only: the guard
        placed newer messages, and the process ended before Strands stored the agent's state. The
        session manager stored those messages as they were appended, so they are the context's
        messages the state does not place, in order: the ledger is rebuilt from the log and they
        get its offsets. Anything else: None."""
        path = self._logs.path(sid)
        if path is None or not path.is_file():
            return None
        lines = path.read_text(encoding="utf-8").splitlines()
        known = header_of(value["ledger"]).get("log", {}).get("lines")
        if type(known) is not int or not 1 <= known < len(lines):
            return None
        try:
            if any(json.loads(x).get("event") not in ("append", "refusal") for x in lines[known:]):
                return None
            start = Ledger.restore(value["ledger"]).history_end
            ledger = Ledger.from_log(path, profile=self.options.profile)
        except (ValueError, SnapshotError):
            return None
        state = value.get("tracker") or {}
        rows = state.get("units", []) if isinstance(state, dict) else []
        placed = {row[0] for row in rows if isinstance(row, list) and row}
        placed |= {row[0] for row in state.get("summaries", []) if isinstance(row, list) and row}
        fresh = [k for k in (_key(m) for m in agent.messages) if k not in placed][: ledger.history_end - start]
        if len(fresh) != ledger.history_end - start:
            ledger.close()
            return None
        units = [*rows, *([k, start + j, start + j + 1] for j, k in enumerate(fresh))]
        return ledger, OffsetTracker.restore(ledger, {"units": units, "summaries": state.get("summaries", [])})

    # -- hooks: inner's own, through the guard -----------------------------------------------

    def register_hooks(self, registry: Any, **kwargs: Any) -> None:
        self.inner.register_hooks(_Registry(registry, self._wrap_hook), **kwargs)  # type: ignore[arg-type]

    def _wrap_hook(self, callback: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def guarded(event: Any) -> Any:
            agent = getattr(event, "agent", None)
            if agent is None or not hasattr(agent, "messages"):
                return callback(event)
            return self._guarded(agent, lambda view: callback(_Event(event, view)), overflow=None)

        return guarded

    # -- the entry points ------------------------------------------------------------------

    def apply_management(self, agent: Any, **kwargs: Any) -> None:
        self._guarded(agent, lambda view: self.inner.apply_management(view, **kwargs), overflow=None)

    def reduce_context(self, agent: Any, e: Exception | None = None, **kwargs: Any) -> None:
        self._guarded(agent, lambda view: self.inner.reduce_context(view, e, **kwargs), overflow=e)

    # -- the steps ---------------------------------------------------------------------------

    def _guarded(self, agent: Any, run: Callable[[Any], Any], *, overflow: Exception | None) -> Any:
        guard = self._session(agent)
        self._observe(guard, agent)
        saved = {k: copy.copy(v) for k, v in vars(self.inner).items()}
        seen: list[list[Any]] = []
        models: dict[int, _Recording] = {}

        def record(model: Any) -> Any:
            if isinstance(model, _Recording):
                return model
            return models.setdefault(id(model), _Recording(model, seen))

        before = list(agent.messages)
        view = _View(agent, copy.deepcopy(before), record)
        helper = getattr(self.inner, "summarization_agent", None)
        original = helper.model if helper is not None else None
        if helper is not None:
            helper.model = record(original)
        try:
            result = run(view)
        finally:
            if helper is not None:
                helper.model = original
        change = self._plan(guard, before, view.messages, seen)
        if change is None:
            return result
        self._confirm(change)
        try:
            proceed = self._resolve(guard, change)
        except BaseException:
            self._undo(saved)
            raise
        if not proceed:
            self._undo(saved)
            if overflow is not None:
                raise overflow  # deferred: the model call cannot proceed on this context
            return result
        self._apply(guard, agent, change)
        return result

    def _undo(self, saved: dict[str, Any]) -> None:
        """``inner``'s state as it was before the refused change."""
        vars(self.inner).clear()
        vars(self.inner).update(saved)

    def _observe(self, guard: CompactionGuard, agent: Any) -> None:
        tracker = guard.tracker
        messages = agent.messages
        keys = [_key(m) for m in messages]
        summaries = set(tracker.summaries)
        fresh = not tracker.units and not summaries and guard.ledger.history_end == 0
        if fresh:
            self._adopt(guard, messages, keys)
            summaries = set(tracker.summaries)
        tracker.observe(self._entries(guard, keys))

    @staticmethod
    def _entries(guard: CompactionGuard, keys: list[str]) -> list[Entry]:
        """The context as the tracker sees it: an adoption record with nothing in the context (a
        trim before the guard) stays first, as the unverified coverage of what it removed."""
        summaries = set(guard.tracker.summaries)
        head = [Entry(ADOPTED, True, 0)] if ADOPTED in summaries and ADOPTED not in keys else []
        return [*head, *(Entry(k, k in summaries, 0 if k in summaries else 1) for k in keys)]

    def _adopt(self, guard: CompactionGuard, messages: list[Any], keys: list[str]) -> None:
        """History the guard did not record: messages ``inner`` removed before it came (its
        ``removed_message_count``), and the summary it holds, if that is in the context."""
        removed = int(self.inner.removed_message_count)
        summary = getattr(self.inner, "_summary_message", None)
        at = next((i for i, m in enumerate(messages) if summary is not None and m == summary), None)
        if not removed and at is None:
            return
        if self.options.on_unknown_history == "refuse":
            raise AdapterError(f"session {guard.session!r}: {removed} message(s) were removed before the guard came "
                               "(on_unknown_history='refuse'; 'adopt' records them as unverified)")
        key = keys[at] if at is not None else ADOPTED
        guard.tracker.adopt(key, removed, reason=f"{removed} message(s) removed by {type(self.inner).__name__} "
                                                 "before the guard")

    def _plan(self, guard: CompactionGuard, before: list[Any], after: list[Any],
              seen: list[list[Any]]) -> _Change | None:
        keys_before = [_key(m) for m in before]
        if [m.get("tracking_id") for m in after] == keys_before and after == before:
            return None
        known = set(keys_before)
        new = [m for m in after if m.get("tracking_id") not in known]
        if len(new) > 1:
            raise AdapterError(f"{type(self.inner).__name__} added {len(new)} messages; the guard knows one summary")
        summary = _key(new[0]) if new else None
        after_keys = {m.get("tracking_id") for m in after}
        deleted = [k for k in keys_before if k not in after_keys]
        kept = [k for k in keys_before if k in after_keys]
        by_key_after = {m.get("tracking_id"): m for m in after}
        cut = [k for k, m in zip(keys_before, before, strict=True) if k in after_keys and by_key_after[k] != m]
        shown_bodies = [json.dumps(b, sort_keys=True, default=repr) for req in seen for b in req]
        shown = [k for k, m in zip(keys_before, before, strict=True)
                 if k in deleted and json.dumps(_body(m), sort_keys=True, default=repr) in shown_bodies]
        return _Change(before, after, deleted, kept, cut, summary, shown)

    def _confirm(self, change: _Change) -> None:
        """``inner`` kept messages in their order, and its summary (if any) before them: a change
        offsets can describe. Checked before anything is decided or written."""
        order = [m.get("tracking_id") for m in change.after]
        if [k for k in order if k in set(change.kept)] != change.kept:
            raise AdapterError(f"{type(self.inner).__name__} reordered the messages it kept; nothing was changed")
        if change.summary is not None and change.kept and order.index(change.summary) > order.index(change.kept[0]):
            raise AdapterError(f"{type(self.inner).__name__} placed its summary after a kept message; nothing was "
                               "changed")

    def _resolve(self, guard: CompactionGuard, change: _Change) -> bool:
        """Decide ``change``; True: proceed (after any spills), False: deferred."""
        tracker = guard.tracker
        held = {_key(m): m for m in change.before}
        plan = tracker.plan(deleted=change.deleted, shown=change.shown, kept=self._kept(guard, change)) \
            if change.deleted else None
        if change.cut:
            if guard.on_refuse != "spill":
                runs = [tracker.interval(k) for k in change.cut]
                if guard.on_refuse == "defer":
                    return False
                raise UnrecoverableCompactionError(
                    f"{type(self.inner).__name__} cuts the content of kept messages at offsets "
                    f"{', '.join(f'[{lo}, {hi})' for lo, hi in runs)} (tool results or text blocks cut to head and "
                    "tail previews): a loss inside a message; nothing was changed (on_refuse='spill' keeps the "
                    "originals)", failed=(NO_HOLE,), holes=runs)
            try:
                guard.spill_runs([tracker.interval(k) for k in change.cut],
                                 lambda run: self._payload(guard, run, held, change.cut))
            except SpillFailed as exc:
                raise UnrecoverableCompactionError(f"{exc}, nothing was changed: {exc.__cause__}") from exc.__cause__
        if plan is None:
            return True

        def payload(run: Pair) -> bytes:
            return encode_run(FRAMEWORK, guard.unit, run, tracker, {k: held[k] for k in change.deleted if k in held},
                              _to_json)

        return guard.resolve(plan, payload).action == "proceed"

    @staticmethod
    def _kept(guard: CompactionGuard, change: _Change) -> list[str]:
        extra = [ADOPTED] if ADOPTED in guard.tracker.summaries and ADOPTED not in change.deleted else []
        return [*extra, *change.kept]

    @staticmethod
    def _payload(guard: CompactionGuard, run: Pair, held: dict[str, Any], keys: list[str]) -> bytes:
        items = [(guard.tracker.interval(k), k, _to_json(held[k])) for k in keys
                 if run[0] <= guard.tracker.interval(k)[0] and guard.tracker.interval(k)[1] <= run[1]]
        return encode_spill(FRAMEWORK, guard.unit, run, items)

    def _apply(self, guard: CompactionGuard, agent: Any, change: _Change) -> None:
        originals = {_key(m): m for m in change.before}
        cut = set(change.cut)
        final = [originals[k] if (k := m.get("tracking_id")) in originals and k not in cut else m
                 for m in change.after]
        if change.summary is not None and change.deleted:
            plan = guard.tracker.plan(deleted=change.deleted, shown=change.shown, kept=self._kept(guard, change))
            guard.tracker.commit(plan, key=change.summary)
            summary_message = next(m for m in final if m.get("tracking_id") == change.summary)
            if getattr(self.inner, "_summary_message", None) is not None:
                self.inner._summary_message = summary_message  # type: ignore[attr-defined]
        agent.messages[:] = final
        guard.tracker.observe(self._entries(guard, [_key(m) for m in final]))
        guard.spills.clear()


def messages_from_spill(store: SpillStore, handle: str) -> list[dict[str, Any]]:
    """The Strands messages of a spill, as they were when they left ``agent.messages``."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return [decode_bytes_values(x["item"]) for x in doc["items"]]

