"""The OpenHands SDK's ``LLMSummarizingCondenser`` (brief 6c), validated on ``openhands-sdk``.

Read from ``openhands/sdk/context/condenser/`` of openhands-sdk 1.58.2 (Python >= 3.12);
``tests/presets/test_openhands_preset.py`` drives that package offline (its own ``TestLLM``,
recording what the summarizer was shown) and compares every condensation with this model.

- **Events rule** (``Reason.EVENTS``): when ``len(view) > max_size`` (the view counts every
  event in it: the system prompt event, the summary event), keep the first ``keep_first``
  events (and always the leading ``SystemPromptEvent``), forget the events from there up to
  the newest ``max_size // 2 - keep_first - 1``, and insert one summary event where the
  forgotten ones began. The summarizer is shown every forgotten event as ``str(event)`` and
  nothing else: the text cut at 500 characters (``N_CHAR_PREVIEW``), an ``ActionEvent`` without
  its tool-call arguments (``event_preview``). The previous summary event sits first among the
  forgotten events, so it is shown (cut like the others) and forgotten like them
  (``summary = "message"``).
- **Token rule** (``Reason.TOKENS``): when the view's tokens exceed ``min(max_tokens, the agent
  LLM's max_input_tokens)`` (``LLMSummarizingCondenserSettings`` passes the agent LLM's window
  as ``max_tokens`` when unset), the same condensation keeps the newest events whose tokens,
  with the first ``keep_first`` events', stay under half of it
  (``get_suffix_length_for_token_reduction`` forgets the shortest run over ``total - limit //
  2``): ``keep = limit // 2 - 1`` tokens with ``keep_less_pinned`` (with ``keep_first = 0`` the
  system prompt event is in the forgotten run's count, so nothing comes off). A condensation
  that would forget fewer than ``minimum_progress`` (0.1) of the view's events, or none,
  becomes a hard context reset that summarizes every event after the system prompt
  (``min_progress = 0.1``: no tail). Tokens are the agent LLM's ``get_token_count`` of the
  rendered messages: a turn's size is what its event adds to that count (a constant such as the
  reply priming is ``base_tokens``).
- ``PipelineCondenser`` runs condensers in order and stops at the first ``Condensation``;
  ``NoOpCondenser`` never condenses. The old repository's window, browser-masking and
  forgetting condensers are not in the SDK; a context-window error from the agent's LLM emits
  a ``CondensationRequest``, which this condenser handles by summarizing too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

PACKAGE = "openhands-sdk 1.58.2"
DIFFERENTIAL = "tests/presets/test_openhands_preset.py"  # Python >= 3.12: .venvs/py3.12-openhands

MAX_SIZE = Knob("max_size", "count", 240,
                "condense when the view holds more than this many events (the system prompt and "
                "summary events count); LLMSummarizingCondenser's and its settings' default "
                "(default_condenser(), the sub-agents' one, uses 80)", minimum=4)
KEEP_FIRST = Knob("keep_first", "count", 2,
                  "the first events never condensed (the leading system prompt event always "
                  "stays); default_condenser() uses 4", minimum=0)
MAX_TOKENS = Knob("max_tokens", "count_or_off", None,
                  "condense when the view's tokens exceed min(max_tokens, window), keeping the "
                  "newest events under half of it with the first keep_first; false/absent: only "
                  "`window`, if set")
WINDOW = Knob("window", "count_or_off", None,
              "the agent LLM's context window (LLM.max_input_tokens, or litellm's model info): "
              "the condenser's token rule uses it too; false/absent: an unknown model")
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of the summary event", framework_knob=False)
PREVIEW_CHARS = 500  # openhands.sdk.event.base.N_CHAR_PREVIEW
MINIMUM_PROGRESS = 0.1  # LLMSummarizingCondenser.minimum_progress: under it, a hard context reset
MAX_EVENT_CHARS = Knob("max_event_chars", "count_or_off", None,
                       "not a framework knob: the most characters any event's text holds, summaries "
                       f"included. The summarizer is shown str(event), cut at {PREVIEW_CHARS} "
                       "characters (N_CHAR_PREVIEW), and an ActionEvent without its tool-call "
                       f"arguments: at most {PREVIEW_CHARS} (message events only) every forgotten "
                       "event is shown whole; false/absent (the default) or more: every forgotten "
                       "event and the previous summary count as shown in part (`event_preview`)",
                       framework_knob=False)
KNOBS = (MAX_SIZE, KEEP_FIRST, MAX_TOKENS, WINDOW, SUMMARY_TOKENS, MAX_EVENT_CHARS)


def shown_whole(values: Values) -> bool:
    """Whether the summarizer sees every forgotten event whole (``str(event)`` is uncut)."""
    chars = values["max_event_chars"]
    return chars is not None and chars <= PREVIEW_CHARS


def tail_events(values: Values) -> int:
    """``events_from_tail`` of the events rule: the newest events a condensation keeps."""
    return int(values["max_size"] // 2 - values["keep_first"] - 1)


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    if tail_events(values) <= 0:  # validate_keep_first_vs_max_size
        raise fail("keep_first", f"keep_first ({values['keep_first']}) must be less than max_size // 2 "
                                 f"- 1 ({values['max_size']} // 2 - 1) (the SDK's ValueError: "
                                 "\"keep_first must be less than max_size // 2 to leave room for "
                                 "condensation\")")


def token_limit(values: Values) -> int | None:
    """The token rule's limit: ``_effective_max_tokens``, the smaller of the two set."""
    limits = [v for v in (values["max_tokens"], values["window"]) if v]
    return min(limits) if limits else None


