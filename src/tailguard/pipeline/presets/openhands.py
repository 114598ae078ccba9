"""OpenHands' default condenser pipeline (brief 6c): window condenser, then LLM summarizer.

Built from the source, not a package: read from All-Hands-AI/OpenHands at commit
``156d0686c46aafb0fa9d291da6421fb6f64dddc0`` (2025-11-28), ``openhands/server/session/
session.py`` (the default pipeline: ``ConversationWindowCondenserConfig()``,
``BrowserOutputCondenserConfig(attention_window=2)``, ``LLMSummarizingCondenserConfig(
keep_first=4, max_size=settings.condenser_max_size or 120)``) and ``openhands/memory/
condenser/impl/``. ``CondenserPipeline.condense`` runs them in order and stops at the first
that returns a ``Condensation``.

- ``LLMSummarizingCondenser``: when ``len(view) > max_size`` (the summary event counts), keep
  the first ``keep_first`` events, the summary event and the newest ``max_size // 2 -
  keep_first - 1`` events; every other event is forgotten after being shown to the summarizer
  (each truncated to ``max_event_length`` characters), with the previous summary whole.
- ``ConversationWindowCondenser``: only on a condensation request (the LLM raised a
  context-window error): keep the essential first events and about half of the rest, no
  summary: the forgotten events are lost.

No installable package holds these condensers here (see ``DIFFERENTIAL``), so the preset names
the commit it was read from and no differential test can run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

SOURCE = "All-Hands-AI/OpenHands@156d0686c46aafb0fa9d291da6421fb6f64dddc0"
DIFFERENTIAL = (
    "impossible here: no package installable from this machine's index contains the condensers "
    "(openhands-ai 0.8.3 to 0.9.8 ship only the old openhands/memory/condenser.py MemoryCondenser; "
    "openhands-sdk is not on the index); the preset is built from the fetched source " + SOURCE
)

MAX_SIZE = Knob("max_size", "count", 120, "condense when the view holds more than this many events "
                "(settings.condenser_max_size or 120; LLMSummarizingCondenserConfig's own default is "
                "100)", minimum=2)
KEEP_FIRST = Knob("keep_first", "count", 4, "the first events always kept (the pipeline's 4; the "
                  "config's own default is 1)", minimum=0)
MAX_EVENT_LENGTH = Knob("max_event_length", "count", 10_000,
                        "characters of each event shown to the summarizer (not modelled: see "
                        "`max_event_length` in the differences)")
WINDOW = Knob("window", "count_or_off", None,
              "the LLM's context window in tokens: above it the LLM raises a context-window error "
              "and the ConversationWindowCondenser forgets; false/absent: no window condenser")
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of the summary event", framework_knob=False)
KNOBS = (MAX_SIZE, KEEP_FIRST, MAX_EVENT_LENGTH, WINDOW, SUMMARY_TOKENS)


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    if values["keep_first"] >= values["max_size"] // 2:  # LLMSummarizingCondenser.__init__
        raise fail("keep_first", f"keep_first ({values['keep_first']}) must be less than half of "
                                 f"max_size ({values['max_size']}) (OpenHands' ValueError)")


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summarize = {
        "kind": "compact",
        # len(view) > max_size; the view counts the summary event, as the messages unit does
        "trigger_unit": "messages", "trigger": values["max_size"] + 1,
        "keep_unit": "messages", "keep": values["max_size"] // 2 - values["keep_first"] - 1,
        "summary_tokens": values["summary_tokens"],
        "summary": "separate",  # the previous summary is shown whole, never forgotten unseen
        "input": "candidates",
    }
    top: dict[str, Any] = {"keep_first": values["keep_first"]}
    stages = [summarize]
    if values["window"]:
        top["window"] = values["window"]
        # the context-window error comes from the LLM call after the summarizer ran; the
        # window condenser then forgets before the next call: a token truncate after it
        stages.append({"kind": "truncate", "unit": "tokens", "limit": values["window"]})
    return top, stages


def check_shape(messages_per_turn: tuple[int, int], fail: Callable[[str, str], PolicyError]) -> None:
    """An OpenHands event is a turn: the summarizing condenser cuts between any two events."""
    if tuple(messages_per_turn) != (1, 1):
        raise fail("messages_per_turn", "OpenHands' LLMSummarizingCondenser cuts between any two "
                                        "events (an action and its observation too), so each event "
                                        "is its own turn: use messages_per_turn = [1, 1]")


HALF_NOT_ENOUGH = Difference(
    "window_forgets_half",
    "the ConversationWindowCondenser forgets about half of the non-essential events at once; the "
    "truncate stage drops the oldest only until the window holds.",
    "every firing is a hole in both; OpenHands' holes are larger (the verdict is the same)",
    "no differential test (see `differential`)")
ESSENTIAL_EVENTS = Difference(
    "essential_events",
    "the window condenser keeps the system message, the first user message and its recall "
    "events; the stages pin the first `keep_first` events instead.",
    "the same events when they are the first `keep_first` (OpenHands' usual order)",
    "no differential test")
SUMMARY_EVENT_COUNTED = Difference(
    "summary_event_counted",
    "`len(view)` counts the summary event; the trigger `max_size + 1` counts the verbatim events "
    "(the summary is `separate`), so after the first condensation OpenHands condenses one event "
    "earlier than the model.",
    "the model compacts one append later than OpenHands: a model trace may be one append longer",
    "no differential test")
MAX_EVENT_LENGTH_CLIP = Difference(
    "max_event_length",
    "each forgotten event is shown truncated to `max_event_length` characters; a longer event is "
    "shown in part, which brief 4c counts as unseen, and the stages do not clip per message.",
    "events over the limit are holes the model does not report: keep every event under it",
    "no differential test")
BROWSER_MASKING = Difference(
    "browser_output_masking",
    "BrowserOutputCondenser(attention_window=2) masks all but the newest two browser observations; "
    "not modelled.",
    "sessions with browser output lose content the model does not report",
    "no differential test")

PRESET = Preset(
    name="openhands.CondenserPipeline",
    summary="OpenHands' default condenser pipeline: LLMSummarizingCondenser(keep_first=4, "
            "max_size=120), and ConversationWindowCondenser when the LLM's window is exceeded",
    knobs=KNOBS,
    translate=_translate,
    check=_check,
    validated_on=(SOURCE + " (source only)",),
    differential=DIFFERENTIAL,
    differences=(HALF_NOT_ENOUGH, ESSENTIAL_EVENTS, MAX_EVENT_LENGTH_CLIP,
                 BROWSER_MASKING),
    doc="docs/presets/openhands.md",
)
