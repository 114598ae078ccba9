"""langmem in production (issue 25 point 5): one ``GuardedSummarizationNode`` for many threads,
restarts over a checkpointer, concurrent threads, running summaries the guard did not make.

Driven offline with the installed langmem and LangGraph (a real ``StateGraph`` with the real
``SummarizationNode`` path, ``InMemorySaver`` and ``SqliteSaver``) and LangChain's own fake chat
model (``tests.adapters.fakes``). The oracle: every message carries a unique marker; the fake
summarizer writes back the markers it could read; a marker that no later context (the messages
langmem has not marked summarized), running summary or spill holds is lost. What plain langmem
would lose on the same input is computed by running plain langmem on it. Every refusal must be
one that loss requires, every allowed call must lose none, and every session's log must audit
clean to the refusals recorded live.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="install the frameworks extra (CI does)")

from langchain_core.messages import AnyMessage, BaseMessage, messages_from_dict
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langmem.short_term import SummarizationNode, summarize_messages

from tailguard.adapters import GuardOptions
from tailguard.adapters._guard import log_file_name
from tailguard.adapters._offsets import AdapterError
from tailguard.adapters._spill_tool import read_spill
from tailguard.adapters.langmem import (
    STATE_KEY,
    GuardedSummarizationNode,
    GuardedSummarizationResult,
    GuardedSummarizer,
)
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, SpillStore
from tests.adapters.fakes import audit_json, echo_model, human, marker_summarizer, markers, prompt_text

KNOBS: dict[str, Any] = {"max_tokens": 300, "max_tokens_before_summary": 250, "max_summary_tokens": 64}


class State(MessagesState):
    context: dict[str, Any]
    summarized_messages: list[AnyMessage]


def graph(node: Any, saver: BaseCheckpointSaver[Any] | None) -> Any:
    """langmem's documented shape: the node summarizes ``messages`` into ``summarized_messages``,
    the model answers; the full history stays in ``messages``."""
    model = echo_model()

    def call_model(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    g = StateGraph(State)
    g.add_node("summarize", node)
    g.add_node("call_model", call_model)
    g.add_edge(START, "summarize")
    g.add_edge("summarize", "call_model")
    return g.compile(checkpointer=saver)


def spilled_markers(store: SpillStore, session: str) -> set[str]:
    out: set[str] = set()
    for rec in store.list():
        if rec.session == session and rec.range is not None:
            doc = read_spill(store, rec.handle)
            assert doc["framework"] == "langmem"
            out |= markers(prompt_text(messages_from_dict([x["item"] for x in doc["items"]])))
    return out


def predicted_loss(messages: list[BaseMessage], running: Any, spilled: set[str]) -> set[str] | None:
    """What plain langmem's call on ``messages`` would lose (None: it would not summarize): the
    markers of the messages it newly marks summarized that its new summary does not hold (its
    summarizer writes back what it read) and no spill holds."""
    result = summarize_messages(messages, running_summary=running, model=marker_summarizer(), **KNOBS)
    new = result.running_summary
    if new is None or new is running:
        return None
    before = set(running.summarized_message_ids) if running is not None else set()
    marked = [m for m in messages if m.id in set(new.summarized_message_ids) - before]
    return markers(prompt_text(marked)) - markers(str(new.summary)) - spilled


def held_markers(values: dict[str, Any]) -> set[str]:
    """What a thread's later context can still reach: the running summary and the messages langmem
    has not marked summarized."""
    running = (values.get("context") or {}).get("running_summary")
    done = set(running.summarized_message_ids) if running is not None else set()
    live = [m for m in values.get("messages", []) if m.id not in done]
    return markers(prompt_text(live)) | (markers(str(running.summary)) if running is not None else set())


def log_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def audit_clean(path: Path, refusals: int) -> dict[str, Any]:
    code, report = audit_json(str(path))
    assert (code, report["violations"], report["refusals"]) == (0, 0, refusals), report
    return report


@dataclass
class Thread:
    name: str
    sent: set[str] = field(default_factory=set)
    refusals: int = 0
    compactions: int = 0
    halted: bool = False


@dataclass
class Scenario:
    """Turns on threads of a graph built anew at every restart, over one checkpointer store."""

    work: Path
    on_refuse: str
    saver_kind: str
    rng: random.Random
    restart_p: float = 0.0
    builds: int = 0
    _memory: InMemorySaver = field(default_factory=InMemorySaver)
    app: Any = None
    summarizer: GuardedSummarizer | None = None
    _conns: list[sqlite3.Connection] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.restarts = random.Random(self.rng.random())  # restart points apart from the inputs
        (self.work / "logs").mkdir(parents=True)
        self.store = FileSpillStore(self.work / "spills", create=True)
        self.restart()

    def saver(self) -> BaseCheckpointSaver[Any]:
        if self.saver_kind == "memory":
            return self._memory
        conn = sqlite3.connect(self.work / "checkpoints.db", check_same_thread=False)
        self._conns.append(conn)
        return SqliteSaver(conn)

    def restart(self) -> None:
        """A new process: a new summarizer (fresh caches), node, graph and checkpointer connection."""
        if self.summarizer is not None:
            self.summarizer.close()
        self.builds += 1
        opts = GuardOptions(recovery_floor_span=0, on_refuse=self.on_refuse,  # type: ignore[arg-type]
                            store=FileSpillStore(self.work / "spills"), log=self.work / "logs")
        self.summarizer = GuardedSummarizer(options=opts)
        node = GuardedSummarizationNode(guard=self.summarizer, model=marker_summarizer(), **KNOBS)
        self.app = graph(node, self.saver())

    def close(self) -> None:
        if self.summarizer is not None:
            self.summarizer.close()
        for c in self._conns:
            c.close()

    def log(self, thread: str) -> Path:
        return self.work / "logs" / log_file_name(thread)

    def _refusals(self, thread: str) -> int:
        path = self.log(thread)
        return sum(1 for e in log_events(path) if e["event"] == "refusal") if path.exists() else 0

    def turn(self, t: Thread, i: int) -> None:
        if self.restart_p and self.restarts.random() < self.restart_p:
            self.restart()
        config: Any = {"configurable": {"thread_id": t.name}}
        values = self.app.get_state(config).values
        msg = human(t.name, i, chars=self.rng.randrange(20, 220))
        running = (values.get("context") or {}).get("running_summary")
        loss = predicted_loss([*values.get("messages", []), msg], running, spilled_markers(self.store, t.name))
        before = self._refusals(t.name)
        try:
            result = self.app.invoke({"messages": [msg]}, config)
        except UnrecoverableCompactionError:
            assert self.on_refuse == "halt" and loss, "a refusal the spec does not require"
            t.refusals += 1
            t.halted = True
            return
        t.sent |= {f"MK{t.name}x{i:03d}", f"RMK{t.name}x{i:03d}"}
        refused = self._refusals(t.name) - before
        assert refused == (1 if loss else 0), (t.name, i, loss, refused)  # required, and only then
        t.refusals += refused
        held = held_markers(result) | spilled_markers(self.store, t.name)
        assert t.sent <= held, f"lost: {sorted(t.sent - held)}"
        state = result["context"][STATE_KEY]
        assert state["session"] == t.name and state["format"] == "tailguard.langmem"
        now = result["context"].get("running_summary")
        t.compactions += now is not None and now is not running

    def outcome(self, thread: str) -> tuple[list[dict[str, Any]], list[tuple[str, str]], Any, list[str]]:
        """The thread's log without ``resume`` lines, its messages, its running summary, its spills."""
        events = [e for e in log_events(self.log(thread)) if e["event"] != "resume"]
        values = self.app.get_state({"configurable": {"thread_id": thread}}).values
        running = values["context"].get("running_summary")
        summary = None if running is None else (running.summary, sorted(running.summarized_message_ids))
        msgs = [(str(m.id), str(m.content)) for m in values["messages"]]
        return events, msgs, summary, sorted(r.handle for r in self.store.list() if r.session == thread)


