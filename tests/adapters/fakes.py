"""Offline stand-ins the frameworks themselves provide, with a record of what was shown.

``RecordingChatModel`` is LangChain's own ``GenericFakeChatModel`` with two additions: it
records the messages of every call (what a summarizer was really shown) and ``bind_tools``
returns itself, so ``create_agent`` can drive it with tools. Nothing here imitates a
framework; the frameworks run as installed.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage


class RecordingChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that records each call's messages and accepts tools."""

    calls: list[list[BaseMessage]] = []  # noqa: RUF012 - pydantic field, replaced per instance

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def recording_model(replies: Iterator[AIMessage | str] | None = None) -> RecordingChatModel:
    it = replies if replies is not None else itertools.repeat(AIMessage(content="SUMMARY"))
    return RecordingChatModel(messages=it, calls=[])


def conversation(count: int = 120, chars: int = 400, prefix: str = "m") -> list[BaseMessage]:
    """``count`` alternating human/AI messages ``m000`` ...; 400 chars each reproduces the issue."""
    out: list[BaseMessage] = []
    for i in range(count):
        cls = HumanMessage if i % 2 == 0 else AIMessage
        out.append(cls(content=f"{prefix}{i:03d} " + "x" * chars, id=f"{prefix}{i}"))
    return out


def shown_offsets(prompt: str, prefix: str = "m") -> list[int]:
    """Which ``m000``-style messages a summary prompt holds, whole (with all their x's)."""
    return sorted(int(x) for x in re.findall(rf"\b{prefix}(\d{{3}}) x{{400}}", prompt))


def prompt_text(call: Sequence[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in call)


def audit_json(path: str, profile: str = "partitioned") -> tuple[int, dict[str, Any]]:
    """``tailguard audit --format json`` of a log, as the CLI runs it."""
    import io

    from tailguard.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", "--format", "json", "--profile", profile, path], stdout=out, stderr=err)
    assert err.getvalue() == "", err.getvalue()
    return code, json.loads(out.getvalue())
