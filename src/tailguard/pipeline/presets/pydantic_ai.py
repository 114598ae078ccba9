"""Pydantic AI v2 ``OpenAICompaction`` (brief 6c): the package's own client-side compaction.

Read from ``pydantic_ai/models/openai/_compaction.py`` and ``capabilities/process_history.py`` of
pydantic-ai-slim 2.68.0. Pydantic AI 2 reduces history through capabilities whose
``before_model_request`` rewrites the run's message list: ``ProcessHistory(processor)`` runs an
application's function (no knobs of the package's own, nothing to translate: the adapter,
``tailguard.adapters.pydantic_ai``, guards it at run time) and ``OpenAICompaction`` is the one
that ships a policy:

- **stateless** (``message_count_threshold=N``, or ``stateless=True``): before each model
  request, when ``len(messages) > N`` (the current request and an earlier compaction response
  count), every message but the current request is sent to ``/responses/compact`` and replaced
  by the one ``ModelResponse`` it returns (a ``CompactionPart``): the summarizer is shown every
  candidate, the earlier compaction first, and one message stays verbatim.
- **stateful** (``OpenAICompaction()``, the default, or ``token_threshold=``): OpenAI's server
  compacts inside ``/responses`` when it decides; the client never sees what is kept. That is
  not a policy this checker can judge: the preset refuses it by name (exit 2), never ``safe``.

``AnthropicCompaction(token_threshold=150_000)`` is server-side in the same way and is not a
preset.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

MESSAGE_COUNT_THRESHOLD = Knob(
    "message_count_threshold", "count_or_off", None,
    "stateless mode: compact when the request's message list holds more than this many messages "
    "(the current request and an earlier compaction count); false/absent: stateful mode, which "
    "this checker cannot judge (OpenAICompaction()'s default)")
TOKEN_THRESHOLD = Knob(
    "token_threshold", "count_or_off", None,
    "stateful mode only: OpenAI's server-side `compact_threshold`; not checkable (the server decides "
    "what it keeps)")
WINDOW = Knob("window", "count_or_off", None,
              "not a framework knob: the model's context window in tokens (occupancy above it is an "
              "overflow: message_count_threshold counts messages, never tokens)", framework_knob=False)
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of the compaction item (tokens)", framework_knob=False)
KNOBS = (MESSAGE_COUNT_THRESHOLD, TOKEN_THRESHOLD, WINDOW, SUMMARY_TOKENS)


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    stateless = values["message_count_threshold"] is not None
    if stateless and values["token_threshold"] is not None:
        raise fail("token_threshold", "`token_threshold` is only valid for stateful compaction "
                                      "(`stateless=False`); with message_count_threshold use neither "
                                      "(OpenAICompaction's UserError)")
    if not stateless:
        raise fail("message_count_threshold",
                   "absent: OpenAICompaction() runs in stateful mode, where OpenAI's server compacts inside "
                   "/responses when and as it decides (token_threshold or its own default) and the client "
                   "never sees what it keeps, so no verdict can be given; set message_count_threshold "
                   "(stateless mode, /responses/compact) to have it checked")


def check_shape(messages_per_turn: tuple[int, int], fail: Callable[[str, str], PolicyError]) -> None:
    """Every message is its own turn, and a session the stages can judge has no tool calls.

    With tools, a compaction that runs at a tool result's request keeps that request alone and
    compacts the call; before the next request Pydantic AI's history repair
    (``_drop_orphaned_tool_results``) drops the result whose call is gone, unsummarized. The stages
    cannot express a message that outlives its compaction and then leaves unseen, so such a
    session is refused by name, never called safe (tests/presets/test_pydantic_ai_preset.py
    shows the loss on the real package)."""
    if tuple(messages_per_turn) != (1, 1):
        raise fail("messages_per_turn", "OpenAICompaction keeps only the current request, so each message is its "
                                        "own turn (messages_per_turn = [1, 1]: prompts and answers, no tool "
                                        "calls). With tool calls it is not checkable: a compaction at a tool "
                                        "result compacts the call, and Pydantic AI's history repair then drops "
                                        "the result before the next request, unsummarized (a loss the stages "
                                        "cannot express); guard it at run time (tailguard.adapters.pydantic_ai)")


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stage = {
        "kind": "compact",
        # len(messages) > N: the compaction response counts as one message, as "message" does
        "trigger_unit": "messages", "trigger": values["message_count_threshold"] + 1,
        "keep_unit": "messages", "keep": 1,  # request_context.messages[-1]
        "summary_tokens": values["summary_tokens"],
        "summary": "message",  # the earlier compaction is the oldest message compacted
        "input": "candidates",  # messages[:-1], all of them: no input limit
    }
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    return top, [stage]


BEFORE_REQUESTS = Difference(
    "checked_before_requests",
    "`before_model_request` runs before each model request, when the list ends with a request; the "
    "stages run after every append, so when a model response is the message that crosses the "
    "threshold the model compacts one append earlier than Pydantic AI (keeping that response).",
    "the model's compaction can come one message early; holes, floor findings and the verdict are "
    "the same (the summarizer is shown every candidate either way, one message stays verbatim)",
    "the harness checks that Pydantic AI did not compact at that response, undoes the model's "
    "compaction and compares the one at the next request exactly")
OPAQUE_SUMMARY = Difference(
    "opaque_compaction",
    "the compaction item is encrypted by OpenAI: what it keeps of what it was shown cannot be read; "
    "the model trusts it as a summary of everything it was sent.",
    "none on the stages; a summary that forgets is not a hole either model can see",
    "the stub server's compaction item names the messages it was sent")
SERVER_WINDOW = Difference(
    "window_not_enforced",
    "an overflow of `window` is the provider's context-length error; Pydantic AI does not trim.",
    "the model reports the overflow; the real run fails at that request",
    "the stub server has no window")

ORPHANED_RESULTS = Difference(
    "orphaned_tool_results",
    "with tool calls, a compaction at a tool result's request compacts the call and keeps the result; "
    "`_drop_orphaned_tool_results` (run before every request) then drops that result unsummarized.",
    "a loss on every such compaction; the preset refuses messages_per_turn other than [1, 1] by name "
    "rather than call a session with tools safe",
    "test_a_compaction_at_a_tool_result_loses_the_result shows the loss on the real package")

PRESET = Preset(
    name="pydantic_ai.OpenAICompaction",
    summary="Pydantic AI v2 OpenAICompaction, stateless: when more than `message_count_threshold` "
            "messages, everything but the current request goes to /responses/compact",
    knobs=KNOBS,
    translate=_translate,
    check=_check,
    validated_on=("pydantic-ai-slim 2.68.0", "openai 3.57.0"),
    differential="tests/presets/test_pydantic_ai_preset.py",
    differences=(BEFORE_REQUESTS, OPAQUE_SUMMARY, SERVER_WINDOW, ORPHANED_RESULTS),
    doc="docs/presets/pydantic-ai.md",
    aliases=("pydantic_ai.models.openai.OpenAICompaction",),
)
