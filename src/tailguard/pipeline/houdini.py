"""Cheap invariant synthesis (Houdini): keep the candidate lemmas that are inductive.

Candidates are occupancy bounds drawn from the policy's own constants (each trigger
minus one, each limit, each post-compaction size), unconditional or guarded by
"no summary yet" / "summary present". The conjunction of the survivors is inductive
by construction; :func:`tailguard.pipeline.solver.check_certificate` re-checks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from tailguard.pipeline.encode import (
    PLAIN,
    AState,
    basic,
    encode_step,
    fresh_state,
    init_state,
    occupancy,
    shape_of,
)
from tailguard.pipeline.model import DEFAULT_PROFILE, Profile
from tailguard.pipeline.policy import Compact, Policy, Spill, Truncate

Lemma = Callable[[AState], Any]


def candidates(policy: Policy) -> list[Lemma]:
    """Occupancy bounds suggested by the policy's constants."""
    bounds: dict[str, set[int]] = {"turns": set(), "tokens": set()}
    messages = shape_of(policy).messages
    if messages:
        bounds["messages"] = set()
    mlo, mhi = policy.messages_per_turn
    if policy.window:
        bounds["tokens"].add(policy.window)
    for s in policy.stages:
        if isinstance(s, Truncate):
            bounds[s.unit].add(s.limit)
        elif isinstance(s, Compact):
            for clause in s.clauses:
                for trigger_unit, threshold in clause:
                    bounds[trigger_unit].add(threshold - 1)
            post = s.keep if s.keep_unit == "turns" else \
                s.keep // (policy.turn_min if s.keep_unit == "tokens" else mlo)
            # cut = "messages": one turn more (model.compact_tail)
            for extra in (0, 1) if s.cut == "messages" else (0,):
                bounds["turns"].add(policy.keep_first + post + extra)
                kept = s.keep if s.keep_unit == "tokens" else (post + extra) * policy.turn_max
                if s.keep_unit == "tokens":
                    kept = max(kept, policy.turn_max) if extra else kept
                pinned = policy.keep_first * policy.turn_max
                bounds["tokens"].add(policy.base_tokens + pinned + s.summary_tokens + kept)
                if messages:
                    kept_m = s.keep + extra * (mhi - 1) if s.keep_unit == "messages" \
                        else (post + extra) * mhi
                    bounds["messages"].add(policy.keep_first * mhi + 1 + kept_m)
            if s.keep_less_pinned:  # the pinned turns and the tail within keep, then the summary
                bounds["tokens"].add(s.keep + s.summary_tokens)
    out: list[Lemma] = []
    for unit, values in bounds.items():
        for value in sorted(values):
            for guard in ("always", "no summary", "summary"):
                out.append(_bound(policy, unit, value, guard))
    if shape_of(policy) != PLAIN or any(isinstance(s, Spill) for s in policy.stages):
        out += _verbatim_bounds(policy)  # spec 1.1 policies only: 1.0's candidates stay as they were
    return out


AT_LEAST_MAX = 24  # lower bounds on the tail's turns tried, at most (one lemma each)


