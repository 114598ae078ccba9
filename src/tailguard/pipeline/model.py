"""Executable concrete model of the reference pipeline (brief sections 6 and 6b).

This is the authority every verdict is replayed through: solver and explorer
traces count only once :func:`replay` reproduces their finding here.

Profiles (brief 6b): the floor rule of section 6 (the newest F units verbatim in the
context after every compaction) is ``partitioned``'s; ``strict`` also requires them
inside what the summarizer was shown (the seen candidates, plus the retained tail
when the stage says ``input = "all"``).

Spec 1.1 language (brief 6b; ``docs/check-config.md`` "Policy language" gives every
decision taken where the brief is silent):

- **Messages.** Each turn holds ``messages_per_turn`` messages and is atomic. Occupancy in
  messages is the messages of the pinned and verbatim turns, plus one for a summary in the
  context (whatever its placement; ``base_tokens`` is no message).
- **Summary placement** ``"message"``: the earlier summary is the oldest candidate (a
  compaction runs even when it is the only one), counts against ``input_limit`` with its
  tokens or one message, and when it is not seen whole the new summary does not inherit
  its coverage: every offset it covered that was not spilled is a hole. A truncate stage
  never drops a summary (brief 6: "never truncated"), whatever its placement.
- **Clipping** (``clip``) changes what the summarizer reads of the oldest candidate that
  does not fit, never what counts as seen: the verdict is the same with or without it.
- **Argument clipping** (``clip_args``, spec 1.2, brief 6d): a clip changes no state (the
  framework keeps the original message and clips the view of every call); a turn it clips is a
  hole at that append, and the append ends there: the framework counts the clipped view (whose
  size is the session's content) for the stages after it in the same call, and a clip is a loss
  already, so nothing after it is modelled (the z3 encoding's later stages likewise need no clip).
- **The cut** (``cut = "messages"``, spec 1.2, brief 6d: LangChain's message-level cut):
  no compaction while the whole context (the earlier summary included, ``base_tokens`` not) is
  within ``keep``; the tail is :func:`compact_tail`'s. ``first_input_limit`` is the input limit
  while no summary is in the context (langmem). ``start_on_human``: when the input limit cuts a
  turn of 2 or more messages, the seen turns before the oldest seen one-message turn are holes
  too (``trim_messages(start_on="human")``; it only ever adds to a compaction's holes).
- **OpenHands' token rule** (spec 1.2): ``keep_less_pinned`` counts a ``tokens`` keep with
  ``base_tokens`` and the pinned turns (the tail is the newest whole turns within ``keep``
  minus them); ``min_progress``: a compaction that would leave out fewer than that share of the
  context's turns keeps no tail instead (the SDK's hard context reset). Both in
  :func:`compact_tail`.
- **Spill** stages cover the first compact stage after them in the list. A successful write
  spills every candidate turn (spilled turns are never holes); the earlier summary is no
  lossless copy of anything, so spilling it protects nothing. A failed write halts the
  session (``halt``: it ends, nothing lost) or the compaction proceeds unspilled
  (``proceed``); the failures are an input of a session (``spill_fails``), chosen by the
  checker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from tailguard.pipeline.policy import ClipArgs, Compact, OnFailure, Policy, Spill, Truncate

Kind = Literal["hole", "floor", "overflow", "unenforceable", "dead_stage", "unreachable"]
Profile = Literal["partitioned", "strict"]
PROFILES: tuple[Profile, ...] = ("partitioned", "strict")
DEFAULT_PROFILE: Profile = "partitioned"

# Finding.detail of the two floor violations (a report tells them apart by it)
FLOOR_CONTEXT = "floor turns not in context"
FLOOR_INPUT = "floor turns not in the summarizer input"
# Finding.detail of the holes a compaction makes
UNSEEN = "summarizer input clipped"
SUMMARY_DROPPED = "earlier summary not shown whole to the summarizer (summary = \"message\")"
ARGS_CLIPPED = "tool-call arguments clipped (clip_args): no copy survives"


@dataclass(frozen=True)
class Finding:
    """A loss: ``kind`` at stage ``stage`` (0-based) after append number ``step`` (1-based).
    ``stage == len(policy.stages)``: the model's window, checked after every stage."""

    kind: Kind
    stage: int
    step: int
    offsets: tuple[int, ...] = ()  # absolute turn indices involved (holes, floor turns)
    detail: str = ""


