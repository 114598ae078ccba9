"""check-config's SARIF validated against the official SARIF 2.1.0 JSON Schema (vendored in
tests/data/sarif, see its README), and a deliberately broken document rejected, so the
validator is live (issue 10 point 6)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tailguard.pipeline.policy import load_policy
from tailguard.pipeline.report import Report, render_sarif
from tailguard.pipeline.solver import decide
from tailguard.pipeline.suggest import suggest
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples" / "policies"
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-2.1.0-rtm.5.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft4Validator(SCHEMA)


def errors(doc: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(doc)]


def test_the_schema_is_the_official_one() -> None:
    assert SCHEMA["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    jsonschema.Draft4Validator.check_schema(SCHEMA)


def test_every_example_and_a_bad_file_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "bad.toml"
    bad.write_text('turn_tokens = [1, 5]\nfloor = 2\nfloor_unit = "turn"\n', encoding="utf-8")
    files = sorted(str(p.relative_to(ROOT)) for p in EX.glob("*.toml"))
    assert files
    code, out, _ = run_cli("check-config", "--format", "sarif", *files, str(bad))
    assert code == 2
    doc = json.loads(out)
    assert errors(doc) == []
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} >= {"hole", "unenforceable", "input", "dead_stage",
                                              "unreachable"}
    flows = [r for r in results if "codeFlows" in r]
    assert flows and all(r["codeFlows"][0]["threadFlows"][0]["locations"] for r in flows)
    code, out, _ = run_cli("check-config", "--profile", "strict", "--format", "sarif", *files)
    assert code == 1
    doc = json.loads(out)
    assert errors(doc) == [] and "floor" in {r["ruleId"] for r in doc["runs"][0]["results"]}


def test_fixes_validate_and_point_at_the_knob_lines() -> None:
    path = EX / "seed-incident.toml"
    policy = load_policy(str(path))
    decision = decide(policy)
    report = Report(policy, decision, suggest(policy, decision))
    doc = json.loads(render_sarif([report]))
    assert errors(doc) == []
    source = path.read_text(encoding="utf-8").splitlines()
    results = [r for r in doc["runs"][0]["results"] if r["level"] == "error"]
    assert results and all(r["fixes"] for r in results)
    for fix in results[0]["fixes"]:
        for rep in fix["artifactChanges"][0]["replacements"]:
            line = source[rep["deletedRegion"]["startLine"] - 1]
            key = rep["insertedContent"]["text"].split("=")[0].strip()
            assert line.split("=")[0].strip() == key  # the knob's own line is the one replaced


def test_a_broken_document_is_rejected() -> None:
    """The validator is live: each of these edits breaks the 2.1.0 schema."""
    code, out, _ = run_cli("check-config", "--format", "sarif", str(EX / "seed-incident.toml"))
    assert code == 1
    good = json.loads(out)
    assert errors(good) == []
    breaks = []
    doc = copy.deepcopy(good)
    doc["version"] = "2.0.0"
    breaks.append(doc)
    doc = copy.deepcopy(good)
    doc["runs"][0]["results"][0]["level"] = "fatal"
    breaks.append(doc)
    doc = copy.deepcopy(good)
    del doc["runs"][0]["tool"]["driver"]["name"]
    breaks.append(doc)
    doc = copy.deepcopy(good)
    flow = next(r for r in doc["runs"][0]["results"] if "codeFlows" in r)["codeFlows"][0]
    flow["threadFlows"][0]["locations"] = []  # minItems 1
    breaks.append(doc)
    doc = copy.deepcopy(good)
    doc["runs"][0]["results"][0]["fixes"] = [{"description": {"text": "x"}, "artifactChanges": []}]
    breaks.append(doc)
    for broken in breaks:
        assert errors(broken), broken
