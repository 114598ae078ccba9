"""Tests written to kill surviving mutants of the proof harness (``tailguard.tooling.theorems``,
``tailguard.cli.prove``): what a registration records, and the budget argument's checks."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
from typing import Any

import pytest

from tailguard.cli.prove import _positive
from tailguard.tooling import theorems
from tailguard.tooling.theorems import REGISTRY, theorem


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
    result = theorems.Result("witness", "d", {"n": 1}, {"decision": "allow"}, "a note")
    out = theorems.Outcome(_theorem("witness"), result, 1.234567, {"z3": 0.0123456, "cvc5": 2.0})
    assert out.to_json() == {
        "id": "TZ", "title": "T", "kind": "witness", "status": "witness", "passed": True, "seconds": 1.2346,
        "solver_seconds": {"z3": 0.0123, "cvc5": 2.0}, "bound": "b", "detail": "d", "model": {"n": 1},
        "replay": {"decision": "allow"}, "note": "a note", "module": "mod"}
    # a result says nothing more unless it has a note to give (prove prints a non-empty one)
    assert theorems.Result("proved").note == ""


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


# --- proofs/_common.py: the helpers every proof module shares, driven by tiny theorems -------------
# Each helper is called on a handful of integer symbols (an interval C inside an interval I, on a
# hand-built case of the project spec), so every query is decided in milliseconds; each test pins
# which path (offset by offset, or the direct formula) decided it and what it answered.


def _z3() -> Any:
    return pytest.importorskip("z3")


def _cases() -> tuple[Any, Any, Any, Any]:
    """The project spec, a symbolic case of it, and its ``C`` and ``I`` intervals."""
    from proofs._common import project_spec
    from tailguard.backends.z3_encode import symbolic_case

    spec = project_spec()
    zc = symbolic_case(spec, "mut.", bound=1)
    return spec, zc, zc["C"], zc["I"]


def _holds(text: str) -> Any:
    from tailguard.speclang.parse import parse

    return parse(text)


def test_setup_restarts_the_names_and_falls_back_to_the_project_spec() -> None:
    from proofs._common import project_spec, setup
    from tailguard.backends.z3_encode import fresh_int

    fresh_int("q"), fresh_int("q")
    spec = project_spec()
    assert setup(None) is spec
    assert str(fresh_int("q")) == "q!0"  # numbering restarted
    other = dataclasses.replace(spec, version="other")
    assert setup(other) is other


def test_carries_offset_by_offset_needs_the_assumptions() -> None:
    """Shrinking C by k >= 0 keeps ``C subset I``: offset by offset, but only under k >= 0."""
    z3 = _z3()
    from proofs._common import carries
    from tailguard.backends.z3_encode import Encoder

    spec, zc, (c_lo, c_hi), _ = _cases()
    k = z3.Int("mut.k")
    then = Encoder(spec, zc.with_value("C", (c_lo + k, c_hi)))
    r = carries(_holds("C subset I"), given=Encoder(spec, zc), then=then, assumptions=k >= 0)
    assert (r.status, r.detail) == ("proved", "offset by offset")
    r = carries(_holds("C subset I"), given=Encoder(spec, zc), then=then, assumptions=k >= -1)
    assert r.status == "counterexample"


def test_carries_falls_back_to_the_formulas_which_use_the_hypothesis() -> None:
    """Then's I is [max(I.lo, C.lo), I.hi): not pointwise wider than I, yet ``C subset I`` on the
    given case implies it on then's (and without that hypothesis it does not)."""
    z3 = _z3()
    from proofs._common import carries
    from tailguard.backends.z3_encode import Encoder

    spec, zc, (c_lo, c_hi), (i_lo, i_hi) = _cases()
    then = Encoder(spec, zc.with_value("I", (z3.If(i_lo >= c_lo, i_lo, c_lo), i_hi)))
    r = carries(_holds("C subset I"), given=Encoder(spec, zc), then=then, assumptions=zc.side_conditions())
    assert (r.status, r.detail) == ("proved", "")
    # then's I shrunk past C.lo: the clause no longer carries, and that is a counterexample
    then = Encoder(spec, zc.with_value("I", (c_lo + 1, i_hi)))
    r = carries(_holds("C subset I"), given=Encoder(spec, zc), then=then, assumptions=c_lo < c_hi)
    assert r.status == "counterexample" and r.detail == "the negation is satisfiable"


