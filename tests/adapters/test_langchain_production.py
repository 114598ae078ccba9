"""LangChain in production (issue 25): many threads, restarts, no checkpointer, threads LangChain
compacted before the guard came, concurrent threads.

Driven offline with the installed LangChain and LangGraph (``create_agent``, ``InMemorySaver``,
``SqliteSaver``) and LangChain's own fake chat model (``tests.adapters.fakes``). The oracle:
every message carries a unique marker; the fake summarizer writes back the markers it could read;
a marker that no later context, summary or spill holds is lost. Every refusal must be one the
spec requires (the compaction would lose a marker), every allowed compaction must lose none, and
every session's log must audit clean to the decisions recorded live.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="install the frameworks extra (CI does)")

from langchain.agents import create_agent
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.messages import BaseMessage, HumanMessage, messages_from_dict, messages_to_dict
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tailguard.adapters import GuardOptions
from tailguard.adapters._guard import log_file_name
from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.langchain import STATE_KEY, GuardedSummarizationMiddleware, messages_from_spill
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, SpillStore
from tests.adapters.fakes import (
    audit_json,
    echo_model,
    human,
    lookup_tool,
    marker_summarizer,
    markers,
    prompt_text,
    tool_calling_model,
)

KNOBS: dict[str, Any] = {"trigger": ("messages", 10), "keep": ("messages", 4), "trim_tokens_to_summarize": 250}


def text_of(messages: list[BaseMessage]) -> str:
    return prompt_text(messages)


def spilled_markers(store: SpillStore, session: str) -> set[str]:
    out: set[str] = set()
    for rec in store.list():
        if rec.session == session and rec.range is not None:
            out |= markers(text_of(messages_from_spill(store, rec.handle)))
    return out


def predicted_loss(messages: list[BaseMessage], spilled: set[str]) -> set[str] | None:
    return predicted_loss_with(KNOBS, messages, spilled)


def predicted_loss_with(knobs: dict[str, Any], messages: list[BaseMessage], spilled: set[str]) -> set[str] | None:
    """What the plain middleware's compaction of ``messages`` would lose (None: no compaction):
    markers of what it deletes, less what its summarizer is shown whole (the trimmer cuts a long
    message part-way, keeping its last lines: what a summarizer reads of a cut message is not the
    message, SPEC.md section 4b) and what is already spilled."""
    base = SummarizationMiddleware(marker_summarizer(), **knobs)
    if not base._should_summarize(messages, base.token_counter(messages)):
        return None
    cutoff = base._determine_cutoff_index(messages)
    if cutoff <= 0:
        return None
    to_summarize = messages[:cutoff]
    shown = [t for t in base._trim_messages_for_summary(to_summarize) if any(t == m for m in to_summarize)]
    return markers(text_of(to_summarize)) - markers(text_of(shown)) - spilled


def log_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class Thread:
    """One thread of a scenario as the oracle follows it."""

    name: str
    sent: set[str] = field(default_factory=set)
    refusals: int = 0
    compactions: int = 0
    halted: bool = False


@dataclass
class Scenario:
    """Turns on threads of agents built anew at every restart, over one checkpointer store."""

    work: Path
    on_refuse: str
    saver_kind: str
    rng: random.Random
    restart_p: float = 0.0
    builds: int = 0
    _memory: InMemorySaver = field(default_factory=InMemorySaver)
    agent: Any = None
    mw: GuardedSummarizationMiddleware | None = None
    _conns: list[sqlite3.Connection] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.restarts = random.Random(self.rng.random())  # restart points apart from the inputs
        (self.work / "logs").mkdir(parents=True)
        self.store = FileSpillStore(self.work / "spills", create=True)
        self.restart()

    def saver(self) -> BaseCheckpointSaver[Any]:
        if self.saver_kind == "memory":
            return self._memory  # the same store; the middleware and its caches are new
        conn = sqlite3.connect(self.work / "checkpoints.db", check_same_thread=False)
        self._conns.append(conn)
        return SqliteSaver(conn)

    def restart(self) -> None:
        """A new process: a new middleware (fresh caches), agent and checkpointer connection."""
        if self.mw is not None:
            self.mw.close()
        self.builds += 1
        opts = GuardOptions(recovery_floor_span=3, on_refuse=self.on_refuse,  # type: ignore[arg-type]
                            store=FileSpillStore(self.work / "spills"), log=self.work / "logs")
        self.mw = GuardedSummarizationMiddleware(marker_summarizer(), options=opts, **KNOBS)
        self.agent = create_agent(echo_model(), tools=[], middleware=[self.mw], checkpointer=self.saver())

    def close(self) -> None:
        if self.mw is not None:
            self.mw.close()
        for c in self._conns:
            c.close()

    def log(self, thread: str) -> Path:
        return self.work / "logs" / log_file_name(thread)

    def turn(self, t: Thread, i: int) -> None:
        if self.restart_p and self.restarts.random() < self.restart_p:
            self.restart()
        config: Any = {"configurable": {"thread_id": t.name}}
        before = list(self.agent.get_state(config).values.get("messages", []))
        msg = human(t.name, i, chars=self.rng.randrange(20, 220))
        loss = predicted_loss([*before, msg], spilled_markers(self.store, t.name))
        refusals_before = self._refusals(t.name)
        try:
            result = self.agent.invoke({"messages": [msg]}, config)
        except UnrecoverableCompactionError:
            assert self.on_refuse == "halt" and loss, "a refusal the spec does not require"
            t.refusals += 1
            t.halted = True
            return
        t.sent |= {f"MK{t.name}x{i:03d}", f"RMK{t.name}x{i:03d}"}
        refused = self._refusals(t.name) - refusals_before
        assert refused == (1 if loss else 0), (t.name, i, loss, refused)  # required, and only then
        t.refusals += refused
        held = markers(text_of(result["messages"])) | spilled_markers(self.store, t.name)
        assert t.sent <= held, f"lost: {sorted(t.sent - held)}"
        compacted = any(m.id and str(m.id).startswith("tailguard-summary-") for m in result["messages"]) and \
            loss is not None and (not loss or self.on_refuse == "spill")
        t.compactions += compacted
        assert STATE_KEY not in result  # the guard's key is neither input nor output

    def _refusals(self, thread: str) -> int:
        path = self.log(thread)
        return sum(1 for e in log_events(path) if e["event"] == "refusal") if path.exists() else 0

    def outcome(self, thread: str) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]], list[str]]:
        """The thread's log without ``resume`` lines, its messages, and its spill handles."""
        events = [e for e in log_events(self.log(thread)) if e["event"] != "resume"]
        config: Any = {"configurable": {"thread_id": thread}}
        msgs = [(m.type, str(m.id), str(m.content)) for m in self.agent.get_state(config).values["messages"]]
        handles = sorted(r.handle for r in self.store.list() if r.session == thread)
        return events, msgs, handles


