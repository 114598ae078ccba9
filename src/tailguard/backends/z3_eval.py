"""Run the theorems' queries with reproducible budgets, by z3, cvc5 or both (they must agree),
and evaluate the encoding on a concrete case."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal

import z3

from tailguard._generated.checker import Decision
from tailguard.backends.z3_encode import Encoder, concrete_case
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import DEFAULT_RLIMIT, Result, Status, charge

Solvers = Literal["z3", "cvc5", "both"]
SOLVERS: tuple[Solvers, ...] = ("z3", "cvc5", "both")


@dataclass
class Settings:
    """Which solver decides the theorems' queries, and their budgets (``tailguard prove``)."""

    solver: Solvers = "z3"
    rlimit: int = DEFAULT_RLIMIT
    cvc5_rlimit: int | None = None  # None: cvc5_check.DEFAULT_CVC5_RLIMIT
    #: decide each query in a z3 context of its own (its terms translated there), so that its
    #: answer does not depend on what this process built before it (z3's search follows term ids)
    isolate: bool = False


SETTINGS = Settings()


@contextmanager
def solver_settings(*, solver: Solvers | None = None, rlimit: int | None = None,
                    cvc5_rlimit: int | None = None, isolate: bool | None = None) -> Iterator[Settings]:
    """Run the enclosed queries with another solver, budget or isolation, then restore the settings."""
    saved = replace(SETTINGS)
    if isolate is not None:
        SETTINGS.isolate = isolate
    if solver is not None:
        SETTINGS.solver = solver
    if rlimit is not None:
        SETTINGS.rlimit = rlimit
    if cvc5_rlimit is not None:
        SETTINGS.cvc5_rlimit = cvc5_rlimit
    try:
        yield SETTINGS
    finally:
        SETTINGS.solver, SETTINGS.rlimit, SETTINGS.cvc5_rlimit = saved.solver, saved.rlimit, saved.cvc5_rlimit
        SETTINGS.isolate = saved.isolate


def _solver(rlimit: int, ctx: Any = None) -> Any:
    s = z3.Solver(ctx=ctx)
    s.set("rlimit", rlimit)
    return s


def isolated(assertions: list[Any]) -> list[Any]:
    """``assertions`` translated into a new z3 context: the same formulas, numbered afresh."""
    ctx = z3.Context()
    return [z3.BoolVal(a, ctx) if isinstance(a, bool) else a.translate(ctx) for a in assertions]


def _z3(assertions: list[Any], rlimit: int) -> tuple[str, Any, str]:
    start = time.perf_counter()
    if SETTINGS.isolate:
        assertions = isolated(assertions)
    s = _solver(rlimit, assertions[0].ctx if assertions and z3.is_expr(assertions[0]) else None)
    s.add(*assertions)
    r = s.check()
    charge("z3", time.perf_counter() - start)
    if r == z3.sat:
        return "sat", s.model(), ""
    if r == z3.unsat:
        return "unsat", None, ""
    return "unknown", None, f"z3: {s.reason_unknown()} (rlimit {rlimit})"


def _cvc5(assertions: list[Any]) -> tuple[str, str]:
    from tailguard.backends import cvc5_check

    start = time.perf_counter()
    if SETTINGS.isolate:
        assertions = isolated(assertions)
    try:
        answer = cvc5_check.decide(assertions, **({"rlimit": SETTINGS.cvc5_rlimit} if SETTINGS.cvc5_rlimit else {}))
    finally:
        charge("cvc5", time.perf_counter() - start)
    return answer.status, (f"cvc5: {answer.reason}" if answer.status == "unknown" else "")


def check_sat(assertions: list[Any], *, rlimit: int | None = None, want_model: bool = True) -> tuple[str, Any, str]:
    """Satisfiability of ``assertions`` by the configured solver(s).

    Returns ``(answer, model, detail)``, answer ``sat``, ``unsat``, ``unknown`` or
    ``disagreement`` (``both``, or cvc5's ``sat`` not confirmed by z3 when a model is
    needed: models are always z3's). ``unknown`` from either solver is ``unknown``.
    """
    budget = rlimit if rlimit is not None else SETTINGS.rlimit
    solver = SETTINGS.solver
    if solver == "z3":
        return _z3(assertions, budget)
    cvc5_answer, cvc5_detail = _cvc5(assertions)
    if solver == "cvc5" and (cvc5_answer != "sat" or not want_model):
        return cvc5_answer, None, cvc5_detail
    z3_answer, model, z3_detail = _z3(assertions, budget)
    if "unknown" in (z3_answer, cvc5_answer):
        return "unknown", None, "; ".join(d for d in (z3_detail, cvc5_detail) if d)
    if z3_answer != cvc5_answer:
        return "disagreement", None, f"z3 says {z3_answer}, cvc5 says {cvc5_answer}"
    return z3_answer, model, ""


def prove(claim: Any, *, assumptions: Any = True, rlimit: int | None = None,
          sanity: bool = True) -> tuple[Result, Any]:
    """Prove ``assumptions -> claim`` by refuting ``assumptions and not claim``.

    With ``sanity`` the assumptions alone must be satisfiable, so that the proof cannot
    hold vacuously. Returns the result and, on a counterexample, the model.
    """
    if sanity:
        answer, _, detail = check_sat([assumptions], rlimit=rlimit, want_model=False)
        if answer == "unsat":
            return Result("counterexample", detail="vacuous: the assumptions are unsatisfiable"), None
        if answer != "sat":
            return Result(_status(answer), detail=f"sanity check: {detail}"), None
    answer, model, detail = check_sat([assumptions, z3.Not(claim)], rlimit=rlimit)
    if answer == "unsat":
        return Result("proved"), None
    if answer == "sat":
        return Result("counterexample", detail="the negation is satisfiable"), model
    return Result(_status(answer), detail=detail), None


def _status(answer: str) -> Status:
    return "disagreement" if answer == "disagreement" else "unknown"


def find(formula: Any, *, rlimit: int | None = None) -> tuple[Result, Any]:
    """Search for a witness of ``formula``."""
    answer, model, detail = check_sat([formula], rlimit=rlimit)
    if answer == "sat":
        return Result("witness"), model
    if answer == "unsat":
        return Result("no-witness", detail="unsat: no such case exists"), None
    return Result(_status(answer), detail=detail), None


def holds_on(formula: Any, rlimit: int = DEFAULT_RLIMIT) -> bool:
    """Decide a closed formula (a clause on a concrete case), with z3 alone."""
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
