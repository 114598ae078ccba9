"""Executable concrete model of the reference pipeline (brief section 6).

This is the authority every verdict is replayed through: solver and explorer
traces count only once :func:`replay` reproduces their finding here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tailguard.pipeline.policy import Compact, Policy, Truncate

Kind = Literal["hole", "floor", "overflow", "unenforceable"]


@dataclass(frozen=True)
class Finding:
    """A loss: ``kind`` at stage ``stage`` (0-based) after append number ``step`` (1-based)."""

    kind: Kind
    stage: int
    step: int
    offsets: tuple[int, ...] = ()  # absolute turn indices involved (holes, floor turns)
    detail: str = ""


@dataclass(frozen=True)
class Event:
    """What a stage did, for event logs: ``truncate`` ranges, ``compact`` ranges."""

    kind: Literal["append", "truncate", "compact", "attempt"]
    data: tuple[int, ...]


@dataclass
class State:
    """Concrete pipeline state: every appended size, what is verbatim, the summary."""

    sizes: list[int] = field(default_factory=list)
    verbatim: list[int] = field(default_factory=list)  # unpinned turn indices, oldest first
    pinned: list[int] = field(default_factory=list)
    summary: bool = False
    summary_tokens: int = 0

    def occupancy(self, policy: Policy, unit: str) -> int:
        """Tokens: base + summary + verbatim sizes; turns: verbatim turns (pinned included)."""
        if unit == "turns":
            return len(self.pinned) + len(self.verbatim)
        summary_tokens = self.summary_tokens if self.summary else 0
        body = sum(self.sizes[i] for i in self.pinned) + sum(self.sizes[i] for i in self.verbatim)
        return policy.base_tokens + summary_tokens + body

    def copy(self) -> State:
        """An independent copy (the explorer branches on every size)."""
        return State(
            list(self.sizes), list(self.verbatim), list(self.pinned), self.summary,
            self.summary_tokens,
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
    """``unenforceable``: the floor unit differs from a truncate stage's unit."""
    return [
        Finding("unenforceable", i, 0, (), f"floor in {policy.floor_unit}, truncate in {s.unit}")
        for i, s in enumerate(policy.stages)
        if isinstance(s, Truncate) and s.unit != policy.floor_unit
    ]


def step(policy: Policy, state: State, size: int, events: list[Event] | None = None) -> list[Finding]:
    """Append one turn of ``size`` tokens, run every stage in order; return what was lost."""
    found: list[Finding] = []
    number = len(state.sizes) + 1
    index = len(state.sizes)
    state.sizes.append(size)
    (state.pinned if index < policy.keep_first else state.verbatim).append(index)
    if events is not None:
        events.append(Event("append", (size,)))
    for i, stage in enumerate(policy.stages):
        if isinstance(stage, Truncate):
            dropped: list[int] = []
            while state.occupancy(policy, stage.unit) > stage.limit and state.verbatim:
                dropped.append(state.verbatim.pop(0))
            if dropped:
                found.append(Finding("hole", i, number, tuple(dropped), "truncated, never summarized"))
                if events is not None:
                    events.append(Event("truncate", (dropped[0], dropped[-1] + 1)))
            if state.occupancy(policy, stage.unit) > stage.limit:
                occ = state.occupancy(policy, stage.unit)
                found.append(Finding("overflow", i, number, (), f"{occ} {stage.unit} > {stage.limit}"))
        else:
            found.extend(_compact(policy, state, stage, i, number, events))
    return found


def _compact(
    policy: Policy, state: State, stage: Compact, i: int, number: int, events: list[Event] | None
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
    state.summary = True
    state.summary_tokens = stage.summary_tokens
    if events is not None:  # unclipped, the summarizer also sees pinned turns and the old summary
        input_lo = 0 if len(seen) == len(candidates) else (seen[0] if seen else candidates[-1] + 1)
        events.append(Event("compact", (input_lo, candidates[-1] + 1, candidates[-1] + 1)))
    in_context = set(state.pinned) | set(state.verbatim)
    lost = [j for j in floor_turns(policy, state.sizes) if j not in in_context]
    if lost:
        found.append(Finding("floor", i, number, tuple(lost), "floor turns not in context"))
    return found


def replay(policy: Policy, trace: list[int]) -> tuple[list[Finding], int]:
    """Run ``trace`` from the empty session; return the findings of the first step that has
    any, and that step (0 when the whole trace is clean)."""
    state = State()
    for number, size in enumerate(trace, start=1):
        found = step(policy, state, size)
        if found:
            return found, number
    return [], 0
