"""Google ADK driven offline (the differential driver of :mod:`tailguard.doctor.drivers.google_adk`
and the adapter tests): fake ``BaseLlm`` subclasses for the agent and the summarizer, the
real ``Runner``, ``App``, ``EventsCompactionConfig``, ``LlmEventSummarizer`` and session services.

Every raw event carries a unique tag ``[e<i>]`` (``i`` its index among the session's raw
events), and every summary the fake summarizer writes carries ``[s<k>]`` and the tags it was
shown (so the marker oracle can read what a summary holds). Sizes are in tokens as ADK counts
them (``chars // 4``): every text is a multiple of 4 characters, and the agent's model reports
the ``prompt_token_count`` of its request's contents the same way, so ADK's count equals the
sum of the tokens of what is in the context.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.apps.app import EventsCompactionConfig
from google.adk.apps.base_events_summarizer import BaseEventsSummarizer
from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.events.event import Event
from google.adk.flows.llm_flows.context._compaction import _process_compaction_events
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.genai import types
from pydantic import Field

TAG = re.compile(r"\[e(\d+)\]")
SUMMARY_TAG = re.compile(r"\[s(\d+)\]")
APP, USER = "app", "u"


def text(tag: str, tokens: int, *, tail: bool = False) -> str:
    """``tokens * 4`` characters holding ``tag`` (at the start, or at the end with ``tail``)."""
    size = max(4 * tokens, len(tag) + (-len(tag)) % 4)
    pad = "x" * (size - len(tag))
    return pad + tag if tail else tag + pad


def _chars(content: types.Content) -> int:
    return sum(len(p.text) for p in content.parts or [] if p.text)


@dataclass
class Step:
    """One model answer: a text of ``tokens``, or (``call`` set) a call of the ``probe`` tool
    whose response is ``call`` tokens long."""

    tokens: int
    call: int | None = None
    tail_tag: bool = False


class AgentModel(BaseLlm):
    """The agent's model: plays ``script`` (one :class:`Step` per request), reports the
    request's contents as its ``prompt_token_count``; ``tags`` gives each answer its event tag."""

    model: str = "fake-agent"
    script: list[Any] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    requests: list[list[int]] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append([int(t) for c in llm_request.contents for p in c.parts or [] if p.text
                              for t in TAG.findall(p.text)])
        step: Step = self.script.pop(0)
        tag = self.tags.pop(0)
        tokens = sum(_chars(c) for c in llm_request.contents) // 4
        usage = types.GenerateContentResponseUsageMetadata(prompt_token_count=tokens)
        if step.call is not None:
            part = types.Part(function_call=types.FunctionCall(
                name="probe", args={"note": tag, "size": step.call, "tail": step.tail_tag}, id=f"c{tag}"))
        else:
            part = types.Part(text=text(tag, step.tokens))
        yield LlmResponse(content=types.Content(role="model", parts=[part]), usage_metadata=usage)


class SummaryModel(BaseLlm):
    """The summarizer's model: records every prompt; writes ``[s<k>]`` padded to
    ``summary_tokens`` tokens."""

    model: str = "fake-summarizer"
    summary_tokens: int = 10
    prompts: list[str] = Field(default_factory=list)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        prompt = "".join(p.text or "" for c in llm_request.contents for p in c.parts or [])
        self.prompts.append(prompt)
        k = len(self.prompts) - 1
        body = f"[s{k}]"  # what it read is in ``prompts`` (the oracle follows [s<k>] tags)
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text(body, self.summary_tokens))]))


def probe(note: str, size: int, tail: bool = False) -> dict[str, str]:
    """A tool whose result is ``size`` tokens long and carries the next event's tag."""
    tag = f"[e{int(note[2:-1]) + 1}]"
    return {"result": text(tag, size, tail=tail)}


