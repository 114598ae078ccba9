"""Tests written to kill surviving mutants of the proof harness (``tailguard.theorems``,
``tailguard.cli.prove``): what a registration records, and the budget argument's checks."""

from __future__ import annotations

import argparse

import pytest

from tailguard import theorems
from tailguard.cli.prove import _positive
from tailguard.theorems import REGISTRY, theorem


def test_a_registration_records_every_field() -> None:
    def proof() -> theorems.Result:
        raise AssertionError("never run here")

    try:
        theorem("TZ-mut", "A title", "A statement", bound="at most 2 intervals")(proof)
        t = REGISTRY["TZ-mut"]
        assert (t.id, t.title, t.statement, t.kind, t.func, t.module, t.bound) == (
            "TZ-mut", "A title", "A statement", "theorem", proof, __name__, "at most 2 intervals")
        theorem("TZ-mut", "Other", "Other statement", kind="witness")(proof)
        assert (REGISTRY["TZ-mut"].kind, REGISTRY["TZ-mut"].bound, REGISTRY["TZ-mut"].title) == (
            "witness", None, "Other")
    finally:
        REGISTRY.pop("TZ-mut", None)


def test_every_registered_theorem_has_its_text_and_module() -> None:
    from tailguard.cli.prove import load_theorems

    load_theorems()
    assert REGISTRY
    for t in REGISTRY.values():
        assert t.title and t.statement and t.kind in ("theorem", "witness"), t.id
        assert t.module == t.func.__module__ and t.module.startswith(("proofs", "tailguard")), t.id


@pytest.mark.parametrize(("text", "message"), [("0", "must be positive: 0"), ("-3", "must be positive: -3"),
                                               ("x1", "not an integer: 'x1'")])
def test_the_budget_must_be_a_positive_integer(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{message}$"):
        _positive(text)
    assert _positive("1") == 1 and _positive("250") == 250


def _theorem(kind: str = "theorem", bound: str | None = "b") -> theorems.Theorem:
    def boom() -> theorems.Result:
        raise KeyError("no such query")

    return theorems.Theorem("TZ", "T", "S", kind, boom, "mod", bound)  # type: ignore[arg-type]


def test_a_crashing_proof_is_unknown_naming_the_exception_and_timed() -> None:
    out = _theorem().run()
    assert out.result.status == "unknown" and not out.passed
    assert out.result.detail == "error: KeyError: 'no such query'"
    assert 0 <= out.seconds < 60  # a duration, not a clock reading


def test_the_json_record_of_an_outcome() -> None:
    result = theorems.Result("witness", "d", {"n": 1}, {"decision": "allow"})
    out = theorems.Outcome(_theorem("witness"), result, 1.234567, {"z3": 0.0123456, "cvc5": 2.0})
    assert out.to_json() == {
        "id": "TZ", "title": "T", "kind": "witness", "status": "witness", "passed": True, "seconds": 1.2346,
        "solver_seconds": {"z3": 0.0123, "cvc5": 2.0}, "bound": "b", "detail": "d", "model": {"n": 1},
        "replay": {"decision": "allow"}, "module": "mod"}


def test_the_prove_command_line() -> None:
    from tailguard.cli.prove import add_arguments

    parser = argparse.ArgumentParser(prog="tailguard prove")
    add_arguments(parser)
    text = " ".join(parser.format_help().split())
    for phrase in ("exit codes: 0 every theorem holds, 1 some theorem failed or was unknown (budget), "
                   "2 setup (no spec/ or proofs/, unknown --only id)",
                   "text: one line per theorem (default); json: one object per theorem",
                   "run only these theorem ids",
                   "who decides each query: z3 (default), cvc5 (models still come from z3), or both, which must "
                   "agree (a disagreement fails)",
                   "z3 resource budget per query (default 50,000,000); an exhausted budget is unknown, which fails",
                   "cvc5 resource budget per query and strategy (default 200,000,000)",
                   "--format {text,json}", "--solver {z3,cvc5,both}", "--only ID [ID ...]", "--rlimit N",
                   "--cvc5-rlimit N"):
        assert phrase in text, phrase
    args = parser.parse_args([])
    assert (args.format, args.only, args.solver, args.rlimit, args.cvc5_rlimit) == ("text", None, "z3", None, None)
    args = parser.parse_args(["--format", "json", "--solver", "both", "--rlimit", "5", "--cvc5-rlimit", "7",
                              "--only", "T1", "T2"])
    assert (args.format, args.only, args.solver, args.rlimit, args.cvc5_rlimit) == ("json", ["T1", "T2"], "both", 5, 7)
    for bad in (["--format", "xml"], ["--solver", "yices"], ["--rlimit", "0"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)


@pytest.mark.parametrize(("kind", "status", "passed"), [
    ("theorem", "proved", True), ("theorem", "witness", False), ("theorem", "unknown", False),
    ("theorem", "counterexample", False), ("witness", "witness", True), ("witness", "proved", False),
    ("witness", "no-witness", False), ("witness", "mismatch", False), ("theorem", "disagreement", False)])
def test_only_proved_theorems_and_found_witnesses_pass(kind: str, status: str, passed: bool) -> None:
    out = theorems.Outcome(_theorem(kind), theorems.Result(status), 0.0)  # type: ignore[arg-type]
    assert out.passed is passed
    assert out.to_json()["passed"] is passed and out.to_json()["status"] == status


def test_solver_time_is_charged_to_the_running_theorem_only() -> None:
    theorems.charge("z3", 5.0)  # left over from before: cleared when the next theorem starts

    def timed() -> theorems.Result:
        theorems.charge("z3", 0.25)
        theorems.charge("cvc5", 1.0)
        theorems.charge("z3", 0.5)
        return theorems.Result("proved")

    out = theorems.Theorem("TZ", "T", "S", "theorem", timed, "mod").run()
    assert out.passed and out.solver_seconds == {"cvc5": 1.0, "z3": 0.75}
    assert list(out.solver_seconds) == ["cvc5", "z3"]  # sorted, so reports are stable
