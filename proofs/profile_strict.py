"""Theorems about profile ``strict`` alone (brief section 5, items 1, 2 and 7), for lists of any length."""

from __future__ import annotations

from typing import Any

import z3

from proofs._common import carries, setup, subset_instances
from tailguard.backends.z3_encode import Encoder, ZCase, symbolic_case
from tailguard.backends.z3_eval import prove
from tailguard.speclang import ast
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import Result, theorem

#: Intervals per list of the first, bounded pass of T1 (counterexamples and non-vacuity).
COUNTEREXAMPLE_BOUND = 3


def _merge(results: list[tuple[str, Result]]) -> Result:
    for name, r in results:
        if r.status != "proved":
            return Result(r.status, detail=f"{name}: {r.detail}", model=r.model)
    return Result("proved", detail=f"{len(results)} parts proved: {', '.join(n for n, _ in results)}")


def _max(x: Any, y: Any) -> Any:
    return z3.If(x >= y, x, y)


def _min(x: Any, y: Any) -> Any:
    return z3.If(x <= y, x, y)


def recoverable(zc: ZCase, x: Any) -> Any:
    """Brief section 4's recovery sources for offset x, written out independently of the spec."""
    (a, b), (c, d) = zc["I"], zc["C"]
    truncated = zc["TR"].mem(x)
    return z3.Or(
        zc["PC"].mem(x), zc["SP"].mem(x),
        z3.And(c <= x, x < d, a <= x, x < b, z3.Not(truncated)),
        z3.And(zc["t"] <= x, x < zc["n"], z3.Not(truncated)),
    )


