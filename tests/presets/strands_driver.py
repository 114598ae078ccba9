"""Strands Agents driven offline: the real ``Agent``, its conversation managers and its tool loop,
on a :class:`ScriptedModel`, a subclass of Strands' provider interface (``strands.models.Model``)
that streams canned events. Strands 1.65 ships no test model, so this is its provider extension
point with a script behind it, not an imitation of the agent loop.

Every message carries a unique tag ``[m<i>]`` (``i`` its index among the messages the session
appended: prompts, tool calls, tool results, answers), and every summary the model writes carries
``[s<k>]``; what each summary call was shown is recorded, so the marker oracle follows summaries
transitively. A message's size in tokens is its characters (text blocks, tool-result texts, a tool
call's input as JSON), and the model counts a request the same way and raises
``ContextWindowOverflowException`` above ``window``: the provider's overflow.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from strands import Agent, ToolContext, tool
from strands.models.model import Model
from strands.types.exceptions import ContextWindowOverflowException

TAG = re.compile(r"\[m(\d+)\]")
SUMMARY_TAG = re.compile(r"\[s(\d+)\]")
SUMMARY_PROMPT = "Please summarize this conversation."
CALL_OVERHEAD = len(json.dumps({"note": ""}))  # a tool call's input JSON around its note


def pad(tag: str, size: int) -> str:
    """``size`` characters starting with ``tag``."""
    return tag + "x" * max(0, size - len(tag))


def block_size(block: dict[str, Any]) -> int:
    if "text" in block:
        return len(block["text"])
    if "toolUse" in block:
        return len(json.dumps(block["toolUse"].get("input", {})))
    if "toolResult" in block:
        return sum(len(x.get("text", "")) for x in block["toolResult"].get("content", []))
    return 0


def message_size(message: dict[str, Any]) -> int:
    return sum(block_size(b) for b in message["content"])


def message_tags(message: dict[str, Any]) -> list[int]:
    return [int(t) for t in TAG.findall(json.dumps(message["content"]))]


@dataclass
class Step:
    """One answer of the model: a text of ``size``, or (``result`` set) a call of ``probe`` whose
    input is ``size`` characters and whose result is ``result`` characters."""

    size: int
    result: int | None = None
    stop: bool = False  # the tool ends the invocation after its result (agent.cancel(after_current_tools=True))


@dataclass
class Script:
    steps: list[Step] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    results: dict[str, tuple[str, int, bool]] = field(default_factory=dict)  # call -> (result tag, size, stop)


class ScriptedModel(Model):
    """Strands' provider interface playing a script; ``window``: raise the provider's overflow above it."""

    def __init__(self, script: Script, *, window: int | None = None, summary_tokens: int = 30) -> None:
        self.script = script
        self.window = window
        self.summary_tokens = summary_tokens
        self.requests: list[list[int]] = []  # tags of every request the agent made
        self.prompts: list[list[int]] = []  # tags and summary numbers each summary call was shown
        self.shown: list[list[dict[str, Any]]] = []  # the messages each summary call was shown
        self.calls = 0

    def update_config(self, **model_config: Any) -> None:
        return None

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None,
                                **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield {}  # pragma: no cover

    async def stream(self, messages: Any, tool_specs: Any = None, system_prompt: Any = None,
                     **kwargs: Any) -> AsyncGenerator[Any, None]:
        self.calls += 1
        size = sum(message_size(m) for m in messages) + len(system_prompt or "")
        if self.window is not None and size > self.window:
            raise ContextWindowOverflowException(f"request of {size} tokens > window {self.window}")
        last = messages[-1]["content"] if messages else []
        if last and last[0].get("text") == SUMMARY_PROMPT:
            k = len(self.prompts)
            self.prompts.append([t for m in messages[:-1] for t in message_tags(m)]
                                + [-1 - int(s) for m in messages[:-1] for s in SUMMARY_TAG.findall(json.dumps(m))])
            self.shown.append([json.loads(json.dumps(m)) for m in messages[:-1]])
            for event in _text(pad(f"[s{k}]", self.summary_tokens)):
                yield event
            return
        self.requests.append([t for m in messages for t in message_tags(m)])
        step = self.script.steps.pop(0)
        tag = self.script.tags.pop(0)
        if step.result is None:
            for event in _text(pad(tag, step.size)):
                yield event
            return
        note = pad(tag, step.size - CALL_OVERHEAD)
        yield {"messageStart": {"role": "assistant"}}
        yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"c{tag[2:-1]}", "name": "probe"}}}}
        yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps({"note": note})}}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "tool_use"}}


def _text(text: str) -> list[dict[str, Any]]:
    return [{"messageStart": {"role": "assistant"}}, {"contentBlockStart": {"start": {}}},
            {"contentBlockDelta": {"delta": {"text": text}}}, {"contentBlockStop": {}},
            {"messageStop": {"stopReason": "end_turn"}}]


def probe_tool(script: Script) -> Any:
    @tool(context=True)
    def probe(note: str, tool_context: ToolContext) -> str:
        """Return a result of the size the script says, carrying the next message's tag."""
        tag, size, stop = script.results[TAG.findall(note)[0]]
        if stop:
            tool_context.agent.cancel(after_current_tools=True)
        return pad(tag, size)

    return probe