def run(work: Path, *, on_refuse: str, saver: str, seed: int, restart_p: float, threads: int = 3,
        turns: int = 26) -> tuple[Scenario, list[Thread]]:
    sc = Scenario(work, on_refuse, saver, random.Random(seed), restart_p)
    ts = [Thread(f"t{k}") for k in range(threads)]
    try:
        for i in range(turns):
            for t in ts:  # interleaved threads on one node
                if not t.halted:
                    sc.turn(t, i)
        for t in ts:
            audit_clean(sc.log(t.name), t.refusals)
    finally:
        sc.close()
    return sc, ts


# -- many threads on one node, restarts -------------------------------------------------------

@pytest.mark.parametrize("saver", ["sqlite", "memory"])
@pytest.mark.parametrize("on_refuse", ["spill", "defer"])
def test_restarts_at_random_points_continue_exactly(tmp_path: Path, saver: str, on_refuse: str) -> None:
    """Three threads through one node, then the same inputs with a new summarizer, node, graph and
    checkpointer connection before about a third of the turns: the same log lines (less the
    ``resume`` lines), messages, running summaries and spills; no marker lost."""
    plain, ts_a = run(tmp_path / "a", on_refuse=on_refuse, saver=saver, seed=7, restart_p=0.0)
    restarted, ts_b = run(tmp_path / "b", on_refuse=on_refuse, saver=saver, seed=7, restart_p=0.35)
    assert restarted.builds > 10
    for a, b in zip(ts_a, ts_b, strict=True):
        assert (a.refusals, a.compactions) == (b.refusals, b.compactions)
        assert a.refusals > 0 and a.compactions >= 2
        assert any(e["event"] == "resume" for e in log_events(restarted.log(b.name)))
    for t in ts_a:
        for sc in (plain, restarted):
            sc.restart()
        a_out, b_out = plain.outcome(t.name), restarted.outcome(t.name)
        assert a_out == b_out
        assert a_out[0][0]["session_id"] == t.name
        assert (len(a_out[3]) > 0) == (on_refuse == "spill")
    for sc in (plain, restarted):
        sc.close()


