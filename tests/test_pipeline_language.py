"""The spec 1.1 policy language of brief 6b in the executable model, one rule at a time:
messages per turn, summary placement with lineage, clipping, spill stages; each case also
through both engines and, where a log shows it, through ``tailguard audit``."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from tailguard.audit.replay import Verdict, replay as audit
from tailguard.pipeline.explorer import explore
from tailguard.pipeline.model import SUMMARY_DROPPED, UNSEEN, State, replay, step
from tailguard.pipeline.policy import Compact, Policy, Spill, Truncate
from tailguard.pipeline.solver import decide
from tailguard.pipeline.trace import render_jsonl, session_log
from tailguard.runtime.eventlog import iter_events
from tests.test_pipeline_agreement import policies

# compact at 4 tokens keeping 1 turn; the summarizer shown 3 tokens (the earlier summary,
# of 2 tokens, counting against it under summary = "message")
MESSAGE = Compact("tokens", 4, "turns", 1, 2, 3, summary="message")


def _policy(*stages: Spill | Compact | Truncate, **kw: object) -> Policy:
    return Policy("p", 1, 2, 0, "turns", tuple(stages), **kw)  # type: ignore[arg-type]


def test_messages_occupancy_counts_the_summary_as_one_message() -> None:
    p = _policy(Compact("messages", 5, "turns", 1, 0), messages_per_turn=(1, 3))
    state = State()
    assert step(p, state, 1, messages=3) == []
    assert state.occupancy(p, "messages") == 3
    step(p, state, 1, messages=2)  # 5 messages: compacts, keeps the newest turn
    assert (state.verbatim, state.summary) == ([1], True)
    assert state.occupancy(p, "messages") == 2 + 1
    assert state.occupancy(p, "tokens") == 1  # a 0-token summary


def test_keep_and_floor_in_messages_sum_whole_turns() -> None:
    """Keep 3 messages: a 2-message turn then a 2-message one do not both fit (atomic)."""
    p = Policy("p", 1, 1, 3, "messages", (Compact("turns", 3, "messages", 3, 1),),
               messages_per_turn=(1, 2))
    found, at = replay(p, [1, 1, 1], messages=[1, 2, 2])
    assert at == 3 and [(f.kind, f.offsets) for f in found] == [("floor", (1,))]
    assert replay(p, [1, 1, 1], messages=[1, 1, 2])[1] == 0


def test_message_summary_not_shown_whole_loses_what_only_it_held() -> None:
    """Brief 6b / 4c: appends 2, 2 compact turn 0 (2 tokens seen, 3 allowed); the third
    append compacts turn 1 (2 tokens) beside the 2-token earlier summary: 4 > 3, so the
    summary is not seen whole and turn 0, which only it held, is lost."""
    p = _policy(MESSAGE)
    found, at = replay(p, [2, 2, 2, 2])
    assert at == 3
    assert [(f.kind, f.offsets, f.detail) for f in found] == [("hole", (0,), SUMMARY_DROPPED)]
    separate = _policy(replace(MESSAGE, summary="separate"))
    assert replay(separate, [2, 2, 2, 2])[1] == 0
    log = session_log(p, [2, 2, 2])
    assert log.lines[-1]["saw"] == []
    verdicts = [v for v in audit(iter_events(render_jsonl(log.lines).splitlines()),
                                 profile="partitioned") if isinstance(v, Verdict)]
    assert [v.decision.allowed for v in verdicts] == [True, False]
    assert verdicts[-1].decision.holes == ((0, 1),)
    assert explore(p).verdict == decide(p).verdict == "unsafe"


def test_the_earlier_summary_alone_is_compacted() -> None:
    """Under ``message`` the summary is a candidate: with every turn in the tail a
    compaction still runs, and here drops a 5-token summary that a 4-token input cannot
    show whole. Stage 0 summarizes everything into that summary first."""
    p = _policy(Compact("tokens", 4, "turns", 0, 5),
                Compact("tokens", 1, "turns", 5, 1, 4, summary="message"))
    state, events = State(), []  # type: ignore[var-annotated]
    assert step(p, state, 2, events) == []
    found = step(p, state, 2, events)
    assert [(f.kind, f.stage, f.offsets, f.detail) for f in found] == [
        ("hole", 1, (0, 1), SUMMARY_DROPPED)]
    assert [e.data for e in events if e.kind == "compact"] == [(0, 0, 2, 1), (1, 2, 2, 0)]
    assert explore(p).verdict == decide(p).verdict == "unsafe"


def test_truncate_never_drops_a_summary() -> None:
    p = _policy(Compact("turns", 2, "turns", 0, 3), Truncate("tokens", 2))
    found, _ = replay(p, [1, 1])
    assert [f.kind for f in found] == ["overflow"]  # 3 summary tokens stay


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policies(spec11=True))
def test_clip_never_changes_a_verdict(policy: Policy) -> None:
    """Brief 6b: the clipped candidate counts as unseen, so clipping is verdict-neutral."""
    flipped = replace(policy, stages=tuple(
        replace(s, clip=not s.clip) if isinstance(s, Compact) and s.input_limit > 0 else s
        for s in policy.stages))
    a, b = explore(policy, max_states=20_000), explore(flipped, max_states=20_000)
    if "unknown" not in (a.verdict, b.verdict):
        assert (a.verdict, a.trace) == (b.verdict, b.trace)


@pytest.mark.parametrize(("on_failure", "verdict"), [("halt", "safe"), ("proceed", "unsafe")])
def test_spill_failure_modes(on_failure: str, verdict: str) -> None:
    """An input limit of 1 token hides candidates; a spill makes them recoverable unless a
    ``proceed`` write fails, which the checker chooses."""
    p = _policy(Spill(on_failure), Compact("tokens", 4, "turns", 1, 1, 1))  # type: ignore[arg-type]
    assert replay(p, [2, 2, 2, 2])[1] == 0  # every write succeeds
    found, at = replay(p, [2, 2, 2], failures={2})
    assert (on_failure, at) in (("halt", 0), ("proceed", 2))
    if on_failure == "proceed":
        assert [(f.kind, f.detail) for f in found] == [("hole", UNSEEN)]
    oracle, got = explore(p), decide(p)
    assert oracle.verdict == got.verdict == verdict
    if verdict == "unsafe":
        assert got.failures and set(got.failures) <= set(range(1, len(got.trace) + 1))
        assert replay(p, got.trace, failures=set(got.failures))[1] == len(got.trace)
        log = session_log(p, got.trace, failures=set(got.failures))
        assert not any(e["event"] == "spill" for e in log.lines)
    log = session_log(p, [2, 2, 2, 2])
    assert [e["range"] for e in log.lines if e["event"] == "spill"] == [[0, 1], [1, 2], [2, 3]]


def test_halted_session_appends_nothing_more() -> None:
    p = _policy(Spill("halt"), Compact("tokens", 4, "turns", 1, 1, 1))
    state = State()
    step(p, state, 2)
    step(p, state, 2, spill_fails=True)
    assert state.halted and step(p, state, 2) == [] and len(state.sizes) == 2


def test_spill_without_compact_is_a_dead_stage_note() -> None:
    p = _policy(Compact("tokens", 4, "turns", 1, 1), Spill("proceed"))
    got = decide(p)
    assert got.verdict == "safe" and ("dead_stage", 1) in {(n.kind, n.stage) for n in got.notes}


def test_window_without_stages_overflows() -> None:
    p = Policy("w", 1, 3, 0, "tokens", (), window=5)
    assert explore(p).verdict == decide(p).verdict == "unsafe"
    assert decide(replace(p, window=0)).verdict == "safe"