def audit_clean(path: Path, refusals: int) -> dict[str, Any]:
    code, report = audit_json(str(path))
    assert (code, report["violations"], report["refusals"]) == (0, 0, refusals), report
    return report


def run(work: Path, *, on_refuse: str, saver: str, seed: int, restart_p: float, threads: int = 3,
        turns: int = 24) -> tuple[Scenario, list[Thread]]:
    sc = Scenario(work, on_refuse, saver, random.Random(seed), restart_p)
    ts = [Thread(f"t{k}") for k in range(threads)]
    try:
        for i in range(turns):
            for t in ts:
                if not t.halted:
                    sc.turn(t, i)
        for t in ts:
            audit_clean(sc.log(t.name), t.refusals)
    finally:
        sc.close()
    return sc, ts


# -- 1 and 2: many threads, restarts --------------------------------------------------------

@pytest.mark.parametrize("saver", ["sqlite", "memory"])
@pytest.mark.parametrize("on_refuse", ["spill", "defer"])
def test_restarts_at_random_points_continue_exactly(tmp_path: Path, saver: str, on_refuse: str) -> None:
    """Three threads, 24 turns each, through one middleware; the same inputs again with a new
    middleware, agent and checkpointer connection before about a third of the turns: the same
    log lines (less the ``resume`` lines), messages and spills, and no marker lost."""
    plain, ts_a = run(tmp_path / "a", on_refuse=on_refuse, saver=saver, seed=7, restart_p=0.0)
    restarted, ts_b = run(tmp_path / "b", on_refuse=on_refuse, saver=saver, seed=7, restart_p=0.35)
    assert restarted.builds > 10
    for a, b in zip(ts_a, ts_b, strict=True):
        assert (a.refusals, a.compactions) == (b.refusals, b.compactions)
        assert a.refusals > 0 and (a.compactions > 2 if on_refuse == "spill" else True)
        resumes = [e for e in log_events(restarted.log(b.name)) if e["event"] == "resume"]
        assert resumes, "the restarted run continued no session from its state"
    for t in ts_a:
        for sc in (plain, restarted):
            sc.restart()
        a_events, a_msgs, a_handles = plain.outcome(t.name)
        b_events, b_msgs, b_handles = restarted.outcome(t.name)
        assert a_events == b_events and a_msgs == b_msgs and a_handles == b_handles
        assert a_events[0]["session_id"] == t.name
    for sc in (plain, restarted):
        sc.close()


