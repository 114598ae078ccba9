"""GuardedHistory in production on the real Pydantic AI agent: tool calls, restarts, conversations
running at once, adoption, halt/spill/defer, bad input (tests/adapters/pydantic_ai_driver.py).

The loss Pydantic AI really suffers with tools: a processor that keeps ``messages[-1:]`` (as
Pydantic AI's docs show) compacts at a tool result's request, summarizing the call and keeping
the result; before the request is sent, Pydantic AI's ``_drop_orphaned_tool_results`` drops the
result whose call is gone, unsummarized, and the next run drops it from the history for good.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("pydantic_ai", reason="install the frameworks extra (CI does)")

from pydantic_ai import ModelRequest, UserPromptPart
from pydantic_ai.messages import ModelMessagesTypeAdapter

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.pydantic_ai import META_KEY, GuardedHistory
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore
from tests.adapters import pydantic_ai_driver as drv


def audit(log: Path) -> int:
    """The exit code of ``tailguard audit --profile partitioned`` on a session's log."""
    from tailguard.cli.main import main

    out = io.StringIO()
    code: int = main(["audit", "--profile", "partitioned", "--format", "json", str(log)], stdout=out)
    assert code in (0, 1), out.getvalue()
    return code


def test_unguarded_loses_tool_results_guarded_refuses_then_spills_byte_exact(tmp_path: Path) -> None:
    """The acceptance test: the unguarded run loses the results of tool calls it compacted; the
    guarded run halts at that compaction, before anything is deleted or sent; with spill it
    continues and every marker is in the history or a spill, the spilled messages byte-exact."""
    turns = range(8)
    seen = drv.Seen()
    history = drv.run(drv.make_agent(None, first=[seen.capability()]), turns)
    gone = drv.lost(history, seen)
    assert gone == {"[r2]", "[r6]"}, gone  # tool results whose calls were compacted

    seen = drv.Seen()
    halting = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="halt")
    agent = drv.make_agent(halting, first=[seen.capability()])
    kept: list[Any] = []
    done = at = 0
    with pytest.raises(UnrecoverableCompactionError):
        for i in turns:
            at = len(seen.contexts)
            kept = agent.run_sync(f"[m{i}] task", message_history=kept).all_messages()
            done += 1
    # refused at the first compaction at a tool result, before the request: the model was never
    # sent a context holding a call without its result; the history the application holds (the
    # failed run's messages are not in it) lost nothing
    assert 0 < done < len(turns)
    assert all(f"[r{i}]" in ctx for ctx in seen.contexts for i in turns if f"[c{i}]" in ctx)
    assert drv.lost(kept, dataclasses.replace(seen, contexts=seen.contexts[:at])) == set()

    store = FileSpillStore(tmp_path / "spill", create=True)
    seen = drv.Seen()
    spilling = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=store,
                              log=f"{tmp_path}/logs/")
    history = drv.run(drv.make_agent(spilling, first=[seen.capability()]), turns)
    extra = drv.spilled(store, history)
    assert gone <= drv.markers(extra)
    assert drv.lost(history, seen, extra) == set()
    assert drv.lost(history, seen) == gone  # the summaries alone would have lost them
    for m in extra:  # byte-exact: the message as Pydantic AI serialized it before it was deleted
        assert drv.exact(m) in seen.json
    log = next((tmp_path / "logs").glob("*.jsonl"))
    kinds = [json.loads(x)["event"] for x in log.read_text().splitlines()]
    assert "spill" in kinds and "refusal" in kinds
    assert audit(log) == 0  # every compaction the log commits is allowed


