"""LangChain v1 ``SummarizationMiddleware``: the loss, then the guard (halt, spill, defer).

Driven offline with the installed LangChain and its own fake chat model. The loss tests run
the *unguarded* middleware and assert the loss (they fail the day LangChain stops losing).
"""

from __future__ import annotations

import asyncio
import io
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")

from langchain.agents import create_agent
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.langchain import (
    GuardedSummarizationMiddleware,
    messages_from_spill,
    spill_index,
    spill_reader_tool,
)
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, MemorySpillStore
from tests.adapters.fakes import (
    RecordingChatModel,
    audit_json,
    conversation,
    prompt_text,
    recording_model,
    shown_offsets,
)

ISSUE_KNOBS: dict[str, Any] = {"trigger": ("tokens", 3000), "keep": ("messages", 20)}


def guarded(tmp_path: Path, on_refuse: str, **kw: Any) -> tuple[GuardedSummarizationMiddleware, Any, Path]:
    model = recording_model()
    log = tmp_path / "session.jsonl"
    store = kw.pop("store", tmp_path / "spills" if on_refuse == "spill" else None)
    mw = GuardedSummarizationMiddleware(model, recovery_floor_span=kw.pop("floor", 4), on_refuse=on_refuse,
                                        store=store, log=log, **{**ISSUE_KNOBS, **kw})
    return mw, model, log


def log_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- the loss, without the adapter --------------------------------------------------------

def test_langchain_deletes_64_messages_its_summarizer_never_saw() -> None:
    model = recording_model()
    mw = SummarizationMiddleware(model, **ISSUE_KNOBS)
    messages = conversation()
    update = mw.before_model({"messages": messages}, None)  # type: ignore[arg-type]
    assert update is not None
    out = update["messages"]
    assert isinstance(out[0], RemoveMessage) and out[0].id == REMOVE_ALL_MESSAGES
    assert [m.id for m in out[2:]] == [f"m{i}" for i in range(100, 120)]  # 20 kept, 100 removed
    shown = shown_offsets(prompt_text(model.calls[0]))
    assert shown == list(range(64, 100))  # offsets 0 to 63 were deleted unseen


# -- halt -----------------------------------------------------------------------------------

def test_halt_refuses_before_anything_is_deleted(tmp_path: Path) -> None:
    mw, model, log = guarded(tmp_path, "halt")
    messages = conversation()
    with pytest.raises(UnrecoverableCompactionError) as info:
        mw.before_model({"messages": messages}, None)  # type: ignore[arg-type]
    assert info.value.failed == ("no_hole",)
    assert info.value.holes == ((0, 64),)
    assert "[0, 64)" in str(info.value)
    assert model.calls == []  # decided before the summarizer ran
    events = log_events(log)
    assert [e["event"] for e in events] == ["session", "append", "refusal"]
    assert events[2]["holes"] == [[0, 64]] and events[2]["summary_input"] == [64, 100]


