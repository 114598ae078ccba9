"""tailguard.adapters.llamaindex against the real LlamaIndex memories, offline.

The real ``Memory`` (its SQL store: in-memory SQLite, or a SQLite file for restarts) and the real
``ChatSummaryMemoryBuffer``, with the real ``FactExtractionMemoryBlock`` on an echoing
``CustomLLM`` (tailguard.doctor.drivers.llamaindex). Every message carries a unique marker; a
marker that no later ``get()`` and no spill holds is lost.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("llama_index.core", reason="install the frameworks extra (CI does)")

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatSummaryMemoryBuffer, Memory
from llama_index.core.memory.memory_blocks import FactExtractionMemoryBlock
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.sql import MessageStatus

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.llamaindex import (
    STATE_SUFFIX,
    GuardedChatSummaryMemoryBuffer,
    GuardedMemory,
    messages_from_spill,
)
from tailguard.doctor.drivers.llamaindex import EchoLLM, tags, turn_messages
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore

SIZES = {"token_limit": 40, "chat_history_token_ratio": 0.5, "token_flush_size": 5, "tokenizer_fn": str.split}
TURNS = [[3, 3], [2, 4, 1], [5], [3, 3], [4, 2], [6], [2, 2, 2], [3, 3], [5, 1], [4]]
ALL = {(t, m) for t, s in enumerate(TURNS) for m in range(len(s))}


def context_tags(messages: list[Any]) -> set[tuple[int, int]]:
    return tags("\n".join(str(m.content or "") for m in messages))


def run_memory(mem: Memory, turns: list[list[int]] = TURNS) -> set[tuple[int, int]]:
    """Every marker some ``get()`` after its turn showed."""
    seen: set[tuple[int, int]] = set()
    for i, sizes in enumerate(turns):
        mem.put_messages(turn_messages(i, sizes))
        seen |= context_tags(mem.get())
    return seen


def spilled(store: FileSpillStore, guard: Any) -> dict[tuple[int, int], Any]:
    out = {}
    for _run, handle in guard.spills:
        for msg in messages_from_spill(store, handle):
            (tag,) = tags(msg.content)
            out[tag] = msg
    return out


# -- the acceptance test: a guarded run spills what the unguarded run silently drops ----------

def test_guarded_memory_spills_what_memory_drops_byte_exact(tmp_path: Path) -> None:
    plain = Memory.from_defaults(session_id="s", **SIZES)
    run_memory(plain)
    final = context_tags(plain.get())
    lost = ALL - final
    assert lost and lost == context_tags(plain.get_all(status=MessageStatus.ARCHIVED))  # silently dropped

    store = FileSpillStore(tmp_path / "spills", create=True)
    guarded = GuardedMemory.from_defaults(session_id="s", **SIZES, recovery_floor_span=2, on_refuse="spill",
                                          store=store)
    run_memory(guarded)
    assert context_tags(guarded.get()) == final  # the same memory, the same context
    assert guarded.guard is not None
    back = spilled(store, guarded.guard)
    assert set(back) == lost  # exactly what was dropped, each once
    originals = {next(iter(tags(m.content or ""))): m for m in guarded.get_all(status=MessageStatus.ARCHIVED)}
    for tag, msg in back.items():
        assert msg.model_dump(mode="json") == originals[tag].model_dump(mode="json")
    for _run, handle in guarded.guard.spills:  # byte-exact: the store's bytes re-read to the handle
        data = store.get(handle)
        assert json.loads(data)["items"] and store.get(handle) == data


def test_guarded_buffer_spills_what_the_buffer_deletes(tmp_path: Path) -> None:
    plain = ChatSummaryMemoryBuffer.from_defaults(token_limit=10, tokenizer_fn=str.split)
    store = FileSpillStore(tmp_path / "spills", create=True)
    guarded = GuardedChatSummaryMemoryBuffer.from_defaults(token_limit=10, tokenizer_fn=str.split,
                                                           recovery_floor_span=1, on_refuse="spill", store=store)
    for buf in (plain, guarded):
        for i, sizes in enumerate(TURNS):
            for m in turn_messages(i, sizes):
                buf.put(m)
            buf.get()
    lost = ALL - context_tags(plain.get())
    assert lost
    assert guarded.guard is not None
    back = spilled(store, guarded.guard)
    assert set(back) == lost
    assert all(m.content == turn_messages(t, TURNS[t])[k].content for (t, k), m in back.items())


# -- halt, defer, the floor -----------------------------------------------------------------------

def test_halt_archives_nothing_and_names_the_range() -> None:
    mem = GuardedMemory.from_defaults(session_id="h", **SIZES, recovery_floor_span=2)
    with pytest.raises(UnrecoverableCompactionError) as info:
        run_memory(mem)
    assert info.value.holes == ((0, 2),) and "no_hole" in info.value.failed
    assert mem.get_all(status=MessageStatus.ARCHIVED) == []  # nothing left the history
    with pytest.raises(UnrecoverableCompactionError):  # and it stays halted
        mem.put_messages(turn_messages(99, [1]))
    import asyncio

    with pytest.raises(UnrecoverableCompactionError):  # the async path raises it too
        asyncio.run(mem.aput_messages(turn_messages(100, [1])))
    assert mem.get_all(status=MessageStatus.ARCHIVED) == []


def test_defer_keeps_everything_in_the_history() -> None:
    mem = GuardedMemory.from_defaults(session_id="d", **SIZES, recovery_floor_span=2, on_refuse="defer")
    run_memory(mem)
    assert context_tags(mem.get()) == ALL and mem.get_all(status=MessageStatus.ARCHIVED) == []


def test_a_fact_block_covers_the_flush_and_the_floor_still_holds(tmp_path: Path) -> None:
    llm = EchoLLM()
    mem = GuardedMemory.from_defaults(session_id="f", **SIZES, memory_blocks=[FactExtractionMemoryBlock(llm=llm)],
                                      recovery_floor_span=2, on_refuse="spill", store=tmp_path / "spills")
    seen = run_memory(mem)
    assert mem.guard is not None
    assert mem.guard.spills  # spill mode spills every flush, covered or not
    assert context_tags(mem.get()) == ALL == seen  # the facts hold every flushed marker
    assert len(mem.guard.ledger.summaries) == 1  # a rolling summary: each saw the one before
    tight = GuardedMemory.from_defaults(session_id="g", **SIZES,
                                        memory_blocks=[FactExtractionMemoryBlock(llm=EchoLLM())],
                                        recovery_floor_span=12, on_refuse="spill", store=tmp_path / "spills")
    with pytest.raises(UnrecoverableCompactionError) as info:
        run_memory(tight)
    assert "floor_in_tail" in info.value.failed  # a spill cannot repair the floor


def test_a_failing_fact_block_turns_the_flush_into_a_truncation() -> None:
    llm = EchoLLM()
    block = FactExtractionMemoryBlock(llm=llm)
    mem = GuardedMemory.from_defaults(session_id="x", **SIZES, memory_blocks=[block], recovery_floor_span=2)
    calls = {"n": 0}
    real_answer = EchoLLM._answer

    def flaky(self: EchoLLM, prompt: str) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("provider down")
        return real_answer(self, prompt)

    EchoLLM._answer = flaky  # type: ignore[method-assign]
    try:
        with pytest.raises(ConnectionError):
            run_memory(mem)
        assert mem.guard is not None
        assert mem.guard.ledger.summaries == ()  # nothing committed as covered
        with pytest.raises(UnrecoverableCompactionError) as info:  # the next flush names the hole
            run_memory(mem, [[9, 9]] * 2)
        assert info.value.holes and info.value.holes[0][0] == 0
    finally:
        EchoLLM._answer = real_answer  # type: ignore[method-assign]


# -- state in LlamaIndex's persistence: restarts, sessions, adoption ---------------------------------

def sqlite(path: Path) -> dict[str, Any]:
    return {"async_database_uri": f"sqlite+aiosqlite:///{path}"}


def test_a_restart_over_the_sql_store_resumes(tmp_path: Path) -> None:
    db, logs, spills = tmp_path / "m.db", tmp_path / "logs", tmp_path / "spills"
    logs.mkdir()
    first = GuardedMemory.from_defaults(session_id="alice", **SIZES, **sqlite(db), recovery_floor_span=2,
                                        on_refuse="spill", store=spills, log=logs)
    run_memory(first, TURNS[:5])
    assert first.guard is not None
    end = first.guard.ledger.history_end
    second = GuardedMemory.from_defaults(session_id="alice", **SIZES, **sqlite(db), recovery_floor_span=2,
                                         on_refuse="spill", store=spills, log=logs)
    for i, sizes in enumerate(TURNS[5:], start=5):
        second.put_messages(turn_messages(i, sizes))
    assert second.guard is not None and second.guard.ledger.history_end == end + sum(map(len, TURNS[5:]))
    (log,) = logs.iterdir()
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert "resume" in events and events.count("session") == 1
    lost = ALL - context_tags(second.get())
    store = FileSpillStore(spills)
    assert set(spilled(store, first.guard)) | set(spilled(store, second.guard)) == lost


def test_a_restart_without_the_facts_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    kw: dict[str, Any] = {"session_id": "f", **SIZES, **sqlite(db), "recovery_floor_span": 2}
    first = GuardedMemory.from_defaults(**kw, memory_blocks=[FactExtractionMemoryBlock(llm=EchoLLM())])
    run_memory(first, TURNS[:6])
    assert first.guard is not None and first.guard.ledger.summaries
    second = GuardedMemory.from_defaults(**kw, memory_blocks=[FactExtractionMemoryBlock(llm=EchoLLM())])
    with pytest.raises(UnrecoverableCompactionError) as info:  # the new block holds no facts
        run_memory(second, [[9, 9]] * 3)
    assert info.value.holes and info.value.holes[0][0] == 0


def test_sessions_on_one_store_stay_separate(tmp_path: Path) -> None:
    db = tmp_path / "two.db"
    a = GuardedMemory.from_defaults(session_id="a", **SIZES, **sqlite(db), recovery_floor_span=2, on_refuse="spill",
                                    store=tmp_path / "spills")
    b = GuardedMemory.from_defaults(session_id="b", **SIZES, **sqlite(db), recovery_floor_span=2)
    run_memory(a)
    b.put_messages(turn_messages(0, [3]))
    assert b.guard is not None and b.guard.ledger.history_end == 1  # not a's offsets
    assert a.guard is not None and a.guard.ledger.history_end == sum(map(len, TURNS))


def test_history_flushed_before_the_guard_is_adopted(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    old = Memory.from_defaults(session_id="o", **SIZES, **sqlite(db))
    run_memory(old, TURNS[:6])
    archived = len(old.get_all(status=MessageStatus.ARCHIVED))
    assert archived
    log = io.StringIO()
    new = GuardedMemory.from_defaults(session_id="o", **SIZES, **sqlite(db), recovery_floor_span=2,
                                      on_refuse="spill", store=tmp_path / "spills", log=log)
    new.put_messages(turn_messages(6, [1]))
    adopt = next(json.loads(x) for x in log.getvalue().splitlines() if '"adopt"' in x)
    assert adopt["range"] == [0, archived]
    refusing = GuardedMemory.from_defaults(session_id="o", **SIZES, **sqlite(tmp_path / "old2.db"),
                                           recovery_floor_span=2, on_unknown_history="refuse")
    plain = Memory.from_defaults(session_id="o", **SIZES, **sqlite(tmp_path / "old2.db"))
    run_memory(plain, TURNS[:6])
    with pytest.raises(AdapterError, match="on_unknown_history='refuse'"):
        refusing.put_messages(turn_messages(6, [1]))


def test_a_tampered_state_fails_closed(tmp_path: Path) -> None:
    mem = GuardedMemory.from_defaults(session_id="t", **SIZES, recovery_floor_span=2, on_refuse="spill",
                                      store=tmp_path / "spills")
    run_memory(mem, TURNS[:4])
    inner = mem.sql_store.inner  # type: ignore[attr-defined]
    import asyncio

    (state,) = asyncio.run(inner.get_messages("t" + STATE_SUFFIX, status=None))
    state.additional_kwargs["tailguard"]["ledger"]["n"] = 1
    asyncio.run(inner.set_messages("t" + STATE_SUFFIX, [state]))
    fresh = GuardedMemory.from_defaults(session_id="t", **SIZES, recovery_floor_span=2)
    fresh.sql_store.inner = inner  # type: ignore[attr-defined]
    with pytest.raises(AdapterError, match="does not match its integrity digest"):
        fresh.put_messages(turn_messages(9, [1]))


def reloaded(store: SimpleChatStore, path: Path) -> SimpleChatStore:
    """The chat store written to JSON and read back in a "new process". (``SimpleChatStore.persist``
    itself raises PydanticSerializationError under pydantic 2.14 with llama-index-core 0.14.25,
    with or without the guard: its WrapSerializer calls ``handler(message, info)``.)"""
    path.write_text(json.dumps({k: [m.model_dump(mode="json") for m in v] for k, v in store.store.items()}))
    data = json.loads(path.read_text())
    return SimpleChatStore(store={k: [ChatMessage.model_validate(m) for m in v] for k, v in data.items()})


def test_the_buffer_resumes_from_its_persisted_chat_store(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    llm = EchoLLM()
    first = GuardedChatSummaryMemoryBuffer.from_defaults(llm=llm, token_limit=10, tokenizer_fn=str.split,
                                                         chat_store=SimpleChatStore(), recovery_floor_span=1)
    for i, sizes in enumerate(TURNS[:5]):
        for m in turn_messages(i, sizes):
            first.put(m)
        first.get()
    store = reloaded(first.chat_store, path)  # type: ignore[arg-type]
    assert first.guard is not None
    summaries = first.guard.ledger.summaries
    second = GuardedChatSummaryMemoryBuffer.from_defaults(llm=llm, token_limit=10, tokenizer_fn=str.split,
                                                          chat_store=store,
                                                          recovery_floor_span=1)
    for i, sizes in enumerate(TURNS[5:], start=5):
        for m in turn_messages(i, sizes):
            second.put(m)
        out = second.get()
    assert second.guard is not None and summaries
    assert second.guard.ledger.history_end == sum(map(len, TURNS))  # the same ledger, continued
    assert int(second.guard.ledger.summaries[-1]) > int(summaries[-1])
    assert context_tags(out) == ALL  # the summary chain holds everything


def test_a_halted_buffer_leaves_its_chat_store_as_it_was() -> None:
    buf = GuardedChatSummaryMemoryBuffer.from_defaults(token_limit=10, tokenizer_fn=str.split, recovery_floor_span=1)
    for m in turn_messages(0, [6, 6]):
        buf.put(m)
    before = [m.model_dump() for m in buf.get_all()]
    with pytest.raises(UnrecoverableCompactionError):
        buf.get()
    assert [m.model_dump() for m in buf.get_all()] == before


def test_a_message_left_out_of_the_transcript_is_a_hole() -> None:
    """``text_only_transcript``: an assistant message holding only a tool call (no text) is not in
    ``_get_prompt_to_summarize``'s transcript, so its summary cannot cover it: the guard refuses
    naming it, where the plain buffer summarizes it away."""
    from llama_index.core.base.llms.types import ToolCallBlock

    call = ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="probe",
                                                               tool_kwargs={"q": "[t0m1]"})])
    turn = [turn_messages(0, [2])[0], call, turn_messages(0, [2, 2, 2])[2]]
    for buffer_class in (ChatSummaryMemoryBuffer, GuardedChatSummaryMemoryBuffer):
        kw: dict[str, Any] = {"recovery_floor_span": 1} if buffer_class is GuardedChatSummaryMemoryBuffer else {}
        llm = EchoLLM()
        buf = buffer_class.from_defaults(llm=llm, token_limit=6, tokenizer_fn=str.split, **kw)
        for m in [*turn, *turn_messages(1, [2, 2])]:
            buf.put(m)
        if buffer_class is ChatSummaryMemoryBuffer:
            out = buf.get()
            assert (0, 1) not in context_tags(out) and not any("[t0m1]" in p for p in llm.prompts)  # lost
            continue
        with pytest.raises(UnrecoverableCompactionError) as info:
            buf.get()
        # offset 1 (the call) was not shown; the summary's input is the newest run shown whole that
        # ends at the tail, [2, 3) (brief 4c), so [0, 2) is named
        assert info.value.holes == ((0, 2),)


# -- the docs, and agreement with the preset (brief 6d) -------------------------------------------

def test_the_integrations_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    part = doc[doc.index("## LlamaIndex `Memory`"):]
    (snippet,) = re.findall(r"```python\n(.*?)```", part[: part.index("\n## ")], flags=re.S)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    namespace: dict[str, Any] = {"__name__": "docs_integrations"}
    exec(compile(snippet, "integrations.md:llamaindex", "exec"), namespace)  # the doc's own code
    memory = namespace["memory"]
    for i in range(3):
        memory.put_messages(turn_messages(i, [1000] * 9))  # over 21,000 tokens: a flush, spilled
    assert memory.guard.spills and (tmp_path / "spills").is_dir() and any((tmp_path / "logs").iterdir())


REAL = [[8000], [5001], [8000], [300, 2000], [7000], [1, 1, 1, 1], [6000, 1500], [8000], [4000], [2500, 2500]]


def test_the_preset_counterexamples_are_refused_and_its_safe_sessions_pass(tmp_path: Path) -> None:
    """Runtime and config agree on the same knobs: the defaults' traces (check-config: a hole at
    turn 0) are refused with turn 0's messages named; the knobs it calls safe are never refused."""
    mem = GuardedMemory.from_defaults(session_id="d", tokenizer_fn=str.split, recovery_floor_span=8)
    with pytest.raises(UnrecoverableCompactionError) as info:
        for i, sizes in enumerate([[8000], [5001], [8000]]):  # examples/presets/llamaindex-memory-defaults.toml
            mem.put_messages(turn_messages(i, sizes))
    assert i == 2 and info.value.holes == ((0, 1),)
    buf = GuardedChatSummaryMemoryBuffer.from_defaults(tokenizer_fn=str.split, recovery_floor_span=8)
    buf.put(turn_messages(0, [2001])[0])  # llamaindex-chat-summary-defaults.toml's trace
    with pytest.raises(UnrecoverableCompactionError) as info:
        buf.get()
    assert info.value.holes == ((0, 1),)
    # llamaindex-memory-facts.toml (floor 0) and llamaindex-chat-summary-llm.toml (floor 8): safe
    facts = GuardedMemory.from_defaults(session_id="f", tokenizer_fn=str.split, recovery_floor_span=0,
                                        memory_blocks=[FactExtractionMemoryBlock(llm=EchoLLM())])
    summary = GuardedChatSummaryMemoryBuffer.from_defaults(llm=EchoLLM(context=128000), tokenizer_fn=str.split,
                                                           recovery_floor_span=8)
    assert summary.token_limit == 96000
    for i, sizes in enumerate(REAL * 3):
        facts.put_messages(turn_messages(i, sizes))
        for m in turn_messages(i, sizes):
            summary.put(m)
        summary.get()
    assert facts.guard is not None and facts.guard.ledger.summaries and not facts.guard.spills
    assert summary.guard is not None and summary.guard.ledger.summaries