@dataclass(frozen=True)
class Event:
    """What a stage did, for event logs (:mod:`tailguard.pipeline.trace`), in turn indices.

    ``append (size, messages)``; ``truncate (lo, hi)``: turns ``[lo, hi)`` dropped;
    ``spill (lo, hi)``: candidate turns ``[lo, hi)`` written to durable storage, just
    before their ``compact``; ``compact (stage, seen, tail, inherited)``: candidates
    ``[.., tail)`` replaced by a summary of ``[seen, tail)`` (``seen == tail``: none seen),
    the tail starting at turn ``tail``, ``inherited`` 1 when the new summary inherits the
    earlier one's coverage (always, but for ``summary = "message"`` when the earlier
    summary was not seen whole); ``attempt (tail,)``: a triggered compaction with nothing
    to summarize; ``halt ()``: a failed ``halt`` spill ended the session; ``loss ()``:
    ``finding`` (a hole or floor violation) happened here: before the ``compact`` event
    of the compaction that caused it, after the ``truncate`` event that caused it.
    """

    kind: Literal["append", "truncate", "spill", "compact", "attempt", "halt", "loss", "clip"]
    data: tuple[int, ...]
    finding: Finding | None = None


@dataclass
class State:
    """Concrete pipeline state: every appended size, what is verbatim, the summary."""

    sizes: list[int] = field(default_factory=list)
    verbatim: list[int] = field(default_factory=list)  # unpinned turn indices, oldest first
    pinned: list[int] = field(default_factory=list)
    summary: bool = False
    summary_tokens: int = 0
    body: int = 0  # tokens of the pinned and verbatim turns, kept up to date by ``step``
    messages: list[int] = field(default_factory=list)  # messages of every appended turn
    mbody: int = 0  # messages of the pinned and verbatim turns
    # turns only the summary in context holds (covered, never spilled), as maximal
    # ranges [lo, hi) of turn indices, oldest first: shared between copies, never mutated
    unspilled: tuple[tuple[int, int], ...] = ()
    halted: bool = False  # a failed ``halt`` spill ended the session

    def occupancy(self, policy: Policy, unit: str) -> int:
        """Tokens: base + summary + verbatim sizes; turns: verbatim turns (pinned included);
        messages: their messages, plus one for a summary in the context."""
        if unit == "turns":
            return len(self.pinned) + len(self.verbatim)
        if unit == "messages":
            return self.mbody + (1 if self.summary else 0)
        summary_tokens = self.summary_tokens if self.summary else 0
        return policy.base_tokens + summary_tokens + self.body

    def units(self, unit: str, turns: list[int]) -> list[int]:
        """The size of each of ``turns`` in ``unit``."""
        if unit == "turns":
            return [1] * len(turns)
        return [(self.messages if unit == "messages" else self.sizes)[j] for j in turns]

    def unspilled_coverage(self) -> list[int]:
        """Turns only the summary in context holds: covered, never spilled."""
        return [j for lo, hi in self.unspilled for j in range(lo, hi)]

    def hold(self, lo: int, hi: int) -> None:
        """The summary now also holds turns ``[lo, hi)`` (newer than any it holds)."""
        if lo >= hi:
            return
        if self.unspilled and self.unspilled[-1][1] == lo:
            self.unspilled = (*self.unspilled[:-1], (self.unspilled[-1][0], hi))
        else:
            self.unspilled = (*self.unspilled, (lo, hi))

    def copy(self) -> State:
        """An independent copy (the explorer branches on every size)."""
        return State(
            list(self.sizes), list(self.verbatim), list(self.pinned), self.summary,
            self.summary_tokens, self.body, list(self.messages), self.mbody, self.unspilled,
            self.halted,
        )


def newest_fitting(sizes: list[int], budget: int) -> int:
    """How many of ``sizes`` (oldest first) fit counting back from the newest; stops at the
    first that does not fit.

    >>> newest_fitting([5, 1, 3], 4)
    2
    >>> newest_fitting([5, 1, 3], 2)
    0
    """
    total, count = 0, 0
    for size in reversed(sizes):
        if total + size > budget:
            break
        total += size
        count += 1
    return count


