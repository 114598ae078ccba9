"""The JavaScript checker, rendered from the same spec, conforms on every vector (needs node)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tailguard.backends.js_render import render_js, render_js_adapter
from tailguard.speclang.load import load_spec
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed")


def test_rendered_files_are_committed_and_stamped() -> None:
    spec = load_spec(ROOT / "spec" / "clauses.toml")
    text = render_js(spec)
    assert text == (ROOT / "js/tailguard-checker.mjs").read_text()
    assert render_js_adapter(spec) == (ROOT / "js/conform-adapter.mjs").read_text()
    assert text.startswith("// GENERATED FILE, do not edit.")
    assert "import " not in text, "the checker module has no dependencies"


@needs_node
def test_js_checker_conforms_on_all_vectors_and_random_cases() -> None:
    code, out, err = run_cli("conform", "--random", "200", "--", str(NODE), str(ROOT / "js/conform-adapter.mjs"))
    assert code == 0, out + err
    assert "CONFORMS" in out


@needs_node
def test_js_checker_rejects_unusable_input_naming_the_field() -> None:
    requests = [
        {"profile": "strict", "case": {"history_end": 1.5}},
        {"profile": "strict", "case": []},
        {"profile": "strict", "case": {**json.loads((ROOT / "examples/cases/seed-incident.json").read_text()),
                                       "floor_unit": 3}},
    ]
    proc = subprocess.run([str(NODE), str(ROOT / "js/conform-adapter.mjs")], check=True, capture_output=True,
                          text=True, input="".join(json.dumps(r) + "\n" for r in requests))
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers[0] == {"error": "history_end: expected an integer, got number 1.5"}
    assert answers[1]["error"].startswith("case: expected a JSON object")
    assert answers[2]["error"].startswith("floor_unit: expected a unit name")


@needs_node
def test_js_checker_reads_json_text_exactly() -> None:
    """Issue 16.7: ``"history_end": 0.0`` is unusable (JSON.parse made it 0 and the checker allowed);
    a repeated key is unusable; an integer beyond 2^53-1 is declined as the checker's limit."""
    good = json.loads((ROOT / "examples/cases/healthy-recursive.json").read_text())
    good = {k: v for k, v in good.items() if not k.startswith("_")}
    text = json.dumps(good)
    requests = [
        '{"profile": "strict", "case": ' + text.replace('"history_end": 100', '"history_end": 100.0') + "}",
        '{"profile": "strict", "case": ' + text[:-1] + ', "spills": [[0, 100]]}}',
        '{"profile": "strict", "case": ' + text.replace('"history_end": 100', '"history_end": 9007199254740993') + "}",
        '{"profile": "strict", "case": ' + text.replace('"history_end": 100', '"history_end": 9007199254740991') + "}",
        '{"profile": "strict", "case": ' + text + "}",
    ]
    assert '"history_end": 100,' in text
    proc = subprocess.run([str(NODE), str(ROOT / "js/conform-adapter.mjs")], check=True, capture_output=True,
                          text=True, input="".join(r + "\n" for r in requests))
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers[0] == {"error": "history_end: expected an integer, got number 100.0"}
    assert answers[1] == {"error": "spills: key repeated in one object"}
    assert answers[2]["error"].startswith("history_end: the integer 9007199254740993 is beyond ±(2^53-1)")
    from tailguard._generated.checker import check_case

    at_limit = json.loads(requests[3])["case"]  # 2^53 - 1 is the largest safe integer: decided exactly
    assert answers[3] == check_case(at_limit, "strict").to_json() and answers[3]["failed"] == ["floor_in_input"]
    assert answers[4] == {"decision": "allow", "failed": [], "holes": []}


@needs_node
def test_js_checker_declines_only_the_declinable_vectors() -> None:
    from tailguard.conform.vectors import load_vectors

    code, out, err = run_cli("conform", "--random", "0", "--", str(NODE), str(ROOT / "js/conform-adapter.mjs"))
    assert code == 0, out + err
    declinable = sum(1 for v in load_vectors(ROOT / "spec" / "vectors").vectors if v.declinable)
    assert declinable >= 30
    assert f"({3 * declinable} declined at a declared limit" in out.splitlines()[-1]
