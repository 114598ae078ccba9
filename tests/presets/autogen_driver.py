"""Drive AutoGen's real model contexts offline (the AutoGen preset's differential test).

A session is a list of turns (tests/presets/harness.py): a human message, an AI answer, or an AI
message with function calls and their results. Every message's content is a marker ``[t<turn>m<k>]``
followed by filler words, ``size`` whitespace-separated words in all, so the token count of
autogen_ext's ``ReplayChatCompletionClient.count_tokens`` (words of string contents) is the turn's
size. A function result's content is a list (AutoGen's ``FunctionExecutionResultMessage``), which
that client does not count: tool turns are for the buffered context only (the preset refuses
them for the token-limited one).

After each turn the driver asks the context for its view (``get_messages()``, what the model
would be sent at that model call) and records which stored messages it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from autogen_core import FunctionCall
from autogen_core.model_context import (
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    UserMessage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient

from tests.presets.harness import Turn


def text(turn: int, k: int, size: int) -> str:
    """``size`` words: the marker and filler."""
    return " ".join([f"[t{turn}m{k}]", *(["w"] * (size - 1))])


def messages(index: int, turn: Turn) -> list[LLMMessage]:
    """The AutoGen messages of one turn."""
    if turn.kind == "human":
        return [UserMessage(content=text(index, 0, turn.sizes[0]), source="user")]
    if turn.kind == "ai":
        return [AssistantMessage(content=text(index, 0, turn.sizes[0]), source="assistant")]
    if turn.kind == "chat":  # a prompt and answers, one message each
        return [UserMessage(content=text(index, k, size), source="user") if k % 2 == 0
                else AssistantMessage(content=text(index, k, size), source="assistant")
                for k, size in enumerate(turn.sizes)]
    # AssistantAgent's tool round: one message of calls, one message of all their results
    calls = [FunctionCall(id=f"c{index}_{k}", name="probe", arguments="{}") for k in range(1, len(turn.sizes))]
    out: list[LLMMessage] = [AssistantMessage(content=calls, source="assistant", thought=text(index, 0, turn.sizes[0]))]
    out.append(FunctionExecutionResultMessage(content=[
        FunctionExecutionResult(content=text(index, k, turn.sizes[k]), call_id=f"c{index}_{k}", name="probe")
        for k in range(1, len(turn.sizes))]))
    return out


def make(kind: str, *, buffer_size: int = 0, head_size: int = 0, tail_size: int = 0,
         token_limit: int = 0) -> ChatCompletionContext:
    if kind == "BufferedChatCompletionContext":
        return BufferedChatCompletionContext(buffer_size=buffer_size)
    if kind == "HeadAndTailChatCompletionContext":
        return HeadAndTailChatCompletionContext(head_size=head_size, tail_size=tail_size)
    if kind == "TokenLimitedChatCompletionContext":
        return TokenLimitedChatCompletionContext(ReplayChatCompletionClient(["ok"]), token_limit=token_limit)
    return UnboundedChatCompletionContext()


@dataclass
class View:
    """One model call's view after a turn: the stored indices it holds, the turn each stored
    message belongs to, and the view's token count (words)."""

    held: frozenset[int]
    owner: tuple[int, ...]
    tokens: int  # words of string contents, as ReplayChatCompletionClient.count_tokens counts


async def _run(context: ChatCompletionContext, turns: Sequence[Turn]) -> list[View]:
    owner: list[int] = []
    out: list[View] = []
    for i, turn in enumerate(turns):
        for m in messages(i, turn):
            await context.add_message(m)
            owner.append(i)
        view = await context.get_messages()
        stored = context._messages
        where = {id(m): j for j, m in enumerate(stored)}
        held = frozenset(where[id(m)] for m in view if id(m) in where)
        out.append(View(held, tuple(owner), sum(len(m.content.split()) for m in view if isinstance(m.content, str))))
    return out


def run(context: ChatCompletionContext, turns: Sequence[Turn]) -> list[View]:
    """The view after every turn of ``turns`` fed to ``context``."""
    return asyncio.run(_run(context, turns))
