"""The guard around AutoGen's model contexts (``autogen_core.model_context``).

An AutoGen context stores every message it is given and computes, at every model call, the view
``get_messages()`` returns; the buffered, head-and-tail and token-limited contexts leave messages
out of that view without a summary (docs/presets/autogen.md). The stored list stays in the
context's state, but the model is never shown a message again once the view has passed it: a
silent loss. ``GuardedChatCompletionContext(inner, ...)`` is a ``ChatCompletionContext`` that
wraps the real one (give it as ``AssistantAgent(model_context=...)``) and, at every
``get_messages()``, decides **before the view is handed to the model**:

- it *observes* the stored messages (``inner._messages``, append-only: stored index ``i`` is
  offset ``i``, unit ``messages``) and appends the new ones to its ledger;
- it asks ``inner`` for its view and finds which stored messages the view leaves out (by
  identity, then by value; a ``HeadAndTail`` placeholder is no stored message);
- a message leaving the view for the first time is a truncation: allowed when a spill holds it
  and it is outside the floor (the newest ``recovery_floor_span`` messages); otherwise refused.
  ``halt`` raises :class:`~tailguard.runtime.seed_api.UnrecoverableCompactionError` naming the
  evicted offsets (the model call fails, nothing is recorded); ``spill`` writes the messages
  (``model_dump(mode="json")``, canonical bytes, re-read byte-exact) to the store, records the
  spill and the truncation and returns the view (a floor refusal halts: no spill repairs it);
  ``defer`` logs the refusal and returns the view with the refused messages put back in order.

State (brief 9). The guard's state is one versioned JSON value under the key :data:`STATE_KEY` of
the context's own ``save_state()`` (beside ``messages``), which ``AssistantAgent.save_state``
keeps as ``llm_context``; ``load_state`` restores it (and checks that the stored messages are
the ones the state was written with), so a restarted process continues the session, its log
gets a ``resume`` line. One guarded context is one session (AutoGen gives each agent its own
context); any number run side by side, each with its own ledger and log (``log=`` a directory
or a function from session id to path). A context that already holds messages out of its view
when the guard first meets it (a session that ran unguarded) is adopted: those offsets are
recorded as unverified (``on_unknown_history="adopt"``) or refused (``"refuse"``). ``clear()``
(``AssistantAgent.on_reset``) is a reset: the next message starts a new session.

Validated with the versions in :data:`SUPPORTED` (the AutoGen preset's ``validated_on``).
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
    guard_options,
    missing_framework,
    open_store,
)
from tailguard.adapters._offsets import AdapterError
from tailguard.adapters._sessions import canonical, check_state_value, integrity
from tailguard.adapters._spill_tool import encode_spill, read_spill
from tailguard.base.intervals import normalize
from tailguard.base.vocab import FLOOR_IN_TAIL, NO_HOLE, Pair
from tailguard.pipeline.presets.autogen import PRESET
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import SpillStore

try:
    from autogen_core.model_context import ChatCompletionContext, ChatCompletionContextState
    from autogen_core.models import LLMMessage
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("autogen", "AutoGen (autogen-core)", "autogen", PRESET.validated_on)) from exc

__all__ = ["STATE_KEY", "SUPPORTED", "GuardedChatCompletionContext", "messages_from_spill"]

#: The versions this adapter is validated with: the AutoGen preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

#: The key of the guard's state in the context's ``save_state()`` value.
STATE_KEY = "tailguard"
STATE_FORMAT = "tailguard.autogen"
STATE_VERSION = 1
FRAMEWORK = "autogen"


def _dump(message: LLMMessage) -> Any:
    return message.model_dump(mode="json")


def _digest(messages: Sequence[LLMMessage]) -> str:
    """The digest of stored messages (their JSON, in order): what a state value was written with."""
    h = hashlib.sha256()
    for m in messages:
        h.update(canonical(_dump(m)))
        h.update(b"\n")
    return "sha256:" + h.hexdigest()


class _Runs:
    """Merged half-open runs of offsets (the ones already out of the view, accounted for)."""

    def __init__(self, runs: Sequence[Pair] = ()) -> None:
        self.runs: list[Pair] = list(normalize(runs))

    def add(self, runs: Sequence[Pair]) -> None:
        self.runs = list(normalize([*self.runs, *runs]))

    def __contains__(self, offset: object) -> bool:
        return any(lo <= offset < hi for lo, hi in self.runs)  # type: ignore[operator]


@dataclass(frozen=True, slots=True)
class _Plan:
    """Messages leaving the view for the first time (offsets), those inside the floor, and those
    outside it no spill holds."""

    fresh: list[int]
    floor: list[int]
    lossy: list[int]


class GuardedChatCompletionContext(ChatCompletionContext):
    """A ``ChatCompletionContext`` around ``inner`` that decides every message leaving the model's
    view before the view is returned.

    ``inner``: the real context (``BufferedChatCompletionContext``, ``TokenLimitedChatCompletionContext``,
    ``HeadAndTailChatCompletionContext``, ``UnboundedChatCompletionContext`` or your own);
    ``session_id``: the session's name in its log and state (default: a new UUID, or the one a
    loaded state names). The guard keywords build one :class:`~tailguard.adapters._guard.GuardOptions`
    (or give ``options=``); the unit is ``messages``.
    """

    component_type = "chat_completion_context"

    def __init__(
        self,
        inner: ChatCompletionContext,
        *,
        session_id: str | None = None,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        on_unknown_history: str | Unset = UNSET,
    ) -> None:
        # no super().__init__(): the messages are inner's (see the _messages property)
        if not isinstance(inner, ChatCompletionContext):
            raise TypeError(f"inner: expected an autogen_core ChatCompletionContext, got {type(inner).__name__}")
        if isinstance(inner, GuardedChatCompletionContext):
            raise TypeError("inner: already guarded (one guard per context)")
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            raise ValueError(f"session_id: expected a non-empty string, got {session_id!r}")
        self.inner = inner
        self.options = guard_options(options, "GuardedChatCompletionContext",
                                     recovery_floor_span=recovery_floor_span, floor_unit=floor_unit,
                                     on_refuse=on_refuse, store=store, log=log, profile=profile,
                                     on_unknown_history=on_unknown_history)
        if self.options.floor_unit != "messages":
            raise ValueError(f"floor_unit: autogen offsets can be 'messages', got {self.options.floor_unit!r}")
        self._given_id = session_id
        self._base_id = session_id or uuid.uuid4().hex
        self._resets = 0
        self._logs = SessionLogs(self.options.log)
        self._store = open_store(self.options.store)
        self._guard: CompactionGuard | None = None
        self._settled = _Runs()
        self._restored: dict[str, Any] | None = None  # a loaded state not yet continued
        self._lock = asyncio.Lock()
        self._initial_messages = None

    # -- the messages are inner's ----------------------------------------------------------

    @property
    def _messages(self) -> list[LLMMessage]:  # type: ignore[override]
        stored = self.inner._messages
        if not isinstance(stored, list):
            raise AdapterError(f"{type(self.inner).__name__}._messages is not a list: the guard cannot read the "
                               "stored messages")
        return stored

    @_messages.setter
    def _messages(self, value: list[LLMMessage]) -> None:
        self.inner._messages = value

    @property
    def session_id(self) -> str:
        """The current session's id (``clear()`` starts ``<id>:reset<N>``)."""
        return self._base_id if not self._resets else f"{self._base_id}:reset{self._resets}"

    @property
    def guard(self) -> CompactionGuard | None:
        """The current session's guard (its ledger, spills), once a view was decided."""
        return self._guard

    async def add_message(self, message: LLMMessage) -> None:
        await self.inner.add_message(message)

    async def clear(self) -> None:
        """``inner.clear()``: a reset (``AssistantAgent.on_reset``) ends the session; the next view
        starts a new one (its own log)."""
        async with self._lock:
            await self.inner.clear()
            self._end()
            self._resets += 1

    def close(self) -> None:
        """Close the log this guard opened (a stream you passed stays yours)."""
        self._end()

    def _end(self) -> None:
        if self._guard is not None:
            self._guard.close()
        self._guard, self._settled, self._restored = None, _Runs(), None

    # -- the view ------------------------------------------------------------------------

    async def get_messages(self) -> list[LLMMessage]:
        """``inner``'s view, once every message it leaves out for the first time is decided (the
        named steps: observe, plan, resolve, confirm, apply)."""
        async with self._lock:
            stored = list(self._messages)
            view = list(await self.inner.get_messages())
            guard, fresh = self._observe(stored, view)
            if not fresh:
                return view
            plan = self._plan(fresh, guard)
            back = self._resolve(plan, stored, guard)
            self._confirm(stored)
            self._apply(plan, back, guard)
            return self._with(view, stored, back)

    def _observe(self, stored: list[LLMMessage], view: list[LLMMessage]) -> tuple[CompactionGuard, list[int]]:
        """The session's guard brought up to the stored messages, and the offsets the view leaves
        out for the first time."""
        guard = self._session(stored, view)
        return guard, [i for i in self._left_out(stored, view) if i not in self._settled]

    @staticmethod
    def _in_view(stored: Sequence[LLMMessage], view: Sequence[LLMMessage]) -> set[int]:
        """The stored indices the view holds: by identity, then by value in order."""
        where = {id(m): i for i, m in enumerate(stored)}
        held: set[int] = set()
        unmatched: list[LLMMessage] = []
        for m in view:
            i = where.get(id(m))
            if i is None:
                unmatched.append(m)
            else:
                held.add(i)
        at = 0
        for m in unmatched:
            for j in range(at, len(stored)):
                if j not in held and stored[j] == m:
                    held.add(j)
                    at = j + 1
                    break
        return held

    def _left_out(self, stored: Sequence[LLMMessage], view: Sequence[LLMMessage]) -> list[int]:
        held = self._in_view(stored, view)
        return [i for i in range(len(stored)) if i not in held]

    def _session(self, stored: Sequence[LLMMessage], view: Sequence[LLMMessage]) -> CompactionGuard:
        """The session's guard, started, restored from a loaded state, or adopting unguarded history;
        the ledger brought up to the stored messages."""
        if self._guard is None:
            if self._restored is not None:
                self._resume(self._restored, stored)
            else:
                self._start(stored, view)
        guard = self._guard
        assert guard is not None
        n = guard.ledger.history_end
        if len(stored) < n:
            raise AdapterError(f"session {self.session_id!r}: the context holds {len(stored)} messages but the guard "
                               f"recorded {n}; messages were removed behind the guard (only clear() may)")
        if len(stored) > n:
            guard.ledger.append(len(stored) - n)
        return guard

    def _start(self, stored: Sequence[LLMMessage], view: Sequence[LLMMessage]) -> None:
        sid = self.session_id
        ledger, owned = self._logs.start(self.options, sid)
        guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                ledger=ledger, store=self._store, owned=owned)
        out = self._left_out(stored, view)
        if out:
            if self.options.on_unknown_history == "refuse":
                guard.close()
                self._logs.discard(sid)
                raise AdapterError(f"session {sid!r}: the context already holds {len(out)} message(s) out of the "
                                   "model's view, dropped before the guard came: that history is not verified "
                                   "(on_unknown_history='refuse'; 'adopt' records it as unverified)")
            end = out[-1] + 1
            ledger.adopt(end, reason=f"{len(out)} stored message(s) of [0, {end}) were out of "
                                     f"{type(self.inner).__name__}'s view before the guard")
            self._settled.add([(i, i + 1) for i in out])
        self._guard = guard

    def _resume(self, value: dict[str, Any], stored: Sequence[LLMMessage]) -> None:
        sid = value["session"]
        ledger = self._logs.resume(value["ledger"], sid)
        n = ledger.history_end
        if len(stored) < n or _digest(stored[:n]) != value["messages"]:
            ledger.close()
            raise AdapterError(f"session {sid!r}: the stored messages are not the ones its guard state was saved "
                               f"with (the first {n} differ): another session's state, or altered")
        self._guard = CompactionGuard(self.options, framework=FRAMEWORK, units=("messages",), session=sid,
                                      ledger=ledger, store=self._store)
        self._settled = _Runs([(r[0], r[1]) for r in value["settled"]])
        self._restored = None

    # -- the decision --------------------------------------------------------------------

    def _plan(self, fresh: list[int], guard: CompactionGuard) -> _Plan:
        """Which of ``fresh`` are inside the floor (the newest ``recovery_floor_span`` messages) and
        which no spill holds."""
        ledger = guard.ledger
        span = self.options.recovery_floor_span
        phi = max(0, ledger.history_end - span)
        floor = [i for i in fresh if span > 0 and i >= phi]
        spilled = ledger.core.spilled
        lossy = [i for i in fresh if (i < phi or span == 0) and not spilled.covers(i, i + 1)]
        return _Plan(fresh, floor, lossy)

    def _resolve(self, plan: _Plan, stored: Sequence[LLMMessage], guard: CompactionGuard) -> list[int]:
        """Decide the plan before the view is returned. Returns the offsets ``defer`` puts back
        into the view (empty otherwise); ``halt`` (and ``spill`` facing the floor or a failed
        write) raises, nothing recorded but the refusal."""
        if not plan.floor and not plan.lossy:
            return []
        ledger = guard.ledger
        span = self.options.recovery_floor_span
        name = type(self.inner).__name__
        holes = tuple(normalize((i, i + 1) for i in plan.lossy))
        floor_runs = tuple(normalize((i, i + 1) for i in plan.floor))
        decision = Decision("refuse", (*((FLOOR_IN_TAIL,) if plan.floor else ()), *((NO_HOLE,) if plan.lossy else ())),
                            holes)
        sentences = [f"{name} would drop the messages at [{lo}, {hi}) from the model's view without a summary, "
                     "and no spill holds them" for lo, hi in holes]
        sentences += [f"{name} would drop the messages at [{lo}, {hi}) from the model's view, inside the floor "
                      f"(the last {span} messages)" for lo, hi in floor_runs]
        end = max(plan.fresh) + 1
        ledger.log_refusal(decision, summary_input=(end, end), summary_covers=(end, end), tail_start=end)
        on_refuse = self.options.on_refuse
        if on_refuse == "halt" or (on_refuse == "spill" and plan.floor):
            why = "a spill cannot repair the floor; nothing was dropped" if plan.floor else "nothing was dropped"
            raise UnrecoverableCompactionError.from_decision(decision, [*sentences, why])
        if on_refuse == "defer":
            return sorted(plan.floor + plan.lossy)
        try:
            guard.spill_runs(holes, lambda run: self._payload(run, stored))
        except SpillFailed as exc:
            raise UnrecoverableCompactionError.from_decision(
                decision, [*sentences, f"{exc}, nothing was dropped: {exc.__cause__}"]) from exc.__cause__
        return []

    def _confirm(self, stored: Sequence[LLMMessage]) -> None:
        """``inner`` computed its view without changing what it stores (AutoGen's contexts work on a
        copy); a context that removed or replaced stored messages is refused."""
        now = self._messages
        if len(now) != len(stored) or any(a is not b for a, b in zip(now, stored, strict=True)):
            raise AdapterError(f"{type(self.inner).__name__}.get_messages() changed the stored messages; the guard "
                               "reads the view as a view and cannot place such a change")

    def _apply(self, plan: _Plan, back: list[int], guard: CompactionGuard) -> None:
        """Record the messages that left the view (spilled or not, as decided) as truncated."""
        gone = [i for i in plan.fresh if i not in set(back)]
        runs = list(normalize((i, i + 1) for i in gone))
        for lo, hi in runs:
            guard.ledger.truncate(lo, hi)
        self._settled.add(runs)

    def _payload(self, run: Pair, stored: Sequence[LLMMessage]) -> bytes:
        items = [((i, i + 1), f"m{i}", _dump(stored[i])) for i in range(run[0], run[1])]
        return encode_spill(FRAMEWORK, "messages", run, items)

    @staticmethod
    def _with(view: list[LLMMessage], stored: Sequence[LLMMessage], back: list[int]) -> list[LLMMessage]:
        """``view`` with the stored messages ``back`` put back in offset order."""
        if not back:
            return view
        where = {id(m): i for i, m in enumerate(stored)}
        pending = sorted(back)
        out: list[LLMMessage] = []
        for m in view:
            i = where.get(id(m))
            while i is not None and pending and pending[0] < i:
                out.append(stored[pending.pop(0)])
            out.append(m)
        out.extend(stored[i] for i in pending)
        return out

    # -- AutoGen's persistence -------------------------------------------------------------

    async def save_state(self) -> Mapping[str, Any]:
        """``inner``'s state (``messages``) and the guard's under :data:`STATE_KEY`."""
        async with self._lock:
            state = dict(await self.inner.save_state())
            value = self._state_value()
            if value is not None:
                state[STATE_KEY] = value
            return state

    def _state_value(self) -> dict[str, Any] | None:
        if self._guard is None:
            return self._restored
        ledger = self._guard.ledger
        value: dict[str, Any] = {
            "format": STATE_FORMAT, "version": STATE_VERSION, "session": self.session_id,
            "ledger": ledger.snapshot(), "settled": [[lo, hi] for lo, hi in self._settled.runs],
            "messages": _digest(self._messages[:ledger.history_end]),
        }
        value["integrity"] = integrity(value)
        return value

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Load ``inner``'s messages and continue the session the guard state names (checked when
        the next view is decided); a state without one starts a new session."""
        async with self._lock:
            value = state.get(STATE_KEY) if isinstance(state, Mapping) else None
            if value is not None:
                sid = check_state_value(value, f"load_state: state[{STATE_KEY!r}]", fmt=STATE_FORMAT,
                                        version=STATE_VERSION, framework="AutoGen")
                if self._given_id is not None and sid != self.session_id:
                    raise AdapterError(f"load_state: the state is session {sid!r}'s, this context is "
                                       f"{self.session_id!r}")
                settled = value.get("settled")
                if not (isinstance(settled, list) and all(isinstance(r, list) and len(r) == 2 and
                                                          all(type(x) is int for x in r) for r in settled)
                        and isinstance(value.get("messages"), str)):
                    raise AdapterError("load_state: bad 'settled' or 'messages' in the guard state")
            await self.inner.load_state({k: v for k, v in state.items() if k != STATE_KEY})
            self._end()
            if value is not None:
                self._restored = dict(value)
                self._base_id, self._resets = value["session"], 0

    def _to_config(self) -> Any:
        raise NotImplementedError("GuardedChatCompletionContext is not a declarative component: dump inner's "
                                  "config and wrap it again")


def messages_from_spill(store: SpillStore, handle: str) -> list[LLMMessage]:
    """The AutoGen messages of a spill, as they were when they left the view."""
    doc = read_spill(store, handle)
    if doc.get("framework") != FRAMEWORK:
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not {FRAMEWORK}")
    return ChatCompletionContextState.model_validate({"messages": [x["item"] for x in doc["items"]]}).messages
