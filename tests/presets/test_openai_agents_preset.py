"""Differential test of the ``agents.OpenAIResponsesCompactionSession`` preset against the SDK.

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
import json
from typing import Any

import pytest

from tests.presets.harness import (
    EXAMPLES,
    REQUIRE,
    SLOW_EXAMPLES,
    Compaction,
    ModelRun,
    Turn,
    content,
    preset_policy,
    turns,
)

if not REQUIRE:
    pytest.importorskip("agents", reason="install the frameworks extra (CI does)")

import httpx
from agents import SQLiteSession, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession
from agents.memory.session_settings import SessionSettings
from hypothesis import HealthCheck, given, settings, strategies as st
from openai import AsyncOpenAI

set_tracing_disabled(True)

USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


class Mismatch(AssertionError):
    pass


def stub_client(sent: list[list[dict[str, Any]]]) -> AsyncOpenAI:
    """``responses.compact`` answered locally: the user messages shown, then a compaction item."""

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path.endswith("/responses/compact"), request.url
        body = json.loads(request.content)
        shown = body.get("input", [])
        sent.append(shown)
        users = [x for x in shown if x.get("role") == "user"]
        output = [{"type": "message", "role": "user", "id": f"u{len(sent)}_{i}", "status": "completed",
                   "content": [{"type": "input_text", "text": text_of(u)}]} for i, u in enumerate(users)]
        output.append({"type": "compaction", "id": f"cmp_{len(sent)}", "encrypted_content": f"SUMMARY{len(sent)}"})
        return httpx.Response(200, json={"id": "resp_c", "object": "response.compaction", "created_at": 0,
                                         "output": output, "usage": USAGE})

    return AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",
                       http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def text_of(item: dict[str, Any]) -> str:
    if "output" in item:
        return str(item["output"])
    if "arguments" in item:
        return str(item["arguments"])
    c = item.get("content")
    if isinstance(c, list):
        return "".join(str(b.get("text", "")) for b in c if isinstance(b, dict))
    return str(c)


def items_of(index: int, turn: Turn) -> list[dict[str, Any]]:
    texts = [content(index, k, size) for k, size in enumerate(turn.sizes)]
    if turn.kind == "human":
        return [{"role": "user", "content": texts[0]}]
    if turn.kind == "ai":
        return [{"role": "assistant", "content": texts[0]}]
    call = f"call_{index}"
    return [{"type": "function_call", "call_id": call, "name": "lookup", "arguments": texts[0]},
            {"type": "function_call_output", "call_id": call, "output": texts[1]}]


def turn_tags(items: list[dict[str, Any]]) -> dict[int, int]:
    """Turn index -> how many of its items appear (whole) among ``items``."""
    out: dict[int, int] = {}
    for item in items:
        text = text_of(item)
        if text.startswith("[t"):
            t = int(text[2:].split("m")[0])
            out[t] = out.get(t, 0) + 1
    return out


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    return {"limit": draw(st.one_of(st.none(), st.integers(3, 30))), "fresh": draw(st.booleans()),
            "threshold": draw(st.integers(2, 12)), "summary_tokens": draw(st.integers(20, 300))}


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
    policy = preset_policy("agents.OpenAIResponsesCompactionSession",
                           f'limit = {limit}\ncompaction_threshold = {k["threshold"]}\n'
                           f'summary_tokens = {k["summary_tokens"]}\n'
                           f'fresh_session_per_turn = {int(k["fresh"])}\n')
    if force_window and k["limit"] is not None:  # a deliberately wrong translation
        stage = dataclasses.replace(policy.stages[0], input_limit=k["limit"], input_limit_unit="messages")
        policy = dataclasses.replace(policy, stages=(stage,))
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
                raise Mismatch(f"{where}: the SDK compacted, the model did not trigger")
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
                               f"deleted {predicted.deleted} showed {predicted.shown} kept {predicted.kept}")
            if predicted.summary_shown is not None and summary_shown != predicted.summary_shown:
                raise Mismatch(f"{where}: earlier compaction item shown: SDK {summary_shown}, "
                               f"model {predicted.summary_shown}")
            if echoed:  # user_messages_echoed: exactly the shown user messages, then stop
                assert set(echoed) <= set(shown) and all(session[t].kind == "human" for t in echoed), where
                break
        return compared

    return asyncio.run(go())


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=turns(first_human=False), k=knobs())
def test_the_sdk_agrees_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    run(agent_run(session), k)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=turns(max_turns=80, first_human=False), k=knobs())
def test_the_sdk_agrees_with_the_preset_model_long(session: list[Turn], k: dict[str, Any]) -> None:
    run(agent_run(session), k)


def test_the_harness_compares_real_compactions() -> None:
    """A long run with no user message (none is echoed) compacts many times, each compared."""
    session = [Turn("ai", (50,)), *[Turn("tools", (30, 40)) for _ in range(30)]]
    assert run(session, {"limit": 6, "threshold": 3, "summary_tokens": 50, "fresh": True}) >= 3
    assert run(session, {"limit": 6, "threshold": 3, "summary_tokens": 50, "fresh": False}) >= 3


def test_a_window_on_a_long_lived_session_is_caught() -> None:
    """The translation this preset first had (the window on every compaction, as brief 8 puts
    it) is wrong for a long-lived object; the harness must say so."""
    session = [Turn("ai", (50,)), *[Turn("tools", (30, 40)) for _ in range(30)]]
    with pytest.raises(Mismatch):
        run(session, {"limit": 4, "threshold": 5, "summary_tokens": 50, "fresh": False}, force_window=True)
