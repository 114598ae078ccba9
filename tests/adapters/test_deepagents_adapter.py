"""The deepagents adapter, driven through the real ``create_deep_agent`` offline.

deepagents, LangChain and LangGraph run as installed: ``create_deep_agent`` with its own
``FilesystemMiddleware`` (a real ``write_file`` tool over a real ``FilesystemBackend``), the
guarded middleware replacing the default by name, LangChain's ``GenericFakeChatModel`` as the
agent and as the summarizer, ``InMemorySaver`` or ``SqliteSaver``.

The oracle: every message carries a unique marker (``MK...`` in a human message, ``RMK...`` in
the agent's reply, ``WMK...`` at the end of a ``write_file`` argument, past the 20 characters
argument truncation keeps); the fake summarizer writes back every marker it was shown. A marker
is held while some later context (what the agent model was last called with, and its answer), a
summary, the offload files (``/conversation_history/*.md``) or a spill holds it; the files the
agent wrote are not counted (a later write may replace them). Unguarded, deepagents loses markers
two ways: argument truncation clips them (in the view the model, the summarizer and the offload
get), and a failed offload with a trimmed summarizer input leaves the trimmed part nowhere.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="install the frameworks extra (CI does)")

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import EditResult, WriteResult
from deepagents.middleware.summarization import (
    SUMMARIZATION_EVENT_KEY,
    SummarizationMiddleware,
    create_summarization_middleware,
)
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from tailguard.adapters import GuardOptions
from tailguard.adapters._guard import log_file_name
from tailguard.adapters.deepagents import (
    STATE_KEY,
    SUPPORTED,
    GuardedDeepAgentsSummarizationMiddleware,
    guarded_summarization_middleware,
    messages_from_spill,
)
from tailguard.base.intervals import normalize
from tailguard.base.vocab import NO_HOLE
from tailguard.pipeline.presets.deepagents import PRESET
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore
from tests.adapters.fakes import audit_json

MARKER = re.compile(r"\b[RW]?MK[0-9A-Za-z]+\b")
TRUNCATE = {"trigger": ("messages", 8), "keep": ("messages", 4), "max_length": 100}
WRITES = {2, 5, 9, 13, 17, 22, 26}  # the turns whose answer is a write_file call


def markers(text: str) -> set[str]:
    return set(MARKER.findall(text))


def text_of(messages: Sequence[BaseMessage]) -> str:
    parts = []
    for m in messages:
        parts.append(str(m.content))
        for c in getattr(m, "tool_calls", None) or []:
            parts.append(json.dumps(c.get("args"), sort_keys=True))
    return "\n".join(parts)


class Summarizer(GenericFakeChatModel):
    """The summarizer: its summary lists every marker its prompt holds."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        seen = sorted(markers(text_of(messages)))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="SUMMARY " + " ".join(seen)))])


class Agent(GenericFakeChatModel):
    """The agent: answers a human message ``MK...`` with ``RMK...``, or on a write turn with a
    ``write_file`` call whose content ends with ``WMK...``; answers the tool's result with ``RMK...``.
    Records the messages of its last call (the context the model saw)."""

    last: list[BaseMessage] = []  # noqa: RUF012 - pydantic field, replaced per instance

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.last[:] = list(messages)
        newest = messages[-1]
        if isinstance(newest, ToolMessage):
            mark = str(newest.tool_call_id).removeprefix("call-")
            reply = AIMessage(content=f"R{mark} written", id=f"ai-{mark}")
        else:
            mark = sorted(markers(str(newest.content)))[0]
            if "WRITE" in str(newest.content):
                args_ = {"file_path": f"/w/{mark}.txt", "content": "z" * 160 + f" W{mark}"}
                reply = AIMessage(content="", id=f"ai-w-{mark}",
                                  tool_calls=[{"name": "write_file", "args": args_, "id": f"call-{mark}"}])
            else:
                reply = AIMessage(content=f"R{mark} " + "a" * 60, id=f"ai-{mark}")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


class OffloadBackend(FilesystemBackend):
    """A real ``FilesystemBackend`` whose writes under ``/conversation_history`` fail while
    ``failing`` is set (the agent's own files are written)."""

    failing = False

    def write(self, file_path: str, *args: Any, **kwargs: Any) -> Any:
        if self.failing and file_path.startswith("/conversation_history"):
            return WriteResult(error="injected write failure")
        return super().write(file_path, *args, **kwargs)

    def edit(self, file_path: str, *args: Any, **kwargs: Any) -> Any:
        if self.failing and file_path.startswith("/conversation_history"):
            return EditResult(error="injected write failure")
        return super().edit(file_path, *args, **kwargs)


