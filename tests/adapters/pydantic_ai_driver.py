"""Conversations on the real Pydantic AI agent loop, offline, with a marker oracle.

One ``Agent`` on a ``FunctionModel`` (Pydantic AI's own test model) with a real tool, reduced by
the real ``ProcessHistory`` capability (guarded or not). Every message carries unique markers:
the prompt of turn ``i`` is ``[m<i>] task``; when ``i`` is even the model calls the tool ``probe``
with ``[c<i>]``, the tool returns ``[r<i>]`` and the model answers ``[a<i>]``. The
model's answers depend only on the messages it is sent, so one agent serves any number of
conversations. The summarizer (a ``FunctionModel`` on :meth:`GuardedHistory.watch`) writes back
the markers it read. A marker some request was given (recorded by :class:`Seen`, a capability
that runs before the guard) that the final history (as the next run will hold it, its summary
included) and the spills do not hold is **lost**.

The processor is a plain one, as an application writes it (Pydantic AI's docs keep
``messages[-1:]``): above ``limit`` messages it summarizes all but the newest ``keep`` messages,
showing its summarizer the newest ``show`` of them (all when ``show`` is None), and returns the
summary and the messages it keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent, ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, repair_messages
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tailguard.adapters._sessions import canonical
from tailguard.adapters.pydantic_ai import META_KEY, GuardedHistory, messages_from_spill, spill_index
from tailguard.spill import SpillStore

MARK = re.compile(r"\[[mcra]\d+\]")
PROMPT = re.compile(r"\[m(\d+)\] task")


def markers(value: Any) -> set[str]:
    return set(MARK.findall(repr(value)))


def summarizer_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content="summary of " + " ".join(sorted(markers(messages))))])


def model_fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Answer the newest request: a tool result gets ``[a<i>]``; a prompt of a tool turn (``i``
    even) a call of ``probe``; any other prompt ``[a<i>]``."""
    last = messages[-1]
    returns = [p for p in last.parts if p.part_kind == "tool-return"]
    if returns:
        i = int(str(returns[-1].tool_call_id)[4:])
        return ModelResponse(parts=[TextPart(content=f"[a{i}] done")])
    prompts = [int(x) for p in last.parts if p.part_kind == "user-prompt" for x in PROMPT.findall(str(p.content))]
    if not prompts:  # a request the guard or the framework emptied
        return ModelResponse(parts=[TextPart(content="ok")])
    i = prompts[-1]
    if i % 2 == 0:
        return ModelResponse(parts=[ToolCallPart("probe", {"note": f"[c{i}]"}, tool_call_id=f"call{i}")])
    return ModelResponse(parts=[TextPart(content=f"[a{i}] answer")])


def processor(limit: int, keep: int, show: int | None = None) -> Callable[[list[ModelMessage]], Awaitable[Any]]:
    summarizer = Agent(GuardedHistory.watch(FunctionModel(summarizer_fn)))

    async def process(messages: list[ModelMessage]) -> list[ModelMessage]:
        if len(messages) <= limit:
            return messages
        candidates = messages[:-keep]
        shown = candidates if show is None else candidates[-show:]
        done = await summarizer.run("summarize", message_history=repair_messages(shown))
        return [ModelRequest(parts=[UserPromptPart(content=done.output)]), *messages[-keep:]]

    return process


def make_agent(guard: GuardedHistory | None, limit: int = 4, keep: int = 1, show: int | None = None,
               first: list[AbstractCapability[Any]] | None = None,
               process: Callable[[list[ModelMessage]], Awaitable[Any]] | None = None) -> Agent[None, str]:
    """The agent: ``ProcessHistory(processor(...))`` (or of ``process``), wrapped in ``guard`` when
    given (the guard's ``inner`` is replaced); ``first``: capabilities that run before it."""
    inner = ProcessHistory(process or processor(limit, keep, show))
    cap: AbstractCapability[Any] = inner
    if guard is not None:
        guard.inner = inner
        cap = guard
    agent = Agent(FunctionModel(model_fn), capabilities=[*(first or []), cap])

    @agent.tool_plain
    def probe(note: str) -> str:
        """A tool whose result is marked."""
        return note.replace("[c", "[r") + " result"

    return agent


def carried(history: list[ModelMessage]) -> dict[str, Any] | None:
    """The guard's metadata of the newest guard summary in ``history``."""
    for m in reversed(history):
        meta = (m.metadata or {}).get(META_KEY)
        if isinstance(meta, dict):
            return meta
    return None


def spilled(store: SpillStore, history: list[ModelMessage]) -> list[ModelMessage]:
    """Every message the spill index of the newest guard summary lists, read back."""
    meta = carried(history)
    if meta is None or meta.get("spill_index") is None:
        return []
    out: list[ModelMessage] = []
    for _run, handle in spill_index(store, meta["spill_index"]):
        out += messages_from_spill(store, handle)
    return out


