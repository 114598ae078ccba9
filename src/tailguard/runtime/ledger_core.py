"""The ledger's recorded state and its decision procedure, shared by the Ledger and the audit.

State, all in absolute offsets of one unit: the history end ``n``; the truncations as one
merged union ``TRU`` (plus, for the seed profile, the raw pairs reduced to a
:class:`~tailguard.runtime.interval_index.Staircase`, since merging would change the seed's answer);
the spills as a merged union ``SP``; the summaries in the context with their effective coverage
(:class:`~tailguard.runtime.lineage.SummaryContext`); and, kept incrementally for the common case where
a compaction's prior coverage is the whole context's, ``R = coverage ∪ SP`` and
``lost = TRU \\ R``. Then the strict holes are ``lost | (([0, n) \\ R) \\ ((C & I) | [t, n)))``
and every clause is a bisect or a comparison.

The equivalent case of a compaction (SPEC.md sections 9.3 and 10): ``history_end`` the sum of
the appends, ``prior_truncations`` and ``spills`` every earlier range as recorded,
``prior_coverage`` ``⋃ E(S_j)`` over the summaries it saw or keeps (lineage), the rest from the
compaction and the header. The decisions equal the generated checker's on that case (tested
against it and against a naive per-offset oracle).

Records accept any integers (inconsistent ones make strict refuse with ``well_formed``, as the
checker does); :class:`tailguard.runtime.ledger.Ledger` rejects them at its call sites instead.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tailguard._generated.checker import UNITS, Decision
from tailguard.base.intervals import difference, union
from tailguard.base.vocab import (
    FLOOR_IN_INPUT,
    FLOOR_IN_TAIL,
    FLOOR_REACH,
    NO_HOLE,
    PROFILES,
    SEAM_CONTIGUOUS,
    SUMMARY_HONEST,
    TAIL_INTACT,
    TRUNCATION_CLEAR,
    UNITS_AGREE,
    WELL_FORMED,
    Pair,
)
from tailguard.runtime.interval_index import IntervalUnion, Runs, Staircase
from tailguard.runtime.lineage import LostCoverage, Summary, SummaryContext, union_of

__all__ = ["PROFILES", "LedgerCore"]

_ALLOW = Decision("allow", (), ())
_UNUSED = object()
_WELL_FORMED = Decision("refuse", (WELL_FORMED,), ())


def fmt(lo: int, hi: int) -> str:
    return f"[{lo}, {hi})"


class TruncationOrigins(Runs):
    """Which lines truncated which offsets (for diagnostics only).

    Disjoint ranges, sorted, in two sets. Offsets that were not recoverable when truncated
    (the ones a hole can name) keep the exact line of each truncation in ``_exact``, one row per
    truncated piece, never merged: a hole built from several truncations names each of their
    lines, not the span from the first to the last. Offsets already recovered (spilled or
    summarized) when truncated can only be named by ``tail_intact`` and ``summary_honest``:
    those ranges merge with adjacent ones (widening the tag to the first and last line), so a
    session that spills before it truncates keeps this as small as the merged truncation set.
    Blocked (:class:`~tailguard.runtime.interval_index.Runs`): O(log k) per range whatever the order.
    """

    __slots__ = ("_exact",)

    def __init__(self) -> None:
        super().__init__(tags=True)
        self._exact = Runs(tags=True)

    def add_fresh(self, lo: int, hi: int, tag: object, *, exact: bool = False) -> None:
        """Add ``[lo, hi)``, disjoint from every range held (it was not truncated before).

        ``exact``: keep it as its own row with its own line (offsets not recoverable now).
        """
        if exact:
            ex = self._exact
            ex._insert(ex._first_lo_gt(lo), lo, hi, tag)
            return
        first, last = tag, tag
        p = q = self._first_lo_gt(lo)
        before = self._prev(p)
        if before is not None and self._his[before[0]][before[1]] == lo:  # touches the left
            p = before
            lo, first = self._los[p[0]][p[1]], self._tags_at(p)[0]
        if not self._end(q) and self._los[q[0]][q[1]] == hi:  # touches the right neighbour
            hi, last = self._his[q[0]][q[1]], self._tags_at(q)[1]
            q = self._next(q)
        if p == q:  # touches neither neighbour
            self._insert(p, lo, hi, (first, last))
        else:
            self._splice(p, q, [lo], [hi], [(first, last)])

    def _tags_at(self, p: tuple[int, int]) -> tuple[object, object]:
        tag = self._tag(*p)
        assert isinstance(tag, tuple)
        return (tag[0], tag[1])

    def exact_lines_within(self, lo: int, hi: int) -> list[object]:
        """The lines of the truncations that evicted offsets of ``[lo, hi)`` while they were not
        recoverable (the exact rows: what a hole's loss is owed to)."""
        ex = self._exact
        out: list[object] = []
        if ex:
            for r_lo, _, b, o in ex._rows(ex._first_hi_gt(lo)):
                if r_lo >= hi:
                    break
                out.append(ex._tag(b, o))
        return out

    def within(self, lo: int, hi: int) -> list[tuple[object, object]]:
        """``(first, last)`` lines of the truncations meeting ``[lo, hi)`` (exact rows: first == last)."""
        out: list[tuple[object, object]] = []
        if self:
            for r_lo, _, b, o in self._rows(self._first_hi_gt(lo)):
                if r_lo >= hi:
                    break
                out.append(self._tags_at((b, o)))
        ex = self._exact
        if ex:
            for r_lo, _, b, o in ex._rows(ex._first_hi_gt(lo)):
                if r_lo >= hi:
                    break
                line = ex._tag(b, o)
                out.append((line, line))
        return out


class LedgerCore:
    """Recorded state and the decision procedure (see the module docstring).

    ``tag`` is whatever names an event in diagnostics (the audit and the ledger use the log
    line number). Summary ids passed to ``decide``/``compact``/``evict`` must already be
    checked (:meth:`lineage_problem`); the core does not re-check them.
    """

    __slots__ = (
        "F",
        "_hist_sp",
        "_hist_tr",
        "_max_hi",
        "_max_hi_tag",
        "_min_lo",
        "_min_lo_tag",
        "_reversed_tag",
        "_stair",
        "_units_known",
        "floor_unit",
        "lost",
        "lost_coverage",
        "n",
        "origins",
        "recovered",
        "reversed",
        "spilled",
        "summaries",
        "truncated",
        "truncator_unit",
        "unverified",
    )

    def __init__(
        self,
        recovery_floor_span: int,
        floor_unit: str,
        truncator_unit: str,
        *,
        keep_history: bool = False,
        track_origins: bool = False,
        seed: bool = True,
    ) -> None:
        self.F = recovery_floor_span
        self.floor_unit = floor_unit
        self.truncator_unit = truncator_unit
        self._units_known = floor_unit in UNITS and truncator_unit in UNITS
        self.n = 0
        self.truncated = IntervalUnion()  # TRU
        self._stair: Staircase | None = Staircase() if seed else None
        self.spilled = IntervalUnion()  # union(SP)
        self.summaries = SummaryContext()
        self.recovered = IntervalUnion()  # R = coverage of the whole context | union(SP)
        self.lost = IntervalUnion()  # TRU \ R
        self.unverified = IntervalUnion()  # spec 1.2: offsets that predate the guard (adopted)
        # well_formed of the recorded truncations and spills: no reversed range, lowest lo,
        # highest hi (0 and 0 when nothing is recorded: harmless, since n >= 0 is checked too)
        self.reversed = False
        self._reversed_tag: object = None
        self._min_lo = 0
        self._min_lo_tag: object = None
        self._max_hi = 0
        self._max_hi_tag: object = None
        self.origins = TruncationOrigins() if track_origins else None
        self.lost_coverage = LostCoverage() if track_origins else None
        self._hist_tr: list[Pair] | None = [] if keep_history else None
        self._hist_sp: list[Pair] | None = [] if keep_history else None

    # -- recording ---------------------------------------------------------------

    def _bounds(self, lo: int, hi: int, tag: object) -> None:
        if lo > hi and not self.reversed:
            self.reversed, self._reversed_tag = True, tag
        if lo < self._min_lo:
            self._min_lo, self._min_lo_tag = lo, tag
        if hi > self._max_hi:
            self._max_hi, self._max_hi_tag = hi, tag

    def bounds_problems(self) -> list[tuple[str, object]]:
        """Why the recorded truncations and spills are not all inside ``[0, n]``, and where."""
        out: list[tuple[str, object]] = []
        if self.reversed:
            out.append(("has lo > hi", self._reversed_tag))
        if self._min_lo < 0:
            out.append((f"starts at {self._min_lo} < 0", self._min_lo_tag))
        if self._max_hi > self.n:
            out.append((f"ends at {self._max_hi}, past the history end {self.n}", self._max_hi_tag))
        return out

    def append(self, count: int = 1) -> None:
        self.n += count

    def truncate(self, lo: int, hi: int, tag: object = None) -> None:
        """Record a budget truncation ``[lo, hi)``."""
        if self._stair is not None:
            self._stair.add(lo, hi, tag)
        if lo > hi or lo < self._min_lo or hi > self._max_hi:
            self._bounds(lo, hi, tag)
        if self._hist_tr is not None:
            self._hist_tr.append((lo, hi))
        if lo < hi:
            if self.origins is not None:
                for g_lo, g_hi in self.truncated.add_gaps(lo, hi):  # what was not truncated before
                    if not self.recovered:
                        self.origins.add_fresh(g_lo, g_hi, tag, exact=True)
                        continue
                    for p_lo, p_hi in self.recovered.pieces(g_lo, g_hi):
                        self.origins.add_fresh(p_lo, p_hi, tag)
                    for p_lo, p_hi in self.recovered.gaps(g_lo, g_hi):
                        self.origins.add_fresh(p_lo, p_hi, tag, exact=True)
            else:
                self.truncated.add(lo, hi)
            if self.recovered:
                for g_lo, g_hi in self.recovered.gaps(lo, hi):
                    self.lost.add(g_lo, g_hi)
            else:
                self.lost.add(lo, hi)

    def spill(self, lo: int, hi: int, tag: object = None) -> None:
        """Record a lossless spill of ``[lo, hi)``."""
        if lo > hi or lo < self._min_lo or hi > self._max_hi:
            self._bounds(lo, hi, tag)
        if self._hist_sp is not None:
            self._hist_sp.append((lo, hi))
        if lo < hi:
            self.spilled.add(lo, hi)
            self.recovered.add(lo, hi)
            if self.lost:
                self.lost.remove(lo, hi)

    def honest_part(self, summary_input: Pair, summary_covers: Pair) -> list[Pair]:
        """``(C ∩ I) \\ TRU`` as maximal ranges, against the truncations recorded so far."""
        lo = max(summary_input[0], summary_covers[0])
        hi = min(summary_input[1], summary_covers[1])
        if lo >= hi:
            return []
        if not self.truncated:
            return [(lo, hi)]
        return self.truncated.gaps(lo, hi)

    def lineage_problem(
        self, summary: str | None, saw: Sequence[str] | None, keeps: Sequence[str], *, new: bool
    ) -> tuple[str, str] | None:
        """``(field, reason)`` when an id is unusable here: unknown in ``saw``/``keeps``, or
        (``new``) the new summary's id already used in this session."""
        for name, ids in (("saw", saw), ("keeps", keeps)):
            bad = self.summaries.unknown(ids)
            if bad is not None:
                i, sid = bad
                return f"{name}[{i}]", f"no summary {sid!r} is in the context here{self._gone(sid)}"
        if new:
            sid, used = self.summaries.new_id(summary)
            if used is not None or sid in self.summaries:
                how = "" if summary is not None else " (the compaction's ordinal, its default id)"
                at = f" at line {used}" if used is not None else ""
                return "summary", f"summary id {sid!r}{how} was already used{at}; ids are unique in a session"
        return None

    def evict_problem(self, summary: str) -> tuple[str, str] | None:
        if summary not in self.summaries:
            return "summary", f"no summary {summary!r} is in the context here{self._gone(summary)}"
        return None

    def _gone(self, sid: str) -> str:
        try:
            at = self.summaries.created_at(sid)
        except KeyError:
            return ""
        return f" (it was created at line {at} and has left the context)" if at is not None else \
            " (it has left the context)"

    def compact(
        self,
        summary_input: Pair,
        summary_covers: Pair,
        tag: object = None,
        *,
        summary: str | None = None,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
    ) -> str:
        """Record a compaction; returns its summary's id. Its effective coverage is the honest
        part plus what it saw; summaries neither seen nor kept leave the context."""
        honest = self.honest_part(summary_input, summary_covers)
        sid, _ = self.summaries.new_id(summary)
        departed = self.summaries.commit(sid, tag, honest, saw, keeps)
        for lo, hi in honest:  # the new summary holds its honest part: R grows by it
            self.recovered.add(lo, hi)  # lost ⊆ TRU and honest avoids TRU: lost unchanged
        for s in departed:  # every other summary is kept or inside the new one, or gone
            self._depart(s, f"which left the context unseen by the summarizer at line {tag}")
        return sid

    def adopt_problem(self, hi: int, summary: str) -> tuple[str, str] | None:
        """Why an ``adopt`` of ``[0, hi)`` as ``summary`` cannot be recorded now, or None."""
        if self.n or len(self.summaries) or self.truncated or self.spilled:
            return ("event", "adopt must come before every other event (it names what predates the guard)")
        if hi < 0:
            return ("range", f"expected [0, a] with a >= 0, got [0, {hi}]")
        at = self.summaries._used.get(summary, _UNUSED)
        if at is not _UNUSED:
            return ("summary", f"summary id {summary!r} is already used")
        return None

    def adopt(self, hi: int, summary: str, tag: object = None) -> None:
        """Spec 1.2: offsets ``[0, hi)`` predate the guard; ``summary`` (in the context) covers
        them, unverified. The history grows to ``hi``; the summary follows lineage like any."""
        self.n += hi
        self.unverified.add(0, hi)
        self.summaries.adopt(summary, tag, 0, hi)
        self._rebuild()

    def evict(self, summary: str, tag: object = None) -> None:
        """A budget stage evicted ``summary`` from the context: its coverage leaves with it."""
        s = self.summaries.evict(summary)
        self._depart(s, f"which was evicted from the context at line {tag}")

    def _depart(self, s: Summary, how: str) -> None:
        """``s`` has left the context: the offsets of its coverage that no summary still in the
        context covers (what ``lost_coverage`` names, ``how`` says why) and no spill holds leave
        ``R``, and the truncated ones among them join ``lost``. O(log k) per range of ``E(s)``
        and per range that changes, never a pass over the whole state (each summary leaves once)."""
        why = f"summary {s.id!r} (line {s.tag}), {how}"
        lost_coverage, spilled, truncated = self.lost_coverage, self.spilled, self.truncated
        for lo, hi in s.coverage:
            for g_lo, g_hi in self.summaries.uncovered(lo, hi):
                if lost_coverage is not None:
                    lost_coverage.assign(g_lo, g_hi, why)
                for p_lo, p_hi in spilled.gaps(g_lo, g_hi):
                    self.recovered.remove(p_lo, p_hi)
                    for t_lo, t_hi in truncated.pieces(p_lo, p_hi):
                        self.lost.add(t_lo, t_hi)

    def _rebuild(self) -> None:
        """Recompute ``R`` and ``lost`` from the context's coverage, the spills and the
        truncations, O(size): for a state set whole (an adoption, a restored snapshot), never
        per event."""
        self.recovered = union_of((self.summaries.coverage(), self.spilled))
        self.lost = _difference(self.truncated, self.recovered)

    # -- deciding ----------------------------------------------------------------

    def decide(
        self,
        profile: str,
        tail_start: int,
        summary_input: Pair,
        summary_covers: Pair,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
    ) -> Decision:
        """The checker's decision on the equivalent case, in O(log k) (+ O(holes)) when the
        prior coverage is the whole context's, else O(k)."""
        if profile == "strict":
            return self._contract(tail_start, summary_input, summary_covers, saw, keeps, True)
        if profile == "partitioned":
            return self._contract(tail_start, summary_input, summary_covers, saw, keeps, False)
        if profile == "seed":
            return self._seed(tail_start, summary_input[0])
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")

    def prior(self, saw: Sequence[str] | None, keeps: Sequence[str]) -> tuple[IntervalUnion, IntervalUnion,
                                                                                 IntervalUnion]:
        """``(PC, R, lost)`` for a compaction that saw ``saw`` and keeps ``keeps``."""
        if self.summaries.is_whole(saw, keeps):
            return self.summaries.coverage(), self.recovered, self.lost
        pc = self.summaries.coverage_of(saw, keeps)
        rec = union_of((pc, self.spilled))
        return pc, rec, _difference(self.truncated, rec)

    def _seed(self, t: int, a: int) -> Decision:
        if self.floor_unit != self.truncator_unit:
            return Decision("refuse", (UNITS_AGREE,), ())
        f = t - self.F
        if not a <= f:
            return Decision("refuse", (FLOOR_REACH,), ())
        if self._stair is None:
            raise ValueError("this ledger core was built without the seed profile's state")
        if self._stair:
            w = self._stair.max_hi_below(t)
            if w is not None and w[1] > f:
                return Decision("refuse", (TRUNCATION_CLEAR,), ())
        return _ALLOW

    def seed_witness(self, t: int) -> tuple[int, int, object] | None:
        """The raw truncation the seed's ``truncation_clear`` reports (diagnostics)."""
        return self._stair.max_hi_below(t) if self._stair is not None else None

    def uncovered_outside(self, t: int, x_lo: int, x_hi: int) -> list[Pair]:
        """``[0, n)`` minus ``X = [x_lo, x_hi)`` minus ``T = [t, n)``: at most 3 ranges."""
        n = self.n
        keep = sorted(r for r in ((x_lo, x_hi), (t, n)) if r[0] < r[1])
        out: list[Pair] = []
        cur = 0
        for lo, hi in keep:
            if lo > cur:
                out.append((cur, lo))
            cur = max(cur, hi)
        if cur < n:
            out.append((cur, n))
        return out

    def _contract(
        self,
        t: int,
        summary_input: Pair,
        summary_covers: Pair,
        saw: Sequence[str] | None,
        keeps: Sequence[str],
        floor_in_input: bool,
    ) -> Decision:
        """Profiles ``strict`` (``floor_in_input``) and ``partitioned`` (strict without it)."""
        if saw is None and not keeps:  # the common call: the whole context's prior coverage
            ctx = self.summaries
            pc = ctx.coverage() if ctx._cov is None else ctx._cov
            rec, lost = self.recovered, self.lost
        else:
            pc, rec, lost = self.prior(saw, keeps)
        n = self.n
        a, b = summary_input
        c, d = summary_covers
        if not (
            0 <= t <= n  # and so n >= 0
            and 0 <= a <= b <= n
            and 0 <= c <= d <= n
            and self._min_lo >= 0
            and self._max_hi <= n
            and self.F >= 0
            and self._units_known
            and not self.reversed
            and (not pc or (pc.min_lo >= 0 and pc.max_hi <= n))
        ):  # the strict well_formed clause on the equivalent case with prior coverage pc
            return _WELL_FORMED
        failed: list[str] = []
        if self.floor_unit != self.truncator_unit:
            failed.append(UNITS_AGREE)
        phi = n - self.F if n > self.F else 0  # Phi = [phi, n)
        if phi < n:
            if floor_in_input and not (a <= phi and n <= b):
                failed.append(FLOOR_IN_INPUT)
            if not t <= phi:
                failed.append(FLOOR_IN_TAIL)
        tru = self.truncated
        # every truncation lies in [0, n] here, so only the highest end can reach [t, n)
        if tru and t < n and tru.max_hi > t:
            failed.append(TAIL_INTACT)
        if t != 0 and d < t:
            failed.append(SEAM_CONTIGUOUS)
        if c < d and not (
            a <= c and d <= b and not (tru and tru.max_hi > c and tru.intersects(c, d))
        ):
            failed.append(SUMMARY_HONEST)
        # no_hole: holes = lost | (([0, n) \ R) \ (X | T)) with X = C & I, T = [t, n)
        x_lo = a if a > c else c
        x_hi = b if b < d else d
        holes: tuple[Pair, ...] = ()
        # R lies in [0, n] here, so R covers [0, x) iff its first range is [0, y) with y >= x
        if lost:
            hole = True
        elif x_lo >= x_hi:  # X empty: X | T = [t, n)
            hole = t > 0 and not (rec and rec.min_lo == 0 and rec.first_hi >= t)
        elif x_lo <= t <= x_hi:  # X | T = [x_lo, n)
            hole = x_lo > 0 and not (rec and rec.min_lo == 0 and rec.first_hi >= x_lo)
        else:
            hole = not all(rec.covers(lo, hi) for lo, hi in self.uncovered_outside(t, x_lo, x_hi))
        if hole:
            failed.append(NO_HOLE)
            gaps = [g for lo, hi in self.uncovered_outside(t, x_lo, x_hi) for g in rec.gaps(lo, hi)]
            holes = tuple(union(list(lost), gaps))
        if not failed:
            return _ALLOW
        return Decision("refuse", tuple(failed), holes)

    # -- the equivalent case -----------------------------------------------------

    def equivalent_case(
        self,
        tail_start: int,
        summary_input: Pair,
        summary_covers: Pair,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The ``tailguard check`` case this state and compaction amount to (needs history)."""
        if self._hist_tr is None or self._hist_sp is None:
            raise RuntimeError("equivalent_case needs a ledger created with keep_history=True")
        pc, _, _ = self.prior(saw, keeps)
        return {
            "history_end": self.n,
            "tail_start": tail_start,
            "summary_input": [summary_input[0], summary_input[1]],
            "summary_covers": [summary_covers[0], summary_covers[1]],
            "recovery_floor_span": self.F,
            "floor_unit": self.floor_unit,
            "truncator_unit": self.truncator_unit,
            "prior_truncations": [list(p) for p in self._hist_tr],
            "prior_coverage": [list(p) for p in pc],
            "spills": [list(p) for p in self._hist_sp],
        }


def _difference(a: IntervalUnion, b: IntervalUnion) -> IntervalUnion:
    """``a \\ b`` as a new union: :func:`~tailguard.base.intervals.difference` of their ranges.

    Only after a shrink of the context's coverage (:meth:`LedgerCore._rebuild`, whose union of
    the coverage already costs O(size)) or for a compaction that sees part of the context.
    """
    out = IntervalUnion()
    for lo, hi in difference(list(a), list(b)):
        out.add(lo, hi)
    return out
