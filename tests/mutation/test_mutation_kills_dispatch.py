"""Tests written to kill mutants of ``tailguard.runtime.dispatch`` (tools/mutation.sh --subset
tests/mutation/ledger.toml, whose test list does not hold the snapshot tests): what an ``adopt``
line records and names, its errors and those of a ``resume`` line, by their exact text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tailguard.audit.replay import replay
from tailguard.runtime.dispatch import apply_events, resume_problem
from tailguard.runtime.eventlog import Adopt, Append, EventLogError, Resume, iter_events
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.runtime.snapshot import state_digest

HEADER = {"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns",
          "truncator_unit": "turns"}


def _log(*events: dict[str, Any]) -> list[str]:
    return [json.dumps(e) + "\n" for e in (HEADER, *events)]


def _adopted(summary: str | None) -> list[str]:
    adopt: dict[str, Any] = {"event": "adopt", "range": [0, 10], "reason": "an existing thread"}
    if summary is not None:
        adopt["summary"] = summary
    return _log(adopt, {"event": "append", "count": 6},
                {"event": "compact", "summary_input": [10, 14], "summary_covers": [10, 14], "tail_start": 14,
                 "saw": []})


@pytest.mark.parametrize("summary", ["old", None])
def test_an_adopt_line_records_its_summary_with_its_line(summary: str | None) -> None:
    sid = summary or "adopted"
    before = Ledger.from_log(_adopted(summary)[:2])
    assert (before.history_end, before.summaries, before.unverified) == (10, (sid,), ((0, 10),))
    assert before.core.summaries.get(sid).tag == 2
    led = Ledger.from_log(_adopted(summary))
    lost = led.core.lost_coverage
    assert lost is not None and lost.within(0, 20) == [
        (0, 10, f"summary {sid!r} (line 2), which left the context unseen by the summarizer at line 4")]


def test_replay_yields_the_adopt_line_once_it_is_recorded() -> None:
    core = LedgerCore(2, "turns", "turns", track_origins=True, seed=False)
    seen: list[tuple[object, int]] = []
    for v in replay(iter_events([x.encode() for x in _adopted("old")]), core=core):
        if isinstance(v, Adopt):
            seen.append((v, core.n))
    assert seen == [(Adopt(2, 10, "an existing thread", "old"), 10)]


def test_an_adopt_line_after_another_event_is_an_input_error_naming_it() -> None:
    with pytest.raises(EventLogError) as info:
        Ledger.from_log(_log({"event": "append", "count": 1},
                             {"event": "adopt", "range": [0, 4], "reason": "late"}))
    assert str(info.value) == ("<log>:3: event: adopt must come before every other event (it names what "
                               "predates the guard)")


def test_a_resume_line_must_follow_the_line_its_snapshot_was_taken_at_and_match_its_state() -> None:
    core = LedgerCore(2, "turns", "turns")
    list(apply_events(core, [Append(2, 3)], "t"))
    digest = state_digest(core)
    assert resume_problem(core, Resume(3, digest, 2)) is None
    assert list(apply_events(core, [Resume(3, digest, 2)], "t")) == []
    assert resume_problem(core, Resume(5, digest, 2)) == (
        "line", "the snapshot restored here was taken at line 2, but the log reached line 4: lines were "
        "written in between by another writer")
    assert resume_problem(core, Resume(3, "sha256:0", 2)) == (
        "snapshot", f"the state restored here (sha256:0) is not the state the log reached at line 2 ({digest})")
    with pytest.raises(EventLogError) as info:
        list(apply_events(core, [Resume(3, "sha256:0", 2)], "t.jsonl"))
    assert str(info.value) == (f"t.jsonl:3: snapshot: the state restored here (sha256:0) is not the state the "
                               f"log reached at line 2 ({digest})")


def test_an_adopt_line_may_not_reuse_an_id_a_compaction_used_before_it() -> None:
    # a compaction of nothing, then evicted: the state is empty again, but its id "0" stays used
    log = _log({"event": "compact", "summary_input": [0, 0], "summary_covers": [0, 0], "tail_start": 0},
               {"event": "evict_summary", "summary": "0"},
               {"event": "adopt", "range": [0, 4], "reason": "late", "summary": "0"})
    with pytest.raises(EventLogError) as info:  # a log: the adopt line is not the first event (SPEC.md 11.4)
        Ledger.from_log(log)
    assert str(info.value) == ("<log>:4: event: adopt must come before every other event (it names what "
                               "predates the guard)")
    core = LedgerCore(2, "turns", "turns")  # the core's own check, for its other callers
    core.compact((0, 0), (0, 0), 2)
    core.evict("0", 3)
    assert core.adopt_problem(4, "0") == ("summary", "summary id '0' is already used")
