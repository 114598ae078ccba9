"""Google ADK ``EventsCompactionConfig`` (brief 6c): the App's event compaction.

Read from ``google/adk/apps/_configs.py``, ``apps/compaction.py``, ``apps/llm_event_summarizer.py``
and ``flows/llm_flows/context/_compaction.py`` of google-adk 2.15.0. ADK never deletes an event:
a compaction appends an event whose ``actions.compaction`` holds a summary and a timestamp range,
and prompt assembly (``_process_compaction_events``) shows every summary no later range contains
and drops every raw event inside a range. So "deleted" here means *left the model's context*.
``EventsCompactionConfig`` has no default trigger: one of two pairs must be set (its ValueError).

- **Sliding window** (``compaction_interval``, ``overlap_size``), after each invocation: once
  ``compaction_interval`` invocations ended after the last compaction's end, the window is
  ``overlap_size`` earlier invocations plus the new ones, up to the last event. The summarizer
  is shown the window's raw events (never an earlier summary); the summary covers the window's
  range, so **every raw event in the context leaves it** (nothing is kept verbatim) and the
  earlier summaries stay beside it (one more summary per compaction, never replaced unless the
  overlap reaches back to a summary's start). A turn is an invocation: the translation is a
  compact stage triggering at ``compaction_interval`` turns with ``keep = 0``.
- **Token threshold** (``token_threshold``, ``event_retention_size``), before each model request
  and after each invocation: when the latest prompt token count (the model's reported
  ``prompt_token_count`` plus ``chars // 4`` of what came after it; after a compaction, ``chars
  // 4`` of the context) is at least ``token_threshold`` and the context holds more than
  ``event_retention_size`` raw events, all but the newest ``event_retention_size`` are
  summarized, the latest summary shown first (a rolling summary: the new range contains the
  earlier one, which leaves the context). A turn is an event (``messages_per_turn = [1, 1]``):
  a compact stage triggering at ``token_threshold`` tokens keeping ``event_retention_size``
  messages, the earlier summary always shown (``summary = "separate"``, no input limit).

What the shipped summarizer (``LlmEventSummarizer``, used when ``summarizer`` is None) is shown:
each event's text parts whole, and each tool call's arguments and tool response as ``str()``
clipped at 2,000 characters (``_MAX_TOOL_CONTENT_CHARS``); other parts (images, files, code
execution) are not shown at all. A tool event above 2,000 characters loses the rest: the stages
cannot express a clip inside one message, so the preset refuses, by name, a session that can
hold one (:func:`check_session`), never calls it safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

COMPACTION_INTERVAL = Knob(
    "compaction_interval", "count_or_off", None,
    "sliding window: compact once this many new invocations ended after the last compaction "
    "(set with overlap_size; ADK has no default)")
OVERLAP_SIZE = Knob(
    "overlap_size", "count_or_off", None,
    "sliding window: invocations before the new ones that the next summary re-reads (set with "
    "compaction_interval)", minimum=0)
TOKEN_THRESHOLD = Knob(
    "token_threshold", "count_or_off", None,
    "token threshold: compact when the latest prompt token count is at least this (set with "
    "event_retention_size)")
EVENT_RETENTION_SIZE = Knob(
    "event_retention_size", "count_or_off", None,
    "token threshold: the newest this-many raw events stay verbatim (set with token_threshold)", minimum=0)
WINDOW = Knob("window", "count_or_off", None,
              "not a framework knob: the model's context window in tokens (token-threshold mode only)",
              framework_knob=False)
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of a summary's compacted content in tokens "
                      "(its characters // 4, as ADK counts it)", framework_knob=False)
KNOBS = (COMPACTION_INTERVAL, OVERLAP_SIZE, TOKEN_THRESHOLD, EVENT_RETENTION_SIZE, WINDOW, SUMMARY_TOKENS)

#: ``LlmEventSummarizer._MAX_TOOL_CONTENT_CHARS``: a tool call's arguments and a tool response are
#: shown as ``str()`` up to this many characters.
TOOL_CONTENT_CHARS = 2000
#: The largest turn that cannot hold a clipped one. ADK counts an event's tokens as
#: ``chars // 4`` of its JSON (so an event of T tokens has at most ``4T + 3`` characters), and
#: ``str()`` of a value is at most twice its JSON (a quote escaped per character): 249 tokens.
UNCLIPPED_TURN_TOKENS = (TOOL_CONTENT_CHARS // 2 - 3) // 4
#: The fewest events of an invocation with a tool round: the prompt, the call, its response, the
#: answer.
TOOL_INVOCATION_EVENTS = 4


def mode(values: Values) -> str:
    """``"sliding"`` or ``"tokens"``: which trigger pair the (checked) knobs set."""
    return "sliding" if values["compaction_interval"] is not None else "tokens"


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    pairs = (("compaction_interval", "overlap_size"), ("token_threshold", "event_retention_size"))
    for a, b in pairs:
        if (values[a] is None) != (values[b] is None):
            raise fail(a if values[a] is None else b,
                       f"{a} and {b} must be set together (EventsCompactionConfig's ValueError)")
    sliding = values["compaction_interval"] is not None
    tokens = values["token_threshold"] is not None
    if not (sliding or tokens):
        raise fail("compaction_interval", "EventsCompactionConfig has no default trigger: set the sliding-window "
                                          "pair (compaction_interval, overlap_size) or the token-threshold pair "
                                          "(token_threshold, event_retention_size)")
    if sliding and tokens:
        raise fail("token_threshold", "both trigger pairs set: ADK then compacts by tokens first and by the window "
                                      "otherwise, over events (tokens) and invocations (window) at once; this "
                                      "preset checks one pair at a time, so that mix is not checked (guard it at "
                                      "run time: tailguard.adapters.google_adk)")
    if sliding and values["window"] is not None:
        raise fail("window", "sliding-window summaries accumulate in the context (one more per compaction; an "
                             "earlier one leaves only when a later range contains it), so the context grows "
                             "without bound and exceeds any window; the stages keep one summary and cannot "
                             "judge that: leave window out (the floor and holes are still checked)")


def check_session(values: Values, data: Mapping[str, Any], fail: Callable[[str, str], PolicyError]) -> None:
    """The session shapes the translation is exact for (brief 6d: refuse by name, never a false
    ``safe``): token-threshold turns are single events (no tool calls: ADK keeps a call with its
    response, which a one-message turn cannot say), and no session may hold a tool event that
    ``LlmEventSummarizer`` clips."""
    mpt = data.get("messages_per_turn", [1, 1])
    tt = data.get("turn_tokens")
    if not (isinstance(mpt, list) and len(mpt) == 2 and all(isinstance(x, int) for x in mpt)):
        return  # the policy parser reports a malformed shape
    if mode(values) == "tokens" and tuple(mpt) != (1, 1):
        raise fail("messages_per_turn", "token-threshold compaction keeps the newest event_retention_size events, "
                                        "not whole invocations, so each event is its own turn "
                                        "(messages_per_turn = [1, 1]: prompts and answers, no tool calls); with "
                                        "tool calls ADK moves its cut to keep a call with its response, which "
                                        "the stages cannot express: guard it at run time "
                                        "(tailguard.adapters.google_adk)")
    big = isinstance(tt, list) and len(tt) == 2 and isinstance(tt[1], int) and tt[1] > UNCLIPPED_TURN_TOKENS
    if mode(values) == "sliding" and mpt[1] >= TOOL_INVOCATION_EVENTS and big:
        raise fail("turn_tokens", f"an invocation of up to {mpt[1]} events can hold a tool call and its "
                                  f"response, and LlmEventSummarizer shows each clipped at {TOOL_CONTENT_CHARS} "
                                  f"characters (_MAX_TOOL_CONTENT_CHARS): with turns above "
                                  f"{UNCLIPPED_TURN_TOKENS} tokens a tool response can lose its rest unseen, "
                                  "a loss inside one message the stages cannot express. Bound turn_tokens to "
                                  f"{UNCLIPPED_TURN_TOKENS}, or messages_per_turn to [.., 3] (no tool round), "
                                  "or guard it at run time (tailguard.adapters.google_adk)")


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    if mode(values) == "sliding":
        stage: dict[str, Any] = {
            "kind": "compact",
            "trigger_unit": "turns", "trigger": values["compaction_interval"],  # new invocations
            "keep_unit": "turns", "keep": 0,  # the window ends with the last event
            "summary_tokens": values["summary_tokens"],
            # earlier summaries stay in the context beside the new one: nothing only they
            # cover leaves (a containing range re-reads their raw events)
            "summary": "separate",
            "input": "candidates",
        }
        return {}, [stage]
    stage = {
        "kind": "compact",
        "trigger_unit": "tokens", "trigger": values["token_threshold"],
        "keep_unit": "messages", "keep": values["event_retention_size"],
        "summary_tokens": values["summary_tokens"],
        "summary": "separate",  # the latest summary is the seed event, always shown whole
        "input": "candidates",
    }
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    return top, [stage]


SUMMARIES_ACCUMULATE = Difference(
    "summaries_accumulate",
    "sliding window: the summarizer is never shown an earlier summary, and the earlier summaries stay "
    "in the context beside the new one (a summary leaves only when a later range contains it, and that "
    "range's raw events are then shown again); the stage has one summary that is shown and replaced.",
    "the same coverage (nothing only an earlier summary held leaves unseen), so the same holes and floor "
    "findings; the context's size differs, so a window is refused in this mode",
    "the harness checks that every summary ADK drops is contained in a range whose raw events the new "
    "summary was shown, and compares the raw events that leave")
OVERLAP_RESHOWN = Difference(
    "overlap_reshown",
    "sliding window: the summarizer is also shown the raw events of `overlap_size` earlier invocations, "
    "already out of the context.",
    "the summarizer sees more than the stage says; holes cannot come from it",
    "the harness compares what was shown of the events that leave the context, and checks the re-read "
    "ones are exactly the overlap invocations")
WORTH_COMPACTING = Difference(
    "worth_compacting",
    "`_is_range_worth_compacting` skips a compaction whose range (as request characters) is not larger "
    "than the latest summary; with the rolling token-threshold summary it always holds (the range "
    "contains the earlier summary).",
    "sliding window only: ADK may compact later than the model; the model's compactions lose nothing the "
    "later ones do not, and its floor findings come at the first compaction either way",
    "the harness's summaries are smaller than any window, so ADK compacts whenever the model does")
OPEN_CALLS = Difference(
    "open_tool_calls",
    "`_longest_self_contained_prefix` ends a window before an unanswered (long-running, confirmation or "
    "auth) tool call, and `_safe_token_compaction_split_index` moves the token-threshold cut back to keep "
    "a call with its response; the stages compact whole turns.",
    "ADK keeps more verbatim than the model: fewer losses, never more (token-threshold sessions with tool "
    "calls are refused by name)",
    "the harness's invocations answer every call they make")
PROMPT_TOKENS = Difference(
    "prompt_token_count",
    "ADK reads the size from the model's reported `prompt_token_count` (system instruction and tools "
    "included) plus `chars // 4` of the newer events; the stages count `base_tokens` (default 0) and "
    "the turns.",
    "with base_tokens below the instructions' size ADK compacts earlier than the model; each compaction "
    "keeps the same events and shows them all. Set base_tokens to the instructions' size for the window check",
    "the harness's fake model reports the contents' `chars // 4` and has no instruction")
NON_TEXT = Difference(
    "non_text_parts",
    "LlmEventSummarizer shows text, thoughts, tool calls and responses; images, files and code execution "
    "parts are not shown, and a session's shape does not say which events hold them.",
    "such parts are lost at their compaction; the preset judges text and tool content only",
    "the harness's events are text (and tool calls within the clip)")

PRESET = Preset(
    name="google_adk.EventsCompactionConfig",
    summary="Google ADK App event compaction: a sliding window of invocations (summaries accumulate, "
            "nothing kept verbatim) or a rolling summary at a token threshold keeping the newest events",
    knobs=KNOBS,
    translate=_translate,
    check=_check,
    validated_on=("google-adk 2.15.0", "google-genai 2.34.0"),
    differential="tests/presets/test_google_adk_preset.py",
    differences=(SUMMARIES_ACCUMULATE, OVERLAP_RESHOWN, WORTH_COMPACTING, OPEN_CALLS, PROMPT_TOKENS, NON_TEXT),
    top_keys=("base_tokens",),
    doc="docs/presets/google-adk.md",
    aliases=("google.adk.apps.EventsCompactionConfig", "google.adk.apps.app.EventsCompactionConfig"),
)
