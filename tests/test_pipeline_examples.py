"""Bundled example policies: each file states its expected verdict; the engine must
reach it within the 2-second budget, and every unsafe trace must replay."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tailguard.pipeline.model import replay
from tailguard.pipeline.policy import load_policy
from tailguard.pipeline.solver import decide

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "policies").glob("*.toml"))


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_verdict(path: Path) -> None:
    expected = re.search(r"Expected verdict: (\w+)", path.read_text(encoding="utf-8"))
    assert expected, f"{path.name} does not state its expected verdict"
    policy = load_policy(str(path))
    start = time.perf_counter()
    decision = decide(policy)
    assert time.perf_counter() - start < 2.0
    assert decision.verdict == expected.group(1)
    if decision.verdict == "unsafe" and decision.trace:
        found, at = replay(policy, list(decision.trace))
        assert at == len(decision.trace) and found