@theorem(
    "T1", "Strict allow means everything is recoverable and the floor is in input and tail",
    "If strict allows, every offset of [0, n) is in prior coverage, a spill, the honest part of "
    "the new summary, or the untruncated tail, and the floor [max(0, n-F), n) is inside I ∩ T "
    "(lists of any length).",
)
def strict_allow_is_recoverable(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    # First at COUNTEREXAMPLE_BOUND intervals per list, where z3 builds models readily: a
    # broken spec gets a concrete counterexample, and a model of the assumptions shows they are
    # satisfiable, for the unbounded lists too (a bounded case is one of them). Then unbounded.
    strict = spec.profile("strict")
    for bound in (COUNTEREXAMPLE_BOUND, None):
        zc = symbolic_case(spec, bound=bound)
        enc = Encoder(spec, zc)
        n, t, f = zc["n"], zc["t"], zc["F"]
        a, b = zc["I"]
        # for a free offset x, so for every offset: quantifier-free in x
        x = z3.Int("x")
        everything = z3.Implies(z3.And(x >= 0, x < n), recoverable(zc, x))
        floor = z3.Implies(z3.And(_max(0, n - f) <= x, x < n), z3.And(a <= x, x < b, t <= x, x < n))
        result, _ = prove(z3.And(everything, floor),
                          assumptions=z3.And(zc.side_conditions(), enc.allows(strict),
                                             subset_instances(enc, strict, x)),
                          sanity=bound is not None)
        if result.status != "proved":
            where = "unbounded" if bound is None else f"at most {bound} intervals per list"
            return Result(result.status, detail=f"{where}: {result.detail}")
    return Result("proved", detail=f"at most {COUNTEREXAMPLE_BOUND} intervals per list, then any number")


def endpoint_forms(zc: ZCase, units: int) -> dict[str, Any]:
    """Each strict clause as the runtime evaluates it: comparisons of interval endpoints."""
    n, t, f = zc["n"], zc["t"], zc["F"]
    (a, b), (c, d) = zc["I"], zc["C"]
    fu, tu = zc["floor_unit"], zc["truncator_unit"]
    tr = zc["TR"]
    phi_lo = _max(0, n - f)

    def disjoint(lo1: Any, hi1: Any, lo2: Any, hi2: Any) -> Any:
        return _max(lo1, lo2) >= _min(hi1, hi2)

    def wf_pair(p: tuple[Any, Any]) -> Any:
        return z3.And(p[0] >= 0, p[0] <= p[1], p[1] <= n)

    def known(u: Any) -> Any:
        return z3.And(u >= 0, u < units)

    return {
        "well_formed": z3.And(
            n >= 0, f >= 0, t >= 0, t <= n, wf_pair(zc["I"]), wf_pair(zc["C"]),
            tr.forall(wf_pair), zc["PC"].forall(wf_pair), zc["SP"].forall(wf_pair), known(fu), known(tu),
        ),
        "units_agree": fu == tu,
        "floor_in_input": z3.Or(phi_lo >= n, z3.And(a <= phi_lo, n <= b)),
        "floor_in_tail": z3.Or(phi_lo >= n, t <= phi_lo),
        "tail_intact": tr.forall(lambda r: disjoint(r[0], r[1], t, n)),
        "seam_contiguous": z3.Or(t == 0, d >= t),
        "summary_honest": z3.Or(c >= d, z3.And(a <= c, d <= b, tr.forall(lambda r: disjoint(r[0], r[1], c, d)))),
    }


def _covered(zc: ZCase, x: Any) -> Any:
    return recoverable(zc, x)


def hole_start_candidate(zc: ZCase, p: Any) -> Any:
    """Where a hole can start: 0, the end of a prior coverage or spill, the end of C ∩ I, or the
    start of a truncation (lists of any length)."""
    (_, b), (_, d) = zc["I"], zc["C"]
    return z3.Or(p == 0, p == _min(b, d), zc["PC"].exists(lambda r: r[1] == p),
                 zc["SP"].exists(lambda r: r[1] == p), zc["TR"].exists(lambda r: r[0] == p))


def no_hole_endpoint(zc: ZCase) -> Any:
    """no_hole as the endpoint algorithm decides it: every candidate start inside [0, n) is covered."""
    p = z3.Int("p")
    n = zc["n"]
    return z3.ForAll([p], z3.Implies(z3.And(hole_start_candidate(zc, p), p >= 0, p < n), _covered(zc, p)))


@theorem(
    "T2", "The endpoint algorithm is the per-offset definition",
    "Every strict clause evaluated on interval endpoints (as the runtime does) equals its "
    "per-offset definition in spec/clauses.toml; no_hole holds iff no candidate start point "
    "(0, an end of prior coverage, spill or C ∩ I, a start of a truncation) is uncovered, and the "
    "holes the spec defines are exactly the uncovered offsets (lists of any length; for no_hole, "
    "the least uncovered offset is a candidate: one least-element step).",
)
def endpoint_equals_per_offset(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    strict = spec.profile("strict")
    parts: list[tuple[str, Result]] = []
    zc = symbolic_case(spec)  # unbounded arrays
    enc = Encoder(spec, zc)
    for cid, form in endpoint_forms(zc, len(spec.units)).items():
        parts.append((cid, prove(enc.clause(strict, cid) == form, assumptions=zc.side_conditions())[0]))
    n = zc["n"]
    x, m = z3.Int("x"), z3.Int("m")
    uncovered = z3.And(x >= 0, x < n, z3.Not(_covered(zc, x)))
    # endpoint -> per-offset. If some offset is uncovered, the least one, m, exists (the
    # integers of [0, n) are well-ordered) and is uncovered while m - 1 is covered or m = 0:
    # the step proved here shows such an m is a candidate, so the endpoint form fails too.
    least = z3.And(m >= 0, m < n, z3.Not(_covered(zc, m)), z3.Or(m == 0, _covered(zc, m - 1)))
    parts.append(("no_hole: the least uncovered offset is a candidate", prove(
        hole_start_candidate(zc, m), assumptions=z3.And(zc.side_conditions(), least))[0]))
    # per-offset -> endpoint: a candidate inside [0, n) is an offset of [0, n)
    every = z3.ForAll([x], z3.Implies(z3.And(x >= 0, x < n), _covered(zc, x)))
    parts.append(("no_hole: per-offset -> endpoint", prove(
        no_hole_endpoint(zc), assumptions=z3.And(zc.side_conditions(), every))[0]))
    # the spec's clause is `L subset R`: L is [0, n) and R is exactly the recovery sources,
    # offset by offset (x is free, so each is proved for every x)
    clause = strict.clause("no_hole").holds
    assert isinstance(clause, ast.Subset)
    left, right = enc.as_set(clause.left, {}), enc.as_set(clause.right, {})
    parts.append(("no_hole: left side is [0, n)", prove(left(x) == z3.And(x >= 0, x < n),
                                                       assumptions=zc.side_conditions())[0]))
    parts.append(("no_hole: right side is the recovery sources", prove(
        right(x) == _covered(zc, x), assumptions=zc.side_conditions())[0]))
    holes = enc.holes(strict, "no_hole")
    parts.append(("holes", prove(holes(x) == uncovered, assumptions=zc.side_conditions())[0]))
    return _merge(parts)


@theorem(
    "T7", "More truncations never allow more; a well-formed spill never refuses more",
    "Adding one prior truncation never turns strict refuse into allow (lists of any length); "
    "adding one well-formed spill never turns strict allow into refuse.",
)
def monotone_in_truncations_and_spills(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    strict = spec.profile("strict")
    zc = symbolic_case(spec)
    r = (z3.Int("r.lo"), z3.Int("r.hi"))
    parts: list[tuple[str, Result]] = []
    enc = Encoder(spec, zc)
    enc_tr = Encoder(spec, zc.with_value("TR", zc["TR"].plus(r)))
    enc_sp = Encoder(spec, zc.with_value("SP", zc["SP"].plus(r)))
    wf_spill = z3.And(r[0] >= 0, r[0] <= r[1], r[1] <= zc["n"])
    # clause by clause: each is antitone in TR and monotone in SP, hence so is the decision
    for clause in strict.clauses:
        parts.append((f"truncation/{clause.id}", carries(
            clause.holds, given=enc_tr, then=enc, assumptions=zc.side_conditions())))
        parts.append((f"spill/{clause.id}", carries(
            clause.holds, given=enc, then=enc_sp, assumptions=z3.And(zc.side_conditions(), wf_spill))))
    return _merge(parts)