def test_concurrent_sessions_and_a_state_of_another_session(tmp_path: Path) -> None:
    """Two sessions flushing at once on one store (async) keep their own ledgers; a state value
    copied under another session's key is refused, naming both."""
    import asyncio

    from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

    db = tmp_path / "c.db"
    shared = SQLAlchemyChatStore(table_name="llama_index_memory", **sqlite(db))  # one store, two sessions
    mems = [GuardedMemory.from_defaults(session_id=sid, **SIZES, chat_store=shared, recovery_floor_span=2,
                                        on_refuse="spill", store=tmp_path / "spills") for sid in ("a", "b")]

    async def drive(mem: GuardedMemory, extra: int) -> None:
        for i, sizes in enumerate([*TURNS, *[[2]] * extra]):
            await mem.aput_messages(turn_messages(i, sizes))

    async def both() -> None:
        await shared.get_keys()  # create the table first: SQLAlchemyChatStore's setup is not concurrency-safe
        await asyncio.gather(drive(mems[0], 0), drive(mems[1], 3))

    asyncio.run(both())
    a, b = (m.guard for m in mems)
    assert a is not None and b is not None
    assert (a.ledger.history_end, b.ledger.history_end) == (sum(map(len, TURNS)), sum(map(len, TURNS)) + 3)
    inner = mems[0].sql_store.inner  # type: ignore[attr-defined]
    state = asyncio.run(inner.get_messages("a" + STATE_SUFFIX, status=None))
    asyncio.run(inner.set_messages("b" + STATE_SUFFIX, state))
    again = GuardedMemory.from_defaults(session_id="b", **SIZES, **sqlite(db), recovery_floor_span=2)
    with pytest.raises(AdapterError, match="holds the guard state of session 'a', not 'b'"):
        again.put_messages(turn_messages(50, [1]))


