"""Tests written to kill surviving mutants of ``tailguard.runtime.ledger`` (tools/mutation.sh --subset
tests/mutation/ledger.toml): the argument errors of each call name the argument, what
``evict_summary`` and ``log_refusal`` write and record, which lines the audit names for a hole
(``Verdict.truncated_at``), and that ``explain`` judges the lineage it is given."""

from __future__ import annotations

import fcntl
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tailguard._generated.checker import Decision
from tailguard.audit.replay import Verdict, _hole_truncation_lines, replay
from tailguard.runtime.eventlog import EventLogError, iter_events
from tailguard.runtime.ledger import Ledger, LogFailedError, TornLineWarning
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.runtime.ledger_explain import explain

SHAPE: dict[str, Any] = {"summary_input": (6, 10), "summary_covers": (6, 8), "tail_start": 8}


def _lines(log: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.getvalue().splitlines()]


def _evicted() -> tuple[Ledger, io.StringIO]:
    """Summary '0' covers [0, 6) (line 3) and is evicted at line 4."""
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(10)
    led.commit(summary_input=(0, 10), summary_covers=(0, 6), tail_start=6)
    led.evict_summary("0")
    return led, log


def test_evict_summary_logs_the_id_and_names_its_line_in_later_holes() -> None:
    led, log = _evicted()
    assert _lines(log)[-1] == {"event": "evict_summary", "summary": "0"}
    assert led.summaries == ()
    d = led.decide(**SHAPE)
    assert d == Decision("refuse", ("no_hole",), ((0, 6),))
    assert led.explain(d, **SHAPE) == [
        "no_hole: offsets [0, 6) were covered only by summary '0' (line 3), which was evicted "
        "from the context at line 4"]
    led.truncate(8, 9)  # line 5: the eviction took line 4, not none
    assert led.core.origins is not None and led.core.origins.within(8, 9) == [(5, 5)]


@pytest.mark.parametrize(("sid", "error", "message"), [
    (3, TypeError, "summary: expected a summary id (string), got 3"),
    ("zz", ValueError, "summary: no summary 'zz' is in the context here"),
    ("0", ValueError, "summary: no summary '0' is in the context here (it was created at line 3 "
                      "and has left the context)"),
])
def test_evict_summary_refuses_an_id_not_in_the_context_and_records_nothing(
        sid: object, error: type[Exception], message: str) -> None:
    led, log = _evicted()
    before = log.getvalue()
    with pytest.raises(error) as info:
        led.evict_summary(sid)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert log.getvalue() == before
    led.append(1)
    assert _lines(log)[-1] == {"event": "append", "count": 1}


def _refused() -> tuple[Ledger, io.StringIO, Decision]:
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(10)
    led.truncate(0, 4)
    d = led.decide(**SHAPE)
    assert d == Decision("refuse", ("no_hole",), ((0, 6),))
    return led, log, d


def test_log_refusal_writes_the_refused_compaction_and_counts_it() -> None:
    led, log, d = _refused()
    led.log_refusal(d, **SHAPE)
    assert _lines(log)[-1] == {"event": "refusal", "summary_input": [6, 10], "summary_covers": [6, 8],
                               "tail_start": 8, "failed": ["no_hole"], "holes": [[0, 6]]}
    assert led.refusals == 1
    led.truncate(9, 10)  # the refusal took line 4
    assert led.core.origins is not None and led.core.origins.within(9, 10) == [(5, 5)]


