"""Semantic Kernel's chat history reducers (brief 6c): ``ChatHistoryTruncationReducer`` and
``ChatHistorySummarizationReducer``.

Read from ``semantic_kernel/contents/history_reducer/`` of semantic-kernel 1.45.0. Both are a
``ChatHistory`` whose ``reduce()`` (run by ``add_message_async`` when ``auto_reduce``, else by the
caller, as SK's agent samples do after each response) does nothing while ``len(messages) <=
target_count + threshold_count``. Past that, ``locate_safe_reduction_index`` picks where the kept
tail starts: ``len - target_count``, moved back to the start of a run of function call/result
messages (a call and its result are never split), then back to the newest *user* message at or
after ``len - threshold_count - target_count`` if there is one. The first system/developer
message is always kept (``target_count`` then counts it: the tail is ``target_count - 1``).

- **Truncation** deletes every message before that index. Nothing is summarized: every deleted
  message is a loss. The translation is a truncate stage in messages with limit
  ``target_count + threshold_count``: the first loss is at the same append; SK then cuts back to
  ``target_count`` (up to ``threshold_count + 1`` messages at once), the stage one message at a time
  (``threshold_window``).
- **Summarization** (the ``service`` writes one message, marked ``metadata["__summary__"]``) is
  shown, by ``_summarize``, ``extract_range(history, 0 if use_single_summary else
  <leading summaries>, index)``: every message before the index, **except** system/developer
  messages and, when ``include_function_content_in_summary`` is False (the default), every
  message holding a function call or result (they are deleted unseen). With
  ``use_single_summary`` (default) the earlier summary is shown and replaced (a rolling summary);
  without it the earlier summaries stay in front, unshown. SK counts the trigger on the raw
  messages after the leading summaries (``offset_count``), so the stage triggers in turns; with a
  system message first no summary leads, every message counts and the stage triggers in messages
  (the summary counted, as SK does then).

The translation is exact for chat sessions (a turn is one message, ``messages_per_turn = [1,
1]``) with ``threshold_count = 0`` (the default); with a threshold SK may keep more (the user
message it looks for), never less. Sessions with tool calls are refused by name
(:func:`check_session`): by default SK deletes their call/result messages unseen (a loss inside
the stages' atomic turns), and with ``include_function_content_in_summary`` it moves its cut by
message roles the session's shape does not say. Guard them at run time
(``tailguard.adapters.semantic_kernel``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Fail, Knob, Preset, Values


def _read_bool(name: str) -> Callable[[Any, Fail, int], Any]:
    def read(value: Any, fail: Fail, window: int) -> bool:
        if not isinstance(value, bool):
            raise fail(name, f"expected true or false, got {value!r}")
        return value
    return read


def _read_text(name: str) -> Callable[[Any, Fail, int], Any]:
    def read(value: Any, fail: Fail, window: int) -> str:
        if not isinstance(value, str) or not value.strip():
            raise fail(name, f"expected a non-empty string, got {value!r}")
        return value
    return read


TARGET_COUNT = Knob("target_count", "count_or_off", None,
                    "messages kept after a reduction (required: ChatHistoryReducer's Field(..., gt=0))")
THRESHOLD_COUNT = Knob("threshold_count", "count", 0,
                       "reduce only past target_count + threshold_count messages; the cut may move back to "
                       "a user message inside this window", minimum=0)
AUTO_REDUCE = Knob("auto_reduce", "settings", False,
                   "reduce in add_message_async (else the caller calls reduce(); the model reduces after "
                   "every message either way)", read=_read_bool("auto_reduce"))
USE_SINGLE_SUMMARY = Knob("use_single_summary", "settings", True,
                          "the earlier summary is shown to the summarizer and replaced (false: summaries "
                          "accumulate in front, unshown)", read=_read_bool("use_single_summary"))
INCLUDE_FUNCTION_CONTENT = Knob(
    "include_function_content_in_summary", "settings", False,
    "show function call/result messages to the summarizer (false: they are deleted unseen)",
    read=_read_bool("include_function_content_in_summary"))
FAIL_ON_ERROR = Knob("fail_on_error", "settings", True,
                     "a failed summarization raises (false: the history stays as it was); deletes nothing either way",
                     read=_read_bool("fail_on_error"))
SUMMARIZATION_INSTRUCTIONS = Knob(
    "summarization_instructions", "settings", "DEFAULT_SUMMARIZATION_PROMPT",
    "what the summarizer is asked (tailguard judges what it is shown, not what it writes)",
    read=_read_text("summarization_instructions"))
SYSTEM_MESSAGE = Knob("system_message", "count", 0,
                      "not a framework knob: 1 when the history starts with a system or developer message "
                      "(SK always keeps it; it counts toward target_count)", minimum=0, framework_knob=False)
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of a summary message in tokens", framework_knob=False)

TRUNCATION_KNOBS = (TARGET_COUNT, THRESHOLD_COUNT, AUTO_REDUCE, SYSTEM_MESSAGE)
SUMMARIZATION_KNOBS = (TARGET_COUNT, THRESHOLD_COUNT, AUTO_REDUCE, USE_SINGLE_SUMMARY, INCLUDE_FUNCTION_CONTENT,
                       FAIL_ON_ERROR, SUMMARIZATION_INSTRUCTIONS, SYSTEM_MESSAGE, SUMMARY_TOKENS)

TRUNCATION = "semantic_kernel.ChatHistoryTruncationReducer"
SUMMARIZATION = "semantic_kernel.ChatHistorySummarizationReducer"


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    if values["target_count"] is None:
        raise fail("target_count", "required: ChatHistoryReducer has no default target_count (Field(..., gt=0))")
    if values["system_message"] > 1:
        raise fail("system_message", f"0 or 1 (SK keeps only the first system/developer message), "
                                     f"got {values['system_message']}")


def check_session(name: str, values: Values, data: Mapping[str, Any],
                  fail: Callable[[str, str], PolicyError]) -> None:
    """The session shapes the translation is exact for (brief 6d: refuse by name, never a false
    ``safe``): chat sessions, one message a turn."""
    mpt = data.get("messages_per_turn", [1, 1])
    if not (isinstance(mpt, list) and len(mpt) == 2 and all(isinstance(x, int) for x in mpt)):
        return  # the policy parser reports a malformed shape
    if tuple(mpt) == (1, 1):
        return
    if name == SUMMARIZATION and not values["include_function_content_in_summary"]:
        raise fail("messages_per_turn", "a turn of several messages holds a function call and its result, and "
                                        "with include_function_content_in_summary = false (the default) SK deletes "
                                        "every such message it summarizes without showing it to the summarizer "
                                        "(extract_range's filter): a loss inside one turn the stages cannot express. "
                                        "Set include_function_content_in_summary = true and guard it at run time "
                                        "(tailguard.adapters.semantic_kernel), or check a chat session "
                                        "(messages_per_turn = [1, 1])")
    raise fail("messages_per_turn", "SK cuts between messages (locate_safe_reduction_index moves the cut by the "
                                    "roles of the messages: a function call/result run, a user message), not "
                                    "between whole turns, which the stages cannot express: check a chat session "
                                    "(messages_per_turn = [1, 1]) or guard it at run time "
                                    "(tailguard.adapters.semantic_kernel)")


def _translate_truncation(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    limit = values["target_count"] + values["threshold_count"]
    stage = {"kind": "truncate", "unit": "messages", "limit": limit}
    top: dict[str, Any] = {"keep_first": 1} if values["system_message"] else {}
    return top, [stage]


def _translate_summarization(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    trigger = values["target_count"] + values["threshold_count"] + 1
    system = values["system_message"]
    stage: dict[str, Any] = {
        "kind": "compact",
        # SK counts past the leading summaries (offset_count); with a system message first none
        # leads, and the summary counts like any message
        "trigger_unit": "messages" if system else "turns", "trigger": trigger,
        "keep_unit": "messages", "keep": values["target_count"] - system,
        "summary_tokens": values["summary_tokens"],
        # single summary: the earlier one is the oldest message shown (no input limit, so it is
        # always shown whole); several: they stay in front, unshown, never removed
        "summary": "message" if values["use_single_summary"] else "separate",
        "input": "candidates",
    }
    top: dict[str, Any] = {"keep_first": 1} if system else {}
    return top, [stage]


THRESHOLD_WINDOW = Difference(
    "threshold_window",
    "Past target_count + threshold_count messages SK cuts back to target_count messages, or to the newest user "
    "message inside the threshold window (keeping up to threshold_count more); the stages cut to exactly "
    "target_count (summarization) or drop one message at a time (truncation: a truncate stage at "
    "target_count + threshold_count).",
    "SK keeps at least what the model keeps; the first loss and every floor finding come at the same append "
    "(an adversarial session has a user message at the cut)",
    "exact with threshold_count = 0; with a threshold the harness checks SK kept a superset of the model's tail "
    "and resynchronizes the model")
REDUCE_TIMING = Difference(
    "reduce_timing",
    "With auto_reduce = false (the default) reduce() runs when the caller calls it (SK's agent samples: after "
    "each response); the model reduces after every message.",
    "a reduction at fewer points deletes the same messages later, in larger batches; what it shows and keeps "
    "follows the same rule, so the same holes and floor findings",
    "the harness calls add_message_async with auto_reduce = true, and reduce() after each pair in one test")
SUMMARIES_ACCUMULATE = Difference(
    "summaries_accumulate",
    "use_single_summary = false: earlier summaries stay in front of the history, never shown to the summarizer "
    "and never removed; the stage (summary = \"separate\") has one summary, always shown.",
    "the same coverage (no summary leaves the context), so the same holes and floor findings",
    "the harness checks no summary leaves and every summarized message is in some summary's input")
UNSEEN_FUNCTION_CONTENT = Difference(
    "function_content",
    "include_function_content_in_summary = false deletes every function call/result message it summarizes "
    "unseen; multi-message turns are refused by name (check_session).",
    "chat sessions only; a tool session gets a PolicyError naming the knob, never safe",
    "test_function_content_is_deleted_unseen shows the loss on the real reducer")

TRUNCATION_PRESET = Preset(
    name=TRUNCATION,
    summary="Semantic Kernel ChatHistoryTruncationReducer: past target_count + threshold_count messages, delete "
            "the oldest down to target_count (the first system message kept); nothing is summarized",
    knobs=TRUNCATION_KNOBS,
    translate=_translate_truncation,
    check=_check,
    validated_on=("semantic-kernel 1.45.0",),
    differential="tests/presets/test_semantic_kernel_preset.py",
    differences=(THRESHOLD_WINDOW, REDUCE_TIMING),
    doc="docs/presets/semantic-kernel.md",
    aliases=("semantic-kernel.truncation", "semantic_kernel.contents.ChatHistoryTruncationReducer"),
)

SUMMARIZATION_PRESET = Preset(
    name=SUMMARIZATION,
    summary="Semantic Kernel ChatHistorySummarizationReducer: past target_count + threshold_count messages, "
            "summarize all but the newest target_count (function calls and results deleted unseen by default)",
    knobs=SUMMARIZATION_KNOBS,
    translate=_translate_summarization,
    check=_check,
    validated_on=("semantic-kernel 1.45.0",),
    differential="tests/presets/test_semantic_kernel_preset.py",
    differences=(THRESHOLD_WINDOW, REDUCE_TIMING, SUMMARIES_ACCUMULATE, UNSEEN_FUNCTION_CONTENT),
    doc="docs/presets/semantic-kernel.md",
    aliases=("semantic-kernel", "semantic_kernel.contents.ChatHistorySummarizationReducer"),
)
