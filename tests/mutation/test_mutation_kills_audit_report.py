"""Tests written to kill surviving mutants of ``tailguard.audit.report`` (tools/mutation.sh).

They pin the exact pieces ``_Reported.split`` returns (no empty or repeated piece, which the
per-offset oracle of tests/test_audit_report.py cannot see), the bounded sentence's counts and
line ranges, that a ``well_formed`` refusal leaves what was reported reported, and the exact
refusal lines of the text report.
"""

from __future__ import annotations

import io
from pathlib import Path

from tailguard.audit.replay import Verdict, replay
from tailguard.audit.report import TextReport, _Reported, still_open_sentence
from tailguard.cli.main import main
from tailguard.runtime.eventlog import iter_events

HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 2, '
          '"floor_unit": "turns", "truncator_unit": "turns"}')


def test_split_returns_exact_pieces_never_empty_or_repeated() -> None:
    rep = _Reported()
    assert rep.split(((5, 8),), 1) == ([], [(5, 8)])
    # a hole ending where a reported piece starts: that piece is not touched
    assert rep.split(((0, 5),), 2) == ([], [(0, 5)])
    rep = _Reported()
    rep.split(((0, 4),), 1)
    # a hole starting exactly at a reported piece: no empty new piece before it
    assert rep.split(((0, 6),), 2) == ([(0, 4, 1)], [(4, 6)])
    rep = _Reported()
    rep.split(((0, 6),), 1)
    # a hole ending inside a reported piece: no empty new piece after it
    assert rep.split(((0, 4),), 2) == ([(0, 4, 1)], [])


def test_split_walks_past_several_reported_pieces() -> None:
    rep = _Reported()
    rep.split(((0, 1), (2, 3), (4, 5)), 1)
    assert rep.split(((0, 1), (4, 5)), 2) == ([(0, 1, 1), (4, 5, 1)], [])
    rep = _Reported()
    rep.split(((0, 1), (2, 3), (4, 5)), 1)
    assert rep.split(((0, 6),), 2) == ([(0, 1, 1), (2, 3, 1), (4, 5, 1)], [(1, 2), (3, 4), (5, 6)])
    # and the same holes again are answered from what was remembered
    assert rep.split(((0, 6),), 3) == ([(0, 1, 1), (1, 2, 2), (2, 3, 1), (3, 4, 2), (4, 5, 1), (5, 6, 2)], [])


def test_the_sentence_shows_four_ranges_per_group_and_three_groups() -> None:
    four = [(0, 1, 5), (2, 3, 5), (4, 5, 5), (6, 7, 5)]
    assert still_open_sentence(four) == (
        "offsets [0, 1), [2, 3), [4, 5), [6, 7) still open since line 5 (explained where first reported)")
    assert still_open_sentence([*four, (8, 9, 5)]) == (
        "offsets [0, 1), [2, 3), [4, 5), [6, 7) and 1 more still open since line 5 (explained where first reported)")
    groups = [(0, 1, 5), (2, 3, 6), (4, 5, 7), (6, 7, 8), (8, 9, 8)]
    assert still_open_sentence(groups) == (
        "offsets [0, 1) still open since line 5; offsets [2, 3) still open since line 6; offsets [4, 5) still "
        "open since line 7; 2 more still open since 1 later compaction (line 8) (explained where first reported)")
    assert still_open_sentence([*groups, (10, 11, 9)]).endswith(
        "; 3 more still open since 2 later compactions (lines 8 to 9) (explained where first reported)")


def test_the_text_report_of_two_clauses_a_well_formed_refusal_and_a_hole_still_open(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([
        HEADER, '{"event": "append", "count": 10}', '{"event": "truncate", "range": [0, 2]}',
        '{"event": "compact", "summary_input": [2, 10], "summary_covers": [2, 6], "tail_start": 8, "override": "ops"}',
        '{"event": "compact", "summary_input": [5, 3], "summary_covers": [2, 6], "tail_start": 6, "override": "ops"}',
        '{"event": "compact", "summary_input": [2, 10], "summary_covers": [2, 8], "tail_start": 8, "override": "ops"}',
    ]) + "\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["audit", str(path)], stdout=out, stderr=err) == 1
    p = str(path)
    assert out.getvalue().splitlines() == [
        f"{p}:4: compaction refused (seam_contiguous, no_hole): summary covers [2, 6) of input [2, 10), tail "
        "starts at 8, history end 10 turns",
        f"{p}:4: refuse seam_contiguous: summary coverage ends at 6 but the tail starts at 8; the seam has a gap",
        f"{p}:4: refuse no_hole: offsets [0, 2) were truncated at line 3 and never summarized or spilled; offsets "
        "[6, 8) are in no summary, spill or tail (the compaction evicts them unsummarized)",
        f'{p}:4: committed anyway, override: "ops"',
        f"{p}:5: compaction refused (well_formed): summary covers [2, 6) of input [5, 3), tail starts at 6, "
        "history end 10 turns",
        f"{p}:5: refuse well_formed: the case is inconsistent (summary input [5, 3) is not an interval inside "
        "[0, 10]); the guard fails closed",
        f'{p}:5: committed anyway, override: "ops"',
        # the well_formed refusal computed no holes: [0, 2) stays reported, explained at line 4
        f"{p}:6: compaction refused (no_hole): summary covers [2, 8) of input [2, 10), tail starts at 8, "
        "history end 10 turns",
        f"{p}:6: refuse no_hole: offsets [0, 2) still open since line 4 (explained where first reported)",
        f'{p}:6: committed anyway, override: "ops"',
        f"{p}: 3 compactions judged, 3 refused (profile strict)",
    ]


def test_a_report_made_without_a_unit_names_none() -> None:
    lines = [HEADER.encode(), b'{"event": "append", "count": 4}', b'{"event": "truncate", "range": [0, 1]}',
             b'{"event": "compact", "summary_input": [1, 4], "summary_covers": [1, 2], "tail_start": 2}']
    out = io.StringIO()
    report = TextReport("w", out)
    for v in replay(iter_events(lines), explain=True, narrow=report.narrow):
        if isinstance(v, Verdict):
            report.verdict(v)
    assert out.getvalue().splitlines()[0] == (
        "w:4: compaction refused (no_hole): summary covers [1, 2) of input [1, 4), tail starts at 2, history end 4 ")
