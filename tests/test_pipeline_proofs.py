"""The check-config theorems hold, and each fails when its encoding is broken on purpose."""

from __future__ import annotations

from typing import Any

import z3

from proofs import pipeline
from tailguard.theorems import REGISTRY


def _off_by_one(kt: Any, total: Any, floor: Any, unit: str) -> Any:
    return kt <= floor if unit == "turns" else total <= floor


def test_registered_and_proved() -> None:
    for tid in ("P1", "P2", "P3", "P4"):
        outcome = REGISTRY[tid].run()
        assert outcome.passed, (tid, outcome.result)


def test_broken_floor_check_is_caught() -> None:
    for func in (pipeline.p1_floor_turns, pipeline.p2_floor_tokens, pipeline.p4_closed_form):
        assert func(_off_by_one).status == "counterexample", func.__name__


def test_broken_window_bound_is_caught() -> None:
    assert pipeline.p3_window(lambda w, lo, k: w * lo >= k).status == "counterexample"


def test_vacuous_hypotheses_are_not_a_proof() -> None:
    result = pipeline._prove(z3.BoolVal(True), z3.BoolVal(False), [])
    assert result.status == "counterexample" and "vacuous" in result.detail