def human(thread: str, i: int) -> HumanMessage:
    mark = f"MK{thread}x{i:03d}"
    write = " WRITE" if i in WRITES else ""
    return HumanMessage(content=f"{mark}{write} " + "h" * (40 + (i * 37) % 90), id=f"h-{mark}")


def sent_by(thread: str, i: int) -> set[str]:
    mark = f"MK{thread}x{i:03d}"
    return {mark, f"R{mark}", *({f"W{mark}"} if i in WRITES else set())}


@dataclass
class Run:
    """One agent over a workspace: guarded (``on_refuse``) or deepagents' own (``None``)."""

    root: Path
    on_refuse: str | None
    truncate: bool = True
    trim: int | None = None
    failing: bool = False
    saver: str = "memory"
    agent_model: Agent = field(default_factory=lambda: Agent(messages=iter(()), last=[]))
    _memory: InMemorySaver = field(default_factory=InMemorySaver)
    _conns: list[sqlite3.Connection] = field(default_factory=list)
    mw: Any = None
    agent: Any = None

    def __post_init__(self) -> None:
        (self.root / "ws").mkdir(parents=True, exist_ok=True)
        (self.root / "logs").mkdir(exist_ok=True)
        self.store = FileSpillStore(self.root / "spills", create=True)
        self.backend = OffloadBackend(root_dir=self.root / "ws", virtual_mode=True)
        self.backend.failing = self.failing
        self.build()

    def knobs(self) -> dict[str, Any]:
        return {"trigger": ("messages", 12), "keep": ("messages", 4), "trim_tokens_to_summarize": self.trim,
                "truncate_args_settings": TRUNCATE if self.truncate else None}

    def build(self) -> None:
        """A new process: a new middleware, agent and checkpointer connection."""
        if self.mw is not None and self.on_refuse is not None:
            self.mw.close()
        summarizer = Summarizer(messages=iter(()))
        if self.on_refuse is None:
            self.mw = SummarizationMiddleware(summarizer, backend=self.backend, **self.knobs())
        else:
            opts = GuardOptions(recovery_floor_span=3, on_refuse=self.on_refuse,  # type: ignore[arg-type]
                                store=self.store, log=self.root / "logs")
            self.mw = GuardedDeepAgentsSummarizationMiddleware(summarizer, backend=self.backend, options=opts,
                                                               **self.knobs())
        if self.saver == "memory":
            saver: Any = self._memory
        else:
            conn = sqlite3.connect(self.root / "checkpoints.db", check_same_thread=False)
            self._conns.append(conn)
            saver = SqliteSaver(conn)
        self.agent = create_deep_agent(model=self.agent_model, backend=self.backend, middleware=[self.mw],
                                       checkpointer=saver)

    def close(self) -> None:
        if self.on_refuse is not None:
            self.mw.close()
        for c in self._conns:
            c.close()

    def config(self, thread: str) -> Any:
        return {"configurable": {"thread_id": thread}}

    def state(self, thread: str) -> dict[str, Any]:
        return dict(self.agent.get_state(self.config(thread)).values)

    def log(self, thread: str) -> Path:
        return self.root / "logs" / log_file_name(thread)

    def held(self, thread: str, result: dict[str, Any] | None = None) -> set[str]:
        """Every marker some later context, summary, offload file or spill holds."""
        out = markers(text_of(self.agent_model.last))
        if result is not None:
            out |= markers(text_of(result["messages"][-1:]))
        event = self.state(thread).get(SUMMARIZATION_EVENT_KEY)
        if event:
            out |= markers(str(event["summary_message"].content))
        for p in (self.root / "ws" / "conversation_history").glob("*.md"):
            out |= markers(p.read_text(encoding="utf-8"))
        for rec in self.store.list():
            if rec.session is not None and rec.session.startswith(thread) and rec.range is not None:
                out |= markers(text_of(messages_from_spill(self.store, rec.handle)))
        return out

    def turn(self, thread: str, i: int, *, run_async: bool = False) -> dict[str, Any]:
        msg = {"messages": [human(thread, i)]}
        if run_async:
            result: dict[str, Any] = asyncio.run(self.agent.ainvoke(msg, self.config(thread)))
        else:
            result = self.agent.invoke(msg, self.config(thread))
        return result