def test_halt_refuses_only_a_loss(tmp_path: Path) -> None:
    _, ts = run(tmp_path, on_refuse="halt", saver="sqlite", seed=3, restart_p=0.2, threads=2, turns=26)
    assert all(t.halted and t.compactions >= 1 for t in ts)


# -- the function API: the state in, the state out --------------------------------------------

def function_run(work: Path, *, fresh_each_call: bool) -> dict[str, list[dict[str, Any]]]:
    """Two sessions through ``summarize_messages(..., guard_state=...)``, the caller keeping each
    session's messages, running summary and guard state; a new summarizer per call or one."""
    store = FileSpillStore(work / "spills", create=True)
    opts = GuardOptions(recovery_floor_span=0, on_refuse="spill", store=store, log=work / "logs")
    (work / "logs").mkdir()
    one = GuardedSummarizer(options=opts)
    rng = random.Random(11)
    sessions: dict[str, dict[str, Any]] = {s: {"messages": [], "running": None, "state": None, "sent": set()}
                                           for s in ("ann", "ben")}
    for i in range(26):
        for name, s in sessions.items():
            guard = GuardedSummarizer(options=opts) if fresh_each_call else one
            s["messages"].append(human(name, i, chars=rng.randrange(20, 220)))
            s["sent"].add(f"MK{name}x{i:03d}")
            result = guard.summarize_messages(s["messages"], running_summary=s["running"], model=marker_summarizer(),
                                              guard_state=s["state"], session_id=name, **KNOBS)
            assert isinstance(result, GuardedSummarizationResult)
            assert all(h in {r.handle for r in store.list()} for _, h in result.spills)
            s["running"], s["state"] = result.running_summary, result.guard_state
            held = held_markers({"messages": s["messages"], "context": {"running_summary": s["running"]}})
            assert s["sent"] <= held | spilled_markers(store, name)
            if fresh_each_call:
                guard.close()
    one.close()
    out = {}
    for name in sessions:
        path = work / "logs" / log_file_name(name)
        events = log_events(path)
        audit_clean(path, sum(e["event"] == "refusal" for e in events))
        out[name] = [e for e in events if e["event"] != "resume"]
    return out


