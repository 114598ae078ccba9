"""GuardedCompaction on the real Google ADK runner, with a marker oracle.

ADK runs as installed (tailguard/doctor/drivers/adk_app.py): the real ``Runner``, ``App``,
``EventsCompactionConfig`` and ``LlmEventSummarizer`` on fake ``BaseLlm`` models, in-memory and
SQLite session services. Every raw event carries a tag ``[e<i>]``; a tag that no context,
summary (what it was shown, transitively) or spill holds is lost. The loss ADK really suffers:
``LlmEventSummarizer`` clips a tool response at 2,000 characters and the event leaves the
context, so a tag at the end of a long response is held nowhere.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("google.adk", reason="install the frameworks extra (CI does)")

from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from tailguard.adapters._offsets import AdapterError
from tailguard.adapters.google_adk import STATE_KEY, GuardedCompaction, events_from_spill
from tailguard.doctor.drivers import adk_app as adk
from tailguard.doctor.drivers.adk_app import Step
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore

SLIDING = {"compaction_interval": 1, "overlap_size": 0}


def clipped_session() -> list[tuple[int, list[Step]]]:
    """Invocation 0: a prompt, a call whose response (event 2) is 600 tokens with its tag at the
    end, an answer; then chat invocations."""
    return [(6, [Step(1, call=600, tail_tag=True), Step(5)]), (6, [Step(5)]), (6, [Step(5)])]


def guarded(summary: adk.SummaryModel | None = None, **kw: Any) -> GuardedCompaction:
    model = summary or adk.SummaryModel(summary_tokens=10)
    return GuardedCompaction(LlmEventSummarizer(llm=model), **kw)


async def play(app: adk.Adk, session: list[tuple[int, list[Step]]]) -> None:
    for user, steps in session:
        await app.invoke(user, steps)


def spilled_tags(store: FileSpillStore, events: list[Any]) -> tuple[set[int], list[Any]]:
    out: set[int] = set()
    restored: list[Any] = []
    for e in events:
        meta = (e.custom_metadata or {}).get(STATE_KEY) if e.actions and e.actions.compaction else None
        for s in (meta or {}).get("spills", []):
            got = events_from_spill(store, s["handle"])
            restored += got
            out |= {adk.event_tag(x) for x in got}
    return out, restored


def test_unguarded_loses_guarded_halts_guarded_spill_recovers_byte_exact(tmp_path: Path) -> None:
    async def unguarded() -> tuple[list[Any], list[str]]:
        app = await adk.build(SLIDING)
        await play(app, clipped_session())
        return await app.session_events(), app.summary_model.prompts

    events, prompts = adk.run(unguarded())
    assert adk.lost(events, prompts) == {2}  # the clipped tool response

    async def halted() -> tuple[list[Any], BaseException]:
        summary = adk.SummaryModel(summary_tokens=10)
        guard = guarded(summary, recovery_floor_span=0, on_refuse="halt")
        app = await adk.build(SLIDING, summarizer=guard, plugins=[guard], summary_model=summary)
        await app.invoke(*clipped_session()[0])
        with pytest.raises(RuntimeError) as info:
            await app.invoke(*clipped_session()[1])
        return await app.session_events(), info.value

    events, error = adk.run(halted())
    cause = error.__cause__
    # the summary's input is one run ending at the tail ([3, 4): the clipped event 2 breaks it),
    # so the diagnostic names [0, 3) (a smaller input only refuses more)
    assert isinstance(cause, UnrecoverableCompactionError) and "offsets [0, 3)" in str(cause), error
    assert not any(e.actions and e.actions.compaction for e in events)  # nothing was written
    assert adk.context(events)[0] == adk.raw_tags(events)  # nothing left the context

    store_dir = tmp_path / "spill"

    async def spilled() -> tuple[list[Any], list[str], Any]:
        summary = adk.SummaryModel(summary_tokens=10)
        guard = guarded(summary, recovery_floor_span=0, on_refuse="spill", store=store_dir, log=f"{tmp_path}/logs/")
        app = await adk.build(SLIDING, summarizer=guard, plugins=[guard], summary_model=summary)
        await play(app, clipped_session())
        return await app.session_events(), summary.prompts, app

    events, prompts, _app = adk.run(spilled())
    store = FileSpillStore(store_dir)
    extra, restored = spilled_tags(store, events)
    assert 2 in extra and adk.lost(events, prompts, extra) == set()
    originals = {e.id: e for e in events}
    for r in restored:  # byte-exact: the same event, the same JSON
        assert r.model_dump_json() == originals[r.id].model_dump_json()
    assert adk.lost(events, prompts) == {2}  # the summary alone still lost it: the spill holds it
    log = (tmp_path / "logs").glob("*.jsonl")
    lines = [json.loads(x) for p in log for x in p.read_text().splitlines()]
    assert any(x.get("event") == "spill" for x in lines) and any(x.get("event") == "refusal" for x in lines)


def test_defer_keeps_the_events_in_the_context(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        guard = guarded(recovery_floor_span=0, on_refuse="defer")
        app = await adk.build(SLIDING, summarizer=guard, plugins=[guard])
        await play(app, clipped_session())
        return await app.session_events()

    events = adk.run(go())
    raw, _ = adk.context(events)
    assert 2 in raw  # the long response never left the context


def token_session(n: int) -> list[tuple[int, list[Step]]]:
    return [(10 + (i % 3) * 7, [Step(5 + (i % 4) * 3)]) for i in range(n)]


@pytest.mark.parametrize("retention", [2, 4])
def test_the_guard_agrees_with_the_preset_on_token_threshold(retention: int) -> None:
    """The preset calls floor <= event_retention_size safe: the guard refuses none of those
    compactions, and writes the same compactions as the unguarded run; a floor above it is
    refused at the first compaction (the preset's floor finding)."""

    async def go(guard: GuardedCompaction | None) -> list[Any]:
        kw = {"token_threshold": 60, "event_retention_size": retention}
        app = await adk.build(kw, summarizer=guard, plugins=[guard] if guard else [])
        await play(app, token_session(14))
        return await app.session_events()

    plain = adk.run(go(None))
    safe = adk.run(go(guarded(recovery_floor_span=retention, on_refuse="halt")))
    ranges = [(e.actions.compaction.start_timestamp is not None) for e in plain if e.actions.compaction]
    assert len(ranges) >= 3
    assert adk.context(plain)[0] == adk.context(safe)[0]
    assert len([e for e in safe if e.actions.compaction]) == len(ranges)
    with pytest.raises(RuntimeError) as info:
        adk.run(go(guarded(recovery_floor_span=retention + 1, on_refuse="halt")))
    assert isinstance(info.value.__cause__, UnrecoverableCompactionError)
    assert "floor" in str(info.value.__cause__)


def test_sliding_window_overlap_rereads_are_coverage() -> None:
    """overlap >= interval: a later window contains an earlier summary's range and re-reads its
    events; the earlier summary leaves unseen, and the guard counts the re-read events as covered
    (the preset calls floor 0 safe here)."""

    async def go() -> list[Any]:
        guard = guarded(recovery_floor_span=0, on_refuse="halt")
        app = await adk.build({"compaction_interval": 2, "overlap_size": 3}, summarizer=guard, plugins=[guard])
        await play(app, [(6, [Step(5)])] * 8)
        return await app.session_events()

    events = adk.run(go())
    assert len([e for e in events if e.actions.compaction]) == 4


async def restart_run(service: Any, session: list[tuple[int, list[Step]]], restarts: set[int], tmp: Path,
                      config: dict[str, Any]) -> tuple[list[Any], list[str], int]:
    """Play ``session``, building a new guard and runner (a new process) before each invocation
    in ``restarts``; the same session service throughout."""
    summary = adk.SummaryModel(summary_tokens=10)
    store = tmp / "spill"
    sid: str | None = None
    app: adk.Adk | None = None
    guards = 0
    for i, (user, steps) in enumerate(session):
        if app is None or i in restarts:
            guard = guarded(summary, recovery_floor_span=0, on_refuse="spill", store=store, log=f"{tmp}/logs/")
            guards += 1
            app = await adk.build(config, summarizer=guard, plugins=[guard], service=service, session_id=sid,
                                  summary_model=summary)
            if sid is not None:
                app.raw = len(adk.raw_tags(await app.session_events()))
            sid = app.session_id
        await app.invoke(user, steps)
    assert app is not None
    return await app.session_events(), summary.prompts, guards


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("persistent", ["memory", "sqlite"])
def test_a_restart_at_random_points_continues_the_session(tmp_path: Path, seed: int, persistent: str) -> None:
    """Guard state lives in the session's state (the compaction event's state_delta): a new
    guard and runner over the same session service continue it, appending to the same log;
    the compactions, spills and oracle are those of one uninterrupted run."""
    rng = random.Random(seed)
    session = [(6, [Step(1, call=rng.choice([5, 600]), tail_tag=True), Step(5)]) if rng.random() < 0.5
               else (6, [Step(5)]) for _ in range(8)]
    restarts = {i for i in range(1, 8) if rng.random() < 0.5} or {4}
    config = {"compaction_interval": 2, "overlap_size": 1}

    def service(name: str) -> Any:
        return InMemorySessionService() if persistent == "memory" else SqliteSessionService(str(tmp_path / name))

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    once, once_prompts, _ = adk.run(restart_run(service("a.db"), session, set(), tmp_path / "a", config))
    again, again_prompts, guards = adk.run(restart_run(service("b.db"), session, restarts, tmp_path / "b", config))
    assert guards == len(restarts) + 1
    assert once_prompts == again_prompts
    assert adk.context(once) == adk.context(again)
    a_extra, _ = spilled_tags(FileSpillStore(tmp_path / "a" / "spill"), once)
    b_extra, _ = spilled_tags(FileSpillStore(tmp_path / "b" / "spill"), again)
    assert a_extra == b_extra and adk.lost(again, again_prompts, b_extra) == set()
    logs = list((tmp_path / "b" / "logs").glob("*.jsonl"))
    assert len(logs) == 1
    kinds = [json.loads(x).get("event") for x in logs[0].read_text().splitlines()]
    compactions = len([e for e in again if e.actions.compaction])
    assert kinds.count("compact") == compactions == 4  # after invocations 1, 3, 5 and 7
    # a restarted guard resumes (a resume line) at its first compaction: one per later epoch that
    # holds a compaction
    starts = sorted(restarts)
    epochs = [range(a, b) for a, b in zip(starts, [*starts[1:], 8], strict=True)]
    assert kinds.count("resume") == sum(1 for r in epochs if any(k % 2 for k in r))
    assert kinds[0] == "session" and "session" not in kinds[1:]


def test_without_rereads_the_overlap_window_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-read extension is what makes the previous test pass: without it the earlier
    summary's coverage is a hole and the guard halts (the check is live)."""
    monkeypatch.setattr(GuardedCompaction, "_reread", staticmethod(lambda plan, *args: plan))
    with pytest.raises(RuntimeError) as info:
        test_sliding_window_overlap_rereads_are_coverage()
    assert isinstance(info.value.__cause__, UnrecoverableCompactionError)


def test_a_session_compacted_before_the_guard_is_adopted(tmp_path: Path) -> None:
    async def go(mode: str) -> tuple[list[Any], Any]:
        service = InMemorySessionService()
        app = await adk.build(SLIDING, service=service)
        await play(app, [(6, [Step(5)])] * 3)  # compacted three times, unguarded
        guard = guarded(recovery_floor_span=0, on_unknown_history=mode, log=f"{tmp_path}/{mode}/")
        later = await adk.build(SLIDING, summarizer=guard, plugins=[guard], service=service,
                                session_id=app.session_id)
        later.raw = app.raw
        try:
            await play(later, [(6, [Step(5)])] * 2)
        except RuntimeError as exc:
            return await later.session_events(), exc
        return await later.session_events(), None

    events, error = adk.run(go("adopt"))
    assert error is None
    assert len([e for e in events if e.actions.compaction]) == 5  # three before the guard, two guarded
    log = next((tmp_path / "adopt").glob("*.jsonl")).read_text().splitlines()
    adopt = [json.loads(x) for x in log if json.loads(x).get("event") == "adopt"]
    assert adopt and adopt[0]["range"] == [0, 6]
    _events, error = adk.run(go("refuse"))
    assert error is not None and isinstance(error.__cause__, AdapterError)
    assert "before the guard came" in str(error.__cause__)


def test_the_guard_must_also_be_a_plugin() -> None:
    async def go() -> list[Any]:
        guard = guarded(recovery_floor_span=0)
        app = await adk.build(SLIDING, summarizer=guard)  # not in plugins
        await play(app, [(6, [Step(5)])] * 2)
        return await app.session_events()

    events = adk.run(go())  # ADK logs the guard's error and skips the compaction: nothing leaves
    assert not any(e.actions.compaction for e in events)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="recovery_floor_span"):
        GuardedCompaction()
    with pytest.raises(ValueError, match="floor_unit"):
        GuardedCompaction(recovery_floor_span=1, floor_unit="tokens")
    with pytest.raises(TypeError, match="inner"):
        GuardedCompaction(object(), recovery_floor_span=1)  # type: ignore[arg-type]

    class Custom(LlmEventSummarizer.__mro__[1]):  # type: ignore[misc,name-defined]
        async def maybe_summarize_events(self, *, events: list[Any]) -> Any:
            return None

    with pytest.raises(TypeError, match="render="):
        GuardedCompaction(Custom(), recovery_floor_span=1)
    GuardedCompaction(Custom(), recovery_floor_span=1, render=lambda events: "")