def test_the_suggested_boundary_is_the_buffers(tmp_path: Path) -> None:
    """check-config --suggest on llamaindex-chat-summary-llm.toml with a floor of 20 messages moves the
    budget to 160,000 tokens (20 turns of 8,000): on twenty 8,000-token turns and a 1-token one the
    guard refuses at 96,000 and at 159,999 (the floor leaves the kept turns), and not at 160,000."""
    import io as _io

    from tailguard.cli.main import main

    policy = tmp_path / "p.toml"
    text = (Path(__file__).resolve().parents[2] / "examples/presets/llamaindex-chat-summary-llm.toml").read_text()
    policy.write_text(text.replace("floor = 8", "floor = 20"))
    out = _io.StringIO()
    main(["check-config", "--suggest", str(policy)], stdout=out, stderr=_io.StringIO())
    assert "stage.0.keep 96000 -> 160000" in out.getvalue() and "stage.0.keep = 159999 is unsafe" in out.getvalue()
    trace = [8000] * 20 + [1]
    for limit, refused in ((96000, True), (159999, True), (160000, False)):
        buf = GuardedChatSummaryMemoryBuffer.from_defaults(llm=EchoLLM(), token_limit=limit, tokenizer_fn=str.split,
                                                           recovery_floor_span=20)
        try:
            for i, size in enumerate(trace):
                buf.put(turn_messages(i, [size])[0])
                buf.get()
        except UnrecoverableCompactionError as exc:
            assert refused and "floor_in_tail" in exc.failed, limit
        else:
            assert not refused, limit


def test_bad_construction_fails_closed_naming_why() -> None:
    with pytest.raises(AdapterError, match=r"build it with GuardedMemory.from_defaults"):
        GuardedMemory(token_limit=40).put(turn_messages(0, [1])[0])
    with pytest.raises(AdapterError, match=r"GuardedChatSummaryMemoryBuffer.from_defaults"):
        GuardedChatSummaryMemoryBuffer(token_limit=10).get()
    with pytest.raises(TypeError, match="recovery_floor_span= is required"):
        GuardedMemory.from_defaults(session_id="x")
    with pytest.raises(ValueError, match="floor_unit: llamaindex offsets can be 'messages'"):
        GuardedMemory.from_defaults(session_id="x", recovery_floor_span=1, floor_unit="tokens")
