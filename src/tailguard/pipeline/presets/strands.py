"""Strands Agents' conversation managers (brief 6c), validated on ``strands-agents``.

Read from ``strands/agent/conversation_manager/`` of strands-agents 1.65.0 (and
``agent/agent.py``, which calls them): ``Agent`` calls ``apply_management`` when every invocation
ends (in its ``finally``) and ``reduce_context(e=...)`` when the model raises
``ContextWindowOverflowException``, then retries the model call. ``Agent()`` without a
``conversation_manager`` gets ``SlidingWindowConversationManager()``.

- **SlidingWindowConversationManager** (``window_size = 40``, ``should_truncate_results = True``,
  ``per_turn = False``): ``apply_management`` does nothing while ``len(messages) <= window_size``;
  above it ``reduce_context`` starts at ``len - window_size`` and moves forward to the first user
  message that is not a tool result (``find_valid_trim_point``), and deletes every message before
  it, **with no summary**. A user prompt opens an invocation, so this drops the oldest whole
  invocations until at most ``window_size`` messages remain: a turn here is an invocation (its
  prompt, its tool rounds: an assistant ``toolUse`` message and a user ``toolResult`` message each,
  its answer), and the translation is ``truncate(messages, window_size)``. Every dropped message is
  a hole: the shipped default loses the oldest invocation as soon as a session passes 40
  messages. When one invocation alone holds more than ``window_size`` messages there is no prompt
  to cut at and Strands cuts at a ``toolUse``/``toolResult`` boundary inside it
  (``_find_tool_pair_trim_point``): the stage cannot split a turn and drops it whole, a larger
  hole (``tool_pair_fallback``). ``per_turn`` also runs the same trim before every (N-th) model
  call: earlier, never more (``per_turn``). On a context-window overflow (``window``) the reactive
  path first cuts the oldest tool results to their first and last 200 characters
  (``should_truncate_results``), a loss inside one message: the stages report the window's
  ``overflow`` there, which is where it happens.
- **SummarizingConversationManager** (``summary_ratio = 0.3``, ``preserve_recent_messages = 10``):
  ``apply_management`` does nothing; only an overflow of the model's window (``window``) calls
  ``reduce_context``, which summarizes the oldest ``min(max(1, int(len * summary_ratio)), len -
  preserve_recent_messages)`` messages, the split moved forward past a ``toolResult`` (a tool
  call stays with its result: the tool turn is summarized whole), and replaces them with one
  user message holding the summary. The summarizer (the agent's own model, or
  ``summarization_agent``) is shown exactly those messages, whole, the previous summary first
  among them (``summary = "message"``, no input limit). Too few messages, or a summary call that
  overflows itself, falls back to cutting the largest text blocks to head and tail previews (a
  loss inside a message): the stages report the window's ``overflow`` there. A turn is one
  message, or a tool call with its result (``messages_per_turn = [1, 2]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tailguard.base.args import is_int
from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Fail, Knob, Preset, Values

PACKAGE = "strands-agents 1.65.0"
DIFFERENTIAL = "tests/presets/test_strands_preset.py"


def _read_bool(name: str) -> Callable[[Any, Fail, int], bool]:
    def read(value: Any, fail: Fail, window: int) -> bool:
        if not isinstance(value, bool):
            raise fail(name, f"expected true or false, got {value!r}")
        return value
    return read


def _read_per_turn(value: Any, fail: Fail, window: int) -> bool | int:
    if isinstance(value, bool):
        return value
    if not is_int(value) or value <= 0:  # SlidingWindowConversationManager's ValueError
        raise fail("per_turn", f"per_turn must be a positive integer, true, or false, got {value!r}")
    return int(value)


def _read_ratio(value: Any, fail: Fail, window: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail("summary_ratio", f"expected a number, got {value!r}")
    return max(0.1, min(0.8, float(value)))  # Strands clamps it to [0.1, 0.8]


def _read_proactive(value: Any, fail: Fail, window: int) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, dict) and set(value) <= {"compression_threshold"}:
        t = value.get("compression_threshold", 0.7)
        if isinstance(t, bool) or not isinstance(t, int | float) or not 0 < t <= 1:
            raise fail("proactive_compression", f"compression_threshold must be between 0 (exclusive) and 1 "
                                                f"(inclusive), got {t!r}")
        return {"compression_threshold": float(t)}
    raise fail("proactive_compression", f"expected true, false or {{compression_threshold = x}}, got {value!r}")


def _read_prompt(value: Any, fail: Fail, window: int) -> Any:
    if value is False or isinstance(value, str):
        return None if value is False else value
    raise fail("summarization_system_prompt", f"expected a string or false, got {value!r}")


WINDOW_SIZE = Knob("window_size", "count", 40,
                   "the most messages kept after an invocation; above it the oldest whole invocations are "
                   "deleted without a summary", minimum=0)
TRUNCATE_RESULTS = Knob("should_truncate_results", "settings", True,
                        "on a context-window overflow, cut the oldest tool results to their first and last "
                        "200 characters before deleting messages", read=_read_bool("should_truncate_results"))
PER_TURN = Knob("per_turn", "settings", False,
                "also trim before every model call (true) or every N-th one (an integer)", read=_read_per_turn)
PIN_FIRST = Knob("pin_first", "count_or_off", None,
                 "the first N messages are never deleted (not modelled: set it false)", minimum=0)
PROACTIVE = Knob("proactive_compression", "settings", False,
                 "reduce before a model call at a fraction of the model's window (not modelled: set it false)",
                 read=_read_proactive)
SLIDING_WINDOW = Knob("window", "count_or_off", None,
                      "not a framework knob: the model's context window in tokens (the provider raises "
                      "ContextWindowOverflowException above it)", framework_knob=False)

SUMMARY_RATIO = Knob("summary_ratio", "settings", 0.3,
                     "the share of the messages summarized at an overflow (clamped to [0.1, 0.8])", read=_read_ratio)
PRESERVE = Knob("preserve_recent_messages", "count", 10,
                "the newest messages never summarized", minimum=0)
SUMMARIZATION_AGENT = Knob("summarization_agent", "settings", False,
                           "whether a dedicated agent writes the summary (it is shown the same messages)",
                           read=_read_bool("summarization_agent"))
SYSTEM_PROMPT = Knob("summarization_system_prompt", "settings", None,
                     "the summarizer's system prompt (false: DEFAULT_SUMMARIZATION_PROMPT)", read=_read_prompt)
SUMMARIZING_WINDOW = Knob("window", "count_or_off", None,
                          "not a framework knob, required: the model's context window in tokens; the manager "
                          "summarizes only when the provider overflows it", framework_knob=False)
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of a summary message in tokens", framework_knob=False)


def _refuse_unmodelled(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    if values["pin_first"]:
        raise fail("pin_first", "pinned messages (and their tool-pair partners) are kept out of the deletion in "
                                "messages, which the stages cannot say of a turn; this preset checks pin_first = "
                                "false only (guard it at run time: tailguard.adapters.strands)")
    if values["proactive_compression"] is not False:
        raise fail("proactive_compression", "proactive compression reduces before a model call when Strands' "
                                            "token estimate reaches a share of the model's window, an estimate "
                                            "the stages do not make; this preset checks proactive_compression = "
                                            "false only (guard it at run time: tailguard.adapters.strands)")


def _check_summarizing(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    if values["window"] is None:
        raise fail("window", "SummarizingConversationManager summarizes only when the model overflows its context "
                             "window: set window (the model's context window in tokens)")
    _refuse_unmodelled(values, fail)
    if values["summarization_agent"] and values["summarization_system_prompt"] is not None:
        raise fail("summarization_system_prompt", "Cannot provide both summarization_agent and "
                                                  "summarization_system_prompt (SummarizingConversationManager's "
                                                  "ValueError)")


def check_session(name: str, values: Values, data: Mapping[str, Any], fail: Callable[[str, str], PolicyError]) -> None:
    """The session shapes each translation is exact for (a turn is an invocation for the sliding
    window, a message or a tool call with its result for the summarizer)."""
    mpt = data.get("messages_per_turn", [1, 1])
    if not (isinstance(mpt, list) and len(mpt) == 2 and all(is_int(x) for x in mpt)):
        return  # the policy parser reports a malformed shape
    if name == SLIDING.name and mpt[0] < 2:
        raise fail("messages_per_turn", "the sliding window deletes whole invocations (it cuts only before a user "
                                        "prompt), so a turn is an invocation: its prompt, its tool rounds (two "
                                        "messages each) and its answer, at least 2 messages "
                                        "(messages_per_turn = [2, ..])")
    floor, unit = data.get("floor"), data.get("floor_unit")
    if name == SUMMARIZING.name and is_int(floor) and floor and (unit != "messages"
                                                                 or floor >= values["preserve_recent_messages"]):
        raise fail("floor", "this preset decides a floor in messages of at most preserve_recent_messages - 1 "
                            f"({values['preserve_recent_messages'] - 1}): Strands keeps one message fewer than "
                            "preserve_recent_messages when its cut lands on a tool result, and many more when "
                            "summary_ratio binds (int(len * summary_ratio) < len - preserve_recent_messages), which "
                            "depends on how many messages the context holds at the overflow; the stages cannot "
                            "tell the two apart, so a larger floor is undecided here, neither safe nor unsafe "
                            "(guard it at run time: tailguard.adapters.strands)")
    if name == SUMMARIZING.name:
        _check_stuck(values, data, fail)
    if name == SUMMARIZING.name and tuple(mpt) != (1, 2) and tuple(mpt) != (1, 1):
        raise fail("messages_per_turn", "the summarizer cuts between any two messages but keeps a tool call with "
                                        "its result, so a turn is one message or a toolUse message with its "
                                        "toolResult message: messages_per_turn = [1, 2] (or [1, 1] without tools)")


def stuck_length(ratio: float, preserve: int) -> int:
    """The longest context (in messages, the summary first) at which a summary round cannot make
    progress: ``max(1, int(len * summary_ratio)) == 1`` takes only the previous summary ("Cannot
    summarize: only the previous summary is old enough") while ``len - preserve_recent_messages
    >= 2`` would allow more; 0 when there is no such length."""
    length = 0
    n = preserve + 2
    while int(n * ratio) <= 1:
        length = n
        n += 1
    return length


def _check_stuck(values: Values, data: Mapping[str, Any], fail: Callable[[str, str], PolicyError]) -> None:
    """Refuse, by name, a session whose context can overflow while a summary round is stuck: the
    overflow then escapes the agent call (or the text-block fallback cuts a message), which the
    stage, keeping preserve_recent_messages, does not see."""
    length = stuck_length(values["summary_ratio"], values["preserve_recent_messages"])
    tt, base = data.get("turn_tokens"), data.get("base_tokens", 0)
    if not length or not (isinstance(tt, list) and len(tt) == 2 and is_int(tt[1]) and is_int(base)):
        return
    largest = (length - 1) * tt[1] + values["summary_tokens"] + base
    if largest > values["window"]:
        raise fail("summary_ratio", f"with summary_ratio {values['summary_ratio']} a summary round takes only the "
                                    f"previous summary when the context holds at most {length} messages ("
                                    "\"Cannot summarize: only the previous summary is old enough\"), and "
                                    f"{length - 1} messages of up to {tt[1]} tokens with the summary "
                                    f"({largest} tokens) can overflow the window ({values['window']}): the overflow "
                                    "then escapes the agent call, which the stage does not model. Raise "
                                    "summary_ratio, bound turn_tokens, or guard it at run time "
                                    "(tailguard.adapters.strands)")


def _translate_sliding(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    return top, [{"kind": "truncate", "unit": "messages", "limit": values["window_size"]}]


def _translate_summarizing(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stage = {
        "kind": "compact",
        "trigger_unit": "tokens", "trigger": values["window"] + 1,  # the provider's overflow
        "keep_unit": "messages", "keep": values["preserve_recent_messages"],
        "summary_tokens": values["summary_tokens"],
        "summary": "message",  # the previous summary is the oldest message summarized
        "input": "candidates",
    }
    return {"window": values["window"]}, [stage]


TOOL_PAIR_FALLBACK = Difference(
    "tool_pair_fallback",
    "when one invocation alone holds more than window_size messages no user prompt lies after the cut, and "
    "Strands cuts at the first toolUse/toolResult boundary after it (or, with none, deletes nothing and "
    "logs a warning); the stage deletes whole invocations only, so it drops that invocation whole.",
    "the same verdict (unsafe, a hole at that append); the model's hole holds the whole invocation where "
    "Strands loses its first messages (more careful)",
    "the harness checks that an invocation of more than window_size messages is cut at its first tool pair "
    "after the cut and that the model drops it whole at that append")
PER_TURN_EARLIER = Difference(
    "per_turn",
    "per_turn runs the same trim before every (N-th) model call inside an invocation; the stage runs at the "
    "invocation's end. Each trim drops the oldest whole invocations until the messages so far fit, a prefix "
    "of what the trim at the end drops.",
    "none on what is deleted by the end of each invocation (earlier, never more)",
    "the harness drives per_turn = true and 2 and compares the messages after every invocation")
TRUNCATE_ON_OVERFLOW = Difference(
    "overflow_truncation",
    "on a context-window overflow the sliding window cuts tool results to 200 + 200 characters "
    "(should_truncate_results) and the summarizer cuts the largest text blocks when it cannot summarize: "
    "losses inside one message the stages cannot express.",
    "reported as the window's overflow (a finding) at the append where the context passes the window",
    "the adapter tests drive the real truncation; the differential harness keeps the context in the window")
RATIO_KEEPS_MORE = Difference(
    "summary_ratio",
    "Strands summarizes the oldest min(max(1, int(len * summary_ratio)), len - preserve_recent_messages) "
    "messages, so when the ratio binds it keeps more than preserve_recent_messages; the stage keeps "
    "preserve_recent_messages (whole turns, the cut moved past a tool result as Strands moves it).",
    "the model summarizes more: no hole either way (every summarized message is shown whole), and its floor "
    "findings can come where Strands still keeps the floor (a floor up to preserve_recent_messages - 1 is safe "
    "in both)",
    "the harness checks Strands' count against that formula at every summary and continues from Strands' state")
STUCK_ROUND = Difference(
    "stuck_round",
    "a summary round takes max(1, int(len * summary_ratio)) messages; with the previous summary first and "
    "int(len * summary_ratio) <= 1 that is the summary alone, and Strands raises the overflow out of the agent "
    "call although len - preserve_recent_messages would allow more; the stage keeps preserve_recent_messages "
    "and fits.",
    "refused by name (exit 2) when a context of that length can overflow the window (stuck_length, turn_tokens, "
    "summary_tokens, base_tokens); never a false safe",
    "the harness replays such a session on Strands (the overflow escapes) and checks the preset refuses its shape")
BEFORE_MODEL_CALLS = Difference(
    "before_model_calls",
    "Strands reduces when the provider overflows, i.e. before a model call, after a user prompt or a tool "
    "result; the stages run after every turn, an answer too.",
    "the model may summarize one answer earlier than Strands (more careful)",
    "the harness undoes a model compaction after an answer and compares at the next prompt")

SLIDING = Preset(
    name="strands.SlidingWindowConversationManager",
    summary="Strands Agents' default conversation manager: after each invocation, delete the oldest whole "
            "invocations beyond window_size messages, with no summary",
    knobs=(WINDOW_SIZE, TRUNCATE_RESULTS, PER_TURN, PIN_FIRST, PROACTIVE, SLIDING_WINDOW),
    translate=_translate_sliding,
    check=_refuse_unmodelled,
    validated_on=(PACKAGE,),
    differential=DIFFERENTIAL,
    differences=(TOOL_PAIR_FALLBACK, PER_TURN_EARLIER, TRUNCATE_ON_OVERFLOW),
    top_keys=("base_tokens",),
    doc="docs/presets/strands.md",
    aliases=("strands", "strands.agent.conversation_manager.SlidingWindowConversationManager"),
)

SUMMARIZING = Preset(
    name="strands.SummarizingConversationManager",
    summary="Strands Agents' summarizing manager: on a context-window overflow, summarize the oldest "
            "summary_ratio of the messages, keeping preserve_recent_messages",
    knobs=(SUMMARY_RATIO, PRESERVE, SUMMARIZATION_AGENT, SYSTEM_PROMPT, PIN_FIRST, PROACTIVE, SUMMARIZING_WINDOW,
           SUMMARY_TOKENS),
    translate=_translate_summarizing,
    check=_check_summarizing,
    validated_on=(PACKAGE,),
    differential=DIFFERENTIAL,
    differences=(RATIO_KEEPS_MORE, STUCK_ROUND, BEFORE_MODEL_CALLS, TRUNCATE_ON_OVERFLOW),
    top_keys=("base_tokens",),
    doc="docs/presets/strands.md",
    aliases=("strands.agent.conversation_manager.SummarizingConversationManager",),
)