def refusal_lines(path: Path) -> int:
    return sum(json.loads(x)["event"] == "refusal" for x in path.read_text(encoding="utf-8").splitlines())


def audit_clean(path: Path, refusals: int) -> dict[str, Any]:
    code, report = audit_json(str(path))
    assert (code, report["violations"], report["refusals"]) == (0, 0, refusals), report
    return report


def assert_clip_refusal(run: Run, thread: str, lost: set[str]) -> None:
    """The log's last line is the refused clip: ``no_hole`` with the offsets of exactly the messages
    whose markers deepagents' own middleware lost (the ``write_file`` calls ``ai-w-MK...``), and a
    ``tail_start`` at the end of the newest of them."""
    line = json.loads(run.log(thread).read_text(encoding="utf-8").splitlines()[-1])
    guard = run.mw.session_guard(thread)
    assert guard is not None
    units = guard.tracker.units
    expected = normalize(units[f"ai-w-{m.removeprefix('W')}"] for m in lost)
    assert (line["event"], line["failed"]) == ("refusal", [NO_HOLE]), line
    assert [tuple(h) for h in line["holes"]] == expected, (line, lost)
    assert line["tail_start"] == expected[-1][1] and line["summary_input"] == [expected[-1][1]] * 2


def first_loss(run: Run, thread: str, turns: int) -> tuple[int | None, set[str]]:
    """The first turn after which deepagents' own middleware holds a sent marker nowhere."""
    sent: set[str] = set()
    for i in range(turns):
        result = run.turn(thread, i)
        sent |= sent_by(thread, i)
        lost = sent - run.held(thread, result)
        if lost:
            return i, lost
    return None, set()


CASES = [  # truncation, summarizer trim, failing offload
    pytest.param(True, None, False, id="truncation"),
    pytest.param(False, None, False, id="no-truncation"),
    pytest.param(False, 120, True, id="failing-offload-trimmed"),
    pytest.param(False, 120, False, id="offload-trimmed"),
]


@pytest.mark.parametrize(("truncate", "trim", "failing"), CASES)
def test_halt_refuses_exactly_where_deepagents_loses(tmp_path: Path, truncate: bool, trim: int | None,
                                                     failing: bool) -> None:
    """The same inputs through deepagents' own middleware and the guarded one (``halt``): the
    guard raises at the first turn where deepagents first holds a marker nowhere, and never before;
    the refused turn leaves the thread's state as it was; the log audits clean."""
    turns = 30
    plain = Run(tmp_path / "plain", None, truncate=truncate, trim=trim, failing=failing)
    loss_at, lost = first_loss(plain, "t", turns)
    plain.close()
    guarded = Run(tmp_path / "guarded", "halt", truncate=truncate, trim=trim, failing=failing)
    halted_at = None
    refused_by_log = 0
    try:
        for i in range(turns):
            before = guarded.state("t")
            try:
                guarded.turn("t", i)
            except UnrecoverableCompactionError as exc:
                halted_at = i
                after = guarded.state("t")
                assert after.get(SUMMARIZATION_EVENT_KEY) == before.get(SUMMARIZATION_EVENT_KEY)
                assert after.get(STATE_KEY) == before.get(STATE_KEY)
                clip = "argument truncation" in str(exc)
                assert clip == truncate, exc
                refused_by_log = 1  # a refused clip is a refusal line, like a refused compaction
                if clip:
                    assert_clip_refusal(guarded, "t", lost)
                break
        assert halted_at == loss_at, (halted_at, loss_at, lost)
        if truncate or failing:
            assert loss_at is not None and lost, "the scenario must make deepagents lose a marker"
            if truncate:
                assert all(m.startswith("WMK") for m in lost), lost
        else:
            assert loss_at is None
        audit_clean(guarded.log("t"), refused_by_log)
        assert refusal_lines(guarded.log("t")) == refused_by_log
    finally:
        guarded.close()


