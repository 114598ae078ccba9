"""deepagents' ``SummarizationMiddleware`` with history offload (brief 6c, 6b ``spill``).

Read from ``deepagents/middleware/summarization.py`` of deepagents 0.7.32: what
``create_deep_agent`` installs is ``create_summarization_middleware(model, backend)``, whose
defaults come from ``compute_summarization_defaults``: with a model profile
(``max_input_tokens``) ``trigger=("fraction", 0.85)``, ``keep=("fraction", 0.10)``, else
``trigger=("tokens", 170000)``, ``keep=("messages", 6)``; and ``trim_tokens_to_summarize=None``
(the class itself defaults to 4000). ``wrap_model_call`` counts the system message and the
tools with the messages (``_count_tokens``), delegates trigger, cutoff and trim to LangChain's
middleware (its ``trigger`` is LangChain's, passed through: a size, a ``TriggerClause`` dict
(AND) or a list of both (OR), translated as the langchain preset does), then
``_offload_to_backend`` appends the candidates (the earlier summary filtered out) to
``/conversation_history/<session>.md`` **before** summarizing; a failed write returns ``None``,
warns, and summarization proceeds (6b: ``on_failure = "proceed"``).

Argument truncation (spec 1.2, brief 6d): ``wrap_model_call`` first runs ``_truncate_args``:
when ``_should_truncate_args`` holds (its own ``trigger``, one size only, unpacked as ``kind,
value``; LangChain's lists and dicts are refused here: deepagents never fires on a list of two
sizes and raises on the others at the first call; messages ``len >=``, tokens
``total >=`` the same count as the summarization trigger, fraction ``int(max_input_tokens *
x)``, at least 1), every ``write_file``/``edit_file`` call in a message before
``_determine_truncate_cutoff_index`` (its own ``keep``: the newest messages, or the newest
within a token budget) has each string argument longer than ``max_length`` replaced by its
first 20 characters and ``truncation_text``. The state keeps the original, but the model, the
offload and the summarizer get only the clipped view, and the trigger only grows until a
summarization, which then offloads and summarizes the clipped view: the argument survives
nowhere. ``compute_summarization_defaults`` turns it on (with a profile trigger and keep
``("fraction", 0.85)``/``("fraction", 0.10)``, else ``("messages", 20)`` both; ``max_length``
2000). It is the ``clip_args`` stage, before the spill and the compaction.
"""

from __future__ import annotations

import math
from typing import Any

from tailguard.base.args import is_int
from tailguard.pipeline.presets import langchain as lc
from tailguard.pipeline.presets._base import (
    Difference,
    Fail,
    Knob,
    Preset,
    Values,
    read_knob,
    size_unit,
    size_value,
)

TRIGGER = Knob("trigger", "trigger", None,
               "when to summarize, as LangChain's (deepagents passes it to LangChain's middleware): "
               "a size, a table {tokens = n, messages = m} (AND) or a list of sizes and tables (OR); "
               "default: [\"fraction\", 0.85] with `window`, else [\"tokens\", 170000] "
               "(compute_summarization_defaults); false: never",
               default_text='["fraction", 0.85] with window, else ["tokens", 170000]')
KEEP = Knob("keep", "size", None,
            "what stays verbatim; default: [\"fraction\", 0.10] with `window`, else [\"messages\", 6]",
            default_text='["fraction", 0.10] with window, else ["messages", 6]')
TRIM = Knob("trim_tokens_to_summarize", "count_or_off", None,
            "the summarizer sees only the newest this-many tokens of the candidates; default false "
            "(None: create_summarization_middleware's default; the class's own is 4000)")
MAX_LENGTH = 2000  # TruncateArgsSettings' max_length default
TRUNCATION_TEXT = "...(argument truncated)"
SETTINGS_KEYS = ("trigger", "keep", "max_length", "truncation_text")
_ARGS_TRIGGER = Knob("trigger", "size_or_off", None, "")
_ARGS_KEEP = Knob("keep", "size", ("messages", 20), "")