def test_the_function_api_carries_the_state(tmp_path: Path) -> None:
    a = function_run(tmp_path / "one", fresh_each_call=False)
    b = function_run(tmp_path / "fresh", fresh_each_call=True)
    assert a == b
    for events in a.values():
        assert sum(e["event"] == "refusal" for e in events) > 0 and sum(e["event"] == "compact" for e in events) >= 2
    assert sum(e["event"] == "resume" for e in log_events(tmp_path / "fresh" / "logs" / log_file_name("ann"))) > 20


def test_the_function_api_refuses_what_it_cannot_continue(tmp_path: Path) -> None:
    guard = GuardedSummarizer(recovery_floor_span=0, log=f"{tmp_path}/logs/")
    msgs = [human("x", i) for i in range(3)]
    first = guard.summarize_messages(msgs, running_summary=None, model=marker_summarizer(), guard_state=None,
                                     session_id="x", **KNOBS)
    state = first.guard_state
    with pytest.raises(AdapterError, match=r"not of 'y'.*a copied or forked thread"):
        guard.summarize_messages(msgs, running_summary=None, model=marker_summarizer(), guard_state=state,
                                 session_id="y", **KNOBS)
    with pytest.raises(AdapterError, match="a session is not started twice"):
        guard.summarize_messages(msgs, running_summary=None, model=marker_summarizer(), guard_state=None,
                                 session_id="x", **KNOBS)
    with pytest.raises(TypeError, match="session_id= goes with guard_state="):
        guard.summarize_messages(msgs, running_summary=None, model=marker_summarizer(), session_id="x", **KNOBS)
    again = guard.summarize_messages([*msgs, human("x", 3)], running_summary=None, model=marker_summarizer(),
                                     guard_state=state, session_id="x", **KNOBS)
    assert again.guard_state != state
    for process in (guard, GuardedSummarizer(recovery_floor_span=0, log=f"{tmp_path}/logs/")):
        with pytest.raises(AdapterError, match="The log has moved past that state"):  # an older state
            process.summarize_messages([*msgs, human("x", 3)], running_summary=None, model=marker_summarizer(),
                                       guard_state=state, session_id="x", **KNOBS)


# -- tampered, foreign, forked and reset state: fail closed -----------------------------------

def one_thread(tmp_path: Path, turns: int) -> tuple[Any, GuardedSummarizer, Any]:
    summarizer = GuardedSummarizer(recovery_floor_span=0, on_refuse="defer", log=f"{tmp_path}/logs/")
    app = graph(GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), **KNOBS), InMemorySaver())
    config: Any = {"configurable": {"thread_id": "u"}}
    for i in range(turns):
        app.invoke({"messages": [human("u", i)]}, config)
    return app, summarizer, config


def test_bad_state_is_a_clear_error(tmp_path: Path) -> None:
    app, summarizer, config = one_thread(tmp_path, 8)
    ctx = app.get_state(config).values["context"]
    assert ctx.get("running_summary") is not None
    good = ctx[STATE_KEY]

    def with_state(value: Any, thread: str = "u", **more: Any) -> None:
        cfg: Any = {"configurable": {"thread_id": thread}}
        app.update_state(cfg, {"context": {**ctx, STATE_KEY: value, **more}}, as_node="summarize")
        summarizer.close()  # as after a restart: the state alone decides
        app.invoke({"messages": [human(thread, 50)]}, cfg)

    tampered = json.loads(json.dumps(good))
    tampered["ledger"]["state"]["history_end"] = 1
    with pytest.raises(AdapterError, match="guard_state: the guard state does not match its integrity digest"):
        with_state(tampered)
    with pytest.raises(AdapterError, match="not a tailguard langmem guard state"):
        with_state({**good, "format": "tailguard.langchain"})
    with pytest.raises(AdapterError, match="guard state version 9"):
        with_state({**good, "version": 9})
    with pytest.raises(AdapterError, match="a copied or forked thread"):
        with_state(good, thread="copy")
    with pytest.raises(AdapterError, match="other than the one its guard state goes with"):
        with_state(good, running_summary=None)