@pytest.mark.parametrize("on_refuse", ["defer", "spill"])
@pytest.mark.parametrize(("truncate", "trim", "failing"), CASES[:3])
def test_interleaved_threads_lose_nothing(tmp_path: Path, on_refuse: str, truncate: bool, trim: int | None,
                                          failing: bool) -> None:
    """Three threads round-robin through one guarded agent: after every turn every sent marker is
    held; each thread has its own session and log, which audits clean to the refusals its ledger
    recorded live. With truncation on, deepagents' own middleware loses ``WMK`` markers on the same
    inputs, so a guard that ignored argument truncation fails here."""
    turns, threads = 24, ["a", "b", "c"]
    if truncate or failing:
        plain = Run(tmp_path / "plain", None, truncate=truncate, trim=trim, failing=failing)
        assert first_loss(plain, "a", turns)[0] is not None
        plain.close()
    run = Run(tmp_path / "guarded", on_refuse, truncate=truncate, trim=trim, failing=failing)
    sent: dict[str, set[str]] = {t: set() for t in threads}
    try:
        for i in range(turns):
            for t in threads:
                result = run.turn(t, i)
                sent[t] |= sent_by(t, i)
                lost = sent[t] - run.held(t, result)
                assert not lost, (t, i, sorted(lost))
        compactions = 0
        for t in threads:
            state = run.state(t)
            assert state[STATE_KEY]["session"] == t
            guard = run.mw.session_guard(t)
            assert guard is not None
            audit_clean(run.log(t), guard.ledger.refusals)
            if truncate:  # the clips deepagents would lose are refusal lines (then spilled or left unclipped)
                lines = [json.loads(x) for x in run.log(t).read_text(encoding="utf-8").splitlines()]
                assert any(e["event"] == "refusal" and e["failed"] == [NO_HOLE] and e["holes"] for e in lines)
            compactions += len(guard.ledger.summaries) > 0
            if on_refuse == "spill":
                assert state.get(SUMMARIZATION_EVENT_KEY), "spill compacts"
        assert compactions == len(threads) or on_refuse == "defer"
    finally:
        run.close()


def _outcome(run: Run, thread: str) -> tuple[list[dict[str, Any]], list[tuple[str, str]], set[str]]:
    events = []
    for line in run.log(thread).read_text(encoding="utf-8").splitlines():
        e = json.loads(line)
        if e["event"] == "resume":
            continue
        e.pop("handle", None)  # message ids of tool results and offload file names are random
        events.append(e)
    msgs = [(m.type, text_of([m])) for m in run.state(thread)["messages"]]
    return events, msgs, run.held(thread)


@pytest.mark.parametrize("on_refuse", ["spill", "defer"])
def test_sqlite_restart_continues_exactly(tmp_path: Path, on_refuse: str) -> None:
    """A new middleware, agent and SQLite connection every 4 turns continues each thread from the
    state its checkpoint holds: the same log (less ``resume`` lines), messages and held markers as
    a run that never restarted; the log audits clean."""
    turns, threads = 20, ["x", "y"]
    runs = {k: Run(tmp_path / k, on_refuse, truncate=True, trim=120, saver="sqlite") for k in ("plain", "restarted")}
    try:
        for i in range(turns):
            if i and i % 4 == 0:
                runs["restarted"].build()
            for t in threads:
                for r in runs.values():
                    r.turn(t, i)
        for t in threads:
            a, b = _outcome(runs["plain"], t), _outcome(runs["restarted"], t)
            assert a == b
            resumes = [x for x in runs["restarted"].log(t).read_text().splitlines() if '"resume"' in x]
            assert len(resumes) >= 4
            events = [json.loads(x) for x in runs["restarted"].log(t).read_text().splitlines()]
            audit_clean(runs["restarted"].log(t), sum(e["event"] == "refusal" for e in events))
            assert any(e["event"] == "compact" for e in events)
    finally:
        for r in runs.values():
            r.close()


def test_async_agent_decides_as_the_sync_one(tmp_path: Path) -> None:
    """``ainvoke`` (``awrap_model_call``) writes the same log as ``invoke`` on the same inputs."""
    sync, asyn = Run(tmp_path / "s", "spill", trim=120), Run(tmp_path / "a", "spill", trim=120)
    try:
        for i in range(16):
            sync.turn("t", i)
            asyn.turn("t", i, run_async=True)
        assert _outcome(sync, "t")[0] == _outcome(asyn, "t")[0]
        assert any(e["event"] == "compact" for e in _outcome(asyn, "t")[0])
    finally:
        sync.close()
        asyn.close()


