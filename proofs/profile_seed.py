"""Theorems about profile ``seed`` alone (brief section 5, items 5 and 6)."""

from __future__ import annotations

from typing import Any

import z3

from proofs._common import setup
from tailguard.backends.z3_encode import Encoder, ZCase, case_from_model, symbolic_case
from tailguard.backends.z3_eval import prove
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import Result, theorem


@theorem(
    "T5", "The seed's prose boundary is its code's check",
    "For all integers, the prose rule `summary_input_start > tail_start - recovery_floor_span` "
    "holds exactly when the seed profile's floor_reach clause fails.",
)
def prose_boundary_is_code(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    zc = symbolic_case(spec)
    enc = Encoder(spec, zc)
    a, t, f = zc["I"][0], zc["t"], zc["F"]
    prose_refuses = a > t - f
    code_refuses = z3.Not(enc.clause(spec.profile("seed"), "floor_reach"))
    return prove(prose_refuses == code_refuses)[0]


@theorem(
    "T6", "Under the seed's code, its stated invariant is unsatisfiable",
    "With the seed code's floor [t - F, t) and tail [t, n), floor and tail are disjoint, so "
    "`recovery_floor ⊆ summarizer_input ∩ retained_tail` is false for every F > 0.",
)
def seed_floor_misses_tail(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    zc = symbolic_case(spec)
    n, t, f = zc["n"], zc["t"], zc["F"]
    a, b = zc["I"]
    x = z3.Int("x")
    in_floor = z3.And(t - f <= x, x < t)
    invariant = z3.ForAll([x], z3.Implies(in_floor, z3.And(a <= x, x < b, t <= x, x < n)))
    # disjointness itself, and the consequence for the invariant
    y = z3.Int("y")
    disjoint = z3.ForAll([y], z3.Not(z3.And(t - f <= y, y < t, t <= y, y < n)))
    return prove(z3.And(disjoint, z3.Not(invariant)), assumptions=f > 0)[0]


#: The seed's checks in the order its code raises them (seed/unrecoverable-tail-invariant.md,
#: src/tailguard/oracles/seed_transcribed.py), each as the literal condition under which it raises.
def _transcription(zc: ZCase) -> list[tuple[str, Any]]:
    fu, tu, a, t, f = zc["floor_unit"], zc["truncator_unit"], zc["I"][0], zc["t"], zc["F"]
    floor_start = t - f  # floor_start = tail_start - recovery_floor_span
    return [
        ("units_agree", fu != tu),  # if floor_unit != truncator_unit: raise
        ("floor_reach", a > floor_start),  # if summary_input_start > floor_start: raise
        # for (lo, hi) in prior_truncations: if hi > floor_start and lo < tail_start: raise
        ("truncation_clear", zc["TR"].exists(lambda r: z3.And(r[1] > floor_start, r[0] < t))),
    ]


@theorem(
    "T15", "The seed profile is the seed's code, check for check",
    "For all integers and truncation lists of any length, the seed profile fails first at "
    "clause k exactly when the literal transcription of the seed's assert_compaction_safe raises "
    "at its k-th check (unit mismatch, floor reach, truncation overlap), and allows exactly when "
    "it returns; the profile reports the first failure only, as the code raises at the first.",
)
def seed_profile_is_seed_code(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    seed = spec.profile("seed")
    zc = symbolic_case(spec)
    checks = _transcription(zc)
    order = [cid for cid, _ in checks]
    if seed.report != "first" or seed.wellformed:
        return Result("counterexample", detail=f"seed reports {seed.report!r} with gate {seed.wellformed!r}: "
                      "the code raises at its first failing check and validates nothing")
    if [c.id for c in seed.clauses] != order:
        return Result("counterexample", detail=f"seed clauses {[c.id for c in seed.clauses]}, code order {order}")
    enc = Encoder(spec, zc)
    clause_fails = [z3.Not(enc.clause(seed, cid)) for cid in order]
    raises = [cond for _, cond in checks]
    for k, cid in enumerate(order):
        spec_first = z3.And(*[z3.Not(c) for c in clause_fails[:k]], clause_fails[k])
        code_first = z3.And(*[z3.Not(c) for c in raises[:k]], raises[k])
        r, model = prove(spec_first == code_first, assumptions=zc.side_conditions())
        if r.status != "proved":
            case = case_from_model(spec, zc, model) if model is not None else None
            return Result(r.status, detail=f"first failure {cid}: {r.detail}", model=case)
    r, _ = prove(enc.allows(seed) == z3.Not(z3.Or(raises)), assumptions=zc.side_conditions())
    if r.status != "proved":
        return Result(r.status, detail=f"allow: {r.detail}")
    return Result("proved", detail="each first failure and the allow, for any length")