def test_the_integrations_snippet_builds_the_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/integrations.md's Google ADK snippet runs offline as printed (it builds; nothing calls
    the model) and wires the one guard as summarizer and plugin."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text(encoding="utf-8")
    part = doc[doc.index("## Google ADK 2"):]
    part = part[: part.index("\n## ", 1)]
    snippets = re.findall(r"```python\n(.*?)```", part, flags=re.S)
    assert len(snippets) == 1
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "docs_integrations_adk"}
    exec(compile(snippets[0], "integrations.md:google-adk", "exec"), namespace)  # the doc's own code
    guard = namespace["guard"]
    assert namespace["app"].events_compaction_config.summarizer is guard and guard in namespace["app"].plugins


@pytest.mark.parametrize(("interval", "overlap"), [(1, 0), (2, 1), (3, 1), (2, 2), (1, 3), (3, 5)])
def test_the_guard_never_refuses_what_the_preset_calls_safe_on_the_sliding_window(interval: int, overlap: int) -> None:
    """Sliding window, floor 0, tool responses within the clip: check-config says safe; the guard
    (halt) lets every compaction through, the same ones the unguarded run makes, and nothing is
    lost. Floor 1 (the preset's counterexample: nothing stays verbatim) is refused at the first."""
    from tests.presets.test_google_adk_preset import check_config

    shape = (f'name = "p"\nturn_tokens = [1, 249]\nmessages_per_turn = [2, 6]\nfloor_unit = "messages"\n'
             f'[framework]\nname = "google_adk.EventsCompactionConfig"\ncompaction_interval = {interval}\n'
             f"overlap_size = {overlap}\n")
    assert check_config(f"floor = 0\n{shape}")["verdict"] == "safe"
    assert check_config(f"floor = 1\n{shape}")["verdict"] == "unsafe"
    rng = random.Random(interval * 10 + overlap)  # invocations of 12 to 213 tokens, 2 to 6 events
    session = [(6, [*(Step(1, call=rng.choice([5, 100])) for _ in range(rng.choice([0, 0, 1, 2]))), Step(5)])
               for _ in range(9)]
    config = {"compaction_interval": interval, "overlap_size": overlap}

    async def go(floor: int | None) -> tuple[list[Any], list[str]]:
        summary = adk.SummaryModel(summary_tokens=10)
        guard = None if floor is None else guarded(summary, recovery_floor_span=floor, on_refuse="halt")
        app = await adk.build(config, summarizer=guard, plugins=[guard] if guard else [], summary_model=summary)
        await play(app, session)
        return await app.session_events(), summary.prompts

    plain, _ = adk.run(go(None))
    events, prompts = adk.run(go(0))
    assert [adk.context(events[:i + 1]) for i, e in enumerate(events) if e.actions.compaction] == \
        [adk.context(plain[:i + 1]) for i, e in enumerate(plain) if e.actions.compaction]
    assert adk.lost(events, prompts) == set()
    with pytest.raises(RuntimeError) as info:
        adk.run(go(1))
    assert "floor" in str(info.value.__cause__)