@pytest.mark.parametrize(("change", "error", "message"), [
    ({"decision": "refuse"}, TypeError, "decision: expected a Decision, got 'refuse'"),
    ({"decision": Decision("allow", (), ())}, ValueError,
     "log_refusal: the decision allows; only refusals are logged as such"),
    ({"summary_input": (6,)}, TypeError, "summary_input: expected a pair (lo, hi), got (6,)"),
    ({"summary_input": [6, "10"]}, TypeError, "summary_input[1]: expected an integer, got str '10'"),
    ({"summary_covers": 6}, TypeError, "summary_covers: expected a pair (lo, hi), got 6"),
    ({"summary_covers": [6.0, 8]}, TypeError, "summary_covers[0]: expected an integer, got float 6.0"),
    ({"tail_start": "8"}, TypeError, "tail_start: expected an integer, got str '8'"),
])
def test_log_refusal_rejects_bad_arguments_naming_them(
        change: dict[str, Any], error: type[Exception], message: str) -> None:
    led, log, d = _refused()
    before = log.getvalue()
    kw: dict[str, Any] = {"decision": d, **SHAPE, **change}
    decision = kw.pop("decision")
    with pytest.raises(error) as info:
        led.log_refusal(decision, **kw)
    assert str(info.value) == message
    assert log.getvalue() == before and led.refusals == 0


def _two_summaries() -> tuple[Ledger, Decision]:
    """Summaries 'a' ([0, 4)) and 'b' ([4, 8)) in the context; a decision that saw neither."""
    led = Ledger(2)
    led.append(8)
    led.commit(summary_input=(0, 8), summary_covers=(0, 4), tail_start=4, summary="a")
    led.append(4)
    led.commit(summary_input=(4, 12), summary_covers=(4, 8), tail_start=8, summary="b", keeps=["a"])
    d = led.decide(summary_input=(8, 12), summary_covers=(8, 10), tail_start=10, saw=[])
    assert d.failed == ("no_hole",) and d.holes == ((0, 8),)
    return led, d


@pytest.mark.parametrize(("saw", "keeps"), [(None, ()), ([], ()), (["a"], ()), (["a"], ["b"]), ([], ["b"])])
def test_explain_judges_the_lineage_it_is_given(saw: list[str] | None, keeps: list[str]) -> None:
    """The sentences name the summaries that ``saw`` and ``keeps`` (as given) leave out."""
    led, d = _two_summaries()
    shape: dict[str, Any] = {"summary_input": (8, 12), "summary_covers": (8, 10), "tail_start": 10}
    got = led.explain(d, **shape, saw=saw, keeps=keeps)
    assert got == explain(led.core, "strict", d, 10, (8, 12), (8, 10), saw, keeps)
    named = {sid for sid in "ab" if f"summary {sid!r}" in got[0]}
    assert named == (set() if saw is None else {"a", "b"} - set(saw) - set(keeps))


def _replayed(explain: bool) -> list[Verdict]:
    """Truncations at lines 3 and 5 (and 4, spilled), a refused compaction at line 7."""
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(12)  # line 2
    led.truncate(4, 6)  # 3
    led.truncate(6, 8)  # 4: spilled next, so not a hole's
    led.spill(6, 8)  # 5
    led.truncate(0, 2)  # 6
    with pytest.raises(Exception, match="no_hole"):
        led.commit(summary_input=(8, 12), summary_covers=(8, 10), tail_start=10)  # refusal, 7
    led.commit(summary_input=(8, 12), summary_covers=(8, 10), tail_start=10, override="test")  # 8
    out = list(replay(iter_events(log.getvalue().splitlines()), explain=explain))
    return [v for v in out if isinstance(v, Verdict)]


def test_the_audit_names_the_lines_that_truncated_a_hole_sorted_and_only_those() -> None:
    (v,) = _replayed(explain=True)
    assert v.line == 8 and v.decision.holes == ((0, 6),)
    assert v.truncated_at == (3, 6)
    (v,) = _replayed(explain=False)
    assert v.truncated_at == ()


def test_hole_truncation_lines_needs_origins_and_holes() -> None:
    core = LedgerCore(2, "turns", "turns")  # no origins tracked
    core.append(10)
    core.truncate(0, 4, 3)
    hole = Decision("refuse", ("no_hole",), ((0, 4),))
    assert _hole_truncation_lines(core, hole) == ()
    tracked = LedgerCore(2, "turns", "turns", track_origins=True)
    tracked.append(10)
    tracked.truncate(5, 9, 4)
    tracked.truncate(0, 4, 3)
    assert _hole_truncation_lines(tracked, Decision("refuse", ("no_hole",), ((0, 4), (5, 9)))) == (3, 4)
    assert _hole_truncation_lines(tracked, Decision("refuse", ("no_hole",), ((5, 9),))) == (4,)
    assert _hole_truncation_lines(tracked, Decision("refuse", ("tail_intact",), ())) == ()


