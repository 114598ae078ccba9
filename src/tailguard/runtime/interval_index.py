"""Incremental interval structures for the ledger: O(log k) queries and updates by ``bisect``.

:class:`IntervalUnion` keeps the union of everything added as a merged, sorted list of
disjoint, non-adjacent, non-empty half-open ranges (the normal form of
:mod:`tailguard.base.intervals`). :class:`Staircase` answers the seed's raw ``truncation_clear``
question (``any(hi > f and lo < t)`` over pairs that may be empty or reversed) without merging,
because merging changes that answer: it keeps only the pairs no other pair dominates.

Both store their ranges in :class:`Runs`: parallel sorted columns (starts, ends, optional
tags) cut into blocks of at most ``2 * LOAD`` rows, with the last start and end of every block
kept for a first ``bisect``. A query bisects the block ends, then one block: O(log k). An update
splices one or two blocks (a ``memmove`` of at most ``2 * LOAD`` pointers, a constant) and
touches the block list only when a block splits or empties. So an insertion costs about the
same wherever it lands; with one flat list, inserting in the middle moved half the list each
time, and 400,000 shuffled truncations took 64 times as long as sorted ones (issue 17).

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, MutableSequence
from itertools import pairwise

from tailguard.base.vocab import Pair

Pos = tuple[int, int]  # (block, row); (number of blocks, 0) is the end

__all__ = ["LOAD", "IntervalUnion", "Runs", "Staircase"]

LOAD = 64
_MIN, _MAX = -(1 << 63), (1 << 63) - 1  # what an array("q") holds


class Runs:
    """Rows ``(lo, hi, tag)`` sorted by ``lo`` and by ``hi`` at once (both ascending), in blocks.

    The base of the structures below: they find positions with :meth:`_first_hi_ge` and its
    kin and replace runs of rows with :meth:`_splice`. ``tags`` is kept only when asked for.
    """

    __slots__ = ("_his", "_los", "_n", "_tags", "_top_his", "_top_los")

    def __init__(self, tags: bool = False) -> None:
        self._los: list[list[int]] = []  # the blocks of starts
        self._his: list[list[int]] = []  # the blocks of ends
        self._tags: list[list[object]] | None = [] if tags else None
        # the last start and the last end of every block, as machine integers while they fit
        # (a bisect over them then reads one contiguous buffer), else as a list (_widen)
        self._top_los: MutableSequence[int] = array("q")
        self._top_his: MutableSequence[int] = array("q")
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    # -- positions -----------------------------------------------------------------

    def _first_hi_ge(self, x: int) -> Pos:
        b = bisect_left(self._top_his, x)
        return (b, bisect_left(self._his[b], x)) if b < len(self._his) else (b, 0)

    def _first_hi_gt(self, x: int) -> Pos:
        b = bisect_right(self._top_his, x)
        return (b, bisect_right(self._his[b], x)) if b < len(self._his) else (b, 0)

    def _first_lo_ge(self, x: int) -> Pos:
        b = bisect_left(self._top_los, x)
        return (b, bisect_left(self._los[b], x)) if b < len(self._los) else (b, 0)

    def _first_lo_gt(self, x: int) -> Pos:
        b = bisect_right(self._top_los, x)
        return (b, bisect_right(self._los[b], x)) if b < len(self._los) else (b, 0)

    def _prev(self, p: Pos) -> Pos | None:
        b, o = p
        if o:
            return (b, o - 1)
        if b:
            return (b - 1, len(self._los[b - 1]) - 1)
        return None

    def _next(self, p: Pos) -> Pos:
        b, o = p
        return (b, o + 1) if o + 1 < len(self._los[b]) else (b + 1, 0)

    def _end(self, p: Pos) -> bool:
        return p[0] == len(self._los)

    # -- changes ---------------------------------------------------------------------

    def _insert(self, p: Pos, lo: int, hi: int, tag: object) -> None:
        """Insert one row at ``p``: in place when its block has room (the common update)."""
        b, o = p
        blo = self._los
        if b < len(blo):
            los = blo[b]
            if len(los) < 2 * LOAD:  # o < len(los): the block's last row, its tops, stay
                los.insert(o, lo)
                self._his[b].insert(o, hi)
                if self._tags is not None:
                    self._tags[b].insert(o, tag)
                self._n += 1
                return
        elif b and len(blo[b - 1]) < 2 * LOAD:  # past the end: the last block has room
            blo[b - 1].append(lo)
            self._his[b - 1].append(hi)
            if self._tags is not None:
                self._tags[b - 1].append(tag)
            self._set_tops(b - 1, lo, hi)
            self._n += 1
            return
        self._splice(p, p, [lo], [hi], None if self._tags is None else [tag])

    def _splice(self, p: Pos, q: Pos, los: list[int], his: list[int], tags: list[object] | None) -> None:
        """Replace the rows from ``p`` up to ``q`` (excluded) by the given rows, in order."""
        blo, bhi, btg = self._los, self._his, self._tags
        nb = len(blo)
        if not nb:
            if los:
                blo.append(list(los))
                bhi.append(list(his))
                if btg is not None:
                    btg.append(list(tags or ()))
                self._insert_tops(0, los[-1], his[-1])
                self._n = len(los)
                self._fix(0)
            return
        if p[0] == nb:  # at the end: append to the last block
            p = (nb - 1, len(blo[nb - 1]))
        if q[0] == nb:
            q = (nb - 1, len(blo[nb - 1]))
        (b1, o1), (b2, o2) = p, q
        if b1 == b2:
            removed = o2 - o1
            blo[b1][o1:o2] = los
            bhi[b1][o1:o2] = his
            if btg is not None:
                btg[b1][o1:o2] = tags or ()
            self._n += len(los) - removed
            self._fix(b1)
            return
        removed = len(blo[b1]) - o1 + o2 + sum(len(blo[b]) for b in range(b1 + 1, b2))
        blo[b1][o1:] = los
        bhi[b1][o1:] = his
        del blo[b2][:o2], bhi[b2][:o2]
        if btg is not None:
            btg[b1][o1:] = tags or ()
            del btg[b2][:o2]
            del btg[b1 + 1:b2]
        del blo[b1 + 1:b2], bhi[b1 + 1:b2], self._top_los[b1 + 1:b2], self._top_his[b1 + 1:b2]
        self._n += len(los) - removed
        self._fix(b1 + 1)
        self._fix(b1)

    def _fix(self, b: int) -> None:
        """Restore block ``b``'s invariants: not empty, at most ``2 * LOAD`` rows, tops current."""
        blo, bhi, btg = self._los, self._his, self._tags
        block = blo[b]
        if not block:
            del blo[b], bhi[b], self._top_los[b], self._top_his[b]
            if btg is not None:
                del btg[b]
            return
        if len(block) > 2 * LOAD:
            half = len(block) // 2
            blo.insert(b + 1, block[half:])
            del block[half:]
            hb = bhi[b]
            bhi.insert(b + 1, hb[half:])
            del hb[half:]
            if btg is not None:
                tb = btg[b]
                btg.insert(b + 1, tb[half:])
                del tb[half:]
            self._insert_tops(b + 1, blo[b + 1][-1], bhi[b + 1][-1])
        self._set_tops(b, block[-1], bhi[b][-1])

    def _widen(self) -> None:
        """An offset outside int64: keep the tops as a list from now on (any integer)."""
        self._top_los, self._top_his = list(self._top_los), list(self._top_his)

    def _set_tops(self, b: int, lo: int, hi: int) -> None:
        if not (_MIN <= lo <= _MAX and _MIN <= hi <= _MAX) and type(self._top_los) is array:
            self._widen()
        self._top_los[b] = lo
        self._top_his[b] = hi

    def _insert_tops(self, b: int, lo: int, hi: int) -> None:
        if not (_MIN <= lo <= _MAX and _MIN <= hi <= _MAX) and type(self._top_los) is array:
            self._widen()
        self._top_los.insert(b, lo)
        self._top_his.insert(b, hi)

    # -- reading ---------------------------------------------------------------------

    def _rows(self, p: Pos) -> Iterator[tuple[int, int, int, int]]:
        """``(lo, hi, block, row)`` from ``p`` on."""
        blo, bhi = self._los, self._his
        b, o = p
        while b < len(blo):
            los, his = blo[b], bhi[b]
            for i in range(o, len(los)):
                yield los[i], his[i], b, i
            b, o = b + 1, 0

    def _tag(self, b: int, o: int) -> object:
        assert self._tags is not None
        return self._tags[b][o]

    def __iter__(self) -> Iterator[Pair]:
        for los, his in zip(self._los, self._his, strict=True):
            yield from zip(los, his, strict=True)

    def first(self) -> Pair | None:
        """The lowest range, or ``None`` when empty."""
        return (self._los[0][0], self._his[0][0]) if self._n else None

    def last(self) -> Pair | None:
        """The highest range, or ``None`` when empty."""
        return (self._los[-1][-1], self._his[-1][-1]) if self._n else None

    def check(self) -> None:
        """Assert the invariants (tests)."""
        rows = list(self)
        assert len(rows) == self._n
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in pairwise(rows))
        for b, los in enumerate(self._los):
            assert 0 < len(los) <= 2 * LOAD and len(self._his[b]) == len(los)
            assert self._top_los[b] == los[-1] and self._top_his[b] == self._his[b][-1]
            if self._tags is not None:
                assert len(self._tags[b]) == len(los)