def test_carries_a_clause_that_is_not_a_subset() -> None:
    z3 = _z3()
    from proofs._common import carries
    from tailguard.backends.z3_encode import Encoder

    spec, zc, _, _ = _cases()
    n = zc["n"]
    then = Encoder(spec, zc.with_value("n", n + 1))
    assert carries(_holds("n >= 0"), given=Encoder(spec, zc), then=then, assumptions=True).status == "proved"
    r = carries(_holds("n <= 5"), given=Encoder(spec, zc), then=then, assumptions=True)
    assert r.status == "counterexample"
    r = carries(_holds("n <= 5"), given=Encoder(spec, zc), then=then, assumptions=n < 3)
    assert (r.status, r.detail) == ("proved", "")
    r = carries(_holds("n <= 5"), given=Encoder(spec, zc), then=then, assumptions=z3.BoolVal(False))
    assert r.status == "counterexample" and "vacuous" in r.detail  # the assumptions reach the query


def test_subset_implies_offset_by_offset_and_directly() -> None:
    z3 = _z3()
    from proofs._common import subset_implies
    from tailguard.backends.z3_encode import Encoder

    spec, zc, (c_lo, c_hi), (i_lo, i_hi) = _cases()
    enc = Encoder(spec, zc)
    k = z3.Int("mut.k")

    def inside_c(x: Any) -> Any:
        return z3.And(c_lo + k <= x, x < c_hi)

    def around_i(x: Any) -> Any:
        return z3.And(i_lo - k <= x, x < i_hi)

    holds = _holds("C subset I")
    r = subset_implies(holds, enc, inside_c, around_i, assumptions=k >= 0)
    assert (r.status, r.detail) == ("proved", "offset by offset")
    r = subset_implies(holds, enc, inside_c, around_i, assumptions=k >= -1)
    assert r.status == "counterexample"

    # right is not pointwise wider than I, but holds on C whenever C is inside I: only the
    # direct form proves it
    def c_part_of_i(x: Any) -> Any:
        return z3.And(z3.If(i_lo >= c_lo, i_lo, c_lo) <= x, x < i_hi)

    r = subset_implies(holds, enc, lambda x: z3.And(c_lo <= x, x < c_hi), c_part_of_i,
                       assumptions=zc.side_conditions())
    assert (r.status, r.detail) == ("proved", "")
    r = subset_implies(holds, enc, lambda x: z3.And(i_lo <= x, x < i_hi + 1),
                       lambda x: z3.And(i_lo <= x, x < i_hi), assumptions=i_lo < i_hi)
    assert r.status == "counterexample"
    # a clause that is not a subset: the direct form only, under the assumptions given
    r = subset_implies(_holds("n >= 0"), enc, inside_c, inside_c, assumptions=True)
    assert (r.status, r.detail) == ("proved", "")
    r = subset_implies(_holds("n >= 0"), enc, inside_c, inside_c, assumptions=z3.BoolVal(False))
    assert r.status == "counterexample" and "vacuous" in r.detail