# -- Ledger.from_log -------------------------------------------------------------------------

HEADER = ('{"event": "session", "unit": "messages", "recovery_floor_span": 2, "floor_unit": "tokens", '
          '"truncator_unit": "turns"}')
SAME = ('{"event": "session", "unit": "messages", "recovery_floor_span": 2, "floor_unit": "messages", '
        '"truncator_unit": "messages"}')


def test_from_log_takes_the_units_from_the_header() -> None:
    led = Ledger.from_log([HEADER, '{"event": "append", "count": 5}'])
    core = led.core
    assert (led.unit, core.floor_unit, core.truncator_unit) == ("messages", "tokens", "turns")
    d = led.decide(summary_input=(0, 5), summary_covers=(0, 3), tail_start=3)
    assert d.failed == ("units_agree",)


@pytest.mark.parametrize("encode", [False, True])
def test_from_log_reads_text_and_byte_lines_alike_and_names_the_log(encode: bool) -> None:
    def lines(*xs: str) -> list[str | bytes]:
        return [x.encode() if encode else x for x in xs]
    led = Ledger.from_log(lines(SAME, '{"event": "append", "count": 5}'))
    assert led.history_end == 5 and led.unit == "messages"
    with pytest.raises(EventLogError) as info:
        Ledger.from_log(lines(SAME, '{"event": "truncate", "range": [0, 9]}'))
    assert str(info.value) == "<log>:2: range: [0, 9) is not an interval inside the history [0, 0)"
    with pytest.raises(EventLogError) as info:  # the reader's own error names the log too
        Ledger.from_log(lines(SAME, '{"event": "bogus"}', '{"event": "append", "count": 1}'))
    assert str(info.value).startswith("<log>:2: event: unknown event kind")
    with pytest.raises(EventLogError) as info:  # text is measured in UTF-8 bytes, as a file is
        Ledger.from_log(lines(SAME, "x" * ((16 << 20) + 1), '{"event": "append", "count": 1}'))
    assert "<log>:2:" in str(info.value) and "a line over the limit of 16,777,216 bytes" in str(info.value)


def test_from_log_keeps_no_history_unless_asked() -> None:
    log = [SAME, '{"event": "append", "count": 5}', '{"event": "truncate", "range": [0, 2]}']
    shape: dict[str, Any] = {"summary_input": (0, 5), "summary_covers": (0, 3), "tail_start": 3}
    with pytest.raises(RuntimeError, match="keep_history=True"):
        Ledger.from_log(log).equivalent_case(**shape)
    case = Ledger.from_log(log, keep_history=True).equivalent_case(**shape)
    assert case["prior_truncations"] == [[0, 2]] and case["history_end"] == 5


def test_from_log_of_a_header_alone_numbers_the_next_event_line_2(tmp_path: Path) -> None:
    led = Ledger.from_log([SAME])
    led.append(4)  # line 2
    led.truncate(0, 1)  # line 3
    assert led.core.origins is not None and led.core.origins.within(0, 1) == [(3, 3)]


def test_the_torn_line_warning_points_at_the_caller() -> None:
    with pytest.warns(TornLineWarning) as record:
        Ledger.from_log([SAME, '{"event": "app'])
    (w,) = record
    assert Path(w.filename).name != "ledger.py"
    if "MUTANT_UNDER_TEST" not in os.environ:  # mutmut's trampoline adds a frame of its own
        assert w.filename == __file__


def _log_file(tmp_path: Path, end: bytes = b"\n") -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(SAME.encode() + b"\n" + b'{"event": "append", "count": 5}' + end)
    return path


def test_from_log_continues_a_file_after_a_line_ending_in_cr(tmp_path: Path) -> None:
    path = _log_file(tmp_path, b"\r")
    led = Ledger.from_log(path)
    led.append(1)
    led.close()
    assert path.read_bytes() == (SAME.encode() + b'\n{"event": "append", "count": 5}\r'
                                 b'{"event": "append", "count": 1}\n')


