"""Differential test of the ``langmem.summarize_messages`` preset against langmem.

``summarize_messages`` (what ``SummarizationNode`` calls before every model call) runs as
installed, with LangChain's ``GenericFakeChatModel`` as the summarizer and the test's token
counter (a message is its length in characters); the preset's model is stepped on the same
turns and every summarization is compared: the messages newly marked summarized (deleted),
those the summarizer was shown whole, those still verbatim.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.presets.harness import (
    EXAMPLES,
    REQUIRE,
    SLOW_EXAMPLES,
    Compaction,
    ModelRun,
    Turn,
    holes,
    preset_policy,
    turns,
)

if not REQUIRE:
    pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")

from hypothesis import HealthCheck, given, settings, strategies as st
from langchain_core.messages import AIMessage, BaseMessage
from langmem.short_term import summarize_messages

from tests.presets.lc_driver import RecordingFake, make_counter, turn_messages, turn_of


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    max_tokens = draw(st.integers(200, 4000))
    summary = draw(st.integers(20, min(400, max_tokens - 1)))
    before = draw(st.one_of(st.none(), st.integers(100, max_tokens)))
    return {"max_tokens": max_tokens, "max_summary_tokens": summary, "max_tokens_before_summary": before}


def toml_knobs(k: dict[str, Any]) -> str:
    before = "false" if k["max_tokens_before_summary"] is None else k["max_tokens_before_summary"]
    return (f'max_tokens = {k["max_tokens"]}\nmax_summary_tokens = {k["max_summary_tokens"]}\n'
            f"max_tokens_before_summary = {before}\n")


def summarizer(size: int) -> RecordingFake:
    """Replies of exactly ``size`` characters: the summary langmem budgets for."""
    replies = (AIMessage(content=f"SUMMARY{k}".ljust(size, "s")[:size]) for k in itertools.count())
    return RecordingFake(messages=replies, calls=[])


class Mismatch(AssertionError):
    pass


def run(session: list[Turn], k: dict[str, Any], wrong_keep: int = 0) -> int:
    policy = preset_policy("langmem.summarize_messages", toml_knobs(k))
    if wrong_keep:  # a deliberately broken translation (the break test below)
        policy = policy.with_knob("keep", wrong_keep, stage=0)
    model = summarizer(k["max_summary_tokens"])
    counter = make_counter(0)
    sim = ModelRun(policy)
    messages: list[BaseMessage] = []
    running: Any = None
    compared = 0
    for index, turn in enumerate(session):
        messages = [*messages, *turn_messages(index, turn)]
        calls = len(model.calls)
        result = summarize_messages(messages, running_summary=running, model=model,
                                    max_tokens=k["max_tokens"],
                                    max_tokens_before_summary=k["max_tokens_before_summary"],
                                    max_summary_tokens=k["max_summary_tokens"], token_counter=counter)
        real = None
        if result.running_summary is not None and result.running_summary is not running:
            before_ids = set(running.summarized_message_ids) if running else set()
            newly = set(result.running_summary.summarized_message_ids) - before_ids
            prompt = model.calls[-1] if len(model.calls) > calls else ""
            by_turn: dict[int, list[BaseMessage]] = {}
            for m in messages:
                if m.id not in before_ids and (t := turn_of(m)) is not None:
                    by_turn.setdefault(t, []).append(m)
            deleted = tuple(t for t, ms in by_turn.items() if all(m.id in newly for m in ms))
            kept = tuple(t for t, ms in by_turn.items() if all(m.id not in newly for m in ms))
            split = [t for t in by_turn if t not in deleted and t not in kept]
            shown = tuple(t for t in deleted if all(str(m.content) in prompt for m in by_turn[t]))
            real = Compaction(deleted, shown, kept)
            running = result.running_summary
        predicted, kinds = sim.append(turn)
        where = f"append {index + 1}"
        if (real is None) != (predicted is None):
            raise Mismatch(f"{where}: langmem {real}, the model {predicted}")
        if real is None or predicted is None:
            continue
        compared += 1
        if split:  # split_tool_results, as declared: the tail is the rest of the newest turn
            assert split == [index] and set(real.deleted) == set(predicted.deleted) - {index}, where
            break
        if real.deleted != predicted.deleted or real.kept != predicted.kept:
            raise Mismatch(f"{where}: langmem deleted {real.deleted} kept {real.kept}, the model "
                           f"{predicted.deleted} {predicted.kept}")
        if real.shown != predicted.shown:
            more = set(real.shown) >= set(predicted.shown)
            less = set(real.shown) <= set(predicted.shown)
            if less and holes(kinds):
                pass  # start_on_human, where the model reports a hole
            elif more and set(real.shown) == set(real.deleted):
                pass  # start_on_human's fallback: nothing left after trimming, all shown
            else:
                raise Mismatch(f"{where}: langmem showed {real.shown}, the model {predicted.shown}; "
                               f"findings {kinds}")
    return compared


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
