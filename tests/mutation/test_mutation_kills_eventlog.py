"""Tests written to kill surviving mutants of ``tailguard.runtime.eventlog`` (tools/mutation.sh).

``parse_event`` (the one-line reader adapters and tools call) was reached by no test; the rest pin
the writer's exact lines and flushes, the reader's exact messages (field, line, the value shown),
its limits at their edges (line length, nesting depth, integer digits) and the torn last line."""

from __future__ import annotations

import io

import pytest

from tailguard.base import jsonstrict
from tailguard.runtime import eventlog
from tailguard.runtime.eventlog import (
    Append,
    Compact,
    EventLogError,
    EventWriter,
    EvictSummary,
    Refusal,
    Session,
    Spill,
    Truncate,
    bounded_lines,
    iter_events,
    parse_event,
    torn_reason,
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


# -- the reader: exact messages, the limits at their edges, the torn last line --------------------

LOG_HEADER = (b'{"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns", '
              b'"truncator_unit": "turns"}\n')


def _second_line_error(line: bytes, source: str = "t.jsonl") -> str:
    with pytest.raises(EventLogError) as err:
        list(iter_events([LOG_HEADER, line], source))
    return str(err.value)


def test_values_in_messages_are_json_bytes_are_repr_and_long_ones_are_cut() -> None:
    with pytest.raises(EventLogError, match=r"^<event>:4: event: expected a JSON object, got b'ab'$"):
        parse_event(b"ab", 4, first=False)
    exact = "a" * 58  # its JSON is 60 characters: shown whole
    with pytest.raises(EventLogError) as err:
        parse_event({"event": "truncate", "range": exact}, 2, first=False)
    assert err.value.reason == f'expected a pair [lo, hi] of integers, got "{exact}"'
    longer = "a" * 59  # 61 characters: the first 57 and "..."
    with pytest.raises(EventLogError) as err:
        parse_event({"event": "truncate", "range": longer}, 2, first=False)
    assert err.value.reason == 'expected a pair [lo, hi] of integers, got "' + "a" * 56 + "..."


def _reason(obj: dict[str, object]) -> tuple[str, str]:
    with pytest.raises(EventLogError) as err:
        parse_event(obj, 3, first=False)
    return err.value.field, err.value.reason


COMPACT = {"event": "compact", "summary_input": [0, 4], "summary_covers": [0, 2], "tail_start": 2}
REFUSAL = {"event": "refusal", "summary_input": [0, 4], "summary_covers": [0, 2], "tail_start": 2}


def test_lineage_and_refusal_fields_name_the_element_at_fault() -> None:
    assert parse_event({**COMPACT, "keeps": None, "saw": None}, 3, first=False) == Compact(
        3, (0, 4), (0, 2), 2, None, None, None, ())
    assert _reason({**COMPACT, "saw": ["a", 3]}) == ("saw[1]", "expected a summary id (string), got 3")
    assert _reason({**COMPACT, "keeps": "a"}) == (
        "keeps", 'expected a list of summary ids (strings) or null, got "a"')
    assert _reason({**REFUSAL, "holes": 5}) == ("holes", "expected a list of [lo, hi] pairs, got 5")
    assert _reason({**REFUSAL, "holes": [[0, 1], [2, "x"]]}) == ("holes[1][1]", 'expected an integer, got "x"')
    assert _reason({**REFUSAL, "failed": "no_hole"}) == (
        "failed", 'expected a list of clause ids (strings), got "no_hole"')
    assert _reason({**REFUSAL, "failed": ["no_hole", 1]}) == (
        "failed", 'expected a list of clause ids (strings), got ["no_hole", 1]')
    assert _reason({"event": "truncate", "range": [1.5, 2]}) == ("range[0]", "expected an integer, got 1.5")
    assert _reason({"event": "truncate", "range": [1, None]}) == ("range[1]", "expected an integer, got null")


def test_an_append_line_read_one_at_a_time() -> None:
    assert parse_event({"event": "append"}, 5, first=False) == Append(5, 1)  # count defaults to 1
    assert parse_event({"event": "append", "count": 0}, 5, first=False) == Append(5, 0)
    assert parse_event({"event": "append", "count": 7}, 5, first=False) == Append(5, 7)
    assert _reason({"event": "append", "count": -1}) == ("count", "expected a count >= 0, got -1")
    assert _second_line_error(b'{"event": "append", "count": -2}\n') == (
        "t.jsonl:2: count: expected a count >= 0, got -2")


def test_torn_reason_of_bytes_and_text() -> None:
    assert torn_reason(b'{"event": ') == "not valid JSON: Expecting value, column 11"
    assert torn_reason('{"event": ') == "not valid JSON: Expecting value, column 11"
    for complete in (b'{"event": \n', b'{"event": \r', '{"event": \n', '{"event": \r', b"", b" \t", "  ",
                     b'{"event": "append"}', '{"event": "append"}'):
        assert torn_reason(complete) is None, complete
    assert torn_reason(b'{"event": "\xe2\x82') == "cut inside a UTF-8 character at byte 12"
    assert torn_reason(b"\x0c") == "not valid JSON: Expecting value, column 1"  # not JSON whitespace
    assert torn_reason(b"X") == "not valid JSON: Expecting value, column 1"
    # an over-limit value is not a tear (the reader reports it as an error of its own)
    assert torn_reason(b"1" * 5000) is None
    assert torn_reason(b"[" * 100_000 + b"]" * 100_000) is None


def test_a_torn_last_line_is_passed_to_on_torn_and_ends_the_log() -> None:
    torn: list[tuple[int, str]] = []
    lines = [LOG_HEADER, b'{"event": "append"}\n', b'{"event": "app']
    assert list(iter_events(lines, "t.jsonl", on_torn=lambda n, why: torn.append((n, why)))) == [
        Session(1, "turns", 2, "turns", "turns"), Append(2, 1)]
    assert torn == [(3, "not valid JSON: Unterminated string starting at column 11")]
    torn.clear()
    cut = [LOG_HEADER, b'{"event": "append"}\n', b'{"event": "\xe2\x82']
    assert len(list(iter_events(cut, "t.jsonl", on_torn=lambda n, why: torn.append((n, why))))) == 2
    assert torn == [(3, "cut inside a UTF-8 character at byte 12")]
    with pytest.raises(EventLogError, match=r"^t.jsonl:3: line: not valid JSON \(Unterminated string"):
        list(iter_events(lines, "t.jsonl"))  # without on_torn it is an error like any other
    with pytest.raises(EventLogError, match=r"^t.jsonl:3: line: not valid UTF-8 \(byte 12: unexpected end of data\)"):
        list(iter_events(cut, "t.jsonl"))
    # a torn header: reported, and the log has no header
    torn.clear()
    with pytest.raises(EventLogError, match=r"^t.jsonl:1: event: missing session header \(empty log\)$"):
        list(iter_events([b'{"event": "ses'], "t.jsonl", on_torn=lambda n, why: torn.append((n, why))))
    assert [n for n, _ in torn] == [1]
    torn.clear()
    with pytest.raises(EventLogError, match=r"^t.jsonl:1: event: missing session header \(empty log\)$"):
        list(iter_events([b'{"event": "\xe2\x82'], "t.jsonl", on_torn=lambda n, why: torn.append((n, why))))
    assert torn == [(1, "cut inside a UTF-8 character at byte 12")]
    # a bad line that has its line end is not torn, even with on_torn
    with pytest.raises(EventLogError, match=r"^t.jsonl:2: line: not valid JSON"):
        list(iter_events([LOG_HEADER, b'{"event": \n'], "t.jsonl", on_torn=lambda n, why: torn.append((n, why))))
    with pytest.raises(EventLogError, match=r"^t.jsonl:2: line: not valid UTF-8 \(byte 1: invalid start byte\)$"):
        list(iter_events([LOG_HEADER, b"\xff\n"], "t.jsonl", on_torn=lambda n, why: torn.append((n, why))))


def test_line_limit_at_its_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonstrict, "MAX_LINE_BYTES", 200)
    line = b'{"event": "append"' + b" " * (200 - 20) + b"}\n"
    assert len(line) == 200
    assert list(iter_events([LOG_HEADER, line]))[1] == Append(2, 1)  # exactly at the limit
    over = line[:-2] + b" }\n"
    assert _second_line_error(over) == "t.jsonl:2: line: a line over the limit of 200 bytes"
    with pytest.raises(EventLogError) as err:
        list(iter_events([LOG_HEADER.decode(), over.decode()], "t.jsonl"))
    assert str(err.value) == "t.jsonl:2: line: a line of 201 bytes is over the limit of 200 bytes"
    # bounded_lines reads at most the limit plus one byte at a time
    chunks = list(bounded_lines(io.BytesIO(b"x" * 450 + b"\n" + b"ab\n")))
    assert [len(c) for c in chunks] == [201, 201, 49, 3]


