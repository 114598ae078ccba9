"""Differential test of the ``langchain.SummarizationMiddleware`` preset against LangChain.

The installed ``SummarizationMiddleware`` runs offline (``before_model`` with LangChain's own
``GenericFakeChatModel`` as summarizer) over Hypothesis-generated sessions and knobs; at every
append the preset's model is stepped on the same turn, and every compaction is compared
(:func:`tailguard.doctor.drivers.langchain_messages.compare`: deleted, shown whole, kept verbatim, the earlier
summary), with the preset's declared differences checked as declared.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.presets.harness import (
    EXAMPLES,
    REQUIRE,
    SLOW_EXAMPLES,
    Mismatch,
    ModelRun,
    Turn,
    preset_policy,
    trigger_forms,
    turns,
)

if not REQUIRE:
    pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import BaseMessage

from tailguard.doctor.drivers.langchain import run, run_with_policy, toml_knobs
from tailguard.doctor.drivers.langchain_messages import compare, make_counter, observe, summarizer, turn_messages
from tailguard.pipeline.presets import find


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    trigger = draw(st.one_of(st.tuples(st.just("tokens"), st.integers(300, 5000)),
                             st.tuples(st.just("messages"), st.integers(3, 40))))
    keep = draw(st.one_of(st.tuples(st.just("messages"), st.integers(1, 20)),
                          st.tuples(st.just("tokens"), st.integers(50, 2500))))
    trim = draw(st.one_of(st.none(), st.integers(100, 3000)))
    return {"trigger": trigger, "keep": keep, "trim": trim, "summary_tokens": draw(st.integers(20, 400))}


@st.composite
def clause_knobs(draw: st.DrawFn) -> dict[str, Any]:
    """``knobs`` with LangChain's other trigger forms: a ``TriggerClause`` dict (AND) or a list
    of sizes and dicts (OR)."""
    return {**draw(knobs()), "trigger": draw(trigger_forms((300, 5000), (3, 40)))}


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=turns(), k=knobs())
def test_langchain_agrees_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


@SETTINGS
@given(session=turns(), k=clause_knobs())
def test_trigger_lists_and_clauses_agree_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    """LangChain's trigger lists (OR) and ``TriggerClause`` dicts (AND), translated into a
    ``trigger_any`` stage, compact exactly when and as the real middleware does."""
    run(session, k)


def test_a_wrong_clause_translation_is_caught() -> None:
    """Read an AND clause as an OR (fire on tokens alone): the harness must see LangChain wait
    for the message count."""
    session = [Turn("human", (200,)), *[Turn("ai", (400,)) for _ in range(20)]]
    k = {"trigger": {"tokens": 2000, "messages": 12}, "keep": ("messages", 4), "trim": None,
         "summary_tokens": 100}
    assert run(session, k)[0] >= 1  # the right translation agrees, and compacts
    with pytest.raises(Mismatch):
        run_with_policy(session, k, dict(k, trigger=[("tokens", 2000), ("messages", 12)]))


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=turns(max_turns=80), k=knobs())
def test_langchain_agrees_with_the_preset_model_long(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


def test_the_harness_compares_real_compactions() -> None:
    """The generated sessions do compact, with holes and tool turns: the test is not vacuous."""
    session = [Turn("human", (200,)), *[Turn("tools", (100, 150, 150)) for _ in range(12)]]
    k = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": 500, "summary_tokens": 100}
    compared, _ = run(session, k)
    assert compared >= 2


def test_a_wrong_translation_is_caught() -> None:
    """Break the translation on purpose (keep one message more than LangChain): the harness
    must see the difference."""
    session = [Turn("human", (200,)), *[Turn("ai", (300,)) for _ in range(20)]]
    k = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": None, "summary_tokens": 100}
    wrong = dict(k, keep=("messages", 7))
    policy = preset_policy("langchain.SummarizationMiddleware", toml_knobs(wrong))
    model = summarizer()
    mw = SummarizationMiddleware(model, trigger=k["trigger"], keep=k["keep"],
                                 token_counter=make_counter(100), trim_tokens_to_summarize=None)
    sim = ModelRun(policy)
    messages: list[BaseMessage] = []
    with pytest.raises(Mismatch):
        for index, turn in enumerate(session):
            messages = [*messages, *turn_messages(index, turn)]
            update = mw.before_model({"messages": messages}, None)
            real = None
            if update is not None:
                real = observe(messages, update["messages"][1:], model.calls[-1])
                messages = list(update["messages"][1:])
            predicted, kinds = sim.append(turn)
            compare(real, predicted, kinds, index + 1)


def test_the_preset_names_what_it_was_validated_on() -> None:
    import importlib.metadata as md

    preset = find("langchain.SummarizationMiddleware")
    assert preset is not None
    installed = {f"{p} {md.version(p)}" for p in ("langchain", "langchain-core", "langgraph")}
    assert set(preset.validated_on) == installed, (preset.validated_on, installed)
