"""Brief 7b, issue 10 point 4: ``check-config`` gives the same verdict and the same trace
for a policy whatever else the process checked before, in whatever order the files come,
and from run to run (``PYTHONHASHSEED``); its budgets are counted in z3 resource units,
not time, and an ``unknown`` names the budget that ran out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tailguard.pipeline.model import canonical_trace, replay
from tailguard.pipeline.policy import Compact, Policy, Truncate, load_policy
from tailguard.pipeline.solver import Budget, decide
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(str(p) for p in (ROOT / "examples" / "policies").glob("*.toml"))

# a small "window" shape (compact keeping turns, then a truncator at the window) whose
# failing session is found by the bounded search after the resource-budgeted phase
WINDOW = """\
name = "small-window"
turn_tokens = [1, 40]
base_tokens = 10
floor = 30
floor_unit = "tokens"

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 340
keep_unit = "turns"
keep = 6
summary_tokens = 15

[[stage]]
kind = "truncate"
unit = "tokens"
limit = 400
"""


def _entries(out: str) -> list[dict[str, Any]]:
    """Per-policy JSON objects, without the times (the one thing that may differ)."""
    data = json.loads(out)
    items = data["policies"] if isinstance(data, dict) and "policies" in data else \
        data if isinstance(data, list) else [data]
    for item in items:
        item.pop("seconds", None)
    return sorted(items, key=lambda d: str(d["file"]))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    window = tmp_path_factory.mktemp("det") / "small-window.toml"
    window.write_text(WINDOW, encoding="utf-8")
    return [*EXAMPLES, str(window)]


def test_any_order_and_each_alone_give_the_same_report(files: list[str]) -> None:
    _, out, _ = run_cli("check-config", "--format", "json", *files)
    batch = _entries(out)
    _, out, _ = run_cli("check-config", "--format", "json", *reversed(files))
    assert _entries(out) == batch
    _, out, _ = run_cli("check-config", "--format", "json", *files[2:], *files[:2])
    assert _entries(out) == batch
    alone = [e for f in files for e in _entries(run_cli("check-config", "--format", "json", f)[1])]
    assert sorted(alone, key=lambda d: str(d["file"])) == batch
    assert {e["verdict"] for e in batch} == {"safe", "unsafe"}


def test_same_report_under_any_hash_seed(files: list[str]) -> None:
    runs = []
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "tailguard", "check-config", "--format", "json", *files],
            capture_output=True, text=True, env=env, check=False, cwd=ROOT)
        assert proc.returncode == 1, proc.stderr
        runs.append(_entries(proc.stdout))
    assert runs[0] == runs[1] == runs[2]


def test_decide_twice_in_one_process_gives_the_same_decision(files: list[str]) -> None:
    policy = load_policy(files[-1])
    first, second = decide(policy), decide(policy)
    assert (first.verdict, first.trace, first.findings) == (second.verdict, second.trace,
                                                            second.findings)
    assert first.verdict == "unsafe" and first.trace


def test_trace_is_canonical_the_smallest_sizes_that_reproduce(files: list[str]) -> None:
    policy = load_policy(files[-1])
    got = decide(policy)
    trace = list(got.trace)
    assert canonical_trace(policy, trace) == got.trace  # a fixed point
    _, at = replay(policy, trace)
    assert at == len(trace)
    for i, size in enumerate(trace):  # no single append can be made smaller
        if size > policy.turn_min:
            smaller = [*trace[:i], size - 1, *trace[i + 1 :]]
            assert replay(policy, smaller)[1] != len(trace), (i, trace)


def test_canonical_trace_leaves_a_non_failing_trace_alone() -> None:
    policy = Policy("p", 1, 9, 0, "tokens", (Truncate("tokens", 100),))
    assert canonical_trace(policy, [5, 7]) == (5, 7)
    assert canonical_trace(policy, []) == ()


def test_unknown_names_the_depth_budget() -> None:
    policy = Policy("deep", 1, 1, 0, "turns", (Truncate("turns", 30),
                                                 Compact("turns", 40, "turns", 5, 1)))
    solver_alone = replace(Budget.of(depth=10), falsify_steps=0)  # the falsifier off
    got = decide(policy, solver_alone)
    assert got.verdict == "unknown" and got.exhausted in ("depth", "budget")
    assert "--depth 10" in got.detail
    assert decide(policy).verdict == "unsafe"  # at depth 31: the budget was the reason
    # --depth bounds the concrete falsifier too (issue 26): its 31-append session is not the
    # answer at depth 10, but it is named; without --depth it is the answer
    bounded = decide(policy, Budget.of(depth=10))
    assert bounded.verdict == "unknown" and bounded.exhausted == "depth" and not bounded.trace
    assert "a failing session of 31 appends exists" in bounded.detail, bounded.detail
    assert len(decide(policy, Budget.of()).trace) == 31
    assert len(decide(policy, Budget.of(depth=31)).trace) == 31


def test_unknown_names_the_solver_budget_and_raising_it_decides(tmp_path: Path) -> None:
    """The grid's langchain-window-128k-5k: its deepest bounded-search query needs more than
    1M resource units; with 3M the same run finds the 41-append session."""
    path = tmp_path / "window-128k-5k.toml"
    path.write_text(WINDOW.replace("[1, 40]", "[1, 5000]").replace("= 10\n", "= 1000\n")
                    .replace("= 30\n", "= 6400\n").replace("= 340\n", "= 108800\n")
                    .replace("keep = 6", "keep = 20").replace("= 15\n", "= 1500\n")
                    .replace("= 400\n", "= 128000\n"), encoding="utf-8")
    code, out, _ = run_cli("check-config", "--format", "json", "--budget", "1", str(path))
    [entry] = _entries(out)
    assert (code, entry["verdict"], entry["exhausted"]) == (3, "unknown", "budget")
    assert "solver budget ran out" in entry["unknown_reason"]
    assert "raise --budget (now 1)" in entry["unknown_reason"]
    code, out, _ = run_cli("check-config", "--format", "json", "--budget", "3", str(path))
    [entry] = _entries(out)
    assert (code, entry["verdict"]) == (1, "unsafe")
    assert len(entry["findings"][0]["trace"]) == 41


def test_budget_must_be_positive() -> None:
    code, _, err = run_cli("check-config", "--budget", "0", EXAMPLES[0])
    assert code == 2 and "--budget must be >= 1" in err
