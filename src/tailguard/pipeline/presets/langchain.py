"""LangChain v1 ``langchain.agents.middleware.SummarizationMiddleware`` (brief 6c).

Read from ``langchain/agents/middleware/summarization.py`` of LangChain 1.5.2:
``before_model`` counts the state's messages with ``token_counter``; ``_should_summarize``
fires when a ``trigger`` clause is met (``tokens``: total ``>=`` the threshold;
``messages``: ``len(messages) >=`` it; ``fraction``: ``int(max_input_tokens * x)``, at least
1); ``_determine_cutoff_index`` keeps the newest ``keep`` (messages: ``len - keep``; tokens:
the earliest suffix within the budget) and moves a cutoff that lands on a ``ToolMessage``
back to its ``AIMessage``; the earlier summary is the first message and so the oldest
candidate; ``_trim_messages_for_summary`` shows the summarizer ``trim_messages(strategy=
"last", max_tokens=trim_tokens_to_summarize, start_on="human", allow_partial=True)`` of the
candidates; the update removes every message and adds the summary then the kept messages.
``trigger=None`` (the default) never summarizes.
"""

from __future__ import annotations

from typing import Any

from tailguard.pipeline.presets._base import (
    Difference,
    Knob,
    Preset,
    TriggerAny,
    Values,
    size_unit,
    size_value,
)

WINDOW = Knob("window", "count_or_off", None,
              "the chat model's profile `max_input_tokens` (fractions need it; it is also the "
              "model window: occupancy above it is an overflow)")
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of the summary message the summarizer writes "
                      "(tokens as `token_counter` counts them)", framework_knob=False)
TRIGGER = Knob("trigger", "trigger", None,
               "when to summarize: [\"tokens\", n] (total >= n), [\"messages\", n] (count >= n) or "
               "[\"fraction\", x] (of `window`); a table {tokens = n, messages = m} fires when all "
               "are met (AND), a list of sizes and tables when any is (OR); false/absent: never "
               "(LangChain's default)")
KEEP = Knob("keep", "size", ("messages", 20), "what stays verbatim after a summary")
TRIM = Knob("trim_tokens_to_summarize", "count_or_off", 4000,
            "the summarizer sees only the newest this-many tokens of the candidates (the oldest one "
            "that does not fit is cut: allow_partial); false: None, no trimming")

KNOBS = (WINDOW, TRIGGER, KEEP, TRIM, SUMMARY_TOKENS)

# The differences LangChain's own rules have from the stages (deepagents inherits them).
TAIL_ROUNDS_UP = Difference(
    "tail_rounds_up",
    "`_find_safe_cutoff_point` moves a cutoff that lands on a ToolMessage back to the AIMessage "
    "that called it, so LangChain keeps that whole turn verbatim (more than `keep`), and a token "
    "`keep` smaller than the newest message keeps that message anyway (`cutoff = len - 1`); the "
    "stages keep the newest whole turns within `keep` (brief 6b: no stage splits a turn).",
    "the model summarizes at most one turn more per compaction: its floor and hole findings are "
    "a superset of LangChain's at that compaction (conservative)",
    "the harness checks that the real tail is the model's plus exactly the straddling turn, then "
    "puts that turn back into the model's state and compares the next compaction from there")
START_ON_HUMAN = Difference(
    "start_on_human",
    "`trim_messages(start_on=\"human\")` drops the trimmed list's leading non-human messages, so "
    "when the trim cut something LangChain shows fewer messages than the newest ones that fit.",
    "only when something did not fit: the model then reports a hole at that compaction and "
    "LangChain's is larger, except when what did not fit is the earlier summary (the candidates' "
    "only human message) and dropping it loses nothing (its coverage empty or spilled): the tool "
    "turns LangChain then drops too are holes the model does not report (with no spill that "
    "needs every earlier summary input to have been a hole already, so the session is unsafe "
    "anyway; with deepagents' spill a failed write after a good one can hide one)",
    "the harness checks real shown <= model shown, and that the model reports a hole there, did "
    "not see the earlier summary whole, or spilled every candidate (deepagents' offload: nothing "
    "is lost either way)")
