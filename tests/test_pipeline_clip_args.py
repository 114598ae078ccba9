"""Spec 1.2 (brief 6d): the ``clip_args`` stage (deepagents' ``truncate_args_settings``).

A clip changes no state; every turn of at least ``min_tokens`` outside the clip's newest
``keep`` is a hole once occupancy reaches its trigger. The z3 engine tracks whether such a turn
has left its window (``G``); these tests check it against the exhaustive explorer on random
small policies, and that dropping ``G`` (a deliberately broken engine) is caught.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.pipeline import encode, houdini, solver
from tailguard.pipeline.explorer import explore
from tailguard.pipeline.model import ARGS_CLIPPED, PROFILES, Profile, State, clipped_turns, replay, step
from tailguard.pipeline.policy import ClipArgs, Compact, Policy, PolicyError, Spill, parse_policy
from tailguard.pipeline.solver import Budget, decide
from tailguard.pipeline.trace import session_events
from tests.adapters.fakes import audit_json
from tests.test_pipeline_agreement import stages

units = st.sampled_from(["turns", "tokens", "messages"])


@st.composite
def clip_stage(draw: st.DrawFn) -> ClipArgs:
    keep_unit = draw(units)
    return ClipArgs(draw(units), draw(st.integers(0, 14)), keep_unit,
                    draw(st.integers(0, 3) if keep_unit == "turns" else st.integers(0, 8)),
                    draw(st.integers(1, 4)))


@st.composite
def clip_policies(draw: st.DrawFn) -> Policy:
    lo = draw(st.integers(1, 2))
    mlo = draw(st.integers(1, 2))
    rest = draw(st.lists(stages(spec11=True), max_size=2))
    clip = draw(clip_stage())
    at = draw(st.integers(0, len(rest)))
    return Policy(
        name="random-clip", turn_min=lo, turn_max=draw(st.integers(lo, 4)),
        floor=draw(st.integers(0, 4)), floor_unit=draw(units),
        stages=(*rest[:at], clip, *rest[at:]),
        base_tokens=draw(st.integers(0, 3)), keep_first=draw(st.integers(0, 1)),
        window=draw(st.sampled_from([0, 0, 8, 12, 16])),
        messages_per_turn=(mlo, draw(st.integers(mlo, 3))),
    )


def _agree(policy: Policy, profile: Profile) -> None:
    oracle = explore(policy, max_states=30_000, profile=profile)
    if oracle.verdict == "unknown":
        return
    got = decide(policy, Budget(), profile=profile)
    assert got.verdict == oracle.verdict, (profile, policy, oracle, got)
    assert len(got.trace) == len(oracle.trace), (policy, oracle.trace, got.trace)
    if got.trace:
        found, at = replay(policy, list(got.trace), profile, got.messages, frozenset(got.failures))
        assert at == len(got.trace) and found


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(clip_policies(), st.sampled_from(PROFILES))
def test_solver_agrees_with_explorer_with_clip_args(policy: Policy, profile: Profile) -> None:
    _agree(policy, profile)


# a clipped turn that has left the solver's window (keep 1 turn: a window of one turn)
OUTSIDE = Policy("outside", 1, 5, 0, "tokens", (ClipArgs("tokens", 12, "turns", 1, 5),))


def test_a_clipped_turn_outside_the_window_is_found() -> None:
    oracle, got = explore(OUTSIDE), decide(OUTSIDE)
    assert oracle.verdict == got.verdict == "unsafe"
    assert len(got.trace) == len(oracle.trace) == 3
    found, at = replay(OUTSIDE, list(got.trace))
    assert at == 3 and [(f.kind, f.detail) for f in found] == [("hole", ARGS_CLIPPED)]


def test_an_engine_without_the_outside_flag_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deliberately broken: the encoding forgets turns that left its window. It then calls
    OUTSIDE safe, which the explorer refutes: the agreement test above would fail."""
    real = encode.shape_of

    def no_flag(policy: Policy) -> encode.Shape:
        return dataclasses.replace(real(policy), clip=False)

    for module in (encode, solver, houdini):
        monkeypatch.setattr(module, "shape_of", no_flag)
    assert decide(OUTSIDE).verdict == "safe"
    assert explore(OUTSIDE).verdict == "unsafe"


def test_the_clip_follows_trigger_keep_and_min_tokens() -> None:
    policy = Policy("p", 1, 10, 0, "tokens", (ClipArgs("tokens", 20, "tokens", 6, 5),))
    state = State()
    for size in (5, 4, 6):
        assert step(policy, state, size) == []  # 15 tokens: under the trigger
    assert clipped_turns(policy, state, policy.stages[0]) == []  # type: ignore[arg-type]
    found = step(policy, state, 5)  # 20 tokens: the newest 6 tokens (turn 3) stay; 0 and 2 are large
    assert [(f.kind, f.offsets, f.detail) for f in found] == [("hole", (0, 2), ARGS_CLIPPED)]
    keep_all = dataclasses.replace(policy, stages=(ClipArgs("tokens", 20, "tokens", 20, 5),))
    assert replay(keep_all, [5, 4, 6, 5]) == ([], 0)
    small = dataclasses.replace(policy, stages=(ClipArgs("tokens", 20, "tokens", 6, 7),))
    assert replay(small, [5, 4, 6, 5]) == ([], 0)