def test_same_clause_offset_by_offset_and_directly() -> None:
    z3 = _z3()
    from proofs._common import same_clause
    from tailguard.backends.z3_encode import Encoder

    spec, zc, _, _ = _cases()
    enc = Encoder(spec, zc)
    side = zc.side_conditions()
    r = same_clause(_holds("C subset I"), _holds("C & C subset I | I"), enc, assumptions=side)
    assert (r.status, r.detail) == ("proved", "offset by offset")
    # C \ I subset I holds exactly when C subset I: the same clause, though no side matches
    r = same_clause(_holds("C subset I"), _holds("C \\ I subset I"), enc, assumptions=side)
    assert (r.status, r.detail) == ("proved", "")
    r = same_clause(_holds("C subset I"), _holds("I subset C"), enc, assumptions=side)
    assert r.status == "counterexample"
    r = same_clause(_holds("n >= 0"), _holds("0 <= n"), enc, assumptions=side)
    assert (r.status, r.detail) == ("proved", "")
    r = same_clause(_holds("n >= 0"), _holds("n > 0"), enc, assumptions=side)
    assert r.status == "counterexample"
    # the assumptions reach both the pointwise query and the direct one
    r = same_clause(_holds("C subset I"), _holds("C subset I"), enc, assumptions=z3.BoolVal(False))
    assert r.status == "counterexample" and "vacuous" in r.detail
    r = same_clause(_holds("n >= 0"), _holds("n > 0"), enc, assumptions=zc["n"] != 0)
    assert (r.status, r.detail) == ("proved", "")


def test_subset_instances_are_the_subset_clauses_at_one_offset() -> None:
    z3 = _z3()
    from proofs._common import subset_instances
    from tailguard.backends.z3_encode import Encoder
    from tailguard.backends.z3_eval import prove

    spec, zc, (c_lo, c_hi), (i_lo, i_hi) = _cases()
    enc = Encoder(spec, zc)
    x = z3.Int("mut.x")
    seed = subset_instances(enc, spec.profile("seed"), x)  # no subset clause: true
    assert prove(seed, sanity=False)[0].status == "proved"
    strict = spec.profile("strict")
    inst = subset_instances(enc, strict, x)
    assert prove(inst, assumptions=enc.allows(strict))[0].status == "proved"  # implied by the clauses
    # and it says C(x) -> I(x) (summary honesty, at x): x in C but not in I refutes it
    assert prove(z3.Not(inst), assumptions=z3.And(c_lo <= x, x < c_hi, z3.Not(z3.And(i_lo <= x, x < i_hi))))[
        0].status == "proved"


_HEALTHY = {"history_end": 4, "tail_start": 2, "summary_input": [0, 4], "summary_covers": [0, 2],
            "recovery_floor_span": 2, "floor_unit": "turns", "truncator_unit": "turns",
            "prior_truncations": [], "prior_coverage": [], "spills": []}
_HOLED = {**_HEALTHY, "summary_covers": [1, 2]}  # [0, 1) recoverable nowhere: a hole under strict


def _decisions(case: dict[str, Any]) -> dict[str, Any]:
    from tailguard._generated.checker import check_case

    return {p: check_case(case, p) for p in ("seed", "strict", "partitioned")}


def test_replayed_runs_every_case_under_every_profile_and_reports_what_it_saw() -> None:
    from proofs._common import project_spec, replayed

    spec = project_spec()
    seen: list[tuple[Any, Any]] = []

    def agrees(cases: Any, decisions: Any) -> None:
        seen.append((cases, decisions))

    r = replayed(spec, {"only": _HEALTHY}, agrees)
    assert seen == [({"only": _HEALTHY}, {"only": _decisions(_HEALTHY)})]
    assert (r.status, r.detail, r.model) == ("witness", "replayed through the generated checker: agrees", _HEALTHY)
    assert r.replay == {"only": {p: d.to_json() for p, d in _decisions(_HEALTHY).items()}}
    assert not _decisions(_HOLED)["strict"].allowed and _decisions(_HOLED)["seed"].allowed  # the two differ

    both = {"ok": _HEALTHY, "holed": _HOLED}
    r = replayed(spec, both, agrees)
    assert (r.status, r.model) == ("witness", both)  # more than one case: all of them
    assert r.replay == {name: {p: d.to_json() for p, d in _decisions(c).items()} for name, c in both.items()}
    r = replayed(spec, both, agrees, model={"given": 1})
    assert (r.status, r.model) == ("witness", {"given": 1})


