"""Spec 1.2 (brief 6d) language, engine against explorer: LangChain's message-level cut
(``cut = "messages"``) and langmem's first input limit (``first_input_limit``), on small
policies made of them (the general agreement test draws them too, but rarely where they
matter: a context within ``keep``, a straddling turn, a first summary)."""

from __future__ import annotations

from typing import Any

import pytest
import z3
from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.pipeline import encode
from tailguard.pipeline.encode import occupancy
from tailguard.pipeline.explorer import explore
from tailguard.pipeline.model import PROFILES, Profile, State, compact_tail, replay, step
from tailguard.pipeline.policy import Compact, Policy
from tailguard.pipeline.solver import decide
from tests.test_pipeline_agreement import _agree


@st.composite
def cut_policies(draw: st.DrawFn) -> Policy:
    keep_unit = draw(st.sampled_from(["tokens", "messages"]))
    limit = draw(st.sampled_from([0, 2, 3, 5, 8]))
    stage = Compact(
        draw(st.sampled_from(["tokens", "messages"])), draw(st.integers(1, 10)), keep_unit,
        draw(st.integers(1, 6)), draw(st.integers(0, 3)), limit,
        summary=draw(st.sampled_from(["separate", "message"])), input_limit_unit="tokens",
        cut=draw(st.sampled_from(["messages", "messages", "turns"])),
        first_input_limit=draw(st.sampled_from([0, 1, 4, 9])) if limit else 0,
        start_on_human=bool(limit) and draw(st.booleans()),
    )
    lo = draw(st.integers(1, 2))
    mlo = draw(st.integers(1, 2))
    return Policy("cut", lo, draw(st.integers(lo, 4)), draw(st.integers(0, 4)),
                  draw(st.sampled_from(["turns", "tokens", "messages"])), (stage,),
                  window=draw(st.sampled_from([0, 0, 9, 12])),
                  messages_per_turn=(mlo, draw(st.integers(mlo, 3))))


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cut_policies(), st.sampled_from(PROFILES))
def test_the_cut_and_the_first_limit_agree_with_the_explorer(policy: Policy, profile: Profile) -> None:
    _agree(policy, profile)


def test_nothing_happens_within_keep() -> None:
    """LangChain returns cutoff 0 when the whole context, the summary included, is within
    ``keep``: no compaction, where ``cut = "turns"`` re-summarizes the summary alone."""
    for cut, after in (("messages", ["append", "attempt"]), ("turns", ["append", "compact"])):
        stage = Compact("tokens", 5, "tokens", 6, 1, summary="message", cut=cut)  # type: ignore[arg-type]
        policy = Policy("p", 1, 9, 0, "tokens", (stage,))
        state = State()
        for size in (3, 3, 4):
            step(policy, state, size)
        assert state.summary and state.verbatim == [2]  # 10 > 6: [0, 2) summarized
        events: list = []  # type: ignore[type-arg]
        step(policy, state, 1, events)  # 1 + 4 + 1 = 6 tokens: within keep
        assert [e.kind for e in events] == after, cut


def test_the_tail_keeps_the_straddling_turn_and_the_newest() -> None:
    policy = Policy("p", 1, 9, 0, "tokens", messages_per_turn=(1, 4))
    state = State(sizes=[4, 4, 9], verbatim=[0, 1, 2], messages=[1, 3, 1])
    assert compact_tail(policy, state, Compact("tokens", 1, "messages", 3, 0, cut="messages")) == 2
    assert compact_tail(policy, state, Compact("tokens", 1, "messages", 3, 0)) == 1
    assert compact_tail(policy, state, Compact("tokens", 1, "messages", 4, 0, cut="messages")) == 2
    assert compact_tail(policy, state, Compact("tokens", 1, "tokens", 5, 0, cut="messages")) == 1
    assert compact_tail(policy, state, Compact("tokens", 1, "tokens", 5, 0)) == 0


def test_the_first_limit_applies_before_the_first_summary() -> None:
    stage = Compact("tokens", 6, "tokens", 0, 0, 4, first_input_limit=6)
    policy = Policy("p", 1, 9, 0, "tokens", (stage,))
    state = State()
    assert step(policy, state, 6) == []  # first summary: 6 <= 6, all seen
    assert [f.offsets for f in step(policy, state, 6)] == [(1,)]  # then 6 > 4