def test_halt_refuses_only_a_loss_and_keeps_the_thread(tmp_path: Path) -> None:
    _, ts = run(tmp_path, on_refuse="halt", saver="sqlite", seed=3, restart_p=0.0, threads=2, turns=12)
    assert all(t.halted for t in ts)


def test_the_state_key_is_bounded_by_the_context(tmp_path: Path) -> None:
    """The thread's guard state holds the ledger snapshot, the offsets of the messages in the context
    and one spill index handle: its size does not grow with the turns."""
    sc = Scenario(tmp_path, "spill", "memory", random.Random(1))
    t = Thread("big")
    sizes = []
    try:
        for i in range(40):
            sc.turn(t, i)
            value = sc.agent.get_state({"configurable": {"thread_id": "big"}}).values[STATE_KEY]
            assert set(value) == {"format", "version", "session", "ledger", "tracker", "serial", "spill_index",
                                  "integrity"}
            assert len(value["tracker"]["units"]) <= 12  # the messages in the context
            assert isinstance(value["spill_index"], (str, type(None)))  # one handle
            ledger = json.loads(json.dumps(value["ledger"]))
            ledger["state"]["lost_coverage"] = []  # the runtime's diagnostics: see below
            sizes.append(len(json.dumps({**value, "ledger": ledger})))
    finally:
        sc.close()
    assert t.compactions >= 10 and max(sizes[20:]) < 1.05 * max(sizes[:20])


def test_the_ledger_snapshot_is_bounded_too(tmp_path: Path) -> None:
    sc = Scenario(tmp_path, "spill", "memory", random.Random(1))
    t = Thread("big")
    sizes = []
    try:
        for i in range(40):
            sc.turn(t, i)
            sizes.append(len(json.dumps(sc.agent.get_state({"configurable": {"thread_id": "big"}})
                                        .values[STATE_KEY]["ledger"])))
    finally:
        sc.close()
    assert max(sizes[20:]) < 1.05 * max(sizes[:20])


# -- 3: no persistent state -----------------------------------------------------------------

def resend(messages: list[BaseMessage], keep_ids: bool = False) -> list[BaseMessage]:
    """What a stateless client re-sends: the messages as it received them, as JSON, without their
    ids (or with them, ``keep_ids``)."""
    dicts = json.loads(json.dumps(messages_to_dict(messages)))
    for d in dicts:
        if not keep_ids:
            d["data"]["id"] = None
    return list(messages_from_dict(dicts))


