"""Executable concrete model of the reference pipeline (brief sections 6 and 6b).

This is the authority every verdict is replayed through: solver and explorer
traces count only once :func:`replay` reproduces their finding here.

Profiles (brief 6b): the floor rule of section 6 (the newest F units verbatim in the
context after every compaction) is ``partitioned``'s; ``strict`` also requires them
inside what the summarizer was shown (the seen candidates, plus the retained tail
when the stage says ``input = "all"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tailguard.pipeline.policy import Compact, Policy, Truncate

Kind = Literal["hole", "floor", "overflow", "unenforceable", "dead_stage", "unreachable"]
Profile = Literal["partitioned", "strict"]
PROFILES: tuple[Profile, ...] = ("partitioned", "strict")
DEFAULT_PROFILE: Profile = "partitioned"

# Finding.detail of the two floor violations (a report tells them apart by it)
FLOOR_CONTEXT = "floor turns not in context"
FLOOR_INPUT = "floor turns not in the summarizer input"


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

    ``append (size,)``; ``truncate (lo, hi)``: turns ``[lo, hi)`` dropped; ``compact
    (stage, seen, tail)``: candidates ``[.., tail)`` replaced by a summary of
    ``[seen, tail)`` (``seen == tail``: none seen), the tail starting at turn ``tail``;
    ``attempt (tail,)``: a triggered compaction with nothing to summarize; ``loss ()``:
    ``finding`` (a hole or floor violation) happened here: before the ``compact`` event
    of the compaction that caused it, after the ``truncate`` event that caused it.
    """

    kind: Literal["append", "truncate", "compact", "attempt", "loss"]
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

    def occupancy(self, policy: Policy, unit: str) -> int:
        """Tokens: base + summary + verbatim sizes; turns: verbatim turns (pinned included)."""
        if unit == "turns":
            return len(self.pinned) + len(self.verbatim)
        summary_tokens = self.summary_tokens if self.summary else 0
        return policy.base_tokens + summary_tokens + self.body

    def copy(self) -> State:
        """An independent copy (the explorer branches on every size)."""
        return State(
            list(self.sizes), list(self.verbatim), list(self.pinned), self.summary,
            self.summary_tokens, self.body,
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


def floor_turns(policy: Policy, sizes: list[int]) -> list[int]:
    """Indices of the turns the floor names: the newest ``F`` turns, or (tokens) every turn
    holding one of the newest ``F`` tokens of the history."""
    n = len(sizes)
    if policy.floor_unit == "turns":
        return list(range(max(0, n - policy.floor), n))
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
    replaced, so one in between ends the argument)."""
    out: list[Finding] = []
    caps: dict[str, tuple[int, int]] = {}  # unit -> (lowest limit, its stage) since the last compact
    for i, s in enumerate(policy.stages):
        if isinstance(s, Truncate):
            if s.unit not in caps or s.limit < caps[s.unit][0]:
                caps[s.unit] = (s.limit, i)
            continue
        cap = caps.get(s.trigger_unit)
        if cap is not None and s.trigger > cap[0]:
            out.append(Finding("unreachable", i, 0, (cap[1],),
                               f"trigger {s.trigger} {s.trigger_unit} above stage {cap[1]}'s "
                               f"limit {cap[0]}"))
        caps = {}
    return tuple(out)


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
        return (), dead_stages(policy) + unreachable_stages(policy)
    if verdict != "unsafe":
        return (), unreachable_stages(policy)
    fired = {f.stage for f in found if f.kind in ("hole", "overflow")}
    static = tuple(
        Finding(f.kind, f.stage, f.step, f.offsets,
                f"{f.detail}; {'it evicts in this session' if f.stage in fired else 'not proved dead'}")
        for f in static_findings(policy)
    )
    return static + found, unreachable_stages(policy)


def step(
    policy: Policy,
    state: State,
    size: int,
    events: list[Event] | None = None,
    profile: Profile = DEFAULT_PROFILE,
) -> list[Finding]:
    """Append one turn of ``size`` tokens, run every stage in order; return what was lost."""
    found: list[Finding] = []
    number = len(state.sizes) + 1
    index = len(state.sizes)
    state.sizes.append(size)
    state.body += size
    (state.pinned if index < policy.keep_first else state.verbatim).append(index)
    if events is not None:
        events.append(Event("append", (size,)))
    for i, stage in enumerate(policy.stages):
        if isinstance(stage, Truncate):
            dropped: list[int] = []
            while state.occupancy(policy, stage.unit) > stage.limit and state.verbatim:
                dropped.append(state.verbatim.pop(0))
                state.body -= state.sizes[dropped[-1]]
            if dropped:
                hole = Finding("hole", i, number, tuple(dropped), "truncated, never summarized")
                found.append(hole)
                if events is not None:
                    events.append(Event("truncate", (dropped[0], dropped[-1] + 1)))
                    events.append(Event("loss", (), hole))
            if state.occupancy(policy, stage.unit) > stage.limit:
                occ = state.occupancy(policy, stage.unit)
                found.append(Finding("overflow", i, number, (), f"{occ} {stage.unit} > {stage.limit}"))
        else:
            found.extend(_compact(policy, state, stage, i, number, events, profile))
    if policy.window and state.occupancy(policy, "tokens") > policy.window:
        occ = state.occupancy(policy, "tokens")
        found.append(Finding("overflow", len(policy.stages), number, (),
                             f"{occ} tokens > window {policy.window}"))
    return found


def _compact(
    policy: Policy,
    state: State,
    stage: Compact,
    i: int,
    number: int,
    events: list[Event] | None,
    profile: Profile,
) -> list[Finding]:
    if state.occupancy(policy, stage.trigger_unit) < stage.trigger:
        return []
    sizes = [state.sizes[j] for j in state.verbatim]
    by_turns = stage.keep_unit == "turns"
    tail = min(stage.keep, len(sizes)) if by_turns else newest_fitting(sizes, stage.keep)
    candidates = state.verbatim[: len(state.verbatim) - tail]
    if not candidates:
        if events is not None:  # triggered, nothing to summarize: still an attempt
            events.append(Event("attempt", (state.verbatim[0] if state.verbatim else number,)))
        return []
    found: list[Finding] = []
    seen = candidates
    if stage.input_limit > 0:
        cand_sizes = [state.sizes[j] for j in candidates]
        seen = candidates[len(candidates) - newest_fitting(cand_sizes, stage.input_limit) :]
        unseen = candidates[: len(candidates) - len(seen)]
        if unseen:
            found.append(Finding("hole", i, number, tuple(unseen), "summarizer input clipped"))
    state.verbatim = state.verbatim[len(candidates) :]
    state.body -= sum(state.sizes[j] for j in candidates)
    state.summary = True
    state.summary_tokens = stage.summary_tokens
    floor = floor_turns(policy, state.sizes)
    in_context = set(state.pinned) | set(state.verbatim)
    lost = [j for j in floor if j not in in_context]
    if lost:
        found.append(Finding("floor", i, number, tuple(lost), FLOOR_CONTEXT))
    if profile == "strict":  # what the summarizer was shown (the earlier summary aside)
        shown = set(seen) | (set(state.verbatim) if stage.input == "all" else set())
        unshown = [j for j in floor if j not in shown]
        if unshown:
            found.append(Finding("floor", i, number, tuple(unshown), FLOOR_INPUT))
    if events is not None:
        events.extend(Event("loss", (), f) for f in found)
        tail_start = candidates[-1] + 1
        events.append(Event("compact", (i, seen[0] if seen else tail_start, tail_start)))
    return found


def replay(
    policy: Policy, trace: list[int], profile: Profile = DEFAULT_PROFILE
) -> tuple[list[Finding], int]:
    """Run ``trace`` from the empty session; return the findings of the first step that has
    any, and that step (0 when the whole trace is clean)."""
    state = State()
    for number, size in enumerate(trace, start=1):
        found = step(policy, state, size, profile=profile)
        if found:
            return found, number
    return [], 0


def _fails_at(policy: Policy, state: State, suffix: list[int], at: int, profile: Profile) -> bool:
    """Whether running ``suffix`` from ``state`` (a copy) first finds something at its
    ``at``-th append (1-based) and not before."""
    probe = state.copy()
    for number, size in enumerate(suffix, start=1):
        if step(policy, probe, size, profile=profile):
            return number == at
    return False


def canonical_trace(
    policy: Policy, trace: list[int], profile: Profile = DEFAULT_PROFILE
) -> tuple[int, ...]:
    """The failing ``trace`` with the smallest sizes that still reproduce it: each append,
    oldest first, lowered to the smallest size (``turn_min`` first, else by bisection) with
    which the session still finds its first loss at its last append. A deterministic
    function of the trace, so a report never shows solver noise; a trace that does not fail
    at its last append is returned unchanged (the caller's replay then rejects it).

    >>> from tailguard.pipeline.policy import Truncate
    >>> p = Policy("p", 1, 9, 0, "tokens", (Truncate("tokens", 10),))
    >>> canonical_trace(p, [7, 9])
    (2, 9)
    """
    sizes = list(trace)
    length = len(sizes)
    state = State()
    if not length or not _fails_at(policy, state, sizes, length, profile):
        return tuple(trace)
    for i in range(length):
        rest = sizes[i + 1 :]
        if sizes[i] > policy.turn_min:
            if _fails_at(policy, state, [policy.turn_min, *rest], length - i, profile):
                sizes[i] = policy.turn_min
            else:  # bisect [turn_min, size]: lo does not reproduce, hi does
                lo, hi = policy.turn_min, sizes[i]
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    if _fails_at(policy, state, [mid, *rest], length - i, profile):
                        hi = mid
                    else:
                        lo = mid
                sizes[i] = hi
        step(policy, state, sizes[i], profile=profile)
    return tuple(sizes)

