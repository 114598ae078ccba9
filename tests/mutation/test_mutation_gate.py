"""The mutation gate's own logic, and the equivalent-mutant list kept honest without a mutmut run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gate  # noqa: E402

DIFF = """--- src/tailguard/runtime/escalate.py
+++ src/tailguard/runtime/escalate.py
@@ -8,6 +8,6 @@
     commit, self._commit = self._commit, None
-    decision = commit(summary)
+    decision = commit(None)
     self.action, self.decision = "compacted", decision
"""


def test_mutant_names_map_to_functions() -> None:
    assert gate.function_of("tailguard.runtime.escalate.xǁOutcomeǁcommit__mutmut_5") == \
        "tailguard.runtime.escalate.Outcome.commit"
    assert gate.function_of("tailguard.runtime.escalate.x_maybe_auto_compact__mutmut_13") == \
        "tailguard.runtime.escalate.maybe_auto_compact"
    assert gate.function_of("proofs._common.x_subset_implies__mutmut_60") == "proofs._common.subset_implies"


def test_a_mutation_is_its_lines_before_and_after() -> None:
    assert gate.mutation_of(DIFF) == ("decision = commit(summary)", "decision = commit(None)")


def test_an_entry_without_a_reason_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "eq.toml"
    bad.write_text('[[mutant]]\nfunction = "m.f"\noriginal = "a"\nmutated = "b"\nreason = ""\n')
    with pytest.raises(SystemExit, match="needs a reason"):
        gate.load_equivalent(bad)
    bad.write_text('[[mutant]]\nfunction = "m.f"\noriginal = "a"\n')
    with pytest.raises(SystemExit, match="has no 'mutated'"):
        gate.load_equivalent(bad)


def test_every_equivalent_entry_names_a_function_holding_its_original_line() -> None:
    """An entry whose code was edited away would never match: caught here, not only in a full run.
    (The module's file is read as text: under mutmut its functions are trampolines.)"""
    entries = gate.load_all(gate.equivalent_files())
    assert entries
    for key in entries:
        parts = key.function.split(".")
        origin = None
        for cut in range(len(parts) - 1, 0, -1):
            try:
                spec = importlib.util.find_spec(".".join(parts[:cut]))
            except ImportError:  # a class inside a module, not a module
                continue
            if spec is not None and spec.origin:
                origin = spec.origin
                break
        assert origin is not None, key
        text = Path(origin).read_text(encoding="utf-8")
        assert f"def {parts[-1]}(" in text or f"{parts[-1]}__mutmut_orig(" in text, key
        flat = " ".join(text.split())
        for part in key.original.split(" / "):  # a mutant of several lines: each removed line
            assert " ".join(part.split()) in flat, key
        assert key.original != key.mutated


def test_the_gate_fails_on_an_unlisted_survivor(tmp_path: Path) -> None:
    fake = tmp_path / "mutmut"
    fake.write_text("#!/bin/sh\n"
                    "if [ \"$1\" = results ]; then\n"
                    "  echo '    tailguard.runtime.escalate.xǁOutcomeǁcommit__mutmut_5: survived'\n"
                    "  echo '    tailguard.runtime.escalate.xǁOutcomeǁcommit__mutmut_6: killed'\n"
                    "else\n"
                    f"  cat <<'EOF'\n{DIFF}EOF\n"
                    "fi\n")
    fake.chmod(0o755)
    env_path = f"{tmp_path}:{__import__('os').environ['PATH']}"
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    listed = tmp_path / "listed.toml"
    listed.write_text('[[mutant]]\nfunction = "tailguard.runtime.escalate.Outcome.commit"\n'
                      'original = "decision = commit(summary)"\nmutated = "decision = commit(None)"\n'
                      'reason = "for this test only: pretend it is equivalent"\n')

    def run(eq: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(HERE / "gate.py"), "--equivalent", str(eq)], capture_output=True,
                              text=True, env={"PATH": env_path}, check=False)

    failed = run(empty)
    assert failed.returncode == 1 and "UNEXPLAINED SURVIVED" in failed.stdout, failed.stdout + failed.stderr
    assert 'original = "decision = commit(summary)"' in failed.stdout  # the entry to paste
    passed = run(listed)
    assert passed.returncode == 0 and "MUTATION GATE PASSED" in passed.stdout, passed.stdout + passed.stderr


def test_the_same_mutant_in_two_lists_is_refused(tmp_path: Path) -> None:
    entry = ('[[mutant]]\nfunction = "m.f"\noriginal = "a"\nmutated = "b"\n'
             'reason = "for this test only: listed twice"\n')
    (tmp_path / "equivalent.toml").write_text(entry)
    (tmp_path / "equivalent_other.toml").write_text(entry)
    with pytest.raises(SystemExit, match="listed twice"):
        gate.load_all(sorted(tmp_path.glob("equivalent*.toml")))
    assert len(gate.load_all([tmp_path / "equivalent.toml"])) == 1
