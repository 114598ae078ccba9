"""Release metadata, the kit's lookup, --version and the npm package (the wheel itself: .ci/package-check)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import tailguard
from tailguard.conform.vectors import load_vectors
from tailguard.tooling import resources

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
NODE = shutil.which("node")


def test_version_prints_package_and_spec_versions() -> None:
    proc = subprocess.run([sys.executable, "-m", "tailguard", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"tailguard {tailguard.__version__} (spec {tailguard.SPEC_VERSION})"


def test_metadata_license_is_spdx_and_z3_is_a_range_in_every_extra() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text()[:200]
    assert "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()
    assert project["urls"] and project["classifiers"]
    z3 = [r for extra in project["optional-dependencies"].values() for r in extra if r.startswith("z3-solver")]
    assert z3, "some extra installs z3-solver"
    assert not [r for r in z3 if "==" in r], f"z3-solver pinned exactly in an extra: {z3}"
    assert "0.1.0" not in project.get("version", ""), "the version has one home: tailguard.__version__"


def test_changelog_names_this_version() -> None:
    assert f"## [{tailguard.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def test_kit_lookup_in_a_checkout_finds_spec() -> None:
    # an editable install carries no tailguard/_spec: the checkout's spec/ is the kit
    assert resources.vectors_dir().resolve() == (ROOT / "spec" / "vectors").resolve()
    assert resources.schema_path("eventlog").is_file()
    assert resources.schema_path("policy").is_file()
    assert load_vectors().vectors, "the default vector directory is the kit"


def test_kit_lookup_prefers_installed_package_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kit = tmp_path / "_spec"
    shutil.copytree(ROOT / "spec" / "vectors", kit / "vectors")
    monkeypatch.setattr(resources, "_installed", lambda: kit)
    assert resources.vectors_dir() == kit / "vectors"
    assert load_vectors().directory == kit / "vectors"


def test_kit_missing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tailguard.cli import conform  # noqa: F401  (the command that reports it)
    from tests.cli_helpers import run_cli

    monkeypatch.setattr(resources, "_installed", lambda: None)
    monkeypatch.setenv("TAILGUARD_ROOT", str(tmp_path))
    code, out, err = run_cli("conform", "--", sys.executable, "-m", "tailguard.conform.reference_impl")
    assert code == 2
    assert "conformance kit is not installed" in err and "Traceback" not in err + out


def test_setup_ships_every_vector_file_and_schema() -> None:
    text = (ROOT / "setup.py").read_text()
    shipped = re.search(r"SHIPPED = \((.*?)\)", text, flags=re.S)
    assert shipped is not None
    patterns = re.findall(r'"([^"]+)"', shipped.group(1))
    spec_dir = ROOT / "spec"
    matched = {p.relative_to(spec_dir).as_posix() for pat in patterns for p in spec_dir.glob(pat)}
    manifest = json.loads((spec_dir / "vectors" / "manifest.json").read_text())
    needed = {"vectors/manifest.json", *(f"vectors/{f['path']}" for f in manifest["files"]),
              *(p.relative_to(spec_dir).as_posix() for p in spec_dir.glob("*.schema.json"))}
    assert needed <= matched, f"setup.py does not ship {sorted(needed - matched)}"


def test_npm_package_json() -> None:
    pkg = json.loads((ROOT / "js" / "package.json").read_text())
    assert pkg["version"] == tailguard.__version__
    assert pkg["type"] == "module"
    assert pkg["license"] == "Apache-2.0"
    assert not pkg.get("dependencies") and not pkg.get("devDependencies"), "the JS checker has no dependencies"
    main_export = pkg["exports"]["."]
    for target in (main_export["types"], main_export["default"], pkg["exports"]["./conform-adapter"]):
        assert (ROOT / "js" / target).is_file(), target
    for name in ("tailguard-checker.mjs", "tailguard-checker.d.ts", "conform-adapter.mjs", "vectors/", "test/"):
        assert name in pkg["files"]


def test_dts_declares_every_export_of_the_checker() -> None:
    mjs = (ROOT / "js" / "tailguard-checker.mjs").read_text()
    dts = (ROOT / "js" / "tailguard-checker.d.ts").read_text()
    exported = set(re.findall(r"^export (?:const|class|function) (\w+)", mjs, flags=re.M))
    declared = set(re.findall(r"^export declare (?:const|class|function) (\w+)", dts, flags=re.M))
    assert exported and exported == declared
    assert dts.startswith("// GENERATED FILE, do not edit.")


def test_node_test_suite_runs_the_vectors() -> None:
    if NODE is None:
        pytest.skip("node is not installed: the npm package's node --test suite was NOT run")
    proc = subprocess.run([NODE, "--test", "test/"], cwd=ROOT / "js", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"^# pass [1-9]", proc.stdout, flags=re.M) and re.search(r"^# fail 0$", proc.stdout, flags=re.M)
