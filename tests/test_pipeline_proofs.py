"""The check-config theorems hold, and each fails when its encoding is broken on purpose."""

from __future__ import annotations

from typing import Any

import z3

from proofs import pipeline
from tailguard.tooling.theorems import REGISTRY


def _off_by_one(kt: Any, total: Any, floor: Any, unit: str) -> Any:
    return kt <= floor if unit == "turns" else total <= floor


def test_registered_and_proved() -> None:
    for tid in ("P1", "P2", "P3", "P4", "P5", "P6"):
        outcome = REGISTRY[tid].run()
        assert outcome.passed, (tid, outcome.result)


def test_broken_floor_check_is_caught() -> None:
    for func in (pipeline.p1_floor_turns, pipeline.p2_floor_tokens, pipeline.p4_closed_form,
                 pipeline.p5_floor_messages):
        assert func(_off_by_one).status == "counterexample", func.__name__


def test_broken_spill_effect_is_caught() -> None:
    """P6 fails for an encoding where a successful write still leaves the summary holding
    unspilled turns, or a failed write forgets the unseen candidates."""
    from tailguard.pipeline.encode import spill_effect

    def sticky(spilled: bool, unseen: Any, dropped: Any, summarized: Any, u: Any) -> Any:
        lost, _ = spill_effect(spilled, unseen, dropped, summarized, u)
        return lost, (z3.If(summarized, 1, u) if spilled else z3.IntVal(0))

    def forgetful(spilled: bool, unseen: Any, dropped: Any, summarized: Any, u: Any) -> Any:
        return spill_effect(True, unseen, dropped, summarized, u) if not spilled else \
            (z3.Or(unseen, z3.And(dropped, u == 1)), u)

    assert pipeline.p6_spill_monotone().status == "proved"
    for broken in (sticky, forgetful):
        assert pipeline.p6_spill_monotone(broken).status == "counterexample", broken.__name__


def test_broken_window_bound_is_caught() -> None:
    assert pipeline.p3_window(lambda w, lo, k: w * lo >= k).status == "counterexample"


def test_vacuous_hypotheses_are_not_a_proof() -> None:
    result = pipeline._prove(z3.BoolVal(True), z3.BoolVal(False), [])
    assert result.status == "counterexample" and "vacuous" in result.detail
