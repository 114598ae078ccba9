"""Bundled example policies: each file states its expected verdict under the default
profile (``partitioned``) and under ``strict``; the engine must reach it within the
2-second budget, every unsafe trace must replay, and its emitted event log, audited under
the same profile, must refuse exactly its last compaction."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tailguard.audit.replay import Verdict, replay as audit
from tailguard.pipeline.model import PROFILES, Profile, replay
from tailguard.pipeline.policy import load_policy
from tailguard.pipeline.solver import decide
from tailguard.pipeline.trace import render_jsonl, session_events
from tailguard.runtime.eventlog import iter_events

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "policies").glob("*.toml"))


def expected_verdict(text: str, profile: Profile) -> str:
    """``Expected verdict: X`` (default profile) / ``Expected verdict under strict: Y``."""
    label = "Expected verdict under strict" if profile == "strict" else "Expected verdict"
    found = re.search(rf"{label}: (\w+)", text)
    assert found, f"the file does not state {label!r}"
    return found.group(1)


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_verdict(path: Path, profile: Profile) -> None:
    expected = expected_verdict(path.read_text(encoding="utf-8"), profile)
    policy = load_policy(str(path))
    start = time.process_time()  # CPU time: CI runs jobs side by side, wall time is the machine's load
    decision = decide(policy, profile=profile)
    within = re.search(r"Check within: (\d+) s", path.read_text(encoding="utf-8"))
    assert time.process_time() - start < (float(within.group(1)) if within else 2.0)
    assert decision.verdict == expected
    if decision.verdict == "unsafe" and decision.trace:
        failures = frozenset(decision.failures)
        found, at = replay(policy, list(decision.trace), profile, decision.messages, failures)
        assert at == len(decision.trace) and found
        log = render_jsonl(session_events(policy, list(decision.trace), profile, decision.messages,
                                          failures))
        verdicts = [v for v in audit(iter_events(log.splitlines()), profile=profile)
                    if isinstance(v, Verdict)]
        assert [v.decision.allowed for v in verdicts] == [True] * (len(verdicts) - 1) + [False]


@pytest.mark.parametrize("profile", PROFILES)
def test_same_verdict_and_trace_whatever_was_checked_before(profile: Profile) -> None:
    """Brief 7b / NOTES.md: z3's shared default context made traces depend on the checks
    run before; every decision now runs in a context of its own."""
    by_name = {p.stem: load_policy(str(p)) for p in EXAMPLES}
    first = {name: decide(p, profile=profile) for name, p in sorted(by_name.items())}
    again = {name: decide(p, profile=profile) for name, p in sorted(by_name.items(), reverse=True)}
    for name in by_name:
        assert (first[name].verdict, first[name].trace) == (again[name].verdict, again[name].trace), name