def test_halt_in_a_real_agent_keeps_every_message_in_the_checkpoint(tmp_path: Path) -> None:
    mw, _, _ = guarded(tmp_path, "halt")
    agent = create_agent(recording_model(), tools=[], middleware=[mw], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t1"}}
    messages = conversation()
    with pytest.raises(UnrecoverableCompactionError):
        agent.invoke({"messages": messages}, config)
    held = agent.get_state(config).values["messages"]
    assert [m.id for m in held] == [m.id for m in messages]
    assert [m.content for m in held] == [m.content for m in messages]


# -- spill ----------------------------------------------------------------------------------

def test_spill_recovers_every_deleted_message_byte_exact(tmp_path: Path) -> None:
    mw, model, log = guarded(tmp_path, "spill")
    messages = conversation()
    originals = messages_to_dict(messages)
    update = mw.before_model({"messages": messages}, None)  # type: ignore[arg-type]
    assert update is not None
    summary = update["messages"][1]
    assert summary.additional_kwargs["lc_source"] == "summarization"
    meta = summary.additional_kwargs["tailguard"]
    assert [s["range"] for s in meta["spills"]] == [[0, 100]]
    handle = meta["spills"][0]["handle"]
    store = FileSpillStore(tmp_path / "spills")
    assert meta["spill_index"] in summary.content and handle not in summary.content  # one index handle
    assert spill_index(store, meta["spill_index"]) == [((0, 100), handle)]
    listing = json.loads(spill_reader_tool(store).invoke({"handle": meta["spill_index"]}))
    assert listing["spills"] == [{"range": [0, 100], "handle": handle}]
    text = spill_reader_tool(store).invoke({"handle": handle})
    assert text.encode("utf-8") == store.get(handle)  # the tool returns the stored bytes
    doc = json.loads(text)
    assert [x["offsets"] for x in doc["items"]] == [[i, i + 1] for i in range(100)]
    assert [x["item"] for x in doc["items"]] == originals[:100]  # byte-exact per message
    assert messages_from_spill(store, handle) == messages[:100]
    assert messages_from_dict([x["item"] for x in doc["items"]]) == messages[:100]
    assert shown_offsets(prompt_text(model.calls[0])) == list(range(64, 100))
    code, report = audit_json(str(log))
    assert code == 0 and report["violations"] == 0 and report["refusals"] == 1
    assert [e["event"] for e in log_events(log)] == ["session", "append", "refusal", "spill", "compact"]


def test_reader_tool_names_a_bad_handle(tmp_path: Path) -> None:
    tool_ = spill_reader_tool(MemorySpillStore())
    assert "cannot read spill" in tool_.invoke({"handle": "sha256:" + "0" * 64})
    assert "malformed handle" in tool_.invoke({"handle": "not-a-handle"})


# -- defer ----------------------------------------------------------------------------------

def test_defer_skips_the_compaction_and_logs_the_refusal(tmp_path: Path) -> None:
    mw, model, log = guarded(tmp_path, "defer")
    messages = conversation()
    assert mw.before_model({"messages": messages}, None) is None  # type: ignore[arg-type]
    assert model.calls == []
    messages.append(HumanMessage(content="one more", id="extra"))
    assert mw.before_model({"messages": messages}, None) is None  # type: ignore[arg-type]
    events = log_events(log)
    assert [e["event"] for e in events] == ["session", "append", "refusal", "append", "refusal"]
    assert mw.guard.ledger.refusals == 2
    code, report = audit_json(str(log))
    assert (code, report["compactions"], report["refusals"]) == (0, [], 2)


# -- allowed, lineage, clipping, async ------------------------------------------------------

def test_no_trim_is_allowed_and_the_log_replays(tmp_path: Path) -> None:
    mw, model, log = guarded(tmp_path, "halt", trim_tokens_to_summarize=None)
    update = mw.before_model({"messages": conversation()}, None)  # type: ignore[arg-type]
    assert update is not None and update["messages"][1].id == "tailguard-summary-0"
    assert shown_offsets(prompt_text(model.calls[0])) == list(range(100))
    code, report = audit_json(str(log))
    assert code == 0 and report["compactions"][0]["decision"] == "allow"
    rebuilt = Ledger.from_log(log, profile="partitioned", append=False)
    assert rebuilt.summaries == mw.guard.ledger.summaries == ("0",)
    assert rebuilt.history_end == mw.guard.ledger.history_end == 120


def test_earlier_summary_trimmed_away_is_a_hole(tmp_path: Path) -> None:
    mw, _, log = guarded(tmp_path, "halt", floor=3, trigger=("messages", 12), keep=("messages", 3),
                         trim_tokens_to_summarize=None)
    msgs = conversation(12, chars=400)
    update = mw.before_model({"messages": msgs}, None)  # type: ignore[arg-type]
    assert update is not None  # first compaction: saw [0, 9), allowed
    state = [update["messages"][1], *update["messages"][2:]]
    state += conversation(21, chars=400)[12:]  # n = 21
    mw.trim_tokens_to_summarize = 700  # the second summarizer sees only the newest ~700 tokens
    with pytest.raises(UnrecoverableCompactionError) as info:
        mw.before_model({"messages": state}, None)  # type: ignore[arg-type]
    assert info.value.failed == ("no_hole",)
    assert info.value.holes[0][0] == 0  # what only the lost summary covered
    refusal = log_events(log)[-1]
    assert refusal["event"] == "refusal"


def test_clipped_message_counts_as_unseen(tmp_path: Path) -> None:
    lines = "\n".join(f"line {j} " + "y" * 30 for j in range(20))
    msgs: list[Any] = [HumanMessage(content=f"h{i}\n{lines}", id=f"h{i}") for i in range(8)]
    mw, _, log = guarded(tmp_path, "defer", floor=2, trigger=("messages", 8), keep=("messages", 2),
                             trim_tokens_to_summarize=500)
    assert mw.before_model({"messages": msgs}, None) is None  # type: ignore[arg-type]
    refusal = log_events(log)[-1]
    # [0, 6) are candidates; the trimmer keeps h4, h5 whole and h3 cut part-way (same id)
    trimmed = SummarizationMiddleware._trim_messages_for_summary(mw, msgs[:6])
    assert [m.id for m in trimmed] == ["h3", "h4", "h5"] and trimmed[0] != msgs[3]
    assert refusal["summary_input"] == [4, 6] and refusal["holes"] == [[0, 4]]


def test_async_path_spills_too(tmp_path: Path) -> None:
    mw, _, log = guarded(tmp_path, "spill")
    update = asyncio.run(mw.abefore_model({"messages": conversation()}, None))  # type: ignore[arg-type]
    assert update is not None and len(update["messages"]) == 22
    assert audit_json(str(log))[0] == 0


# -- a real agent with tools: cutoffs that keep tool-call pairs together ---------------------

@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " + "z" * 300


def tool_replies(turns: int) -> list[AIMessage]:
    out: list[AIMessage] = []
    for i in range(turns):
        out.append(AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"key": f"k{i}"},
                                                      "id": f"call{i}", "type": "tool_call"}]))
        out.append(AIMessage(content=f"answer {i} " + "a" * 300))
    return out