def token_keep(limit: int) -> int:
    """The token rule's keep: the kept events' tokens stay under ``limit // 2`` (with the first
    ``keep_first`` events'), so at most ``limit // 2 - 1``: the SDK forgets the shortest run of
    events whose tokens exceed ``total - limit // 2`` (``get_shortest_prefix_above_token_count``)."""
    return limit // 2 - 1


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    common: dict[str, Any] = {"summary_tokens": values["summary_tokens"],
                              "summary": "message",  # the previous summary event is the oldest forgotten one
                              "input": "candidates"}
    if not shown_whole(values):
        # event_preview: a 1-token input limit leaves every candidate of more than one token,
        # and the previous summary, shown in part
        common.update(input_limit=1, input_limit_unit="tokens")
    events = {"kind": "compact", "trigger_unit": "messages", "trigger": values["max_size"] + 1,
              "keep_unit": "messages", "keep": tail_events(values), **common}
    # turn 0 is the system prompt event, which the SDK never forgets (protected_prefix)
    top: dict[str, Any] = {"keep_first": max(values["keep_first"], 1)}
    stages = [events]
    limit = token_limit(values)
    if limit is not None:
        stages.append({"kind": "compact", "trigger_unit": "tokens", "trigger": limit + 1,
                       "keep_unit": "tokens", "keep": token_keep(limit), **common,
                       # get_suffix_length_for_token_reduction counts the events after the first
                       # keep_first with those as its base: their tokens come off the keep (with
                       # keep_first = 0 the system prompt event counts in the forgotten prefix)
                       "keep_less_pinned": values["keep_first"] > 0,
                       "min_progress": MINIMUM_PROGRESS})
    if values["window"]:
        top["window"] = values["window"]
    return top, stages


def check_shape(messages_per_turn: tuple[int, int], fail: Callable[[str, str], PolicyError]) -> None:
    """An OpenHands event is a turn: the condenser cuts between any two message events."""
    if tuple(messages_per_turn) != (1, 1):
        raise fail("messages_per_turn", "OpenHands' LLMSummarizingCondenser cuts between any two "
                                        "events, so each event is its own turn (turn 0 the system "
                                        "prompt event): use messages_per_turn = [1, 1]")


