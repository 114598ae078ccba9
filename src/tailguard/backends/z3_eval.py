"""Run z3 queries with reproducible budgets, and evaluate the encoding on a concrete case."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import z3

from tailguard._generated.checker import Decision
from tailguard.backends.z3_encode import Encoder, concrete_case
from tailguard.speclang.load import Spec
from tailguard.theorems import DEFAULT_RLIMIT, Result


def _solver(rlimit: int) -> Any:
    s = z3.Solver()
    s.set("rlimit", rlimit)
    return s


def prove(claim: Any, *, assumptions: Any = True, rlimit: int = DEFAULT_RLIMIT,
          sanity: bool = True) -> tuple[Result, Any]:
    """Prove ``assumptions -> claim`` by refuting ``assumptions and not claim``.

    With ``sanity`` the assumptions alone must be satisfiable, so that the proof cannot
    hold vacuously. Returns the result and, on a counterexample, the model.
    """
    if sanity:
        s = _solver(rlimit)
        s.add(assumptions)
        r = s.check()
        if r == z3.unsat:
            return Result("counterexample", detail="vacuous: the assumptions are unsatisfiable"), None
        if r == z3.unknown:
            return Result("unknown", detail=f"sanity check: {s.reason_unknown()} (rlimit {rlimit})"), None
    s = _solver(rlimit)
    s.add(assumptions, z3.Not(claim))
    r = s.check()
    if r == z3.unsat:
        return Result("proved"), None
    if r == z3.sat:
        return Result("counterexample", detail="the negation is satisfiable"), s.model()
    return Result("unknown", detail=f"{s.reason_unknown()} (rlimit {rlimit})"), None


def find(formula: Any, *, rlimit: int = DEFAULT_RLIMIT) -> tuple[Result, Any]:
    """Search for a witness of ``formula``."""
    s = _solver(rlimit)
    s.add(formula)
    r = s.check()
    if r == z3.sat:
        return Result("witness"), s.model()
    if r == z3.unsat:
        return Result("no-witness", detail="unsat: no such case exists"), None
    return Result("unknown", detail=f"{s.reason_unknown()} (rlimit {rlimit})"), None


def holds_on(formula: Any, rlimit: int = DEFAULT_RLIMIT) -> bool:
    """Decide a closed formula (a clause on a concrete case)."""
    s = _solver(rlimit)
    s.add(z3.Not(formula))
    r = s.check()
    if r == z3.unknown:
        raise RuntimeError(f"z3 could not decide a concrete clause: {s.reason_unknown()}")
    return bool(r == z3.unsat)


def z3_decide(spec: Spec, profile_id: str, fields: Mapping[str, Any]) -> Decision:
    """The profile's decision computed from the z3 encoding of the spec on one concrete case.

    Clauses are decided by the solver; holes by evaluating the holes predicate at every
    offset of ``[0, n)`` (so keep ``n`` small).
    """
    profile = spec.profile(profile_id)
    enc = Encoder(spec, concrete_case(spec, fields))
    failed: list[str] = []
    holes: tuple[tuple[int, int], ...] = ()
    for clause in profile.clauses:
        if holds_on(enc.clause(profile, clause.id)):
            continue
        failed.append(clause.id)
        if clause.id == profile.wellformed or profile.report == "first":
            break
        if clause.holes is not None:
            pred = enc.holes(profile, clause.id)
            points = [x for x in range(int(fields["history_end"]))
                      if z3.is_true(z3.simplify(pred(z3.IntVal(x))))]
            runs: list[tuple[int, int]] = []
            for x in points:
                if runs and runs[-1][1] == x:
                    runs[-1] = (runs[-1][0], x + 1)
                else:
                    runs.append((x, x + 1))
            holes = tuple(runs)
    return Decision("refuse" if failed else "allow", tuple(failed), holes)
