"""Interval-set primitives: the ground the runtime checker stands on.

A *set* is a list of half-open ``(lo, hi)`` pairs, sorted, pairwise disjoint and
non-adjacent, each non-empty (``lo < hi``): the normal form. Every primitive takes
and returns normal forms, except :func:`normalize`, which builds one from any pairs
in O(k log k). The other operations are linear sweeps.

The block between the ``primitives`` markers is copied verbatim into the generated
checker (``tailguard gen``), so it must stay standard-library only and self-contained.
"""

from __future__ import annotations

# --- begin primitives ---
from collections.abc import Iterable

from tailguard.base.vocab import Pair

IntervalSet = list[Pair]


def interval(lo: int, hi: int) -> IntervalSet:
    """The set ``[lo, hi)``; empty when ``hi <= lo``.

    >>> interval(2, 5), interval(5, 5), interval(6, 5)
    ([(2, 5)], [], [])
    """
    return [(lo, hi)] if lo < hi else []


def normalize(pairs: Iterable[Pair]) -> IntervalSet:
    """Union of any pairs as a normal form (empty and reversed pairs contribute nothing).

    >>> normalize([(5, 8), (0, 3), (3, 4), (7, 9), (4, 4)])
    [(0, 4), (5, 9)]
    """
    out: IntervalSet = []
    for lo, hi in sorted(p for p in pairs if p[0] < p[1]):
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def union(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    """``a ∪ b``."""
    return normalize(a + b) if a and b else list(a or b)


def intersect(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    """``a ∩ b`` by a two-pointer sweep.

    >>> intersect([(0, 5), (8, 12)], [(3, 10)])
    [(3, 5), (8, 10)]
    """
    out: IntervalSet = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if lo < hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def difference(a: IntervalSet, b: IntervalSet) -> IntervalSet:
    """``a \\ b`` by a sweep.

    >>> difference([(0, 10)], [(2, 3), (5, 7)])
    [(0, 2), (3, 5), (7, 10)]
    """
    out: IntervalSet = []
    j = 0
    for lo, hi in a:
        while j < len(b) and b[j][1] <= lo:
            j += 1
        k = j
        cur = lo
        while k < len(b) and b[k][0] < hi:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < hi:
            out.append((cur, hi))
    return out


def is_subset(a: IntervalSet, b: IntervalSet) -> bool:
    """``a ⊆ b``."""
    return not difference(a, b)


def within(a: Pair, b: Pair) -> bool:
    """Interval ``a`` as a set lies inside interval ``b`` as a set (endpoints only).

    >>> within((3, 5), (0, 9)), within((5, 5), (7, 6)), within((3, 10), (0, 9))
    (True, True, False)
    """
    return a[0] >= a[1] or (b[0] <= a[0] and a[1] <= b[1])


def disjoint(a: Pair, b: Pair) -> bool:
    """Intervals ``a`` and ``b`` share no offset: ``max(lo) >= min(hi)``.

    >>> disjoint((0, 5), (5, 9)), disjoint((0, 6), (5, 9)), disjoint((4, 2), (0, 9))
    (True, False, True)
    """
    return max(a[0], b[0]) >= min(a[1], b[1])


def fmt_set(s: IntervalSet) -> str:
    """Human form: ``[0, 8), [9, 12)``; ``nothing`` when empty."""
    return ", ".join(f"[{lo}, {hi})" for lo, hi in s) if s else "nothing"


# --- end primitives ---