def test_one_guard_serves_sessions_running_at_once(tmp_path: Path) -> None:
    """Two sessions (two apps, one session service) run concurrently through one guard: each has
    its own log and state, each loss is spill-recovered, no offsets mixed (the second session's
    tags start at 100)."""
    import asyncio

    async def go() -> list[list[Any]]:
        summary = adk.SummaryModel(summary_tokens=10)
        guard = guarded(summary, recovery_floor_span=0, on_refuse="spill", store=tmp_path / "spill",
                        log=f"{tmp_path}/logs/")
        first = await adk.build(SLIDING, summarizer=guard, plugins=[guard], summary_model=summary)
        second = await adk.build(SLIDING, summarizer=guard, plugins=[guard], summary_model=summary,
                                 service=first.service)
        second.raw = 100
        await asyncio.gather(play(first, clipped_session()), play(second, clipped_session()))
        return [await a.session_events() for a in (first, second)]

    results = adk.run(go())
    store = FileSpillStore(tmp_path / "spill")
    for events, base in zip(results, (0, 100), strict=True):
        assert adk.raw_tags(events) == list(range(base, base + 8))
        extra, _ = spilled_tags(store, events)
        assert {base + 2} <= extra <= set(range(base, base + 8))
    logs = sorted((tmp_path / "logs").glob("*.jsonl"))
    assert len(logs) == 2
    for log in logs:
        kinds = [json.loads(x)["event"] for x in log.read_text().splitlines()]
        assert kinds.count("compact") == 3 and kinds.count("session") == 1