def floor_turns(policy: Policy, sizes: list[int], messages: list[int] | None = None) -> list[int]:
    """Indices of the turns the floor names: the newest ``F`` turns, or (tokens, messages)
    every turn holding one of the newest ``F`` tokens (messages) of the history."""
    n = len(sizes)
    if policy.floor_unit == "turns":
        return list(range(max(0, n - policy.floor), n))
    if policy.floor_unit == "messages":
        sizes = messages if messages is not None else [policy.messages_per_turn[0]] * n
    start = sum(sizes) - policy.floor
    out, end = [], 0
    for i, size in enumerate(sizes):
        end += size
        if size > 0 and end > start:
            out.append(i)
    return out


def static_findings(policy: Policy) -> list[Finding]:
    """Candidate ``unenforceable`` findings: truncate stages whose unit differs from the
    floor's. Whether one is reported depends on the dynamics (:func:`with_static`)."""
    return [
        Finding("unenforceable", i, 0, (), f"floor in {policy.floor_unit}, truncate in {s.unit}")
        for i, s in enumerate(policy.stages)
        if isinstance(s, Truncate) and s.unit != policy.floor_unit
    ]


def dead_stages(policy: Policy) -> tuple[Finding, ...]:
    """``dead_stage`` notes for a policy whose dynamics are proved safe: every truncate stage
    then never fires (a truncate stage over its limit always drops a turn, a hole, or
    overflows), so none can evict anything on any session."""
    return tuple(
        Finding("dead_stage", i, 0, (), f"truncate {s.unit} > {s.limit} never fires")
        for i, s in enumerate(policy.stages) if isinstance(s, Truncate)
    )


def unreachable_stages(policy: Policy) -> tuple[Finding, ...]:
    """``unreachable`` notes (brief 6b): compact stages whose trigger is above every
    occupancy the stages before them allow. After ``truncate(unit, L)`` the occupancy in
    ``unit`` is at most ``L`` (or the stage overflowed: a finding), and further truncate
    stages only lower it, so a compact stage triggering in that unit at more than ``L``,
    with only truncate stages between, never fires before a session's first loss (a
    compaction could raise the token count, its summary being larger than what it
    replaced, so one in between ends the argument). A compact stage triggering in tokens
    above the ``window`` is one too (brief 6b): the context is over the model's window
    before it can fire (the note names the window as stage ``len(policy.stages)``)."""
    out: list[Finding] = []
    caps: dict[str, tuple[int, int]] = {}  # unit -> (lowest limit, its stage) since the last compact
    for i, s in enumerate(policy.stages):
        if isinstance(s, Truncate):
            if s.unit not in caps or s.limit < caps[s.unit][0]:
                caps[s.unit] = (s.limit, i)
            continue
        if isinstance(s, Spill | ClipArgs):
            continue  # a spill writes and a clip changes the view: neither changes occupancy
        # every clause must be blocked (each by one of its thresholds) for the stage to be
        # unreachable; the note names the blocking of the first clause
        blocked: list[Finding] = []
        for clause in s.clauses:
            reason = next((r for r in (_blocked(policy, caps, i, unit, threshold) for unit, threshold in clause)
                           if r is not None), None)
            if reason is None:
                break
            blocked.append(reason)
        else:
            out.append(blocked[0])
        caps = {}
    return tuple(out)


def _blocked(policy: Policy, caps: dict[str, tuple[int, int]], i: int, unit: str, threshold: int) -> Finding | None:
    """Why ``occupancy(unit) >= threshold`` never holds at stage ``i`` (see ``unreachable_stages``)."""
    cap = caps.get(unit)
    if cap is not None and threshold > cap[0]:
        return Finding("unreachable", i, 0, (cap[1],),
                       f"trigger {threshold} {unit} above stage {cap[1]}'s limit {cap[0]}")
    if policy.window and unit == "tokens" and threshold > policy.window:
        return Finding("unreachable", i, 0, (len(policy.stages),),
                       f"trigger {threshold} tokens above the window {policy.window}")
    return None


def inert(policy: Policy) -> bool:
    """Nothing can ever be lost: no window, no truncate, compact or clip_args stage (a spill
    stage alone writes nothing)."""
    return not policy.window and not any(isinstance(s, Truncate | Compact | ClipArgs) for s in policy.stages)


