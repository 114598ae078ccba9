"""The one event dispatch (issue 24): ``Ledger.from_log``, ``replay`` and the HTML session view
read a log through :func:`tailguard.runtime.dispatch.apply_events`, so they cannot drift apart."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tailguard.audit.html.session_data import collect
from tailguard.audit.replay import Verdict, replay
from tailguard.runtime.dispatch import apply_events
from tailguard.runtime.eventlog import (
    Adopt,
    Append,
    Compact,
    Event,
    EventLogError,
    Refusal,
    Resume,
    Session,
    Spill,
    Truncate,
    iter_events,
)
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.ledger_core import LedgerCore

HEADER = {"event": "session", "unit": "turns", "recovery_floor_span": 3, "floor_unit": "turns",
          "truncator_unit": "turns"}


def _lines(*events: dict[str, Any]) -> list[bytes]:
    return [(json.dumps(e) + "\n").encode() for e in (HEADER, *events)]


# a session with every kind of line: appends, a truncation and a spill, compactions that see,
# keep and drop summaries, an eviction and a refusal
LOG = _lines(
    {"event": "append", "count": 12},
    {"event": "compact", "summary_input": [0, 9], "summary_covers": [0, 9], "tail_start": 9, "summary": "a"},
    {"event": "append", "count": 9},
    {"event": "truncate", "range": [9, 12]},
    {"event": "compact", "summary_input": [12, 18], "summary_covers": [12, 18], "tail_start": 18,
     "summary": "b", "saw": [], "keeps": ["a"]},
    {"event": "refusal", "summary_input": [0, 21], "summary_covers": [0, 18], "tail_start": 18,
     "failed": ["no_hole"], "holes": [[9, 12]]},
    {"event": "append"},
    {"event": "spill", "range": [9, 12]},
    {"event": "evict_summary", "summary": "a"},
    {"event": "append", "count": 6},
    {"event": "compact", "summary_input": [18, 25], "summary_covers": [18, 25], "tail_start": 25,
     "saw": ["b"]},
    {"event": "append", "count": 3},
)


def _state(core: LedgerCore) -> tuple[object, ...]:
    ctx = core.summaries
    return (core.n, ctx.ids, [(sid, list(ctx.get(sid).coverage)) for sid in ctx.ids], list(core.truncated),
            list(core.spilled), list(core.recovered), list(core.lost))


def _core() -> LedgerCore:
    return LedgerCore(3, "turns", "turns", track_origins=True)


def test_a_compaction_is_yielded_before_it_is_recorded_and_recorded_when_the_next_event_is_asked_for() -> None:
    core = _core()
    events: list[Event] = [Append(2, 10), Compact(3, (0, 8), (0, 8), 8, None, "s"), Append(4, 1)]
    it = apply_events(core, events, "t")
    ev = next(it)
    assert ev == events[1] and core.n == 10 and not core.summaries
    with pytest.raises(StopIteration):
        next(it)
    assert core.n == 11 and core.summaries.ids == ("s",) and list(core.recovered) == [(0, 8)]


def test_refusal_lines_are_yielded_and_change_nothing() -> None:
    core = _core()
    refusal = Refusal(3, (0, 4), (0, 4), 4, ("no_hole",), ((0, 1),))
    before = _state(core)
    assert list(apply_events(core, [refusal], "t")) == [refusal]
    assert _state(core) == before


def test_ranges_inside_is_the_ledgers_rule_and_the_audit_records_ranges_as_they_are() -> None:
    for ev in (Truncate(3, 2, 40), Spill(3, 5, 4, None), Truncate(3, -1, 2)):
        with pytest.raises(EventLogError) as info:
            list(apply_events(_core(), [Append(2, 10), ev], "t.jsonl", ranges_inside=True))
        assert str(info.value) == f"t.jsonl:3: range: [{ev.lo}, {ev.hi}) is not an interval inside the history [0, 10)"
        core = _core()
        assert list(apply_events(core, [Append(2, 10), ev], "t.jsonl")) == []
        assert [why for why, _ in core.bounds_problems()]  # recorded: strict refuses it as well_formed


def test_input_errors_name_the_source_line_and_field() -> None:
    cases: list[tuple[list[Event], str]] = [
        ([Append(2, -1)], "t:2: count: expected a count >= 0, got -1"),
        ([Compact(2, (0, 0), (0, 0), 0, None, None, ("x",))],
         "t:2: saw[0]: no summary 'x' is in the context here"),
        ([Compact(2, (0, 0), (0, 0), 0, None, None, None, ("x",))],
         "t:2: keeps[0]: no summary 'x' is in the context here"),
        ([Compact(2, (0, 0), (0, 0), 0, None, "a"), Compact(3, (0, 0), (0, 0), 0, None, "a")],
         "t:3: summary: summary id 'a' was already used at line 2; ids are unique in a session"),
    ]
    for events, message in cases:
        with pytest.raises(EventLogError) as info:
            list(apply_events(_core(), events, "t"))
        assert str(info.value) == message
    with pytest.raises(ValueError) as plain:
        list(apply_events(_core(), [Session(2, "turns", 3, "turns", "turns")], "t"))
    assert str(plain.value) == "line 2: a second session header"


def test_every_reader_appends_through_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drift of issue 24: replay (and the page's shadow core) added to ``n`` directly."""
    calls: list[int] = []
    original = LedgerCore.append

    def spy(self: LedgerCore, count: int = 1) -> None:
        calls.append(count)
        original(self, count)

    monkeypatch.setattr(LedgerCore, "append", spy)
    appends = [json.loads(x).get("count", 1) for x in LOG if b'"append"' in x]
    Ledger.from_log(LOG)
    assert calls == appends
    calls.clear()
    list(replay(iter_events(LOG)))
    assert calls == appends
    calls.clear()
    collect(LOG, "t", "strict")
    assert calls == appends  # one core: the page reads replay's, it keeps no shadow of its own


