"""langmem ``summarize_messages`` / ``SummarizationNode`` (brief 6c).

Read from ``langmem/short_term/summarization.py`` of langmem 0.0.30. ``_preprocess_messages``
walks the messages not yet summarized, oldest first, and summarizes the shortest prefix
whose tokens reach ``max_tokens_before_summary`` (default ``max_tokens``) while the rest fits
``max_tokens - max_summary_tokens``; an AI message with tool calls at the cut takes its tool
results along. Called before every model call (``SummarizationNode``), the prefix that first
reaches the threshold ends in the newest turn, so nothing before it stays verbatim.
``_adjust_messages_before_summarization`` trims the prefix to ``max_tokens`` minus the running
summary's tokens (``trim_messages(strategy="last", start_on="human", allow_partial=True)``)
and every message of the untrimmed prefix is marked summarized: what the trim cut is gone.
The running summary is passed whole to the next summarization (``existing_summary``) and is
not counted against the threshold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

MAX_TOKENS = Knob("max_tokens", "count", None, "required: the token budget of the output "
                  "(also the trim budget of what is summarized)", default_text="required")
BEFORE = Knob("max_tokens_before_summary", "count_or_off", None,
              "tokens of not-yet-summarized messages that trigger a summary; default max_tokens",
              default_text="max_tokens")
SUMMARY = Knob("max_summary_tokens", "count", 256, "the budget reserved for the summary")
KNOBS = (MAX_TOKENS, BEFORE, SUMMARY)


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    if values["max_tokens"] is None:
        raise fail("max_tokens", "required key is missing (summarize_messages has no default)")
    if values["max_summary_tokens"] >= values["max_tokens"]:
        raise fail("max_summary_tokens", "`max_summary_tokens` must be less than `max_tokens` "
                                         f"(langmem's ValueError): {values['max_summary_tokens']} >= "
                                         f"{values['max_tokens']}")


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    before = values["max_tokens_before_summary"] or values["max_tokens"]
    stage = {
        "kind": "compact",
        "trigger_unit": "tokens", "trigger": before,
        "keep_unit": "tokens", "keep": 0,  # the prefix that reaches the threshold is everything
        "summary_tokens": 0,  # the running summary is not counted against the threshold
        "summary": "separate",  # shown whole to the next summarization
        "input": "candidates",
        "input_limit": values["max_tokens"] - values["max_summary_tokens"],
        "first_input_limit": values["max_tokens"],  # no running summary yet: the whole budget
        "input_limit_unit": "tokens",
        "clip": True,
    }
    return {}, [stage]


SUMMARY_SIZE = Difference(
    "summary_size",
    "after the first summary the trim budget is `max_tokens` minus the running summary's actual "
    "tokens; the stage's `input_limit` is `max_tokens - max_summary_tokens` (and its "
    "`first_input_limit`, before any summary, `max_tokens`: exact), the budget langmem reserves "
    "for a summary of `max_summary_tokens` tokens.",
    "a summarizer writing fewer tokens leaves langmem a larger budget than modelled (more "
    "careful: what a summary's length is cannot be predicted from the knobs); exact when it "
    "writes `max_summary_tokens` tokens",
    "the fake summarizer writes exactly `max_summary_tokens` tokens; the harness checks real "
    "shown == model shown at every summary (first included), and the replay test sees every "
    "trace lose exactly the named turns")
SPLIT_TOOL_RESULTS = Difference(
    "split_tool_results",
    "only an AIMessage at the cut takes its tool results along; a cut on one of several tool "
    "results leaves the later results verbatim (a turn is split), where the stages summarize the "
    "whole turn.",
    "the model summarizes those results too: its floor findings are a superset (conservative)",
    "the harness checks the real tail is the model's plus only those tool results, then stops "
    "comparing that session (the model cannot hold part of a turn)")
START_ON_HUMAN = Difference(
    "start_on_human",
    "`trim_messages(start_on=\"human\")` drops the trimmed prefix's leading non-human messages; "
    "if nothing is left langmem falls back to the whole prefix.",
    "only when the model already reports a hole at that compaction; the verdict is the same",
    "the harness checks real shown <= model shown unless the model reports a hole there (or the "
    "fallback showed everything)")
SUMMARY_NOT_COUNTED = Difference(
    "summary_not_in_occupancy",
    "the stage's `summary_tokens = 0` makes the trigger exact (langmem does not count the running "
    "summary), so the model's token occupancy leaves the summary out.",
    "no window is checked for this preset (langmem has none); a window check would need the "
    "summary's size added",
    "not applicable")

PRESET = Preset(
    name="langmem.summarize_messages",
    aliases=("langmem.SummarizationNode",),
    summary="langmem summarize_messages / SummarizationNode: summarize the not-yet-summarized "
            "messages once they reach max_tokens_before_summary, trimmed to the summary budget",
    knobs=KNOBS,
    translate=_translate,
    check=_check,
    validated_on=("langmem 0.0.30", "langchain-core 1.8.3"),
    differential="tests/presets/test_langmem_preset.py",
    differences=(SUMMARY_SIZE, SPLIT_TOOL_RESULTS, START_ON_HUMAN, SUMMARY_NOT_COUNTED),
    doc="docs/presets/langmem.md",
)