def idle_spills(policy: Policy) -> tuple[Finding, ...]:
    """``dead_stage`` notes for spill stages with no compact stage after them: they never
    write anything."""
    out = []
    for i, s in enumerate(policy.stages):
        if isinstance(s, Spill) and not any(isinstance(t, Compact) for t in policy.stages[i + 1 :]):
            out.append(Finding("dead_stage", i, 0, (), "spill: no compact stage after it, "
                                                        "it never writes"))
    return tuple(out)


def spill_modes(policy: Policy) -> dict[int, OnFailure]:
    """The compact stages a spill covers (the first compact stage after each spill stage),
    with what a failed write does: ``halt`` if any covering spill halts (its failure ends
    the session), else ``proceed``."""
    out: dict[int, OnFailure] = {}
    armed: list[OnFailure] = []
    for i, s in enumerate(policy.stages):
        if isinstance(s, Spill):
            armed.append(s.on_failure)
        elif isinstance(s, Compact):
            if armed:
                out[i] = "halt" if "halt" in armed else "proceed"
            armed = []
    return out


def with_static(
    policy: Policy, verdict: str, found: tuple[Finding, ...]
) -> tuple[tuple[Finding, ...], tuple[Finding, ...]]:
    """Brief 6b: ``unenforceable`` only for a truncate stage that can evict something. Given
    the verdict of the session dynamics and the findings of the failing append, the
    (findings, notes) to report. Dynamics ``safe``: no truncate stage ever fires, each is a
    ``dead_stage`` note and nothing is unenforceable. ``unsafe``: each mismatched truncate
    stage is ``unenforceable``; its detail says whether it evicts in the failing session or
    was simply not proved dead. ``unknown``: nothing is claimed either way. Whatever the
    verdict, compact stages that can never fire are ``unreachable`` notes."""
    if verdict == "safe":
        return (), dead_stages(policy) + unreachable_stages(policy) + idle_spills(policy)
    if verdict != "unsafe":
        return (), unreachable_stages(policy) + idle_spills(policy)
    fired = {f.stage for f in found if f.kind in ("hole", "overflow")}
    static = tuple(
        Finding(f.kind, f.stage, f.step, f.offsets,
                f"{f.detail}; {'it evicts in this session' if f.stage in fired else 'not proved dead'}")
        for f in static_findings(policy)
    )
    return static + found, unreachable_stages(policy) + idle_spills(policy)


def step(
    policy: Policy,
    state: State,
    size: int,
    events: list[Event] | None = None,
    profile: Profile = DEFAULT_PROFILE,
    messages: int | None = None,
    spill_fails: bool = False,
) -> list[Finding]:
    """Append one turn of ``size`` tokens and ``messages`` messages (default: the fewest a
    turn holds), run every stage in order; return what was lost. ``spill_fails``: every
    spill write of this append fails. A halted session appends nothing more."""
    if state.halted:
        return []
    count = policy.messages_per_turn[0] if messages is None else messages
    found: list[Finding] = []
    number = len(state.sizes) + 1
    index = len(state.sizes)
    state.sizes.append(size)
    state.messages.append(count)
    state.body += size
    state.mbody += count
    (state.pinned if index < policy.keep_first else state.verbatim).append(index)
    if events is not None:
        events.append(Event("append", (size, count)))
    modes = spill_modes(policy)
    for i, stage in enumerate(policy.stages):
        if isinstance(stage, Truncate):
            dropped: list[int] = []
            while state.occupancy(policy, stage.unit) > stage.limit and state.verbatim:
                dropped.append(state.verbatim.pop(0))
                state.body -= state.sizes[dropped[-1]]
                state.mbody -= state.messages[dropped[-1]]
            if dropped:
                hole = Finding("hole", i, number, tuple(dropped), "truncated, never summarized")
                found.append(hole)
                if events is not None:
                    events.append(Event("truncate", (dropped[0], dropped[-1] + 1)))
                    events.append(Event("loss", (), hole))
            if state.occupancy(policy, stage.unit) > stage.limit:
                occ = state.occupancy(policy, stage.unit)
                found.append(Finding("overflow", i, number, (), f"{occ} {stage.unit} > {stage.limit}"))
        elif isinstance(stage, ClipArgs):
            clipped = _clip_args(policy, state, stage, i, number, events)
            if clipped:  # the rest of this call counts a clipped view the model cannot size
                return [*found, *clipped]
        elif isinstance(stage, Compact):
            spill = modes.get(i)
            found.extend(_compact(policy, state, stage, i, number, events, profile,
                                  spill, spill_fails))
            if state.halted:
                if events is not None:
                    events.append(Event("halt", ()))
                return found
    if policy.window and state.occupancy(policy, "tokens") > policy.window:
        occ = state.occupancy(policy, "tokens")
        found.append(Finding("overflow", len(policy.stages), number, (),
                             f"{occ} tokens > window {policy.window}"))
    return found