@dataclass
class Adk:
    """One ADK app, its session service and session; ``events`` counts the raw events sent."""

    config: EventsCompactionConfig
    agent_model: AgentModel
    summary_model: SummaryModel
    service: BaseSessionService
    runner: Runner
    session_id: str
    raw: int = 0
    plugins: list[BasePlugin] = field(default_factory=list)

    async def invoke(self, user_tokens: int, steps: Sequence[Step]) -> None:
        """One invocation: a prompt of ``user_tokens``, then the model's ``steps`` (tool rounds
        end with a text answer): tags follow the raw event order."""
        at = self.raw
        self.raw += 1
        for s in steps:
            self.agent_model.script.append(s)
            self.agent_model.tags.append(f"[e{self.raw}]")
            self.raw += 2 if s.call is not None else 1
        msg = types.Content(role="user", parts=[types.Part(text=text(f"[e{at}]", user_tokens))])
        async for _ in self.runner.run_async(user_id=USER, session_id=self.session_id, new_message=msg):
            pass

    async def session_events(self) -> list[Event]:
        s = await self.service.get_session(app_name=APP, user_id=USER, session_id=self.session_id)
        if s is None:
            raise LookupError(f"session {self.session_id} is gone from the session service")
        return list(s.events)


async def build(config_kw: dict[str, Any], *, summary_tokens: int = 10, summarizer: BaseEventsSummarizer | None = None,
          service: BaseSessionService | None = None, session_id: str | None = None,
          plugins: Sequence[BasePlugin] = (), summary_model: SummaryModel | None = None) -> Adk:
    """An app with a fresh agent model and (unless given) ``LlmEventSummarizer`` on a recording
    model; a new session in ``service`` unless ``session_id`` names one there."""
    agent_model = AgentModel(script=[], tags=[], requests=[])
    summary_model = summary_model or SummaryModel(summary_tokens=summary_tokens, prompts=[])
    config = EventsCompactionConfig(summarizer=summarizer or LlmEventSummarizer(llm=summary_model), **config_kw)
    agent = LlmAgent(name="agent", model=agent_model, instruction="", tools=[probe])
    app = App(name=APP, root_agent=agent, events_compaction_config=config, plugins=list(plugins))
    service = service or InMemorySessionService()
    runner = Runner(app=app, session_service=service)
    if session_id is None:
        session_id = (await service.create_session(app_name=APP, user_id=USER)).id
    return Adk(config, agent_model, summary_model, service, runner, session_id, plugins=list(plugins))


def raw_tags(events: Sequence[Event]) -> list[int]:
    """The tags of the raw events, in order (one per event)."""
    out: list[int] = []
    for e in events:
        if e.actions and e.actions.compaction:
            continue
        out.append(event_tag(e))
    return out


def event_tag(e: Event) -> int:
    """A raw event's tag: in its text, its call's note, or its tool response."""
    for p in (e.content.parts if e.content else None) or []:
        blob = p.text or (repr(p.function_call.args) if p.function_call else "") \
            or (repr(p.function_response.response) if p.function_response else "")
        found = TAG.findall(blob)
        if found:
            return int(found[0] if not p.function_response else found[-1])
    raise AssertionError(f"an event without a tag: {e!r}")


def context(events: Sequence[Event]) -> tuple[list[int], list[int]]:
    """What ADK's prompt assembly holds: raw event tags, and the summary numbers."""
    raw: list[int] = []
    summaries: list[int] = []
    for e in _process_compaction_events(list(events)):
        if e.actions and e.actions.compaction:
            content = e.actions.compaction.compacted_content
            found = SUMMARY_TAG.findall(content.parts[0].text or "") if content and content.parts else []
            summaries.append(int(found[0]) if found else -1)
        else:
            raw.append(event_tag(e))
    return raw, summaries


def lost(events: Sequence[Event], prompts: Sequence[str], extra: set[int] = frozenset()) -> set[int]:  # type: ignore[assignment]
    """The marker oracle: the tags no context, summary (with what it was shown, transitively) or
    ``extra`` (a spill) holds."""
    sent = set(raw_tags(events))
    raw, summaries = context(events)
    holds: dict[int, set[int]] = {}
    for k, prompt in enumerate(prompts):
        got = {int(t) for t in TAG.findall(prompt)}
        for s in SUMMARY_TAG.findall(prompt):
            got |= holds.get(int(s), set())
        holds[k] = got
    held = set(raw) | set(extra)
    for s in summaries:
        held |= holds.get(s, set())
    return sent - held


def run(coro: Any) -> Any:
    return asyncio.run(coro)
