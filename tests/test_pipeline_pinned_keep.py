"""Spec 1.2 (brief 6d) language, engine against explorer: OpenHands' token rule, a ``tokens``
keep counted with the pinned turns (``keep_less_pinned``) and the hard context reset under
``min_progress``, on small policies made of them (pinned turns, a summary event that counts as
left out, contexts of a few turns where a tenth is one turn)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.base.errors import PolicyError
from tailguard.pipeline.model import PROFILES, Profile, Session, State, compact_tail, replay
from tailguard.pipeline.policy import Compact, Policy, parse_policy
from tests.test_pipeline_agreement import _agree
from tests.test_pipeline_falsify import _z3_accepts


@st.composite
def pinned_policies(draw: st.DrawFn) -> Policy:
    stage = Compact(
        "tokens", draw(st.integers(3, 12)), "tokens", draw(st.integers(0, 9)), draw(st.integers(0, 3)),
        draw(st.sampled_from([0, 0, 1, 4])), summary=draw(st.sampled_from(["separate", "message", "message"])),
        keep_less_pinned=draw(st.booleans()), min_progress=draw(st.sampled_from([0.0, 0.1, 0.25, 0.5])),
    )
    lo = draw(st.integers(1, 2))
    return Policy("pinned", lo, draw(st.integers(lo, 4)), draw(st.integers(0, 3)),
                  draw(st.sampled_from(["turns", "tokens"])), (stage,),
                  keep_first=draw(st.integers(0, 2)), base_tokens=draw(st.sampled_from([0, 0, 1])),
                  window=draw(st.sampled_from([0, 0, 14])))


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pinned_policies(), st.sampled_from(PROFILES))
def test_the_pinned_keep_and_the_reset_agree_with_the_explorer(policy: Policy, profile: Profile) -> None:
    _agree(policy, profile)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pinned_policies(), st.data())
def test_the_z3_step_loses_where_the_model_does(policy: Policy, data: st.DataObject) -> None:
    """The encoding's step against the model's on one session: the first loss at the same
    append (clean before it), or none."""
    sizes = data.draw(st.lists(st.integers(policy.turn_min, policy.turn_max), min_size=1, max_size=14))
    found, at = replay(policy, sizes)
    if found:
        assert _z3_accepts(policy, Session(tuple(sizes[:at]))), (policy, sizes, found)
        if at > 1:
            assert not _z3_accepts(policy, Session(tuple(sizes[: at - 1]))), (policy, sizes, found)
    else:
        assert not _z3_accepts(policy, Session(tuple(sizes))), (policy, sizes)


def test_the_pinned_turns_come_off_the_keep() -> None:
    policy = Policy("p", 1, 9, 0, "tokens", keep_first=1, base_tokens=2)
    state = State(sizes=[3, 2, 2, 2], pinned=[0], verbatim=[1, 2, 3])
    assert compact_tail(policy, state, Compact("tokens", 1, "tokens", 9, 0)) == 3
    assert compact_tail(policy, state, Compact("tokens", 1, "tokens", 9, 0, keep_less_pinned=True)) == 2  # 9 - 2 - 3
    assert compact_tail(policy, state, Compact("tokens", 1, "tokens", 4, 0, keep_less_pinned=True)) == 0


def test_under_min_progress_no_tail_stays() -> None:
    """One turn left out of eleven in the context: 1 < 0.1 x 11, so the compaction keeps nothing
    (the SDK's hard context reset); one of ten is not under a tenth; with the earlier summary
    (``summary = "message"``) left out too, two of twelve are not either."""
    stage = Compact("tokens", 1, "tokens", 9, 0, min_progress=0.1)
    policy = Policy("p", 1, 9, 0, "tokens", (stage,), keep_first=1)
    assert compact_tail(policy, State(sizes=[1] * 11, pinned=[0], verbatim=list(range(1, 11))), stage) == 0
    ten = State(sizes=[1] * 10, pinned=[0], verbatim=list(range(1, 10)))
    assert compact_tail(policy, ten, Compact("tokens", 1, "tokens", 8, 0, min_progress=0.1)) == 8
    summarized = State(sizes=[1] * 11, pinned=[0], verbatim=list(range(1, 11)), summary=True, summary_tokens=1)
    assert compact_tail(policy, summarized, stage) == 0  # the summary separate: 1 of 12
    assert compact_tail(policy, summarized, Compact("tokens", 1, "tokens", 9, 0, min_progress=0.1,
                                                    summary="message")) == 9  # 2 of 12


def test_the_reset_loses_the_tail_too() -> None:
    """A big old turn, then small ones: forgetting it alone is under a tenth, so everything
    unpinned goes (a hole of every turn, with an input limit of one token)."""
    stage = Compact("tokens", 40, "tokens", 24, 5, 1, summary="message", keep_less_pinned=True, min_progress=0.1)
    policy = Policy("p", 1, 20, 0, "tokens", (stage,), keep_first=1)
    found, at = replay(policy, [1, 20, *([2] * 10)])  # 1 + 20 + 20 >= 40: the tail of 10 fits 24 - 1
    assert at == 12 and found[0].offsets == tuple(range(1, 12))
    plain = Policy("p", 1, 20, 0, "tokens", (replace(stage, min_progress=0.0),), keep_first=1)
    assert replay(plain, [1, 20, *([2] * 10)])[0][0].offsets == (1,)


def test_bad_keys_are_refused() -> None:
    head = 'name = "p"\nturn_tokens = [1, 4]\nfloor = 0\nfloor_unit = "turns"\n[[stage]]\nkind = "compact"\n' \
           'trigger_unit = "tokens"\ntrigger = 9\nsummary_tokens = 1\n'
    with pytest.raises(PolicyError, match="keep_less_pinned"):
        parse_policy(head + 'keep_unit = "turns"\nkeep = 2\nkeep_less_pinned = true\n', "p.toml")
    with pytest.raises(PolicyError, match="min_progress"):
        parse_policy(head + 'keep_unit = "tokens"\nkeep = 2\nmin_progress = 1\n', "p.toml")
    with pytest.raises(PolicyError, match="min_progress"):
        parse_policy(head + 'keep_unit = "tokens"\nkeep = 2\nmin_progress = true\n', "p.toml")
    policy = parse_policy(head + 'keep_unit = "tokens"\nkeep = 2\nkeep_less_pinned = true\nmin_progress = 0.1\n',
                          "p.toml")
    assert policy.stages[0] == Compact("tokens", 9, "tokens", 2, 1, line=policy.stages[0].line,
                                       keep_less_pinned=True, min_progress=0.1)