def test_replay_judges_each_compaction_on_the_state_from_log_rebuilds_from_the_lines_before_it() -> None:
    core = LedgerCore(3, "turns", "turns", track_origins=True, seed=False)
    seen = 0
    for v in replay(iter_events(LOG), explain=True, core=core):
        if isinstance(v, Verdict):
            seen += 1
            before = Ledger.from_log(LOG[: v.line - 1])
            assert _state(core) == _state(before.core), v.line
            assert v.history_end == before.history_end
    assert seen == 3
    assert _state(core) == _state(Ledger.from_log(LOG).core)


def test_from_log_and_replay_count_the_same_refusal_lines() -> None:
    logged = sum(1 for v in replay(iter_events(LOG)) if isinstance(v, Refusal))
    assert logged == Ledger.from_log(LOG).refusals == 1


def test_the_session_view_reads_the_core_replay_judged_on() -> None:
    data = collect(LOG, "t", "partitioned")
    rows = {r.line: r for r in data.rows}
    # line 6 ("b") saw nothing and keeps "a": it inherits a's coverage only
    assert rows[6].inherited == [(0, 9)] and rows[6].honest == [(12, 18)]
    # line 12 saw "b" (a was evicted): b's coverage is inherited, [9, 12) was spilled meanwhile
    assert rows[12].inherited == [(12, 18)]
    assert data.n == 31 and data.refusals == 1


ADOPTED = _lines(
    {"event": "adopt", "range": [0, 10], "reason": "an existing thread", "summary": "old"},
    {"event": "append", "count": 10},
    {"event": "compact", "summary_input": [10, 17], "summary_covers": [10, 17], "tail_start": 17, "saw": []},
    {"event": "append", "count": 2},
)


def test_an_adoption_is_recorded_then_yielded_and_every_reader_sees_it() -> None:
    core = _core()
    it = apply_events(core, [Adopt(2, 10, "why", None)], "t")
    ev = next(it)
    assert ev == Adopt(2, 10, "why", None)
    assert core.n == 10 and core.summaries.ids == ("adopted",) and list(core.unverified) == [(0, 10)]
    # the compaction at line 4 dropped the adopted summary unseen: its offsets are a hole for all
    out = [v for v in replay(iter_events(ADOPTED), profile="partitioned") if isinstance(v, Verdict)]
    assert [v.decision.holes for v in out] == [((0, 10),)]
    lost = Ledger.from_log(ADOPTED).core.lost_coverage
    assert lost is not None and [(lo, hi) for lo, hi, _ in lost.within(0, 20)] == [(0, 10)]
    data = collect(ADOPTED, "t", "partitioned")  # the page reads the same core: no shadow to drift
    assert data.n == 22 and [r.holes[0][0] for r in data.rows] == [(0, 10)]


def test_an_adoption_after_other_events_and_a_resume_that_does_not_continue_are_input_errors() -> None:
    with pytest.raises(EventLogError) as info:
        list(apply_events(_core(), [Append(2, 1), Adopt(3, 10, "why", None)], "t"))
    assert str(info.value) == "t:3: event: adopt must come before every other event (it names what predates the guard)"
    with pytest.raises(EventLogError) as info:
        list(apply_events(_core(), [Append(2, 1), Resume(4, "sha256:x", 2)], "t"))
    assert str(info.value).startswith("t:4: line: the snapshot restored here was taken at line 2, but the log "
                                      "reached line 3")
    with pytest.raises(EventLogError) as info:
        list(apply_events(_core(), [Append(2, 1), Resume(3, "sha256:x", 2)], "t"))
    assert str(info.value).startswith("t:3: snapshot: the state restored here (sha256:x) is not the state")
