"""The blocked interval index (issue 17, point 6) against flat, obviously right references.

The references are the flat-list structures the ledger used before (one sorted list, spliced
in place), and a set of offsets. Blocks are made tiny (``LOAD = 2``) so that every operation
meets block splits, empty blocks and runs that span several blocks.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import pairwise

import pytest
from hypothesis import given, settings, strategies as st

import tailguard.runtime.interval_index as ix
from tailguard.runtime.interval_index import IntervalUnion, Staircase
from tailguard.runtime.ledger_core import TruncationOrigins, _difference


@pytest.fixture(autouse=True)
def tiny_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ix, "LOAD", 2)


class FlatStaircase:
    def __init__(self) -> None:
        self.los: list[int] = []
        self.his: list[int] = []
        self.tags: list[object] = []

    def add(self, lo: int, hi: int, tag: object) -> None:
        los, his = self.los, self.his
        i = bisect_right(los, lo)
        if i and his[i - 1] >= hi:
            return
        if i and los[i - 1] == lo:
            i -= 1
        j = bisect_right(his, hi, i)
        los[i:j] = (lo,)
        his[i:j] = (hi,)
        self.tags[i:j] = (tag,)

    def max_hi_below(self, t: int) -> tuple[int, int, object] | None:
        i = bisect_left(self.los, t)
        return (self.los[i - 1], self.his[i - 1], self.tags[i - 1]) if i else None


def _points(u: IntervalUnion) -> set[int]:
    return {x for lo, hi in u for x in range(lo, hi)}


def _ranges(points: set[int], lo: int, hi: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for x in range(lo, hi):
        if x in points:
            if out and out[-1][1] == x:
                out[-1] = (out[-1][0], x + 1)
            else:
                out.append((x, x + 1))
    return out


ops = st.lists(st.tuples(st.sampled_from(["add", "remove"]), st.integers(-2, 60), st.integers(-2, 60)),
               max_size=60)


@settings(max_examples=300, deadline=None)
@given(ops, st.integers(-3, 62), st.integers(-3, 62))
def test_interval_union_matches_a_set_of_offsets(steps: list[tuple[str, int, int]], qlo: int, qhi: int) -> None:
    u, ref = IntervalUnion(), set[int]()
    for op, lo, hi in steps:
        if op == "add":
            fresh = u.add_gaps(lo, hi) if (lo + hi) % 2 else (u.add(lo, hi) or [])
            if (lo + hi) % 2:
                assert fresh == _ranges(set(range(lo, hi)) - ref, lo, hi)
            ref |= set(range(lo, hi))
        else:
            u.remove(lo, hi)
            ref -= set(range(lo, hi))
        u.check()
        assert _points(u) == ref
        rows = list(u)
        assert all(a[1] < b[0] for a, b in pairwise(rows))  # merged
        assert len(u) == len(rows) and bool(u) == bool(rows)
    rows = list(u)
    inside = set(range(qlo, qhi))
    assert u.intersects(qlo, qhi) == bool(inside & ref)
    assert u.covers(qlo, qhi) == (inside <= ref)
    assert u.gaps(qlo, qhi) == _ranges(inside - ref, qlo, qhi)
    assert u.pieces(qlo, qhi) == _ranges(inside & ref, qlo, qhi)
    if rows:
        assert (u.min_lo, u.first_hi, u.max_hi) == (rows[0][0], rows[0][1], rows[-1][1])
        assert (u.first(), u.last()) == (rows[0], rows[-1])


pairs = st.lists(st.tuples(st.integers(-3, 40), st.integers(-3, 40)), max_size=60)


@settings(max_examples=300, deadline=None)
@given(pairs, pairs)
def test_the_ledgers_difference_of_unions_matches_a_set_of_offsets(
        a_pairs: list[tuple[int, int]], b_pairs: list[tuple[int, int]]) -> None:
    """``lost = TRU \\ R`` after a shrink of the coverage (base.intervals.difference on the rows)."""
    a, b = IntervalUnion(), IntervalUnion()
    for lo, hi in a_pairs:
        a.add(lo, hi)
    for lo, hi in b_pairs:
        b.add(lo, hi)
    out = _difference(a, b)
    out.check()
    assert list(out) == _ranges(_points(a) - _points(b), -3, 40)


@settings(max_examples=300, deadline=None)
@given(pairs, st.lists(st.integers(-5, 45), min_size=1, max_size=8))
def test_staircase_matches_the_flat_staircase(adds: list[tuple[int, int]], queries: list[int]) -> None:
    s, ref = Staircase(), FlatStaircase()
    for k, (lo, hi) in enumerate(adds):
        s.add(lo, hi, k)
        ref.add(lo, hi, k)
        s.check()
        assert list(s) == list(zip(ref.los, ref.his, strict=True))
    for t in queries:
        assert s.max_hi_below(t) == ref.max_hi_below(t)


@settings(max_examples=200, deadline=None)
@given(st.permutations(range(30)), st.integers(0, 31), st.integers(0, 31))
def test_truncation_origins_merge_and_tag_in_any_order(order: list[int], qlo: int, qhi: int) -> None:
    o = TruncationOrigins()
    for line, x in enumerate(order):
        o.add_fresh(x, x + 1, line)
        o.check()
    assert list(o) == [(0, 30)]
    assert o.within(0, 30) == [(order.index(0), order.index(29))]  # first and last line
    # as the flat version: the ranges with hi > qlo and lo < qhi
    assert o.within(qlo, qhi) == ([o.within(0, 30)[0]] if qlo < 30 and qhi > 0 else [])


def test_truncation_origins_keep_disjoint_ranges_apart() -> None:
    o = TruncationOrigins()
    for line, x in enumerate([8, 2, 6, 0, 4]):
        o.add_fresh(x, x + 1, line)
    o.check()
    assert list(o) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    assert o.within(1, 7) == [(1, 1), (4, 4), (2, 2)]
    o.add_fresh(1, 2, 9)
    assert next(iter(o)) == (0, 3) and o.within(0, 1) == [(3, 1)]


@pytest.mark.parametrize("base", [0, (1 << 63) - 40, -(1 << 63) - 5, 10**30])
def test_offsets_past_int64_widen_the_block_tops(base: int) -> None:
    """The block tops are an array("q") while every offset fits, a list after (any integer)."""
    u, ref = IntervalUnion(), set[int]()
    s, flat = Staircase(), FlatStaircase()
    for k, x in enumerate([30, 2, 18, 6, 26, 10, 14, 22, 0, 34, 38, 4]):
        u.add(base + x, base + x + 3)
        ref |= set(range(base + x, base + x + 3))
        s.add(base + x, base - x, k)  # reversed pairs: the staircase keeps them raw
        flat.add(base + x, base - x, k)
        u.check()
        s.check()
    assert _points(u) == ref
    assert list(s) == list(zip(flat.los, flat.his, strict=True))
    assert u.gaps(base, base + 45) == _ranges(set(range(base, base + 45)) - ref, base, base + 45)
