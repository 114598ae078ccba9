"""Tests written to kill surviving mutants of the generated checker (``tailguard._generated.checker``,
tools/mutation.sh --subset tests/mutation/checker.toml), through its public API only (``check``,
``check_case``, ``read_case``, ``explain``, ``CaseError``), so they hold whatever the renderer emits.

The first is the differential comparison of tests/test_equivalence.py at a count a mutation run
can afford per mutant (derandomized, so every mutant meets the same cases): the checker and the
naive per-offset reference agree on the decision, the failed clauses and the holes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from tailguard._generated.checker import check
from tailguard.reference import reference
from tests.strategies import any_cases, well_formed_cases

PROFILES = ("seed", "strict", "partitioned")
_FEW = settings(max_examples=250, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def _agree(case: dict[str, Any]) -> None:
    for profile in PROFILES:
        got, ref = check(profile, **case), reference(profile, **case)
        assert (got.decision, tuple(got.failed), tuple(map(tuple, got.holes))) == (
            ref.decision, tuple(ref.failed), tuple(map(tuple, ref.holes))), (profile, case)


@_FEW
@given(any_cases())
def test_checker_and_reference_agree_on_a_few_cases(case: dict[str, Any]) -> None:
    _agree(case)


@_FEW
@given(well_formed_cases())
def test_checker_and_reference_agree_on_a_few_well_formed_cases(case: dict[str, Any]) -> None:
    _agree(case)