def test_without_the_cleanup_prediction_the_loss_is_only_found_later(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The prediction of Pydantic AI's cleanup is what makes the guard refuse in time: without it
    the same guarded run lets the result go and halts only at a later compaction, over a hole."""
    from tailguard.adapters import pydantic_ai as adapter

    monkeypatch.setattr(adapter, "_drop_orphaned_tool_results", lambda messages: messages)
    with pytest.raises(AssertionError):
        test_unguarded_loses_tool_results_guarded_refuses_then_spills_byte_exact(tmp_path)


def test_openai_compaction_with_tools_is_refused_then_spilled_as_pydantic_ai_compacts(tmp_path: Path) -> None:
    """The real OpenAICompaction (message_count_threshold=3) on a real OpenAIResponsesModel: at a
    tool result's request it compacts the call and keeps the result, which Pydantic AI then
    drops. Guarded: halted there; with spill, nothing is lost and /responses/compact is sent
    exactly what the unguarded run sent it (the guard changes no compaction it allows)."""
    seen = drv.Seen()
    agent, plain = drv.openai_agent(3, first=[seen.capability()])
    history = drv.run(agent, range(8))
    gone = drv.lost(history, seen)
    assert gone == {"[r2]", "[r4]", "[r6]"}, gone

    agent, _ = drv.openai_agent(3, GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="halt"))
    with pytest.raises(UnrecoverableCompactionError, match="no_hole"):
        drv.run(agent, range(8))

    store = FileSpillStore(tmp_path / "spill", create=True)
    seen = drv.Seen()
    guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=store)
    agent, server = drv.openai_agent(3, guard, first=[seen.capability()])
    history = drv.run(agent, range(8))
    extra = drv.spilled(store, history)
    assert drv.lost(history, seen, extra) == set() and gone <= drv.markers(extra)
    assert all(drv.exact(m) in seen.json for m in extra)
    assert server.compacts == plain.compacts


@pytest.mark.parametrize("threshold", [4, 5])
def test_the_guard_agrees_with_the_preset_on_openai_compaction(threshold: int) -> None:
    """brief 6d: check-config calls OpenAICompaction(message_count_threshold=N) safe with a floor
    of 1 (chat, no tools) and unsafe with 2 (tests/presets/test_pydantic_ai_preset.py). The guard
    with floor 1 refuses none of a long chat's compactions (halt); with floor 2 it halts at the
    first."""
    agent, server = drv.openai_agent(threshold, GuardedHistory(lambda m: m, recovery_floor_span=1, on_refuse="halt"),
                                     drv.Server(tools=False))
    drv.run(agent, range(16))
    assert len(server.compacts) >= 4
    agent, server = drv.openai_agent(threshold, GuardedHistory(lambda m: m, recovery_floor_span=2, on_refuse="halt"),
                                     drv.Server(tools=False))
    with pytest.raises(UnrecoverableCompactionError, match="floor_in_tail"):
        drv.run(agent, range(16))
    assert len(server.compacts) == 1  # computed once, refused before it took effect


def guarded_run(tmp_path: Path, turns: range, restarts: set[int]) -> tuple[list[Any], list[str], drv.Seen]:
    """A tool-calling conversation, guarded with spill; at each turn in ``restarts`` the process
    restarts: the guard is closed and a new one continues from the history's JSON alone."""
    store = tmp_path / "spill"
    seen = drv.Seen()

    def new() -> tuple[GuardedHistory, Any]:
        guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=store,
                               log=f"{tmp_path}/logs/")
        return guard, drv.make_agent(guard, first=[seen.capability()])

    FileSpillStore(store, create=True)
    guard, agent = new()
    history: list[Any] = []
    for i in turns:
        if i in restarts:
            guard.close()
            saved = ModelMessagesTypeAdapter.dump_json(history)
            guard, agent = new()
            history = list(ModelMessagesTypeAdapter.validate_json(saved))
        history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    guard.close()
    logs = sorted((tmp_path / "logs").glob("*.jsonl"))
    assert len(logs) == 1, logs  # one session, one log, whatever the number of processes
    return history, [json.loads(x)["event"] for x in logs[0].read_text().splitlines()], seen


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_restarts_at_random_points_continue_the_session_exactly(tmp_path: Path, seed: int) -> None:
    """The guard's state travels with the conversation (the newest guard summary's metadata): a
    conversation restarted at random points, each time from ``ModelMessagesTypeAdapter`` JSON in
    a new process, decides every compaction as the uninterrupted one does, in one log continued
    with a ``resume`` line per restart, and loses nothing."""
    turns = range(14)
    restarts = set(random.Random(seed).sample(range(2, 14), 4))
    once, kinds, _ = guarded_run(tmp_path / "once", turns, set())
    history, restarted, seen = guarded_run(tmp_path / "restarted", turns, restarts)
    assert restarted.count("resume") == len(restarts)
    assert [k for k in restarted if k != "resume"] == kinds
    assert [drv.markers(m.parts) for m in history] == [drv.markers(m.parts) for m in once]
    sessions = {(m.metadata or {})[META_KEY]["state"]["session"] for m in history if META_KEY in (m.metadata or {})}
    assert len(sessions) == 1
    extra = drv.spilled(FileSpillStore(tmp_path / "restarted" / "spill"), history)
    assert drv.lost(history, seen, extra) == set()
    assert audit(next((tmp_path / "restarted" / "logs").glob("*.jsonl"))) == 0


