"""The OpenHands SDK adapter (``GuardedCondenser``) on the real SDK, offline.

The SDK's own ``LLMSummarizingCondenser`` condenses the view of a real, persisted
``ConversationState`` (``ConversationState.create`` over a directory; events appended with
``append_event``, the view read from ``state.view``, as the agent loop does); its summarizer is
the SDK's ``TestLLM`` answering with the markers it could read in its prompt. Every event's text
ends with a unique marker, so an event the SDK shows cut (past ``N_CHAR_PREVIEW``) loses its
marker. The marker oracle: a marker in no event of the final view, no summary and no spill is
lost. CI runs this file in ``.venvs/py3.12-openhands`` (``.ci/versions``).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

if sys.version_info < (3, 12):
    pytest.skip("openhands-sdk requires Python >= 3.12 (pip on 3.11 finds no version); CI runs this "
                "file in .venvs/py3.12-openhands (.ci/versions)", allow_module_level=True)

from tests.presets.harness import REQUIRE

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
if not REQUIRE:  # CI (TAILGUARD_REQUIRE_FRAMEWORKS=1): a missing SDK fails, never skips
    pytest.importorskip("openhands.sdk", reason="install the openhands extra (Python >= 3.12)")

from openhands.sdk import Agent
from openhands.sdk.context.condenser import LLMSummarizingCondenser, PipelineCondenser
from openhands.sdk.context.condenser.base import CondenserBase
from openhands.sdk.conversation.state import ConversationState
from openhands.sdk.event import Condensation, MessageEvent, SystemPromptEvent
from openhands.sdk.event.base import Event as SdkEvent, LLMConvertibleEvent
from openhands.sdk.llm import Message, TextContent
from openhands.sdk.testing import TestLLM
from openhands.sdk.workspace import LocalWorkspace

from tailguard.adapters import openhands as oh_adapter
from tailguard.adapters._guard import STEPS, log_file_name
from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.openhands import STATE_KEY, GuardedAgent, GuardedCondenser, bind, events_from_spill
from tailguard.pipeline.presets.openhands import PRESET
from tailguard.runtime.seed_api import UnrecoverableCompactionError

ROOT = Path(__file__).resolve().parents[2]
MARK = re.compile(r"<M\d+>")


class MarkerLLM(TestLLM):
    """The SDK's ``TestLLM``: the summary is every marker its prompt holds."""

    __test__ = False

    def answer(self, messages: list[Message]) -> None:
        prompt = "\n".join(c.text for m in messages for c in m.content if isinstance(c, TextContent))
        marks = sorted(set(MARK.findall(prompt)), key=lambda m: int(m[2:-1]))
        self._scripted_responses.append(Message(role="assistant", content=[TextContent(text="S " + " ".join(marks))]))

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        self.answer(messages)
        return super().completion(messages, *args, **kwargs)

    async def acompletion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        self.answer(messages)
        return await super().acompletion(messages, *args, **kwargs)


def summarizer(max_size: int = 10, keep_first: int = 2) -> LLMSummarizingCondenser:
    return LLMSummarizingCondenser(llm=MarkerLLM(model="test-model", usage_id="condenser"), max_size=max_size,
                                   keep_first=keep_first)


def text(i: int, size: int) -> str:
    """``size`` characters, the marker last (a cut event loses it)."""
    mark = f" <M{i}>"
    return "x" * (size - len(mark)) + mark


def eid(i: int) -> str:
    """Event ids the same in every run (the SDK's file store wants UUIDs)."""
    return str(uuid.UUID(int=i + 1))


def event(i: int, size: int) -> SdkEvent:
    if i == 0:
        return SystemPromptEvent(id=eid(i), source="agent", system_prompt=TextContent(text=text(i, size)), tools=[])
    role = "user" if i % 2 else "assistant"
    return MessageEvent(id=eid(i), source="user" if role == "user" else "agent",
                        llm_message=Message(role=role, content=[TextContent(text=text(i, size))]))


