"""Tests written to kill surviving mutants of ``tailguard.eventlog`` (tools/mutation.sh):
``parse_event``, the one-line reader adapters and tools call, was reached by no test."""

from __future__ import annotations

import io

import pytest

from tailguard.eventlog import (
    Append,
    Compact,
    EventLogError,
    EventWriter,
    EvictSummary,
    Refusal,
    Session,
    Spill,
    Truncate,
    iter_events,
    parse_event,
)

HEADER = {"event": "session", "unit": "turns", "recovery_floor_span": 12, "floor_unit": "turns",
          "truncator_unit": "turns"}


def test_parse_event_reads_a_header_and_an_event_with_their_line() -> None:
    head = parse_event(HEADER, 1, first=True)
    assert isinstance(head, Session) and head.line == 1 and head.unit == "turns" and head.recovery_floor_span == 12
    event = parse_event({"event": "append", "count": 3}, 7, first=False)
    assert event.line == 7 and type(event).__name__ == "Append"


def test_parse_event_names_the_line_and_the_field_at_fault() -> None:
    with pytest.raises(EventLogError) as err:
        parse_event({"event": "append", "count": 1.5}, 9, first=False)
    assert (err.value.source, err.value.line, err.value.field) == ("<event>", 9, "count")
    assert err.value.reason and str(err.value) == f"<event>:9: count: {err.value.reason}"
    with pytest.raises(EventLogError, match=r"^<event>:1: event: expected the session header first"):
        parse_event({"event": "append", "count": 1}, 1, first=True)


# -- the writer: the exact line each method writes (the log is a normative format, SPEC.md 9) ----


class _Flushes(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        self.flushed_at.append(len(self.getvalue()))


def test_every_writer_method_writes_its_exact_line() -> None:
    out = _Flushes()
    w = EventWriter(out)
    w.session("tokens", 7, "turns", "messages")
    w.append()
    w.append(3)
    w.truncate(1, 2)
    w.compact((0, 5), (0, 3), 3)
    w.compact((0, 5), (0, 3), 3, override="ops")
    w.compact_lineage((0, 6), (1, 4), 4, None, None, None, ())
    w.compact_lineage((0, 6), (1, 4), 4, "why", "s2", ("s0",), ("s1",))
    w.compact_lineage((0, 6), (1, 4), 4, None, None, (), ())
    w.evict_summary("s1")
    w.refusal((0, 5), (0, 3), 3, ("no_hole", "tail_intact"), ((0, 1), (2, 4)))
    w.spill(4, 6)
    w.spill(4, 6, "sha256:00")
    lines = out.getvalue().splitlines(keepends=True)
    assert lines == [
        '{"event": "session", "unit": "tokens", "recovery_floor_span": 7, "floor_unit": "turns", '
        '"truncator_unit": "messages"}\n',
        '{"event": "append", "count": 1}\n',
        '{"event": "append", "count": 3}\n',
        '{"event": "truncate", "range": [1, 2]}\n',
        '{"event": "compact", "summary_input": [0, 5], "summary_covers": [0, 3], "tail_start": 3}\n',
        '{"event": "compact", "summary_input": [0, 5], "summary_covers": [0, 3], "tail_start": 3, '
        '"override": "ops"}\n',
        '{"event": "compact", "summary_input": [0, 6], "summary_covers": [1, 4], "tail_start": 4}\n',
        '{"event": "compact", "summary_input": [0, 6], "summary_covers": [1, 4], "tail_start": 4, '
        '"override": "why", "summary": "s2", "saw": ["s0"], "keeps": ["s1"]}\n',
        '{"event": "compact", "summary_input": [0, 6], "summary_covers": [1, 4], "tail_start": 4, "saw": []}\n',
        '{"event": "evict_summary", "summary": "s1"}\n',
        '{"event": "refusal", "summary_input": [0, 5], "summary_covers": [0, 3], "tail_start": 3, '
        '"failed": ["no_hole", "tail_intact"], "holes": [[0, 1], [2, 4]]}\n',
        '{"event": "spill", "range": [4, 6]}\n',
        '{"event": "spill", "range": [4, 6], "handle": "sha256:00"}\n',
    ]
    # flushed after every line (a crash loses at most the line being written)
    assert out.flushed_at == [sum(map(len, lines[:i])) for i in range(1, len(lines) + 1)]


def test_a_writer_without_flush_never_flushes() -> None:
    out = _Flushes()
    w = EventWriter(out, flush=False)
    w.append(2)
    w.spill(0, 2)
    assert out.flushed_at == [] and out.getvalue().count("\n") == 2


def test_write_event_writes_each_kind_as_its_method_does() -> None:
    events = [
        Session(1, "tokens", 7, "turns", "messages"),
        Append(2, 3),
        Truncate(3, 1, 2),
        Compact(4, (0, 5), (0, 3), 3, "ops", "s", ("a",), ("b",)),
        Compact(5, (0, 5), (0, 3), 3, None),
        EvictSummary(6, "s"),
        Refusal(7, (0, 5), (0, 3), 3, ("no_hole",), ((0, 1),)),
        Spill(8, 4, 6, "h"),
        Spill(9, 4, 6, None),
    ]
    out, want = io.StringIO(), io.StringIO()
    w, m = EventWriter(out), EventWriter(want)
    for e in events:
        w.write_event(e)
    m.session("tokens", 7, "turns", "messages")
    m.append(3)
    m.truncate(1, 2)
    m.compact_lineage((0, 5), (0, 3), 3, "ops", "s", ("a",), ("b",))
    m.compact((0, 5), (0, 3), 3)
    m.evict_summary("s")
    m.refusal((0, 5), (0, 3), 3, ("no_hole",), ((0, 1),))
    m.spill(4, 6, "h")
    m.spill(4, 6)
    assert out.getvalue() == want.getvalue()
    assert list(iter_events(out.getvalue().splitlines(keepends=True))) == events