@pytest.mark.parametrize("keep_ids", [False, True], ids=["without-ids", "with-ids"])
def test_no_checkpointer_two_users_never_share_state(tmp_path: Path, keep_ids: bool) -> None:
    """No checkpointer: each client re-sends its history as JSON, without ids (or with them). The
    guard identifies messages by content and carries its state in the newest summary it wrote;
    two users through one middleware keep apart sessions, and nothing is lost."""
    store = FileSpillStore(tmp_path / "spills", create=True)
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse="spill",
                                        store=store, log=f"{tmp_path}/logs/", **KNOBS)
    agent = create_agent(echo_model(), tools=[], middleware=[mw])  # no checkpointer
    rng = random.Random(5)
    histories: dict[str, list[BaseMessage]] = {"alice": [], "bob": []}
    sent: dict[str, set[str]] = {"alice": set(), "bob": set()}
    compactions = 0
    for i in range(24):
        for user, history in histories.items():
            request = [*resend(history, keep_ids), human(user, i, chars=rng.randrange(20, 220), with_id=keep_ids)]
            result = agent.invoke({"messages": request})
            histories[user] = result["messages"]
            sent[user] |= {f"MK{user}x{i:03d}", f"RMK{user}x{i:03d}"}
            compactions += result["messages"][0].additional_kwargs.get("tailguard", {}).get("summary") is not None \
                and len(result["messages"]) < len(request)
    sessions: dict[str, str] = {}
    for user, history in histories.items():
        meta = history[0].additional_kwargs["tailguard"]
        sid = meta["state"]["session"]
        sessions[user] = sid
        held = markers(text_of(history)) | spilled_markers(store, sid)
        assert sent[user] <= held, sorted(sent[user] - held)
        other = "bob" if user == "alice" else "alice"
        assert not (markers(text_of(history)) & sent[other])  # never mixed
        events = log_events(tmp_path / "logs" / log_file_name(sid))
        assert events[0]["session_id"] == sid and sum(e["event"] == "compact" for e in events) >= 3
        audit_clean(tmp_path / "logs" / log_file_name(sid), sum(e["event"] == "refusal" for e in events))
    assert sessions["alice"] != sessions["bob"] and compactions >= 6
    # a request before a conversation's first compaction starts a session with nowhere to live on
    # (no guard summary carries it); recording only appends, it is dropped with its log
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == sorted(log_file_name(s) for s in sessions.values())

    # a restart: a new middleware continues alice from the state her history carries
    mw2 = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse="spill",
                                         store=store, log=f"{tmp_path}/logs/", **KNOBS)
    agent2 = create_agent(echo_model(), tools=[], middleware=[mw2])
    for i in range(24, 30):
        histories["alice"] = agent2.invoke({"messages": [*resend(histories["alice"], keep_ids),
                                                         human("alice", i, with_id=keep_ids)]})["messages"]
        sent["alice"] |= {f"MKalicex{i:03d}", f"RMKalicex{i:03d}"}
    sid = histories["alice"][0].additional_kwargs["tailguard"]["state"]["session"]
    events = log_events(tmp_path / "logs" / log_file_name(sid))
    assert sid == sessions["alice"] and sum(e["event"] == "resume" for e in events) >= 1
    assert sent["alice"] <= markers(text_of(histories["alice"])) | spilled_markers(store, sid)
    audit_clean(tmp_path / "logs" / log_file_name(sid), sum(e["event"] == "refusal" for e in events))

    # refusals the guard must give: it never guesses
    alice = histories["alice"]
    stripped = resend(alice, keep_ids)
    del stripped[0].additional_kwargs["tailguard"]["state"]
    with pytest.raises(AdapterError, match="not the guard state it carried"):
        agent.invoke({"messages": [*stripped, human("alice", 90, with_id=keep_ids)]})
    edited = resend(alice, keep_ids)
    del edited[2]
    with pytest.raises(AdapterError, match="does not match the guard state its summary carries"):
        agent.invoke({"messages": [*edited, human("alice", 91, with_id=keep_ids)]})
    mixed = [*resend(alice, keep_ids)[:1], *resend(histories["bob"], keep_ids)[1:]]
    with pytest.raises(AdapterError, match="does not match the guard state"):
        agent.invoke({"messages": [*mixed, human("bob", 92, with_id=keep_ids)]})
    agent.invoke({"messages": [*resend(alice, keep_ids), human("alice", 93, with_id=keep_ids)]})
    with pytest.raises(AdapterError, match="The log has moved past that state"):  # an older copy
        agent.invoke({"messages": [*resend(alice, keep_ids), human("alice", 94, with_id=keep_ids)]})


