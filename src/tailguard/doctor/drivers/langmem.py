"""langmem's ``summarize_messages`` against the ``langmem.summarize_messages`` preset, and the
langmem adapter (``GuardedSummarizer``) on the same knobs.

``summarize_messages`` (what ``SummarizationNode`` calls before every model call) runs as
installed, with LangChain's ``GenericFakeChatModel`` as the summarizer and the drivers' token
counter (a message is its length in characters); the preset's model is stepped on the same
turns and every summarization is compared: the messages newly marked summarized (deleted),
those the summarizer was shown whole, those still verbatim.
"""

from __future__ import annotations

import functools
import io
import itertools
import random
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langmem.short_term import summarize_messages

from tailguard.adapters.langmem import GuardedSummarizer
from tailguard.doctor.drivers.langchain_messages import RecordingFake, make_counter, turn_messages, turn_of
from tailguard.doctor.harness import (
    Case,
    Compaction,
    Mismatch,
    ModelRun,
    Turn,
    adapter_verdict,
    holes,
    knob_label,
    preset_policy,
    random_turns,
)
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["PRESET_NAME", "cases", "random_knobs", "run", "summarizer", "toml_knobs"]

PRESET_NAME = "langmem.summarize_messages"
FIXED_SESSION = [Turn("human", (200,)), *[Turn("ai", (150,)) for _ in range(20)]]
FIXED_KNOBS: dict[str, Any] = {"max_tokens": 1000, "max_summary_tokens": 100, "max_tokens_before_summary": None}


def random_knobs(rng: random.Random) -> dict[str, Any]:
    """Knobs as the differential test draws them (tests/presets/test_langmem_preset.py)."""
    max_tokens = rng.randint(200, 4000)
    summary = rng.randint(20, min(400, max_tokens - 1))
    before = None if rng.random() < 0.3 else rng.randint(100, max_tokens)
    return {"max_tokens": max_tokens, "max_summary_tokens": summary, "max_tokens_before_summary": before}


def toml_knobs(k: dict[str, Any]) -> str:
    before = "false" if k["max_tokens_before_summary"] is None else k["max_tokens_before_summary"]
    return (f'max_tokens = {k["max_tokens"]}\nmax_summary_tokens = {k["max_summary_tokens"]}\n'
            f"max_tokens_before_summary = {before}\n")


def summarizer(size: int) -> RecordingFake:
    """Replies of exactly ``size`` characters: the summary langmem budgets for."""
    replies = (AIMessage(content=f"SUMMARY{k}".ljust(size, "s")[:size]) for k in itertools.count())
    return RecordingFake(messages=replies, calls=[])


def run(session: list[Turn], k: dict[str, Any], wrong_keep: int = 0) -> int:
    """Drive langmem and the model in lockstep; return the summarizations compared.
    ``wrong_keep``: a deliberately broken translation (for the tests)."""
    policy = preset_policy(PRESET_NAME, toml_knobs(k))
    if wrong_keep:
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
        split: list[int] = []
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
            raise Mismatch(f"{where}: langmem {real}, the model {predicted}", compared + 1)
        if real is None or predicted is None:
            continue
        compared += 1
        if split:  # split_tool_results, as declared: the tail is the rest of the newest turn
            if split != [index] or set(real.deleted) != set(predicted.deleted) - {index}:
                raise Mismatch(f"{where}: langmem split turns {split} (deleted {real.deleted}), the model deleted "
                               f"{predicted.deleted}", compared)
            break
        if real.deleted != predicted.deleted or real.kept != predicted.kept:
            raise Mismatch(f"{where}: langmem deleted {real.deleted} kept {real.kept}, the model "
                           f"{predicted.deleted} {predicted.kept}", compared)
        if real.shown != predicted.shown:
            more = set(real.shown) >= set(predicted.shown)
            less = set(real.shown) <= set(predicted.shown)
            if less and holes(kinds):
                pass  # start_on_human, where the model reports a hole
            elif more and set(real.shown) == set(real.deleted):
                pass  # start_on_human's fallback: nothing left after trimming, all shown
            else:
                raise Mismatch(f"{where}: langmem showed {real.shown}, the model {predicted.shown}; "
                               f"findings {kinds}", compared)
    return compared


def model_findings(session: list[Turn], k: dict[str, Any]) -> list[str]:
    sim = ModelRun(preset_policy(PRESET_NAME, toml_knobs(k)))
    found: list[str] = []
    for turn in session:
        found += sim.append(turn)[1]
    return found


def run_adapter(session: list[Turn], k: dict[str, Any]) -> tuple[int, bool]:
    """``GuardedSummarizer`` (floor 0, ``on_refuse="halt"``) over ``session``: (summarizations it
    allowed, whether it refused one)."""
    guard = GuardedSummarizer(recovery_floor_span=0, on_refuse="halt", log=io.StringIO())
    model = summarizer(k["max_summary_tokens"])
    messages: list[Any] = []
    running: Any = None
    allowed = 0
    for index, turn in enumerate(session):
        messages = [*messages, *turn_messages(index, turn)]
        try:
            result = guard.summarize_messages(messages, running_summary=running, model=model,
                                              max_tokens=k["max_tokens"],
                                              max_tokens_before_summary=k["max_tokens_before_summary"],
                                              max_summary_tokens=k["max_summary_tokens"],
                                              token_counter=make_counter(0))
        except UnrecoverableCompactionError:
            return allowed, True
        if result.running_summary is not None and result.running_summary is not running:
            allowed += 1
            running = result.running_summary
    return allowed, False


def adapter_agrees(session: list[Turn], k: dict[str, Any], *, must_refuse: bool = False) -> int:
    """The adapter and the preset's model on ``session`` (:func:`~tailguard.doctor.harness.adapter_verdict`)."""
    return adapter_verdict(model_findings(session, k), *run_adapter(session, k), must_refuse=must_refuse)


_label = knob_label


def cases(rng: random.Random, sessions: int) -> list[Case]:
    out = [Case("preset", _label(FIXED_KNOBS, FIXED_SESSION), lambda: run(FIXED_SESSION, FIXED_KNOBS))]
    for _ in range(sessions - 1):
        k, session = random_knobs(rng), random_turns(rng)
        out.append(Case("preset", _label(k, session), functools.partial(run, session, k)))
    found = model_findings(FIXED_SESSION, FIXED_KNOBS)
    out.append(Case("adapter", _label(FIXED_KNOBS, FIXED_SESSION),
                    lambda: adapter_agrees(FIXED_SESSION, FIXED_KNOBS, must_refuse=bool(found))))
    k = random_knobs(rng)
    session = random_turns(rng)
    out.append(Case("adapter", _label(k, session), lambda: adapter_agrees(session, k)))
    return out
