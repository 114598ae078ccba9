"""OpenAI Agents SDK ``OpenAIResponsesCompactionSession``: the loss, then the guard.

The SDK runs as installed, over a real ``SQLiteSession`` (in memory), with an
``openai.AsyncOpenAI`` client whose HTTP transport is an ``httpx.MockTransport``: the request
the SDK sends to ``/responses/compact`` is recorded and answered locally (all user messages it
was shown, then one compaction item, as the API documents).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="install the frameworks extra (CI does)")

import httpx
from agents import Agent, OpenAIResponsesModel, Runner, SQLiteSession, set_tracing_disabled
from agents.memory import OpenAIResponsesCompactionSession
from agents.memory.session_settings import SessionSettings
from openai import AsyncOpenAI

from tailguard.adapters._spill_tool import read_spill
from tailguard.adapters.openai_agents import GuardedResponsesCompactionSession
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import MemorySpillStore
from tests.adapters.fakes import audit_json

set_tracing_disabled(True)  # offline: no trace export


USAGE = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
         "output_tokens_details": {"reasoning_tokens": 0}}


def model_reply(n: int) -> httpx.Response:
    """A minimal ``/responses`` answer: one assistant message."""
    return httpx.Response(200, json={
        "id": f"resp_{n}", "object": "response", "created_at": 0, "model": "gpt-4.1", "status": "completed",
        "output": [{"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": f"answer {n}", "annotations": []}]}],
        "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": USAGE})


def stub_client(sent: list[dict[str, Any]]) -> AsyncOpenAI:
    replies = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if request.url.path.endswith("/responses"):
            replies[0] += 1
            return model_reply(replies[0])
        assert request.url.path.endswith("/responses/compact"), request.url
        sent.append(body)
        users = [x for x in body.get("input", []) if x.get("role") == "user"]
        output = [{"type": "message", "role": "user", "id": f"u{i}", "status": "completed",
                   "content": [{"type": "input_text", "text": str(u["content"])}]} for i, u in enumerate(users)]
        output.append({"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"})
        return httpx.Response(200, json={
            "id": "resp_c", "object": "response.compaction", "created_at": 0, "output": output, "usage": USAGE})

    return AsyncOpenAI(api_key="test", base_url="http://stub.invalid/v1",
                       http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def twelve() -> list[Any]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"item {i}"} for i in range(12)]


async def _store() -> SQLiteSession:
    under = SQLiteSession("s", session_settings=SessionSettings(limit=4))
    await under.add_items(twelve())
    return under


def test_sdk_compacts_4_of_12_items_and_deletes_8_unseen() -> None:
    async def go() -> tuple[list[Any], list[Any]]:
        sent: list[dict[str, Any]] = []
        under = await _store()
        session = OpenAIResponsesCompactionSession("s", under, client=stub_client(sent), compaction_mode="input")
        await session.run_compaction({"force": True})
        return sent, await under.get_items(limit=100)
    sent, after = asyncio.run(go())
    assert [x["content"] for x in sent[0]["input"]] == [f"item {i}" for i in range(8, 12)]  # 4 shown
    assert not any(f'"item {i}"' in json.dumps(after) for i in range(8))  # 8 gone unseen
    assert len(after) == 3  # the 2 user messages it saw, then one compaction item
    assert after[-1]["type"] == "compaction"


def guarded(on_refuse: str, tmp_path: Path, sent: list[dict[str, Any]], store: Any = None,
            under: Any = None, **kw: Any) -> GuardedResponsesCompactionSession:
    return GuardedResponsesCompactionSession("s", under, client=stub_client(sent), compaction_mode="input",
                                             on_refuse=on_refuse, store=store, log=tmp_path / "oa.jsonl", **kw)


def test_halt_keeps_the_store(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        sent: list[dict[str, Any]] = []
        under = await _store()
        session = guarded("halt", tmp_path, sent, under=under)
        with pytest.raises(UnrecoverableCompactionError) as info:
            await session.run_compaction({"force": True})
        assert (info.value.failed, info.value.holes) == (("no_hole",), ((0, 8),))
        assert sent == []  # decided before the API call
        return await under.get_items(limit=100)
    assert asyncio.run(go()) == twelve()


def test_defer_skips(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        sent: list[dict[str, Any]] = []
        under = await _store()
        asked: list[dict[str, Any]] = []
        session = guarded("defer", tmp_path, sent, under=under,
                          should_trigger_compaction=lambda ctx: asked.append(ctx) or True)
        await session.run_compaction()  # the user's hook approves; the guard then defers
        assert [len(c["session_items"]) for c in asked] == [4]  # the hook saw the limit window
        assert sent == []
        return await under.get_items(limit=100)
    assert asyncio.run(go()) == twelve()
    lines = [json.loads(x) for x in (tmp_path / "oa.jsonl").read_text().splitlines()]
    assert lines[-1]["event"] == "refusal" and lines[-1]["holes"] == [[0, 8]]


def test_spill_then_compact_audit_clean(tmp_path: Path) -> None:
    spills = MemorySpillStore()

    async def go() -> list[Any]:
        sent: list[dict[str, Any]] = []
        under = await _store()
        session = guarded("spill", tmp_path, sent, store=spills, under=under)
        await session.run_compaction({"force": True})
        assert len(sent) == 1
        await under.add_items([{"role": "user", "content": "after"}])
        await session.run_compaction({"force": True})  # the earlier compaction item is in the window
        return await under.get_items(limit=100)
    after = asyncio.run(go())
    assert after[-1]["type"] == "compaction"
    first = spills.list()[0]
    doc = read_spill(spills, first.handle)
    assert first.range == (0, 12)
    assert [x["item"] for x in doc["items"]] == twelve()  # every deleted item, as stored
    code, report = audit_json(str(tmp_path / "oa.jsonl"))
    assert code == 0 and report["violations"] == 0 and len(report["compactions"]) == 2


def test_previous_response_id_mode_is_refused(tmp_path: Path) -> None:
    async def go() -> None:
        sent: list[dict[str, Any]] = []
        under = await _store()
        session = GuardedResponsesCompactionSession("s", under, client=stub_client(sent),
                                                    compaction_mode="previous_response_id",
                                                    log=tmp_path / "p.jsonl")
        with pytest.raises(UnrecoverableCompactionError) as info:
            await session.run_compaction({"force": True, "response_id": "resp_1"})
        assert info.value.holes == ((0, 12),)  # nothing is known to have been shown
        assert sent == []
    asyncio.run(go())


# -- a real agent run: the Runner's automatic compaction after each turn -------------------

def run_agent(tmp_path: Path, on_refuse: str, store: Any = None,
              held: list[Any] | None = None) -> tuple[Any, list[Any], list[Any]]:
    sent: list[dict[str, Any]] = []
    client = stub_client(sent)

    async def go() -> tuple[Any, list[Any]]:
        under = SQLiteSession("r", session_settings=SessionSettings(limit=4))
        if held is not None:
            held.append(under)
        session = GuardedResponsesCompactionSession(
            "r", under, client=client, compaction_mode="input", on_refuse=on_refuse, store=store,
            log=tmp_path / "run.jsonl", should_trigger_compaction=lambda ctx: len(ctx["session_items"]) >= 4)
        agent = Agent(name="a", model=OpenAIResponsesModel(model="gpt-4.1", openai_client=client))
        for i in range(4):
            await Runner.run(agent, f"question {i}", session=session)
        return session, await under.get_items(limit=100)

    session, items = asyncio.run(go())
    return session, items, sent


def test_runner_with_spill_compacts_and_audits_clean(tmp_path: Path) -> None:
    spills = MemorySpillStore()
    _, items, sent = run_agent(tmp_path, "spill", spills)
    assert len(sent) >= 2 and items[-1]["type"] == "compaction"
    code, report = audit_json(str(tmp_path / "run.jsonl"))
    assert code == 0 and len(report["compactions"]) == len(sent)
    spilled = {json.dumps(x["item"], sort_keys=True) for r in spills.list()
               for x in read_spill(spills, r.handle)["items"]}
    assert json.dumps({"content": "question 0", "role": "user"}, sort_keys=True) in spilled


def test_runner_with_halt_keeps_what_the_window_cuts_and_refuses_nothing(tmp_path: Path) -> None:
    """The Runner's automatic compaction over a native ``SQLiteSession`` replaces only the
    suffix it sends; what the limit-4 window cuts (the oldest echoed user message) stays in the
    store verbatim. Nothing leaves unseen, so nothing is refused (the adapter once counted the
    whole store as leaving and refused ``no_hole [0, 4)`` here)."""
    held: list[Any] = []
    _, items, sent = run_agent(tmp_path, "halt", held=held)
    assert len(sent) == 3 and items[-1]["type"] == "compaction"
    assert all(f"question {i}" in json.dumps(items) for i in range(4))  # every question kept
    lines = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert [x["event"] for x in lines if x["event"] != "append"] == ["session", "compact", "compact", "compact"]
    assert [x["saw"] for x in lines if x["event"] == "compact"] == [[], ["0"], ["1"]]
    code, report = audit_json(str(tmp_path / "run.jsonl"))
    assert code == 0 and report["violations"] == 0