def test_two_conversations_through_one_agent_at_once_stay_separate(tmp_path: Path) -> None:
    """One agent, one guard, two conversations run concurrently (asyncio tasks): each has its own
    session, state and log; neither history, summary nor spill holds the other's markers; each
    loses nothing."""
    store = FileSpillStore(tmp_path / "spill", create=True)
    seen = drv.Seen()
    guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=store,
                           log=f"{tmp_path}/logs/")
    agent = drv.make_agent(guard, first=[seen.capability()])
    first, second = range(0, 10), range(100, 110)

    async def both() -> list[list[Any]]:
        return list(await asyncio.gather(drv.arun(agent, first), drv.arun(agent, second)))

    histories = asyncio.run(both())
    sessions = []
    for history, turns, other in zip(histories, (first, second), (second, first), strict=True):
        extra = drv.spilled(store, history)
        assert extra and drv.lost(history, seen, extra, turns) == set()
        held = drv.markers(history) | drv.markers(extra)
        assert not any(int(m[2:-1]) in other for m in held)
        meta = drv.carried(history)
        assert meta is not None
        sessions.append(meta["state"]["session"])
    assert len(set(sessions)) == 2
    logs = sorted((tmp_path / "logs").glob("*.jsonl"))
    assert len(logs) == 2 and all(audit(log) == 0 for log in logs)


@pytest.mark.parametrize("mode", ["adopt", "refuse"])
def test_a_history_compacted_before_the_guard_is_adopted(tmp_path: Path, mode: str) -> None:
    """brief 9: a conversation OpenAICompaction compacted before the guard came is adopted, its
    compaction's offsets recorded as unverified (an ``adopt`` line), and the guard decides from
    there; ``on_unknown_history='refuse'`` refuses it with a clear error."""
    agent, server = drv.openai_agent(4, None, drv.Server(tools=False))
    history = drv.run(agent, range(4))
    assert server.compacts and any(p.part_kind == "compaction" for p in history[0].parts)
    guard = GuardedHistory(lambda m: m, recovery_floor_span=1, on_refuse="halt", on_unknown_history=mode,
                           log=f"{tmp_path}/logs/")
    agent, server = drv.openai_agent(4, guard, drv.Server(tools=False))
    if mode == "refuse":
        with pytest.raises(AdapterError, match="predates the guard"):
            drv.run(agent, range(4, 10), history)
        return
    history = drv.run(agent, range(4, 10), history)
    assert len(server.compacts) >= 2
    lines = [json.loads(x) for p in (tmp_path / "logs").glob("*.jsonl") for x in p.read_text().splitlines()]
    adopt = [x for x in lines if x.get("event") == "adopt"]
    assert len(adopt) == 1 and adopt[0]["range"] == [0, 1]
    assert [x["event"] for x in lines].count("compact") == len(server.compacts)


def test_defer_keeps_every_message(tmp_path: Path) -> None:
    """on_refuse='defer': a refused compaction leaves the history unreduced for that request (the
    tool result stays with its call) and is logged; nothing is lost."""
    seen = drv.Seen()
    guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="defer", log=f"{tmp_path}/logs/")
    history = drv.run(drv.make_agent(guard, first=[seen.capability()]), range(8))
    assert drv.lost(history, seen) == set()
    assert {"[r2]", "[r6]"} <= drv.markers(history)
    kinds = [json.loads(x)["event"] for p in (tmp_path / "logs").glob("*.jsonl") for x in p.read_text().splitlines()]
    assert "refusal" in kinds


def tamper(history: list[Any], change: Any) -> list[Any]:
    """``history`` with the guard state of its newest guard summary changed by ``change``."""
    out = list(history)
    i = max(j for j, m in enumerate(out) if META_KEY in (m.metadata or {}))
    meta = json.loads(json.dumps(out[i].metadata))
    change(meta[META_KEY])
    out[i] = dataclasses.replace(out[i], metadata=meta)
    return out