def test_messages_of_the_reader() -> None:
    assert _second_line_error(b'{"a": 1, "a": 2}\n') == 't.jsonl:2: a: duplicate key "a" in one object'
    # a repeated empty key cannot name the field: the line is named
    assert _second_line_error(b'{"": 1, "": 2}\n') == 't.jsonl:2: line: duplicate key "" in one object'
    assert _second_line_error(b'{"event": "append", "x": ' + b"1" * 1001 + b"}\n") == (
        "t.jsonl:2: line: an integer of 1,001 digits (the limit is 1,000)")
    # the column is that of the line without its line end; a trailing blank is part of the line
    assert _second_line_error(b'{"event": "append" \n') == (
        "t.jsonl:2: line: not valid JSON (Expecting ',' delimiter at column 20)")
    assert _second_line_error(b'"\\X\n') == "t.jsonl:2: line: not valid JSON (Invalid \\escape at column 2)"
    assert _second_line_error(b'{"event": "append", "count": NaN}\n') == (
        "t.jsonl:2: line: not valid JSON (NaN is not JSON (numbers must be finite))")
    # a value must start the line; only JSON whitespace is blank
    for garbage in (b'x{"event": "append"}\n', b"\x0c\n", b"X\n"):
        assert _second_line_error(garbage) == "t.jsonl:2: line: not valid JSON (Expecting value at column 1)"
    assert list(iter_events([LOG_HEADER, b" \t\r\n", b"\n"]))[1:] == []
    with pytest.raises(EventLogError, match=r"^<trace>:2: line: not valid JSON"):
        list(iter_events([LOG_HEADER, b"X\n"]))  # the default source name


def test_nesting_depth_is_checked_before_decoding() -> None:
    # within 128 characters no line can nest past the limit: the decoder's own message
    assert _second_line_error(b"[" * 127 + b"\n") == (
        "t.jsonl:2: line: not valid JSON (Expecting value at column 128)")
    for nest in (b"[" * 70 + b"]" * 70, b'{"a": ' * 70 + b"1" + b"}" * 70):
        assert _second_line_error(b'{"event": "append", "x": ' + nest + b"}\n") == (
            "t.jsonl:2: line: nested 71 deep (the limit is 64)")
    within = b'{"event": "append", "x": ' + b"[" * 63 + b"]" * 63 + b"}\n"
    assert list(iter_events([LOG_HEADER, within]))[1] == Append(2, 1)


def test_a_recursion_error_of_the_decoder_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    scan = eventlog._SCAN

    def deep(text: str, idx: int) -> object:
        if text.startswith("[1]"):
            raise RecursionError
        return scan(text, idx)

    monkeypatch.setattr(eventlog, "_SCAN", deep)
    assert _second_line_error(b"[1]\n") == "t.jsonl:2: line: JSON nested too deeply"