class IntervalUnion(Runs):
    """The union of half-open ranges, kept merged; empty and reversed ranges add nothing.

    >>> u = IntervalUnion()
    >>> u.add(5, 8); u.add(0, 3); u.add(3, 4); u.add(7, 9); u.add(4, 4)
    >>> list(u)
    [(0, 4), (5, 9)]
    >>> u.intersects(4, 5), u.covers(1, 3), u.gaps(0, 10)
    (False, True, [(4, 5), (9, 10)])
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(tags=False)

    def __repr__(self) -> str:
        return f"IntervalUnion({list(self)!r})"

    @property
    def min_lo(self) -> int:
        """The lowest offset held (the union must not be empty)."""
        return self._los[0][0]

    @property
    def first_hi(self) -> int:
        """The end of the lowest range (the union must not be empty)."""
        return self._his[0][0]

    @property
    def max_hi(self) -> int:
        """The end of the highest range (the union must not be empty)."""
        return self._top_his[-1]

    def add(self, lo: int, hi: int) -> None:
        """Add ``[lo, hi)``, merging with every range it touches or overlaps."""
        if lo >= hi:
            return
        # rows [p, q) touch [lo, hi): hi' >= lo and lo' <= hi
        p = self._first_hi_ge(lo)
        b, o = p
        if b == len(self._los) or self._los[b][o] > hi:  # touches nothing: q == p
            self._insert(p, lo, hi, None)
            return
        q = self._first_lo_gt(hi)
        last = self._prev(q)
        assert last is not None
        first_lo = self._los[p[0]][p[1]]
        last_hi = self._his[last[0]][last[1]]
        self._splice(p, q, [lo if lo < first_lo else first_lo], [hi if hi > last_hi else last_hi], None)

    def add_gaps(self, lo: int, hi: int) -> list[Pair]:
        """:meth:`add` ``[lo, hi)`` and return what it added (``gaps(lo, hi)`` before the add);
        one search when the range touches nothing held."""
        if lo >= hi:
            return []
        p = self._first_hi_ge(lo)
        b, o = p
        if b == len(self._los) or self._los[b][o] > hi:
            self._insert(p, lo, hi, None)
            return [(lo, hi)]
        out = self.gaps(lo, hi)
        self.add(lo, hi)
        return out

    def remove(self, lo: int, hi: int) -> None:
        """Subtract ``[lo, hi)``."""
        if lo >= hi or not self._n:
            return
        # rows [p, q) overlap [lo, hi): hi' > lo and lo' < hi
        p = self._first_hi_gt(lo)
        if self._end(p) or self._los[p[0]][p[1]] >= hi:
            return
        q = self._first_lo_ge(hi)
        last = self._prev(q)
        assert last is not None
        keep_lo: list[int] = []
        keep_hi: list[int] = []
        first_lo = self._los[p[0]][p[1]]
        last_hi = self._his[last[0]][last[1]]
        if first_lo < lo:
            keep_lo.append(first_lo)
            keep_hi.append(lo)
        if last_hi > hi:
            keep_lo.append(hi)
            keep_hi.append(last_hi)
        self._splice(p, q, keep_lo, keep_hi, None)

    def intersects(self, lo: int, hi: int) -> bool:
        """Whether ``[lo, hi)`` shares an offset with the union (empty ranges never do)."""
        if lo >= hi or not self._n:
            return False
        b, o = self._first_hi_gt(lo)
        return b < len(self._los) and self._los[b][o] < hi

    def covers(self, lo: int, hi: int) -> bool:
        """Whether ``[lo, hi)`` lies inside the union (empty ranges always do)."""
        if lo >= hi:
            return True
        p = self._prev(self._first_lo_gt(lo))
        return p is not None and self._his[p[0]][p[1]] >= hi

    def gaps(self, lo: int, hi: int) -> list[Pair]:
        """``[lo, hi)`` minus the union, as maximal ranges; O(log k + output)."""
        out: list[Pair] = []
        if lo >= hi:
            return out
        cur = lo
        if self._n:
            for r_lo, r_hi, _, _ in self._rows(self._first_hi_gt(lo)):
                if r_lo >= hi:
                    break
                if r_lo > cur:
                    out.append((cur, r_lo))
                cur = r_hi
        if cur < hi:
            out.append((cur, hi))
        return out

    def pieces(self, lo: int, hi: int) -> list[Pair]:
        """``[lo, hi)`` intersected with the union, as maximal ranges; O(log k + output)."""
        out: list[Pair] = []
        if lo >= hi or not self._n:
            return out
        for r_lo, r_hi, _, _ in self._rows(self._first_hi_gt(lo)):
            if r_lo >= hi:
                break
            out.append((max(lo, r_lo), min(hi, r_hi)))
        return out


class Staircase(Runs):
    """Pairs ``(lo, hi)`` of any integers, reduced to the ones no other pair dominates.

    A pair is dominated by another with a lower-or-equal ``lo`` and a higher-or-equal
    ``hi``: for every query below, the dominating pair answers at least as strongly. The
    kept pairs have strictly increasing ``lo`` and ``hi``. Each pair carries a tag (the
    audit stores the event line) so a refusal can name its witness.

    >>> s = Staircase()
    >>> s.add(0, 8, "a"); s.add(5, 5, "b"); s.add(10, 3, "c")
    >>> s.max_hi_below(5), s.max_hi_below(0), s.max_hi_below(6)
    ((0, 8, 'a'), None, (0, 8, 'a'))
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(tags=True)

    def add(self, lo: int, hi: int, tag: object = None) -> None:
        """Record the pair; O(log k) plus a splice of one block."""
        p = self._first_lo_gt(lo)
        before = self._prev(p)
        if before is not None:
            if self._his[before[0]][before[1]] >= hi:
                return  # dominated by a pair with lo' <= lo, hi' >= hi
            if self._los[before[0]][before[1]] == lo:
                p = before  # same lo, smaller hi: the new pair dominates it
        b, o = p
        if b == len(self._los) or self._his[b][o] > hi:  # dominates nothing
            self._insert(p, lo, hi, tag)
            return
        q = self._first_hi_gt(hi)  # kept pairs from p on with hi' <= hi are dominated
        self._splice(p, q, [lo], [hi], [tag])

    def max_hi_below(self, t: int) -> tuple[int, int, object] | None:
        """Among pairs with ``lo < t``, one with the largest ``hi`` (with its tag), or None."""
        p = self._prev(self._first_lo_ge(t))
        if p is None:
            return None
        b, o = p
        return (self._los[b][o], self._his[b][o], self._tag(b, o))