def test_stateless_requests_before_a_first_compaction_leave_no_log(tmp_path: Path) -> None:
    """One log file for a stateless API: a request that records only appends is taken back, so
    the next user's request is not refused as a second session on the file."""
    log = tmp_path / "one.jsonl"
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, log=log,
                                        **{**KNOBS, "trim_tokens_to_summarize": None})
    agent = create_agent(echo_model(), tools=[], middleware=[mw])
    for user in ("ann", "ben", "cyd"):
        agent.invoke({"messages": [human(user, 0, with_id=False)]})
        assert log.read_text(encoding="utf-8") == ""
    history: list[BaseMessage] = []
    for i in range(12):  # the first compaction binds the file to ann's session
        history = agent.invoke({"messages": [*resend(history), human("ann", i, with_id=False)]})["messages"]
    assert log_events(log)[0]["session_id"].startswith("stateless-")
    with pytest.raises(AdapterError, match="needs its own"):
        agent.invoke({"messages": [human("ben", 1, with_id=False)]})


# -- tool-calling agents: the model runs twice per turn ---------------------------------------

TOOL_KNOBS: dict[str, Any] = {"trigger": ("tokens", 1500), "keep": ("messages", 5), "trim_tokens_to_summarize": 600}


@pytest.mark.parametrize("keep_ids", [False, True], ids=["without-ids", "with-ids"])
def test_a_stateless_tool_calling_agent(tmp_path: Path, keep_ids: bool) -> None:
    """No checkpointer, a tool call in every turn: the guard's ``before_model`` runs twice per
    request, the second time after the first dropped its append-only session (it crashed on the
    vanished log before). Two users, nothing lost, every log audits clean."""
    store = FileSpillStore(tmp_path / "spills", create=True)
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse="spill",
                                        store=store, log=f"{tmp_path}/logs/", **TOOL_KNOBS)
    agent = create_agent(tool_calling_model(), tools=[lookup_tool()], middleware=[mw])
    rng = random.Random(7)
    histories: dict[str, list[BaseMessage]] = {"alice": [], "bob": []}
    sent: dict[str, set[str]] = {"alice": set(), "bob": set()}
    for i in range(16):
        for user in histories:
            request = [*resend(histories[user], keep_ids), human(user, i, chars=rng.randrange(20, 300),
                                                                  with_id=keep_ids)]
            histories[user] = agent.invoke({"messages": request})["messages"]
            mark = f"MK{user}x{i:03d}"
            sent[user] |= {mark, f"{mark}t", f"R{mark}t"}
    for user, history in histories.items():
        sid = history[0].additional_kwargs["tailguard"]["state"]["session"]
        held = markers(text_of(history)) | spilled_markers(store, sid)
        assert sent[user] <= held, sorted(sent[user] - held)
        path = tmp_path / "logs" / log_file_name(sid)
        report = audit_clean(path, sum(e["event"] == "refusal" for e in log_events(path)))
        assert len(report["compactions"]) >= 2


