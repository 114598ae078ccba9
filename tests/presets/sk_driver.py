"""Semantic Kernel driven offline: its real reducers and its real ``OpenAIChatCompletion``.

SK ships no fake chat model, so the summarizer is SK's own OpenAI connector on an ``AsyncOpenAI``
client whose HTTP transport is an ``httpx.MockTransport`` (:class:`StubEndpoint`): it records
every request and answers with a summary that echoes every marker (``[m<i>]``) the request held,
so a marker is recoverable when it is in the history or in a summary there (which echoes the
earlier summary it was shown). Every message carries a unique marker; function calls carry theirs
in the arguments, results in the result.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from openai import AsyncOpenAI
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.contents import (
    AuthorRole,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
)

TAG = re.compile(r"\[m(\d+)\]")
T = TypeVar("T")


@dataclass
class StubEndpoint:
    """The chat completions endpoint: records each request's messages, echoes their markers."""

    requests: list[list[dict[str, Any]]] = field(default_factory=list)
    fail: bool = False
    #: answer a request whose last message is a user's with ``[m<i+1>]`` (its marker ``[m<i>]``):
    #: an agent's reply, not a summary (which echoes)
    answer_users: bool = False

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body["messages"])
        if self.fail:
            return httpx.Response(500, json={"error": {"message": "stub failure"}})
        tags = sorted({int(t) for t in TAG.findall(json.dumps(body["messages"]))})
        text = "SUMMARY " + " ".join(f"[m{t}]" for t in tags)
        last = body["messages"][-1]
        asked = TAG.findall(json.dumps(last.get("content")))
        if self.answer_users and last.get("role") == "user" and asked:
            text = f"[m{int(asked[0]) + 1}] answer"
        return httpx.Response(200, json={
            "id": f"stub-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": "stub",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    def shown(self, k: int = -1) -> set[int]:
        """The markers request ``k`` showed the summarizer."""
        return {int(t) for t in TAG.findall(json.dumps(self.requests[k]))}

    def service(self) -> OpenAIChatCompletion:
        client = AsyncOpenAI(api_key="stub", base_url="http://stub.invalid/v1", max_retries=0,
                             http_client=httpx.AsyncClient(transport=httpx.MockTransport(self.handle)))
        return OpenAIChatCompletion(ai_model_id="stub", async_client=client)


def message(i: int, role: str = "user") -> ChatMessageContent:
    """A chat message with marker ``[m<i>]``."""
    roles = {"user": AuthorRole.USER, "assistant": AuthorRole.ASSISTANT, "system": AuthorRole.SYSTEM}
    return ChatMessageContent(role=roles[role], content=f"[m{i}] message {i}")


def tool_round(i: int) -> list[ChatMessageContent]:
    """An assistant function call (marker ``[m<i>]`` in its arguments) and its result (``[m<i+1>]``)."""
    call = ChatMessageContent(role=AuthorRole.ASSISTANT, items=[
        FunctionCallContent(id=f"call{i}", name="probe", arguments=json.dumps({"q": f"[m{i}]"}))])
    result = ChatMessageContent(role=AuthorRole.TOOL, items=[
        FunctionResultContent(id=f"call{i}", name="probe", result=f"[m{i + 1}] result")])
    return [call, result]


def tags(messages: Iterable[ChatMessageContent]) -> set[int]:
    """Every marker the messages hold (text, call arguments, results, summaries)."""
    return {int(t) for m in messages for t in TAG.findall(m.model_dump_json())}


def raw_tags(messages: Iterable[ChatMessageContent]) -> set[int]:
    """The markers of the messages that are not summaries."""
    return tags(m for m in messages if not m.metadata.get("__summary__"))


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)
