"""Theorems about profile ``partitioned`` (brief sections 4b and 5, items 10 to 13).

``partitioned`` is ``strict`` without ``floor_in_input``: the profile for pipelines that show
the summarizer the candidates ``[a, t)`` and keep the tail ``[t, n)`` verbatim. T10 is T1 for
it (without the floor in the input), T11 says ``floor_in_input`` is the whole difference, T12
that both contract profiles only refuse more when the summarizer saw less, more was truncated
or less prior coverage survived, and T13 is a LangChain-shaped compaction only
``partitioned`` allows. Every proof here is for lists of any length (z3 arrays with a symbolic
length). T10 and T11 first settle the decision for bounded lists, which gives a broken spec
a concrete counterexample and the unbounded proof its vacuity guard, then prove any length
clause by clause, offset by offset: the direct unbounded query on whole decisions is fast in
a fresh process but can exhaust its rlimit after other theorems have run (z3's search
depends on term ids, which ``setup`` cannot reset).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from proofs._common import SetPred, carries, same_clause, setup, subset_implies, witness_replayed
from proofs.profile_strict import recoverable
from tailguard._generated.checker import Decision
from tailguard.backends.z3_encode import ArrayList, Encoder, FixedList, ZCase, case_from_model, symbolic_case
from tailguard.backends.z3_eval import find, prove
from tailguard.speclang import ast
from tailguard.speclang.load import Profile, Spec
from tailguard.tooling.theorems import Result, theorem

WITNESS_BOUND = 2  # intervals per list in witness searches and counterexamples: readable cases
CONTRACT_PROFILES = ("strict", "partitioned")


def _max(x: Any, y: Any) -> Any:
    return z3.If(x >= y, x, y)


def _first_failure(parts: list[tuple[str, Result]]) -> Result:
    for name, r in parts:
        if r.status != "proved":
            return Result(r.status, detail=f"{name}: {r.detail}", model=r.model)
    return Result("proved", detail=f"{len(parts)} parts proved: {', '.join(n for n, _ in parts)}")


def _floor_in(zc: ZCase, lo: Any, hi: Any) -> Any:
    """``Φ ⊆ [lo, hi)`` written out independently of the spec (x bound here)."""
    n, f = zc["n"], zc["F"]
    x = z3.Int("x")
    return z3.ForAll([x], z3.Implies(z3.And(_max(0, n - f) <= x, x < n), z3.And(lo <= x, x < hi)))


def _bounded(spec: Spec, build: Callable[[ZCase], tuple[Any, Any]], bound: int) -> Result:
    """``assumptions -> claim`` for at most ``bound`` intervals per list, with the vacuity guard;
    a counterexample comes back as a case in the JSON format."""
    zb = symbolic_case(spec, prefix="b.", bound=bound)
    claim, assumptions = build(zb)
    result, model = prove(claim, assumptions=z3.And(zb.side_conditions(), assumptions))
    if result.status != "proved":
        case = case_from_model(spec, zb, model) if model is not None else None
        return Result(result.status, detail=f"bound {bound}: {result.detail}", model=case)
    return Result("proved", detail=f"at most {bound} intervals per list")


def _is_subset_statement(holds: ast.Node, enc: Encoder, left: SetPred, right: SetPred, side: Any) -> Result:
    """The clause ``holds`` is ``left ⊆ right``: for ``L subset R``, its two sides are these
    sets offset by offset (which suffices); otherwise, or if not, the formulas directly."""
    x = z3.Int("x")
    if isinstance(holds, ast.Subset):
        pointwise = z3.And(enc.as_set(holds.left, {})(x) == left(x), enc.as_set(holds.right, {})(x) == right(x))
        result, _ = prove(pointwise, assumptions=side)
        if result.status == "proved":
            return Result("proved", detail="offset by offset")
    return prove(enc.expr(holds, {}) == z3.ForAll([x], z3.Implies(left(x), right(x))), assumptions=side)[0]


@theorem(
    "T10", "Partitioned allow means everything is recoverable and the floor is in the tail",
    "If partitioned allows, every offset of [0, n) is in prior coverage, a spill, the honest part of "
    "the new summary, or the untruncated tail, and the floor [max(0, n-F), n) is inside T = [t, n) "
    "(lists of any length).",
)
def partitioned_allow_is_recoverable(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    part = spec.profile("partitioned")

    def floor(zc: ZCase) -> SetPred:
        return lambda x: z3.And(_max(0, zc["n"] - zc["F"]) <= x, x < zc["n"])

    def build(zc: ZCase) -> tuple[Any, Any]:
        x = z3.Int("x")
        everything = z3.ForAll([x], z3.Implies(z3.And(x >= 0, x < zc["n"]), recoverable(zc, x)))
        return z3.And(everything, _floor_in(zc, zc["t"], zc["n"])), Encoder(spec, zc).allows(part)

    # on the decision for bounded lists: a broken spec gets a concrete case, and allow is
    # shown satisfiable (a bounded model is an unbounded one too: the proof is not vacuous)
    bounded = _bounded(spec, build, WITNESS_BOUND)
    if bounded.status != "proved":
        return bounded
    # any length: the decision is a conjunction holding no_hole and floor_in_tail, and each
    # implies its half of the claim offset by offset (the direct unbounded query is fast in a
    # fresh process and can exhaust its rlimit after other theorems: z3 depends on term ids)
    missing = [cid for cid in ("no_hole", "floor_in_tail") if cid not in {c.id for c in part.clauses}]
    if missing:
        return Result("unknown", detail=f"{bounded.detail}: proved; any length: no clause {', '.join(missing)}")
    zc = symbolic_case(spec)
    enc, n, side = Encoder(spec, zc), zc["n"], zc.side_conditions()
    parts = [
        ("no_hole gives [0, n) ⊆ recoverable", subset_implies(
            part.clause("no_hole").holds, enc, lambda x: z3.And(x >= 0, x < n), lambda x: recoverable(zc, x),
            assumptions=side)),
        ("floor_in_tail gives Φ ⊆ T", subset_implies(
            part.clause("floor_in_tail").holds, enc, floor(zc), lambda x: z3.And(zc["t"] <= x, x < n),
            assumptions=side)),
    ]
    r = _first_failure(parts)
    if r.status != "proved":
        return Result(r.status, detail=f"{bounded.detail}: proved; any length: {r.detail}")
    return Result("proved", detail=f"{bounded.detail} on the decision; any length: {r.detail}")


@theorem(
    "T11", "Strict is partitioned plus the floor in the input",
    "Strict allows exactly when partitioned allows and the floor [max(0, n-F), n) is inside I "
    "(lists of any length). Clause by clause, as section 4b defines it: each partitioned clause is "
    "the strict clause of the same id, listed in strict's order behind the same well_formed gate, "
    "every strict clause but floor_in_input is there, and floor_in_input is Φ ⊆ I; so partitioned "
    "allows exactly when every strict clause other than floor_in_input holds.",
)
def strict_is_partitioned_plus_floor_in_input(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    strict, part = spec.profile("strict"), spec.profile("partitioned")
    others = [c for c in strict.clauses if c.id != "floor_in_input"]

    def decision(zc: ZCase) -> tuple[Any, Any]:
        enc = Encoder(spec, zc)
        a, b = zc["I"]
        return enc.allows(strict) == z3.And(enc.allows(part), _floor_in(zc, a, b)), True

    def definition(zc: ZCase) -> tuple[Any, Any]:
        enc = Encoder(spec, zc)
        return enc.allows(part) == z3.And([enc.expr(c.holds, {}) for c in others]), True

    # on the decisions, for one interval per list (at 2 the equivalence of whole decisions takes
    # seconds; one already separates the clauses): a broken spec gets a concrete case here
    parts: list[tuple[str, Result]] = [
        ("partitioned ⇔ strict's clauses but floor_in_input", _bounded(spec, definition, 1)),
        ("strict ⇔ partitioned ∧ Φ ⊆ I", _bounded(spec, decision, 1)),
    ]
    # any length, clause by clause; the decisions follow, being the conjunctions of their clauses
    zc = symbolic_case(spec)
    enc, side = Encoder(spec, zc), zc.side_conditions()
    strict_ids = {c.id for c in strict.clauses}
    for c in part.clauses:
        if c.id == "floor_in_input" or c.id not in strict_ids:
            parts.append((f"clause {c.id}", Result("counterexample", detail="section 4b's partitioned has no such "
                                                   "clause")))
        else:
            parts.append((f"{c.id} is strict's", same_clause(c.holds, strict.clause(c.id).holds, enc,
                                                             assumptions=side)))
    (a, b), n, f = zc["I"], zc["n"], zc["F"]
    parts.append(("floor_in_input is Φ ⊆ I", _is_subset_statement(
        strict.clause("floor_in_input").holds, enc, lambda x: z3.And(_max(0, n - f) <= x, x < n),
        lambda x: z3.And(a <= x, x < b), side)))
    want, got = [c.id for c in others], [c.id for c in part.clauses]
    layout = (Result("proved") if (got, part.wellformed, part.report) == (want, strict.wellformed, strict.report)
              else Result("counterexample", detail=f"partitioned lists {got} (gate {part.wellformed!r}, report "
                          f"{part.report!r}); section 4b: {want} (gate {strict.wellformed!r}, "
                          f"report {strict.report!r})"))
    parts.append(("clause order and gate", layout))
    result = _first_failure(parts)
    if result.status != "proved":
        return result
    return Result("proved", detail=f"{result.detail}; so for any length both decisions are these "
                  "conjunctions of the same clauses")


#: One change to a case: (the changed case, what the change assumes), from the case.
Change = Callable[[ZCase, str], tuple[ZCase, Any]]


def _wf_pair(n: Any) -> Callable[[tuple[Any, Any]], Any]:
    return lambda p: z3.And(p[0] >= 0, p[0] <= p[1], p[1] <= n)


def _instance_at_x(subset_at: Callable[[Any], Any]) -> Any:
    """The subset hypothesis at the free offset ``x`` that :func:`proofs._common.carries`
    reasons about: implied by the quantified hypothesis (so adding it assumes nothing new),
    it spares the solver the instantiation (z3 finds it; cvc5's e-matching does not)."""
    return subset_at(z3.Int("x"))


def shrink_input(zc: ZCase, prefix: str) -> tuple[ZCase, Any]:
    """``I' ⊆ I`` as sets of offsets, ``I`` itself a well-formed interval (an ill-formed ``I``
    refuses with ``well_formed``, and an empty ``I'`` inside ``[0, n)`` need not)."""
    (a, b), n = zc["I"], zc["n"]
    a2, b2 = z3.Int(f"{prefix}I'.lo"), z3.Int(f"{prefix}I'.hi")
    x = z3.Int("x")
    subset = z3.ForAll([x], z3.Implies(z3.And(a2 <= x, x < b2), z3.And(a <= x, x < b)))
    instance = _instance_at_x(lambda v: z3.Implies(z3.And(a2 <= v, v < b2), z3.And(a <= v, v < b)))
    return zc.with_value("I", (a2, b2)), z3.And(subset, instance, a >= 0, a <= b, b <= n)


def add_truncation(zc: ZCase, prefix: str) -> tuple[ZCase, Any]:
    """One more prior truncation, any pair at all."""
    r = (z3.Int(f"{prefix}r.lo"), z3.Int(f"{prefix}r.hi"))
    return zc.with_value("TR", zc["TR"].plus(r)), z3.BoolVal(True)


def drop_coverage(zc: ZCase, prefix: str) -> tuple[ZCase, Any]:
    """Any ``PC'`` with ``∪PC' ⊆ ∪PC`` (a summary dropped from ``saw ∪ keeps``, or several, or
    lineage passed on less), ``PC``'s own pairs well-formed (as the ledger computes them: an
    ill-formed ``PC`` refuses with ``well_formed`` and a smaller list need not)."""
    pc = zc["PC"]
    pc2 = (ArrayList(f"{prefix}PC'") if isinstance(pc, ArrayList)
           else FixedList.symbolic(f"{prefix}PC'", len(pc.pairs)))
    y = z3.Int("y")
    subset = z3.ForAll([y], z3.Implies(pc2.mem(y), pc.mem(y)))
    return zc.with_value("PC", pc2), z3.And(pc2.wf(), pc.forall(_wf_pair(zc["n"])), subset,
                                            _instance_at_x(lambda v: z3.Implies(pc2.mem(v), pc.mem(v))))


CHANGES: dict[str, Change] = {
    "shrinking I": shrink_input,
    "adding a truncation": add_truncation,
    "dropping prior coverage": drop_coverage,
}


def _monotone(spec: Spec, profile: Profile, change: Change) -> Result:
    """Refuse before the change implies refuse after it: clause by clause (each clause that
    holds after held before), else on the decision (bounded, for a concrete counterexample,
    then unbounded)."""
    zc = symbolic_case(spec)
    changed, assumption = change(zc, "")
    enc, enc_ch = Encoder(spec, zc), Encoder(spec, changed)
    stuck = []
    for clause in profile.clauses:
        r = carries(clause.holds, given=enc_ch, then=enc, assumptions=z3.And(zc.side_conditions(), assumption))
        if r.status != "proved":
            stuck.append(clause.id)
    if not stuck:
        return Result("proved", detail="clause by clause")
    zb = symbolic_case(spec, prefix="b.", bound=WITNESS_BOUND)
    changed_b, assumption_b = change(zb, "b.")
    hyps = z3.And(zb.side_conditions(), changed_b.side_conditions(), assumption_b,
                  Encoder(spec, changed_b).allows(profile))
    r, model = prove(Encoder(spec, zb).allows(profile), assumptions=hyps)
    if r.status != "proved":
        cases = ({"before": case_from_model(spec, zb, model), "after": case_from_model(spec, changed_b, model)}
                 if model is not None else None)
        return Result(r.status, detail=f"clauses {', '.join(stuck)} not monotone; decision: {r.detail}",
                      model=cases)
    changed_u, assumption_u = changed, assumption
    r, _ = prove(enc.allows(profile), assumptions=z3.And(zc.side_conditions(), changed_u.side_conditions(),
                                                          assumption_u, enc_ch.allows(profile)), sanity=False)
    if r.status != "proved":
        return Result(r.status, detail=f"clauses {', '.join(stuck)} not monotone; decision proved at bound "
                      f"{WITNESS_BOUND}, unbounded: {r.detail}")
    return Result("proved", detail=f"on the decision (clauses {', '.join(stuck)} alone are not monotone)")


@theorem(
    "T12", "Seeing less, truncating more or keeping less coverage never allows more",
    "In strict and in partitioned, for lists of any length, none of these turns refuse into allow: "
    "shrinking the summarizer input (any I' ⊆ I as sets, I well-formed), adding a prior truncation "
    "(any pair), dropping prior coverage (any PC' with ∪PC' ⊆ ∪PC, PC well-formed: a summary dropped "
    "from saw ∪ keeps, section 4c).",
)
def monotone_in_input_truncations_and_coverage(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    parts: list[tuple[str, Result]] = []
    for pid in CONTRACT_PROFILES:
        for what, change in CHANGES.items():
            parts.append((f"{pid}/{what}", _monotone(spec, spec.profile(pid), change)))
    return _first_failure(parts)


@theorem(
    "T13", "Partitioned allows the compaction LangChain makes; strict refuses it",
    "Witness: a case with C = I = [a, t) (a < t: the candidates, summarized whole), F > 0 and the "
    "floor inside the tail, that partitioned allows while strict refuses it, failing floor_in_input "
    "only.",
    kind="witness",
)
def langchain_shape_partitioned_only(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    zc = symbolic_case(spec, bound=WITNESS_BOUND)
    enc = Encoder(spec, zc)
    (a, b), (c, d), n, t, f = zc["I"], zc["C"], zc["n"], zc["t"], zc["F"]
    phi_lo = _max(0, n - f)
    shape = z3.And(a == c, b == d, b == t, a < t, f > 0, z3.Or(phi_lo >= n, t <= phi_lo), n <= 100, f <= 100)
    # readable: no truncations or spills, prior coverage (an earlier summary) as non-empty ranges
    readable = z3.And(zc["TR"].length == 0, zc["SP"].length == 0, zc["PC"].forall(lambda r: r[0] < r[1]))
    formula = z3.And(zc.side_conditions(), shape, readable, enc.allows(spec.profile("partitioned")),
                     enc.fails_exactly(spec.profile("strict"), ["floor_in_input"]))
    result, model = find(formula)

    def expect(cases: dict[str, dict[str, Any]], dec: dict[str, dict[str, Decision]]) -> str | None:
        case, d = cases["case"], dec["case"]
        lo, hi = case["summary_input"]
        shaped = (case["summary_covers"] == [lo, hi] and hi == case["tail_start"] and lo < hi
                  and case["recovery_floor_span"] > 0)
        ok = shaped and d["partitioned"].allowed and d["strict"].failed == ("floor_in_input",)
        return None if ok else f"shape {shaped}, partitioned {d['partitioned']}, strict {d['strict']}"

    return witness_replayed(spec, result, model, {"case": zc}, expect)
