"""The text audit report: each hole explained once, later compactions say "still open since line L"."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings, strategies as st

from tailguard.audit.report import _Reported, still_open_sentence
from tailguard.base.intervals import normalize
from tests.test_audit import HEADER, audit, write

TRUNC = '{{"event": "truncate", "range": [{}, {}]}}'
COMPACT = ('{{"event": "compact", "summary_input": [{a}, {n}], "summary_covers": [{a}, {t}], '
           '"tail_start": {t}, "override": "ops"}}')


def _session(tmp_path: Path) -> str:
    # line 3 truncates [0, 2) (a hole); compactions at lines 5, 7, 9, 11; line 8 truncates [30, 31),
    # never summarized (a second hole); line 10 spills both, so the compaction at line 11 is allowed
    lines = [HEADER, '{"event": "append", "count": 30}', TRUNC.format(0, 2),
             '{"event": "append", "count": 2}', COMPACT.format(a=2, n=32, t=28),
             '{"event": "append", "count": 2}', COMPACT.format(a=28, n=34, t=30),
             TRUNC.format(30, 31), COMPACT.format(a=31, n=34, t=32),
             '{"event": "spill", "range": [0, 34]}', COMPACT.format(a=32, n=34, t=32)]
    return write(tmp_path, *lines)


def test_a_hole_that_stays_open_is_explained_once(tmp_path: Path) -> None:
    path = _session(tmp_path)
    code, out, _ = audit(path)
    assert code == 1
    assert out.count("were truncated at line 3") == 1
    assert ":5: refuse no_hole: offsets [0, 2) were truncated at line 3 and never summarized or spilled\n" in out
    assert ":7: refuse no_hole: offsets [0, 2) still open since line 5 (explained where first reported)\n" in out
    assert (":9: refuse no_hole: offsets [30, 31) were truncated at line 8 and never summarized or spilled; "
            "offsets [0, 2) still open since line 5 (explained where first reported)\n") in out
    assert ":11:" not in out, "the compaction after the spill is allowed"
    assert out.endswith(": 4 compactions judged, 3 refused (profile strict)\n")


def test_json_keeps_every_compactions_full_hole_list(tmp_path: Path) -> None:
    code, out, _ = audit("--format", "json", _session(tmp_path))
    assert code == 1
    holes = [c["holes"] for c in json.loads(out)["compactions"]]
    assert holes == [[[0, 2]], [[0, 2]], [[0, 2], [30, 31]], []]


def test_holes_after_a_clean_compaction_are_explained_and_then_still_open(tmp_path: Path) -> None:
    # [0, 2) is a hole at line 4, closed by the spill at line 5 (line 7 is allowed); the
    # compaction at line 9 does not see summary 'u' (a new hole [2, 10), explained); at line 11
    # [2, 10) is still open and [10, 12), lost with summary '2', is new
    lines = [HEADER, '{"event": "append", "count": 10}', TRUNC.format(0, 2),
             COMPACT.format(a=2, n=10, t=8).replace('"override": "ops"', '"summary": "s", "override": "ops"'),
             '{"event": "spill", "range": [0, 2]}', '{"event": "append", "count": 2}',
             '{"event": "compact", "summary_input": [8, 12], "summary_covers": [8, 10], "tail_start": 10, '
             '"summary": "u"}',
             '{"event": "append", "count": 2}',
             '{"event": "compact", "summary_input": [10, 14], "summary_covers": [10, 12], "tail_start": 12, '
             '"saw": [], "override": "ops"}',
             '{"event": "append", "count": 2}',
             '{"event": "compact", "summary_input": [12, 16], "summary_covers": [12, 14], "tail_start": 14, '
             '"saw": [], "override": "ops"}']
    code, out, _ = audit(write(tmp_path, *lines))
    assert code == 1
    assert ":4: refuse no_hole: offsets [0, 2) were truncated at line 3" in out
    assert ":7:" not in out  # allowed: s saw [2, 8), the spill holds [0, 2)
    assert ":9: refuse no_hole: offsets [2, 10) were covered only by summary 'u' (line 7)" in out
    assert (":11: refuse no_hole: offsets [10, 12) were covered only by summary '2' (line 9), which this "
            "compaction's summarizer did not see and which it does not keep; offsets [2, 10) still open since "
            "line 9 (explained where first reported)\n") in out
    assert "[0, 2)" not in out.split(":9:", 1)[1], "a closed hole is not reported as still open"


def test_summary_prints_counts_only(tmp_path: Path) -> None:
    path = _session(tmp_path)
    code, out, _ = audit("--summary", path)
    assert code == 1
    assert out == f"{path}: 4 compactions judged, 3 refused (profile strict)\n"
    code, out, _ = audit("--summary", "--format", "json", path)
    assert code == 1
    assert json.loads(out) == {"judged": 4, "violations": 3, "refusals": 0}


def test_still_open_sentence_is_bounded() -> None:
    pieces = [(10 * i, 10 * i + 2, 100 + i // 3) for i in range(3000)]
    text = still_open_sentence(pieces)
    assert len(text) < 400, text
    assert text.startswith("offsets [0, 2), [10, 12), [20, 22) still open since line 100; ")
    assert "2,991 more still open since 997 later compactions (lines 103 to 1099)" in text


pairs = st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)).map(sorted).map(tuple), max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(pairs, min_size=1, max_size=6))
def test_reported_split_matches_a_per_offset_oracle(rounds: list[list[tuple[int, int]]]) -> None:
    rep = _Reported()
    since: dict[int, int] = {}  # offset -> line first reported, for offsets in the last holes
    for line, raw in enumerate(rounds, 1):
        holes = tuple(normalize([p for p in raw if p[0] < p[1]]))
        offsets = {x for lo, hi in holes for x in range(lo, hi)}
        old, new = rep.split(holes, line)
        got_old = {x: s for lo, hi, s in old for x in range(lo, hi)}
        got_new = {x for lo, hi in new for x in range(lo, hi)}
        assert got_old == {x: since[x] for x in offsets if x in since}
        assert got_new == {x for x in offsets if x not in since}
        assert normalize([(lo, hi) for lo, hi, _ in old] + new) == list(holes)
        since = {x: since.get(x, line) for x in offsets}
