"""deepagents' ``SummarizationMiddleware`` with history offload (brief 6c, 6b ``spill``).

Read from ``deepagents/middleware/summarization.py`` of deepagents 0.7.32: what
``create_deep_agent`` installs is ``create_summarization_middleware(model, backend)``, whose
defaults come from ``compute_summarization_defaults``: with a model profile
(``max_input_tokens``) ``trigger=("fraction", 0.85)``, ``keep=("fraction", 0.10)``, else
``trigger=("tokens", 170000)``, ``keep=("messages", 6)``; and ``trim_tokens_to_summarize=None``
(the class itself defaults to 4000). ``wrap_model_call`` counts the system message and the
tools with the messages (``_count_tokens``), delegates trigger, cutoff and trim to LangChain's
middleware, then ``_offload_to_backend`` appends the candidates (the earlier summary filtered
out) to ``/conversation_history/<session>.md`` **before** summarizing; a failed write returns
``None``, warns, and summarization proceeds (6b: ``on_failure = "proceed"``).
"""

from __future__ import annotations

from typing import Any

from tailguard.pipeline.presets import langchain as lc
from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

TRIGGER = Knob("trigger", "size_or_off", None,
               "when to summarize; default: [\"fraction\", 0.85] with `window`, else "
               "[\"tokens\", 170000] (compute_summarization_defaults)",
               default_text='["fraction", 0.85] with window, else ["tokens", 170000]')
KEEP = Knob("keep", "size", None,
            "what stays verbatim; default: [\"fraction\", 0.10] with `window`, else [\"messages\", 6]",
            default_text='["fraction", 0.10] with window, else ["messages", 6]')
TRIM = Knob("trim_tokens_to_summarize", "count_or_off", None,
            "the summarizer sees only the newest this-many tokens of the candidates; default false "
            "(None: create_summarization_middleware's default; the class's own is 4000)")
KNOBS = (lc.WINDOW, TRIGGER, KEEP, TRIM, lc.SUMMARY_TOKENS)


def resolve(values: Values, given: tuple[str, ...]) -> Values:
    """``compute_summarization_defaults``: the trigger and keep defaults depend on the profile."""
    out = dict(values)
    profile = bool(values["window"])
    if "trigger" not in given:
        out["trigger"] = ("fraction", 0.85) if profile else ("tokens", 170000)
    if "keep" not in given:
        out["keep"] = ("fraction", 0.10) if profile else ("messages", 6)
    return out


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    if values["trigger"] is None:
        return top, []
    spill = {"kind": "spill", "on_failure": "proceed"}  # offload first; a failed write proceeds
    return top, [spill, lc.compact_stage(values)]


OVER_BUDGET = Difference(
    "over_budget",
    "`wrap_model_call` also summarizes when the request exceeds `int(max_input_tokens * 0.95)` "
    "minus the output reservation (`_over_budget`), trigger or not; the stages have no such trigger.",
    "none while the trigger is at most that budget (the defaults: 0.85 < 0.95); otherwise the model "
    "reports that state as an overflow of `window`, never less strict",
    "the harness's triggers are below the budget")
TRUNCATE_ARGS = Difference(
    "truncate_args",
    "the factory's `truncate_args_settings` clip the arguments of `write_file`/`edit_file` tool calls "
    "in messages older than its `keep`; the stages do not model argument clipping.",
    "sessions whose old messages carry those tool calls lose argument text the model does not "
    "report (the offload holds the clipped form)",
    "the harness's tool calls are not write_file/edit_file, so nothing is clipped")
OVERFLOW_RETRY = Difference(
    "context_overflow_retry",
    "on a provider `ContextOverflowError` the middleware summarizes and retries once, and can "
    "offload large trailing tool results; offline there is no provider error.",
    "the model reports the overflow instead (never less strict)",
    "the fake model never raises it")
BASE_TOKENS = Difference(
    "base_tokens_is_the_system_prompt",
    "its trigger counts the system message and the tool schemas with the messages; the policy's "
    "top-level `base_tokens` is that count (constant over a session), the cutoff ignores it as "
    "deepagents' does.",
    "none when `base_tokens` is right; too low a value delays the modelled trigger",
    "the harness passes a system message and sets `base_tokens` to its count")

PRESET = Preset(
    name="deepagents.SummarizationMiddleware",
    summary="deepagents' summarization (create_deep_agent's): offload the candidates to the backend, "
            "then summarize as LangChain does; a failed offload proceeds",
    knobs=KNOBS,
    translate=_translate,
    resolve=resolve,
    validated_on=("deepagents 0.7.32", "langchain 1.5.2", "langchain-core 1.8.3", "langgraph 1.2.24"),
    differential="tests/presets/test_deepagents_preset.py",
    differences=(lc.TAIL_ROUNDS_UP, lc.SUMMARY_IN_TAIL, lc.START_ON_HUMAN, lc.REPORTED_USAGE, BASE_TOKENS, OVER_BUDGET,
                 TRUNCATE_ARGS, OVERFLOW_RETRY, lc.SUMMARY_SIZE),
    top_keys=("base_tokens",),
    doc="docs/presets/deepagents.md",
)