# -- concurrency ------------------------------------------------------------------------------

def concurrent_graph(work: Path) -> tuple[Any, FileSpillStore]:
    store = FileSpillStore(work / "spills", create=True)
    summarizer = GuardedSummarizer(recovery_floor_span=0, on_refuse="spill", store=store, log=f"{work}/logs/")
    return graph(GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), **KNOBS),
                 InMemorySaver()), store


def thread_run(app: Any, store: SpillStore, name: str, turns: int) -> set[str]:
    config: Any = {"configurable": {"thread_id": name}}
    rng = random.Random(name)
    sent: set[str] = set()
    for i in range(turns):
        result = app.invoke({"messages": [human(name, i, chars=rng.randrange(20, 220))]}, config)
        sent |= {f"MK{name}x{i:03d}", f"RMK{name}x{i:03d}"}
    return sent - held_markers(result) - spilled_markers(store, name)


async def athread_run(app: Any, store: SpillStore, name: str, turns: int) -> set[str]:
    config: Any = {"configurable": {"thread_id": name}}
    rng = random.Random(name)
    sent: set[str] = set()
    for i in range(turns):
        result = await app.ainvoke({"messages": [human(name, i, chars=rng.randrange(20, 220))]}, config)
        sent |= {f"MK{name}x{i:03d}", f"RMK{name}x{i:03d}"}
    return sent - held_markers(result) - spilled_markers(store, name)


def test_concurrent_threads_of_one_node(tmp_path: Path) -> None:
    """Four threads through one node at once (OS threads, then asyncio tasks): each thread's log
    equals the log of the same thread run alone and audits clean; no marker is lost."""
    names = [f"c{k}" for k in range(4)]
    alone, alone_store = concurrent_graph(tmp_path / "alone")
    for n in names:
        assert thread_run(alone, alone_store, n, 24) == set()
    app, store = concurrent_graph(tmp_path / "threads")
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(lambda n: thread_run(app, store, n, 24), names)) == [set()] * 4
    aapp, astore = concurrent_graph(tmp_path / "tasks")

    async def all_tasks() -> list[set[str]]:
        return list(await asyncio.gather(*(athread_run(aapp, astore, n, 24) for n in names)))

    assert asyncio.run(all_tasks()) == [set()] * 4
    for n in names:
        expected = log_events(tmp_path / "alone" / "logs" / log_file_name(n))
        assert sum(e["event"] == "compact" for e in expected) >= 2 and expected[0]["session_id"] == n
        for work in ("threads", "tasks"):
            path = tmp_path / work / "logs" / log_file_name(n)
            assert log_events(path) == expected
            audit_clean(path, sum(e["event"] == "refusal" for e in expected))


# -- a running summary the guard did not make ---------------------------------------------------

def summarized_by_plain_langmem(saver: InMemorySaver, thread: str, turns: int) -> set[str]:
    app = graph(SummarizationNode(model=marker_summarizer(), **KNOBS), saver)
    config: Any = {"configurable": {"thread_id": thread}}
    for i in range(turns):
        app.invoke({"messages": [human(thread, i)]}, config)
    values = app.get_state(config).values
    assert values["context"].get("running_summary") is not None
    return held_markers(values)