@pytest.mark.parametrize("on_refuse", ["spill", "halt"])
def test_real_agent_with_tools(tmp_path: Path, on_refuse: str) -> None:
    turns = 16
    model = recording_model(iter(tool_replies(turns)))
    store = MemorySpillStore()
    log = io.StringIO()
    mw = GuardedSummarizationMiddleware(recording_model(), recovery_floor_span=3, on_refuse=on_refuse,
                                        store=store if on_refuse == "spill" else None, log=log,
                                        trigger=("tokens", 2000), keep=("messages", 5),
                                        trim_tokens_to_summarize=600)
    agent = create_agent(model, tools=[lookup], middleware=[mw], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "tools"}}
    every: dict[str, Any] = {}
    refused = False
    for i in range(turns):
        try:
            result = agent.invoke({"messages": [HumanMessage(content=f"question {i} " + "q" * 300,
                                                             id=f"q{i}")]}, config)
        except UnrecoverableCompactionError as err:
            refused = True
            assert err.failed == ("no_hole",)
            break
        for m in result["messages"]:
            if not m.additional_kwargs.get("lc_source"):
                every.setdefault(m.id, m)
        kept = [m for m in result["messages"] if not m.additional_kwargs.get("lc_source")]
        if kept and isinstance(kept[0], ToolMessage):
            pytest.fail("a cutoff separated a tool result from its call")
    events = [json.loads(x) for x in log.getvalue().splitlines()]
    compactions = [e for e in events if e["event"] == "compact"]
    if on_refuse == "halt":
        assert refused
        held = agent.get_state(config).values["messages"]
        assert any(isinstance(m, ToolMessage) for m in held)
        return
    assert len(compactions) >= 2
    path = tmp_path / "tools.jsonl"
    path.write_text(log.getvalue())
    code, report = audit_json(str(path))
    assert code == 0 and report["violations"] == 0
    spilled = {}
    for rec in store.list():
        if rec.range is None:
            continue  # a spill index
        for m in messages_from_spill(store, rec.handle):
            spilled[m.id] = m
    deleted = [k for k in every if k not in {m.id for m in agent.get_state(config).values["messages"]}]
    assert deleted and all(spilled[k] == every[k] for k in deleted)