SUMMARY_IN_TAIL = Difference(
    "summary_in_tail",
    "when the whole context (the earlier summary included) is within `keep`, LangChain's cutoff is "
    "0 and nothing happens; the stages put the earlier summary among the candidates always "
    "(6b `summary = \"message\"`), so the model re-summarizes it alone.",
    "the verbatim turns are the same either way; only if the summary does not fit "
    "`trim_tokens_to_summarize` does the model report a hole LangChain does not make (conservative)",
    "the harness accepts a model compaction of the summary alone where LangChain did nothing, and "
    "checks that the verbatim turns agree")
REPORTED_USAGE = Difference(
    "reported_usage",
    "a token trigger also fires when the last AIMessage's provider-reported "
    "`usage_metadata.total_tokens` reaches it; the stages count only the messages.",
    "with a real provider LangChain may compact earlier than the model; no effect offline",
    "the fake chat models report no usage")
SYSTEM_PROMPT = Difference(
    "system_prompt_not_counted",
    "the middleware counts the state's messages only; the system prompt and tool schemas the "
    "model call adds are in neither its count nor the model's (no `base_tokens` here).",
    "an overflow of `window` caused by the system prompt is not found",
    "the harness has no system prompt")
SUMMARY_SIZE = Difference(
    "summary_size",
    "the summary message's size is whatever the summarizer writes; the model assumes "
    "`summary_tokens` (plus LangChain's fixed preamble, counted in it).",
    "a summarizer writing more than `summary_tokens` makes occupancy higher than modelled",
    "the fake summarizer's message is sized to exactly `summary_tokens` under the test's counter")


def compact_stage(values: Values) -> dict[str, Any]:
    """LangChain's one compaction as a 6b compact stage (deepagents reuses it)."""
    window = values["window"] or 0
    trigger, keep = values["trigger"], values["keep"]
    stage: dict[str, Any] = {"kind": "compact"}
    if isinstance(trigger, TriggerAny):  # OR over the clauses, AND within (``_should_summarize``)
        stage["trigger_any"] = [trigger_table(clause, window) for clause in trigger.clauses]
    else:
        stage.update(trigger_unit=size_unit(trigger), trigger=size_value(trigger, window))
    stage.update({
        "keep_unit": size_unit(keep), "keep": size_value(keep, window),
        "summary_tokens": values["summary_tokens"],
        "summary": "message",  # the earlier summary is the oldest candidate, trimmed first
        "input": "candidates",
        "cut": "messages",  # _determine_cutoff_index: a message-level cut, moved to its turn's start
    })
    if values["trim_tokens_to_summarize"] is not None:
        stage.update(input_limit=values["trim_tokens_to_summarize"], input_limit_unit="tokens", clip=True)
    return stage


def trigger_table(clause: tuple[tuple[str, Any], ...], window: int) -> dict[str, int]:
    """One LangChain trigger clause as a ``trigger_any`` table: a fraction is tokens
    (``int(window * x)``, at least 1), and two token thresholds of one clause are their larger."""
    table: dict[str, int] = {}
    for size in clause:
        unit = size_unit(size)
        table[unit] = max(table.get(unit, 0), size_value(size, window))
    return table


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    stages = [compact_stage(values)] if values["trigger"] is not None else []
    return top, stages


PRESET = Preset(
    name="langchain.SummarizationMiddleware",
    summary="LangChain v1 SummarizationMiddleware: summarize all but the newest `keep` when a "
            "`trigger` is met, showing the summarizer the newest `trim_tokens_to_summarize` tokens",
    knobs=KNOBS,
    translate=_translate,
    validated_on=("langchain 1.5.2", "langchain-core 1.8.3", "langgraph 1.2.24"),
    differential="tests/presets/test_langchain_preset.py",
    differences=(TAIL_ROUNDS_UP, SUMMARY_IN_TAIL, START_ON_HUMAN, REPORTED_USAGE, SYSTEM_PROMPT, SUMMARY_SIZE),
    doc="docs/presets/langchain.md",
)