def test_a_clip_is_an_audit_refusal_naming_the_clipped_turns() -> None:
    """The ``--emit-trace`` log writes the clip as the adapters do (a decision summarizing
    nothing), and ``tailguard audit`` refuses it with the clipped turns among its holes."""
    policy = Policy("p", 1, 10, 0, "turns", (ClipArgs("turns", 3, "turns", 1, 5), Spill("proceed"),
                                              Compact("turns", 5, "turns", 1, 1)))
    lines = session_events(policy, [6, 1, 1])
    assert lines[-1]["event"] == "compact" and lines[-1]["tail_start"] == 1
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    code, report = audit_json(f.name)
    assert code == 1 and report["violations"] == 1, report
    assert report["compactions"] == [{"line": 3, "decision": "refuse", "failed": ["no_hole"],
                                      "holes": [[0, 1]]}], report


def test_the_stage_is_parsed_with_errors_naming_the_key() -> None:
    text = ('name = "p"\nturn_tokens = [1, 9]\nfloor = 0\nfloor_unit = "tokens"\n[[stage]]\n'
            'kind = "clip_args"\ntrigger_unit = "messages"\ntrigger = 20\nkeep_unit = "messages"\n'
            'keep = 20\nmin_tokens = 501\n')
    assert parse_policy(text).stages == (ClipArgs("messages", 20, "messages", 20, 501, line=5),)
    with pytest.raises(PolicyError, match=r"stage\.0\.min_tokens: must be >= 1"):
        parse_policy(text.replace("501", "0"))
    with pytest.raises(PolicyError, match=r"stage\.0\.min_token: unknown key"):
        parse_policy(text.replace("min_tokens", "min_token"))


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(clip_policies(), st.lists(st.integers(1, 4), min_size=1, max_size=30), st.sampled_from(PROFILES))
def test_model_and_audit_agree_up_to_the_first_loss(policy: Policy, raw: list[int], profile: Profile) -> None:
    """Brief 6b's agreement with the runtime, for sessions with a ``clip_args`` stage: the
    ``--emit-trace`` log (cut at the compaction or clip that judges the first loss) replayed by
    the runtime ledger allows every compaction before it and refuses that one, the first loss's
    holes among the holes it names."""
    from tailguard.audit.replay import Verdict, replay as audit_replay
    from tailguard.pipeline.trace import render_jsonl, session_log
    from tailguard.runtime.eventlog import iter_events

    sizes = [min(max(x, policy.turn_min), policy.turn_max) for x in raw]
    log = session_log(policy, sizes, profile, extend=True)
    verdicts = {v.line: v for v in audit_replay(iter_events(render_jsonl(log.lines).splitlines(), "<m>"),
                                                profile=profile) if isinstance(v, Verdict)}
    judged = [x for x in log.losses if x.compaction is not None]
    first = min((x.compaction for x in judged), default=None)
    for line, verdict in verdicts.items():
        if first is None or line < first:
            assert verdict.decision.allowed, (policy, sizes, line)
    for loss in judged:
        if loss.compaction != first:
            continue
        decision = verdicts[first].decision
        assert not decision.allowed, (loss, policy, sizes)
        if loss.finding.kind == "hole":
            assert all(any(lo <= a and b <= hi for lo, hi in decision.holes) for a, b in loss.ranges), \
                (loss, decision, policy, sizes)


def test_the_schema_describes_the_stage() -> None:
    """``spec/policy.schema.json`` accepts a clip_args stage as the parser reads it and rejects
    one without ``min_tokens`` or with ``min_tokens = 0``, as the parser does."""
    import tomllib
    from pathlib import Path

    import jsonschema

    root = Path(__file__).resolve().parents[1]
    validator = jsonschema.Draft202012Validator(json.loads((root / "spec" / "policy.schema.json").read_text()))
    text = ('name = "p"\nturn_tokens = [1, 9]\nfloor = 0\nfloor_unit = "tokens"\n[[stage]]\n'
            'kind = "clip_args"\ntrigger_unit = "tokens"\ntrigger = ["fraction", 0.85]\nkeep_unit = "messages"\n'
            'keep = 20\nmin_tokens = 501\n')
    data = tomllib.loads(text)
    validator.validate({**data, "window": 1000})
    parse_policy(text.replace('name = "p"', 'name = "p"\nwindow = 1000'))
    stage = data["stage"][0]
    for bad in ({k: v for k, v in stage.items() if k != "min_tokens"}, {**stage, "min_tokens": 0}):
        assert not validator.is_valid({**data, "window": 1000, "stage": [bad]}), bad
