"""Differential test of the ``langmem.summarize_messages`` preset against langmem.

``summarize_messages`` (what ``SummarizationNode`` calls before every model call) runs as
installed (:mod:`tailguard.doctor.drivers.langmem`, which ``tailguard doctor`` runs too), with
LangChain's ``GenericFakeChatModel`` as the summarizer and the drivers' token counter (a message
is its length in characters); the preset's model is stepped on the same turns and every
summarization is compared: the messages newly marked summarized (deleted), those the summarizer
was shown whole, those still verbatim.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, Mismatch, Turn, turns

if not REQUIRE:
    pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard.doctor.drivers.langmem import run


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    max_tokens = draw(st.integers(200, 4000))
    summary = draw(st.integers(20, min(400, max_tokens - 1)))
    before = draw(st.one_of(st.none(), st.integers(100, max_tokens)))
    return {"max_tokens": max_tokens, "max_summary_tokens": summary, "max_tokens_before_summary": before}


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=turns(), k=knobs())
def test_langmem_agrees_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=turns(max_turns=80), k=knobs())
def test_langmem_agrees_with_the_preset_model_long(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


def test_the_harness_compares_real_summaries() -> None:
    session = [Turn("human", (200,)), *[Turn("ai", (150,)) for _ in range(20)]]
    assert run(session, {"max_tokens": 1000, "max_summary_tokens": 100, "max_tokens_before_summary": None}) >= 2


def test_a_wrong_translation_is_caught() -> None:
    """A translation that keeps the newest turns verbatim (keep > 0) must be caught."""
    session = [Turn("human", (200,)), *[Turn("ai", (150,)) for _ in range(20)]]
    k = {"max_tokens": 1000, "max_summary_tokens": 100, "max_tokens_before_summary": None}
    with pytest.raises(Mismatch):
        run(session, k, wrong_keep=400)
