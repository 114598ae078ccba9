"""AutoGen ``ChatCompletionContext`` (brief 6c): what an ``AssistantAgent``'s model is shown.

Read from ``autogen_core/model_context/`` of autogen-core 0.7.5. An agent's context stores every
message it is given (``add_message`` appends to ``_messages``; nothing is ever removed but by
``clear()``), and ``get_messages()`` computes, at every model call, the *view* the model is sent.
No context summarizes: what leaves the view is dropped without a summary. The stored list stays
in the context's own state (``save_state()`` returns all of it, and ``AssistantAgent.save_state``
keeps it as ``llm_context``), but nothing ever shows a message to the model again once the view
has passed it: it is kept, not recoverable. So a dropped message is a **hole** (a truncation in
brief 6's model) unless something else holds it (a spill: ``tailguard.adapters.autogen``).

- ``UnboundedChatCompletionContext`` (``AssistantAgent``'s default): the view is everything. No
  stage; with ``window`` the context outgrows it (an overflow: the request fails).
- ``BufferedChatCompletionContext(buffer_size)``: the last ``buffer_size`` messages, then the
  first of them too when it is a ``FunctionExecutionResultMessage``. A truncate stage in
  messages at ``buffer_size``.
- ``HeadAndTailChatCompletionContext(head_size, tail_size)``: when more than ``head_size +
  tail_size`` messages are stored, the first ``head_size`` (less a trailing function call), a
  ``"Skipped N messages."`` placeholder and the last ``tail_size`` (less a leading function
  result); else everything. ``keep_first = head_size`` and a truncate stage in messages at
  ``head_size + tail_size``.
- ``TokenLimitedChatCompletionContext(model_client, token_limit)``: while the model client's
  ``count_tokens`` of the view exceeds ``token_limit`` it pops the *middle* message
  (``messages.pop(len(messages) // 2)``), then a leading function result. With
  ``token_limit=None`` it pops while ``remaining_tokens`` is negative (the model's window). A
  truncate stage in tokens at ``token_limit`` (or ``window``): the first loss comes at the same
  append; which messages go differs (declared below).

Tool calls: the buffered context cuts inside a tool round (the model drops the whole round: it
names more messages lost than AutoGen, at the same append); the head-and-tail and token-limited
contexts are checked for sessions without tool calls only (``messages_per_turn = [1, 1]``),
refused by name otherwise (their function-call quirks drop a message the stages cannot place).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tailguard.base.errors import PolicyError
from tailguard.pipeline.presets._base import Difference, Fail, Knob, Preset, Values

UNBOUNDED = "UnboundedChatCompletionContext"
BUFFERED = "BufferedChatCompletionContext"
TOKEN_LIMITED = "TokenLimitedChatCompletionContext"
HEAD_AND_TAIL = "HeadAndTailChatCompletionContext"
CONTEXTS: tuple[str, ...] = (UNBOUNDED, BUFFERED, TOKEN_LIMITED, HEAD_AND_TAIL)


def _read_context(value: Any, fail: Fail, window: int) -> str:
    if not isinstance(value, str) or value.rpartition(".")[2] not in CONTEXTS:
        raise fail("model_context", f"expected one of {', '.join(map(repr, CONTEXTS))} (the class in "
                                    f"autogen_core.model_context), got {value!r}")
    return value.rpartition(".")[2]


MODEL_CONTEXT = Knob(
    "model_context", "settings", UNBOUNDED,
    "the ChatCompletionContext class given as AssistantAgent(model_context=...); the agent's default is "
    "UnboundedChatCompletionContext", read=_read_context)
BUFFER_SIZE = Knob(
    "buffer_size", "count_or_off", None,
    "BufferedChatCompletionContext: the view is the last buffer_size messages (required, no default)")
TOKEN_LIMIT = Knob(
    "token_limit", "count_or_off", None,
    "TokenLimitedChatCompletionContext: pop middle messages while the client's count_tokens exceeds this; "
    "false (None, the default): while remaining_tokens < 0, i.e. the model's window (then set window)")
HEAD_SIZE = Knob(
    "head_size", "count_or_off", None,
    "HeadAndTailChatCompletionContext: the first head_size messages stay in the view (required)")
TAIL_SIZE = Knob(
    "tail_size", "count_or_off", None,
    "HeadAndTailChatCompletionContext: the last tail_size messages stay in the view (required)")
WINDOW = Knob("window", "count_or_off", None,
              "not a framework knob: the model's context window in tokens (occupancy above it is an overflow; "
              "TokenLimitedChatCompletionContext without token_limit trims to it)", framework_knob=False)
KNOBS = (MODEL_CONTEXT, BUFFER_SIZE, TOKEN_LIMIT, HEAD_SIZE, TAIL_SIZE, WINDOW)

_OWN: dict[str, tuple[str, ...]] = {
    UNBOUNDED: (), BUFFERED: ("buffer_size",), TOKEN_LIMITED: ("token_limit",),
    HEAD_AND_TAIL: ("head_size", "tail_size"),
}


def _check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    kind = values["model_context"]
    for knob in ("buffer_size", "token_limit", "head_size", "tail_size"):
        if values[knob] is not None and knob not in _OWN[kind]:
            raise fail(knob, f"not a parameter of {kind} (its knobs: {', '.join(_OWN[kind]) or 'none'})")
    required = {BUFFERED: ("buffer_size",), HEAD_AND_TAIL: ("head_size", "tail_size")}.get(kind, ())
    for knob in required:
        if values[knob] is None:
            raise fail(knob, f"{kind} requires {knob} (a positive integer; it has no default)")
    if kind == TOKEN_LIMITED and values["token_limit"] is None and values["window"] is None:
        raise fail("token_limit", "TokenLimitedChatCompletionContext without token_limit trims to the model "
                                  "client's remaining_tokens (the model's window): set window, or token_limit")


def check_session(values: Values, data: Mapping[str, Any], fail: Callable[[str, str], PolicyError]) -> None:
    """The session shapes the translation is exact for (brief 6d: refused by name, never a false
    ``safe``): the head-and-tail and token-limited contexts without tool calls."""
    kind = values["model_context"]
    mpt = data.get("messages_per_turn", [1, 1])
    if kind in (HEAD_AND_TAIL, TOKEN_LIMITED) and isinstance(mpt, list) and mpt != [1, 1]:
        quirk = ("drops the head's last message when it is a function call (its result is in the skipped "
                 "middle)" if kind == HEAD_AND_TAIL else
                 "pops single middle messages, splitting a tool call from its results")
        raise fail("messages_per_turn", f"{kind} {quirk}, a loss inside a tool round the stages cannot place: "
                                        "it is checked for sessions without tool calls (messages_per_turn = "
                                        "[1, 1]); guard it at run time (tailguard.adapters.autogen)")


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    kind = values["model_context"]
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    if kind == UNBOUNDED:
        return top, []
    if kind == BUFFERED:
        return top, [{"kind": "truncate", "unit": "messages", "limit": values["buffer_size"]}]
    if kind == HEAD_AND_TAIL:
        top["keep_first"] = values["head_size"]
        return top, [{"kind": "truncate", "unit": "messages", "limit": values["head_size"] + values["tail_size"]}]
    limit = values["token_limit"] if values["token_limit"] is not None else values["window"]
    return top, [{"kind": "truncate", "unit": "tokens", "limit": limit}]


VIEW_NOT_STATE = Difference(
    "view_not_state",
    "AutoGen never deletes a stored message: get_messages() computes a view, and save_state() keeps every "
    "message; but no AutoGen code shows a message to the model again once the view has passed it.",
    "none: a message out of the view is a hole for the model, as in the stages (the state is no re-read "
    "path the model has)",
    "the harness compares, at every model call, the messages the real view holds with the model's context")
PARTIAL_ROUNDS = Difference(
    "partial_rounds",
    "BufferedChatCompletionContext cuts at a message inside a tool round (dropping one leading function "
    "result); the stages drop whole turns.",
    "the model names the whole round lost where AutoGen keeps its later messages (an orphaned result): "
    "more careful, at the same append",
    "the harness checks the real view's losses are inside the model's lost turns, first at the same append")
MIDDLE_OUT = Difference(
    "middle_out",
    "TokenLimitedChatCompletionContext pops the middle message until the count fits; the view is recomputed "
    "at every call, so a popped message can come back and the oldest ones stay.",
    "the first loss comes at the same append (the first whose total exceeds the limit) and the verdict is "
    "the same; the offsets the finding names are the oldest turns, AutoGen loses middle ones",
    "the harness checks the first loss at the same append and that both lose at least as many tokens as the "
    "excess; the trace's replay loses messages at exactly the finding's append")
COUNT_TOKENS = Difference(
    "count_tokens",
    "TokenLimitedChatCompletionContext counts with its model client's count_tokens (tiktoken and per-message "
    "overhead for OpenAI, tool schemas included); the stages sum turn_tokens and base_tokens.",
    "a client that counts more than the content drops earlier: give base_tokens the tools' share",
    "the harness's ReplayChatCompletionClient counts whitespace-separated words of string contents")
HEAD_PLACEHOLDER = Difference(
    "skipped_placeholder",
    "HeadAndTailChatCompletionContext adds a UserMessage 'Skipped N messages.' between head and tail.",
    "a few tokens more in the view; no content",
    "the harness ignores the placeholder (it is no stored message)")

PRESET = Preset(
    name="autogen",
    summary="AutoGen (autogen-core) ChatCompletionContext of an AssistantAgent: unbounded (the default), "
            "a message buffer, head and tail, or a token limit; each drops from the model's view without a "
            "summary",
    knobs=KNOBS,
    translate=_translate,
    check=_check,
    validated_on=("autogen-core 0.7.5", "autogen-agentchat 0.7.5", "autogen-ext 0.7.5"),
    differential="tests/presets/test_autogen_preset.py",
    differences=(VIEW_NOT_STATE, PARTIAL_ROUNDS, MIDDLE_OUT, COUNT_TOKENS, HEAD_PLACEHOLDER),
    top_keys=("base_tokens",),
    doc="docs/presets/autogen.md",
    aliases=("autogen_core.model_context", "autogen_core.model_context.ChatCompletionContext"),
)
