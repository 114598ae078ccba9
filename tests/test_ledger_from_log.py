"""Ledger.from_log: a ledger survives its process (issue 9, item 6)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tailguard.cli.main import main
from tailguard.runtime.eventlog import EventLogError
from tailguard.runtime.ledger import Ledger, TornLineWarning
from tailguard.runtime.seed_api import UnrecoverableCompactionError


def _session(path: Path) -> None:
    """Two compactions, the second one refused (and logged as a refusal)."""
    with open(path, "w") as f:
        led = Ledger(3, unit="messages", profile="partitioned", log=f)
        led.append(12)
        led.commit(summary_input=(0, 9), summary_covers=(0, 9), tail_start=9, summary="s1")
        led.append(9)
        led.truncate(9, 12)
        with pytest.raises(UnrecoverableCompactionError):
            led.commit(summary_input=(12, 18), summary_covers=(12, 18), tail_start=18, saw=[])
        led.spill(9, 12, handle="sha256:x")


def _audit(path: Path) -> dict[str, object]:
    out = io.StringIO()
    main(["audit", "--profile", "partitioned", "--format", "json", str(path)], stdout=out, stderr=io.StringIO())
    result: dict[str, object] = json.loads(out.getvalue())
    return result


def test_rebuilt_ledger_decides_as_the_original(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    led = Ledger.from_log(path, profile="partitioned", append=False)
    assert (led.history_end, led.summaries, led.refusals, led.torn_line) == (21, ("s1",), 1, None)
    kw = {"summary_input": (12, 18), "summary_covers": (12, 18), "tail_start": 18}
    assert led.decide(**kw, saw=[]).holes == ((0, 9),)  # type: ignore[arg-type]
    assert led.decide(**kw).allowed  # type: ignore[arg-type]
    # diagnostics name the original lines
    d = led.decide(**kw, saw=[])  # type: ignore[arg-type]
    assert "summary 's1' (line 3)" in led.explain(d, **kw, saw=[])[0]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="summary id 's1'"):
        led.commit(**kw, summary="s1")  # type: ignore[arg-type]


def test_continue_appends_to_the_same_log_and_it_audits(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    before = path.read_text().splitlines()
    led = Ledger.from_log(path, profile="partitioned")
    led.append(1)
    led.commit(summary_input=(12, 19), summary_covers=(12, 19), tail_start=19)
    led.close()
    lines = path.read_text().splitlines()
    assert lines[: len(before)] == before
    assert [json.loads(x)["event"] for x in lines[len(before):]] == ["append", "compact"]
    assert _audit(path) == {"compactions": [
        {"line": 3, "decision": "allow", "failed": [], "holes": []},
        {"line": 9, "decision": "allow", "failed": [], "holes": []}], "violations": 0, "refusals": 1}
    # and once more, across a second restart: the ordinal ids continue
    led2 = Ledger.from_log(path, profile="partitioned")
    assert led2.summaries == ("1",) and led2.next_summary_id == "2"
    led2.close()


def test_a_torn_last_line_is_reported_ignored_and_cut_before_continuing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"event": "append", "cou')
    with pytest.warns(TornLineWarning, match=r"s\.jsonl:8: the last line was cut mid-write and is ignored"):
        led = Ledger.from_log(path, profile="partitioned")
    assert led.torn_line is not None and led.torn_line[0] == 8
    assert led.history_end == 21
    led.append(2)
    led.close()
    assert path.read_bytes() == whole + b'{"event": "append", "count": 2}\n'
    assert _audit(path)["violations"] == 0


def test_a_last_line_without_its_line_end_but_whole_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    path.write_bytes(path.read_bytes() + b'{"event": "append", "count": 4}')
    led = Ledger.from_log(path, profile="partitioned")
    assert (led.history_end, led.torn_line) == (25, None)
    led.append(1)
    led.close()
    assert path.read_bytes().endswith(b'{"event": "append", "count": 4}\n{"event": "append", "count": 1}\n')


def test_a_bad_line_in_the_middle_is_an_error_never_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _session(path)
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, '{"event": "append", "co\n')
    path.write_text("".join(lines))
    with pytest.raises(EventLogError, match=r"s\.jsonl:4: line: not valid JSON"):
        Ledger.from_log(path)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ('{"event": "truncate", "range": [5, 40]}', r":3: range: \[5, 40\) is not an interval inside the history"),
        ('{"event": "append", "count": -3}', ":3: count: expected a count >= 0"),
        ('{"event": "evict_summary", "summary": "x"}', ":3: summary: no summary 'x' is in the context"),
    ],
)
def test_what_the_ledger_would_reject_is_an_error_naming_the_line(line: str, match: str) -> None:
    lines = ['{"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns", '
             '"truncator_unit": "turns"}\n', '{"event": "append", "count": 10}\n', line + "\n"]
    with pytest.raises(EventLogError, match=match):
        Ledger.from_log(lines)


def test_from_lines_continues_into_a_stream_of_your_own() -> None:
    first = io.StringIO()
    led = Ledger(2, log=first)
    led.append(5)
    out = io.StringIO()
    again = Ledger.from_log(first.getvalue().splitlines(keepends=True), log=out)
    again.append(1)
    assert out.getvalue() == '{"event": "append", "count": 1}\n'
    assert again.history_end == 6
