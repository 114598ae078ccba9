"""The Strands adapter on the real ``Agent`` (tailguard.doctor.drivers.strands: a scripted subclass
of Strands' ``Model``): decide before anything leaves ``agent.messages``, spill byte-exact or
halt, state in the conversation manager's own (``FileSessionManager``), restart, adoption.

The acceptance test of issue 29: a guarded run spills what the unguarded run silently drops (the
marker oracle), and the spill reads back byte-exact.
"""

from __future__ import annotations

import copy
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

# TAILGUARD_REQUIRE_STRANDS=1 (a venv built for it, with watchdog 6): a missing strands fails, never skips
if os.environ.get("TAILGUARD_REQUIRE_STRANDS") != "1":
    pytest.importorskip("strands", reason="install the strands extra (its own venv: watchdog, see docs)")

from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager
from strands.hooks import MessageAddedEvent
from strands.session.file_session_manager import FileSessionManager
from strands.types.exceptions import ContextWindowOverflowException

from tailguard.adapters.strands import GuardedConversationManager, messages_from_spill
from tailguard.base.errors import AdapterError, UnrecoverableCompactionError
from tailguard.doctor.drivers import strands as sd
from tailguard.doctor.drivers.strands import Step
from tailguard.spill import FileSpillStore

SESSION = [[1, 0, 2], [0], [1, 1], [0, 0, 3], [2], [0]]  # tool rounds per invocation, per agent call


def drive(sess: sd.Session, shapes: list[list[int]] | None = None) -> None:
    for group in shapes or SESSION:
        for rounds in group:
            sess.invoke(15, [*(Step(25, result=30) for _ in range(rounds)), Step(18)])


def spilled_tags(store: FileSpillStore, handles: list[str]) -> set[int]:
    return {t for h in handles for m in messages_from_spill(store, h) for t in sd.message_tags(m)}


def log_handles(path: Path) -> list[str]:
    return [json.loads(x)["handle"] for x in path.read_text().splitlines() if json.loads(x)["event"] == "spill"]


def test_a_guarded_run_spills_what_the_unguarded_run_drops(tmp_path: Path) -> None:
    """Issue 29's acceptance test, on the shipped default's manager (window_size 6 here)."""
    plain = sd.build(SlidingWindowConversationManager(window_size=6))
    drive(plain)
    dropped = sd.lost(plain.sent, plain.agent.messages, plain.model.prompts)
    assert dropped, "the unguarded run drops nothing: the test would prove nothing"

    originals: dict[int, dict[str, Any]] = {}
    guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=6), recovery_floor_span=2,
                                       on_refuse="spill", store=tmp_path / "store", log=tmp_path / "log.jsonl")
    guarded = sd.build(guard)

    def added(event: MessageAddedEvent) -> None:  # every message as the agent appended it
        originals[sd.message_tags(event.message)[0]] = copy.deepcopy(event.message)

    guarded.agent.hooks.add_callback(MessageAddedEvent, added)
    drive(guarded)
    assert sd.context_tags(guarded.agent.messages) == sd.context_tags(plain.agent.messages)  # same trims
    store = FileSpillStore(tmp_path / "store")
    handles = log_handles(tmp_path / "log.jsonl")
    assert spilled_tags(store, handles) == dropped  # every dropped marker is spilled, nothing else
    assert sd.lost(guarded.sent, guarded.agent.messages, guarded.model.prompts, spilled_tags(store, handles)) == set()
    for h in handles:  # byte-exact: the store's bytes are the handle's, and the messages are the originals
        back = messages_from_spill(store, h)
        for m in back:
            assert m == originals[sd.message_tags(m)[0]]
        assert store.get(h) == store.get(h)
    from tailguard.cli.main import main

    assert main(["audit", "--profile", "partitioned", str(tmp_path / "log.jsonl")], stdout=io.StringIO()) == 0


def test_halt_refuses_before_anything_leaves(tmp_path: Path) -> None:
    guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=6), recovery_floor_span=2,
                                       log=tmp_path / "log.jsonl")
    sess = sd.build(guard)
    sess.invoke(15, [Step(25, result=30), Step(18)])
    sess.invoke(15, [Step(18)])
    before = copy.deepcopy(sess.agent.messages)
    with pytest.raises(UnrecoverableCompactionError) as err:
        sess.invoke(15, [Step(25, result=30), Step(18)])
    assert err.value.holes == ((0, 4),) and "no_hole" in err.value.failed  # the first invocation
    assert sess.agent.messages[:6] == before and len(sess.agent.messages) == 10  # nothing left
    assert guard.inner.removed_message_count == 0 == guard.removed_message_count
    assert '"event": "refusal"' in (tmp_path / "log.jsonl").read_text()