def test_replayed_reports_the_disagreement_with_the_model_and_the_replay() -> None:
    from proofs._common import project_spec, replayed

    spec = project_spec()
    r = replayed(spec, {"holed": _HOLED}, lambda cases, d: None if d["holed"]["strict"].allowed else "strict refused")
    assert (r.status, r.detail, r.model) == ("mismatch", "replay through the generated checker: strict refused", _HOLED)
    assert r.replay == {"holed": {p: d.to_json() for p, d in _decisions(_HOLED).items()}}
    r = replayed(spec, {"a": _HOLED, "b": _HEALTHY}, lambda c, d: "no", model={"m": 2})
    assert (r.status, r.model) == ("mismatch", {"m": 2})
    r = replayed(spec, {"a": _HOLED, "b": _HEALTHY}, lambda c, d: "no")
    assert r.model == {"a": _HOLED, "b": _HEALTHY}


def test_replayed_refuses_a_spec_profile_the_generated_checker_lacks() -> None:
    from proofs._common import project_spec, replayed

    spec = project_spec()
    strict = spec.profile("strict")
    stale = dataclasses.replace(spec, profiles=(*spec.profiles, dataclasses.replace(strict, id="newer"),
                                                dataclasses.replace(strict, id="newest")))

    def never(cases: Any, decisions: Any) -> str:
        raise AssertionError("no replay without the profile")

    r = replayed(stale, {"a": _HEALTHY}, never)
    assert (r.status, r.detail, r.replay) == (
        "mismatch", "the generated checker has no profile newer, newest (stale: run tailguard gen)", None)
    assert r.model == {"a": _HEALTHY}
    assert replayed(stale, {"a": _HEALTHY}, never, model={"m": 3}).model == {"m": 3}
    one = dataclasses.replace(spec, profiles=(*spec.profiles, dataclasses.replace(strict, id="newer")))
    assert replayed(one, {"a": _HEALTHY}, never).detail.startswith("the generated checker has no profile newer (")


def test_witness_replayed_reads_the_model_back_and_passes_other_results_through() -> None:
    z3 = _z3()
    from proofs._common import project_spec, witness_replayed
    from tailguard.backends.z3_encode import concrete_case

    spec = project_spec()
    s = z3.Solver()
    assert s.check() == z3.sat
    model = s.model()
    cases = {"before": concrete_case(spec, _HEALTHY), "after": concrete_case(spec, _HOLED)}
    seen: list[Any] = []

    def expect(json_cases: Any, decisions: Any) -> str | None:
        seen.append(json_cases)
        refused = [name for name, d in decisions.items() if not d["strict"].allowed]
        return f"{', '.join(refused)}: strict refused" if refused else None

    r = witness_replayed(spec, theorems.Result("witness"), model, cases, expect)
    assert seen == [{"before": _HEALTHY, "after": _HOLED}]
    assert (r.status, r.detail, r.model) == ("mismatch", "replay through the generated checker: after: strict refused",
                                             {"before": _HEALTHY, "after": _HOLED})
    r = witness_replayed(spec, theorems.Result("witness"), model, {"case": cases["before"]}, expect)
    assert (r.status, r.model) == ("witness", _HEALTHY)
    for other in (theorems.Result("no-witness", "d"), theorems.Result("unknown"), theorems.Result("proved")):
        assert witness_replayed(spec, other, None, cases, expect) is other
    assert len(seen) == 2


def test_load_theorems_puts_the_project_first_on_the_path_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from tailguard.cli.prove import load_theorems
    from tailguard.tooling.project import project_root

    root = str(project_root())
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != root])
    load_theorems()
    assert sys.path[0] == root
    load_theorems()
    assert sys.path.count(root) == 1


