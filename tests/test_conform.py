"""``tailguard conform``: a conforming implementation passes; an off-by-one at any single clause
boundary fails with a report naming it; crashes, hangs and garbage exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HANDWRITTEN = str(ROOT / "tests/impls/handwritten.py")
VARIANTS = str(ROOT / "tests/impls/variants.py")
# every clause with an integer boundary, and the profile it belongs to
BOUNDARY_CLAUSES = [("seed", "floor_reach"), ("seed", "truncation_clear"), ("strict", "well_formed"),
                    ("strict", "floor_in_input"), ("strict", "floor_in_tail"), ("strict", "tail_intact"),
                    ("strict", "seam_contiguous"), ("strict", "summary_honest"), ("strict", "no_hole")]


def test_reference_adapter_conforms() -> None:
    code, out, err = run_cli("conform", "--random", "50", "--", PY, "-m", "tailguard.conform.adapter")
    assert code == 0, out + err
    assert "CONFORMS" in out and "0 mismatch(es)" in out


def test_handwritten_implementation_conforms() -> None:
    code, out, err = run_cli("conform", "--random", "300", "--seed", "7", "--", PY, HANDWRITTEN)
    assert code == 0, out + err


@pytest.mark.parametrize(("profile", "clause"), BOUNDARY_CLAUSES)
def test_an_off_by_one_at_one_clause_boundary_fails_on_that_clauses_vectors(profile: str, clause: str) -> None:
    code, out, _ = run_cli("conform", "--random", "0", "--format", "json", "--",
                           PY, HANDWRITTEN, "--off-by-one", clause)
    assert code == 1
    report = json.loads(out)
    ids = [m["id"] for m in report["mismatches"]]
    assert any(i.startswith(f"boundary/{profile}/{clause}/") for i in ids), ids[:10]


def test_mismatch_report_is_clear_and_reproducible() -> None:
    code, out, _ = run_cli("conform", "--profile", "strict", "--random", "0", "--only", "boundary/strict/seam",
                           "--", PY, HANDWRITTEN, "--off-by-one", "seam_contiguous")
    assert code == 1
    lines = out.splitlines()
    first = lines.index(next(ln for ln in lines if ln.startswith("MISMATCH boundary/strict/seam_contiguous/")))
    assert lines[first + 1].startswith("  case:      {")
    assert lines[first + 2].startswith('  expected:  {"decision": "refuse", "failed": ["seam_contiguous"]')
    assert lines[first + 3].startswith('  actual:    {"decision": "allow"')
    repro = lines[first + 4].removeprefix("  reproduce: ")
    answer = subprocess.run(repro, shell=True, capture_output=True, text=True, check=True).stdout
    assert json.loads(answer)["decision"] == "allow"
    assert lines[-1].startswith("DOES NOT CONFORM:")


def test_comparison_modes() -> None:
    cmd = ["--random", "20", "--", PY, VARIANTS, "decision-only"]
    assert run_cli("conform", "--mode", "decision", *cmd)[0] == 0
    code, out, _ = run_cli("conform", "--mode", "clauses", *cmd)
    assert code == 1 and "MISMATCH" in out
    assert run_cli("conform", *cmd)[0] == 1  # default: everything


@pytest.mark.parametrize(("variant", "kind"), [("garbage", "garbage"), ("crash", "crash"), ("hang", "hang")])
def test_a_broken_implementation_exits_2(variant: str, kind: str) -> None:
    code, out, _ = run_cli("conform", "--timeout", "0.5", "--", PY, VARIANTS, variant)
    assert code == 2
    assert f"IMPLEMENTATION FAILURE ({kind})" in out
    if kind == "crash":
        assert "exited with 3" in out and "boom" in out


def test_usage_errors_exit_2() -> None:
    assert run_cli("conform")[0] == 2
    assert run_cli("conform", "--", "/nonexistent/impl")[0] == 2
    code, _, err = run_cli("conform", "--only", "no-such-id", "--", PY, HANDWRITTEN)
    assert code == 2 and "no vector id" in err


def test_console_script_passes_arguments_after_double_dash() -> None:
    proc = subprocess.run([PY, "-m", "tailguard", "conform", "--profile", "seed", "--random", "5", "--",
                           PY, "-m", "tailguard.conform.adapter"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