def test_defer_skips_the_trim_and_an_overflow_is_raised_again() -> None:
    guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=4), recovery_floor_span=0,
                                       on_refuse="defer")
    sess = sd.build(guard)
    drive(sess, [[1, 0, 0]])
    assert len(sess.agent.messages) == 8 and guard.removed_message_count == 0
    sess.model.window = 10  # the next request overflows; a deferred reduction cannot make progress
    with pytest.raises(ContextWindowOverflowException):
        sess.invoke(15, [Step(18)])


def test_a_summary_is_decided_and_committed() -> None:
    """SummarizingConversationManager: the summarizer is shown every message it replaces (recorded
    at the model), so the guard allows with a floor below preserve_recent_messages and commits
    the summary; nothing is lost."""
    inner = SummarizingConversationManager(preserve_recent_messages=6, summarization_system_prompt="S.")
    guard = GuardedConversationManager(inner, recovery_floor_span=5)
    sess = sd.build(guard, window=400)
    drive(sess)
    assert sess.model.prompts and guard.guard is not None
    assert len(guard.guard.ledger.summaries) == 1  # each summary replaced the previous one
    assert sd.lost(sess.sent, sess.agent.messages, sess.model.prompts) == set()


def test_a_floor_above_what_the_summarizer_keeps_halts() -> None:
    inner = SummarizingConversationManager(summary_ratio=0.8, preserve_recent_messages=3,
                                           summarization_system_prompt="S.")
    guard = GuardedConversationManager(inner, recovery_floor_span=3)
    sess = sd.build(guard, window=450)
    with pytest.raises(UnrecoverableCompactionError, match="floor_in_tail"):
        sess.invoke(100, [Step(100, result=100), Step(100, result=100), Step(60)])
    assert sess.model.prompts and not any(sd.SUMMARY_TAG.search(json.dumps(m)) for m in sess.agent.messages)


def test_a_tool_result_cut_on_overflow_is_spilled_whole(tmp_path: Path) -> None:
    """The sliding window's reactive path cuts the oldest tool result to 200 + 200 characters: the
    guard halts (a loss inside a message) or spills the original first."""
    for mode in ("halt", "spill"):
        guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=40), recovery_floor_span=0,
                                           on_refuse=mode, store=tmp_path / mode, log=tmp_path / f"{mode}.jsonl")
        sess = sd.build(guard)
        sess.invoke(15, [Step(25, result=900), Step(18)])
        sess.model.window = 950
        if mode == "halt":
            with pytest.raises(UnrecoverableCompactionError, match="cuts the content"):
                sess.invoke(15, [Step(18)])
            assert len(sess.agent.messages[2]["content"][0]["toolResult"]["content"][0]["text"]) == 900
            continue
        original = copy.deepcopy(sess.agent.messages[2])
        sess.invoke(15, [Step(18)])
        assert "[truncated:" in json.dumps(sess.agent.messages[2])
        (handle,) = log_handles(tmp_path / f"{mode}.jsonl")
        assert messages_from_spill(FileSpillStore(tmp_path / mode), handle) == [original]


def test_the_state_rides_in_the_session_and_a_restart_resumes(tmp_path: Path) -> None:
    """FileSessionManager persists get_state(); a new Agent and guard on the same session continue
    the ledger and the log (a resume line), and keep spilling."""
    store, logs = tmp_path / "store", tmp_path / "logs"
    logs.mkdir()

    def agent() -> tuple[sd.Session, GuardedConversationManager]:
        guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=6), recovery_floor_span=2,
                                           on_refuse="spill", store=store, log=logs)
        return sd.build(guard, session_manager=FileSessionManager("s1", storage_dir=str(tmp_path / "sessions"))), guard

    first, guard = agent()
    drive(first, SESSION[:3])
    assert guard.guard is not None
    end = guard.guard.ledger.history_end
    second, guard2 = agent()
    second.sent = first.sent
    second.invocations = first.invocations
    assert [sd.context_tags(m)[0] for m in [second.agent.messages]] == [sd.context_tags(first.agent.messages)[0]]
    drive(second, SESSION[3:])
    assert guard2.guard is not None and guard2.guard.ledger.history_end > end
    (log,) = list(logs.iterdir())
    events = [json.loads(x)["event"] for x in log.read_text().splitlines()]
    assert events.count("resume") == 1 and events.count("session") == 1
    handles = log_handles(log)
    dropped = set(range(second.sent)) - set(sd.context_tags(second.agent.messages)[0])
    assert spilled_tags(FileSpillStore(store), handles) == dropped


def test_parallel_sessions_keep_separate_ledgers(tmp_path: Path) -> None:
    sessions = []
    for name in ("a", "b"):
        guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=6), recovery_floor_span=2,
                                           on_refuse="spill", store=tmp_path / "store", log=f"{tmp_path}/logs/",
                                           session_id=name)
        sessions.append((sd.build(guard), guard))
    drive(sessions[0][0], SESSION[:2])
    drive(sessions[1][0], SESSION)
    ends = [g.guard.ledger.history_end for _, g in sessions if g.guard is not None]
    assert ends == [sessions[0][0].sent, sessions[1][0].sent]
    assert len(list((tmp_path / "logs").iterdir())) == 2