def test_start_on_human_drops_the_tool_turns_after_a_cut_tool_turn() -> None:
    """``trim_messages(start_on="human")``: the limit cuts turn 1 (2 messages, AI-led): its part
    goes, and so does the seen tool turn 2, up to the one-message turn 3."""
    stage = Compact("tokens", 9, "tokens", 0, 0, 3, start_on_human=True)
    policy = Policy("p", 1, 9, 0, "tokens", (stage,), messages_per_turn=(1, 2))
    found, at = replay(policy, [1, 5, 1, 1, 1], messages=[1, 2, 2, 1, 1])
    assert at == 5 and found[0].offsets == (0, 1, 2)
    plain = Policy("p", 1, 9, 0, "tokens", (Compact("tokens", 9, "tokens", 0, 0, 3),), messages_per_turn=(1, 2))
    assert replay(plain, [1, 5, 1, 1, 1], messages=[1, 2, 2, 1, 1])[0][0].offsets == (0, 1)
    # a one-message cut turn (the user's) stops it: only what did not fit is lost
    assert replay(policy, [1, 5, 1, 1, 1], messages=[1, 1, 2, 1, 1])[0][0].offsets == (0, 1)


def _guarded(keep: int) -> Policy:
    """A family where the within-``keep`` rule alone decides the verdict. Stage 0 (LangChain's
    cut, the earlier summary a message, an input limit of 2 tokens below any 3-token summary)
    loses the earlier summary whenever it fires once a summary exists; stage 1 (the turns cut,
    no limit) summarizes everything at 6 tokens, base included, and so holds the messages alone
    (base 1 not counted) at most 4 + 2 = 6 tokens after an append. Keep 6: stage 0 never fires
    (safe); keep 5: it fires at exactly 6 = keep + 1 and loses the summary (unsafe)."""
    lossy = Compact("tokens", 1, "tokens", keep, 1, 2, summary="message", cut="messages")
    return Policy("within-keep", 1, 2, 0, "tokens", (lossy, Compact("tokens", 6, "turns", 0, 3)),
                  base_tokens=1)


def _beyond(strict: bool, base: bool, slack: int) -> Any:
    def rule(policy: Policy, stage: Compact, st: Any) -> Any:
        excess = occupancy(policy, st, stage.keep_unit) - (policy.base_tokens if base else 0)
        return excess > stage.keep + slack if strict else excess >= stage.keep + slack
    return rule


# the encoding's within-keep rule broken on purpose: (name, replacement, the keep it fails on)
WITHIN_KEEP_BREAKS: list[tuple[str, Any, int]] = [
    ("the rule gone: the earlier summary alone is re-summarized", lambda p, s, st: z3.BoolVal(True), 6),
    ("fires at exactly keep", _beyond(strict=False, base=True, slack=0), 6),
    ("base_tokens counted", _beyond(strict=True, base=False, slack=0), 6),
    ("one unit too lenient", _beyond(strict=True, base=True, slack=1), 5),
]


def test_within_keep_family_decides_both_ways() -> None:
    """The family is live: the explorer (the executable model, every session) and the z3
    engine agree on it, safe at keep 6 and unsafe at keep 5."""
    for keep, verdict in ((6, "safe"), (5, "unsafe")):
        policy = _guarded(keep)
        oracle = explore(policy, max_states=50_000)
        got = decide(policy)
        assert oracle.verdict == got.verdict == verdict, (keep, oracle, got)
        assert len(got.trace) == len(oracle.trace)


@pytest.mark.parametrize(("what", "rule", "keep"), WITHIN_KEEP_BREAKS, ids=[b[0] for b in WITHIN_KEEP_BREAKS])
def test_breaking_the_within_keep_rule_fails_the_check(
        monkeypatch: pytest.MonkeyPatch, what: str, rule: Any, keep: int) -> None:
    """encode.beyond_keep broken on purpose: too lenient (a compaction the model never runs)
    turns the safe verdict into a trace that does not replay (never reported, so unknown); too
    strict (a compaction the model runs is missed) certifies the unsafe policy safe. Either
    way the engine disagrees with the explorer."""
    policy = _guarded(keep)
    oracle = explore(policy, max_states=50_000)
    monkeypatch.setattr(encode, "beyond_keep", rule)
    got = decide(policy)
    assert got.verdict != oracle.verdict, (what, oracle, got)
