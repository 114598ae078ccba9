"""Differential test: the z3 engine agrees with the exhaustive explorer on random small
policies (every knob, every stage order, pinned turns, base tokens, ``input`` of each
compact stage, a model window) under both check-config profiles (``partitioned`` and ``strict``).
Spec 1.1 (brief 6b): the messages unit everywhere (``messages_per_turn``), summary placement,
clipping, the input limit's unit and spill stages of both failure modes; the explorer
branches on every message count and on failed spill writes, which the z3 engine reduces away.

Longer run (1,000 policies, about 2.5 minutes on 2 cores)::

    TAILGUARD_SLOW=1 TAILGUARD_AGREE_EXAMPLES=1000 pytest -m slow tests/test_pipeline_agreement.py
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.pipeline.explorer import explore
from tailguard.pipeline.model import PROFILES, Profile, replay
from tailguard.pipeline.policy import Compact, Policy, Spill, Stage, Truncate
from tailguard.pipeline.solver import Budget, decide

units = st.sampled_from(["turns", "tokens"])
units_11 = st.sampled_from(["turns", "tokens", "messages"])


@st.composite
def stages(draw: st.DrawFn, spec11: bool = False) -> Stage:
    unit = units_11 if spec11 else units
    if spec11 and draw(st.integers(0, 5)) == 0:
        return Spill(draw(st.sampled_from(["halt", "proceed"])))
    if draw(st.booleans()):
        return Truncate(draw(unit), draw(st.integers(0, 16)))
    keep_unit = draw(unit)
    keep = draw(st.integers(0, 4) if keep_unit == "turns" else st.integers(0, 8))
    limit = draw(st.sampled_from([0, 0, 1, 2, 3, 5, 8]))
    extra = {}
    if spec11:
        extra = {"summary": draw(st.sampled_from(["separate", "message"])),
                 "clip": limit > 0 and draw(st.booleans()),
                 "input_limit_unit": draw(st.sampled_from(["tokens", "messages"])),
                 # spec 1.2 (brief 6d): LangChain's message-level cut, langmem's first budget
                 "cut": "messages" if keep_unit != "turns" and draw(st.booleans()) else "turns",
                 "first_input_limit": draw(st.sampled_from([0, 0, 1, 3, 6])) if limit else 0}
    return Compact(draw(unit), draw(st.integers(0, 14)), keep_unit, keep,
                   draw(st.integers(0, 3)), limit,
                   input=draw(st.sampled_from(["candidates", "all"])), **extra)  # type: ignore[arg-type]


@st.composite
def policies(draw: st.DrawFn, spec11: bool = False) -> Policy:
    lo = draw(st.integers(1, 2))
    mlo = draw(st.integers(1, 2)) if spec11 else 1
    return Policy(
        name="random", turn_min=lo, turn_max=draw(st.integers(lo, 4 if not spec11 else 3)),
        floor=draw(st.integers(0, 5)), floor_unit=draw(units_11 if spec11 else units),
        stages=tuple(draw(st.lists(stages(spec11), min_size=1, max_size=3))),
        base_tokens=draw(st.integers(0, 3)), keep_first=draw(st.integers(0, 2)),
        window=draw(st.sampled_from([0, 0, 0, 6, 8, 10, 12, 16])),  # spec 1.1
        messages_per_turn=(mlo, draw(st.integers(mlo, 3))) if spec11 else (1, 1),
    )


profiles = st.sampled_from(PROFILES)


def _agree(policy: Policy, profile: Profile) -> None:
    oracle = explore(policy, max_states=50_000, profile=profile)
    if oracle.verdict == "unknown":
        return
    got = decide(policy, Budget(), profile=profile)
    assert got.verdict == oracle.verdict, (profile, policy, oracle, got)
    assert len(got.trace) == len(oracle.trace), (profile, policy, oracle.trace, got.trace)
    # brief 6b: the same truncators unenforceable (dynamics unsafe) or dead (safe)
    assert {(f.kind, f.stage) for f in got.findings if f.kind == "unenforceable"} == \
        {(f.kind, f.stage) for f in oracle.findings if f.kind == "unenforceable"}
    assert got.notes == oracle.notes
    if got.trace:
        found, at = replay(policy, list(got.trace), profile, got.messages, frozenset(got.failures))
        assert at == len(got.trace) and found
        assert {f.kind for f in found} <= {f.kind for f in got.findings}
    if oracle.trace:
        found, at = replay(policy, oracle.trace, profile, oracle.messages, oracle.failures)
        assert at == len(oracle.trace) and found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies(), profiles)
def test_solver_agrees_with_explorer(policy: Policy, profile: Profile) -> None:
    _agree(policy, profile)


@settings(max_examples=int(os.environ.get("TAILGUARD_AGREE_11_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policies(spec11=True), profiles)
def test_solver_agrees_with_explorer_spec_1_1(policy: Policy, profile: Profile) -> None:
    _agree(policy, profile)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("TAILGUARD_SLOW"), reason="set TAILGUARD_SLOW=1")
@settings(max_examples=int(os.environ.get("TAILGUARD_AGREE_EXAMPLES", "1000")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(policies(spec11=True), profiles)
def test_solver_agrees_with_explorer_long(policy: Policy, profile: Profile) -> None:
    _agree(policy, profile)


def test_generator_reaches_both_verdicts() -> None:
    """The differential test is not vacuous: small policies of both kinds exist."""
    safe = Policy("s", 1, 3, 2, "tokens", (Truncate("tokens", 12),
                  Compact("tokens", 10, "turns", 2, 1)))
    unsafe = Policy("u", 1, 3, 2, "tokens", (Truncate("tokens", 12),
                    Compact("tokens", 11, "turns", 2, 1)))
    assert explore(safe).verdict == "safe" and decide(safe).verdict == "safe"
    assert explore(unsafe).verdict == "unsafe" and decide(unsafe).verdict == "unsafe"


@pytest.mark.parametrize("profile", PROFILES)
def test_profiles_and_input_decide_the_floor_rule(profile: Profile) -> None:
    """The new rule, both engines: ``strict`` with ``input = "candidates"`` and a floor
    refuses the first compaction (the floor is never in the summarizer's input); with
    ``input = "all"``, or under ``partitioned``, the policy is safe."""
    for shown in ("candidates", "all"):
        policy = Policy("p", 1, 3, 2, "turns", (Compact("tokens", 6, "turns", 2, 1, input=shown),))
        unsafe = profile == "strict" and shown == "candidates"
        oracle = explore(policy, profile=profile)
        got = decide(policy, profile=profile)
        assert oracle.verdict == got.verdict == ("unsafe" if unsafe else "safe"), (shown, oracle, got)
        if unsafe:
            assert len(got.trace) == len(oracle.trace)
            assert [(f.kind, f.detail) for f in got.findings] == [
                ("floor", "floor turns not in the summarizer input")]