@pytest.mark.parametrize("on_refuse", ["spill", "halt"])
def test_tool_calling_threads_under_sqlite_restarts(tmp_path: Path, on_refuse: str) -> None:
    """Two interleaved threads of a tool-calling agent under ``SqliteSaver``, a new middleware at
    random points: with spill nothing is lost and the logs audit clean; with halt the first
    refusal is a loss the plain middleware would make (the trim hides candidates)."""
    store = FileSpillStore(tmp_path / "spills", create=True)
    conns: list[sqlite3.Connection] = []

    def build() -> Any:
        conns.append(sqlite3.connect(tmp_path / "checkpoints.db", check_same_thread=False))
        mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse=on_refuse,
                                            store=store, log=f"{tmp_path}/logs/", **TOOL_KNOBS)
        return create_agent(tool_calling_model(), tools=[lookup_tool()], middleware=[mw],
                            checkpointer=SqliteSaver(conns[-1]))

    rng = random.Random(11)
    agent = build()
    sent: dict[str, set[str]] = {"alice": set(), "bob": set()}
    try:
        for i in range(14):
            for thread in sent:
                if rng.random() < 0.2:
                    agent = build()
                config: Any = {"configurable": {"thread_id": thread}}
                turn = human(thread, i, chars=rng.randrange(20, 300))
                if on_refuse == "halt":
                    try:
                        agent.invoke({"messages": [turn]}, config)
                    except UnrecoverableCompactionError:
                        # the refusal is right: plain LangChain's compaction of what the refused
                        # call saw (the checkpoint it failed on) loses a marker
                        seen = agent.get_state(config).values["messages"]
                        assert predicted_loss_with(TOOL_KNOBS, seen, set()), "refused a compaction that loses nothing"
                        return
                else:
                    agent.invoke({"messages": [turn]}, config)
                mark = f"MK{thread}x{i:03d}"
                sent[thread] |= {mark, f"{mark}t", f"R{mark}t"}
        assert on_refuse == "spill", "halt never refused, yet the trim hides candidates"
        for thread in sent:
            held = markers(text_of(agent.get_state({"configurable": {"thread_id": thread}}).values["messages"]))
            held |= spilled_markers(store, thread)
            assert sent[thread] <= held, sorted(sent[thread] - held)
            path = tmp_path / "logs" / log_file_name(thread)
            audit_clean(path, sum(e["event"] == "refusal" for e in log_events(path)))
    finally:
        for conn in conns:
            conn.close()


# -- 4: adoption ----------------------------------------------------------------------------

def compacted_by_plain_langchain(saver: InMemorySaver, thread: str) -> set[str]:
    """A thread that plain ``SummarizationMiddleware`` compacted; the markers it still holds."""
    agent = create_agent(echo_model(), tools=[], checkpointer=saver,
                         middleware=[SummarizationMiddleware(marker_summarizer(), **KNOBS)])
    config: Any = {"configurable": {"thread_id": thread}}
    for i in range(8):
        agent.invoke({"messages": [human(thread, i)]}, config)
    held = agent.get_state(config).values["messages"]
    assert held[0].additional_kwargs.get("lc_source") == "summarization"
    return markers(text_of(held))


@pytest.mark.parametrize("on_refuse", ["spill", "defer"])
def test_a_thread_langchain_compacted_is_adopted(tmp_path: Path, on_refuse: str) -> None:
    saver = InMemorySaver()
    baseline = compacted_by_plain_langchain(saver, "old")
    store = FileSpillStore(tmp_path / "spills", create=True)
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse=on_refuse,
                                        store=store, log=f"{tmp_path}/logs/", **KNOBS)
    agent = create_agent(echo_model(), tools=[], middleware=[mw], checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "old"}}
    sent = set(baseline)
    for i in range(8, 30):
        result = agent.invoke({"messages": [human("old", i)]}, config)
        sent |= {f"MKoldx{i:03d}", f"RMKoldx{i:03d}"}
        held = markers(text_of(result["messages"])) | spilled_markers(store, "old")
        assert sent <= held, sorted(sent - held)
    path = tmp_path / "logs" / log_file_name("old")
    events = log_events(path)
    assert (events[1]["event"], events[1]["range"]) == ("adopt", [0, 1])
    assert mw.session_guard("old").ledger.unverified == ((0, 1),)  # type: ignore[union-attr]
    report = audit_clean(path, sum(e["event"] == "refusal" for e in events))
    assert len(report["compactions"]) >= (4 if on_refuse == "spill" else 0)


