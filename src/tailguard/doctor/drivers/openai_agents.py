"""The OpenAI Agents SDK's ``OpenAIResponsesCompactionSession`` against the
``agents.OpenAIResponsesCompactionSession`` preset, and the adapter on the same knobs.

The SDK runs as installed: a real ``SQLiteSession`` (in memory) with ``SessionSettings(limit=
N)`` under ``OpenAIResponsesCompactionSession(compaction_mode="input")``, whose ``openai``
client answers ``/responses/compact`` locally (``httpx.MockTransport``: the user messages it
was shown, then one compaction item, as the API documents). After every turn the application
calls ``run_compaction()`` and the default hook decides. The preset's model is stepped on the
same turns; every compaction is compared: items deleted, items sent (shown), items kept.

Sessions are an agent run: one user task, then answers and tool calls (a function call and its
output: 2 items). Declared differences, as declared: the model may trigger earlier
(``trigger_counts_user_messages``: its compaction is undone when the SDK's hook declines), and a
shown user message is echoed back verbatim (``user_messages_echoed``: checked, then the session
stops being compared, the two orders of the store differing from there).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import json
import random
from collections.abc import Sequence
from typing import Any

import httpx
from agents import SQLiteSession, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession
from agents.memory.session_settings import SessionSettings
from openai import AsyncOpenAI

from tailguard.adapters.openai_agents import GuardedResponsesCompactionSession
from tailguard.doctor.harness import (
    Case,
    Compaction,
    Mismatch,
    ModelRun,
    Turn,
    adapter_verdict,
    content,
    knob_label,
    preset_policy,
    random_turns,
)
from tailguard.pipeline.policy import Compact
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["PRESET_NAME", "agent_run", "cases", "random_knobs", "run", "stub_client"]

PRESET_NAME = "agents.OpenAIResponsesCompactionSession"
FIXED_SESSION = [Turn("ai", (50,)), *[Turn("tools", (30, 40)) for _ in range(30)]]
FIXED_KNOBS: dict[str, Any] = {"limit": 6, "threshold": 3, "summary_tokens": 50, "fresh": True}

set_tracing_disabled(True)

USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


def stub_client(sent: list[list[dict[str, Any]]]) -> AsyncOpenAI:
    """``responses.compact`` answered locally: the user messages shown, then a compaction item."""

    def handler(request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith("/responses/compact"):
            return httpx.Response(404, json={"error": {"message": f"not stubbed: {request.url.path}"}})
        body = json.loads(request.content)
        shown = body.get("input", [])
        sent.append(shown)
        users = [x for x in shown if x.get("role") == "user"]
        output = [{"type": "message", "role": "user", "id": f"u{len(sent)}_{i}", "status": "completed",
                   "content": [{"type": "input_text", "text": text_of(u)}]} for i, u in enumerate(users)]
        output.append({"type": "compaction", "id": f"cmp_{len(sent)}", "encrypted_content": f"SUMMARY{len(sent)}"})
        return httpx.Response(200, json={"id": "resp_c", "object": "response.compaction", "created_at": 0,
                                         "output": output, "usage": USAGE})

    return AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",  # openai types its own httpx fork
                       http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))  # type: ignore[arg-type]


def text_of(item: dict[str, Any]) -> str:
    if "output" in item:
        return str(item["output"])
    if "arguments" in item:
        return str(item["arguments"])
    c = item.get("content")
    if isinstance(c, list):
        return "".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return str(c)


def items_of(index: int, turn: Turn) -> list[Any]:
    texts = [content(index, k, size) for k, size in enumerate(turn.sizes)]
    if turn.kind == "human":
        return [{"role": "user", "content": texts[0]}]
    if turn.kind == "ai":
        return [{"role": "assistant", "content": texts[0]}]
    out: list[Any] = []  # a tool turn: its calls and their outputs in pairs, an odd last message an answer
    for j in range(0, len(texts) - 1, 2):
        call = f"call_{index}" if j == 0 else f"call_{index}_{j // 2}"
        out += [{"type": "function_call", "call_id": call, "name": "lookup", "arguments": texts[j]},
                {"type": "function_call_output", "call_id": call, "output": texts[j + 1]}]
    if len(texts) % 2:
        out.append({"role": "assistant", "content": texts[-1]})
    return out


def turn_tags(items: Sequence[Any]) -> dict[int, int]:
    """Turn index -> how many of its items appear (whole) among ``items``."""
    out: dict[int, int] = {}
    for item in items:
        text = text_of(item)
        if text.startswith("[t"):
            t = int(text[2:].split("m")[0])
            out[t] = out.get(t, 0) + 1
    return out


def agent_run(draw_turns: list[Turn]) -> list[Turn]:
    """At most one user task (the first turn), then answers and single tool calls (2 items
    each): a user message shown to the compaction is echoed, which ends the comparison."""
    out: list[Turn] = []
    for i, t in enumerate(draw_turns):
        if i == 0 and t.kind == "human":
            out.append(t)
            continue
        out.append(Turn("ai", t.sizes[:1]) if t.kind != "tools" else Turn("tools", t.sizes[:2]))
    return out


def run(session: list[Turn], k: dict[str, Any], force_window: bool = False) -> int:
    limit = "false" if k["limit"] is None else k["limit"]
    """Drive the SDK and the model in lockstep; return the compactions compared.
    ``force_window``: the translation this preset first had (wrong; for the tests)."""
    policy = preset_policy(PRESET_NAME,
                           f'limit = {limit}\ncompaction_threshold = {k["threshold"]}\n'
                           f'summary_tokens = {k["summary_tokens"]}\n'
                           f'fresh_session_per_turn = {int(k["fresh"])}\n')
    if force_window and k["limit"] is not None:  # a deliberately wrong translation
        stage = policy.stages[0]
        if not isinstance(stage, Compact):
            raise TypeError("the preset's first stage is not a compact stage")
        policy = dataclasses.replace(policy, stages=(dataclasses.replace(stage, input_limit=k["limit"],
                                                                         input_limit_unit="messages"),))
    sim = ModelRun(policy)

    async def go() -> int:
        sent: list[list[dict[str, Any]]] = []
        settings_ = SessionSettings(limit=k["limit"]) if k["limit"] is not None else None
        under = SQLiteSession("s", session_settings=settings_)
        client = stub_client(sent)

        def compaction_session() -> OpenAIResponsesCompactionSession:
            return OpenAIResponsesCompactionSession(
                "s", under, client=client, compaction_mode="input",
                should_trigger_compaction=lambda ctx: len(ctx["compaction_candidate_items"]) >= k["threshold"])

        session_ = compaction_session()
        compared = 0
        for index, turn in enumerate(session):
            if k["fresh"]:  # fresh_session_per_turn: a new object reads the newest `limit` items
                session_ = compaction_session()
            await session_.add_items(items_of(index, turn))
            before = await under.get_items(limit=10**6)
            calls = len(sent)
            await session_.run_compaction()
            predicted, _ = sim.append(turn)
            where = f"append {index + 1}"
            if len(sent) == calls:
                if predicted is not None:
                    sim.undo(turn)  # trigger_counts_user_messages: the model fired earlier
                continue
            if predicted is None:
                raise Mismatch(f"{where}: the SDK compacted, the model did not trigger", compared + 1)
            after = await under.get_items(limit=10**6)
            present, shown_tags = turn_tags(before), turn_tags(sent[-1])
            kept_tags = turn_tags(after)
            deleted = tuple(t for t in sorted(present) if t not in kept_tags)
            shown = tuple(t for t in sorted(present) if shown_tags.get(t, 0) == present[t])
            echoed = tuple(sorted(kept_tags))
            earlier = next((x for x in before if x.get("type") == "compaction"), None)
            summary_shown = None if earlier is None else any(x.get("type") == "compaction" for x in sent[-1])
            real = Compaction(deleted, tuple(t for t in shown if t not in echoed), ())
            compared += 1
            if tuple(sorted({*predicted.deleted} - set(echoed))) != real.deleted or \
                    set(shown) != set(predicted.shown) or predicted.kept != ():
                raise Mismatch(f"{where}: the SDK deleted {deleted} showed {shown} kept {echoed}; the model "
                               f"deleted {predicted.deleted} showed {predicted.shown} kept {predicted.kept}", compared)
            if predicted.summary_shown is not None and summary_shown != predicted.summary_shown:
                raise Mismatch(f"{where}: earlier compaction item shown: SDK {summary_shown}, "
                               f"model {predicted.summary_shown}", compared)
            if echoed:  # user_messages_echoed: exactly the shown user messages, then stop
                if not (set(echoed) <= set(shown) and all(session[t].kind == "human" for t in echoed)):
                    raise Mismatch(f"{where}: the SDK kept {echoed}, not only the user messages it was shown "
                                   f"({shown})", compared)
                break
        return compared

    return asyncio.run(go())


def random_knobs(rng: random.Random) -> dict[str, Any]:
    """Knobs as the differential test draws them (tests/presets/test_openai_agents_preset.py)."""
    return {"limit": None if rng.random() < 0.3 else rng.randint(3, 30), "fresh": rng.random() < 0.5,
            "threshold": rng.randint(2, 12), "summary_tokens": rng.randint(20, 300)}


def model_findings(session: list[Turn], k: dict[str, Any]) -> list[str]:
    limit = "false" if k["limit"] is None else k["limit"]
    sim = ModelRun(preset_policy(PRESET_NAME, f'limit = {limit}\ncompaction_threshold = {k["threshold"]}\n'
                                              f'summary_tokens = {k["summary_tokens"]}\n'
                                              f'fresh_session_per_turn = {int(k["fresh"])}\n'))
    found: list[str] = []
    for turn in session:
        found += sim.append(turn)[1]
    return found


def run_adapter(session: list[Turn], k: dict[str, Any]) -> tuple[int, bool]:
    """``GuardedResponsesCompactionSession`` (floor 0, ``on_refuse="halt"``) over ``session``,
    the application calling ``run_compaction()`` after every turn: (compactions it allowed,
    whether it refused one)."""

    async def go() -> tuple[int, bool]:
        sent: list[list[dict[str, Any]]] = []
        settings_ = SessionSettings(limit=k["limit"]) if k["limit"] is not None else None
        under = SQLiteSession("s", session_settings=settings_)
        client = stub_client(sent)

        def guarded() -> GuardedResponsesCompactionSession:
            return GuardedResponsesCompactionSession(
                "s", under, client=client, compaction_mode="input", on_refuse="halt", log=io.StringIO(),
                should_trigger_compaction=lambda ctx: len(ctx["compaction_candidate_items"]) >= k["threshold"])

        session_ = guarded()
        for index, turn in enumerate(session):
            if k["fresh"]:
                session_ = guarded()
            await session_.add_items(items_of(index, turn))
            try:
                await session_.run_compaction()
            except UnrecoverableCompactionError:
                return len(sent), True
        return len(sent), False

    return asyncio.run(go())


def adapter_agrees(session: list[Turn], k: dict[str, Any], *, must_refuse: bool = False) -> int:
    """The adapter and the preset's model on ``session`` (:func:`~tailguard.doctor.harness.adapter_verdict`)."""
    return adapter_verdict(model_findings(session, k), *run_adapter(session, k), must_refuse=must_refuse)


_label = knob_label


def cases(rng: random.Random, sessions: int) -> list[Case]:
    out = [Case("preset", _label(FIXED_KNOBS, FIXED_SESSION), lambda: run(FIXED_SESSION, FIXED_KNOBS))]
    for _ in range(sessions - 1):
        k, session = random_knobs(rng), agent_run(random_turns(rng, first_human=False))
        out.append(Case("preset", _label(k, session), functools.partial(run, session, k)))
    found = model_findings(FIXED_SESSION, FIXED_KNOBS)
    out.append(Case("adapter", _label(FIXED_KNOBS, FIXED_SESSION),
                    lambda: adapter_agrees(FIXED_SESSION, FIXED_KNOBS, must_refuse=bool(found))))
    k = dict(random_knobs(rng), limit=None, fresh=False)
    session = agent_run(random_turns(rng, first_human=False))
    out.append(Case("adapter", _label(k, session), lambda: adapter_agrees(session, k)))
    return out
