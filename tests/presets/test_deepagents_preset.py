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

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, Mismatch, Turn, trigger_forms, turns

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


@st.composite
def clause_knobs(draw: st.DrawFn) -> dict[str, Any]:
    """``knobs`` with LangChain's other trigger forms, which deepagents passes to LangChain's
    middleware: a ``TriggerClause`` dict (AND) or a list of sizes and dicts (OR)."""
    return {**draw(knobs()), "trigger": draw(trigger_forms((400, 5000), (3, 40)))}


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


@SETTINGS
@given(session=turns(), k=clause_knobs())
def test_trigger_lists_and_clauses_agree_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    """deepagents' ``trigger`` as a list (OR) or a ``TriggerClause`` dict (AND), translated by
    the langchain preset's code into a ``trigger_any`` stage: the real middleware (its trigger
    counting the system message) compacts, offloads and deletes exactly as modelled."""
    run(session, k)


def test_a_wrong_clause_translation_is_caught() -> None:
    """Read an AND clause as an OR (fire on tokens alone): the harness sees deepagents wait for
    the message count; the right translation agrees and compacts."""
    session = [Turn("human", (200,)), *[Turn("ai", (400,)) for _ in range(20)]]
    k = {"trigger": {"tokens": 2000, "messages": 12}, "keep": ("messages", 4), "trim": None,
         "summary_tokens": 100, "failures": set()}
    assert run(session, k) >= 1
    with pytest.raises(Mismatch):
        run(session, k, dict(k, trigger=[("tokens", 2000), ("messages", 12)]))


def test_a_trigger_list_compacts_on_either_clause() -> None:
    """An OR list whose message clause fires first and whose token clause fires later in the
    same session: both compact as modelled, and dropping either clause from the model is caught."""
    session = [Turn("human", (200,)), *[Turn("ai", (30,)) for _ in range(10)],
               *[Turn("tools", (300, 300, 300)) for _ in range(6)]]
    k = {"trigger": [("messages", 8), ("tokens", 1500)], "keep": ("messages", 3), "trim": None,
         "summary_tokens": 100, "failures": set()}
    assert run(session, k) >= 3
    for alone in (("messages", 8), ("tokens", 1500)):
        with pytest.raises(Mismatch):
            run(session, k, dict(k, trigger=alone))


def test_the_harness_compares_offloads_and_failures() -> None:
    session = [Turn("human", (200,)), *[Turn("tools", (100, 150, 150)) for _ in range(14)]]
    k = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": 500, "summary_tokens": 100,
         "failures": {8}}
    assert run(session, k) >= 3
