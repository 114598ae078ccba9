"""Summary lineage (spec 1.1, SPEC.md section 10): which summaries are in the context, and what
each one can still bring back.

Every compaction ``k`` creates a summary ``S_k`` with an id (given, or its 0-based ordinal among
the session's compactions as a decimal string; unique within a session). Its *effective
coverage* is::

    E(S_k) = ((C_k ∩ I_k) \\ TRU_k) ∪ ⋃ { E(S_j) : j ∈ saw_k }

where ``saw_k`` are the summaries its summarizer saw whole (default: every summary in the
context) and ``TRU_k`` the truncations recorded before it. When it commits, the context holds
``keeps_k ∪ {S_k}`` (``keeps`` defaults to none): every other summary leaves, its coverage with
it. A budget stage can also evict a summary. The prior coverage of a compaction's case is
``⋃ { E(S_j) : j ∈ saw ∪ keeps }``.

With the defaults (every summary seen, none kept) the context always holds one summary whose
coverage is the union of every honest part so far: exactly spec 1.0's prior coverage
(theorem T14). That path costs nothing extra here: the one summary's coverage is grown in place.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

from tailguard.base.vocab import Pair
from tailguard.runtime.interval_index import IntervalUnion

__all__ = ["LostCoverage", "Summary", "SummaryContext"]


class Summary:
    """One summary in the context: its id, the tag (log line) of its compaction, ``E(S)``."""

    __slots__ = ("coverage", "id", "tag")

    def __init__(self, sid: str, tag: object, coverage: IntervalUnion) -> None:
        self.id, self.tag, self.coverage = sid, tag, coverage


def union_of(unions: Iterable[IntervalUnion]) -> IntervalUnion:
    """The merged union of several interval unions (a new object)."""
    out = IntervalUnion()
    for u in unions:
        for lo, hi in u:
            out.add(lo, hi)
    return out


class SummaryContext:
    """The summaries in the context, oldest first, with their effective coverage.

    ``coverage()`` is ``⋃ E`` over the whole context; with one summary in the context it is
    that summary's own union (no copy), so read it, never write it.
    """

    __slots__ = ("_count", "_cov", "_ids", "_used")  # _cov is read directly by the ledger core

    def __init__(self) -> None:
        self._ids: dict[str, Summary] = {}  # in the context, oldest first
        self._used: dict[str, object] = {}  # every id ever created -> the tag that created it
        self._count = 0  # compactions recorded: the next default id
        self._cov: IntervalUnion | None = IntervalUnion()  # cache of coverage(); None: stale

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, sid: object) -> bool:
        return sid in self._ids

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._ids)

    @property
    def next_id(self) -> str:
        """The id the next compaction gets when it names none."""
        return str(self._count)

    def get(self, sid: str) -> Summary:
        return self._ids[sid]

    def created_at(self, sid: str) -> object:
        """The tag of the compaction that created ``sid`` (``KeyError`` if never created)."""
        return self._used[sid]

    def unknown(self, ids: Iterable[str] | None) -> tuple[int, str] | None:
        """The index and id of the first of ``ids`` that names no summary in the context."""
        if ids is None:
            return None
        for i, sid in enumerate(ids):
            if sid not in self._ids:
                return i, sid
        return None

    def new_id(self, sid: str | None) -> tuple[str, object | None]:
        """The id a compaction naming ``sid`` gets, and the tag that already used it (or None)."""
        chosen = self.next_id if sid is None else sid
        return chosen, self._used.get(chosen)

    def is_whole(self, saw: Sequence[str] | None, keeps: Sequence[str]) -> bool:
        """Whether ``saw ∪ keeps`` is the whole context (the prior coverage is ``coverage()``)."""
        if saw is None:
            return True
        wanted = set(saw)
        wanted.update(keeps)
        return len(wanted) >= len(self._ids) and all(s in wanted for s in self._ids)

    def coverage(self) -> IntervalUnion:
        """``⋃ E`` over every summary in the context (cached)."""
        if self._cov is None:
            if len(self._ids) == 1:
                self._cov = next(iter(self._ids.values())).coverage
            else:
                self._cov = union_of(s.coverage for s in self._ids.values())
        return self._cov

    def uncovered(self, lo: int, hi: int) -> list[Pair]:
        """``[lo, hi)`` minus the coverage of every summary in the context, as maximal ranges,
        without building their union: O(summaries in the context x (log k + output))."""
        if self._cov is not None or len(self._ids) <= 1:
            return self.coverage().gaps(lo, hi)
        rest = [(lo, hi)]
        for s in self._ids.values():
            rest = [g for r_lo, r_hi in rest for g in s.coverage.gaps(r_lo, r_hi)]
            if not rest:
                break
        return rest

    def coverage_of(self, saw: Sequence[str] | None, keeps: Sequence[str]) -> IntervalUnion:
        """The prior coverage of a compaction: ``⋃ E(S_j), j ∈ saw ∪ keeps`` (ids must be known)."""
        if self.is_whole(saw, keeps):
            return self.coverage()
        wanted = dict.fromkeys([*(saw or ()), *keeps])
        return union_of(self._ids[s].coverage for s in wanted)

    def commit(
        self, sid: str, tag: object, honest: Sequence[Pair], saw: Sequence[str] | None, keeps: Sequence[str]
    ) -> list[Summary]:
        """Record compaction ``sid`` (id already checked unique, ``saw``/``keeps`` known).

        Returns the summaries that left the context unseen: their coverage is gone.
        """
        self._count += 1
        self._used[sid] = tag
        seen = list(self._ids) if saw is None else list(dict.fromkeys(saw))
        kept = set(keeps)
        # the common path (every summary seen, none kept): grow the one union in place
        if not kept and len(seen) == len(self._ids) and len(self._ids) <= 1:
            cov = next(iter(self._ids.values())).coverage if self._ids else IntervalUnion()
            for lo, hi in honest:
                cov.add(lo, hi)
            self._ids = {sid: Summary(sid, tag, cov)}
            self._cov = cov
            return []
        # E(S_k): the largest coverage seen that leaves the context now (seen, not kept) is
        # taken over, not copied, so a chain of summaries each seeing the last copies nothing;
        # a summary seen and kept stays in the context with its own union, so it is copied
        movable = [s for s in seen if s not in kept]
        base = max(movable, key=lambda s: len(self._ids[s].coverage)) if movable else None
        cov = IntervalUnion() if base is None else self._ids[base].coverage
        for s in seen:
            if s != base:
                for lo, hi in self._ids[s].coverage:
                    cov.add(lo, hi)
        for lo, hi in honest:
            cov.add(lo, hi)
        seen_set = set(seen)
        lost = [s for k, s in self._ids.items() if k not in kept and k not in seen_set]
        self._ids = {k: s for k, s in self._ids.items() if k in kept}
        self._ids[sid] = Summary(sid, tag, cov)
        self._cov = None
        return lost

    def adopt(self, sid: str, tag: object, lo: int, hi: int) -> None:
        """Spec 1.2: a summary the guard did not make, covering ``[lo, hi)`` (unverified). It is
        not a compaction (the ordinal ids do not count it); it joins the context beside the rest."""
        self._used[sid] = tag
        cov = IntervalUnion()
        cov.add(lo, hi)
        self._ids[sid] = Summary(sid, tag, cov)
        self._cov = None

    def evict(self, sid: str) -> Summary:
        """A budget stage evicted ``sid`` from the context (it must be there)."""
        summary = self._ids.pop(sid)
        self._cov = None
        return summary


class LostCoverage:
    """Which offsets were covered by a summary that has left the context, and why (diagnostics).

    Disjoint ranges, sorted, each tagged with a sentence fragment naming the summary and how it
    was lost. A later loss of the same offsets overwrites the tag: the newest reason is the one
    that explains a hole now. Bounded by the number of distinct ranges recorded.
    """

    __slots__ = ("_his", "_los", "_tags")

    def __init__(self) -> None:
        self._los: list[int] = []
        self._his: list[int] = []
        self._tags: list[str] = []

    def __bool__(self) -> bool:
        return bool(self._los)

    def assign(self, lo: int, hi: int, tag: str) -> None:
        if lo >= hi:
            return
        los, his, tags = self._los, self._his, self._tags
        i = bisect_right(his, lo)
        j = i
        keep: list[tuple[int, int, str]] = []
        while j < len(los) and los[j] < hi:
            if los[j] < lo:
                keep.append((los[j], lo, tags[j]))
            if his[j] > hi:
                keep.append((hi, his[j], tags[j]))
            j += 1
        new = sorted([*keep, (lo, hi, tag)])
        los[i:j] = [r[0] for r in new]
        his[i:j] = [r[1] for r in new]
        tags[i:j] = [r[2] for r in new]

    def within(self, lo: int, hi: int) -> list[tuple[int, int, str]]:
        """The tagged pieces of ``[lo, hi)``, in order."""
        los, his = self._los, self._his
        i = bisect_right(his, lo)
        out: list[tuple[int, int, str]] = []
        while i < len(los) and los[i] < hi:
            out.append((max(lo, los[i]), min(hi, his[i]), self._tags[i]))
            i += 1
        return out
