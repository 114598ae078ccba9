"""``tailguard conform --ledger``: event-log vectors judged by a third-party ledger or audit.

The reference audit and a ledger written naively from SPEC.md (tests/impls/ledger_naive.py,
sharing nothing with the runtime) conform; spec 1.0's lineage rule, a ledger that ignores
``keeps`` and one that ignores ``evict_summary`` do not, each on the vectors of its rule; an
implementation that crashes, hangs or writes garbage exits 2. Every run takes well under a second.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tailguard.backends import ledger_vectors
from tailguard.conform.ledger import load_ledger_vectors
from tailguard.conform.vectors import VectorError
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
NAIVE = str(ROOT / "tests/impls/ledger_naive.py")
REFERENCE = [PY, "-m", "tailguard.conform.ledger_impl"]


def conform(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, err = run_cli("conform", "--ledger", "--format", "json", *args)
    return code, (json.loads(out) if out.strip() else {"stderr": err})


def test_the_vectors_cover_every_kind_and_lineage_and_adoption() -> None:
    vset = load_ledger_vectors()
    kinds = Counter(v.exercises["kind"] for v in vset.vectors)
    assert set(kinds) == {"example", "scenario", "invalid", "random"}, kinds
    assert len({v.id for v in vset.vectors}) == len(vset.vectors)
    events = Counter(ev["event"] for v in vset.vectors for ev in v.log)
    assert {"adopt", "evict_summary", "refusal", "spill", "truncate", "compact"} <= set(events)
    keys = Counter(k for v in vset.vectors for ev in v.log if ev["event"] == "compact" for k in ev)
    assert keys["saw"] > 50 and keys["keeps"] > 20 and keys["summary"] > 50 and keys["override"] > 0
    for v in vset.vectors:
        assert set(v.expected) == {"seed", "strict", "partitioned"}
    assert any(v.expected["strict"].get("unverified") for v in vset.vectors)


def test_the_committed_file_is_what_the_generator_writes() -> None:
    from tailguard.speclang.load import load_spec

    spec = load_spec(ROOT / "spec" / "clauses.toml")
    assert (ROOT / ledger_vectors.PATH).read_text(encoding="utf-8") == ledger_vectors.render(spec, ROOT)


@pytest.mark.parametrize("impl", [REFERENCE, [PY, NAIVE]], ids=["reference-audit", "naive-ledger"])
def test_a_correct_ledger_conforms(impl: list[str]) -> None:
    code, report = conform("--random", "50", "--seed", "3", "--", *impl)
    assert code == 0, report["mismatches"][:3] if "mismatches" in report else report
    assert report["agreed"] == report["checks"] > 1000 and report["compactions"] > 2000


# the wrong implementations: each fails, and on the scenarios of its rule
WRONG = {
    "rule-1.0": ["ledger/example/langchain-lost-summary", "ledger/scenario/saw-empty-loses-summary",
                 "ledger/scenario/evict-then-default", "ledger/invalid/saw-evicted"],
    "ignore-keeps": ["ledger/scenario/keeps-beside", "ledger/scenario/adopt-kept", "ledger/invalid/keeps-departed"],
    "ignore-evict": ["ledger/scenario/evict-then-default", "ledger/scenario/adopt-evicted",
                     "ledger/invalid/saw-evicted"],
    "saw-empty-is-all": ["ledger/scenario/saw-empty-loses-summary", "ledger/scenario/adopt-unseen"],
    "no-unverified": ["ledger/scenario/adopt-seen"],
}


@pytest.mark.parametrize("mode", sorted(WRONG))
def test_a_wrong_ledger_does_not_conform(mode: str) -> None:
    code, report = conform("--random", "0", "--", PY, NAIVE, mode)
    assert code == 1, report
    ids = {m["id"] for m in report["mismatches"]}
    missing = [i for i in WRONG[mode] if i not in ids]
    assert not missing, (mode, missing)
    random_ids = [i for i in ids if i.startswith("ledger/random/")]
    assert mode == "no-unverified" or len(random_ids) >= 5, "the random corpus catches it too"


@pytest.mark.parametrize("mode", ["rule-1.0", "ignore-keeps", "ignore-evict"])
def test_the_three_wrong_rules_fail_on_decisions_alone(mode: str) -> None:
    code, report = conform("--mode", "decision", "--random", "0", "--only", "ledger/scenario", "--", PY, NAIVE, mode)
    assert code == 1
    assert any(m["actual"].get("verdicts") for m in report["mismatches"]), "a decision differs, not only an error"


def test_a_mismatch_report_names_the_compaction_and_reproduces() -> None:
    code, out, _ = run_cli("conform", "--ledger", "--profile", "partitioned", "--random", "0",
                           "--only", "ledger/scenario/keeps-beside", "--", PY, NAIVE, "ignore-keeps")
    assert code == 1
    lines = out.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("MISMATCH ledger/scenario/keeps-beside"))
    assert lines[i + 1] == ('  why:       compaction at line 5: decision "refuse", expected "allow"')
    assert lines[i + 2].startswith('  expected:  {"line": 3, "decision": "allow"')
    repro = lines[i + 4].removeprefix("  reproduce: ")
    answer = subprocess.run(repro, shell=True, capture_output=True, text=True, check=True).stdout.splitlines()
    assert json.loads(answer[1]) == {"line": 5, "decision": "refuse", "failed": ["no_hole"], "holes": [[0, 8]]}
    assert json.loads(answer[-1])["end"] is True
    assert lines[-1].startswith("DOES NOT CONFORM: 0/1 logs agree")


@pytest.mark.parametrize(("variant", "kind"), [("garbage", "garbage"), ("crash", "crash"), ("hang", "hang")])
def test_a_broken_ledger_exits_2(variant: str, kind: str) -> None:
    code, out, _ = run_cli("conform", "--ledger", "--timeout", "0.5", "--", PY, NAIVE, variant)
    assert code == 2
    assert f"IMPLEMENTATION FAILURE ({kind}) on ledger/" in out and "UNUSABLE" in out.splitlines()[-1]
    if kind == "crash":
        assert "exited with 3" in out and "boom" in out


@pytest.mark.parametrize("variant", ["short", "extra"])
def test_a_ledger_that_miscounts_compactions_does_not_conform(variant: str) -> None:
    code, report = conform("--random", "0", "--", PY, NAIVE, variant)
    assert code == 1
    assert any("judgment(s) for" in m["why"] for m in report["mismatches"])


def test_an_altered_or_missing_vector_file_exits_2(tmp_path: Path) -> None:
    shutil.copy(ROOT / "spec/vectors/ledger.json", tmp_path / "ledger.json")
    text = (tmp_path / "ledger.json").read_text()
    (tmp_path / "ledger.json").write_text(text.replace('"decision": "allow"', '"decision": "refuse"', 1))
    with pytest.raises(VectorError, match="sha256"):
        load_ledger_vectors(tmp_path)
    code, out, err = run_cli("conform", "--ledger", "--vectors", str(tmp_path), "--", *REFERENCE)
    assert code == 2 and "sha256" in err and not out
    (tmp_path / "ledger.json").unlink()
    code, _, err = run_cli("conform", "--ledger", "--vectors", str(tmp_path), "--", *REFERENCE)
    assert code == 2 and "ledger.json" in err
    code, _, err = run_cli("conform", "--ledger", "--only", "nope/", "--", *REFERENCE)
    assert code == 2 and "no ledger vector id starts with nope/" in err


def test_the_reference_answers_an_unusable_log_with_its_line_and_field() -> None:
    from tailguard.conform.ledger_impl import answer

    log = ['{"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns", '
           '"truncator_unit": "turns"}', '{"event": "append", "count": 4}',
           '{"event": "compact", "summary_input": [0, 2], "summary_covers": [0, 2], "tail_start": 2, "saw": ["x"]}']
    (only,) = answer("strict", log)
    assert json.loads(only) == {"error": "saw[0]: no summary 'x' is in the context here", "line": 3}