def new_state(root: Path, cid: uuid.UUID | None = None) -> ConversationState:
    agent = Agent(llm=TestLLM(model="test-model", usage_id="agent"), tools=[])
    return ConversationState.create(id=cid or uuid.uuid4(), agent=agent,
                                    workspace=LocalWorkspace(working_dir=str(root)),
                                    persistence_dir=str(root / "conversation"))


def reopen(state: ConversationState, root: Path) -> ConversationState:
    """The conversation as a restarted process loads it from its persistence directory."""
    return ConversationState.create(id=state.id, agent=None, workspace=LocalWorkspace(working_dir=str(root)),
                                    persistence_dir=str(root / "conversation"))


@dataclass
class Run:
    state: ConversationState
    condenser: CondenserBase
    summaries: list[str] = field(default_factory=list)
    decisions: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def step(self, i: int, size: int) -> None:
        self.add(event(i, size))

    asynchronous: bool = False

    def add(self, ev: SdkEvent) -> None:
        """Append ``ev``, then condense the view as the agent does (the condensation, if any,
        enters the event log)."""
        self.state.append_event(ev)
        with bind(self.state):
            result = (asyncio.run(self.condenser.acondense(self.state.view)) if self.asynchronous
                      else self.condenser.condense(self.state.view))
        if isinstance(result, Condensation):  # a summary's id is the random id of its condensation
            forgotten = ("summary" if x.endswith("-summary") else x for x in result.forgotten_event_ids)
            self.decisions.append((ev.id, tuple(sorted(forgotten))))
            if result.summary:
                self.summaries.append(result.summary)
            self.state.append_event(result)

    def lost(self, count: int, spilled: str = "") -> set[str]:
        messages = LLMConvertibleEvent.events_to_messages(self.state.view.events)
        view = "\n".join([c.text for m in messages for c in m.content if isinstance(c, TextContent)]
                         + [t.arguments for m in messages for t in m.tool_calls or []])
        held = set(MARK.findall(view + "\n".join(self.summaries) + spilled))
        return {f"<M{i}>" for i in range(count)} - held


SIZES = [100] * 30
SIZES[5] = 600  # past N_CHAR_PREVIEW: the summarizer sees it cut, its marker lost


def guarded(tmp: Path, **kw: Any) -> GuardedCondenser:
    return GuardedCondenser(**{"inner": summarizer(), "log": str(tmp / "logs") + "/", **kw})


def audit_json(path: Path) -> tuple[int, dict[str, Any]]:
    from tailguard.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", "--format", "json", "--profile", "partitioned", str(path)], stdout=out, stderr=err)
    assert err.getvalue() == "", err.getvalue()
    return code, json.loads(out.getvalue())


def log_of(tmp: Path) -> Path:
    logs = list((tmp / "logs").iterdir())
    assert len(logs) == 1, logs
    return logs[0]


# -- the loss, and the guard refusing or spilling it ----------------------------------------

def test_unguarded_the_sdk_loses_a_long_events_marker(tmp_path: Path) -> None:
    run = Run(new_state(tmp_path), summarizer())
    for i, size in enumerate(SIZES):
        run.step(i, size)
    assert len(run.decisions) >= 3
    assert run.lost(len(SIZES)) == {"<M5>"}


def test_guarded_halt_refuses_exactly_there_naming_the_range(tmp_path: Path) -> None:
    run = Run(new_state(tmp_path), guarded(tmp_path))
    with pytest.raises(UnrecoverableCompactionError) as err:
        for i, size in enumerate(SIZES):
            run.step(i, size)
    # the first condensation (event 10: 11 events > max_size 10) forgets events 2..8, offsets
    # 0..6 (the system prompt and the first user event are pinned); event 5 (offset 3) is shown
    # cut, so the summary's input is [4, 7) and offsets [0, 4) are the hole
    assert run.decisions == []
    assert "[0, 4)" in str(err.value), str(err.value)
    assert not any(isinstance(e, Condensation) for e in run.state.events)  # nothing entered the log
    line = json.loads(log_of(tmp_path).read_text().splitlines()[-1])
    assert line["event"] == "refusal" and line["holes"] == [[0, 4]], line
    value = run.state.agent_state[STATE_KEY]
    assert value["session"] == str(run.state.id)