def lost(history: list[ModelMessage], seen: Seen, extra: list[ModelMessage] | None = None,
         turns: range | None = None) -> set[str]:
    """The markers of every message a request was given (``seen``; of ``turns`` only, when given)
    that neither the history as the next run will hold it (Pydantic AI's repair applied) nor the
    spills ``extra`` hold."""
    made = set().union(*seen.contexts, markers(history))
    if turns is not None:
        made = {m for m in made if int(m[2:-1]) in turns}
    return made - markers(repair_messages(history)) - markers(extra or [])


def exact(m: ModelMessage) -> bytes:
    """The canonical bytes of Pydantic AI's JSON of ``m`` (sorted keys, as the spill stores it)."""
    return canonical(ModelMessagesTypeAdapter.dump_python([m], mode="json"))


@dataclass
class Seen:
    """A capability run before the guard: the canonical JSON of every message it was sent (to
    check spills byte-exact) and the markers of every request's context."""

    json: set[bytes] = field(default_factory=set)
    contexts: list[set[str]] = field(default_factory=list)

    def capability(self) -> AbstractCapability[Any]:
        seen = self

        class _Seen(AbstractCapability[Any]):
            async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
                seen.json |= {exact(m) for m in request_context.messages}
                seen.contexts.append(markers(request_context.messages))
                return request_context

            @classmethod
            def get_serialization_name(cls) -> str | None:
                return None

        return _Seen()


def run(agent: Agent[None, str], turns: range, history: list[ModelMessage] | None = None) -> list[ModelMessage]:
    out = list(history or [])
    for i in turns:
        out = agent.run_sync(f"[m{i}] task", message_history=out).all_messages()
    return out


async def arun(agent: Agent[None, str], turns: range, history: list[ModelMessage] | None = None
               ) -> list[ModelMessage]:
    out = list(history or [])
    for i in turns:
        out = (await agent.run(f"[m{i}] task", message_history=out)).all_messages()
    return out


# -- OpenAICompaction on a real OpenAIResponsesModel whose client answers locally ---------------

USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


@dataclass
class Server:
    """The OpenAI API, answering locally as :func:`model_fn` does: ``/responses`` answers the
    newest input item; ``/responses/compact`` returns one compaction item naming the markers it
    was sent (its ``encrypted_content``) and records them."""

    compacts: list[set[str]] = field(default_factory=list)
    tools: bool = True

    def handle(self, request: Any) -> Any:
        import httpx

        body = json.loads(request.content)
        items = body.get("input", [])
        if request.url.path.endswith("/responses/compact"):
            self.compacts.append(markers(items))
            n = len(self.compacts)
            return httpx.Response(200, json={
                "id": f"resp_c{n}", "object": "response.compaction", "created_at": 0, "usage": USAGE,
                "output": [{"type": "compaction", "id": f"cmp_{n}",
                            "encrypted_content": "summary of " + " ".join(sorted(markers(items)))}]})
        last = items[-1] if items else {}
        if last.get("type") == "function_call_output":
            i = int(str(last["call_id"])[4:])
            item: dict[str, Any] = _message(f"[a{i}] done")
        else:
            found = [int(x) for x in PROMPT.findall(json.dumps(last))] if last.get("role") == "user" else []
            if found and found[-1] % 2 == 0 and self.tools:
                i = found[-1]
                item = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call{i}", "name": "probe",
                        "status": "completed", "arguments": json.dumps({"note": f"[c{i}]"})}
            else:
                item = _message(f"[a{found[-1]}] answer" if found else "ok")
        return httpx.Response(200, json={"id": f"resp_{len(items)}", "object": "response", "created_at": 0,
                                         "status": "completed", "model": "gpt-test", "output": [item],
                                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                                         "usage": USAGE})


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{abs(hash(text))}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def openai_agent(threshold: int, guard: GuardedHistory | None = None, server: Server | None = None,
                 first: list[AbstractCapability[Any]] | None = None) -> tuple[Agent[None, str], Server]:
    """An agent on a real ``OpenAIResponsesModel`` (its client answered by ``server``) with the
    real ``OpenAICompaction(message_count_threshold=threshold)``, guarded when ``guard`` is given
    (its ``inner`` is replaced), and the tool ``probe``."""
    import httpx
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAICompaction, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    server = server or Server()
    client = AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",
                         http_client=httpx.AsyncClient(transport=httpx.MockTransport(server.handle)))
    model = OpenAIResponsesModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    cap: AbstractCapability[Any] = OpenAICompaction(message_count_threshold=threshold)
    if guard is not None:
        guard.inner = cap
        cap = guard
    agent = Agent(model, capabilities=[*(first or []), cap])

    @agent.tool_plain
    def probe(note: str) -> str:
        """A tool whose result is marked."""
        return note.replace("[c", "[r") + " result"

    return agent, server