def _verbatim_bounds(policy: Policy) -> list[Lemma]:
    """Bounds on the verbatim (unpinned) turns alone, from each compact stage's tail: the
    tokens ``S``, the turns ``L`` and (when tracked) the messages ``M`` a tail can hold,
    each with the newest turn's worth added (the state between an append and the stages)."""
    mlo, mhi = policy.messages_per_turn
    values: dict[str, set[int]] = {"S": set(), "L": set(), "M": set()}
    for s in policy.stages:
        if not isinstance(s, Compact):
            continue
        turns = s.keep if s.keep_unit == "turns" else \
            s.keep // (policy.turn_min if s.keep_unit == "tokens" else mlo)
        for extra in (0, 1) if s.cut == "messages" else (0,):  # model.compact_tail
            values["L"] |= {turns + extra, turns + extra + 1}
            tokens = s.keep if s.keep_unit == "tokens" else (turns + extra) * policy.turn_max
            if extra and s.keep_unit == "tokens":
                tokens = max(tokens, policy.turn_max)
            values["S"] |= {tokens, tokens + policy.turn_max}
            msgs = s.keep + extra * (mhi - 1) if s.keep_unit == "messages" else (turns + extra) * mhi
            values["M"] |= {msgs, msgs + mhi}
    out: list[Lemma] = []
    for name, vals in values.items():
        if name == "M" and not shape_of(policy).messages:
            continue
        for value in sorted(vals):
            out.append(_component(name, value))
    # once a summary exists, a tail of some turns stays (what a compaction of the earlier
    # summary alone, ``summary = "message"``, reads: its floor is the tail's)
    for value in range(1, min(max(values["L"], default=0), AT_LEAST_MAX) + 1):
        out.append(_component("L", value, at_least=True))
    # beyond AT_LEAST_MAX (real sizes): a tail's turns, and the floor in its own unit (a
    # lower bound on what stays verbatim once a summary exists: what keeps the floor)
    for value in sorted(values["L"]):
        if value > AT_LEAST_MAX:
            out.append(_component("L", value, at_least=True))
    floor_of = {"turns": "L", "tokens": "S", "messages": "M"}[policy.floor_unit]
    if policy.floor > 0 and (floor_of != "M" or shape_of(policy).messages) and \
            not (floor_of == "L" and policy.floor <= AT_LEAST_MAX):
        out.append(_component(floor_of, policy.floor, at_least=True))
    if shape_of(policy).unspilled:  # every compaction spilled: the summary holds nothing unspilled
        out.append(_component("U", 0))
    if shape_of(policy).clip:  # no clippable turn has left the window
        out.append(_component("G", 0))
    return out


def _component(name: str, value: int, at_least: bool = False) -> Lemma:
    """``name <= value``, or (``at_least``) ``name >= value`` once a summary exists."""

    def lemma(st: AState) -> Any:
        if at_least:
            return z3.Or(z3.Not(st.has_summary()), getattr(st, name) >= value)
        return getattr(st, name) <= value

    return lemma


def _bound(policy: Policy, unit: str, value: int, guard: str) -> Lemma:
    """``occupancy(unit) <= value``, optionally only without / with a summary."""

    def lemma(st: AState) -> Any:
        holds = occupancy(policy, st, unit) <= value
        if guard == "no summary":
            return z3.Or(st.has_summary(), holds)
        if guard == "summary":
            return z3.Or(z3.Not(st.has_summary()), holds)
        return holds

    return lemma


def houdini(
    policy: Policy, width: int, rlimit: int, rounds: int = 60, profile: Profile = DEFAULT_PROFILE
) -> Lemma | None:
    """The strongest conjunction of candidates that is inductive and excludes every
    finding, or ``None``."""
    shape = shape_of(policy)
    pool = [c for c in candidates(policy) if z3.is_true(z3.simplify(c(init_state(width, shape))))]
    st = fresh_state("h", width, shape)
    x = z3.Int("x")
    step = encode_step(policy, st, x, "hd", profile)
    base = z3.And(basic(policy, st), step.input_ok, step.clean)
    for _ in range(rounds):
        solver = z3.Solver()
        solver.set("rlimit", rlimit)
        solver.set("random_seed", 0)
        solver.add(base, *[c(st) for c in pool])
        solver.add(z3.Not(z3.And(*[c(step.nxt) for c in pool], z3.BoolVal(True))))
        result = solver.check()
        if result == z3.unsat:
            break
        if result != z3.sat:
            return None
        model = solver.model()
        keep = [c for c in pool if z3.is_true(model.eval(c(step.nxt), model_completion=True))]
        if len(keep) == len(pool):
            return None
        pool = keep
    else:
        return None
    solver = z3.Solver()
    solver.set("rlimit", rlimit)
    solver.set("random_seed", 0)
    solver.add(basic(policy, st), step.input_ok, *[c(st) for c in pool])
    solver.add(z3.Or(*[b for _, b in step.bad], z3.BoolVal(False)))
    if solver.check() != z3.unsat:
        return None
    final = list(pool)
    return lambda s: z3.And(*[c(s) for c in final], z3.BoolVal(True))
