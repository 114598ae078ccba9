"""Ledger.from_log: a ledger survives its process (issue 9, item 6)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

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


def _lineage_log(compactions: int) -> list[str]:
    """A session shaped like the adapters' logs, ten lines or so per compaction: appends,
    spilled truncations of the oldest verbatim units (one in nine not spilled), and compactions
    that saw the previous summary or not (a trimmer dropped it: it leaves the context), keep
    the oldest one beside the new one one time in four, and now and then an eviction."""
    lines = ['{"event": "session", "unit": "messages", "recovery_floor_span": 3, "floor_unit": "messages", '
             '"truncator_unit": "messages"}']
    n = verbatim = 0
    context: list[str] = []
    for k in range(compactions):
        for j in range(3):
            lines.append('{"event": "append", "count": 4}')
            n += 4
            if j != 2:
                if (k + j) % 9:
                    lines.append(json.dumps({"event": "spill", "range": [verbatim, verbatim + 2]}))
                lines.append(json.dumps({"event": "truncate", "range": [verbatim, verbatim + 2]}))
                verbatim += 2
        prev = context[-1] if context else None
        saw = [prev] if prev is not None and k % 3 else []
        keeps = [context[0]] if context and context[0] not in saw and k % 4 == 1 else []
        lines.append(json.dumps({"event": "compact", "summary_input": [verbatim, n - 3],
                                 "summary_covers": [verbatim, n - 3], "tail_start": n - 3,
                                 "summary": f"s{k}", "saw": saw, "keeps": keeps}))
        context = [s for s in context if s in keeps] + [f"s{k}"]
        verbatim = n - 3
        if len(context) > 1 and k % 7 == 0:
            lines.append(json.dumps({"event": "evict_summary", "summary": context.pop(0)}))
    return [x + "\n" for x in lines]


def test_from_log_does_a_bounded_amount_of_interval_work_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear in the log's length, compactions included (issue 25, point 7), checked by counting,
    not by timing: every interval set answers a call in O(log k + what it returns), so the work
    is the calls and the ranges they walk. A summary leaving the context used to rebuild R and
    ``lost`` from every range held (O(k) a departure); now each departure walks only its own
    coverage and what changes, so the count per line stays flat as the log grows.
    ``benchmarks/bench_from_log.py`` times it."""
    from tailguard.runtime import interval_index

    walked = [0]
    rows, iterate = interval_index.Runs._rows, interval_index.Runs.__iter__

    def counted_rows(self: interval_index.Runs, p: tuple[int, int]) -> Any:
        for row in rows(self, p):
            walked[0] += 1
            yield row

    def counted_iter(self: interval_index.Runs) -> Any:
        for pair in iterate(self):
            walked[0] += 1
            yield pair

    monkeypatch.setattr(interval_index.Runs, "_rows", counted_rows)
    monkeypatch.setattr(interval_index.Runs, "__iter__", counted_iter)
    per_line = []
    for compactions in (150, 1200):
        log = _lineage_log(compactions)
        walked[0] = 0
        led = Ledger.from_log(log)
        assert len(led.core.lost) > 0 and led.history_end == 12 * compactions  # holes, and the whole log
        per_line.append(walked[0] / len(log))
    assert per_line[1] <= 1.1 * per_line[0] + 0.5, per_line  # flat: 8x the log, the same work a line
    assert per_line[1] < 8, per_line  # about 1.2 here; before, 14 and 104 rows a line