def tool_call(i: int) -> list[SdkEvent]:
    """A tool call whose marker is in its arguments (the SDK's ``think`` tool) and its result."""
    from openhands.sdk.event import ActionEvent, ObservationEvent
    from openhands.sdk.llm import MessageToolCall
    from openhands.sdk.tool.builtins.think import ThinkAction, ThinkObservation

    thought = f"write the file <M{i}>"
    call = MessageToolCall(id=f"call-{i}", name="think", arguments=json.dumps({"thought": thought}),
                           origin="completion")
    action = ActionEvent(id=eid(i), thought=[TextContent(text="thinking")], action=ThinkAction(thought=thought),
                         tool_name="think", tool_call_id=call.id, tool_call=call, llm_response_id=f"response-{i}")
    return [action, ObservationEvent(id=eid(1000 + i), observation=ThinkObservation(), action_id=action.id,
                                     tool_name="think", tool_call_id=call.id)]


def tool_session(run: Run) -> None:
    for i in range(30):
        for ev in tool_call(i) if i == 4 else [event(i, 100)]:
            run.add(ev)


def test_a_tool_calls_arguments_are_lost_unguarded_refused_or_spilled_guarded(tmp_path: Path) -> None:
    """The summarizer is shown an action without its arguments: the SDK loses them; the guard
    halts at the first condensation that forgets the call, or spills it."""
    plain = Run(new_state(tmp_path / "plain"), summarizer())
    tool_session(plain)
    assert plain.lost(30) == {"<M4>"}
    halted = Run(new_state(tmp_path / "halt"), guarded(tmp_path / "halt"))
    with pytest.raises(UnrecoverableCompactionError, match=r"evicted offsets \[0, 3\)"):
        tool_session(halted)  # the call is offset 2 (events 2, 3 before it)
    assert halted.decisions == []
    cond = guarded(tmp_path / "spill", on_refuse="spill", store=str(tmp_path / "spill" / "spills"))
    spilled = Run(new_state(tmp_path / "spill"), cond)
    tool_session(spilled)
    guard = cond.session_guard(spilled.state.id)
    assert guard is not None and cond.spill_store is not None
    back = [e for _, h in guard.spills for e in events_from_spill(cond.spill_store, h)]
    args = "".join(t.arguments for e in back for t in e.to_llm_message().tool_calls or [])
    assert spilled.lost(30, args) == set() and "<M4>" in args


def test_a_guard_that_trusts_the_preview_lets_the_loss_through(tmp_path: Path, monkeypatch: Any) -> None:
    """Broken on purpose: counting every forgotten event as shown whole (what the summarizer's
    ``str(event)`` preview suggests) allows the condensation that loses event 5's marker."""
    monkeypatch.setattr(oh_adapter, "_shown_whole", lambda event, prompts: True)
    run = Run(new_state(tmp_path), guarded(tmp_path))
    for i, size in enumerate(SIZES):
        run.step(i, size)
    assert run.lost(len(SIZES)) == {"<M5>"}
    code, report = audit_json(log_of(tmp_path))
    assert (code, report["violations"]) == (0, 0), report  # the log believes the lie: the guard is the judge


def test_a_short_session_is_allowed_and_audits_clean(tmp_path: Path) -> None:
    sizes = [100] * 30
    run = Run(new_state(tmp_path), guarded(tmp_path))
    for i, size in enumerate(sizes):
        run.step(i, size)
    assert len(run.decisions) >= 3 and run.lost(len(sizes)) == set()
    code, report = audit_json(log_of(tmp_path))
    assert (code, report["violations"], report["refusals"]) == (0, 0, 0), report


