"""Tests written to kill surviving mutants of ``tailguard.eventlog`` (tools/mutation.sh):
``parse_event``, the one-line reader adapters and tools call, was reached by no test."""

from __future__ import annotations

import pytest

from tailguard.eventlog import EventLogError, Session, parse_event

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