def test_load_theorems_imports_every_public_proof_module(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from tailguard.cli.prove import load_theorems
    from tailguard.tooling.project import project_root

    real = importlib.import_module
    imported: list[str] = []

    def recording(name: str, package: str | None = None) -> Any:
        imported.append(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", recording)
    load_theorems()
    public = sorted(f"proofs.{p.stem}" for p in (project_root() / "proofs").glob("*.py") if not p.stem.startswith("_"))
    assert len(public) >= 8 and "proofs.profile_strict" in public
    assert imported[0] == "proofs" and sorted(imported[1:]) == public


# --- cli/prove.py run(): what it prints and returns, with scripted theorems -------------------------


@dataclasses.dataclass(frozen=True)
class _Scripted(theorems.Theorem):
    """A theorem whose run returns a fixed outcome (fixed seconds, so the text is exact) and
    records the solver settings it ran under."""

    outcome: tuple[theorems.Result, float, dict[str, float]] | None = None

    def run(self) -> theorems.Outcome:
        from tailguard.backends.z3_eval import SETTINGS

        _SEEN.append((self.id, SETTINGS.solver, SETTINGS.rlimit, SETTINGS.cvc5_rlimit))
        assert self.outcome is not None
        result, seconds, solver = self.outcome
        return theorems.Outcome(self, result, seconds, solver)


_SEEN: list[tuple[str, str, int, int | None]] = []


def _scripted() -> list[_Scripted]:
    def never() -> theorems.Result:
        raise AssertionError("scripted")

    return [
        _Scripted("ZA", "Holds with a bound", "s", "theorem", never, "m", "at most 2 intervals",
                  outcome=(theorems.Result("proved", "offset by offset"), 1.5, {"z3": 1.25})),
        _Scripted("ZB", "Fails with a case", "s", "theorem", never, "m", None,
                  outcome=(theorems.Result("counterexample", "the negation is satisfiable", {"n": 1}), 0.25,
                           {"z3": 0.5, "cvc5": 0.75})),
        _Scripted("ZCC", "A witness", "s", "witness", never, "m", None,
                  outcome=(theorems.Result("witness", "replayed: agrees", {"n": 2}), 12.0625, {})),
    ]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> list[_Scripted]:
    from tailguard.cli import prove

    monkeypatch.setattr(prove, "load_theorems", lambda: None)
    monkeypatch.setattr(theorems, "REGISTRY", {t.id: t for t in _scripted()})
    _SEEN.clear()
    return list(theorems.REGISTRY.values())  # type: ignore[arg-type]


_TEXT = (
    "ok  ZA    proved           1.500s  Holds with a bound\n"
    "          bounded: at most 2 intervals\n"
    "FAIL ZB    counterexample   0.250s  Fails with a case\n"
    "          the negation is satisfiable\n"
    '          case: {"n": 1}\n'
    "ok  ZCC   witness         12.062s  A witness\n"
    '          case: {"n": 2}\n'
)


def test_prove_prints_one_line_per_theorem_and_the_totals(scripted: list[_Scripted]) -> None:
    from tests.cli_helpers import run_cli

    code, out, err = run_cli("prove")
    assert (code, err) == (1, "")
    assert out == _TEXT + "solver time: z3 1.8s, cvc5 0.8s\n2 of 3 theorems hold; FAILED: ZB\n"
    assert [s[0] for s in _SEEN] == ["ZA", "ZB", "ZCC"]

    code, out, _ = run_cli("prove", "--only", "ZCC", "ZA")
    assert code == 0 and out.endswith("solver time: z3 1.2s\n2 of 2 theorems hold\n")
    assert out.startswith("ok  ZA ")  # in registry order, whatever the order given
    code, out, _ = run_cli("prove", "--only", "ZCC")
    assert code == 0 and out.endswith("\nsolver time: \n1 of 1 theorems hold\n")


def test_prove_json_report(scripted: list[_Scripted]) -> None:
    from tests.cli_helpers import run_cli

    code, out, err = run_cli("prove", "--format", "json", "--only", "ZB", "ZA")
    expected = {"solver": "z3", "theorems": [t.run().to_json() for t in scripted[:2]], "failed": 1}
    assert (code, err, out) == (1, "", json.dumps(expected, indent=2) + "\n")
    code, out, _ = run_cli("prove", "--format", "json", "--only", "ZA")
    assert code == 0 and json.loads(out)["failed"] == 0


def test_prove_passes_the_solver_settings_to_each_theorem(scripted: list[_Scripted],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from tailguard.backends import cvc5_check, z3_eval
    from tests.cli_helpers import run_cli

    monkeypatch.setattr(cvc5_check, "available", lambda: True)
    run_cli("prove", "--only", "ZA", "--solver", "both", "--rlimit", "7", "--cvc5-rlimit", "9")
    run_cli("prove", "--only", "ZA")
    assert _SEEN == [("ZA", "both", 7, 9), ("ZA", "z3", z3_eval.DEFAULT_RLIMIT, None)]


class _Tty(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[str] = []

    def isatty(self) -> bool:
        return True

    def flush(self) -> None:
        self.flushed.append(self.getvalue())


def test_prove_on_a_terminal_shows_each_theorem_while_it_runs(scripted: list[_Scripted]) -> None:
    from tailguard.cli.main import main

    out, err = _Tty(), io.StringIO()
    assert main(["prove", "--only", "ZA", "ZB"], stdout=out, stderr=err) == 1
    lines = _TEXT.splitlines(keepends=True)
    assert out.getvalue() == (
        "     ZA    Holds with a bound ..." + "\r" + "".join(lines[:2])
        + "     ZB    Fails with a case ..." + "\r" + "".join(lines[2:5])
        + "solver time: z3 1.8s, cvc5 0.8s\n1 of 2 theorems hold; FAILED: ZB\n")
    assert out.flushed[0] == "     ZA    Holds with a bound ..."  # shown before the theorem runs
    out = _Tty()
    assert main(["prove", "--only", "ZA", "--format", "json"], stdout=out, stderr=err) == 0
    assert json.loads(out.getvalue())["failed"] == 0  # no progress text in the JSON


def test_prove_setup_errors_exit_2_with_the_reason(scripted: list[_Scripted], monkeypatch: pytest.MonkeyPatch) -> None:
    from tailguard.backends import cvc5_check
    from tailguard.cli import prove
    from tailguard.speclang.load import SpecError
    from tests.cli_helpers import run_cli

    code, out, err = run_cli("prove", "--only", "ZB", "T99", "Q1")
    assert (code, out, err) == (2, "", "tailguard prove: --only: no theorem Q1, T99; known: ZA, ZB, ZCC\n")

    monkeypatch.setattr(cvc5_check, "available", lambda: False)
    assert run_cli("prove", "--only", "ZA")[0] == 0  # z3 alone needs no cvc5
    _SEEN.clear()
    for solver in ("cvc5", "both"):
        code, out, err = run_cli("prove", "--solver", solver)
        assert (code, out) == (2, "") and _SEEN == []
        assert err == (f"tailguard prove: --solver {solver} needs cvc5: pip install 'tailguard[prove]' "
                       "(or pip install cvc5)\n")

    def broken() -> None:
        raise SpecError("spec/clauses.toml:3: bad")

    monkeypatch.setattr(prove, "load_theorems", broken)
    assert run_cli("prove") == (2, "", "tailguard prove: spec/clauses.toml:3: bad\n")


def test_the_prove_help_texts_exactly() -> None:
    from tailguard.cli.prove import add_arguments

    parser = argparse.ArgumentParser(prog="tailguard prove")
    add_arguments(parser)
    helps = {a.dest: a.help for a in parser._actions if a.dest != "help"}
    assert helps == {
        "format": "text: one line per theorem (default); json: one object per theorem",
        "only": "run only these theorem ids",
        "solver": "who decides each query: z3 (default), cvc5 (models still come from z3), or both, which must "
                  "agree (a disagreement fails)",
        "rlimit": "z3 resource budget per query (default 50,000,000); an exhausted budget is unknown, which fails",
        "cvc5_rlimit": "cvc5 resource budget per query and strategy (default 200,000,000)",
    }
    assert parser.epilog == ("exit codes: 0 every theorem holds, 1 some theorem failed or was unknown (budget), "
                             "2 setup (no spec/ or proofs/, unknown --only id)")


# The free offset of the pointwise queries is the constant named ``x``: a proof may hand the solver
# a hypothesis instantiated at it (profile_partitioned._instance_at_x does, for cvc5). Here the
# only fact relating the two sets is such an instance, so only the pointwise query can use it.


def test_the_pointwise_queries_reason_about_the_offset_named_x() -> None:
    z3 = _z3()
    from proofs._common import carries, same_clause, subset_implies
    from tailguard.backends.z3_encode import Encoder

    spec, zc, (c_lo, c_hi), (i_lo, i_hi) = _cases()
    x = z3.Int("x")
    p, q = z3.Int("mut.p"), z3.Int("mut.q")
    inside = z3.Implies(z3.And(p <= x, x < q), z3.And(c_lo <= x, x < c_hi))  # [p, q) ⊆ C, at x only
    enc = Encoder(spec, zc)

    then = Encoder(spec, zc.with_value("C", (p, q)))
    r = carries(_holds("C subset I"), given=enc, then=then, assumptions=inside)
    assert (r.status, r.detail) == ("proved", "offset by offset")

    r = subset_implies(_holds("C subset I"), enc, lambda v: z3.And(p <= v, v < q),
                       lambda v: z3.And(i_lo <= v, v < i_hi), assumptions=inside)
    assert (r.status, r.detail) == ("proved", "offset by offset")

    same_at_x = z3.And(c_lo <= x, x < c_hi) == z3.And(i_lo <= x, x < i_hi)  # C and I agree at x
    r = same_clause(_holds("C subset I"), _holds("I subset I"), enc, assumptions=same_at_x)
    assert (r.status, r.detail) == ("proved", "offset by offset")
    # and without that instance neither is the same clause (it is not: C need not lie in I)
    assert same_clause(_holds("C subset I"), _holds("I subset I"), enc, assumptions=True).status == "counterexample"


def test_same_clause_compares_both_sides_and_takes_any_two_clauses() -> None:
    from proofs._common import same_clause
    from tailguard.backends.z3_encode import Encoder

    spec, zc, _, _ = _cases()
    enc = Encoder(spec, zc)
    side = zc.side_conditions()
    # same left side, a right side that differs (and a different clause: the second always holds)
    assert same_clause(_holds("C subset I"), _holds("C subset I | C"), enc, assumptions=side).status == "counterexample"
    assert same_clause(_holds("C subset I"), _holds("n >= 0"), enc, assumptions=side).status == "counterexample"
    assert same_clause(_holds("n >= 0"), _holds("C subset I"), enc, assumptions=side).status == "counterexample"
    r = same_clause(_holds("C subset I"), _holds("(n < 0 or n >= 0) and C subset I"), enc, assumptions=side)
    assert (r.status, r.detail) == ("proved", "")


def test_prove_names_every_failed_theorem(monkeypatch: pytest.MonkeyPatch) -> None:
    from tailguard.cli import prove
    from tests.cli_helpers import run_cli

    failing = _scripted()[1]
    monkeypatch.setattr(prove, "load_theorems", lambda: None)
    monkeypatch.setattr(theorems, "REGISTRY", {"ZB": failing, "ZE": dataclasses.replace(failing, id="ZE")})
    code, out, _ = run_cli("prove")
    assert code == 1 and out.endswith("\n0 of 2 theorems hold; FAILED: ZB, ZE\n")


def test_the_budgets_default_to_none_whatever_the_parser_preset() -> None:
    """``default=None`` is explicit: a parser that presets a budget still gets None (the solver's
    own default) unless --rlimit / --cvc5-rlimit is given."""
    from tailguard.cli.prove import add_arguments

    parser = argparse.ArgumentParser(prog="tailguard prove")
    parser.set_defaults(rlimit=7, cvc5_rlimit=9)
    add_arguments(parser)
    args = parser.parse_args([])
    assert (args.rlimit, args.cvc5_rlimit) == (None, None)
