"""Exhaustive explorer: breadth-first search over concrete states of small policies.

The test oracle for the solver. It runs the executable model (:mod:`model`) on every
turn size at every step, so the first trace it finds is a shortest one. States are
merged when they agree on everything the future can observe: pinned token and
message totals, summary size, the sizes and message counts of the verbatim turns in
order, whether any turn has left the context (which the token and message floors can
see), and whether the summary holds a turn that was never spilled (what a
``summary = "message"`` compaction loses when it drops the summary). Spec 1.1: every
append also branches on its message count and, when a ``proceed`` spill exists, on
whether its spill writes fail (a failed ``halt`` write ends the session, which can find
nothing more: not explored). When the reachable clean states
are exhausted without a finding, the policy is safe for sessions of any length:
the explored set is closed under every append.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Literal

from tailguard.pipeline.model import (
    DEFAULT_PROFILE,
    Finding,
    Profile,
    State,
    inert,
    spill_modes,
    step,
    with_static,
)
from tailguard.pipeline.policy import Policy

Key = tuple[int, int, int, int, bool, bool, tuple[tuple[int, int], ...]]
Row = tuple[int, int, bool]  # one append: tokens, messages, spill writes fail


@dataclass(frozen=True)
class Exploration:
    """Verdict of the explorer; ``trace`` is a shortest failing session when unsafe."""

    verdict: Literal["safe", "unsafe", "unknown"]
    findings: tuple[Finding, ...]
    trace: tuple[int, ...]
    states: int
    detail: str = ""
    notes: tuple[Finding, ...] = ()
    messages: tuple[int, ...] = ()  # of every append of ``trace``
    failures: frozenset[int] = frozenset()  # appends (1-based) whose spill writes fail


def _key(policy: Policy, state: State) -> Key:
    pinned = sum(state.sizes[i] for i in state.pinned)
    pinned_messages = sum(state.messages[i] for i in state.pinned)
    removed = len(state.pinned) + len(state.verbatim) < len(state.sizes)
    sizes = tuple((state.sizes[i], state.messages[i]) for i in state.verbatim)
    return (len(state.pinned), pinned, pinned_messages, state.summary_tokens if state.summary else -1,
            removed, bool(state.unspilled), sizes)


Path = tuple["Path", Row] | None  # the appends to a state, newest last, as a linked list


def _unwind(path: Path) -> tuple[Row, ...]:
    out: list[Row] = []
    while path is not None:
        path, row = path
        out.append(row)
    return tuple(reversed(out))


def _rows(policy: Policy) -> list[Row]:
    lo, hi = policy.messages_per_turn
    fails = (False, True) if "proceed" in spill_modes(policy).values() else (False,)
    return [(size, count, f) for size in range(policy.turn_min, policy.turn_max + 1)
            for count in range(lo, hi + 1) for f in fails]


def explore(
    policy: Policy, max_states: int = 200_000, profile: Profile = DEFAULT_PROFILE
) -> Exploration:
    """Search every session breadth-first under ``profile``; ``unknown`` when ``max_states``
    runs out."""
    if inert(policy):
        return Exploration("safe", (), (), 1, notes=with_static(policy, "safe", ())[1])
    start = State()
    seen: set[Key] = {_key(policy, start)}
    queue: deque[tuple[State, Path]] = deque([(start, None)])
    rows = _rows(policy)
    while queue:
        state, trace = queue.popleft()
        for row in rows:
            nxt = state.copy()
            found = step(policy, nxt, row[0], profile=profile, messages=row[1], spill_fails=row[2])
            if found:
                findings, notes = with_static(policy, "unsafe", tuple(found))
                full = _unwind((trace, row))
                plain = all(r[1] == policy.messages_per_turn[0] for r in full)
                return Exploration("unsafe", findings, tuple(r[0] for r in full), len(seen),
                                   notes=notes, messages=() if plain else tuple(r[1] for r in full),
                                   failures=frozenset(k + 1 for k, r in enumerate(full) if r[2]))
            if nxt.halted:
                continue
            key = _key(policy, nxt)
            if key in seen:
                continue
            if len(seen) >= max_states:
                return Exploration("unknown", (), (), len(seen), f"state budget {max_states} exhausted",
                                   with_static(policy, "unknown", ())[1])
            seen.add(key)
            queue.append((nxt, (trace, row)))
    return Exploration("safe", (), (), len(seen), notes=with_static(policy, "safe", ())[1])