def test_one_log_file_holds_one_session(tmp_path: Path) -> None:
    """A single log path is for one session: a second thread is a clear error (a directory is not)."""
    mw, _, log = guarded(tmp_path, "halt", trigger=("messages", 1000))
    agent = create_agent(recording_model(), tools=[], middleware=[mw], checkpointer=InMemorySaver())
    agent.invoke({"messages": [HumanMessage(content="hi", id="a")]}, {"configurable": {"thread_id": "a"}})
    with pytest.raises(AdapterError, match=r"holds the log of one session \('a'\); session 'b' needs its own"):
        agent.invoke({"messages": [HumanMessage(content="hi", id="b")]}, {"configurable": {"thread_id": "b"}})
    assert log_events(log)[0]["session_id"] == "a"


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"on_refuse": "ignore"}, "on_refuse: expected one of"),
        ({"on_refuse": "spill"}, "needs store="),
        ({"floor_unit": "turns"}, "floor_unit"),
        ({"profile": "lenient"}, "unknown profile"),
        ({"recovery_floor_span": -1}, "recovery_floor_span"),
    ],
)
def test_bad_knobs_fail_at_construction(kw: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"recovery_floor_span": 4, **kw}
    with pytest.raises(ValueError, match=message):
        GuardedSummarizationMiddleware(recording_model(), trigger=("messages", 10), **args)


def test_existing_log_is_not_overwritten(tmp_path: Path) -> None:
    log = tmp_path / "old.jsonl"
    log.write_text('{"event": "session"}\n')
    mw = GuardedSummarizationMiddleware(recording_model(), recovery_floor_span=1, log=log)
    with pytest.raises(AdapterError, match="already holds a session"):
        mw.before_model({"messages": conversation(2)}, None)  # type: ignore[arg-type]
    assert log.read_text() == '{"event": "session"}\n'


def test_message_back_after_deletion_fails_closed(tmp_path: Path) -> None:
    mw, _, _ = guarded(tmp_path, "halt", trim_tokens_to_summarize=None)
    msgs = conversation()
    update = mw.before_model({"messages": msgs}, None)  # type: ignore[arg-type]
    assert update is not None
    with pytest.raises(AdapterError, match="left the context earlier"):
        mw.before_model({"messages": [update["messages"][1], msgs[0], *msgs[100:]]}, None)  # type: ignore[arg-type]


def test_tokens_as_the_unit(tmp_path: Path) -> None:
    mw, _, log = guarded(tmp_path, "defer", floor_unit="tokens", floor=400)
    messages = conversation()
    assert mw.before_model({"messages": messages}, None) is None  # type: ignore[arg-type]
    sizes = [mw.token_counter([m]) for m in messages]
    refusal = log_events(log)[-1]
    at64, at100 = sum(sizes[:64]), sum(sizes[:100])
    assert refusal["summary_input"] == [at64, at100] and refusal["holes"] == [[0, at64]]
    assert log_events(log)[0]["unit"] == "tokens" and log_events(log)[1]["count"] == sum(sizes)


def test_messages_removed_by_someone_else_are_truncations(tmp_path: Path) -> None:
    mw, _, log = guarded(tmp_path, "halt", trim_tokens_to_summarize=None, trigger=("messages", 110))
    messages = conversation()
    assert mw.before_model({"messages": messages[:100]}, None) is None  # type: ignore[arg-type]
    with pytest.raises(UnrecoverableCompactionError) as info:  # another stage dropped [0, 10)
        mw.before_model({"messages": messages[10:]}, None)  # type: ignore[arg-type]
    assert info.value.holes == ((0, 10),)
    assert [e["event"] for e in log_events(log)] == ["session", "append", "truncate", "append", "refusal"]
    assert log_events(log)[2] == {"event": "truncate", "range": [0, 10]}


def test_overflow_retry_counts_nothing_as_seen(tmp_path: Path) -> None:
    """The base class retries a too-long summary prompt with its middle cut out: nothing whole."""
    class Overflowing(RecordingChatModel):
        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            if len(prompt_text(messages)) > 30000:
                raise ContextOverflowError("prompt too long")
            return super()._generate(messages, *args, **kwargs)

    model = Overflowing(messages=itertools.repeat(AIMessage(content="S")), calls=[])
    log = tmp_path / "o.jsonl"
    mw = GuardedSummarizationMiddleware(model, recovery_floor_span=4, log=log, trim_tokens_to_summarize=None,
                                        **ISSUE_KNOBS)
    with pytest.raises(UnrecoverableCompactionError) as info:
        mw.before_model({"messages": conversation()}, None)  # type: ignore[arg-type]
    assert info.value.holes == ((0, 100),)
    assert len(model.calls) == 1 and "middle of conversation omitted" in prompt_text(model.calls[0])
    assert [e["event"] for e in log_events(log)] == ["session", "append", "refusal"]
