"""Shared helpers for the proof modules."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from tailguard._generated.checker import Decision, check_case
from tailguard.backends.z3_encode import ZCase, case_from_model
from tailguard.project import spec_path
from tailguard.speclang.load import Spec, load_spec
from tailguard.theorems import Result


@lru_cache(maxsize=1)
def project_spec() -> Spec:
    return load_spec(spec_path())


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
    decisions = {name: {p: check_case(c, p) for p in ("seed", "strict")} for name, c in json_cases.items()}
    replay = {name: {p: d.to_json() for p, d in ds.items()} for name, ds in decisions.items()}
    problem = expect(json_cases, decisions)
    model_json = json_cases if len(json_cases) > 1 else next(iter(json_cases.values()))
    if problem is not None:
        return Result("mismatch", detail=f"replay through the generated checker: {problem}",
                      model=model_json, replay=replay)
    return Result("witness", detail="replayed through the generated checker: agrees",
                  model=model_json, replay=replay)