def test_a_failed_offload_is_no_spill(tmp_path: Path) -> None:
    """With the offload failing, the guard records no offload spill; with it working, it records the
    offload's file as the spill of what it wrote whole."""
    for failing in (True, False):
        run = Run(tmp_path / str(failing), "defer", truncate=False, trim=120, failing=failing)
        try:
            for i in range(16):
                run.turn("t", i)
            spills = [json.loads(x) for x in run.log("t").read_text().splitlines() if '"spill"' in x]
            offload = [s for s in spills if str(s.get("handle", "")).startswith("deepagents-offload:")]
            assert bool(offload) is not failing
            assert refusal_lines(run.log("t")) > 0 if failing else refusal_lines(run.log("t")) == 0
        finally:
            run.close()


def test_factory_mirrors_create_summarization_middleware(tmp_path: Path) -> None:
    """``guarded_summarization_middleware(model, backend)`` has deepagents' factory defaults
    (trigger, keep, argument truncation on, no trim) and the name that replaces the default."""
    backend = FilesystemBackend(root_dir=tmp_path, virtual_mode=True)
    model = Summarizer(messages=iter(()))
    ours = guarded_summarization_middleware(model, backend, recovery_floor_span=2)
    theirs = create_summarization_middleware(model, backend)
    for attr in ("_truncate_args_trigger", "_truncate_args_keep", "_max_arg_length", "_truncation_text"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert ours._truncate_args_trigger is not None
    for attr in ("trigger", "keep", "trim_tokens_to_summarize"):
        assert getattr(ours._lc_helper, attr) == getattr(theirs._lc_helper, attr), attr
    assert ours.name == theirs.name == "SummarizationMiddleware"
    off = guarded_summarization_middleware(model, backend, recovery_floor_span=2, truncate_args_settings=None)
    assert off._truncate_args_trigger is None
    with pytest.raises(TypeError):
        guarded_summarization_middleware(model, backend)  # recovery_floor_span is required
    assert PRESET.validated_on == SUPPORTED


# -- subagents -------------------------------------------------------------------------------

SUB_CALLS = 14  # write_file calls a subagent makes before it answers: enough for three compactions


class Delegating(GenericFakeChatModel):
    """The main agent and its subagent in one fake model. A call whose first human message holds
    ``TASK`` is the subagent's: its first ``SUB_CALLS`` calls answer with a ``write_file`` call
    (``RMKS..`` in the text, ``WMKS..`` past the 20 characters argument truncation keeps), then
    ``RMKSFIN``. Otherwise it is the main agent's: a human message gets a ``task`` call for
    ``subagent_type`` (the description holds ``MKTASK``), the task's result ``RMKMAIN``.
    ``sub_last`` is the context of the subagent's last call."""

    subagent_type: str = "worker"
    sub_last: list[BaseMessage] = []  # noqa: RUF012 - pydantic field, replaced per instance
    sub_calls: list[int] = []  # noqa: RUF012 - pydantic field, replaced per instance

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        first = next((m for m in messages if isinstance(m, HumanMessage) and "TASK" in str(m.content)), None)
        if first is not None and not any(isinstance(m, ToolMessage) and m.tool_call_id == "call-task"
                                         for m in messages):
            self.sub_last[:] = list(messages)
            n = len(self.sub_calls)
            self.sub_calls.append(n)
            if n >= SUB_CALLS:
                reply = AIMessage(content="done RMKSFIN", id="ai-sub-fin")
            else:
                mark = f"S{n:02d}"
                args_ = {"file_path": f"/s/{mark}.txt", "content": "z" * 160 + f" WMK{mark}"}
                reply = AIMessage(content=f"RMK{mark} " + "b" * 40, id=f"ai-w-MK{mark}",
                                  tool_calls=[{"name": "write_file", "args": args_, "id": f"call-{mark}"}])
        elif isinstance(messages[-1], ToolMessage):
            reply = AIMessage(content="RMKMAIN delegated", id="ai-main-done")
        else:
            call = {"name": "task", "id": "call-task",
                    "args": {"description": "MKTASK write the files", "subagent_type": self.subagent_type}}
            reply = AIMessage(content="", id="ai-main-task", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


SUB_SENT = {"MKTASK", "RMKSFIN", *(f"{p}MKS{n:02d}" for n in range(SUB_CALLS) for p in ("R", "W"))}


def run_subagent(root: Path, kind: str, on_refuse: str | None) -> tuple[Any, Any, set[str]]:
    """One delegation through ``create_deep_agent(subagents=...)``: ``kind`` ``own`` (a declarative
    subagent whose spec lists the summarization middleware), ``bare`` (a declarative subagent with
    no middleware of its own), ``fork`` (``mode="fork"``) or ``general-purpose`` (deepagents' own
    subagent). The summarization middleware is the guarded one (``on_refuse``) or deepagents' own
    (``None``), the same knobs as :class:`Run`'s, in the main agent's ``middleware=`` (and the
    ``own`` spec's). Returns the middleware, the store and the markers the run holds afterwards."""
    (root / "ws").mkdir(parents=True)
    (root / "logs").mkdir()
    store = FileSpillStore(root / "spills", create=True)
    backend = FilesystemBackend(root_dir=root / "ws", virtual_mode=True)
    knobs: dict[str, Any] = {"trigger": ("messages", 12), "keep": ("messages", 4), "trim_tokens_to_summarize": None,
                             "truncate_args_settings": TRUNCATE}
    summarizer = Summarizer(messages=iter(()))
    if on_refuse is None:
        mw: Any = SummarizationMiddleware(summarizer, backend=backend, **knobs)
    else:
        opts = GuardOptions(recovery_floor_span=3, on_refuse=on_refuse,  # type: ignore[arg-type]
                            store=store, log=root / "logs")
        mw = GuardedDeepAgentsSummarizationMiddleware(summarizer, backend=backend, options=opts, **knobs)
    model = Delegating(messages=iter(()), sub_last=[], sub_calls=[],
                       subagent_type="general-purpose" if kind == "general-purpose" else "worker")
    spec: dict[str, Any] = {"name": "worker", "description": "writes files", "system_prompt": "write", "model": model}
    if kind == "own":
        spec["middleware"] = [mw]
    elif kind == "fork":
        spec["mode"] = "fork"
    agent = create_deep_agent(model=model, backend=backend, middleware=[mw], checkpointer=InMemorySaver(),
                              subagents=[] if kind == "general-purpose" else [spec])  # type: ignore[list-item]
    result = agent.invoke({"messages": [HumanMessage("MKH000 delegate", id="h-main")]},
                          {"configurable": {"thread_id": "t"}})
    assert len(model.sub_calls) == SUB_CALLS + 1, "the subagent ran to its answer"
    held = markers(text_of(model.sub_last)) | markers(text_of(result["messages"]))
    for p in (root / "ws" / "conversation_history").glob("*.md"):
        held |= markers(p.read_text(encoding="utf-8"))
    for rec in store.list():
        if rec.range is not None:
            held |= markers(text_of(messages_from_spill(store, rec.handle)))
    return mw, store, held


def subagent_logs(root: Path) -> list[Path]:
    """The logs of the sessions of subagent calls (named ``<thread>|<checkpoint namespace>``)."""
    out = []
    for p in sorted((root / "logs").glob("*.jsonl")):
        session = json.loads(p.read_text(encoding="utf-8").splitlines()[0]).get("session_id")
        if str(session).startswith("t|"):
            out.append(p)
    return out


@pytest.mark.parametrize("kind", ["own", "fork", "general-purpose"])
def test_deepagents_own_summarization_loses_subagent_markers(tmp_path: Path, kind: str) -> None:
    """Unguarded, the subagent's argument truncation loses ``WMKS..`` markers: the scenario of the
    test below can fail."""
    _, _, held = run_subagent(tmp_path, kind, None)
    lost = SUB_SENT - held
    assert lost and all(m.startswith("WMKS") for m in lost), sorted(lost)


@pytest.mark.parametrize("on_refuse", ["spill", "defer"])
@pytest.mark.parametrize("kind", ["own", "fork", "general-purpose"])
def test_subagent_summarization_is_guarded(tmp_path: Path, kind: str, on_refuse: str) -> None:
    """The guarded middleware reaches a subagent's summarization when the subagent's stack holds
    it: a declarative subagent that lists it in its spec's ``middleware``, a fork (which inherits
    the parent's middleware) and the general-purpose subagent (which inherits a middleware named
    like one of its default slots). The subagent's calls are a session of their own (a log named
    by the thread and the task's namespace) that compacts, refuses the clips that would lose
    markers and audits clean; no marker the subagent was sent or wrote is lost."""
    mw, _, held = run_subagent(tmp_path, kind, on_refuse)
    try:
        assert not SUB_SENT - held, sorted(SUB_SENT - held)
        (log,) = subagent_logs(tmp_path)
        events = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
        sid = events[0]["session_id"]
        guard = mw.session_guard(sid)
        assert guard is not None and guard.ledger.refusals > 0
        audit_clean(log, guard.ledger.refusals)
        assert sum(e["event"] == "compact" for e in events) >= 2
        assert any(e["event"] == "refusal" and e["failed"] == [NO_HOLE] for e in events)
    finally:
        mw.close()


def test_a_declarative_subagent_without_the_guard_is_not_guarded(tmp_path: Path) -> None:
    """Documented: ``create_deep_agent`` gives a declarative subagent (no ``mode="fork"``) its own
    ``create_summarization_middleware(model, backend)``; the main agent's ``middleware=`` does not
    replace it. The guarded middleware then never sees the subagent's calls: no session, no log
    of it; only the main thread's. (deepagents' default knobs for a model without a profile do
    not compact these few messages, so nothing is lost here either; the guard just is not there.)"""
    mw, _, held = run_subagent(tmp_path, "bare", "halt")
    try:
        assert subagent_logs(tmp_path) == []
        sessions = [json.loads(p.read_text(encoding="utf-8").splitlines()[0]).get("session_id")
                    for p in (tmp_path / "logs").glob("*.jsonl")]
        assert sessions == ["t"]
        assert not SUB_SENT - held
    finally:
        mw.close()


class Compacting(GenericFakeChatModel):
    """An agent that calls ``compact_conversation`` when a human message says ``COMPACT``."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        newest = messages[-1]
        if isinstance(newest, HumanMessage) and "COMPACT" in str(newest.content):
            reply = AIMessage(content="", tool_calls=[{"name": "compact_conversation", "args": {}, "id": "call-c"}])
        else:
            reply = AIMessage(content="R" + sorted(markers(text_of([newest])) or {"none"})[0] + " " + "a" * 60)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def test_compact_conversation_is_not_guarded_and_the_thread_then_fails_closed(tmp_path: Path) -> None:
    """Documented: deepagents' ``compact_conversation`` tool (``SummarizationToolMiddleware``
    around the guarded middleware) compacts in the tools node, through the wrapped middleware's own
    methods, and writes a ``_summarization_event`` the guard never decided. The next model call
    meets a summary the guard did not make in a session it recorded: ``AdapterError``, on that
    turn and every later one; the guard's log holds no compaction."""
    from deepagents.middleware.summarization import SummarizationToolMiddleware

    from tailguard.adapters._offsets import AdapterError

    (tmp_path / "ws").mkdir()
    backend = FilesystemBackend(root_dir=tmp_path / "ws", virtual_mode=True)
    mw = GuardedDeepAgentsSummarizationMiddleware(
        Summarizer(messages=iter(())), backend=backend, trigger=("messages", 12), keep=("messages", 4),
        trim_tokens_to_summarize=None, options=GuardOptions(recovery_floor_span=2, log=f"{tmp_path / 'logs'}/"))
    agent = create_deep_agent(model=Compacting(messages=iter(())), backend=backend, checkpointer=InMemorySaver(),
                              middleware=[mw, SummarizationToolMiddleware(mw)])
    config: Any = {"configurable": {"thread_id": "t"}}
    try:
        for i in range(5):
            agent.invoke({"messages": [HumanMessage(f"MKc{i:03d} " + "h" * 60)]}, config)
        with pytest.raises(AdapterError, match="summary the guard did not make"):
            agent.invoke({"messages": [HumanMessage("MKc005 COMPACT")]}, config)
        assert agent.get_state(config).values.get(SUMMARIZATION_EVENT_KEY), "the tool compacted"
        with pytest.raises(AdapterError, match="summary the guard did not make"):
            agent.invoke({"messages": [HumanMessage("MKc006 " + "h" * 60)]}, config)
        events = [json.loads(x)["event"] for x in (tmp_path / "logs" / log_file_name("t")).read_text().splitlines()]
        assert "compact" not in events
    finally:
        mw.close()