@dataclass
class Session:
    """One agent and its script; ``sent`` counts the messages the session appended."""

    agent: Agent
    model: ScriptedModel
    script: Script
    sent: int = 0
    invocations: list[list[int]] = field(default_factory=list)  # tags of each invocation

    def invoke(self, prompt: int, steps: Sequence[Step]) -> None:
        """One invocation: a prompt of ``prompt`` characters, then the model's ``steps`` (tool
        rounds, then a text answer, unless the last round stops); tags follow the order of the
        messages."""
        start = self.sent
        tag = f"[m{self.sent}]"
        self.sent += 1
        for s in steps:
            call = f"[m{self.sent}]"
            self.script.steps.append(s)
            self.script.tags.append(call)
            self.sent += 1
            if s.result is not None:
                self.script.results[str(self.sent - 1)] = (f"[m{self.sent}]", s.result, s.stop)
                self.sent += 1
        self.invocations.append(list(range(start, self.sent)))
        self.agent(pad(tag, prompt))


def build(manager: Any, *, window: int | None = None, summary_tokens: int = 30, **agent_kw: Any) -> Session:
    script = Script()
    model = ScriptedModel(script, window=window, summary_tokens=summary_tokens)
    agent = Agent(model=model, tools=[probe_tool(script)], conversation_manager=manager, callback_handler=None,
                  **agent_kw)
    return Session(agent, model, script)


def context_tags(messages: Sequence[dict[str, Any]]) -> tuple[list[int], list[int]]:
    """The message tags in ``messages`` (verbatim), and the numbers of the summaries there."""
    raw: list[int] = []
    summaries: list[int] = []
    for m in messages:
        found = SUMMARY_TAG.findall(json.dumps(m["content"]))
        if found and m["role"] == "user" and not TAG.findall(json.dumps(m["content"])):
            summaries.append(int(found[0]))
        else:
            raw.extend(message_tags(m))
    return raw, summaries


def lost(sent: int, messages: Sequence[dict[str, Any]], prompts: Sequence[Sequence[int]],
         extra: set[int] | frozenset[int] = frozenset()) -> set[int]:
    """The marker oracle: the tags no message, summary (with what it was shown, transitively) or
    ``extra`` (a spill) holds."""
    holds: dict[int, set[int]] = {}
    for k, shown in enumerate(prompts):
        got = {t for t in shown if t >= 0}
        for s in (t for t in shown if t < 0):
            got |= holds.get(-1 - s, set())
        holds[k] = got
    raw, summaries = context_tags(messages)
    held = set(raw) | set(extra)
    for s in summaries:
        held |= holds.get(s, set())
    return set(range(sent)) - held
