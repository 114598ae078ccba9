"""LangChain v1 ``langchain.agents.middleware.SummarizationMiddleware`` (brief 6c).

Read from ``langchain/agents/middleware/summarization.py`` of LangChain 1.5.2:
``before_model`` counts the state's messages with ``token_counter``; ``_should_summarize``
fires when a ``trigger`` clause is met (``tokens``: total ``>=`` the threshold;
``messages``: ``len(messages) >=`` it; ``fraction``: ``int(max_input_tokens * x)``, at least
1); ``_determine_cutoff_index`` keeps the newest ``keep`` (messages: ``len - keep``; tokens:
the earliest suffix within the budget, at least the newest message; cutoff 0, nothing to do,
when the whole context is within it) and moves a cutoff that lands on a ``ToolMessage``
back to its ``AIMessage`` (the stage's ``cut = "messages"``); the earlier summary is the first message and so the oldest
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
    "the stage's `cut = \"messages\"` is LangChain's cut exactly (nothing happens while the whole "
    "context is within `keep`; a `messages` keep keeps every turn holding one of the newest `keep` "
    "messages; a `tokens` keep the newest whole turns within it and always the newest turn) but "
    "for one case the knobs cannot predict: with a `tokens` keep, `_find_safe_cutoff_point` also "
    "keeps an older tool turn whose newest messages (not the whole turn) fit the rest of `keep`; "
    "the model summarizes it (how a turn's tokens split among its messages is not in the session "
    "shape).",
    "only with a `tokens` keep and turns of 2 or more messages: the model summarizes that turn, "
    "so its candidates (what the trim must show) and its floor findings are a superset of "
    "LangChain's at that compaction; a session whose turns keep their tokens in their newest "
    "message (or of one message) behaves exactly as modelled, so no verdict changes",
    "the differential harness checks that the real tail is the model's plus exactly that tool "
    "turn (2 or more messages), then puts it back into the model's state; the replay test "
    "(tests/presets/test_trace_replay.py) gives each turn's tokens to its newest message and "
    "sees every trace lose exactly the named turns")
START_ON_HUMAN = Difference(
    "start_on_human",
    "`trim_messages(start_on=\"human\")` drops the trimmed list's leading non-human messages. The "
    "stage's `start_on_human` models it reading a one-message turn as the user's and a longer one "
    "as an AI message and its tool results; the real message kinds are not in the session shape, "
    "and `allow_partial` keeps part of the cut message only when its text splits at a newline "
    "within the budget (a kept part of the user's message stops the drop). The model also "
    "assumes the conversation opens with the user's message (as `create_agent`'s input does): "
    "one that opens with an AI message loses it at the first compaction even when all fits.",
    "only the offsets of a compaction where the model already reports a hole (the trim cut "
    "something): LangChain drops more or fewer AI-led turns after the cut with other kinds or "
    "texts; the verdict is the same",
    "the harness accepts other shown turns where the model reports a hole; the replay test "
    "(tests/presets/test_trace_replay.py) makes one-message turns human, opens the conversation "
    "with a human message and gives messages a line per token, and sees every trace lose "
    "exactly the named turns")
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
        stage.update(input_limit=values["trim_tokens_to_summarize"], input_limit_unit="tokens", clip=True,
                     start_on_human=True)
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
    differences=(TAIL_ROUNDS_UP, START_ON_HUMAN, REPORTED_USAGE, SYSTEM_PROMPT, SUMMARY_SIZE),
    doc="docs/presets/langchain.md",
)