def test_adoption_can_be_refused(tmp_path: Path) -> None:
    saver = InMemorySaver()
    compacted_by_plain_langchain(saver, "old")
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, log=f"{tmp_path}/logs/",
                                        on_unknown_history="refuse", **KNOBS)
    agent = create_agent(echo_model(), tools=[], middleware=[mw], checkpointer=saver)
    with pytest.raises(AdapterError, match=r"a summary the guard did not make .*on_unknown_history='refuse'"):
        agent.invoke({"messages": [human("old", 8)]}, {"configurable": {"thread_id": "old"}})


# -- 5: concurrency -------------------------------------------------------------------------

def one_agent(work: Path) -> tuple[Any, GuardedSummarizationMiddleware, FileSpillStore]:
    store = FileSpillStore(work / "spills", create=True)
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse="spill",
                                        store=store, log=f"{work}/logs/", **KNOBS)
    return create_agent(echo_model(), tools=[], middleware=[mw], checkpointer=InMemorySaver()), mw, store


def thread_run(agent: Any, store: SpillStore, name: str, turns: int, stream: bool = False) -> set[str]:
    """One thread's turns through ``invoke`` (or ``stream``: the graph's state after each step,
    the last being the turn's result); the markers it lost."""
    config: Any = {"configurable": {"thread_id": name}}
    rng = random.Random(name)
    sent: set[str] = set()
    result: dict[str, Any] = {}
    for i in range(turns):
        turn = {"messages": [human(name, i, chars=rng.randrange(20, 220))]}
        if stream:
            for chunk in agent.stream(turn, config, stream_mode="values"):
                result = chunk
        else:
            result = agent.invoke(turn, config)
        sent |= {f"MK{name}x{i:03d}", f"RMK{name}x{i:03d}"}
    held = markers(text_of(result["messages"])) | spilled_markers(store, name)
    return sent - held


async def athread_run(agent: Any, store: SpillStore, name: str, turns: int, stream: bool = False) -> set[str]:
    """``thread_run`` through ``ainvoke`` (or ``astream``)."""
    config: Any = {"configurable": {"thread_id": name}}
    rng = random.Random(name)
    sent: set[str] = set()
    result: dict[str, Any] = {}
    for i in range(turns):
        turn = {"messages": [human(name, i, chars=rng.randrange(20, 220))]}
        if stream:
            async for chunk in agent.astream(turn, config, stream_mode="values"):
                result = chunk
        else:
            result = await agent.ainvoke(turn, config)
        sent |= {f"MK{name}x{i:03d}", f"RMK{name}x{i:03d}"}
    held = markers(text_of(result["messages"])) | spilled_markers(store, name)
    return sent - held


def logs_without_resume(work: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in log_events(work / "logs" / log_file_name(name)) if e["event"] != "resume"]


@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
def test_concurrent_threads_of_one_agent(tmp_path: Path, stream: bool) -> None:
    """Four threads through one compiled agent at once (OS threads, then asyncio tasks), through
    ``invoke``/``ainvoke`` or ``stream``/``astream``: each thread's log audits clean and equals
    the log of the same thread run alone through ``invoke``; no marker is lost."""
    names = [f"c{k}" for k in range(4)]
    alone, _, alone_store = one_agent(tmp_path / "alone")
    for n in names:
        assert thread_run(alone, alone_store, n, 20) == set()
    agent, _, store = one_agent(tmp_path / "threads")
    with ThreadPoolExecutor(4) as pool:
        lost = list(pool.map(lambda n: thread_run(agent, store, n, 20, stream=stream), names))
    assert lost == [set()] * 4
    aagent, _, astore = one_agent(tmp_path / "tasks")

    async def all_tasks() -> list[set[str]]:
        return list(await asyncio.gather(*(athread_run(aagent, astore, n, 20, stream=stream) for n in names)))

    assert asyncio.run(all_tasks()) == [set()] * 4
    for n in names:
        expected = logs_without_resume(tmp_path / "alone", n)
        assert sum(e["event"] == "compact" for e in expected) >= 3
        for work in ("threads", "tasks"):
            assert logs_without_resume(tmp_path / work, n) == expected
            events = log_events(tmp_path / work / "logs" / log_file_name(n))
            audit_clean(tmp_path / work / "logs" / log_file_name(n), sum(e["event"] == "refusal" for e in events))


