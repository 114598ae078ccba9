"""langmem ``summarize_messages`` / ``SummarizationNode``: the loss, then the guard.

Driven offline with the installed langmem and LangChain's fake chat model.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")

from langchain_core.messages import messages_to_dict
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langmem.short_term import summarize_messages

from tailguard.adapters._spill_tool import read_spill
from tailguard.adapters.langmem import GuardedSummarizationNode, GuardedSummarizer
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore
from tests.adapters.fakes import audit_json, conversation, prompt_text, recording_model, shown_offsets

KNOBS: dict[str, Any] = {"max_tokens": 4000, "max_tokens_before_summary": 9100}


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_langmem_marks_50_messages_summarized_its_model_never_saw() -> None:
    model = recording_model()
    result = summarize_messages(conversation(100), running_summary=None, model=model, **KNOBS)
    marked = result.running_summary.summarized_message_ids
    assert len(marked) == 86
    shown = shown_offsets(prompt_text(model.calls[0].to_messages() if hasattr(model.calls[0], "to_messages")
                                      else model.calls[0]))
    assert shown == list(range(50, 86))  # 50 marked summarized, never shown
    assert marked - {f"m{i}" for i in shown} == {f"m{i}" for i in range(50)}


def test_halt(tmp_path: Path) -> None:
    guard = GuardedSummarizer(recovery_floor_span=4, log=tmp_path / "s.jsonl")
    model = recording_model()
    with pytest.raises(UnrecoverableCompactionError) as info:
        guard.summarize_messages(conversation(100), running_summary=None, model=model, **KNOBS)
    assert (info.value.failed, info.value.holes) == (("no_hole",), ((0, 50),))
    assert model.calls == []
    assert [e["event"] for e in events(tmp_path / "s.jsonl")] == ["session", "append", "refusal"]


def test_defer_leaves_nothing_marked(tmp_path: Path) -> None:
    guard = GuardedSummarizer(recovery_floor_span=4, on_refuse="defer", log=tmp_path / "s.jsonl")
    msgs = conversation(100)
    result = guard.summarize_messages(msgs, running_summary=None, model=recording_model(), **KNOBS)
    assert result.running_summary is None and result.messages == msgs
    assert events(tmp_path / "s.jsonl")[-1]["holes"] == [[0, 50]]


def test_spill_then_allowed_and_audit_clean(tmp_path: Path) -> None:
    guard = GuardedSummarizer(recovery_floor_span=4, on_refuse="spill", store=tmp_path / "st",
                              log=tmp_path / "s.jsonl")
    msgs = conversation(100)
    result = guard.summarize_messages(msgs, running_summary=None, model=recording_model(), **KNOBS)
    assert len(result.running_summary.summarized_message_ids) == 86
    (run, handle), = guard.guard.spills
    assert run == (0, 86)
    doc = read_spill(FileSpillStore(tmp_path / "st"), handle)
    assert [x["item"] for x in doc["items"]] == messages_to_dict(msgs[:86])
    code, report = audit_json(str(tmp_path / "s.jsonl"))
    assert code == 0 and report["refusals"] == 1
    # a second round: the running summary is shown whole, so lineage holds
    more = msgs + conversation(200)[100:190]
    again = guard.summarize_messages(more, running_summary=result.running_summary, model=recording_model(),
                                     **KNOBS)
    assert again.running_summary is not result.running_summary
    assert audit_json(str(tmp_path / "s.jsonl"))[0] == 0


def test_async(tmp_path: Path) -> None:
    guard = GuardedSummarizer(recovery_floor_span=4, log=tmp_path / "s.jsonl")
    with pytest.raises(UnrecoverableCompactionError):
        asyncio.run(guard.asummarize_messages(conversation(100), running_summary=None,
                                              model=recording_model(), **KNOBS))
    ok = GuardedSummarizer(recovery_floor_span=4, log=tmp_path / "t.jsonl")
    result = asyncio.run(ok.asummarize_messages(conversation(100), running_summary=None, model=recording_model(),
                                                max_tokens=12000, max_tokens_before_summary=9100))
    assert len(result.running_summary.summarized_message_ids) == 86
    assert audit_json(str(tmp_path / "t.jsonl"))[0] == 0


class State(MessagesState):
    context: dict[str, Any]


def test_summarization_node_in_a_graph(tmp_path: Path) -> None:
    guard = GuardedSummarizer(recovery_floor_span=4, log=tmp_path / "g.jsonl")
    node = GuardedSummarizationNode(guard=guard, model=recording_model(), **KNOBS)
    graph = StateGraph(State)
    graph.add_node("summarize", node)
    graph.add_edge(START, "summarize")
    app = graph.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "1"}}
    msgs = conversation(100)
    with pytest.raises(UnrecoverableCompactionError):
        app.invoke({"messages": msgs, "context": {}}, config)
    assert [m.id for m in app.get_state(config).values["messages"]] == [m.id for m in msgs]


def test_unknown_keyword_is_an_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword"):
        GuardedSummarizer(recovery_floor_span=1).summarize_messages(
            [], running_summary=None, model=recording_model(), max_tokens=10, max_token=3)