@pytest.mark.parametrize("on_refuse", ["spill", "defer"])
def test_a_thread_langmem_summarized_is_adopted(tmp_path: Path, on_refuse: str) -> None:
    saver = InMemorySaver()
    sent = summarized_by_plain_langmem(saver, "old", 8)
    store = FileSpillStore(tmp_path / "spills", create=True)
    summarizer = GuardedSummarizer(recovery_floor_span=0, on_refuse=on_refuse, store=store,
                                   log=f"{tmp_path}/logs/")
    app = graph(GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), **KNOBS), saver)
    config: Any = {"configurable": {"thread_id": "old"}}
    adopted = len(app.get_state(config).values["context"]["running_summary"].summarized_message_ids)
    for i in range(8, 30):
        result = app.invoke({"messages": [human("old", i)]}, config)
        sent |= {f"MKoldx{i:03d}", f"RMKoldx{i:03d}"}
        assert sent <= held_markers(result) | spilled_markers(store, "old"), sorted(sent - held_markers(result))
    path = tmp_path / "logs" / log_file_name("old")
    events = log_events(path)
    assert (events[1]["event"], events[1]["range"]) == ("adopt", [0, adopted])
    assert "running summary" in events[1]["reason"]
    report = audit_clean(path, sum(e["event"] == "refusal" for e in events))
    assert report["unverified"] == [[0, adopted]]
    assert sum(e["event"] == "compact" for e in events) >= (2 if on_refuse == "spill" else 0)


def test_adoption_can_be_refused(tmp_path: Path) -> None:
    saver = InMemorySaver()
    summarized_by_plain_langmem(saver, "old", 8)
    summarizer = GuardedSummarizer(recovery_floor_span=0, log=f"{tmp_path}/logs/", on_unknown_history="refuse")
    app = graph(GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), **KNOBS), saver)
    with pytest.raises(AdapterError, match=r"a running summary the guard did not make .*on_unknown_history='refuse'"):
        app.invoke({"messages": [human("old", 8)]}, {"configurable": {"thread_id": "old"}})


def test_a_second_session_on_one_log_file_is_a_clear_error(tmp_path: Path) -> None:
    summarizer = GuardedSummarizer(recovery_floor_span=0, log=tmp_path / "one.jsonl")
    app = graph(GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), **KNOBS), InMemorySaver())
    app.invoke({"messages": [human("a", 0)]}, {"configurable": {"thread_id": "a"}})
    with pytest.raises(AdapterError, match="needs its own: give log= a directory or a function"):
        app.invoke({"messages": [human("b", 0)]}, {"configurable": {"thread_id": "b"}})


def test_two_calls_of_one_thread_never_interleave(tmp_path: Path) -> None:
    """Two calls of one thread at once: the second waits for the first (the session's lock), then
    finds the log moved past the state it read and refuses (it never writes beside the first)."""
    import threading

    from tests.adapters.fakes import MarkerSummarizer

    started = threading.Event()

    class Slow(MarkerSummarizer):
        def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
            started.set()
            threading.Event().wait(0.3)
            return super()._generate(messages, *args, **kwargs)

    summarizer = GuardedSummarizer(recovery_floor_span=0, on_refuse="defer", log=f"{tmp_path}/logs/")
    saver = InMemorySaver()
    app = graph(GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), **KNOBS), saver)
    config: Any = {"configurable": {"thread_id": "same"}}
    i = 0
    while predicted_loss([*app.get_state(config).values.get("messages", []), human("same", i)],
                         (app.get_state(config).values.get("context") or {}).get("running_summary"), set()) != set():
        app.invoke({"messages": [human("same", i)]}, config)
        i += 1
    slow = graph(GuardedSummarizationNode(guard=summarizer, model=Slow(messages=iter(()), calls=[]), **KNOBS), saver)
    errors: list[BaseException] = []

    def call(k: int) -> None:
        try:
            slow.invoke({"messages": [human("same", k)]}, config)
        except AdapterError as exc:
            errors.append(exc)

    first = threading.Thread(target=call, args=(i,))
    first.start()
    assert started.wait(5)
    call(i + 1)  # reads the same checkpoint while the first summarizes
    first.join()
    assert len(errors) == 1 and "moved past" in str(errors[0])
    path = tmp_path / "logs" / log_file_name("same")
    audit_clean(path, sum(e["event"] == "refusal" for e in log_events(path)))


