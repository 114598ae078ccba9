"""Theorems comparing profiles ``seed`` and ``strict`` (brief section 5, items 3, 4, 8, 9)."""

from __future__ import annotations

from typing import Any

import z3

from proofs._common import carries, setup, witness_replayed
from tailguard._generated.checker import Decision
from tailguard.backends.z3_encode import Encoder, case_from_model, symbolic_case
from tailguard.backends.z3_eval import find, prove
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import Result, theorem

WITNESS_BOUND = 2  # intervals per list in witness searches: small, readable cases


def _small(zc: Any) -> Any:
    """Keep witnesses readable: offsets in [0, 100]."""
    return z3.And(zc["n"] <= 100, zc["F"] <= 100)


@theorem(
    "T3", "The seed allows a compaction that loses history",
    "Witness: a case the seed profile allows while strict refuses it with a hole that a prior "
    "truncation made: an offset the truncation evicted that no summary saw (the seed's own "
    "incident, examples/cases/seed-incident.json, is one).",
    kind="witness",
)
def seed_allows_a_hole(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    zc = symbolic_case(spec, bound=WITNESS_BOUND)
    enc = Encoder(spec, zc)
    strict = spec.profile("strict")
    # the incident's shape: a real floor, no_hole the only strict failure, and the mechanism
    # SPEC.md cites: a hole offset inside a prior truncation
    x = z3.Int("hole")
    in_hole = z3.And(enc.holes(strict, "no_hole")(x), zc["TR"].mem(x))
    formula = z3.And(zc.side_conditions(), _small(zc), zc["F"] > 0, enc.allows(spec.profile("seed")),
                     enc.fails_exactly(strict, ["no_hole"]), in_hole)
    result, model = find(formula)

    def expect(cases: dict[str, dict[str, Any]], d: dict[str, dict[str, Decision]]) -> str | None:
        holes, truncations = d["case"]["strict"].holes, cases["case"]["prior_truncations"]
        evicted = any(max(lo, tlo) < min(hi, thi) for lo, hi in holes for tlo, thi in truncations)
        ok = d["case"]["seed"].allowed and d["case"]["strict"].failed == ("no_hole",) and evicted
        return None if ok else (f"seed {d['case']['seed']}, strict {d['case']['strict']}, "
                                f"a hole inside a truncation: {evicted}")

    return witness_replayed(spec, result, model, {"case": zc}, expect)


@theorem(
    "T4", "The seed refuses a healthy compaction",
    "Witness: a case strict allows (every offset recoverable, floor in input and tail) that the "
    "seed profile refuses.",
    kind="witness",
)
def seed_refuses_healthy(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    zc = symbolic_case(spec, bound=WITNESS_BOUND)
    enc = Encoder(spec, zc)
    formula = z3.And(zc.side_conditions(), _small(zc), zc["F"] > 0, zc["n"] > zc["F"],
                     enc.allows(spec.profile("strict")), z3.Not(enc.allows(spec.profile("seed"))))
    result, model = find(formula)

    def expect(_: Any, d: dict[str, dict[str, Decision]]) -> str | None:
        ok = d["case"]["strict"].allowed and not d["case"]["seed"].allowed
        return None if ok else f"seed {d['case']['seed']}, strict {d['case']['strict']}"

    return witness_replayed(spec, result, model, {"case": zc}, expect)


@theorem(
    "T8", "Only no_hole can be repaired by a spill, and spilling everything repairs it",
    "For every strict clause other than no_hole, adding any spill leaves it failing (lists of any "
    "length); a well-formed case whose only failure is no_hole is allowed after spilling [0, n).",
)
def spill_repairs_only_holes(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    strict = spec.profile("strict")
    zc = symbolic_case(spec)
    r = (z3.Int("r.lo"), z3.Int("r.hi"))
    enc = Encoder(spec, zc)
    enc_sp = Encoder(spec, zc.with_value("SP", zc["SP"].plus(r)))
    for clause in strict.clauses:
        if clause.id == "no_hole":
            continue
        # failing before the spill implies failing after it: holding after implies holding before
        res = carries(clause.holds, given=enc_sp, then=enc, assumptions=zc.side_conditions())
        if res.status != "proved":
            return Result(res.status, detail=f"spill repairs {clause.id}: {res.detail}")
    # non-vacuity from a bounded case (one of the unbounded ones): a case failing only no_hole
    zb = symbolic_case(spec, prefix="b.", bound=WITNESS_BOUND)
    exists, _ = find(z3.And(zb.side_conditions(), Encoder(spec, zb).fails_exactly(strict, ["no_hole"])))
    if exists.status != "witness":
        return Result("counterexample" if exists.status == "no-witness" else exists.status,
                      detail=f"vacuous: no case fails only no_hole ({exists.detail})")
    enc_all = Encoder(spec, zc.with_value("SP", zc["SP"].plus((z3.IntVal(0), zc["n"]))))
    res, _ = prove(enc_all.allows(strict),
                   assumptions=z3.And(zc.side_conditions(), enc.fails_exactly(strict, ["no_hole"])), sanity=False)
    if res.status != "proved":
        return Result(res.status, detail=f"spilling [0, n): {res.detail}")
    return Result("proved", detail="every other clause survives any spill; [0, n) repairs no_hole")


@theorem(
    "T8w", "After that spill the seed still refuses",
    "Witness: a case failing only strict no_hole that strict allows after spilling [0, n), while "
    "the seed profile refuses it both before and after the spill, after it by truncation_clear: "
    "the seed reads the truncation log, which no spill changes.",
    kind="witness",
)
def seed_refuses_after_spill(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    strict, seed = spec.profile("strict"), spec.profile("seed")
    zc = symbolic_case(spec, bound=WITNESS_BOUND)
    spilled = zc.with_value("SP", zc["SP"].plus((z3.IntVal(0), zc["n"])))
    enc, enc_sp = Encoder(spec, zc), Encoder(spec, spilled)
    by_truncation_log = z3.And(enc_sp.clause(seed, "units_agree"), enc_sp.clause(seed, "floor_reach"),
                               z3.Not(enc_sp.clause(seed, "truncation_clear")),
                               zc["TR"].forall(lambda r: r[0] < r[1]))  # real truncations, not empty ones
    formula = z3.And(zc.side_conditions(), _small(zc), zc["F"] > 0, enc.fails_exactly(strict, ["no_hole"]),
                     enc_sp.allows(strict), z3.Not(enc.allows(seed)), by_truncation_log)
    result, model = find(formula)

    def expect(_: Any, d: dict[str, dict[str, Decision]]) -> str | None:
        before, after = d["before"], d["after"]
        ok = (before["strict"].failed == ("no_hole",) and after["strict"].allowed
              and not before["seed"].allowed and after["seed"].failed == ("truncation_clear",))
        return None if ok else f"before {before}, after {after}"

    return witness_replayed(spec, result, model, {"before": zc, "after": spilled}, expect)


@theorem(
    "T9", "A unit mismatch always refuses, in both profiles",
    "For all cases (lists of any length), floor_unit != truncator_unit implies that neither the "
    "seed nor the strict profile allows.",
)
def unit_mismatch_refuses(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    # bounded first: a broken spec gets a concrete counterexample quickly (z3 rarely
    # builds models over arrays with quantifiers); then the unbounded proof
    for bound in (WITNESS_BOUND, None):
        zc = symbolic_case(spec, bound=bound)
        enc = Encoder(spec, zc)
        either_allows = z3.Or(enc.allows(spec.profile("seed")), enc.allows(spec.profile("strict")))
        result, model = prove(z3.Not(either_allows),
                              assumptions=z3.And(zc.side_conditions(), zc["floor_unit"] != zc["truncator_unit"]))
        if result.status != "proved":
            case = case_from_model(spec, zc, model) if model is not None else None
            return Result(result.status, detail=f"{'unbounded' if bound is None else f'bound {bound}'}: "
                          f"{result.detail}", model=case)
    return Result("proved", detail="for at most 2 intervals per list, then for any number")
