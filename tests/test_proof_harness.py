"""The proof harness's own guards: each can fail, and each failure fails ``tailguard prove``.

A theorem passes only with its expected outcome. These tests break the harness's inputs on
purpose (an unsatisfiable assumption, an exhausted budget, a witness the checker disagrees
with, two solvers that disagree, a crashing proof) and check the failure reaches the exit code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("z3")

import z3

import proofs._common
from proofs import profiles_compared
from tailguard._generated.checker import Decision
from tailguard.backends import cvc5_check, z3_eval
from tailguard.tooling.theorems import REGISTRY, Outcome, Result, Theorem, theorem
from tests.cli_helpers import run_cli


@pytest.fixture
def scratch_theorem() -> Iterator[str]:
    """Registers nothing itself; removes what the test registered under the id it yields."""
    yield "ZZ-harness"
    REGISTRY.pop("ZZ-harness", None)


def _outcome(kind: str, status: str) -> Outcome:
    thm = Theorem("X", "x", "x", kind, lambda: Result("proved"), "tests")  # type: ignore[arg-type]
    return Outcome(thm, Result(status), 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", ["counterexample", "no-witness", "mismatch", "disagreement", "unknown",
                                    "witness"])
def test_a_theorem_passes_only_when_proved(status: str) -> None:
    assert not _outcome("theorem", status).passed
    assert _outcome("theorem", "proved").passed


@pytest.mark.parametrize("status", ["counterexample", "no-witness", "mismatch", "disagreement", "unknown",
                                    "proved"])
def test_a_witness_passes_only_when_found_and_replayed(status: str) -> None:
    assert not _outcome("witness", status).passed
    assert _outcome("witness", "witness").passed


def test_unsatisfiable_assumptions_are_vacuous_not_proved() -> None:
    x = z3.Int("x")
    result, _ = z3_eval.prove(x > 0, assumptions=z3.And(x > 1, x < 0))
    assert result.status == "counterexample" and "vacuous" in result.detail


def test_a_vacuous_theorem_fails_prove(scratch_theorem: str) -> None:
    @theorem(scratch_theorem, "vacuous on purpose", "x > 0 under contradictory assumptions")
    def vacuous() -> Result:
        x = z3.Int("x")
        return z3_eval.prove(x > 0, assumptions=z3.And(x > 1, x < 0))[0]

    code, out, _ = run_cli("prove", "--only", scratch_theorem, "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["failed"] == 1
    assert data["theorems"][0]["status"] == "counterexample" and "vacuous" in data["theorems"][0]["detail"]


def test_an_exhausted_budget_is_unknown_and_fails_prove() -> None:
    code, out, _ = run_cli("prove", "--only", "T1", "T2", "--rlimit", "1", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["failed"] == 2
    for t in data["theorems"]:
        assert t["status"] == "unknown" and "rlimit 1" in t["detail"], t


def test_the_budget_is_restored_after_a_run() -> None:
    run_cli("prove", "--only", "T5", "--rlimit", "1")
    assert z3_eval.SETTINGS.rlimit == z3_eval.DEFAULT_RLIMIT and z3_eval.SETTINGS.solver == "z3"


def test_a_witness_the_checker_disagrees_with_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """T3's witness is replayed through the generated checker; if the checker (here: made to
    allow everything under strict) disagrees, T3 is a mismatch and prove fails."""
    real = proofs._common.check_case

    def lenient(case: dict[str, Any], profile: str) -> Decision:
        return Decision("allow", (), ()) if profile == "strict" else real(case, profile)

    monkeypatch.setattr(proofs._common, "check_case", lenient)
    assert profiles_compared.seed_allows_a_hole().status == "mismatch"
    code, out, _ = run_cli("prove", "--only", "T3", "--format", "json")
    assert code == 1 and json.loads(out)["theorems"][0]["status"] == "mismatch"


def test_a_passing_result_prints_its_note(scratch_theorem: str) -> None:
    """A note (such as the parts one solver decided alone) is printed even when the theorem holds."""
    @theorem(scratch_theorem, "holds with a note", "x")
    def noted() -> Result:
        return Result("proved", detail="2 parts", note="1 of 2 parts decided by z3 alone")

    code, out, _ = run_cli("prove", "--only", scratch_theorem)
    assert code == 0 and "\n          note: 1 of 2 parts decided by z3 alone\n" in out, out
    code, out, _ = run_cli("prove", "--only", scratch_theorem, "--format", "json")
    assert code == 0 and json.loads(out)["theorems"][0]["note"] == "1 of 2 parts decided by z3 alone"


def test_a_crashing_proof_fails(scratch_theorem: str) -> None:
    @theorem(scratch_theorem, "crashes on purpose", "nothing")
    def crashes() -> Result:
        raise RuntimeError("boom")

    code, out, _ = run_cli("prove", "--only", scratch_theorem, "--format", "json")
    t = json.loads(out)["theorems"][0]
    assert code == 1 and t["status"] == "unknown" and "boom" in t["detail"]


def test_solvers_that_disagree_fail_prove(monkeypatch: pytest.MonkeyPatch) -> None:
    """With --solver both, a query z3 refutes and cvc5 (here: made to) satisfies is a
    disagreement, which fails, whichever solver is right."""
    monkeypatch.setattr(cvc5_check, "available", lambda: True)
    monkeypatch.setattr(cvc5_check, "decide", lambda *a, **k: cvc5_check.Cvc5Answer("sat", "fake"))
    code, out, _ = run_cli("prove", "--only", "T5", "--solver", "both", "--format", "json")
    t = json.loads(out)["theorems"][0]
    assert code == 1 and t["status"] == "disagreement" and "cvc5 says sat" in t["detail"], t


def test_cvc5_unknown_is_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cvc5_check, "available", lambda: True)
    monkeypatch.setattr(cvc5_check, "decide", lambda *a, **k: cvc5_check.Cvc5Answer("unknown", "fake", "gave up"))
    for solver in ("cvc5", "both"):
        code, out, _ = run_cli("prove", "--only", "T5", "--solver", solver, "--format", "json")
        assert code == 1 and json.loads(out)["theorems"][0]["status"] == "unknown"


def test_solver_times_are_reported_per_theorem() -> None:
    code, out, _ = run_cli("prove", "--only", "T5", "T6", "--format", "json")
    assert code == 0
    for t in json.loads(out)["theorems"]:
        assert set(t["solver_seconds"]) == {"z3"} and t["solver_seconds"]["z3"] >= 0


@pytest.mark.skipif(not cvc5_check.available(), reason="cvc5 not installed")
def test_cvc5_decides_the_exported_query() -> None:
    x, y = z3.Ints("x y")
    a = z3.Array("I'.lo", z3.IntSort(), z3.IntSort())  # a name SMT-LIB needs quoted
    assert cvc5_check.decide([x > y, y > x]).status == "unsat"
    assert cvc5_check.decide([x > y, a[x] == y]).status == "sat"
    i = z3.Int("i")
    assert cvc5_check.decide([z3.ForAll([i], a[i] > i), a[3] < 3]).status == "unsat"


@pytest.mark.skipif(not cvc5_check.available(), reason="cvc5 not installed")
def test_cvc5_alone_fails_a_broken_theorem(tmp_path: Any) -> None:
    """The second solver is not a rubber stamp: on a spec broken on purpose it finds the
    theorem false too."""
    from tests.test_proofs import BREAKS, mutated

    _, old, new, func = BREAKS[0]
    spec = mutated(tmp_path, old, new)
    with z3_eval.solver_settings(solver="cvc5"):
        assert func(spec).status == "counterexample"
