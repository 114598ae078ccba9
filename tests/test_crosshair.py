"""CrossHair on the PEP 316 contracts of ``tailguard.oracles.contracts``.

* ``test_crosshair_check_finds_no_counterexample`` runs ``tools/crosshair_check.sh`` (the
  documented CI command) with a fixed budget: exit 1 (counterexample) or 2 (error) fails.
  "Not confirmed" is reported, never counted as proof.
* ``test_crosshair_finds_injected_off_by_one`` copies a contract function verbatim into a
  temporary module, injects an off-by-one into its body and requires CrossHair to report a
  counterexample (exit 1): the check can fail.

Budget: CROSSHAIR_TIMEOUT CPU seconds per condition (default 2 here; 3 in the script).
Both tests skip when crosshair is not installed.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tailguard.oracles.contracts as contracts

pytest.importorskip("crosshair")

ROOT = Path(__file__).resolve().parent.parent
BUDGET = os.environ.get("CROSSHAIR_TIMEOUT", "2")


def _env(extra_path: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / "src")] + ([str(extra_path)] if extra_path else [])
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHON"] = sys.executable
    env["CROSSHAIR_TIMEOUT"] = BUDGET
    return env


def test_contracts_module_is_stdlib_only() -> None:
    """Importing the contracts must not pull in crosshair or z3."""
    code = ("import sys, tailguard.oracles.contracts; "
            "bad = [m for m in ('crosshair', 'z3') if m in sys.modules]; "
            "sys.exit(1 if bad else 0)")
    subprocess.run([sys.executable, "-c", code], check=True, env=_env())


def test_contracts_hold_on_examples() -> None:
    """The postconditions themselves hold on the bundled cases (cheap sanity, no CrossHair)."""
    n, t, a, b, c, d, F = 60, 48, 8, 60, 8, 48, 12
    TR, PC, SP = [(0, 8)], [], []
    assert contracts._wf(n, t, a, b, c, d, F, "turns", "turns", TR, PC, SP)
    holes = contracts.checker_strict_holes(n, t, a, b, c, d, F, "turns", "turns", TR, PC, SP)
    assert holes == ((0, 8),)
    args = (n, t, a, b, c, d, TR, PC, SP)
    assert contracts._shaped(holes, n)
    assert contracts._ends_uncovered(holes, *args)
    assert contracts._maximal(holes, *args)
    assert contracts._complete(holes, *args)
    assert contracts._solid(holes, *args)
    assert not contracts._complete((), *args)


@pytest.mark.crosshair  # .ci/test runs tools/crosshair_check.sh as its own step
def test_crosshair_check_finds_no_counterexample() -> None:
    proc = subprocess.run(["bash", str(ROOT / "tools" / "crosshair_check.sh")],
                          capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=900)
    print(proc.stdout, proc.stderr)
    assert "NOT a proof" in proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr


# The injected bug: the floor reaches one offset further back once F >= 5 (so CrossHair
# has to pick F >= 5, n > F and a tail start at the floor's edge).
_ORIGINAL = "return checker_strict_flat(n, t, a, b, c, d, F,"
_BROKEN = "return checker_strict_flat(n, t, a, b, c, d, F + (F >= 5),"


def test_crosshair_finds_injected_off_by_one(tmp_path: Path) -> None:
    src = inspect.getsource(contracts.checker_strict_clauses)
    assert _ORIGINAL in src
    module = tmp_path / "broken_contracts.py"
    module.write_text(
        "from tailguard.oracles.contracts import *  # noqa: F403\n"
        "from tailguard.oracles.contracts import Pairs, _meets, _wf  # noqa: F401\n"
        "from tailguard._generated.checker import Decision  # noqa: F401\n\n"
        + src.replace(_ORIGINAL, _BROKEN)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "crosshair", "check", f"--per_condition_timeout={BUDGET}",
         "broken_contracts.checker_strict_clauses"],
        capture_output=True, text=True, env=_env(tmp_path), cwd=tmp_path, timeout=600)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "false when calling checker_strict_clauses" in proc.stdout


LEDGER = ("ledger_strict_clauses", "ledger_strict_holes", "ledger_seed")


def test_ledger_contracts_hold_on_examples() -> None:
    n, t, a, b, c, d, F = 60, 48, 8, 60, 8, 48, 12
    args = (n, t, a, b, c, d, F, "turns", "turns", [(0, 8), (30, 31)], [(2, 5)], [(31, 40)])
    assert contracts.ledger_strict_holes(*args) == ((0, 2), (5, 8), (30, 31))
    assert contracts.ledger_strict_clauses(*args).failed == ("summary_honest", "no_hole")
    assert contracts.ledger_seed(*args).failed == ()


@pytest.mark.crosshair  # a documented long run (docs/verification.md), not in the CI pytest step
def test_crosshair_on_the_ledger_contracts() -> None:
    """The ledger's contracts (endpoint form) under CrossHair, 1 CPU s per condition (about 19
    conditions: ~20 s); exit 1 (counterexample) or 2 (error) fails."""
    targets = [f"tailguard.oracles.contracts.{name}" for name in LEDGER]
    proc = subprocess.run([sys.executable, "-m", "crosshair", "check", "--per_condition_timeout=1", *targets],
                          capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=600)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.crosshair
def test_crosshair_finds_a_ledger_off_by_one(tmp_path: Path) -> None:
    """The ledger's contracts can fail: a ledger whose floor reaches one unit further back."""
    src = inspect.getsource(contracts.ledger_strict_clauses)
    original = 'return ledger_flat("strict", n, t, a, b, c, d, F,'
    assert original in src
    module = tmp_path / "broken_ledger_contracts.py"
    module.write_text(
        "from tailguard.oracles.contracts import *  # noqa: F403\n"
        "from tailguard.oracles.contracts import Pairs, _meets, _wf, ledger_flat  # noqa: F401\n"
        "from tailguard._generated.checker import Decision  # noqa: F401\n\n"
        + src.replace(original, 'return ledger_flat("strict", n, t, a, b, c, d, F + (F >= 3),'))
    proc = subprocess.run(
        [sys.executable, "-m", "crosshair", "check", f"--per_condition_timeout={BUDGET}",
         "broken_ledger_contracts.ledger_strict_clauses"],
        capture_output=True, text=True, env=_env(tmp_path), cwd=tmp_path, timeout=600)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 1, proc.stdout + proc.stderr