def read_truncate_args(value: Any, fail: Fail, window: int) -> dict[str, Any] | None:
    """deepagents' ``TruncateArgsSettings`` as TOML: ``false`` (``None``: off) or a table of its
    keys, each missing one taking ``SummarizationMiddleware.__init__``'s default (a missing
    ``trigger`` is ``None``: off)."""
    name = "framework.truncate_args_settings"
    if value is False:
        return None
    if not isinstance(value, dict):
        raise fail(name, f"expected a table {{trigger = [...], keep = [...], max_length = n, "
                         f"truncation_text = \"...\"}} or false (None: off), got {value!r}")
    for key in value:
        if key not in SETTINGS_KEYS:
            raise fail(f"{name}.{key}", f"unknown key of deepagents' TruncateArgsSettings (keys: "
                                        f"{', '.join(SETTINGS_KEYS)})")

    def sub(key: str, reason: str) -> Any:
        return fail(f"{name}.{key}", reason)

    if "trigger" in value and _clause_form(value["trigger"]):
        raise sub("trigger", "deepagents' TruncateArgsSettings trigger is one size or false (None), "
                             "not LangChain's trigger lists or tables: `_should_truncate_args` unpacks it "
                             "as (kind, value), so a list of two sizes is never met (truncation silently "
                             f"off) and other lists and tables raise at the first model call; got "
                             f"{value['trigger']!r}")
    out: dict[str, Any] = {
        "trigger": read_knob(_ARGS_TRIGGER, value["trigger"], sub, window) if "trigger" in value else None,
        "keep": read_knob(_ARGS_KEEP, value["keep"], sub, window) if "keep" in value else _ARGS_KEEP.default,
        "max_length": value.get("max_length", MAX_LENGTH),
        "truncation_text": value.get("truncation_text", TRUNCATION_TEXT),
    }
    if not is_int(out["max_length"]) or out["max_length"] < 0:
        raise sub("max_length", f"expected an integer >= 0 (characters), got {out['max_length']!r}")
    if not isinstance(out["truncation_text"], str):
        raise sub("truncation_text", f"expected a string, got {out['truncation_text']!r}")
    return out


def _clause_form(value: Any) -> bool:
    """A table, or a list holding lists or tables: LangChain's trigger forms, not a size."""
    return isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict | list) for v in value))


TRUNCATE_ARGS_SETTINGS = Knob(
    "truncate_args_settings", "settings", None,
    "deepagents' TruncateArgsSettings: clip write_file/edit_file string arguments longer than "
    "max_length in messages outside `keep` once `trigger` is met, before the offload and the "
    "summarizer (a clipped argument is a hole); false: None, off",
    default_text='{trigger = ["fraction", 0.85], keep = ["fraction", 0.10], max_length = 2000} with '
                 'window, else {trigger = ["messages", 20], keep = ["messages", 20], max_length = 2000}',
    read=read_truncate_args)
CLIPPABLE = Knob(
    "clippable_turn_tokens", "count", None,
    "not a framework knob: the fewest tokens a turn holding a clippable argument (more than "
    "max_length characters) counts; default ceil((max_length + 1) / 4), count_tokens_approximately's "
    "4 characters a token (a lower bound: the rest of the message only adds)",
    framework_knob=False, default_text="ceil((max_length + 1) / 4)")
KNOBS = (lc.WINDOW, TRIGGER, KEEP, TRIM, TRUNCATE_ARGS_SETTINGS, CLIPPABLE, lc.SUMMARY_TOKENS)