def test_guarded_spill_loses_nothing_and_reads_back_byte_exact(tmp_path: Path) -> None:
    cond = guarded(tmp_path, on_refuse="spill", store=str(tmp_path / "spills"))
    run = Run(new_state(tmp_path), cond)
    originals: dict[str, SdkEvent] = {}
    for i, size in enumerate(SIZES):
        originals[eid(i)] = event(i, size)
        run.step(i, size)
    guard = cond.session_guard(run.state.id)
    assert guard is not None and guard.spills
    store = cond.spill_store
    assert store is not None
    back: list[SdkEvent] = []
    for (lo, hi), handle in guard.spills:
        doc = events_from_spill(store, handle)
        assert len(doc) == hi - lo
        back += doc
    for e in back:  # the events as the log held them, byte-exact (their parent ids stamped)
        logged = next(x for x in run.state.events if x.id == e.id)
        assert e.model_dump_json() == logged.model_dump_json()
        assert e.to_llm_message().content == originals[e.id].to_llm_message().content
    assert eid(5) in {e.id for e in back}
    spilled = "\n".join(c.text for e in back for c in e.to_llm_message().content if isinstance(c, TextContent))
    assert run.lost(len(SIZES), spilled) == set()
    code, report = audit_json(log_of(tmp_path))
    assert (code, report["violations"]) == (0, 0), report


def test_defer_keeps_the_view_and_logs_the_refusal(tmp_path: Path) -> None:
    run = Run(new_state(tmp_path), guarded(tmp_path, on_refuse="defer"))
    for i, size in enumerate(SIZES[:12]):
        run.step(i, size)
    assert run.decisions == [] and run.lost(12) == set()
    assert '"event": "refusal"' in log_of(tmp_path).read_text()


# -- runtime and config agree (brief 6d) ----------------------------------------------------

AGREEMENT = Path(__file__).resolve().parent / "data" / "openhands_agreement.toml"