@contextmanager
def slow_summaries(mw: GuardedSummarizationMiddleware, started: threading.Event) -> Iterator[None]:
    original: Callable[..., str] = mw._create_summary

    def slow(messages: Any) -> str:
        started.set()
        threading.Event().wait(0.3)
        return original(messages)

    mw._create_summary = slow  # type: ignore[method-assign]
    try:
        yield
    finally:
        mw._create_summary = original  # type: ignore[method-assign]


def test_two_compactions_of_one_session_never_interleave(tmp_path: Path) -> None:
    """Two calls of one thread at once: the second waits for the first, then finds the thread's
    log moved past the state it read and refuses (it never writes beside the first)."""
    agent, mw, _ = one_agent(tmp_path)
    config: Any = {"configurable": {"thread_id": "same"}}
    i = 0
    while predicted_loss([*agent.get_state(config).values.get("messages", []), human("same", i)], set()) is None:
        agent.invoke({"messages": [human("same", i)]}, config)
        i += 1
    started = threading.Event()
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            agent.invoke({"messages": [human("same", i)]}, config)
        except AdapterError as exc:
            errors.append(exc)

    with slow_summaries(mw, started):
        first = threading.Thread(target=call, args=(i,))
        first.start()
        assert started.wait(5)
        call(i + 1)  # reads the same checkpoint while the first compacts
        first.join()
    assert len(errors) == 1 and "moved past" in str(errors[0])
    events = log_events(tmp_path / "logs" / log_file_name("same"))
    audit_clean(tmp_path / "logs" / log_file_name("same"), sum(e["event"] == "refusal" for e in events))


def test_many_threads_log_per_session_and_state_per_thread(tmp_path: Path) -> None:
    opts = GuardOptions(recovery_floor_span=3, log=lambda sid: tmp_path / f"{sid}.jsonl")
    mw = GuardedSummarizationMiddleware(marker_summarizer(), options=opts, cache_size=2,
                                        **{**KNOBS, "trim_tokens_to_summarize": None})
    agent = create_agent(echo_model(), tools=[], middleware=[mw], checkpointer=InMemorySaver())
    for i in range(12):
        for k in range(5):  # more threads than the cache holds: evicted guards are restored
            agent.invoke({"messages": [human(f"u{k}", i)]}, {"configurable": {"thread_id": f"u{k}"}})
    for k in range(5):
        events = log_events(tmp_path / f"u{k}.jsonl")
        assert events[0]["session_id"] == f"u{k}" and any(e["event"] == "resume" for e in events)
        report = audit_clean(tmp_path / f"u{k}.jsonl", 0)
        assert len(report["compactions"]) >= 2
    assert sum(mw.session_guard(f"u{k}") is not None for k in range(5)) == 2
    forked = agent.get_state({"configurable": {"thread_id": "u0"}}).values
    agent.update_state({"configurable": {"thread_id": "copy"}}, {"messages": forked["messages"],
                                                                 STATE_KEY: forked[STATE_KEY]},
                       as_node="GuardedSummarizationMiddleware.before_model")
    with pytest.raises(AdapterError, match="a copied or forked thread"):
        agent.invoke({"messages": [human("copy", 0)]}, {"configurable": {"thread_id": "copy"}})


def test_a_second_session_on_one_log_file_is_a_clear_error(tmp_path: Path) -> None:
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, log=tmp_path / "one.jsonl",
                                        **KNOBS)
    agent = create_agent(echo_model(), tools=[], middleware=[mw], checkpointer=InMemorySaver())
    agent.invoke({"messages": [human("a", 0)]}, {"configurable": {"thread_id": "a"}})
    agent.invoke({"messages": [human("a", 1)]}, {"configurable": {"thread_id": "a"}})
    with pytest.raises(AdapterError, match="needs its own: give log= a directory or a function"):
        agent.invoke({"messages": [HumanMessage(content="MKbx000", id="b0")]}, {"configurable": {"thread_id": "b"}})