def test_bad_input_fails_closed(tmp_path: Path) -> None:
    """A guard state altered, of another version or missing, and a processor that rewrites
    messages: a clear AdapterError naming why, before anything is deleted; bad arguments:
    TypeError/ValueError naming the argument."""
    guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=tmp_path / "spill")
    FileSpillStore(tmp_path / "spill", create=True)
    agent = drv.make_agent(guard)
    history = drv.run(agent, range(4))
    assert drv.carried(history) is not None

    def altered(meta: dict[str, Any]) -> None:
        meta["state"]["serial"] += 1

    def other_version(meta: dict[str, Any]) -> None:
        meta["state"]["version"] = 99

    def missing(meta: dict[str, Any]) -> None:
        del meta["state"]

    for change, why in ((altered, "integrity digest"), (other_version, "version 99"), (missing, "no guard state")):
        fresh = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=tmp_path / "spill")
        bad = tamper(history, change)
        with pytest.raises(AdapterError, match=why):
            drv.run(drv.make_agent(fresh), range(4, 5), bad)

    async def two_summaries(messages: list[Any]) -> list[Any]:
        if len(messages) <= 4:
            return messages
        return [ModelRequest(parts=[UserPromptPart("one")]), ModelRequest(parts=[UserPromptPart("two")]),
                *messages[-1:]]

    seen = drv.Seen()
    agent = drv.make_agent(GuardedHistory(lambda m: m, recovery_floor_span=0), first=[seen.capability()],
                           process=two_summaries)
    kept: list[Any] = []
    at = 0
    with pytest.raises(AdapterError, match=r"returned 2 messages.*Nothing was deleted"):
        for i in range(8):
            at = len(seen.contexts)
            kept = agent.run_sync(f"[m{i}] task", message_history=kept).all_messages()
    assert kept and drv.lost(kept, dataclasses.replace(seen, contexts=seen.contexts[:at])) == set()

    with pytest.raises(TypeError, match="inner"):
        GuardedHistory(42, recovery_floor_span=1)
    with pytest.raises(ValueError, match="floor_unit"):
        GuardedHistory(lambda m: m, recovery_floor_span=1, floor_unit="tokens")
    with pytest.raises(ValueError, match="cache_size"):
        GuardedHistory(lambda m: m, recovery_floor_span=1, cache_size=0)
    with pytest.raises((TypeError, ValueError), match="on_refuse"):
        GuardedHistory(lambda m: m, recovery_floor_span=1, on_refuse="ignore")


def test_the_processor_pydantic_ai_documents_is_guarded(tmp_path: Path) -> None:
    """Pydantic AI's own example processor (docs, message history: summarize the oldest 10
    messages, ``return summary.new_messages() + messages[-1:]``), verbatim. Its summarizer's
    ``new_messages()`` may hold an empty request beside the summary, or a synthesized result for
    a call it was shown dangling (which Pydantic AI then drops). Unguarded it loses a tool result
    it kept alone; guarded it halts there, or spills it and loses nothing."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    summarize_agent = Agent(GuardedHistory.watch(FunctionModel(drv.summarizer_fn)),
                            instructions="Summarize this conversation, omitting small talk.")

    async def summarize_old_messages(messages: list[Any]) -> list[Any]:
        if len(messages) > 10:
            oldest_messages = messages[:10]
            summary = await summarize_agent.run(message_history=oldest_messages)
            return summary.new_messages() + messages[-1:]
        return messages

    turns = range(12)
    seen = drv.Seen()
    history = drv.run(drv.make_agent(None, process=summarize_old_messages, first=[seen.capability()]), turns)
    gone = drv.lost(history, seen)
    assert gone == {"[r8]"}, gone

    halting = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="halt")
    with pytest.raises(UnrecoverableCompactionError):
        drv.run(drv.make_agent(halting, process=summarize_old_messages), turns)

    store = FileSpillStore(tmp_path / "spill", create=True)
    seen = drv.Seen()
    spilling = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=store)
    history = drv.run(drv.make_agent(spilling, process=summarize_old_messages, first=[seen.capability()]), turns)
    extra = drv.spilled(store, history)
    assert drv.lost(history, seen, extra) == set() and gone <= drv.markers(extra)


def test_the_integrations_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/integrations.md's Pydantic AI snippet, as printed, builds offline; with its two models
    swapped for Pydantic AI's FunctionModel (Agent.override) the guarded agent compacts, and the
    one log and the spill store it names are written."""
    import re

    from pydantic_ai.models.function import FunctionModel

    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    part = doc[doc.index("## Pydantic AI v2"):]
    part = part[: part.index("\n## ", 1)]
    snippets = re.findall(r"```python\n(.*?)```", part, flags=re.S)
    assert len(snippets) == 1
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    namespace: dict[str, Any] = {"__name__": "docs_integrations_pydantic_ai"}
    code = compile(snippets[0], "integrations.md:pydantic-ai", "exec", dont_inherit=True)  # as a script runs it
    exec(code, namespace)  # the doc's own code
    agent, summarizer = namespace["agent"], namespace["summarizer"]
    with agent.override(model=FunctionModel(drv.model_fn)), \
            summarizer.override(model=GuardedHistory.watch(FunctionModel(drv.summarizer_fn))):
        history: list[Any] = []
        for i in range(1, 24, 2):  # chat turns (odd: no tool calls)
            history = agent.run_sync(f"[m{i}] task", message_history=history).all_messages()
    meta = drv.carried(history)
    assert meta is not None and len(list((tmp_path / "logs").glob("*.jsonl"))) == 1
    assert (tmp_path / "spills").is_dir()