def test_from_log_writes_each_line_as_it_happens_by_default(tmp_path: Path) -> None:
    path = _log_file(tmp_path)
    led = Ledger.from_log(path)
    led.append(1)
    assert path.read_bytes().endswith(b'{"event": "append", "count": 1}\n')  # before any close
    led.close()


def test_from_log_opens_the_file_append_only_and_close_on_exec(tmp_path: Path) -> None:
    path = _log_file(tmp_path)
    led = Ledger.from_log(path)
    sink = led._sink
    assert sink is not None and sink._fd is not None
    assert fcntl.fcntl(sink._fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
    assert fcntl.fcntl(sink._fd, fcntl.F_GETFL) & os.O_APPEND
    led.append(1)
    with open(path, "ab") as other:  # another writer appends between two of the ledger's lines
        other.write(b'{"event": "append", "count": 7}\n')
    with pytest.raises(LogFailedError, match="another writer continued it"):
        led.append(2)  # spec 1.2: the ledger is stale now; it fails loudly and writes nothing
    led.close()
    assert path.read_bytes().splitlines()[2:] == [
        b'{"event": "append", "count": 1}', b'{"event": "append", "count": 7}']


def test_from_log_durable_fsyncs_the_evidence_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log_file(tmp_path)
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    led = Ledger.from_log(path, durable=True)
    led.append(1)
    assert synced == []
    led.spill(0, 1)
    assert len(synced) == 1
    led.close()
    plain = Ledger.from_log(path)
    plain.spill(0, 1)
    plain.close()
    assert len(synced) == 1


def test_from_log_rebuilds_empty_ranges_and_names_each_event_by_its_line() -> None:
    led = Ledger.from_log([SAME, '{"event": "append", "count": 0}', '{"event": "append", "count": 6}',
                           '{"event": "truncate", "range": [3, 3]}', '{"event": "spill", "range": [5, 5]}',
                           '{"event": "truncate", "range": [0, 2]}'])
    assert led.history_end == 6 and list(led.core.truncated) == [(0, 2)] and list(led.core.spilled) == []
    assert led.core.origins is not None and led.core.origins.within(0, 2) == [(6, 6)]
    with pytest.raises(EventLogError) as info:
        Ledger.from_log([SAME, '{"event": "append", "count": 6}', '{"event": "spill", "range": [4, 3]}'])
    assert str(info.value) == "<log>:3: range: [4, 3) is not an interval inside the history [0, 6)"


class _Stream(io.StringIO):
    flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


@pytest.mark.parametrize("flush", [None, True, False])
def test_from_log_into_a_stream_of_ones_own_flushes_as_asked(flush: bool | None) -> None:
    out = _Stream()
    kw: dict[str, Any] = {} if flush is None else {"flush": flush}
    led = Ledger.from_log([SAME], log=out, **kw)
    before = out.flushes
    led.append(3)
    assert out.getvalue() == '{"event": "append", "count": 3}\n'
    assert out.flushes - before == (0 if flush is False else 1)
    with pytest.raises(ValueError, match="durable=True needs a log with a file descriptor"):
        Ledger.from_log([SAME], log=io.StringIO(), durable=True)


def test_from_log_closes_the_file_it_opened_when_the_sink_cannot_be_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both descriptors: the one the log is read through and the one the sink appends with
    (opened by ``LogSink.resuming`` under the log's lock, issue 30)."""
    from tailguard.runtime.ledger_log import LogSink

    path = _log_file(tmp_path)
    opened: list[int] = []
    real_open = os.open

    def spy_open(*args: Any, **kw: Any) -> int:
        fd = real_open(*args, **kw)
        opened.append(fd)
        return fd

    def broken_sink(*args: Any, **kw: Any) -> Any:
        raise RuntimeError("no sink")

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(LogSink, "__init__", broken_sink)
    with pytest.raises(RuntimeError, match="no sink"):
        Ledger.from_log(path)
    assert len(opened) == 2
    for fd in opened:
        with pytest.raises(OSError):
            os.fstat(fd)  # closed


def _c(i: list[int], c: list[int], t: int, **kw: Any) -> str:
    return json.dumps({"event": "compact", "summary_input": i, "summary_covers": c, "tail_start": t, **kw})


LINEAGE = [SAME, '{"event": "append", "count": 10}',
           _c([0, 10], [0, 4], 4, summary="a"),  # line 3
           _c([4, 10], [4, 6], 6, summary="b", saw=[], keeps=["a"]),  # line 4: b covers [4, 6) only
           '{"event": "append", "count": 2}',
           '{"event": "evict_summary", "summary": "a"}']  # line 6


def test_from_log_rebuilds_saw_keeps_and_evictions_with_their_lines() -> None:
    led = Ledger.from_log(LINEAGE[:5])
    assert led.summaries == ("a", "b")
    shape: dict[str, Any] = {"summary_input": (6, 12), "summary_covers": (6, 10), "tail_start": 10}
    d = led.decide(**shape, saw=["b"])
    assert d.holes == ((0, 4),)  # b never saw a: a's coverage is not b's
    led = Ledger.from_log(LINEAGE)
    assert led.summaries == ("b",)
    d = led.decide(**shape)
    assert d.holes == ((0, 4),)
    assert led.explain(d, **shape) == [
        "no_hole: offsets [0, 4) were covered only by summary 'a' (line 3), which was evicted from the "
        "context at line 6"]


@pytest.mark.parametrize(("bad", "message"), [
    (_c([6, 12], [6, 10], 10, saw=["zz"]), "<log>:7: saw[0]: no summary 'zz' is in the context here"),
    ('{"event": "evict_summary", "summary": "a"}',
     "<log>:7: summary: no summary 'a' is in the context here (it was created at line 3 and has left "
     "the context)"),
])
def test_from_log_names_the_log_and_line_of_a_bad_summary_id(bad: str, message: str) -> None:
    with pytest.raises(EventLogError) as info:
        Ledger.from_log([*LINEAGE, bad])
    assert str(info.value) == message


# -- replay ----------------------------------------------------------------------------------

def _events(*lines: str) -> list[Any]:
    return list(iter_events([SAME, *lines]))


REPLAYED = (
    '{"event": "append", "count": 10}',  # 2
    _c([0, 10], [0, 4], 4, summary="a"),  # 3
    _c([4, 10], [4, 6], 6, summary="b", saw=[], keeps=["a"]),  # 4: b covers [4, 6) only
    '{"event": "truncate", "range": [6, 7]}',  # 5
    '{"event": "append", "count": 2}',  # 6
    '{"event": "evict_summary", "summary": "a"}',  # 7: [0, 4) leaves with a
    _c([6, 12], [7, 10], 10, override="on purpose"),  # 8: holes [0, 4) and [6, 7)
    _c([6, 12], [7, 10], 10, saw=[]),  # 9: and [4, 6) of '2' (line 8, which saw b), unseen
)


def test_replay_yields_each_verdict_with_its_fields() -> None:
    out = list(replay(_events(*REPLAYED)))
    assert [type(x).__name__ for x in out] == ["Session", "Verdict", "Verdict", "Verdict", "Verdict"]
    v = [x for x in out if isinstance(x, Verdict)]
    assert [(x.line, x.decision.allowed, x.override, x.history_end) for x in v] == [
        (3, True, None, 10), (4, True, None, 10), (8, False, "on purpose", 12), (9, False, None, 12)]
    assert v[2].decision == Decision("refuse", ("no_hole",), ((0, 4), (6, 7)))
    assert v[3].decision == Decision("refuse", ("no_hole",), ((0, 7),))
    assert all(x.explanation == () and x.truncated_at == () for x in v)  # explain is off by default


def test_replay_explains_refusals_only_naming_lines_summaries_and_causes() -> None:
    v = [x for x in replay(_events(*REPLAYED), explain=True) if isinstance(x, Verdict)]
    assert [x.explanation for x in v[:2]] == [(), ()]
    assert v[2].explanation == (
        "no_hole: offsets [0, 4) were covered only by summary 'a' (line 3), which was evicted from the "
        "context at line 7; offsets [6, 7) were truncated at line 5 and never summarized or spilled",)
    assert v[3].explanation == (
        "no_hole: offsets [4, 6) were covered only by summary '2' (line 8), which this compaction's "
        "summarizer did not see and which it does not keep; offsets [0, 4) were covered only by summary "
        "'a' (line 3), which was evicted from the context at line 7; offsets [6, 7) were truncated at "
        "line 5 and never summarized or spilled",)
    assert [x.truncated_at for x in v] == [(), (), (5,), (5,)]


def test_replay_narrows_what_it_explains_but_not_the_verdict() -> None:
    seen: list[int] = []

    def narrow(line: int, d: Decision) -> Decision:
        seen.append(line)
        return Decision(d.decision, d.failed, d.holes[-1:])

    v = [x for x in replay(_events(*REPLAYED), explain=True, narrow=narrow) if isinstance(x, Verdict)]
    assert seen == [8, 9]
    assert v[2].decision.holes == ((0, 4), (6, 7))
    assert v[2].explanation == ("no_hole: offsets [6, 7) were truncated at line 5 and never summarized or spilled",)


def test_replay_keeps_saw_and_keeps_and_the_summary_ids() -> None:
    events = _events(*REPLAYED[:3], _c([0, 10], [6, 8], 8, saw=["b"]))  # line 5: b never saw a
    (*_, v) = replay(events, explain=True)
    assert isinstance(v, Verdict) and v.decision.holes == ((0, 4),)
    assert v.explanation == ("no_hole: offsets [0, 4) were covered only by summary 'a' (line 3), which this "
                             "compaction's summarizer did not see and which it does not keep",)
    repeat = _events(*REPLAYED[:3], _c([0, 10], [6, 8], 8, summary="a"))
    with pytest.raises(EventLogError) as info:
        list(replay(repeat, source="t.jsonl"))
    assert str(info.value) == ("t.jsonl:5: summary: summary id 'a' was already used at line 3; ids are unique "
                               "in a session")
    ordinal = _events('{"event": "append", "count": 10}', _c([0, 10], [0, 4], 4, summary="1"),
                      _c([0, 10], [0, 4], 4))
    with pytest.raises(EventLogError) as info:  # the second compaction's default id is its ordinal, "1"
        list(replay(ordinal))
    assert str(info.value) == ("<trace>:4: summary: summary id '1' (the compaction's ordinal, its default id) "
                               "was already used at line 3; ids are unique in a session")


@pytest.mark.parametrize(("bad", "message"), [
    (_c([6, 12], [6, 10], 10, saw=["zz"]), "<trace>:8: saw[0]: no summary 'zz' is in the context here"),
    (_c([6, 12], [6, 10], 10, keeps=["a"]),
     "<trace>:8: keeps[0]: no summary 'a' is in the context here (it was created at line 3 and has left the context)"),
    ('{"event": "evict_summary", "summary": "a"}',
     "<trace>:8: summary: no summary 'a' is in the context here (it was created at line 3 and has left the context)"),
])
def test_replay_names_the_line_of_a_bad_summary_id(bad: str, message: str) -> None:
    with pytest.raises(EventLogError) as info:
        list(replay(_events(*REPLAYED[:6], bad)))
    assert str(info.value) == message


def test_replay_takes_ranges_as_they_are_and_names_them_in_well_formed() -> None:
    events = _events('{"event": "append", "count": 10}', '{"event": "spill", "range": [5, 3]}',
                     '{"event": "truncate", "range": [2, 12]}', _c([0, 10], [0, 8], 8))
    (*_, v) = replay(events, explain=True)
    assert isinstance(v, Verdict) and v.decision.failed == ("well_formed",)
    assert v.explanation == ("well_formed: the case is inconsistent (a recorded range (line 3) has lo > hi; "
                             "a recorded range (line 4) ends at 12, past the history end 10); the guard fails closed",)


def test_replay_of_the_seed_profile_keeps_the_raw_truncations() -> None:
    events = _events('{"event": "append", "count": 10}', '{"event": "truncate", "range": [6, 9]}',
                     _c([2, 10], [2, 8], 8))
    (*_, v) = replay(events, profile="seed", explain=True)
    assert isinstance(v, Verdict) and v.decision.failed == ("truncation_clear",)
    assert v.explanation == ("truncation_clear: prior truncation [6, 9) (line 3) intersects recovery floor "
                             "[6, 8); evidence already evicted",)


def test_replay_refuses_a_bad_start_or_profile_and_yields_refusal_lines() -> None:
    with pytest.raises(ValueError) as info:
        list(replay(_events(), profile="loose"))
    assert str(info.value) == "unknown profile 'loose'; known: seed, strict, partitioned"
    with pytest.raises(ValueError) as info:
        list(replay(_events('{"event": "append", "count": 1}')[1:]))
    assert str(info.value) == "the first event must be the session header"
    header = _events()[0]
    with pytest.raises(ValueError) as info:
        list(replay([header, header]))
    assert str(info.value) == "line 1: a second session header"
    refusal = ('{"event": "refusal", "summary_input": [0, 1], "summary_covers": [0, 1], "tail_start": 1, '
               '"failed": ["no_hole"], "holes": [[0, 1]]}')
    out = list(replay(_events('{"event": "append", "count": 1}', refusal, refusal)))
    assert [type(x).__name__ for x in out] == ["Session", "Refusal", "Refusal"]
    assert Ledger.from_log([SAME, '{"event": "append", "count": 1}', refusal, refusal]).refusals == 2


def test_replay_accepts_an_empty_append() -> None:
    out = list(replay(_events('{"event": "append", "count": 0}', '{"event": "append", "count": 3}',
                              _c([0, 3], [0, 1], 1))))
    assert isinstance(out[-1], Verdict) and out[-1].history_end == 3 and out[-1].decision.allowed


def test_equivalent_case_checks_and_uses_the_lineage_given() -> None:
    led = Ledger(2, keep_history=True)
    led.append(8)
    led.commit(summary_input=(0, 8), summary_covers=(0, 4), tail_start=4, summary="a")
    led.append(4)
    led.commit(summary_input=(4, 12), summary_covers=(4, 8), tail_start=8, summary="b", saw=[], keeps=["a"])
    shape: dict[str, Any] = {"summary_input": (8, 12), "summary_covers": (8, 10), "tail_start": 10}
    assert led.equivalent_case(**shape)["prior_coverage"] == [[0, 8]]
    assert led.equivalent_case(**shape, saw=["b"])["prior_coverage"] == [[4, 8]]
    assert led.equivalent_case(**shape, saw=[], keeps=["a"])["prior_coverage"] == [[0, 4]]
    assert led.equivalent_case(**shape, keeps=["a"])["prior_coverage"] == [[0, 8]]
    with pytest.raises(ValueError) as info:
        led.equivalent_case(**shape, saw=["zz"])
    assert str(info.value) == "saw[0]: no summary 'zz' is in the context here"
    with pytest.raises(ValueError) as info:
        led.equivalent_case(**shape, keeps=["zz"])
    assert str(info.value) == "keeps[0]: no summary 'zz' is in the context here"


@pytest.mark.parametrize(("profile", "explain", "state"), [
    ("strict", False, (False, False)), ("partitioned", True, (False, True)), ("seed", False, (True, False))])
def test_replay_keeps_only_the_state_its_profile_and_explain_need(
        profile: str, explain: bool, state: tuple[bool, bool], monkeypatch: pytest.MonkeyPatch) -> None:
    """The docstring's memory bound: the seed's raw truncations only for the seed profile, the
    lines of each truncation only with ``explain``."""
    import tailguard.audit.replay as replay_module
    built: list[LedgerCore] = []

    class Spy(LedgerCore):
        __slots__ = ()

        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            built.append(self)

    monkeypatch.setattr(replay_module, "LedgerCore", Spy)
    list(replay(_events('{"event": "append", "count": 4}', '{"event": "truncate", "range": [0, 1]}'),
                profile=profile, explain=explain))
    (core,) = built
    assert (core._stair is not None, core.origins is not None) == state
