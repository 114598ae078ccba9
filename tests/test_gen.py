"""Generated files are stamped, deterministic, fresh, and the checker is standard-library only."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

from tailguard.backends.python_render import render_python
from tailguard.backends.targets import targets
from tailguard.speclang.load import load_spec
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]


def test_generated_files_are_fresh() -> None:
    code, out, err = run_cli("gen", "--check")
    assert code == 0, err
    assert "up to date" in out


def test_render_is_deterministic_and_stamped() -> None:
    spec = load_spec(ROOT / "spec" / "clauses.toml")
    text = render_python(spec)
    assert text == render_python(spec)
    assert text.startswith("# GENERATED FILE, do not edit.")
    assert spec.sha256[:16] in text


def test_checker_imports_only_the_standard_library() -> None:
    tree = ast.parse((ROOT / "src/tailguard/_generated/checker.py").read_text())
    modules = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules


def test_import_tailguard_loads_no_solver() -> None:
    code = ("import sys, tailguard, tailguard._generated.checker, tailguard.runtime.case; "
            "bad = [m for m in ('z3', 'crosshair', 'hypothesis') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_gen_check_detects_a_stale_file(tmp_path: Path, monkeypatch: object) -> None:
    copy = tmp_path / "proj"
    for t in targets():
        (copy / t.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / t.path, copy / t.path)
    shutil.copy(ROOT / "spec" / "clauses.toml", copy / "spec" / "clauses.toml")
    shutil.copytree(ROOT / "examples" / "cases", copy / "examples" / "cases")
    monkeypatch.setenv("TAILGUARD_ROOT", str(copy))  # type: ignore[attr-defined]
    assert run_cli("gen", "--check")[0] == 0
    spec_file = copy / "spec" / "clauses.toml"
    spec_file.write_text(spec_file.read_text().replace('holds = "t == 0 or d >= t"', 'holds = "t == 0 or d > t"'))
    code, _, err = run_cli("gen", "--check")
    assert code == 1
    assert "stale: src/tailguard/_generated/checker.py" in err and "run `tailguard gen`" in err
    assert run_cli("gen")[0] == 0
    assert run_cli("gen", "--check")[0] == 0
    assert "(v_d > v_t)" in (copy / "src/tailguard/_generated/checker.py").read_text()
