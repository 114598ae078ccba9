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


# -- the marker oracle ----------------------------------------------------------------------
#
# Every message a scenario sends carries one unique marker (``MK...``; the agent's reply to it
# ``RMK...``), on one line, so a message reaches a summarizer whole or not at all. The fake
# summarizer writes back every marker it could read in its input; a marker that no later context,
# summary or spill holds is lost.

MARKER = re.compile(r"\bR?MK[0-9A-Za-z]+\b")


def markers(text: str) -> set[str]:
    return set(MARKER.findall(text))


class MarkerSummarizer(GenericFakeChatModel):
    """LangChain's fake chat model as a summarizer: its summary lists the markers it was shown."""

    calls: list[list[BaseMessage]] = []  # noqa: RUF012 - pydantic field, replaced per instance

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        self.calls.append(list(messages))
        seen = sorted(markers(prompt_text(messages)))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="SUMMARY " + " ".join(seen)))])


class EchoModel(GenericFakeChatModel):
    """LangChain's fake chat model as the agent: it answers the newest human message with its
    marker prefixed by ``R`` (and a deterministic id), so a run's messages depend on its inputs only."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        last = next(m for m in reversed(messages) if isinstance(m, HumanMessage)
                    and not m.additional_kwargs.get("lc_source"))
        mark = sorted(markers(str(last.content)))[0]
        reply = AIMessage(content=f"R{mark} " + "a" * 120, id=f"ai-{mark}")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def marker_summarizer() -> MarkerSummarizer:
    return MarkerSummarizer(messages=iter(()), calls=[])


def echo_model() -> EchoModel:
    return EchoModel(messages=iter(()))


def human(thread: str, i: int, chars: int = 120, with_id: bool = True) -> HumanMessage:
    mark = f"MK{thread}x{i:03d}"
    return HumanMessage(content=f"{mark} " + "h" * chars, id=f"h-{mark}" if with_id else None)


class ToolCallingModel(GenericFakeChatModel):
    """LangChain's fake chat model as a tool-calling agent: it answers a human message with a
    call of the ``lookup`` tool on its marker, and the tool's result (``MK...t``) with a reply
    ``RMK...t``; so one turn is four messages and the agent's model runs twice per turn."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        from langchain_core.messages import ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        last = messages[-1]
        if isinstance(last, ToolMessage):
            mark = sorted(markers(str(last.content)))[0]
            reply = AIMessage(content=f"R{mark} " + "a" * 80, id=f"ai-R{mark}")
        else:
            asked = next(m for m in reversed(messages) if isinstance(m, HumanMessage)
                         and not m.additional_kwargs.get("lc_source"))
            mark = sorted(markers(str(asked.content)))[0]
            reply = AIMessage(content="", id=f"ai-call-{mark}",
                              tool_calls=[{"name": "lookup", "args": {"q": mark}, "id": f"call-{mark}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def tool_calling_model() -> ToolCallingModel:
    return ToolCallingModel(messages=iter(()))


def lookup_tool() -> Any:
    """The ``lookup`` tool the tool-calling model calls: its result carries ``MK...t``."""
    from langchain_core.tools import tool

    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return f"{q}t " + "t" * 300

    return lookup
