"""``tailguard conform``: a conforming implementation passes; an off-by-one at any single clause
boundary fails with a report naming it; crashes, hangs and garbage exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from tailguard.conform.vectors import load_vectors
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HANDWRITTEN = str(ROOT / "tests/impls/handwritten.py")
VARIANTS = str(ROOT / "tests/impls/variants.py")
# every clause with an integer boundary, and the profile it belongs to
BOUNDARY_CLAUSES = [("seed", "floor_reach"), ("seed", "truncation_clear"), ("strict", "well_formed"),
                    ("strict", "floor_in_input"), ("strict", "floor_in_tail"), ("strict", "tail_intact"),
                    ("strict", "seam_contiguous"), ("strict", "summary_honest"), ("strict", "no_hole")]


def test_reference_impl_conforms() -> None:
    code, out, err = run_cli("conform", "--random", "50", "--", PY, "-m", "tailguard.conform.reference_impl")
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
                           PY, "-m", "tailguard.conform.reference_impl"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- the bug classes of the input vectors (issue 16.7): each broken reader fails conform
@pytest.mark.parametrize(("variant", "must_fail"), [
    ("int32", "integers/2^31/"),  # wraps at 2^31: the healthy case at n = 2^31 reads as n < 0
    ("int64", "integers/2^64/"),  # wraps at 2^64: a tail 2^64 past the end reads as the base case
    ("double", "integers/2^53+1/"),  # rounds instead of declining beyond 2^53-1
    ("lenient-json", "unusable/history_end/00"),  # reads 60.0 as 60 and decides
])
def test_a_broken_integer_or_json_reader_does_not_conform(variant: str, must_fail: str) -> None:
    code, out, _ = run_cli("conform", "--random", "0", "--mode", "decision", "--format", "json", "--",
                           PY, VARIANTS, variant)
    assert code == 1, out[-2000:]
    ids = [m["id"] for m in json.loads(out)["mismatches"]]
    assert any(i.startswith(must_fail) for i in ids), ids[:20]


def test_the_int32_reader_fails_exactly_where_32_bits_are_not_enough() -> None:
    """The healthy case at n = 2^31 - 1 fits in 32 bits and passes; at n = 2^31 it does not."""
    def run(prefix: str) -> int:
        return run_cli("conform", "--random", "0", "--mode", "decision", "--only", prefix, "--",
                       PY, VARIANTS, "int32")[0]

    assert run("integers/2^31-1/healthy") == 0
    assert run("integers/2^31/healthy") == 1


def test_compare_error_answers() -> None:
    from tailguard.conform.harness import compare

    unusable = {"unusable": ["history_end", "request"]}
    assert compare("everything", unusable, {"error": "history_end: expected an integer, got float 60.0"})
    assert compare("everything", unusable, {"error": "request: line 1, column 3: NaN is not JSON"})
    assert not compare("everything", unusable, {"error": "tail_start: expected an integer"})
    assert not compare("everything", unusable, {"error": "history_endx: expected an integer"})
    assert compare("decision", unusable, {"error": "tail_start: expected an integer"})
    assert not compare("decision", unusable, {"decision": "refuse", "failed": ["well_formed"], "holes": []})
    decided = {"decision": "allow", "failed": [], "holes": []}
    assert not compare("decision", decided, {"error": "history_end: beyond this checker's limit"})


def test_an_implementation_that_declines_everything_does_not_conform(tmp_path: Path) -> None:
    impl = tmp_path / "decline.py"
    impl.write_text("import sys, json\nfor line in sys.stdin:\n"
                    "    print(json.dumps({'error': 'history_end: too big for me'}), flush=True)\n")
    code, out, _ = run_cli("conform", "--random", "0", "--", PY, str(impl))
    assert code == 1
    assert "declined" in out  # only the declinable vectors (beyond 2^53-1) may be declined
    assert "DOES NOT CONFORM" in out.splitlines()[-1]


def test_the_reference_impl_answers_unusable_requests_with_errors() -> None:
    from tailguard.conform.reference_impl import answer

    base = '"tail_start": 0, "summary_input": [0, 0], "summary_covers": [0, 0], "recovery_floor_span": 0, ' \
           '"floor_unit": "turns", "truncator_unit": "turns", "prior_truncations": [], "prior_coverage": [], ' \
           '"spills": []'
    assert json.loads(answer('{"case": {"history_end": 0, ' + base + '}}'))["decision"] == "allow"
    assert json.loads(answer('{"case": {"history_end": 0.0, ' + base + '}}')) == {
        "error": "history_end: expected an integer, got float 0.0"}
    assert json.loads(answer('{"case": {"history_end": 0, "history_end": 0, ' + base + '}}'))["error"] \
        .startswith("history_end: key repeated")
    assert json.loads(answer('{"case": {"history_end": NaN, ' + base + '}}'))["error"].startswith("request: ")
    assert json.loads(answer('{"case": {"history_end": 9223372036854775808, ' + base + '}}'))["decision"] == "allow"


@settings(max_examples=int(os.environ.get("TAILGUARD_FUZZ_EXAMPLES", "60")), deadline=None, database=None)
@given(st.one_of(
    st.text(max_size=300),
    st.sampled_from([v.text for v in load_vectors(ROOT / "spec" / "vectors").vectors[::7]]).flatmap(
        lambda text: st.tuples(st.integers(0, len(text)), st.integers(0, 8),
                               st.sampled_from(['"', "[", "]", "{", "}", ",", "0.0", "NaN", "9" * 1100, "-", "e5",
                                                '"history_end": 1', "true", "\\u0000", "[" * 80]))
        .map(lambda e: '{"profile": "strict", "case": ' + text[:e[0]] + e[2] + text[e[0] + e[1]:] + "}")),
))
def test_the_reference_impl_answers_any_line_with_a_decision_or_an_error(line: str) -> None:
    """Fuzz (issue 16.8) the reference implementation's reader: no exception, one answer, errors name where."""
    from tailguard.conform.reference_impl import answer

    out = json.loads(answer(line))
    assert set(out) in ({"decision", "failed", "holes"}, {"error"}), out
    if "error" in out:
        assert re.match(r"[A-Za-z_][A-Za-z0-9_]*(\[\d+\])*: \S", out["error"]), out