def resolve(values: Values, given: tuple[str, ...]) -> Values:
    """``compute_summarization_defaults``: the trigger and keep defaults depend on the profile."""
    out = dict(values)
    profile = bool(values["window"])
    if "trigger" not in given:
        out["trigger"] = ("fraction", 0.85) if profile else ("tokens", 170000)
    if "keep" not in given:
        out["keep"] = ("fraction", 0.10) if profile else ("messages", 6)
    if "truncate_args_settings" not in given:
        size = ("fraction", 0.85) if profile else ("messages", 20)
        out["truncate_args_settings"] = {"trigger": size, "keep": ("fraction", 0.10) if profile else size,
                                         "max_length": MAX_LENGTH, "truncation_text": TRUNCATION_TEXT}
    settings = out["truncate_args_settings"]
    if "clippable_turn_tokens" not in given:
        length = settings["max_length"] if settings is not None else MAX_LENGTH
        out["clippable_turn_tokens"] = math.ceil((length + 1) / 4)
    return out


def clip_stage(values: Values) -> dict[str, Any] | None:
    """``truncate_args_settings`` as a ``clip_args`` stage (``None``: off, or no trigger)."""
    settings = values["truncate_args_settings"]
    if settings is None or settings["trigger"] is None:
        return None
    window = values["window"] or 0
    trigger, keep = settings["trigger"], settings["keep"]
    return {"kind": "clip_args", "trigger_unit": size_unit(trigger), "trigger": size_value(trigger, window),
            "keep_unit": size_unit(keep), "keep": size_value(keep, window),
            "min_tokens": values["clippable_turn_tokens"]}


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    clip = clip_stage(values)
    first = [clip] if clip is not None else []  # _truncate_args runs before everything else
    if values["trigger"] is None:
        return top, first
    spill = {"kind": "spill", "on_failure": "proceed"}  # offload first; a failed write proceeds
    return top, [*first, spill, lc.compact_stage(values)]


OVER_BUDGET = Difference(
    "over_budget",
    "`wrap_model_call` also summarizes when the request exceeds `int(max_input_tokens * 0.95)` "
    "minus the output reservation (`_over_budget`), trigger or not; the stages have no such trigger.",
    "none while the trigger is at most that budget (the defaults: 0.85 < 0.95); otherwise the model "
    "reports that state as an overflow of `window`, never less strict",
    "the harness's triggers are below the budget")
CLIPPED_COUNT = Difference(
    "clipped_view_counts",
    "after `_truncate_args` clips, the summarization trigger and keep of the same call count the "
    "clipped view (smaller); the stages count the turns whole.",
    "none on a verdict or a trace: a clip is already a hole, the first loss of its session, and the "
    "stages before it clipped nothing",
    "tests/presets/test_deepagents_truncate_args.py replays the unsafe traces through "
    "create_summarization_middleware and checks the lost markers are exactly the finding's turns")
CLIPPABLE_BOUND = Difference(
    "clippable_turn_tokens",
    "which turns hold a write_file/edit_file argument longer than `max_length` is the session's "
    "content, not a knob: the model lets every turn of at least `clippable_turn_tokens` tokens hold "
    "one (the adversary's choice), a lower bound for count_tokens_approximately.",
    "more careful only: a turn just above the bound whose role and JSON push a real argument "
    "below `max_length` is still reported; with another token counter set the knob",
    "the replay's counter counts an argument's characters / 4 (rounded up), so a turn of exactly "
    "the bound holds one")
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
    summary="deepagents' summarization (create_deep_agent's): clip old write_file/edit_file "
            "arguments, offload the candidates to the backend, then summarize as LangChain does; a "
            "failed offload proceeds",
    knobs=KNOBS,
    translate=_translate,
    resolve=resolve,
    validated_on=("deepagents 0.7.32", "langchain 1.5.2", "langchain-core 1.8.3", "langgraph 1.2.24"),
    differential="tests/presets/test_deepagents_preset.py",
    differences=(lc.TAIL_ROUNDS_UP, lc.START_ON_HUMAN, lc.REPORTED_USAGE, BASE_TOKENS, OVER_BUDGET,
                 CLIPPED_COUNT, CLIPPABLE_BOUND, OVERFLOW_RETRY, lc.SUMMARY_SIZE),
    top_keys=("base_tokens",),
    doc="docs/presets/deepagents.md",
)
