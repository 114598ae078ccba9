"""Differential test of the ``agents.OpenAIResponsesCompactionSession`` preset against the SDK.

The SDK runs as installed (:mod:`tailguard.doctor.drivers.openai_agents`, which ``tailguard
doctor`` runs too): a real ``SQLiteSession`` (in memory) with ``SessionSettings(limit=
N)`` under ``OpenAIResponsesCompactionSession(compaction_mode="input")``, whose ``openai``
client answers ``/responses/compact`` locally (``httpx.MockTransport``: the user messages it
was shown, then one compaction item, as the API documents). After every turn the application
calls ``run_compaction()`` and the default hook decides. The preset's model is stepped on the
same turns; every compaction is compared: items deleted, items sent (shown), items kept.

Sessions are an agent run: one user task, then answers and tool calls (a function call and its
output: 2 items). Declared differences, as declared: the model may trigger earlier
(``trigger_counts_user_messages``: its compaction is undone when the SDK's hook declines), and a
shown user message is echoed back verbatim (``user_messages_echoed``: checked, then the session
stops being compared, the two orders of the store differing from there).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, Mismatch, Turn, turns

if not REQUIRE:
    pytest.importorskip("agents", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.doctor.drivers.openai_agents import agent_run, run


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    return {"limit": draw(st.one_of(st.none(), st.integers(3, 30))), "fresh": draw(st.booleans()),
            "threshold": draw(st.integers(2, 12)), "summary_tokens": draw(st.integers(20, 300))}


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=turns(first_human=False), k=knobs())
def test_the_sdk_agrees_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    run(agent_run(session), k)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=turns(max_turns=80, first_human=False), k=knobs())
def test_the_sdk_agrees_with_the_preset_model_long(session: list[Turn], k: dict[str, Any]) -> None:
    run(agent_run(session), k)


def test_the_harness_compares_real_compactions() -> None:
    """A long run with no user message (none is echoed) compacts many times, each compared."""
    session = [Turn("ai", (50,)), *[Turn("tools", (30, 40)) for _ in range(30)]]
    assert run(session, {"limit": 6, "threshold": 3, "summary_tokens": 50, "fresh": True}) >= 3
    assert run(session, {"limit": 6, "threshold": 3, "summary_tokens": 50, "fresh": False}) >= 3


def test_a_window_on_a_long_lived_session_is_caught() -> None:
    """The translation this preset first had (the window on every compaction, as brief 8 puts
    it) is wrong for a long-lived object; the harness must say so."""
    session = [Turn("ai", (50,)), *[Turn("tools", (30, 40)) for _ in range(30)]]
    with pytest.raises(Mismatch):
        run(session, {"limit": 4, "threshold": 5, "summary_tokens": 50, "fresh": False}, force_window=True)