@pytest.mark.parametrize("on_refuse", ["defer", "halt"])
def test_a_restart_after_a_refusal_continues_the_session(tmp_path: Path, on_refuse: str) -> None:
    """A refused compaction writes no event, but the guard recorded the session's new events:
    their state goes into the session with its next event, so a new guard and runner continue the
    session (a resume line), and its next compaction is decided, not failed."""

    async def go() -> tuple[list[Any], list[str]]:
        service = InMemorySessionService()
        summary = adk.SummaryModel(summary_tokens=10)
        guard = guarded(summary, recovery_floor_span=0, on_refuse=on_refuse, log=f"{tmp_path}/logs/")
        app = await adk.build(SLIDING, summarizer=guard, plugins=[guard], service=service, summary_model=summary)
        await app.invoke(*clipped_session()[0])  # refused: the clipped response would leave
        if on_refuse == "halt":
            with pytest.raises(RuntimeError):
                await app.invoke(*clipped_session()[1])  # the halt, raised before the model call
        await app.invoke(*clipped_session()[1])  # its events carry the state; refused again
        guard2 = guarded(summary, recovery_floor_span=0, on_refuse="spill", store=tmp_path / "spill",
                         log=f"{tmp_path}/logs/")
        later = await adk.build(SLIDING, summarizer=guard2, plugins=[guard2], service=service,
                                session_id=app.session_id, summary_model=summary)
        later.raw = len(adk.raw_tags(await app.session_events()))
        await later.invoke(6, [Step(5)])  # a new process: resumes, spills, compacts
        return await later.session_events(), summary.prompts

    events, prompts = adk.run(go())
    assert [e for e in events if e.actions.compaction]
    kinds = [json.loads(x)["event"] for p in (tmp_path / "logs").glob("*.jsonl") for x in p.read_text().splitlines()]
    # one log, continued: the refused compactions' appends past the stored state are the
    # session's newer events (ADK deletes none), placed again by the new process
    assert kinds.count("session") == 1 and kinds[-2:] == ["spill", "compact"]
    assert kinds.count("append") == 3  # once per compaction attempt: no event placed twice
    from tailguard.cli.main import main

    code = main(["audit", "--format", "json", str(next((tmp_path / "logs").glob("*.jsonl")))], stdout=io.StringIO())
    assert code in (0, 1)  # one well-formed log (its refusals are findings, not errors)
    extra, _ = spilled_tags(FileSpillStore(tmp_path / "spill"), events)
    assert adk.lost(events, prompts, extra) == set()


