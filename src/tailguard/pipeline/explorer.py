"""Exhaustive explorer: breadth-first search over concrete states of small policies.

The test oracle for the solver. It runs the executable model (:mod:`model`) on every
turn size at every step, so the first trace it finds is a shortest one. States are
merged when they agree on everything the future can observe: pinned token total,
summary size, the sizes of the verbatim turns in order, and whether any turn has
left the context (which the token floor can see). When the reachable clean states
are exhausted without a finding, the policy is safe for sessions of any length:
the explored set is closed under every append.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from tailguard.pipeline.model import DEFAULT_PROFILE, Finding, Profile, State, step, with_static
from tailguard.pipeline.policy import Policy

Key = tuple[int, int, int, bool, tuple[int, ...]]


@dataclass(frozen=True)
class Exploration:
    """Verdict of the explorer; ``trace`` is a shortest failing session when unsafe."""

    verdict: Literal["safe", "unsafe", "unknown"]
    findings: tuple[Finding, ...]
    trace: tuple[int, ...]
    states: int
    detail: str = ""
    notes: tuple[Finding, ...] = ()


def _key(policy: Policy, state: State) -> Key:
    pinned = sum(state.sizes[i] for i in state.pinned)
    removed = len(state.pinned) + len(state.verbatim) < len(state.sizes)
    sizes = tuple(state.sizes[i] for i in state.verbatim)
    return (len(state.pinned), pinned, state.summary_tokens if state.summary else -1, removed, sizes)


def explore(
    policy: Policy, max_states: int = 200_000, profile: Profile = DEFAULT_PROFILE
) -> Exploration:
    """Search every session breadth-first under ``profile``; ``unknown`` when ``max_states``
    runs out."""
    if not policy.stages:
        return Exploration("safe", (), (), 1)
    start = State()
    seen: set[Key] = {_key(policy, start)}
    queue: deque[tuple[State, tuple[int, ...]]] = deque([(start, ())])
    while queue:
        state, trace = queue.popleft()
        for size in range(policy.turn_min, policy.turn_max + 1):
            nxt = state.copy()
            found = step(policy, nxt, size, profile=profile)
            if found:
                findings, notes = with_static(policy, "unsafe", tuple(found))
                return Exploration("unsafe", findings, (*trace, size), len(seen), notes=notes)
            key = _key(policy, nxt)
            if key in seen:
                continue
            if len(seen) >= max_states:
                return Exploration("unknown", (), (), len(seen), f"state budget {max_states} exhausted",
                                   with_static(policy, "unknown", ())[1])
            seen.add(key)
            queue.append((nxt, (*trace, size)))
    return Exploration("safe", (), (), len(seen), notes=with_static(policy, "safe", ())[1])
