"""z3 encoding of one append step over the window abstraction.

Abstract state: pinned turns so far ``p`` and their tokens ``P``; the size of the
summary in context ``sc`` (0 when none); the unpinned verbatim turns as a count
``L``, a token total ``S`` and the sizes of the newest ``W`` of them (``w[0]`` the
newest; slots past ``L`` hold 0). Along a clean run a truncate stage drops nothing
(dropping is a hole) and a compaction summarizes every candidate (a clipped one is a
hole), so the stages reduce to checks plus the tail computation. When ``W`` covers
every tail the encoding is exact; otherwise tails reaching past the window are
chosen by fresh variables within the bounds every real tail meets (a sound
over-approximation, used only to prove safety; counterexamples come from an exact
window). ``proofs/pipeline.py`` proves the reductions this relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from tailguard.pipeline.model import DEFAULT_PROFILE, Profile
from tailguard.pipeline.policy import Compact, Policy, Truncate

Z = Any  # z3 expressions are untyped


@dataclass(frozen=True)
class AState:
    """Abstract state as z3 terms."""

    p: Z
    P: Z
    sc: Z
    S: Z
    L: Z
    w: tuple[Z, ...]

    def flat(self) -> list[Z]:
        return [self.p, self.P, self.sc, self.S, self.L, *self.w]


def tokens_matter(policy: Policy) -> bool:
    """Whether any check ever reads a token count (else turn sizes are irrelevant)."""
    if policy.floor_unit == "tokens" or policy.window:
        return True
    for s in policy.stages:
        if isinstance(s, Truncate) and s.unit == "tokens":
            return True
        if isinstance(s, Compact) and (
            "tokens" in (s.trigger_unit, s.keep_unit) or s.input_limit > 0
        ):
            return True
    return False


def needed_window(policy: Policy) -> int:
    """Window that makes the encoding exact: every tail lies inside it (none is needed
    when no check reads a token count: then sizes never matter)."""
    if not tokens_matter(policy):
        return 0
    width = 1
    for s in policy.stages:
        if isinstance(s, Compact):
            width = max(width, s.keep if s.keep_unit == "turns" else s.keep // policy.turn_min + 1)
    return width


def fresh_state(prefix: str, width: int) -> AState:
    """Symbolic state with variables named ``prefix``."""
    ints = z3.Ints(" ".join(f"{prefix}_{n}" for n in ("p", "P", "sc", "S", "L")))
    w = tuple(z3.Int(f"{prefix}_w{i}") for i in range(width))
    return AState(ints[0], ints[1], ints[2], ints[3], ints[4], w)


def init_state(width: int) -> AState:
    """The empty session."""
    zero = z3.IntVal(0)
    return AState(zero, zero, zero, zero, zero, tuple(zero for _ in range(width)))


def basic(policy: Policy, st: AState) -> Z:
    """Facts every reachable state meets (proved inductive per policy by the solver)."""
    lo, hi, width = policy.turn_min, policy.turn_max, len(st.w)
    facts = [
        st.p >= 0, st.p <= policy.keep_first, st.p * lo <= st.P, st.p * hi >= st.P,
        z3.Or(st.sc == 0, *[st.sc == s.summary_tokens for s in policy.stages
                              if isinstance(s, Compact)]),
        st.L >= 0, z3.Implies(st.p < policy.keep_first, z3.And(st.L == 0, st.sc == 0)),
    ]
    for i, wi in enumerate(st.w):
        facts.append(z3.If(i < st.L, z3.And(wi >= lo, wi <= hi), wi == 0))
    m = z3.If(width > st.L, st.L, width)
    rest = st.S - z3.Sum([*st.w, z3.IntVal(0)])
    facts += [rest >= (st.L - m) * lo, rest <= (st.L - m) * hi]
    return z3.And(*facts)


@dataclass
class Step:
    """One encoded append: the next state, the clean condition, per-stage bad conditions."""

    nxt: AState
    clean: Z
    bad: list[tuple[int, Z]]
    inputs: list[Z]
    input_ok: Z


def occupancy(policy: Policy, st: AState, unit: str) -> Z:
    """Occupancy in ``unit`` (brief section 6)."""
    if unit == "turns":
        return st.p + st.L
    return policy.base_tokens + st.sc + st.P + st.S


def floor_lost(tail_turns: Z, tail_tokens: Z, floor: Z, unit: str) -> Z:
    """At a clean compaction that summarizes at least one turn, the floor is violated
    iff the tail is shorter than the floor (proved: ``proofs/pipeline.py`` P1, P2)."""
    return tail_turns < floor if unit == "turns" else tail_tokens < floor


def floor_unshown(policy: Policy, stage: Compact, profile: Profile) -> bool:
    """Whether, under ``profile``, every clean compaction that summarizes at least one turn
    is a floor loss because of the summarizer's input (then the loss is just ``fire``).
    Only ``strict`` asks for the floor in the input. With ``input = "all"`` the input is the
    candidates (all seen: else a hole) and the tail, which holds the floor (else
    ``floor_lost``): nothing to add. With ``"candidates"`` the newest turn is in the floor
    whenever ``F > 0``, and it is either in the tail (not shown to the summarizer) or a
    candidate (not in the context: ``floor_lost``): every such compaction is a loss."""
    return profile == "strict" and stage.input == "candidates" and policy.floor > 0


def encode_step(
    policy: Policy, st: AState, x: Z, tag: str, profile: Profile = DEFAULT_PROFILE
) -> Step:
    """Encode append of ``x`` then every stage under ``profile``; ``tag`` names fresh
    variables."""
    width = len(st.w)
    lo, hi = policy.turn_min, policy.turn_max
    pin = st.p < policy.keep_first
    shifted = (x, *st.w[: width - 1]) if width else ()
    cur = AState(
        z3.If(pin, st.p + 1, st.p), z3.If(pin, st.P + x, st.P), st.sc,
        z3.If(pin, st.S, st.S + x), z3.If(pin, st.L, st.L + 1),
        tuple(z3.If(pin, a, b) for a, b in zip(st.w, shifted, strict=True)),
    )
    inputs: list[Z] = [x]
    input_ok = [x >= lo, x <= hi]
    conds: list[Z] = []
    bad: list[tuple[int, Z]] = []
    for i, stage in enumerate(policy.stages):
        if isinstance(stage, Truncate):
            over = occupancy(policy, cur, stage.unit) > stage.limit
            bad.append((i, z3.And(*conds, over)))
            conds.append(z3.Not(over))
            continue
        kt, total, extra, ok = _tail(policy, stage, cur, f"{tag}_{i}")
        inputs += extra
        input_ok += ok
        fire = z3.And(occupancy(policy, cur, stage.trigger_unit) >= stage.trigger, kt < cur.L)
        loss = floor_lost(kt, total, policy.floor, policy.floor_unit)
        if floor_unshown(policy, stage, profile):
            loss = z3.BoolVal(True)
        if stage.input_limit > 0:
            loss = z3.Or(loss, cur.S - total > stage.input_limit)
        bad.append((i, z3.And(*conds, fire, loss)))
        conds.append(z3.Not(z3.And(fire, loss)))
        cur = AState(
            cur.p, cur.P, z3.If(fire, stage.summary_tokens, cur.sc), z3.If(fire, total, cur.S),
            z3.If(fire, kt, cur.L),
            tuple(z3.If(z3.And(fire, j >= kt), 0, wj) for j, wj in enumerate(cur.w)),
        )
    if policy.window:  # spec 1.1: over the window after the stages is an overflow
        over = occupancy(policy, cur, "tokens") > policy.window
        bad.append((len(policy.stages), z3.And(*conds, over)))
        conds.append(z3.Not(over))
    return Step(cur, z3.And(*conds), bad, inputs, z3.And(*input_ok))


def _tail(policy: Policy, stage: Compact, st: AState, tag: str) -> tuple[Z, Z, list[Z], list[Z]]:
    """Tail length and tokens; fresh variables when the tail may reach past the window."""
    width, lo, hi = len(st.w), policy.turn_min, policy.turn_max
    prefix = [z3.IntVal(0)]
    for wi in st.w:
        prefix.append(prefix[-1] + wi)
    if stage.keep_unit == "turns":
        kt = z3.If(stage.keep > st.L, st.L, stage.keep)
        inside = z3.Sum([z3.If(j < kt, wj, 0) for j, wj in enumerate(st.w)] + [z3.IntVal(0)])
        if stage.keep <= width:
            return kt, inside, [], []
        e = z3.Int(f"{tag}_e")
        beyond = kt - width
        ok = z3.Implies(kt > width, z3.And(e >= beyond * lo, e <= beyond * hi, e <= st.S - inside))
        return kt, z3.If(kt > width, inside + e, inside), [e], [ok]
    fits = z3.Sum([z3.If(z3.And(j <= st.L, prefix[j] <= stage.keep), 1, 0)
                   for j in range(1, width + 1)] + [z3.IntVal(0)])
    inside = z3.Sum([z3.If(j < fits, wj, 0) for j, wj in enumerate(st.w)] + [z3.IntVal(0)])
    if width * lo > stage.keep:
        return fits, inside, [], []
    k2, t2 = z3.Int(f"{tag}_k"), z3.Int(f"{tag}_t")
    open_ = z3.And(fits == width, width < st.L)
    more = k2 - width
    ok = z3.Implies(open_, z3.And(
        k2 >= width, k2 <= st.L, t2 - inside >= more * lo, t2 - inside <= more * hi,
        t2 <= stage.keep, t2 <= st.S, (st.S - t2) >= (st.L - k2) * lo,
        (st.S - t2) <= (st.L - k2) * hi,
        z3.Implies(k2 == st.L, t2 == st.S), z3.Implies(k2 < st.L, t2 >= stage.keep - hi + 1),
    ))
    return z3.If(open_, k2, fits), z3.If(open_, t2, inside), [k2, t2], [ok]
