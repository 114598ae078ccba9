"""Tests written to kill surviving mutants of ``tailguard.runtime.interval_index`` (tools/mutation.sh
--subset): empty ranges and ranges that touch, iteration across blocks, the empty union, and the
invariant check the other tests rely on (each invariant broken on purpose must be caught)."""

from __future__ import annotations

import pytest

from tailguard.runtime.interval_index import LOAD, IntervalUnion


def test_an_empty_range_adds_nothing_and_reports_no_gap() -> None:
    u = IntervalUnion()
    assert u.add_gaps(5, 5) == [] and list(u) == [] and not u
    u.add(0, 3)
    assert u.add_gaps(7, 7) == [] and list(u) == [(0, 3)]
    u.check()


def test_pieces_stop_at_a_range_that_starts_where_the_query_ends() -> None:
    u = IntervalUnion()
    u.add(0, 5)
    u.add(10, 20)
    assert u.pieces(3, 10) == [(3, 5)]
    assert u.pieces(5, 10) == []
    assert u.pieces(3, 11) == [(3, 5), (10, 11)]


def test_the_empty_union_has_no_first_or_last_and_a_readable_repr() -> None:
    u = IntervalUnion()
    assert u.first() is None and u.last() is None and repr(u) == "IntervalUnion([])"
    u.add(4, 6)
    u.add(0, 1)
    assert u.first() == (0, 1) and u.last() == (4, 6) and repr(u) == "IntervalUnion([(0, 1), (4, 6)])"


def test_many_ranges_span_several_blocks_and_are_all_visited() -> None:
    u = IntervalUnion()
    want = [(3 * k, 3 * k + 1) for k in range(5 * LOAD)]
    for lo, hi in reversed(want):
        u.add(lo, hi)
    u.check()
    assert len(u._los) > 2  # several blocks
    assert list(u) == want
    assert u.pieces(0, 3 * len(want)) == want
    assert u.gaps(0, 9) == [(1, 3), (4, 6), (7, 9)]
    assert u.first() == want[0] and u.last() == want[-1]


def _union(*pairs: tuple[int, int]) -> IntervalUnion:
    u = IntervalUnion()
    for lo, hi in pairs:
        u.add(lo, hi)
    u.check()
    return u


@pytest.mark.parametrize("breaks", ["same lo", "same hi", "empty block", "oversized block", "top lo",
                                    "top hi", "count"])
def test_the_invariant_check_catches_each_broken_invariant(breaks: str) -> None:
    u = _union((0, 5), (10, 20))
    if breaks == "same lo":
        u._los[0][1] = 0
        u._top_los[0] = 0
    elif breaks == "same hi":
        u._his[0][0] = 20
    elif breaks == "empty block":
        u._los.append([])
        u._his.append([])
        u._top_los.append(0)
        u._top_his.append(0)
    elif breaks == "oversized block":
        big = _union(*[(3 * k, 3 * k + 1) for k in range(2 * LOAD)])
        los = [lo for b in big._los for lo in b] + [10_000 + k for k in range(LOAD // 2)]
        his = [hi for b in big._his for hi in b] + [10_001 + k for k in range(LOAD // 2)]
        u._los, u._his = [los], [his]
        u._top_los, u._top_his = [los[-1]], [his[-1]]
        u._n = len(los)
    elif breaks == "top lo":
        u._top_los[0] = 11
    elif breaks == "top hi":
        u._top_his[0] = 21
    else:
        u._n += 1
    with pytest.raises(AssertionError):
        u.check()


@pytest.mark.parametrize("where", ["a block", "the blocks"])
def test_iteration_refuses_starts_and_ends_out_of_step(where: str) -> None:
    """``zip(..., strict=True)``: a corrupted layout raises instead of silently dropping rows."""
    u = _union((0, 5), (10, 20))
    if where == "a block":
        u._his[0].append(30)
    else:
        u._his.append([40])
    with pytest.raises(ValueError, match="zip"):
        list(u)


def test_plain_runs_keep_no_tags_unless_asked() -> None:
    from tailguard.runtime.interval_index import Runs
    plain, tagged = Runs(), Runs(tags=True)
    for r in (plain, tagged):
        r._insert((0, 0), 1, 2, "t")
        r.check()
    assert plain._tags is None and tagged._tags == [["t"]] and tagged._tag(0, 0) == "t"


def test_add_gaps_merges_a_range_that_ends_where_a_held_one_starts() -> None:
    u = _union((5, 9))
    assert u.add_gaps(0, 5) == [(0, 5)]
    assert list(u) == [(0, 9)] and len(u) == 1
    assert u.add_gaps(9, 12) == [(9, 12)] and list(u) == [(0, 12)]


def test_a_range_past_int64_appended_after_small_ones_widens_the_tops() -> None:
    """The append fast path of ``_insert`` (``_set_tops``) must widen too, not only a new block."""
    big = 1 << 63
    u = _union((0, 1))
    u.add(big, big + 2)  # appended to the last block in place
    u.add(-big - 5, -big - 1)  # below int64, at the front
    u.check()
    assert list(u) == [(-big - 5, -big - 1), (0, 1), (big, big + 2)] and u.max_hi == big + 2
    assert u.intersects(big + 1, big + 3) and u.gaps(-1, big + 3) == [(-1, 0), (1, big), (big + 2, big + 3)]