def clipped_turns(policy: Policy, state: State, stage: ClipArgs) -> list[int]:
    """The turns a ``clip_args`` stage clips now: none below its trigger; else every unpinned
    verbatim turn outside its newest ``keep`` (whole turns, as a compact stage's tail) that is
    large enough to hold a clippable argument."""
    if state.occupancy(policy, stage.trigger_unit) < stage.trigger:
        return []
    sizes = state.units(stage.keep_unit, state.verbatim)
    tail = min(stage.keep, len(sizes)) if stage.keep_unit == "turns" else newest_fitting(sizes, stage.keep)
    exposed = state.verbatim[: len(state.verbatim) - tail]
    return [j for j in exposed if state.sizes[j] >= stage.min_tokens]


def _clip_args(
    policy: Policy, state: State, stage: ClipArgs, i: int, number: int, events: list[Event] | None
) -> list[Finding]:
    clipped = clipped_turns(policy, state, stage)
    if not clipped:
        return []
    hole = Finding("hole", i, number, tuple(clipped), ARGS_CLIPPED)
    if events is not None:
        events.append(Event("loss", (), hole))
        events.append(Event("clip", (clipped[-1] + 1,)))
    return [hole]


def compact_tail(policy: Policy, state: State, stage: Compact) -> int:
    """How many of the newest unpinned verbatim turns a compaction of ``stage`` keeps: the
    newest whole turns within ``keep``; with ``cut = "messages"`` (LangChain's cut at a message,
    moved back to the start of its turn) also the turn holding the oldest of the newest
    ``keep`` messages (a ``messages`` keep), and always the newest turn (a ``tokens`` keep:
    the newest message stays whatever its size).

    >>> p = Policy("p", 1, 9, 0, "tokens")
    >>> s = State(sizes=[5, 5, 5], verbatim=[0, 1, 2], messages=[3, 3, 1])
    >>> compact_tail(p, s, Compact("tokens", 1, "messages", 2, 0)), \\
    ...     compact_tail(p, s, Compact("tokens", 1, "messages", 2, 0, cut="messages"))
    (1, 2)
    >>> compact_tail(p, s, Compact("tokens", 1, "tokens", 4, 0, cut="messages"))
    1

    ``keep_less_pinned``: the pinned turns' tokens (and ``base_tokens``) come off ``keep``;
    ``min_progress``: under that share of the context's turns left out, no tail at all.

    >>> s = State(sizes=[4, 5, 5, 1], pinned=[0], verbatim=[1, 2, 3])
    >>> compact_tail(p, s, Compact("tokens", 1, "tokens", 9, 0)), \\
    ...     compact_tail(p, s, Compact("tokens", 1, "tokens", 9, 0, keep_less_pinned=True)), \\
    ...     compact_tail(p, s, Compact("tokens", 1, "tokens", 9, 0, min_progress=0.5))
    (2, 1, 0)
    """
    keep_sizes = state.units(stage.keep_unit, state.verbatim)
    if stage.keep_unit == "turns":
        tail = min(stage.keep, len(keep_sizes))
    else:
        budget = stage.keep
        if stage.keep_less_pinned:  # the tail and the pinned turns within keep
            budget -= policy.base_tokens + sum(state.sizes[j] for j in state.pinned)
        tail = newest_fitting(keep_sizes, budget)
    if stage.cut == "messages" and stage.keep_unit != "turns" and tail < len(keep_sizes):
        if stage.keep_unit == "messages":
            if sum(keep_sizes[len(keep_sizes) - tail :]) < stage.keep:
                tail += 1  # the cut lands inside the next older turn: it moves to its start
        elif tail == 0:
            tail = 1
    if stage.min_progress:
        left_out = len(keep_sizes) - tail + (1 if stage.summary == "message" and state.summary else 0)
        if stage.resets(left_out, len(state.pinned) + (1 if state.summary else 0) + len(keep_sizes)):
            return 0  # the hard context reset: everything after the pinned turns goes
    return tail


