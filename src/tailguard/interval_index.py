"""Incremental interval structures for the ledger: O(log k) queries by ``bisect``.

:class:`IntervalUnion` keeps the union of everything added as a merged, sorted list of
disjoint, non-adjacent, non-empty half-open ranges (the normal form of
:mod:`tailguard.intervals`), stored as two parallel lists so that ``bisect`` runs on plain
ints. Queries cost O(log k); an update costs O(log k) plus a list splice (a ``memmove``).

:class:`Staircase` answers the seed's raw ``truncation_clear`` question
(``any(hi > f and lo < t)`` over pairs that may be empty or reversed) without merging,
because merging changes that answer: it keeps only the pairs no other pair dominates.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator

Pair = tuple[int, int]

__all__ = ["IntervalUnion", "Staircase"]


class IntervalUnion:
    """The union of half-open ranges, kept merged; empty and reversed ranges add nothing.

    >>> u = IntervalUnion()
    >>> u.add(5, 8); u.add(0, 3); u.add(3, 4); u.add(7, 9); u.add(4, 4)
    >>> list(u)
    [(0, 4), (5, 9)]
    >>> u.intersects(4, 5), u.covers(1, 3), u.gaps(0, 10)
    (False, True, [(4, 5), (9, 10)])
    """

    __slots__ = ("his", "los")

    def __init__(self) -> None:
        #: starts and ends of the merged ranges, both ascending; read them, never write
        self.los: list[int] = []
        self.his: list[int] = []

    def __len__(self) -> int:
        return len(self.los)

    def __bool__(self) -> bool:
        return bool(self.los)

    def __iter__(self) -> Iterator[Pair]:
        return zip(self.los, self.his, strict=True)

    def __repr__(self) -> str:
        return f"IntervalUnion({list(self)!r})"

    def add(self, lo: int, hi: int) -> None:
        """Add ``[lo, hi)``, merging with every range it touches or overlaps."""
        if lo >= hi:
            return
        los, his = self.los, self.his
        # ranges [i, j) touch [lo, hi): his[i] >= lo and los[j-1] <= hi
        i = bisect_left(his, lo)
        j = bisect_right(los, hi, i)
        if i == j:
            los.insert(i, lo)
            his.insert(i, hi)
            return
        new_lo = lo if lo < los[i] else los[i]
        new_hi = hi if hi > his[j - 1] else his[j - 1]
        los[i:j] = (new_lo,)
        his[i:j] = (new_hi,)

    def remove(self, lo: int, hi: int) -> None:
        """Subtract ``[lo, hi)``."""
        if lo >= hi:
            return
        los, his = self.los, self.his
        # ranges [i, j) overlap [lo, hi): his[i] > lo and los[j-1] < hi
        i = bisect_right(his, lo)
        j = bisect_left(los, hi, i)
        if i == j:
            return
        keep_lo: list[int] = []
        keep_hi: list[int] = []
        if los[i] < lo:
            keep_lo.append(los[i])
            keep_hi.append(lo)
        if his[j - 1] > hi:
            keep_lo.append(hi)
            keep_hi.append(his[j - 1])
        los[i:j] = keep_lo
        his[i:j] = keep_hi

    def intersects(self, lo: int, hi: int) -> bool:
        """Whether ``[lo, hi)`` shares an offset with the union (empty ranges never do)."""
        if lo >= hi or not self.los:
            return False
        i = bisect_right(self.his, lo)
        return i < len(self.los) and self.los[i] < hi

    def covers(self, lo: int, hi: int) -> bool:
        """Whether ``[lo, hi)`` lies inside the union (empty ranges always do)."""
        if lo >= hi:
            return True
        i = bisect_right(self.los, lo) - 1
        return i >= 0 and self.his[i] >= hi

    def gaps(self, lo: int, hi: int) -> list[Pair]:
        """``[lo, hi)`` minus the union, as maximal ranges; O(log k + output)."""
        out: list[Pair] = []
        if lo >= hi:
            return out
        los, his = self.los, self.his
        i = bisect_right(his, lo)
        cur = lo
        n = len(los)
        while i < n and los[i] < hi:
            if los[i] > cur:
                out.append((cur, los[i]))
            cur = his[i]
            i += 1
        if cur < hi:
            out.append((cur, hi))
        return out

    def pieces(self, lo: int, hi: int) -> list[Pair]:
        """``[lo, hi)`` intersected with the union, as maximal ranges; O(log k + output)."""
        out: list[Pair] = []
        if lo >= hi:
            return out
        los, his = self.los, self.his
        i = bisect_right(his, lo)
        n = len(los)
        while i < n and los[i] < hi:
            out.append((max(lo, los[i]), min(hi, his[i])))
            i += 1
        return out

    def first(self) -> Pair | None:
        """The lowest range, or ``None`` when empty."""
        return (self.los[0], self.his[0]) if self.los else None

    def last(self) -> Pair | None:
        """The highest range, or ``None`` when empty."""
        return (self.los[-1], self.his[-1]) if self.los else None


class Staircase:
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

    __slots__ = ("_his", "_los", "_tags")

    def __init__(self) -> None:
        self._los: list[int] = []
        self._his: list[int] = []
        self._tags: list[object] = []

    def __len__(self) -> int:
        return len(self._los)

    def add(self, lo: int, hi: int, tag: object = None) -> None:
        """Record the pair; O(log k) plus a splice."""
        los, his = self._los, self._his
        i = bisect_right(los, lo)
        if i and his[i - 1] >= hi:
            return  # dominated by a pair with lo' <= lo, hi' >= hi
        if i and los[i - 1] == lo:
            i -= 1  # same lo, smaller hi: the new pair dominates it
        j = bisect_right(his, hi, i)  # kept pairs from i on with hi' <= hi are dominated
        los[i:j] = (lo,)
        his[i:j] = (hi,)
        self._tags[i:j] = (tag,)

    def max_hi_below(self, t: int) -> tuple[int, int, object] | None:
        """Among pairs with ``lo < t``, one with the largest ``hi`` (with its tag), or None."""
        i = bisect_left(self._los, t)
        if not i:
            return None
        return (self._los[i - 1], self._his[i - 1], self._tags[i - 1])
