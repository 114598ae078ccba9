"""The event log: reading with line-numbered errors, writing, the schema, round trips."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

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
    iter_events,
)

ROOT = Path(__file__).resolve().parent.parent
HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 3, '
          '"floor_unit": "turns", "truncator_unit": "turns"}')


def _read(*lines: str) -> list[object]:
    return list(iter_events([(x + "\n").encode() for x in lines], "t.jsonl"))


def _error(*lines: str) -> str:
    with pytest.raises(EventLogError) as info:
        _read(*lines)
    return str(info.value)


def test_reads_every_kind_with_defaults_and_extra_keys() -> None:
    events = _read(
        HEADER,
        '{"event": "append"}',
        '{"event": "append", "count": 4, "ts": 1}',
        "",
        '{"event": "truncate", "range": [0, 2], "session_id": "x"}',
        '{"event": "spill", "range": [2, 3]}',
        '{"event": "spill", "range": [3, 4], "handle": "sha256:00"}',
        '{"event": "compact", "summary_input": [0, 5], "summary_covers": [0, 2], "tail_start": 2}',
        '{"event": "compact", "summary_input": [0, 5], "summary_covers": [0, 2], '
        '"tail_start": 2, "override": "why"}',
    )
    assert events == [
        Session(1, "turns", 3, "turns", "turns"),
        Append(2, 1),
        Append(3, 4),
        Truncate(5, 0, 2),
        Spill(6, 2, 3, None),
        Spill(7, 3, 4, "sha256:00"),
        Compact(8, (0, 5), (0, 2), 2, None),
        Compact(9, (0, 5), (0, 2), 2, "why"),
    ]


def test_inconsistent_integers_are_not_input_errors() -> None:
    events = _read(
        HEADER.replace('"recovery_floor_span": 3', '"recovery_floor_span": -2'),
        '{"event": "truncate", "range": [9, 2]}',
        '{"event": "spill", "range": [-5, 10000000000000000000000]}',
    )
    assert len(events) == 3


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ((), "t.jsonl:1: event: missing session header (empty log)"),
        (('{"event": "append"}',), 't.jsonl:1: event: expected the session header first, got "append"'),
        (("{}",), "t.jsonl:1: event: missing field; line 1 must be the session header"),
        ((HEADER.replace('"unit": "turns", ', ""),), "t.jsonl:1: unit: missing field"),
        ((HEADER.replace('3', '3.0'),), "t.jsonl:1: recovery_floor_span: expected an integer, got 3.0"),
        ((HEADER.replace('"floor_unit": "turns"', '"floor_unit": 1'),),
         "t.jsonl:1: floor_unit: expected a string, got 1"),
        ((HEADER, "[1, 2]"), "t.jsonl:2: event: expected a JSON object, got [1, 2]"),
        ((HEADER, '{"count": 2}'), "t.jsonl:2: event: missing field"),
        ((HEADER, '{"event": "frob"}'),
         't.jsonl:2: event: unknown event kind "frob"; known: append, truncate, compact, spill, '
         'evict_summary, refusal, adopt, resume'),
        ((HEADER, HEADER), "t.jsonl:2: event: a second session header; only line 1 may be one"),
        ((HEADER, '{"event": "append", "count": true}'),
         "t.jsonl:2: count: expected an integer, got true"),
        ((HEADER, '{"event": "truncate"}'), "t.jsonl:2: range: missing field"),
        ((HEADER, '{"event": "truncate", "range": [1, 2, 3]}'),
         "t.jsonl:2: range: expected a pair [lo, hi] of integers, got [1, 2, 3]"),
        ((HEADER, '{"event": "truncate", "range": [1, "2"]}'),
         't.jsonl:2: range[1]: expected an integer, got "2"'),
        ((HEADER, '{"event": "spill", "range": [1.5, 2]}'),
         "t.jsonl:2: range[0]: expected an integer, got 1.5"),
        ((HEADER, '{"event": "spill", "range": [1, 2], "handle": 7}'),
         "t.jsonl:2: handle: expected a string, got 7"),
        ((HEADER, '{"event": "compact", "summary_input": [0, 1], "summary_covers": [0, 1]}'),
         "t.jsonl:2: tail_start: missing field"),
        ((HEADER, '{"event": "compact", "summary_input": [0, 1], "summary_covers": null, '
                  '"tail_start": 0}'),
         "t.jsonl:2: summary_covers: expected a pair [lo, hi] of integers, got null"),
        ((HEADER, '{"event": "compact", "summary_input": [0, 1], "summary_covers": [0, 1], '
                  '"tail_start": 0, "override": 1}'),
         "t.jsonl:2: override: expected a string, got 1"),
        ((HEADER, '{"event": "append", "count": 5'),
         "t.jsonl:2: line: not valid JSON (Expecting ',' delimiter at column 31)"),
        ((HEADER, '{"event": "append"} x'),
         "t.jsonl:2: line: not valid JSON (Extra data at column 21)"),
    ],
)
def test_input_errors_name_line_and_field(lines: tuple[str, ...], message: str) -> None:
    assert _error(*lines) == message


def test_invalid_utf8_is_an_input_error() -> None:
    with pytest.raises(EventLogError) as info:
        list(iter_events([HEADER.encode() + b"\n", b'{"event": "\xff"}\n'], "t.jsonl"))
    assert str(info.value).startswith("t.jsonl:2: line: not valid UTF-8")


def test_whitespace_and_crlf_are_accepted() -> None:
    lines = [HEADER.encode() + b"\r\n", b'  {"event": "append"}  \r\n', b"\t\n"]
    assert list(iter_events(lines))[1] == Append(2, 1)


def test_streams_lazily() -> None:
    def lines() -> object:
        yield HEADER
        yield '{"event": "append"}'
        raise AssertionError("read past what was asked for")

    it = iter_events(lines())  # type: ignore[arg-type]
    assert isinstance(next(it), Session) and next(it) == Append(2, 1)


ranges = st.tuples(st.integers(-3, 50), st.integers(-3, 50))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.builds(Append, st.just(0), st.integers(0, 9)),
    st.builds(lambda r: Truncate(0, *r), ranges),
    st.builds(lambda r, h: Spill(0, *r, h), ranges, st.none() | st.text(max_size=5)),
    st.builds(lambda i, c, t, o: Compact(0, i, c, t, o), ranges, ranges, st.integers(-1, 50),
              st.none() | st.text(min_size=1, max_size=5)),
    st.builds(lambda i, c, t, s, saw, k: Compact(0, i, c, t, None, s, saw, k), ranges, ranges,
              st.integers(0, 9), st.none() | st.text(max_size=3),
              st.none() | st.lists(st.text(max_size=3), max_size=3).map(tuple),
              st.lists(st.text(max_size=3), max_size=3).map(tuple)),
    st.builds(lambda s: EvictSummary(0, s), st.text(max_size=3)),
    st.builds(lambda i, c, t, f, h: Refusal(0, i, c, t, f, h), ranges, ranges, st.integers(0, 9),
              st.lists(st.sampled_from(["no_hole", "tail_intact"]), max_size=2).map(tuple),
              st.lists(ranges, max_size=2).map(tuple)),
), max_size=20))
def test_write_read_round_trip(events: list[object]) -> None:
    out = io.StringIO()
    w = EventWriter(out)
    w.session("tokens", 7, "tokens", "turns")
    for e in events:
        w.write_event(e)  # type: ignore[arg-type]
    back = list(iter_events(out.getvalue().splitlines(keepends=True)))
    assert back[0] == Session(1, "tokens", 7, "tokens", "turns")
    assert [e[1:] for e in back[1:]] == [e[1:] for e in events]  # type: ignore[index]
    assert [e[0] for e in back] == list(range(1, len(events) + 2))  # type: ignore[index]


def test_schema_agrees_with_the_reader() -> None:
    """Every required key of the schema is required by the reader, and nothing else is."""
    schema = json.loads((ROOT / "spec" / "eventlog.schema.json").read_text())
    defs = schema["$defs"]
    full = {
        "session": {**json.loads(HEADER), "session_id": "alice"},
        "append": {"event": "append", "count": 2},
        "truncate": {"event": "truncate", "range": [0, 1]},
        "compact": {"event": "compact", "summary_input": [0, 1], "summary_covers": [0, 1],
                    "tail_start": 0, "override": "r", "summary": "s", "saw": [], "keeps": []},
        "spill": {"event": "spill", "range": [0, 1], "handle": "h"},
        "evict_summary": {"event": "evict_summary", "summary": "s"},
        "refusal": {"event": "refusal", "summary_input": [0, 1], "summary_covers": [0, 1],
                    "tail_start": 0, "failed": ["no_hole"], "holes": [[0, 1]]},
        "adopt": {"event": "adopt", "range": [0, 1], "reason": "r", "summary": "s"},
        "resume": {"event": "resume", "snapshot": "sha256:0", "line": 1},
    }
    assert sorted(full) == sorted(k for k in defs if k not in ("range", "ids"))
    for kind, obj in full.items():
        assert set(defs[kind]["properties"]) == set(obj)
        for key in obj:
            if key == "event":
                continue
            partial = {k: v for k, v in obj.items() if k != key}
            lines = [partial] if kind == "session" else [json.loads(HEADER), partial]
            text = [json.dumps(x) for x in lines]
            if key in defs[kind]["required"]:
                assert f": {key}: missing field" in _error(*text)
            else:
                _read(*text)


@pytest.mark.parametrize("name", ["seed-incident.jsonl", "healthy.jsonl", "langchain-lost-summary.jsonl"])
def test_examples_are_valid_logs(name: str) -> None:
    with open(ROOT / "examples" / "traces" / name, "rb") as f:
        events = list(iter_events(f, name))
    assert isinstance(events[0], Session) and any(isinstance(e, Compact) for e in events)
