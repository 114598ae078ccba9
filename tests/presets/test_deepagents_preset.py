"""Differential test of the ``deepagents.SummarizationMiddleware`` preset against deepagents.

deepagents' middleware runs as installed (:mod:`tailguard.doctor.drivers.deepagents`, which
``tailguard doctor`` runs too: ``wrap_model_call`` with a ``ModelRequest`` carrying
a system message, LangChain's ``GenericFakeChatModel`` as summarizer, the test's token counter)
over a real ``FilesystemBackend`` in a temporary directory whose writes fail on the appends
Hypothesis picks (6b ``spill`` with ``on_failure = "proceed"``: the failure is an input of the
session). The preset's model is stepped on the same turns with the same failures; every
compaction is compared: deleted, shown whole, kept, the earlier summary, and what the offload
wrote to the backend.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, Turn, turns

if not REQUIRE:
    pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.doctor.drivers.deepagents import run


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    trigger = draw(st.one_of(st.tuples(st.just("tokens"), st.integers(400, 5000)),
                             st.tuples(st.just("messages"), st.integers(3, 40))))
    keep = draw(st.one_of(st.tuples(st.just("messages"), st.integers(1, 20)),
                          st.tuples(st.just("tokens"), st.integers(50, 2500))))
    trim = draw(st.one_of(st.none(), st.integers(100, 3000)))
    failures = draw(st.sets(st.integers(1, 40), max_size=10))
    return {"trigger": trigger, "keep": keep, "trim": trim, "summary_tokens": draw(st.integers(20, 400)),
            "failures": failures}


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=turns(), k=knobs())
def test_deepagents_agrees_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=turns(max_turns=80), k=knobs())
def test_deepagents_agrees_with_the_preset_model_long(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


def test_the_harness_compares_offloads_and_failures() -> None:
    session = [Turn("human", (200,)), *[Turn("tools", (100, 150, 150)) for _ in range(14)]]
    k = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": 500, "summary_tokens": 100,
         "failures": {8}}
    assert run(session, k) >= 3