def test_the_adapter_never_refuses_a_session_the_preset_calls_safe(tmp_path: Path) -> None:
    """``check-config`` calls these knobs safe (test_openhands_agreement.py: events of at most
    500 characters, the SDK's preview); the guard (the policy's floor, halt) then allows every
    condensation of sessions of that shape on the real SDK, and the marker oracle agrees."""
    import tomllib

    from hypothesis import HealthCheck, given, settings, strategies as st

    from tailguard.pipeline.policy import parse_policy

    source = AGREEMENT.read_text()
    parse_policy(source, AGREEMENT.name)  # the file is a valid policy
    knobs = tomllib.loads(source)
    lo, hi = knobs["turn_tokens"]
    fw = knobs["framework"]
    serial = iter(range(10**6))

    @settings(max_examples=12, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(sizes=st.lists(st.integers(lo, hi), min_size=1, max_size=45))
    def session(sizes: list[int]) -> None:
        root = tmp_path / f"s{next(serial)}"
        cond = GuardedCondenser(inner=summarizer(fw["max_size"], fw["keep_first"]), log=str(root / "logs") + "/",
                                recovery_floor_span=knobs["floor"])
        run = Run(new_state(root), cond)
        for i, size in enumerate(sizes):
            run.step(i, size)
        assert run.lost(len(sizes)) == set()
        assert len(sizes) <= fw["max_size"] or run.decisions

    session()


def test_past_the_preview_the_guard_refuses_what_the_check_calls_unsafe(tmp_path: Path) -> None:
    """The other direction: one event past the preview (the agreement file without
    ``max_event_chars``: unsafe) is refused by the guard; unguarded, the SDK loses it
    (test_unguarded_the_sdk_loses_a_long_events_marker)."""
    run = Run(new_state(tmp_path), guarded(tmp_path, recovery_floor_span=2))
    with pytest.raises(UnrecoverableCompactionError, match="no_hole"):
        for i, size in enumerate([100] * 5 + [501] + [100] * 10):
            run.step(i, size)


# -- sessions: restart, two conversations ---------------------------------------------------

def normalized_log(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_text().splitlines():
        line = json.loads(raw)
        if line.get("event") == "resume":
            continue
        out.append({k: v for k, v in line.items() if k not in ("handle", "ts", "time")})
    return out


def spill_run(tmp: Path, restart_at: int | None, cid: uuid.UUID) -> tuple[Run, list[dict[str, Any]]]:
    def build() -> GuardedCondenser:
        return guarded(tmp, on_refuse="spill", store=str(tmp / "spills"))

    run = Run(new_state(tmp, cid), build())
    for i, size in enumerate(SIZES):
        if i == restart_at:
            assert isinstance(run.condenser, GuardedCondenser)
            run.condenser.close()
            # a new process: a new condenser (the SDK's JSON of it holds the summarizer's LLM config,
            # not the TestLLM's script), the conversation from its directory
            fresh = build()
            assert GuardedCondenser.model_validate_json(run.condenser.model_dump_json()).options == fresh.options
            run = Run(reopen(run.state, tmp), fresh, run.summaries, run.decisions)
        run.step(i, size)
    return run, normalized_log(log_of(tmp))


def test_a_restart_decides_as_an_uninterrupted_run(tmp_path: Path) -> None:
    cid = uuid.uuid4()
    whole, whole_log = spill_run(tmp_path / "a", None, cid)
    for at in (11, 17):
        parted, parted_log = spill_run(tmp_path / f"b{at}", at, cid)
        assert parted.decisions == whole.decisions
        assert parted_log == whole_log
        assert "resume" in log_of(tmp_path / f"b{at}").read_text()
        assert parted.lost(len(SIZES), "".join(parted.summaries)) == whole.lost(len(SIZES), "".join(whole.summaries))


def test_the_async_path_decides_as_the_sync_one(tmp_path: Path) -> None:
    cid = uuid.uuid4()
    sync, sync_log = spill_run(tmp_path / "sync", None, cid)
    run = Run(new_state(tmp_path / "async", cid),
              guarded(tmp_path / "async", on_refuse="spill", store=str(tmp_path / "async" / "spills")),
              asynchronous=True)
    for i, size in enumerate(SIZES):
        run.step(i, size)
    assert run.decisions == sync.decisions and len(run.decisions) >= 3
    assert normalized_log(log_of(tmp_path / "async")) == sync_log


def test_a_restart_from_a_stale_state_is_refused(tmp_path: Path) -> None:
    cond = guarded(tmp_path)
    run = Run(new_state(tmp_path), cond)
    for i in range(4):
        run.step(i, 100)
    stale = run.state.agent_state[STATE_KEY]
    run.step(4, 100)
    cond.close()
    state = reopen(run.state, tmp_path)
    state.agent_state = {**state.agent_state, STATE_KEY: stale}
    again = Run(state, guarded(tmp_path))
    with pytest.raises(AdapterError, match="cannot continue from it"):
        again.step(5, 100)
    tampered = {**stale, "pinned": [eid(9)]}
    state.agent_state = {**state.agent_state, STATE_KEY: tampered}
    with pytest.raises(AdapterError, match="integrity digest"):
        Run(state, guarded(tmp_path)).step(6, 100)


def test_two_conversations_through_one_condenser_never_mix(tmp_path: Path) -> None:
    shared = guarded(tmp_path / "shared", on_refuse="spill", store=str(tmp_path / "shared" / "spills"))
    (tmp_path / "shared").mkdir(exist_ok=True)
    a = Run(new_state(tmp_path / "ca"), shared)
    b = Run(new_state(tmp_path / "cb"), shared)
    sizes_b = [100] * 30
    for i in range(30):
        a.step(i, SIZES[i])
        b.step(i, sizes_b[i])
    alone_a, _ = spill_run(tmp_path / "alone-a", None, a.state.id)
    assert a.decisions == alone_a.decisions
    logs = {p.read_text().splitlines()[0] for p in (tmp_path / "shared" / "logs").iterdir()}
    assert len(logs) == 2
    for run in (a, b):
        assert run.state.agent_state[STATE_KEY]["session"] == str(run.state.id)
        guard = shared.session_guard(run.state.id)
        assert guard is not None and guard.ledger.history_end == 28
    ga, gb = shared.session_guard(a.state.id), shared.session_guard(b.state.id)
    assert ga is not None and gb is not None and ga.ledger is not gb.ledger
    assert gb.ledger.refusals == 0 and ga.ledger.refusals > 0  # only a's long event was refused (then spilled)


def test_a_conversation_condensed_before_the_guard_is_adopted(tmp_path: Path) -> None:
    state = new_state(tmp_path)
    before = Run(state, summarizer())
    for i in range(11):  # one unguarded condensation: events 2..8 forgotten
        before.step(i, 100)
    assert len(before.decisions) == 1
    with pytest.raises(AdapterError, match="on_unknown_history='refuse'"):
        Run(state, guarded(tmp_path / "refusing", on_unknown_history="refuse")).step(11, 100)
    after = Run(state, guarded(tmp_path), before.summaries)
    for i in range(12, 40):
        after.step(i, 100)
    assert len(after.decisions) >= 3 and after.lost(40) == set()
    lines = [json.loads(x) for x in log_of(tmp_path).read_text().splitlines()]
    adopt = [x for x in lines if x["event"] == "adopt"]
    assert len(adopt) == 1 and adopt[0]["range"] == [0, 7], adopt
    code, report = audit_json(log_of(tmp_path))
    assert (code, report["violations"], report["refusals"]) == (0, 0, 0), report


def test_conversations_in_parallel_threads_stay_apart(tmp_path: Path) -> None:
    """One condenser, four conversations condensed from four threads at once: each decides as
    it does alone (the bound state is per thread; a lock per conversation)."""
    from concurrent.futures import ThreadPoolExecutor

    shared = guarded(tmp_path / "shared", on_refuse="spill", store=str(tmp_path / "shared" / "spills"))
    runs = [Run(new_state(tmp_path / f"c{k}"), shared) for k in range(4)]

    def drive(run: Run) -> None:
        for i, size in enumerate(SIZES):
            run.step(i, size)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(drive, runs))
    alone, alone_log = spill_run(tmp_path / "alone", None, runs[0].state.id)
    for run in runs:
        assert run.decisions == alone.decisions
        guard = shared.session_guard(run.state.id)
        assert guard is not None and guard.ledger.history_end == 28
        log = tmp_path / "shared" / "logs" / log_file_name(str(run.state.id))
        assert normalized_log(log)[1:] == alone_log[1:]  # the header names each its own session


def test_unbound_condense_fails_with_a_clear_error(tmp_path: Path) -> None:
    state = new_state(tmp_path)
    state.append_event(event(0, 100))
    with pytest.raises(AdapterError, match="GuardedAgent"):
        guarded(tmp_path).condense(state.view)


# -- the agent loop: GuardedAgent in a real Conversation ------------------------------------

class ReplyLLM(TestLLM):
    """The agent's LLM: the SDK's ``TestLLM`` answering every step with a short message."""

    __test__ = False

    def completion(self, messages: list[Message], *args: Any, **kwargs: Any) -> Any:
        self._scripted_responses.append(Message(role="assistant", content=[TextContent(text="ok")]))
        return super().completion(messages, *args, **kwargs)


def conversation(tmp: Path, cond: GuardedCondenser, cid: uuid.UUID) -> Any:
    from openhands.sdk import Conversation

    agent = GuardedAgent(llm=ReplyLLM(model="test-model", usage_id="agent"), tools=[], condenser=cond)
    return Conversation(agent=agent, workspace=str(tmp), persistence_dir=str(tmp / "conv"), conversation_id=cid,
                        visualizer=None)


def test_the_agent_loop_halts_before_the_condensation_enters_the_log(tmp_path: Path) -> None:
    from openhands.sdk.conversation.exceptions import ConversationRunError

    conv = conversation(tmp_path, guarded(tmp_path), uuid.uuid4())
    with pytest.raises(ConversationRunError, match=r"compaction refused \(no_hole\); evicted offsets \[0, 8\)"):
        for i in range(1, 20):
            conv.send_message(text(i, 600 if i == 5 else 100))
            conv.run()
    assert not any(isinstance(e, Condensation) for e in conv.state.events)


def test_the_agent_loop_spills_and_resumes_after_a_restart(tmp_path: Path) -> None:
    cid = uuid.uuid4()

    def build() -> GuardedCondenser:
        return guarded(tmp_path, on_refuse="spill", store=str(tmp_path / "spills"))

    cond = build()
    conv = conversation(tmp_path, cond, cid)
    for i in range(1, 30):
        if i == 15:  # a new process: a new agent, condenser and Conversation over the same directory
            cond.close()
            cond = build()
            conv = conversation(tmp_path, cond, cid)
        conv.send_message(text(i, 600 if i % 7 == 5 else 100))
        conv.run()
    events = list(conv.state.events)
    assert sum(isinstance(e, Condensation) for e in events) >= 4
    # every spill of the session, before and after the restart, as its log names them
    handles = [line["handle"] for line in map(json.loads, log_of(tmp_path).read_text().splitlines())
               if line["event"] == "spill"]
    assert len(handles) >= 4 and cond.spill_store is not None
    spilled = "".join(c.text for h in handles for e in events_from_spill(cond.spill_store, h)
                      for c in e.to_llm_message().content if isinstance(c, TextContent))
    summaries = "".join(e.summary or "" for e in events if isinstance(e, Condensation))
    run = Run(conv.state, cond, [summaries])
    lost = run.lost(30, spilled) - {"<M0>"}  # no event 0: the agent's own system prompt opens the log
    assert lost == set()
    log = log_of(tmp_path).read_text()
    assert '"event": "resume"' in log
    code, report = audit_json(log_of(tmp_path))
    assert (code, report["violations"]) == (0, 0), report


# -- shape: the adapters' common face ---------------------------------------------------------

def test_the_adapter_defines_the_named_steps() -> None:
    assert [s for s in STEPS if s not in vars(GuardedCondenser)] == []


def test_stated_versions_are_the_presets() -> None:
    assert PRESET.validated_on == oh_adapter.SUPPORTED
    source = (ROOT / "src/tailguard/adapters/openhands.py").read_text()
    assert re.findall(r"\d+\.\d+", source) == []


def test_the_import_error_names_the_extra_and_the_presets_versions() -> None:
    code = ("import sys; sys.modules['openhands'] = None\n"
            "try:\n    import tailguard.adapters.openhands\n"
            "except ImportError as e:\n    print(e); sys.exit(0)\nsys.exit(1)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "pip install 'tailguard[openhands]'" in done.stdout
    assert f"(validated with {', '.join(PRESET.validated_on)})" in done.stdout


def test_the_condenser_round_trips_through_the_agents_json(tmp_path: Path) -> None:
    cond = GuardedCondenser(inner=PipelineCondenser(condensers=[summarizer()]), recovery_floor_span=2,
                            on_refuse="spill", store=str(tmp_path / "s"))
    agent = Agent(llm=TestLLM(model="test-model", usage_id="agent"), tools=[], condenser=cond)
    back = Agent.model_validate_json(agent.model_dump_json())
    assert isinstance(back.condenser, GuardedCondenser)
    assert back.condenser.options == cond.options
    assert isinstance(back.condenser.inner, PipelineCondenser)


def test_a_copied_summarizer_llm_is_recorded_as_itself(tmp_path: Path) -> None:
    """``model_copy`` copies the recording wrapper with the LLM's ``__dict__``: the copy must be
    watched anew (its calls its own), or the guard would record nothing and refuse everything."""
    inner = summarizer()
    cond = guarded(tmp_path, inner=inner)
    run = Run(new_state(tmp_path), cond)
    run.step(0, 100)  # the first call watches the summarizer's LLM
    old = inner.llm
    inner.llm = old.model_copy()
    calls = (old.call_count, inner.llm.call_count)
    for i in range(1, 30):
        run.step(i, 100)
    assert len(run.decisions) >= 3 and run.lost(30) == set()
    assert (old.call_count, inner.llm.call_count) == (calls[0], calls[1] + len(run.decisions))


def test_bad_fields_are_refused_when_built(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs store="):
        GuardedCondenser(inner=summarizer(), on_refuse="spill")
    with pytest.raises(ValueError, match="log: expected a directory"):
        GuardedCondenser(inner=summarizer(), log=str(tmp_path / "one.jsonl"))
    with pytest.raises(ValueError, match="decides twice"):
        GuardedCondenser(inner=GuardedCondenser(inner=summarizer()))