EVENT_PREVIEW = Difference(
    "event_preview",
    f"the summarizer is shown each forgotten event as str(event): its text cut at {PREVIEW_CHARS} "
    "characters (N_CHAR_PREVIEW; the previous summary event too), an ActionEvent as its thought "
    "and action class name without the tool-call arguments. Characters are not tokens, so unless "
    f"`max_event_chars` is at most {PREVIEW_CHARS} the model counts every forgotten event of more "
    "than one token, and the previous summary, as shown in part.",
    "more careful: with `max_event_chars` unset or over the preview, every condensation that "
    "forgets an event is a hole in the model; in the SDK the events over 500 characters (and "
    "every tool call's arguments) are",
    "compared: the model's shown events are a subset of the SDK's, and the SDK shows whole "
    "exactly the events (and the previous summary) of at most 500 characters")
HARD_RESET = Difference(
    "hard_reset_forgets_pinned",
    "a hard context reset (the token rule forgetting under minimum_progress, 0.1 of the view) "
    "forgets every event after the system prompt: the model keeps no tail then, as the SDK, but "
    "keeps the pinned events 1 to keep_first - 1, which the SDK forgets (shown to the summarizer, "
    "cut at 500 characters) and replaces by the reset's summary, pinned from then on: with "
    "keep_first of 2 or more the two diverge after a reset.",
    "the same verdict: at the reset the model reports the hole (every forgotten event shown in "
    "part) or the floor (a floor above zero, no tail) the SDK has; the SDK also loses the pinned "
    "events' markers there, which the model does not name. After a reset with keep_first >= 2 "
    "the cuts are not predicted (with keep_first <= 1 they are exact)",
    "compared exactly up to and through resets with keep_first <= 1; a reset with keep_first >= 2 "
    "is compared (the model's deleted events are the SDK's forgotten unpinned ones, no tail) and "
    "the comparison stops there")
BOTH_RULES = Difference(
    "both_rules_at_once",
    "when the events rule and the token rule fire at the same event the SDK makes one "
    "condensation keeping the shorter of the two tails; the model runs the events stage, then the "
    "token stage on what that left (a second summary): the same events kept, except that the "
    "token stage judges minimum_progress on its own, shorter run (and may keep nothing) and, "
    "when its tail is the whole events tail, summarizes the new summary alone.",
    "more careful only: the model keeps at most what the SDK keeps, and its second summary "
    "(shown in part unless `max_event_chars` is at most 500) can only add holes",
    "not compared: the differential test runs each rule alone")
TOOL_PAIRS = Difference(
    "tool_call_pairs",
    "the SDK never separates an ActionEvent from its ObservationEvent (manipulation indices): "
    "the forgotten range ends at the next boundary, so a condensation can forget one event more "
    "than the model, which cuts between any two events (messages_per_turn = [1, 1]).",
    "one event fewer kept than modelled when the cut falls inside a tool call: keep the floor "
    "one below the tail (`max_size // 2 - keep_first - 2`) in sessions with tool calls",
    "the differential test uses message events only")
REQUEST = Difference(
    "condensation_request",
    "a context-window error from the agent's LLM (or Conversation.condense()) adds a "
    "CondensationRequest: the next condensation keeps the newest `len(view) // 2 - keep_first "
    "- 1` events, everything forgotten shown to the summarizer; with the token rule at the "
    "window this happens only when the provider counts more tokens than litellm.",
    "no hole; a floor above half the view can be violated (not modelled)",
    "not compared")

PRESET = Preset(
    name="openhands.CondenserPipeline",
    summary="OpenHands SDK's LLMSummarizingCondenser(max_size=240, keep_first=2), with its token "
            "rule at the agent LLM's window; the summarizer sees each forgotten event cut at 500 "
            "characters",
    knobs=KNOBS,
    translate=_translate,
    check=_check,
    validated_on=(PACKAGE,),
    differential=DIFFERENTIAL,
    differences=(EVENT_PREVIEW, HARD_RESET, BOTH_RULES, TOOL_PAIRS, REQUEST),
    doc="docs/presets/openhands.md",
)
