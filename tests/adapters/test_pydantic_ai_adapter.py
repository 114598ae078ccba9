"""GuardedHistory on the real Pydantic AI agent loop, with a marker oracle.

Every message carries a unique marker ``[m<i>]``; the fake summarizer (a FunctionModel built
on ``GuardedHistory.watch``) writes back the markers it read. A marker no later context or
summary holds is lost. The processor is a lossy one: it summarizes all but the newest two
messages and shows its summarizer only the newest two of those.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("pydantic_ai", reason="install the frameworks extra (CI does)")

from pydantic_ai import Agent, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tailguard.adapters.pydantic_ai import GuardedHistory, messages_from_spill, spill_index
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore

MARK = re.compile(r"\[m\d+\]|\[s\d+\]")


def markers(value: Any) -> set[str]:
    return set(MARK.findall(repr(value)))


def summarizer_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(content="summary of " + " ".join(sorted(markers(messages))))])


def make(guard: GuardedHistory | None) -> tuple[Agent[None, str], list[Any]]:
    watched = GuardedHistory.watch(FunctionModel(summarizer_fn))
    summarizer = Agent(watched)
    contexts: list[Any] = []

    async def processor(messages: list[Any]) -> list[Any]:
        if len(messages) <= 6:
            return messages
        candidates = messages[:-2]
        done = await summarizer.run("summarize", message_history=candidates[-2:])
        return [ModelRequest(parts=[UserPromptPart(content=done.output)]), *messages[-2:]]

    counter = [0]

    def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        contexts.append(markers(messages))
        counter[0] += 1
        return ModelResponse(parts=[TextPart(content=f"[s{counter[0]}] answer")])

    # the guard wraps the same ProcessHistory the unguarded agent runs (built here, where the
    # processor closes over this agent's summarizer)
    caps: list[Any] = [ProcessHistory(processor)]
    if guard is not None:
        guard.inner = caps[0]
        caps = [guard]
    return Agent(FunctionModel(model_fn), capabilities=caps), contexts


def run(agent: Agent[None, str], turns: int) -> list[Any]:
    history: list[Any] = []
    for i in range(turns):
        history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    return history


def lost(history: list[Any], contexts: list[Any], every: list[Any]) -> set[str]:
    seen_later = set().union(*contexts[-1:], markers(history))
    return {m for m in markers(every) if m not in seen_later}


def test_unguarded_loses_guarded_halts_and_spills_byte_exact(tmp_path: Path) -> None:
    agent, contexts = make(None)
    history = run(agent, 8)
    everything = set().union(*contexts)
    gone = {m for m in everything if m.startswith("[m") and m not in markers(history)}
    assert gone, "the lossy processor lost nothing: the oracle is not live"

    halting = GuardedHistory(lambda m: m, recovery_floor_span=2, on_refuse="halt")
    agent, _ = make(halting)
    with pytest.raises(UnrecoverableCompactionError):
        run(agent, 8)

    store = FileSpillStore(tmp_path / "spill", create=True)
    spilling = GuardedHistory(lambda m: m, recovery_floor_span=2, on_refuse="spill", store=store)
    agent, contexts = make(spilling)
    history = run(agent, 8)
    index = next((msg.metadata or {})["tailguard"]["spill_index"] for msg in reversed(history)
                 if (msg.metadata or {}).get("tailguard"))
    assert index is not None
    spilled: list[Any] = []
    for _run, handle in spill_index(store, index):
        spilled += messages_from_spill(store, handle)
    recovered = markers(spilled)
    # every marker the unguarded run lost is in a spill, byte-exact as Pydantic AI serializes it
    assert gone <= recovered, (gone, recovered)
    for m in spilled:
        assert ModelMessagesTypeAdapter.validate_python(ModelMessagesTypeAdapter.dump_python([m], mode="json"))[0] == m


def test_a_restart_continues_the_session_from_the_history(tmp_path: Path) -> None:
    """The guard's state rides in the newest guard summary: a new process (a new GuardedHistory)
    continues the conversation from ``all_messages()`` JSON alone, appending to the same log."""
    store = FileSpillStore(tmp_path / "spill", create=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    first = GuardedHistory(lambda m: m, recovery_floor_span=2, on_refuse="spill", store=store, log=logs)
    agent, _ = make(first)
    history: list[Any] = []
    for i in range(6):
        history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    first.close()
    carried = [m.metadata["tailguard"]["state"]["session"] for m in history if (m.metadata or {}).get("tailguard")]
    assert len(carried) == 1
    saved = ModelMessagesTypeAdapter.dump_json(history)
    second = GuardedHistory(lambda m: m, recovery_floor_span=2, on_refuse="spill", store=store, log=logs)
    agent, _ = make(second)
    history = list(ModelMessagesTypeAdapter.validate_json(saved))
    for i in range(6, 10):
        history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    sessions = {m.metadata["tailguard"]["state"]["session"] for m in history if (m.metadata or {}).get("tailguard")}
    assert sessions == set(carried)
    log = [p for p in logs.iterdir() if carried[0] in p.name]
    assert len(log) == 1 and '"resume"' in log[0].read_text()