def _compact(
    policy: Policy,
    state: State,
    stage: Compact,
    i: int,
    number: int,
    events: list[Event] | None,
    profile: Profile,
    spill: OnFailure | None = None,
    spill_fails: bool = False,
) -> list[Finding]:
    if not any(all(state.occupancy(policy, unit) >= threshold for unit, threshold in clause)
               for clause in stage.clauses):
        return []
    tail = compact_tail(policy, state, stage)
    candidates = state.verbatim[: len(state.verbatim) - tail]
    earlier = stage.summary == "message" and state.summary  # the oldest candidate
    within = stage.cut == "messages" and state.occupancy(policy, stage.keep_unit) - \
        (policy.base_tokens if stage.keep_unit == "tokens" else 0) <= stage.keep  # the messages alone
    if (not candidates and not earlier) or within:
        if events is not None:  # triggered, nothing to summarize: still an attempt
            events.append(Event("attempt", (state.verbatim[0] if state.verbatim else number,)))
        return []
    if spill is not None and spill_fails and spill == "halt":
        state.halted = True  # the write failed: the session stops before compacting
        return []
    spilled = spill is not None and not spill_fails
    found: list[Finding] = []
    seen, summary_seen = candidates, True
    limit = stage.limit_for(state.summary)
    if limit > 0:
        unit = stage.input_limit_unit
        cand_sizes = state.units(unit, candidates)
        fit = newest_fitting(cand_sizes, limit)
        seen = candidates[len(candidates) - fit :]
        if earlier:
            own = 1 if unit == "messages" else state.summary_tokens
            summary_seen = fit == len(candidates) and sum(cand_sizes) + own <= limit
    if stage.start_on_human and len(seen) < len(candidates) and \
            state.messages[candidates[len(candidates) - len(seen) - 1]] >= 2:
        # trim_messages(start_on="human"): the cut turn's part and the AI-led turns after it go
        human = next((k for k, j in enumerate(seen) if state.messages[j] == 1), len(seen))
        seen = seen[human:]
    # candidates are in the context, so none was spilled before: this write is their only one
    unseen = [] if spilled else candidates[: len(candidates) - len(seen)]
    if unseen:
        found.append(Finding("hole", i, number, tuple(unseen), UNSEEN))
    inherited = not earlier or summary_seen
    if not inherited:
        lost = state.unspilled_coverage()
        if lost:
            found.append(Finding("hole", i, number, tuple(lost), SUMMARY_DROPPED))
        state.unspilled = ()
    if seen and not spilled:
        state.hold(seen[0], seen[-1] + 1)
    state.verbatim = state.verbatim[len(candidates) :]
    state.body -= sum(state.sizes[j] for j in candidates)
    state.mbody -= sum(state.messages[j] for j in candidates)
    state.summary = True
    state.summary_tokens = stage.summary_tokens
    floor = floor_turns(policy, state.sizes, state.messages)
    in_context = set(state.pinned) | set(state.verbatim)
    lost_floor = [j for j in floor if j not in in_context]
    if lost_floor:
        found.append(Finding("floor", i, number, tuple(lost_floor), FLOOR_CONTEXT))
    if profile == "strict":  # what the summarizer was shown (the earlier summary aside)
        shown = set(seen) | (set(state.verbatim) if stage.input == "all" else set())
        unshown = [j for j in floor if j not in shown]
        if unshown:
            found.append(Finding("floor", i, number, tuple(unshown), FLOOR_INPUT))
    if events is not None:
        events.extend(Event("loss", (), f) for f in found)
        tail_start = candidates[-1] + 1 if candidates else \
            (state.verbatim[0] if state.verbatim else number)
        if spilled and candidates:
            events.append(Event("spill", (candidates[0], tail_start)))
        events.append(Event("compact", (i, seen[0] if seen else tail_start, tail_start,
                                        1 if inherited else 0)))
    return found


