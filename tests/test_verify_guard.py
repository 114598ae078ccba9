"""``tailguard verify-guard``: the seed's own guard is caught allowing what strict refuses."""

from __future__ import annotations

import pytest

from tailguard.conform.guard import Adapter, GuardError, load_guard
from tests.cli_helpers import run_cli

SEED = "tailguard.oracles.seed_transcribed:assert_compaction_safe"
FAST = ("--examples", "100", "--no-crosshair")


def test_seed_guard_adapts_to_its_six_parameters() -> None:
    a = Adapter.for_function(load_guard(SEED))
    assert a.params == ("summary_input_start", "tail_start", "recovery_floor_span", "prior_truncations",
                        "floor_unit", "truncator_unit")
    assert a.ignored == ("history_end", "summary_covers", "prior_coverage", "spills")
    assert not a.takes_all


def test_seed_guard_fails_strict_with_an_unsafe_allow() -> None:
    code, out, _ = run_cli("verify-guard", SEED, *FAST)
    assert code == 1
    assert "smallest case the guard ALLOWS but profile strict refuses (unsafe)" in out
    assert "crosshair" not in out  # skipped on request
    assert "reproduce: echo '" in out


def test_seed_guard_conforms_to_the_seed_profile() -> None:
    code, out, _ = run_cli("verify-guard", SEED, "--profile", "seed", *FAST)
    assert code == 0, out
    assert "vectors: 485/485 agree" in out or "AGREES" in out


def test_seed_incident_is_among_the_unsafe_allows() -> None:
    from tailguard.conform.guard import Verdict, phase_vectors
    from tailguard.conform.vectors import load_vectors

    fn = load_guard(SEED)
    verdict = Verdict("strict", Adapter.for_function(fn))
    phase_vectors(fn, verdict.adapter, "strict", load_vectors().vectors, verdict)
    unsafe = {d.source for d in verdict.disagreements if d.guard == "allow"}
    assert "example/seed-incident" in unsafe


def test_correct_guard_agrees_and_off_by_one_is_found() -> None:
    assert run_cli("verify-guard", "tests.impls.guards:correct", *FAST)[0] == 0
    code, out, _ = run_cli("verify-guard", "tests.impls.guards:seam_off_by_one", *FAST)
    assert code == 1 and "spec fails seam_contiguous" in out


@pytest.mark.parametrize("bad", ["no_colon", "no.such.module:f", "tailguard.oracles.seed_transcribed:nope"])
def test_unloadable_guard_exits_2(bad: str) -> None:
    code, _, err = run_cli("verify-guard", bad, *FAST)
    assert code == 2 and err.startswith("tailguard verify-guard:")


def test_required_parameter_that_is_no_field_is_an_error() -> None:
    def guard(history_end: int, budget: int) -> None: ...

    with pytest.raises(GuardError, match="'budget' is not a case field"):
        Adapter.for_function(guard)


@pytest.mark.slow
def test_crosshair_phase_runs_on_a_guard_taking_every_field() -> None:
    code, out, _ = run_cli("verify-guard", "tests.impls.guards:correct", "--examples", "50",
                           "--crosshair-timeout", "5")
    assert code == 0
    assert "crosshair: no difference found" in out
