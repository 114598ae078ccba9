"""Pydantic AI's ``OpenAICompaction`` against the ``pydantic_ai.OpenAICompaction`` preset, and
the adapter (``GuardedHistory``) on the same threshold.

Pydantic AI runs as installed: an ``Agent`` on a real ``OpenAIResponsesModel`` whose ``openai``
client answers locally (``httpx.MockTransport``: ``/responses`` plays the session's script, a
text answer or a call of the ``probe`` tool, which Pydantic AI runs; ``/responses/compact``
returns one compaction item and records what it was sent), with the real
``OpenAICompaction(message_count_threshold=N)`` between two recording capabilities that see the
request's message list before and after it. Every message carries a unique tag ``[m<i>]``, ``i``
its index in the whole conversation. The preset's model is stepped message by message and every
compaction is compared: messages deleted, messages sent to ``/compact`` (shown), the message
kept, and whether the earlier compaction was shown.

Declared difference, as declared: ``checked_before_requests`` (the model may compact at a
response; Pydantic AI never does: the harness checks that, undoes the model's compaction and
compares the one at the next request). The adapter runs the same chats with a floor of 1 (which
``check-config`` finds safe for prompts and answers): it must allow every compaction.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable
from typing import Any

import httpx
from openai import AsyncOpenAI
from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.openai import OpenAICompaction, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from tailguard.adapters.pydantic_ai import GuardedHistory
from tailguard.doctor.harness import Case, Mismatch, ModelRun, Turn
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.pydantic_ai import PRESET
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["cases", "compare", "policy", "real_run", "script", "tags"]

USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}
TAG = re.compile(r"\[m(\d+)\]")


def policy(threshold: int, floor: int = 0, *, keep: int | None = None) -> Policy:
    text = (f'name = "differential"\nturn_tokens = [1, 100]\nmessages_per_turn = [1, 1]\nfloor = {floor}\n'
            f'floor_unit = "messages"\n[framework]\nname = "{PRESET.name}"\n'
            f"message_count_threshold = {threshold}\n")
    out = parse_policy(text, "differential.toml")
    if keep is not None:  # a deliberately wrong translation
        out = out.with_knob("keep", keep, stage=0)
    return out


def script(runs: list[int]) -> list[str]:
    """Every message of the conversation in order: ``user`` (a run's prompt), ``call`` (a
    response calling the tool), ``return`` (its result), ``text`` (a run's answer)."""
    out: list[str] = []
    for rounds in runs:
        out += ["user", *(["call", "return"] * rounds), "text"]
    return out


def tags(value: Any) -> set[int]:
    return {int(t) for t in TAG.findall(json.dumps(value))}


class Recorder(AbstractCapability[Any]):
    """Records the tags of the request's message list (and whether it holds a compaction)."""

    def __init__(self, into: list[tuple[set[int], bool]]) -> None:
        self.into = into

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        msgs = request_context.messages
        compaction = any(p.part_kind == "compaction" for m in msgs for p in m.parts)
        self.into.append(({t for m in msgs for t in tags(repr(m.parts))}, compaction))
        return request_context

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None


Seen = list[tuple[set[int], bool]]


def real_run(kinds: list[str], threshold: int,
             guard: Callable[[Any], Any] | None = None) -> tuple[Seen, Seen, Seen, list[int]]:
    """Run the conversation on Pydantic AI; per model request: the context before and after
    OpenAICompaction, what /compact was sent (tags, earlier compaction shown) and the index of
    the request it ran at. ``guard``: wraps ``OpenAICompaction`` (the adapter's run)."""
    responses = [i for i, k in enumerate(kinds) if k in ("call", "text")]
    compacts: list[tuple[set[int], bool]] = []
    answered = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path.endswith("/responses/compact"):
            shown = body.get("input", [])
            compacts.append((tags(shown), any(x.get("type") == "compaction" for x in shown)))
            return httpx.Response(200, json={"id": f"resp_c{len(compacts)}", "object": "response.compaction",
                                             "created_at": 0, "usage": USAGE, "output": [
                                                 {"type": "compaction", "id": f"cmp_{len(compacts)}",
                                                  "encrypted_content": f"CMP{len(compacts)}"}]})
        i = responses[answered[0]]
        answered[0] += 1
        if kinds[i] == "call":
            item: dict[str, Any] = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}",
                                    "name": "probe", "status": "completed",
                                    "arguments": json.dumps({"result": i + 1, "note": f"[m{i}]"})}
        else:
            item = {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": f"[m{i}] answer", "annotations": []}]}
        return httpx.Response(200, json={"id": f"resp_{i}", "object": "response", "created_at": 0,
                                         "status": "completed", "model": "gpt-test", "output": [item],
                                         "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                                         "usage": USAGE})

    client = AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",  # openai types its own httpx fork
                         http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))  # type: ignore[arg-type]
    model = OpenAIResponsesModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    before: list[tuple[set[int], bool]] = []
    after: list[tuple[set[int], bool]] = []
    compaction: Any = OpenAICompaction(message_count_threshold=threshold)
    agent = Agent(model, capabilities=[Recorder(before), guard(compaction) if guard else compaction,
                                       Recorder(after)])

    @agent.tool_plain
    def probe(result: int, note: str) -> str:
        """A tool whose result is tagged."""
        return f"[m{result}] result"

    history: list[Any] = []
    for i, k in enumerate(kinds):
        if k == "user":
            history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    if answered[0] != len(responses):
        raise Mismatch(f"the script was not played to its end ({answered[0]} of {len(responses)} responses)")
    at = [i - 1 for i in responses]  # each model request runs after the message before its response
    return before, after, compacts, at


def compare(kinds: list[str], threshold: int, floor: int = 0, *, keep: int | None = None) -> int:
    """Run both; raise :class:`Mismatch` at the first disagreement; return how many compactions
    were compared."""
    before, after, compacts, at = real_run(kinds, threshold)
    sim = ModelRun(policy(threshold, floor, keep=keep))
    request_at = dict(zip(at, range(len(at)), strict=True))
    compared = used = 0
    for i, k in enumerate(kinds):
        turn = Turn("human" if k in ("user", "return") else "ai", (1,))
        had_summary = sim.state.summary
        predicted, _ = sim.append(turn)
        where = f"message {i} ({k})"
        if i not in request_at:  # a response: Pydantic AI never compacts here
            if predicted is not None:
                sim.undo(turn)  # checked_before_requests
            continue
        j = request_at[i]
        (pre, _), (post, post_compaction) = before[j], after[j]
        real = pre != post
        if not real:
            if predicted is not None:
                raise Mismatch(f"{where}: the model compacted ({predicted.deleted}), Pydantic AI did not",
                               compared)
            continue
        if predicted is None:
            raise Mismatch(f"{where}: Pydantic AI compacted {sorted(pre - post)}, the model did not trigger",
                           compared + 1)
        shown, earlier_shown = compacts[used]
        used += 1
        deleted = tuple(sorted(pre - post))
        if not post_compaction or deleted != predicted.deleted or tuple(sorted(post)) != predicted.kept \
                or tuple(sorted(shown)) != predicted.shown:
            raise Mismatch(f"{where}: Pydantic AI deleted {deleted}, showed {sorted(shown)}, kept {sorted(post)}; "
                           f"the model deleted {predicted.deleted}, showed {predicted.shown}, kept {predicted.kept}",
                           compared + 1)
        if had_summary and predicted.summary_shown is not earlier_shown:
            raise Mismatch(f"{where}: earlier compaction shown: Pydantic AI {earlier_shown}, "
                           f"the model {predicted.summary_shown}", compared + 1)
        compared += 1
    if used != len(compacts):
        raise Mismatch(f"{len(compacts) - used} /compact calls the harness did not compare", compared)
    return compared


def adapter_allows(runs: int, threshold: int) -> int:
    """The chat through ``GuardedHistory(OpenAICompaction(...), recovery_floor_span=1,
    on_refuse="halt")``: no refusal (the preset finds floor 1 safe); returns the compactions."""
    kinds = script([0] * runs)
    try:
        _, _, compacts, _ = real_run(kinds, threshold, lambda inner: GuardedHistory(
            inner, recovery_floor_span=1, on_refuse="halt"))
    except UnrecoverableCompactionError as exc:
        raise Mismatch(f"the adapter refused a compaction of a chat the preset finds safe with floor 1: "
                       f"{exc}") from None
    return len(compacts)


def compare_chat(runs: int, threshold: int) -> int:
    return compare(script([0] * runs), threshold)


def cases(rng: random.Random, sessions: int) -> list[Case]:
    out = [Case("preset", "20 runs, threshold 4", lambda: compare(script([0] * 20), 4))]
    for _ in range(sessions - 1):
        runs, threshold = rng.randint(1, 25), rng.randint(2, 14)
        out.append(Case("preset", f"{runs} runs, threshold {threshold}",
                        functools.partial(compare_chat, runs, threshold)))
    runs, threshold = rng.randint(4, 25), rng.randint(2, 8)
    out.append(Case("adapter", f"{runs} runs, threshold {threshold}, floor 1",
                    lambda: adapter_allows(runs, threshold)))
    return out
