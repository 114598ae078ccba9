"""Shared helpers for the proof modules."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import z3

from tailguard._generated.checker import PROFILES, Decision, check_case
from tailguard.backends.z3_encode import Encoder, ZCase, case_from_model, reset_names
from tailguard.backends.z3_eval import prove
from tailguard.speclang import ast
from tailguard.speclang.load import Profile, Spec, load_spec
from tailguard.tooling.project import spec_path
from tailguard.tooling.theorems import Result


@lru_cache(maxsize=1)
def project_spec() -> Spec:
    return load_spec(spec_path())


def setup(spec: Spec | None) -> Spec:
    """Start a theorem: deterministic variable names, and the given spec or the project's."""
    reset_names()
    return spec or project_spec()


def witness_replayed(
    spec: Spec,
    result: Result,
    model: Any,
    cases: dict[str, ZCase],
    expect: Callable[[dict[str, dict[str, Any]], dict[str, dict[str, Decision]]], str | None],
) -> Result:
    """Turn a sat model into JSON cases, replay them through the generated checker.

    ``expect(cases, decisions)`` returns None when the checker agrees with the theorem,
    else the reason; ``decisions[name][profile]``.
    """
    if result.status != "witness":
        return result
    json_cases = {name: case_from_model(spec, zc, model) for name, zc in cases.items()}
    return replayed(spec, json_cases, expect)


def replayed(
    spec: Spec,
    json_cases: dict[str, dict[str, Any]],
    expect: Callable[[dict[str, dict[str, Any]], dict[str, dict[str, Decision]]], str | None],
    *,
    model: dict[str, Any] | None = None,
) -> Result:
    """Replay JSON cases through the generated checker under every profile of ``spec``.

    ``expect`` as in :func:`witness_replayed`; ``model`` is what the result prints (default:
    the cases themselves, or the only one).
    """
    missing = [p.id for p in spec.profiles if p.id not in PROFILES]
    if missing:
        return Result("mismatch", detail=f"the generated checker has no profile {', '.join(missing)} "
                      "(stale: run tailguard gen)", model=model or json_cases)
    profiles = [p.id for p in spec.profiles]
    decisions = {name: {p: check_case(c, p) for p in profiles} for name, c in json_cases.items()}
    replay = {name: {p: d.to_json() for p, d in ds.items()} for name, ds in decisions.items()}
    problem = expect(json_cases, decisions)
    model_json = model or (json_cases if len(json_cases) > 1 else next(iter(json_cases.values())))
    if problem is not None:
        return Result("mismatch", detail=f"replay through the generated checker: {problem}",
                      model=model_json, replay=replay)
    return Result("witness", detail="replayed through the generated checker: agrees",
                  model=model_json, replay=replay)


def carries(holds: ast.Node, *, given: Encoder, then: Encoder, assumptions: Any) -> Result:
    """Prove: if the clause holds on ``given``'s case, it holds on ``then``'s.

    For a clause ``L subset R`` it suffices, offset by offset, that ``L_then(x) -> L_given(x)``
    and ``R_given(x) -> R_then(x)`` for a free x: quantifier-free in x, so it does not depend on how z3
    instantiates the subset's quantifier (which made the direct query flaky). Otherwise, or
    if that sufficient condition fails, the clause formulas are compared directly.
    """
    if isinstance(holds, ast.Subset):
        x = z3.Int("x")
        pointwise = z3.And(
            z3.Implies(then.as_set(holds.left, {})(x), given.as_set(holds.left, {})(x)),
            z3.Implies(given.as_set(holds.right, {})(x), then.as_set(holds.right, {})(x)),
        )
        result, _ = prove(pointwise, assumptions=assumptions)
        if result.status == "proved":
            return Result("proved", detail="offset by offset")
    return prove(then.expr(holds, {}), assumptions=z3.And(assumptions, given.expr(holds, {})))[0]



SetPred = Callable[[Any], Any]


def subset_instances(enc: Encoder, profile: Profile, x: Any) -> Any:
    """Every ``L subset R`` clause of ``profile`` at the offset ``x``: ``L(x) -> R(x)``.

    Implied by the clauses themselves, so adding it to assumptions that include the profile's
    ``allows`` assumes nothing new; it hands the solver the instantiation at the ``x`` a proof
    reasons about (z3 finds it, cvc5's e-matching does not).
    """
    return z3.And([z3.Implies(enc.as_set(c.holds.left, {})(x), enc.as_set(c.holds.right, {})(x))
                   for c in profile.clauses if isinstance(c.holds, ast.Subset)] or [z3.BoolVal(True)])


def subset_implies(holds: ast.Node, enc: Encoder, left: SetPred, right: SetPred, *, assumptions: Any) -> Result:
    """Prove: the clause ``holds`` (on ``enc``'s case) implies ``left ⊆ right``.

    For ``L subset R``, offset by offset as in :func:`carries`: ``left(x) -> L(x)`` and
    ``R(x) -> right(x)`` for a free x, so no quantifier over offsets needs instantiating.
    Otherwise, or if that sufficient condition fails, the implication directly.
    """
    x = z3.Int("x")
    if isinstance(holds, ast.Subset):
        pointwise = z3.And(z3.Implies(left(x), enc.as_set(holds.left, {})(x)),
                           z3.Implies(enc.as_set(holds.right, {})(x), right(x)))
        result, _ = prove(pointwise, assumptions=assumptions)
        if result.status == "proved":
            return Result("proved", detail="offset by offset")
    claim = z3.ForAll([x], z3.Implies(left(x), right(x)))
    return prove(claim, assumptions=z3.And(assumptions, enc.expr(holds, {})))[0]


def same_clause(first: ast.Node, second: ast.Node, enc: Encoder, *, assumptions: Any) -> Result:
    """Prove two clause formulas equivalent on ``enc``'s case: for two subset statements,
    offset by offset (same left side and same right side at a free x, which suffices); else
    the formulas directly."""
    if isinstance(first, ast.Subset) and isinstance(second, ast.Subset):
        x = z3.Int("x")
        pointwise = z3.And(enc.as_set(first.left, {})(x) == enc.as_set(second.left, {})(x),
                           enc.as_set(first.right, {})(x) == enc.as_set(second.right, {})(x))
        result, _ = prove(pointwise, assumptions=assumptions)
        if result.status == "proved":
            return Result("proved", detail="offset by offset")
    return prove(enc.expr(first, {}) == enc.expr(second, {}), assumptions=assumptions)[0]