@dataclass(frozen=True)
class Session:
    """A concrete session: the tokens and the messages of every append (``messages`` empty:
    each turn holds the fewest messages a turn holds) and the appends (1-based) at which
    every spill write fails."""

    sizes: tuple[int, ...]
    messages: tuple[int, ...] = ()
    failures: frozenset[int] = frozenset()

    def count(self, policy: Policy, k: int) -> int:
        """Messages of the ``k``-th append (0-based)."""
        return self.messages[k] if self.messages else policy.messages_per_turn[0]


def replay(
    policy: Policy,
    trace: list[int] | tuple[int, ...],
    profile: Profile = DEFAULT_PROFILE,
    messages: tuple[int, ...] | list[int] = (),
    failures: frozenset[int] | set[int] = frozenset(),
) -> tuple[list[Finding], int]:
    """Run ``trace`` from the empty session; return the findings of the first step that has
    any, and that step (0 when the whole trace is clean)."""
    session = Session(tuple(trace), tuple(messages), frozenset(failures))
    state = State()
    for number, size in enumerate(session.sizes, start=1):
        found = step(policy, state, size, profile=profile, messages=session.count(policy, number - 1),
                     spill_fails=number in session.failures)
        if found:
            return found, number
    return [], 0


def _fails_at(policy: Policy, state: State, suffix: list[tuple[int, int, bool]], at: int,
              profile: Profile) -> bool:
    """Whether running ``suffix`` (size, messages, spill fails) from ``state`` (a copy)
    first finds something at its ``at``-th append (1-based) and not before."""
    probe = state.copy()
    for number, (size, count, fails) in enumerate(suffix, start=1):
        if step(policy, probe, size, profile=profile, messages=count, spill_fails=fails):
            return number == at
    return False


def lowest_working(lo: int, hi: int, works: Callable[[int], bool]) -> int:
    """The smallest value in ``[lo, hi]`` that works, ``hi`` known to work: ``lo`` first,
    else by bisection."""
    if hi <= lo or works(lo):
        return min(lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if works(mid):
            hi = mid
        else:
            lo = mid
    return hi


def canonical_session(policy: Policy, session: Session, profile: Profile = DEFAULT_PROFILE) -> Session:
    """The failing ``session`` with the smallest sizes, then the fewest messages, then the
    fewest failed spill writes that still reproduce it: each append, oldest first, lowered
    (:func:`lowest_working`) so that the session still finds its first loss at its last append. A
    deterministic function of the session, so a report never shows solver noise; one that
    does not fail at its last append is returned unchanged (the caller's replay then rejects
    it)."""
    rows = [(size, session.count(policy, k), k + 1 in session.failures)
            for k, size in enumerate(session.sizes)]
    length = len(rows)
    state = State()
    if not length or not _fails_at(policy, state, rows, length, profile):
        return session
    for i in range(length):
        rest = rows[i + 1 :]
        size, count, fails = rows[i]

        def works(row: tuple[int, int, bool], rest: list[tuple[int, int, bool]] = rest,
                  at: int = length - i) -> bool:
            return _fails_at(policy, state, [row, *rest], at, profile)

        def by_size(v: int, c: int = count, f: bool = fails) -> bool:
            return works((v, c, f))

        size = lowest_working(policy.turn_min, size, by_size)

        def by_count(v: int, z: int = size, f: bool = fails) -> bool:
            return works((z, v, f))

        count = lowest_working(policy.messages_per_turn[0], count, by_count)
        if fails and works((size, count, False)):
            fails = False
        rows[i] = (size, count, fails)
        step(policy, state, size, profile=profile, messages=count, spill_fails=fails)
    plain = all(c == policy.messages_per_turn[0] for _, c, _ in rows)
    return Session(tuple(r[0] for r in rows), () if plain else tuple(r[1] for r in rows),
                   frozenset(k + 1 for k, r in enumerate(rows) if r[2]))


def canonical_trace(
    policy: Policy, trace: list[int], profile: Profile = DEFAULT_PROFILE
) -> tuple[int, ...]:
    """:func:`canonical_session` of a session given by its sizes alone (each turn of the
    fewest messages, no failed write).

    >>> from tailguard.pipeline.policy import Truncate
    >>> p = Policy("p", 1, 9, 0, "tokens", (Truncate("tokens", 10),))
    >>> canonical_trace(p, [7, 9])
    (2, 9)
    """
    return canonical_session(policy, Session(tuple(trace)), profile).sizes