def test_without_recovery_a_restart_after_a_refusal_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recovery is what makes the previous test pass: without it the new process cannot
    continue the log, and its compaction fails (the check is live)."""
    monkeypatch.setattr(GuardedCompaction, "_recover", lambda self, sid, value, context: None)
    with pytest.raises(AssertionError):
        test_a_restart_after_a_refusal_continues_the_session(tmp_path, "defer")


def test_a_summary_over_other_events_than_it_was_given_is_refused() -> None:
    """_confirm: a summarizer whose event's range is not the range of the events it was given
    writes nothing; the guard says so at the session's next run."""

    class Narrow(LlmEventSummarizer):
        async def maybe_summarize_events(self, *, events: list[Any]) -> Any:
            out = await super().maybe_summarize_events(events=events)
            out.actions.compaction.end_timestamp = events[0].timestamp  # covers the first event only
            return out

    async def go() -> tuple[list[Any], BaseException]:
        summary = adk.SummaryModel(summary_tokens=10)
        guard = GuardedCompaction(Narrow(llm=summary), recovery_floor_span=0)
        app = await adk.build(SLIDING, summarizer=guard, plugins=[guard], summary_model=summary)
        await app.invoke(6, [Step(5)])
        with pytest.raises(RuntimeError) as info:
            await app.invoke(6, [Step(5)])
        return await app.session_events(), info.value

    events, error = adk.run(go())
    assert isinstance(error.__cause__, AdapterError) and "is not the range" in str(error.__cause__)
    assert not any(e.actions.compaction for e in events)