async def keep_recent_messages(messages: list[Any]) -> list[Any]:
    """Keep only the last 5 messages to manage token usage (Pydantic AI's docs, verbatim)."""
    return messages[-5:] if len(messages) > 5 else messages


def test_a_processor_that_only_drops_messages_is_one_session(tmp_path: Path) -> None:
    """Pydantic AI's documented sliding window (``messages[-5:]``) writes no summary: the guard's
    state rides in the newest response instead, so the conversation is one session with one log
    across requests and a restart from JSON; unguarded the window loses what it drops, guarded it
    halts, or spills every dropped message (found through the spill index the state names)."""
    turns = range(10)
    seen = drv.Seen()
    history = drv.run(drv.make_agent(None, process=keep_recent_messages, first=[seen.capability()]), turns)
    assert {"[m0]", "[r0]", "[a5]"} <= drv.lost(history, seen)

    with pytest.raises(UnrecoverableCompactionError, match="no_hole"):
        drv.run(drv.make_agent(GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="halt"),
                               process=keep_recent_messages), turns)

    store = FileSpillStore(tmp_path / "spill", create=True)
    seen = drv.Seen()

    def agent() -> Any:
        guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=store,
                               log=f"{tmp_path}/logs/")
        return drv.make_agent(guard, process=keep_recent_messages, first=[seen.capability()])

    history = drv.run(agent(), range(5))
    saved = ModelMessagesTypeAdapter.dump_json(history)
    history = drv.run(agent(), range(5, 10), list(ModelMessagesTypeAdapter.validate_json(saved)))  # a restart
    carriers = [m for m in history if META_KEY in (m.metadata or {})]
    assert len(carriers) == 1 and "state" in carriers[0].metadata[META_KEY]
    extra = drv.spilled(store, history)
    assert drv.lost(history, seen, extra) == set()
    logs = list((tmp_path / "logs").glob("*.jsonl"))
    kinds = [json.loads(x)["event"] for x in logs[0].read_text().splitlines()]
    assert len(logs) == 1 and kinds.count("session") == 1 and kinds.count("resume") == 1
    assert audit(logs[0]) == 0


def test_a_conversation_never_compacted_leaves_no_state_and_no_log(tmp_path: Path) -> None:
    """Before its first reduction a conversation has nothing to carry: no message gets guard
    metadata and no log file stays behind (each request's appends-only session is dropped)."""
    guard = GuardedHistory(lambda m: m, recovery_floor_span=0, on_refuse="spill", store=tmp_path / "spill",
                           log=f"{tmp_path}/logs/")
    history = drv.run(drv.make_agent(guard, limit=100), range(4))
    assert drv.carried(history) is None
    assert list((tmp_path / "logs").glob("*.jsonl")) == []