def test_the_node_replacing_the_messages_and_a_graph_without_checkpointer(tmp_path: Path) -> None:
    """``output_messages_key="messages"`` (langmem replaces the history with its summary and the
    rest): no marker lost. No checkpointer: the client passes ``context`` back and the session
    continues from the state in it (one session, one log)."""
    import itertools

    from langchain_core.messages import AIMessage

    store = FileSpillStore(tmp_path / "spills", create=True)
    summarizer = GuardedSummarizer(recovery_floor_span=0, on_refuse="spill", store=store, log=f"{tmp_path}/l1/")
    node = GuardedSummarizationNode(guard=summarizer, model=marker_summarizer(), output_messages_key="messages",
                                    **KNOBS)
    count = itertools.count()

    def call_model(state: State) -> dict[str, Any]:  # the history may hold no human message now
        k = next(count)
        return {"messages": [AIMessage(content=f"RMKqx{k:03d} " + "a" * 100, id=f"ai-{k}")]}

    g = StateGraph(State)
    g.add_node("summarize", node)
    g.add_node("call_model", call_model)
    g.add_edge(START, "summarize")
    g.add_edge("summarize", "call_model")
    app = g.compile(checkpointer=InMemorySaver())
    rng = random.Random(2)
    sent: set[str] = set()
    for i in range(30):
        result = app.invoke({"messages": [human("q", i, chars=rng.randrange(20, 220))]},
                            {"configurable": {"thread_id": "q"}})
        sent |= {f"MKqx{i:03d}", f"RMKqx{i:03d}"}
        assert sent <= markers(prompt_text(result["messages"])) | spilled_markers(store, "q")
    events = log_events(tmp_path / "l1" / log_file_name("q"))
    assert sum(e["event"] == "compact" for e in events) >= 2 and sum(e["event"] == "refusal" for e in events) >= 1
    audit_clean(tmp_path / "l1" / log_file_name("q"), sum(e["event"] == "refusal" for e in events))

    stateless = GuardedSummarizer(recovery_floor_span=0, on_refuse="defer", log=f"{tmp_path}/l2/")
    app2 = graph(GuardedSummarizationNode(guard=stateless, model=marker_summarizer(), **KNOBS), None)
    msgs: list[BaseMessage] = []
    ctx: dict[str, Any] = {}
    for i in range(20):
        result = app2.invoke({"messages": [*msgs, human("z", i)], "context": ctx})
        msgs, ctx = result["messages"], result["context"]
    (log,) = (tmp_path / "l2").iterdir()
    assert ctx[STATE_KEY]["session"].startswith("session-") and log.name.endswith(ctx[STATE_KEY]["session"] + ".jsonl")
    events = log_events(log)
    assert sum(e["event"] == "compact" for e in events) >= 2
    audit_clean(log, sum(e["event"] == "refusal" for e in events))


def test_the_state_is_bounded_by_the_context(tmp_path: Path) -> None:
    """The thread's guard state holds the ledger snapshot, the offsets of the messages langmem has not
    marked summarized and a digest: its size does not grow with the turns (the full history does)."""
    sc = Scenario(tmp_path, "spill", "memory", random.Random(1))
    t = Thread("big")
    sizes = []
    try:
        for i in range(48):
            sc.turn(t, i)
            value = sc.app.get_state({"configurable": {"thread_id": "big"}}).values["context"][STATE_KEY]
            assert set(value) == {"format", "version", "session", "ledger", "tracker", "running_summary", "integrity"}
            assert len(value["tracker"]["units"]) <= 12
            ledger = json.loads(json.dumps(value["ledger"]))
            ledger["state"]["lost_coverage"] = []  # the runtime's diagnostics (as in the LangChain test)
            sizes.append(len(json.dumps({**value, "ledger": ledger})))
    finally:
        sc.close()
    assert t.compactions >= 6 and max(sizes[24:]) < 1.1 * max(sizes[:24])