@pytest.mark.parametrize("seed", [0, 5])
def test_token_threshold_with_tool_calls_is_guarded(seed: int) -> None:
    """What the preset refuses by name (token threshold with tool calls: ADK moves its cut to keep
    a call with its response) the guard decides at run time: every compaction goes through, with
    nothing lost."""
    rng = random.Random(seed)

    async def go() -> tuple[list[Any], list[str]]:
        summary = adk.SummaryModel(summary_tokens=10)
        guard = guarded(summary, recovery_floor_span=0, on_refuse="halt")
        app = await adk.build({"token_threshold": 80, "event_retention_size": rng.choice([0, 1, 2, 3])},
                              summarizer=guard, plugins=[guard], summary_model=summary)
        calls = [[Step(1, call=rng.choice([5, 30])) for _ in range(rng.choice([0, 1, 2]))] for _ in range(12)]
        await play(app, [(rng.choice([5, 20]), [*c, Step(rng.choice([5, 15]))]) for c in calls])
        return await app.session_events(), summary.prompts

    events, prompts = adk.run(go())
    assert len([e for e in events if e.actions.compaction]) >= 3 and adk.lost(events, prompts) == set()


def test_closing_the_runner_closes_the_guards_logs(tmp_path: Path) -> None:
    async def go() -> GuardedCompaction:
        guard = guarded(recovery_floor_span=0, on_refuse="defer", log=f"{tmp_path}/logs/")
        app = await adk.build(SLIDING, summarizer=guard, plugins=[guard])
        await play(app, [(6, [Step(5)])] * 2)
        assert guard.session_guard(app.session_id) is not None
        await app.runner.close()
        assert guard.session_guard(app.session_id) is None
        return guard

    adk.run(go())