def test_a_session_that_ran_before_the_guard_is_adopted_or_refused(tmp_path: Path) -> None:
    """A FileSessionManager session trimmed by the plain manager, continued with the guard:
    ``refuse`` names why; ``adopt`` records the removed messages as unverified and goes on (its
    later trims are spilled, the adopted range stays unverified, never a hole it could repair)."""
    for mode in ("refuse", "adopt"):
        plain = sd.build(SlidingWindowConversationManager(window_size=6),
                         session_manager=FileSessionManager(mode, storage_dir=str(tmp_path)))
        drive(plain, SESSION[:3])
        removed, kept = plain.agent.conversation_manager.removed_message_count, len(plain.agent.messages)
        assert removed > 0
        log = tmp_path / f"{mode}.jsonl"
        guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=6), recovery_floor_span=2,
                                           on_refuse="spill", store=tmp_path / "store", on_unknown_history=mode,
                                           log=log)
        sess = sd.build(guard, session_manager=FileSessionManager(mode, storage_dir=str(tmp_path)))
        sess.sent = plain.sent
        if mode == "refuse":
            with pytest.raises(AdapterError, match="before the guard came"):
                sess.invoke(15, [Step(18)])
            continue
        assert len(sess.agent.messages) == kept
        drive(sess, SESSION[3:])
        assert guard.guard is not None and guard.guard.ledger.history_end == removed + sess.sent - plain.sent + kept
        events = [json.loads(x) for x in log.read_text().splitlines()]
        assert events[1]["event"] == "adopt" and events[1]["range"] == [0, removed]
        assert any(e["event"] == "spill" for e in events)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="inner"):
        GuardedConversationManager(object(), recovery_floor_span=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pin_first"):
        GuardedConversationManager(SlidingWindowConversationManager(pin_first=2), recovery_floor_span=1)
    with pytest.raises(ValueError, match="floor_unit"):
        GuardedConversationManager(recovery_floor_span=1, floor_unit="tokens")
    with pytest.raises(TypeError, match="recovery_floor_span"):
        GuardedConversationManager()
    guard = GuardedConversationManager(recovery_floor_span=1)
    with pytest.raises(AdapterError, match=r"integrity|format"):
        guard.restore_from_session({"__name__": "GuardedConversationManager", "removed_message_count": 0,
                                    "inner": SlidingWindowConversationManager().get_state(),
                                    "tailguard": {"format": "tailguard.strands", "version": 1, "session": "x",
                                                  "integrity": "sha256:0"}})


def test_the_adapter_has_the_shape_of_the_others(tmp_path: Path) -> None:
    """Issue 24's shape, for the adapter that cannot share test_adapter_shape.py's venv: the named
    steps, options= or keywords (never both), SUPPORTED is the preset's validated_on, and the
    docs' version row states it."""
    import re

    from tailguard.adapters import GuardOptions, strands as adapter
    from tailguard.adapters._guard import STEPS
    from tailguard.pipeline.presets.strands import SLIDING

    assert all(callable(getattr(GuardedConversationManager, step, None)) for step in STEPS)
    options = GuardOptions(recovery_floor_span=3, on_refuse="spill", store=tmp_path)
    assert GuardedConversationManager(options=options).options is options
    with pytest.raises(TypeError, match="not both"):
        GuardedConversationManager(options=options, recovery_floor_span=3)
    assert SLIDING.validated_on == adapter.SUPPORTED
    text = (Path(__file__).resolve().parents[2] / "docs/integrations.md").read_text()
    rows = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([\w-]+)` \|[^|]*\|([^|]*)\|", text, re.M)}
    assert rows.get("strands") == ", ".join(SLIDING.validated_on)


def test_runtime_and_config_agree_on_the_defaults_counterexample() -> None:
    """Brief 6d: the guard refuses check-config's counterexample for the shipped default, at the
    append the finding names, with the finding's invocation as the hole (in offsets: its messages)."""
    from tests.presets.test_strands_preset import check_config, of_messages

    _, found = check_config(Path("examples/presets/strands-defaults.toml").read_text())
    finding = found["findings"][0]
    guard = GuardedConversationManager(SlidingWindowConversationManager(), recovery_floor_span=8)
    sess = sd.build(guard)
    counts = finding["messages"]
    for step, count in enumerate(counts, start=1):
        if step < finding["step"]:
            sess.invoke(12, of_messages(count))
            continue
        with pytest.raises(UnrecoverableCompactionError) as err:
            sess.invoke(12, of_messages(count))
        lo = sum(counts[: finding["offsets"][0]])
        assert err.value.holes == ((lo, lo + sum(counts[j] for j in finding["offsets"])),)


def test_runtime_never_refuses_what_the_summarizing_preset_calls_safe() -> None:
    """Brief 6d: a floor of preserve_recent_messages - 1 is safe in the preset; the guard on the
    real SummarizingConversationManager allows every summary of random sessions with it."""
    from hypothesis import HealthCheck, given, settings

    from tests.presets.test_strands_preset import SUMMARY_SYSTEM, summarizing_cases

    @settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
    @given(summarizing_cases())
    def run(case: Any) -> None:
        session, window, preserve, ratio = case
        inner = SummarizingConversationManager(summary_ratio=ratio, preserve_recent_messages=preserve,
                                               summarization_system_prompt=SUMMARY_SYSTEM)
        sess = sd.build(GuardedConversationManager(inner, recovery_floor_span=preserve - 1), window=window)
        for inv in session:
            sess.invoke(inv.prompt, [*(Step(c, result=r) for c, r in inv.rounds), Step(inv.answer)])

    run()


def test_a_summary_made_before_the_guard_is_adopted_and_followed(tmp_path: Path) -> None:
    """A FileSessionManager session summarized by the plain SummarizingConversationManager,
    continued with the guard: its summary (restored by Strands in front of the messages) is
    adopted as the unverified coverage of the removed messages; the next summary is shown it, so
    the adopted range follows lineage and nothing is refused."""
    def manager() -> SummarizingConversationManager:
        return SummarizingConversationManager(preserve_recent_messages=6, summarization_system_prompt="S.")

    plain = sd.build(manager(), window=400, session_manager=FileSessionManager("s", storage_dir=str(tmp_path)))
    drive(plain, SESSION[:3])
    removed = plain.agent.conversation_manager.removed_message_count
    assert plain.model.prompts and removed > 0
    log = tmp_path / "log.jsonl"
    guard = GuardedConversationManager(manager(), recovery_floor_span=5, log=log)
    sess = sd.build(guard, window=400, session_manager=FileSessionManager("s", storage_dir=str(tmp_path)))
    sess.sent = plain.sent
    assert sd.SUMMARY_TAG.search(json.dumps(sess.agent.messages[0]))  # Strands put its summary first
    drive(sess, SESSION[3:])
    events = [json.loads(x) for x in log.read_text().splitlines()]
    assert events[1]["event"] == "adopt" and events[1]["range"] == [0, removed]
    compacts = [e for e in events if e["event"] == "compact"]
    assert compacts and compacts[0]["saw"] == [events[1].get("summary", "adopted")]  # the ledger's default id
    from tailguard.cli.main import main

    out = io.StringIO()
    assert main(["audit", "--profile", "partitioned", str(log)], stdout=out) == 0 and "unverified" in out.getvalue()


def test_a_process_that_ended_before_strands_stored_the_state_is_recovered(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard placed newer messages in its log, and the process ended before the session
    manager stored the agent (simulated: sync_agent does nothing for the last invocation). The
    stored messages are those the log's extra appends placed: the next process rebuilds the
    ledger from the log and goes on; a log past the state by anything else is refused."""
    store, logs = tmp_path / "store", tmp_path / "logs"
    logs.mkdir()

    def agent() -> tuple[sd.Session, GuardedConversationManager]:
        guard = GuardedConversationManager(SlidingWindowConversationManager(window_size=6),
                                           recovery_floor_span=2, on_refuse="spill", store=store, log=logs)
        return sd.build(guard, session_manager=FileSessionManager("s", storage_dir=str(tmp_path / "sess"))), guard

    first, _ = agent()
    drive(first, [[0]])
    monkeypatch.setattr(FileSessionManager, "sync_agent", lambda self, agent, **kw: None)
    first.invoke(15, [Step(18)])  # placed in the log (no trim); the state in the session is older
    (log,) = list(logs.iterdir())
    assert [json.loads(x)["event"] for x in log.read_text().splitlines()][-1] == "append"
    monkeypatch.undo()
    second, guard = agent()
    second.sent, second.invocations = first.sent, first.invocations
    drive(second, [[0, 1, 0, 1]])
    assert guard.guard is not None and guard.guard.ledger.history_end == second.sent
    dropped = set(range(second.sent)) - set(sd.context_tags(second.agent.messages)[0])
    assert spilled_tags(FileSpillStore(store), log_handles(log)) == dropped
    with log.open("a") as f:  # now past the stored state by a spill: refused, named
        f.write(json.dumps({"event": "spill", "range": [0, 1], "handle": "sha256:" + "0" * 64}) + "\n")
    third, _ = agent()
    with pytest.raises(AdapterError, match="cannot continue from the guard state"):
        third.invoke(15, [Step(18)])
