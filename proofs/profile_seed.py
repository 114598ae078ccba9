"""Theorems about profile ``seed`` alone (brief section 5, items 5 and 6)."""

from __future__ import annotations

import z3

from proofs._common import setup
from tailguard.backends.z3_encode import Encoder, symbolic_case
from tailguard.backends.z3_eval import prove
from tailguard.speclang.load import Spec
from tailguard.theorems import Result, theorem


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
