"""``tailguard check``: the brief section 7 contract, exit codes and error messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

CASES = Path(__file__).resolve().parents[1] / "examples" / "cases"


def _write(tmp_path: Path, data: object, name: str = "case.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(p)


def _incident() -> dict[str, object]:
    return json.loads((CASES / "seed-incident.json").read_text())


def test_examples_exist() -> None:
    assert sorted(p.name for p in CASES.glob("*.json")) == [
        "healthy-recursive.json", "langchain-partitioned.json", "seed-incident.json",
        "spilled-after-truncation.json"]


@pytest.mark.parametrize(
    ("name", "profile", "code", "out"),
    [
        ("seed-incident", "seed", 0, {"decision": "allow", "failed": [], "holes": []}),
        ("seed-incident", "strict", 1, {"decision": "refuse", "failed": ["no_hole"], "holes": [[0, 8]]}),
        ("healthy-recursive", "seed", 1, {"decision": "refuse", "failed": ["floor_reach"], "holes": []}),
        ("healthy-recursive", "strict", 0, {"decision": "allow", "failed": [], "holes": []}),
        ("spilled-after-truncation", "seed", 1,
         {"decision": "refuse", "failed": ["truncation_clear"], "holes": []}),
        ("spilled-after-truncation", "strict", 0, {"decision": "allow", "failed": [], "holes": []}),
        ("spilled-after-truncation", "partitioned", 0, {"decision": "allow", "failed": [], "holes": []}),
        # LangChain's shape: the summarizer sees the candidates [9, 18), never the kept tail
        ("langchain-partitioned", "strict", 1, {"decision": "refuse", "failed": ["floor_in_input"], "holes": []}),
        ("langchain-partitioned", "partitioned", 0, {"decision": "allow", "failed": [], "holes": []}),
        ("seed-incident", "partitioned", 1, {"decision": "refuse", "failed": ["no_hole"], "holes": [[0, 8]]}),
    ],
)
def test_example_cases_json(name: str, profile: str, code: int, out: dict[str, object]) -> None:
    got_code, stdout, stderr = run_cli("check", "--profile", profile, "--format", "json",
                                       str(CASES / f"{name}.json"))
    assert (got_code, json.loads(stdout), stderr) == (code, out, "")


def test_default_profile_is_strict_and_text_names_clause_and_hole() -> None:
    code, out, _ = run_cli("check", str(CASES / "seed-incident.json"))
    assert code == 1
    assert "refuse (profile strict)" in out
    assert "no_hole: offsets [0, 8) were evicted and are in no summary, spill or tail" in out


def test_every_failed_clause_gets_one_sentence(tmp_path: Path) -> None:
    case = _incident() | {"floor_unit": "tokens", "summary_covers": [8, 40], "tail_start": 50}
    code, out, _ = run_cli("check", _write(tmp_path, case))
    lines = [ln.strip() for ln in out.splitlines()[1:]]
    code_j, js, _ = run_cli("check", "--format", "json", _write(tmp_path, case))
    failed = json.loads(js)["failed"]
    assert code == code_j == 1
    assert [ln.split(":")[0].removeprefix("refuse ") for ln in lines] == failed
    assert "units_agree" in failed and "seam_contiguous" in failed


def test_inconsistent_offsets_refuse_well_formed_not_input_error(tmp_path: Path) -> None:
    case = _incident() | {"tail_start": 61}
    code, out, _ = run_cli("check", "--format", "json", _write(tmp_path, case))
    assert code == 1
    assert json.loads(out) == {"decision": "refuse", "failed": ["well_formed"], "holes": []}
    code, out, _ = run_cli("check", _write(tmp_path, case))
    assert "0 <= t <= n is false" in out


def test_unknown_unit_is_well_formed_refusal(tmp_path: Path) -> None:
    code, out, _ = run_cli("check", "--format", "json", _write(tmp_path, _incident() | {"floor_unit": "bytes",
                                                                                     "truncator_unit": "bytes"}))
    assert (code, json.loads(out)["failed"]) == (1, ["well_formed"])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda c: c.pop("spills"), "spills: missing field"),
        (lambda c: c.update(history_end="60"), "history_end: expected an integer, got str '60'"),
        (lambda c: c.update(history_end=True), "history_end: expected an integer, got bool True"),
        (lambda c: c.update(history_end=60.0), "history_end: expected an integer, got float 60.0"),
        (lambda c: c.update(summary_input=[8]), "summary_input: expected a pair [lo, hi], got [8]"),
        (lambda c: c.update(prior_truncations=[[0, "8"]]), "prior_truncations[0][1]: expected an integer"),
        (lambda c: c.update(prior_coverage={}), "prior_coverage: expected a list of [lo, hi] pairs, got dict"),
        (lambda c: c.update(floor_unit=None), "floor_unit: expected a unit name (string), got NoneType None"),
    ],
)
def test_unusable_input_exits_2_naming_the_field(tmp_path: Path, mutate: object, message: str) -> None:
    case = _incident()
    mutate(case)  # type: ignore[operator]
    code, out, err = run_cli("check", _write(tmp_path, case))
    assert code == 2 and out == ""
    assert message in err
    assert "Traceback" not in err


def test_unparsable_json_names_line_and_column(tmp_path: Path) -> None:
    code, _, err = run_cli("check", _write(tmp_path, '{\n  "history_end": 60,\n  oops\n}'))
    assert code == 2
    assert "case.json:3:3: invalid JSON" in err


def test_not_an_object_and_missing_file(tmp_path: Path) -> None:
    assert run_cli("check", _write(tmp_path, "[1, 2]"))[0] == 2
    code, _, err = run_cli("check", str(tmp_path / "nope.json"))
    assert code == 2 and "no such file" in err


def test_unknown_profile_exits_2() -> None:
    code, _, err = run_cli("check", "--profile", "lenient", str(CASES / "seed-incident.json"))
    assert code == 2 and "unknown profile 'lenient'" in err


def test_extra_keys_are_ignored(tmp_path: Path) -> None:
    code, out, _ = run_cli("check", "--format", "json", _write(tmp_path, _incident() | {"note": 1}))
    assert code == 1 and json.loads(out)["holes"] == [[0, 8]]


def test_missing_optional_solver_is_a_clear_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without z3 installed, solver commands say which extra to install; no traceback."""
    import sys

    monkeypatch.setitem(sys.modules, "z3", None)  # makes `import z3` raise ModuleNotFoundError
    for argv, extra in ((["prove"], "prove"),
                        (["check-config", str(CASES.parent / "policies" / "seed-repaired.toml")], "check-config")):
        for mod in [m for m in sys.modules if m.startswith(("tailguard.pipeline", "tailguard.backends.z3"))]:
            monkeypatch.delitem(sys.modules, mod)
        code, _, err = run_cli(*argv)
        assert code == 2, (argv, err)
        assert "needs the optional package 'z3'" in err and f"pip install 'tailguard[{extra}]'" in err


def test_missing_hypothesis_names_the_verify_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """verify-guard and conform need Hypothesis: the message names the user extra ``verify``."""
    import sys

    monkeypatch.setitem(sys.modules, "hypothesis", None)
    guard = tmp_path / "my_guard.py"
    guard.write_text("def guard(**kw):\n    return True\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_cli("verify-guard", "--no-crosshair", "my_guard:guard")
    assert code == 2 and "needs the optional package 'hypothesis'" in err and "tailguard[verify]" in err, err
