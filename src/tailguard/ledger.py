"""The session ledger: the guard an orchestrator calls at runtime.

A :class:`Ledger` records, in absolute offsets of one unit, what happens to a session's
history (appends, budget truncations, compactions, spills) and decides every compaction
by the spec's clauses, exactly as the generated checker decides the *equivalent case*
(see :meth:`Ledger.equivalent_case`) but in O(log k) in the number of recorded intervals.
It can write everything it records as the normative JSONL event log
(:mod:`tailguard.eventlog`), which ``tailguard audit`` replays with the same core.

The equivalent case at a compaction event:

- ``history_end``: the sum of every earlier ``append`` count;
- ``tail_start``, ``summary_input``, ``summary_covers``: from the compaction;
- ``recovery_floor_span``, ``floor_unit``, ``truncator_unit``: from the session header;
- ``prior_truncations``: every earlier truncate range, as recorded;
- ``prior_coverage``: for every earlier compaction (every one recorded: a log records what
  happened, whether it was allowed, overridden or, in a foreign log, simply done), its
  honest part ``(summary_covers ∩ summary_input) \\ (union of the truncations recorded
  before it)``, as maximal ranges;
- ``spills``: every earlier spill range, as recorded.

How the state stays small: truncations are kept as a merged :class:`IntervalUnion`
(``TRU``) plus a :class:`Staircase` for the seed's raw ``truncation_clear`` test; prior
coverage and spills as one merged union ``R``; and ``lost = TRU \\ R`` incrementally.
Then the strict holes are ``lost | (([0, n) \\ R) \\ ((C & I) | [t, n)))``, and every
clause is a bisect or a comparison. ``well_formed`` needs only whether any recorded
range was reversed, the lowest start and the highest end (with the line that set them).

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TextIO

from tailguard._generated.checker import CLAUSES, UNITS, Decision
from tailguard.eventlog import Append, Compact, Event, EventWriter, Session, Spill, Truncate
from tailguard.interval_index import IntervalUnion, Staircase
from tailguard.intervals import fmt_set, normalize, union
from tailguard.seed_api import UnrecoverableCompactionError

__all__ = ["Ledger", "LedgerCore", "Verdict", "replay"]

Pair = tuple[int, int]
PROFILES = tuple(CLAUSES)

_ALLOW = Decision("allow", (), ())
_WELL_FORMED = Decision("refuse", ("well_formed",), ())


def _fmt(lo: int, hi: int) -> str:
    return f"[{lo}, {hi})"


def _at(tag: object) -> str:
    return f" (line {tag})" if tag is not None else ""


class _Origins:
    """Which lines truncated which offsets (for diagnostics only).

    Disjoint ranges, sorted; each tagged with the first and last line that truncated part
    of it. Adjacent ranges merge (widening the tag), so this stays as small as the merged
    truncation set: memory never grows with the number of events beyond it.
    """

    __slots__ = ("_his", "_los", "_tags")

    def __init__(self) -> None:
        self._los: list[int] = []
        self._his: list[int] = []
        self._tags: list[tuple[object, object]] = []

    def add_fresh(self, lo: int, hi: int, tag: object) -> None:
        """Add ``[lo, hi)``, disjoint from every range held (it was not truncated before)."""
        los, his, tags = self._los, self._his, self._tags
        i = bisect_right(los, lo)
        first, last = tag, tag
        j = i
        if i and his[i - 1] == lo:  # touches the left neighbour
            i -= 1
            lo, first = los[i], tags[i][0]
        if j < len(los) and los[j] == hi:  # touches the right neighbour
            hi, last = his[j], tags[j][1]
            j += 1
        los[i:j] = (lo,)
        his[i:j] = (hi,)
        tags[i:j] = ((first, last),)

    def within(self, lo: int, hi: int) -> list[tuple[object, object]]:
        los, his = self._los, self._his
        i = bisect_right(his, lo)
        out: list[tuple[object, object]] = []
        while i < len(los) and los[i] < hi:
            out.append(self._tags[i])
            i += 1
        return out


class LedgerCore:
    """Recorded state and the decision procedure, shared by :class:`Ledger` and the audit.

    Records accept any integers (inconsistent ones make strict refuse with
    ``well_formed``, as the checker does); callers check types. ``tag`` is whatever names
    the event in diagnostics (the audit and the ledger use the log line number).
    """

    __slots__ = (
        "F",
        "_hist_pc",
        "_hist_sp",
        "_hist_tr",
        "_max_hi",
        "_max_hi_tag",
        "_min_lo",
        "_min_lo_tag",
        "_origins",
        "_reversed_tag",
        "_stair",
        "_units_known",
        "floor_unit",
        "lost",
        "n",
        "recovered",
        "reversed",
        "truncated",
        "truncator_unit",
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
        # raw truncations reduced to the non-dominated pairs, for the seed's truncation_clear
        # (merging would change the seed's answer); not kept when only strict is asked for
        self._stair: Staircase | None = Staircase() if seed else None
        self.recovered = IntervalUnion()  # R = union(PC) | union(SP)
        self.lost = IntervalUnion()  # TRU \ R
        # well_formed of the recorded ranges: no reversed range, lowest lo, highest hi
        # (0 and 0 when nothing is recorded: harmless, since n >= 0 is checked too)
        self.reversed = False
        self._reversed_tag: object = None
        self._min_lo = 0
        self._min_lo_tag: object = None
        self._max_hi = 0
        self._max_hi_tag: object = None
        self._origins = _Origins() if track_origins else None
        self._hist_tr: list[Pair] | None = [] if keep_history else None
        self._hist_pc: list[Pair] | None = [] if keep_history else None
        self._hist_sp: list[Pair] | None = [] if keep_history else None

    # -- recording ---------------------------------------------------------------

    def _bounds(self, lo: int, hi: int, tag: object) -> None:
        if lo > hi and not self.reversed:
            self.reversed, self._reversed_tag = True, tag
        if lo < self._min_lo:
            self._min_lo, self._min_lo_tag = lo, tag
        if hi > self._max_hi:
            self._max_hi, self._max_hi_tag = hi, tag

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
            if self._origins is not None:
                for g_lo, g_hi in self.truncated.gaps(lo, hi):
                    self._origins.add_fresh(g_lo, g_hi, tag)
            if self.recovered:
                for g_lo, g_hi in self.recovered.gaps(lo, hi):
                    self.lost.add(g_lo, g_hi)
            else:
                self.lost.add(lo, hi)
            self.truncated.add(lo, hi)

    def spill(self, lo: int, hi: int, tag: object = None) -> None:
        """Record a lossless spill of ``[lo, hi)``."""
        if lo > hi or lo < self._min_lo or hi > self._max_hi:
            self._bounds(lo, hi, tag)
        if self._hist_sp is not None:
            self._hist_sp.append((lo, hi))
        if lo < hi:
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

    def compact(self, summary_input: Pair, summary_covers: Pair, tag: object = None) -> None:
        """Record a compaction: its honest part becomes prior coverage for later ones."""
        for lo, hi in self.honest_part(summary_input, summary_covers):
            if lo < self._min_lo or hi > self._max_hi:
                self._bounds(lo, hi, tag)
            if self._hist_pc is not None:
                self._hist_pc.append((lo, hi))
            self.recovered.add(lo, hi)
            # lost ⊆ TRU and the honest part avoids TRU: nothing to remove from lost

    # -- deciding ----------------------------------------------------------------

    def decide(
        self, profile: str, tail_start: int, summary_input: Pair, summary_covers: Pair
    ) -> Decision:
        """The checker's decision on the equivalent case, in O(log k) (+ O(holes))."""
        if profile == "strict":
            return self._strict(tail_start, summary_input, summary_covers)
        if profile == "seed":
            return self._seed(tail_start, summary_input[0])
        raise ValueError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")

    def decider(self, profile: str) -> Callable[[int, Pair, Pair], Decision]:
        """``decide`` with the profile bound (one dispatch less on the hot path)."""
        if profile == "strict":
            return self._strict
        if profile == "seed":
            return lambda t, i, c: self._seed(t, i[0])
        raise ValueError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")

    def _seed(self, t: int, a: int) -> Decision:
        if self.floor_unit != self.truncator_unit:
            return Decision("refuse", ("units_agree",), ())
        f = t - self.F
        if not a <= f:
            return Decision("refuse", ("floor_reach",), ())
        if self._stair is None:
            raise ValueError("this ledger core was built without the seed profile's state")
        if self._stair:
            w = self._stair.max_hi_below(t)
            if w is not None and w[1] > f:
                return Decision("refuse", ("truncation_clear",), ())
        return _ALLOW

    def well_formed(self, t: int, summary_input: Pair, summary_covers: Pair) -> bool:
        """The strict ``well_formed`` clause on the equivalent case."""
        n = self.n
        a, b = summary_input
        c, d = summary_covers
        return (
            n >= 0
            and self.F >= 0
            and 0 <= t <= n
            and 0 <= a <= b <= n
            and 0 <= c <= d <= n
            and not self.reversed
            and self._min_lo >= 0
            and self._max_hi <= n
            and self._units_known
        )

    def _uncovered_outside(self, t: int, x_lo: int, x_hi: int) -> list[Pair]:
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

    def _strict(self, t: int, summary_input: Pair, summary_covers: Pair) -> Decision:
        n = self.n
        a, b = summary_input
        c, d = summary_covers
        if not (
            0 <= t <= n
            and 0 <= a <= b <= n
            and 0 <= c <= d <= n
            and self._min_lo >= 0
            and self._max_hi <= n
            and self.F >= 0
            and self._units_known
            and not self.reversed
        ):  # n >= 0 follows from 0 <= t <= n
            return _WELL_FORMED
        failed: list[str] = []
        if self.floor_unit != self.truncator_unit:
            failed.append("units_agree")
        phi = n - self.F if n > self.F else 0  # Phi = [phi, n)
        if phi < n:
            if not (a <= phi and n <= b):
                failed.append("floor_in_input")
            if not t <= phi:
                failed.append("floor_in_tail")
        tru = self.truncated
        # every truncation lies in [0, n] here, so only the highest end can reach [t, n)
        if tru and t < n and tru.his[-1] > t:
            failed.append("tail_intact")
        if t != 0 and d < t:
            failed.append("seam_contiguous")
        if c < d and not (
            a <= c and d <= b and not (tru and tru.his[-1] > c and tru.intersects(c, d))
        ):
            failed.append("summary_honest")
        # no_hole: holes = lost | (([0, n) \ R) \ (X | T)) with X = C & I, T = [t, n)
        x_lo = a if a > c else c
        x_hi = b if b < d else d
        holes: tuple[Pair, ...] = ()
        lost = self.lost
        rec = self.recovered
        # R lies in [0, n] here, so R covers [0, x) iff its first range is [0, y) with y >= x
        if lost:
            hole = True
        elif x_lo >= x_hi:  # X empty: X | T = [t, n)
            hole = t > 0 and not (rec and rec.los[0] == 0 and rec.his[0] >= t)
        elif x_lo <= t <= x_hi:  # X | T = [x_lo, n)
            hole = x_lo > 0 and not (rec and rec.los[0] == 0 and rec.his[0] >= x_lo)
        else:
            hole = not all(rec.covers(lo, hi) for lo, hi in self._uncovered_outside(t, x_lo, x_hi))
        if hole:
            failed.append("no_hole")
            gaps = [g for lo, hi in self._uncovered_outside(t, x_lo, x_hi) for g in rec.gaps(lo, hi)]
            holes = tuple(union(list(lost), gaps))
        if not failed:
            return _ALLOW
        return Decision("refuse", tuple(failed), holes)

    # -- explaining --------------------------------------------------------------

    def explain(
        self,
        profile: str,
        decision: Decision,
        tail_start: int,
        summary_input: Pair,
        summary_covers: Pair,
    ) -> list[str]:
        """One sentence per failed clause, ``"<clause>: <what is wrong>"``, naming lines."""
        t, (a, b), (c, d) = tail_start, summary_input, summary_covers
        n, F = self.n, self.F
        return [
            f"{clause}: " + self._sentence(profile, clause, decision, t, a, b, c, d, n, F)
            for clause in decision.failed
        ]

    def _sentence(
        self,
        profile: str,
        clause: str,
        decision: Decision,
        t: int,
        a: int,
        b: int,
        c: int,
        d: int,
        n: int,
        F: int,
    ) -> str:
        if clause == "units_agree":
            return (
                f"recovery floor unit {self.floor_unit!r} cannot be honored by truncator unit "
                f"{self.truncator_unit!r}; the floor is unenforceable"
            )
        if clause == "floor_reach":
            return (
                f"summarizer input starts at {a}, but the recovery floor begins at {t - F}; "
                "floor is not a subset of input"
            )
        if clause == "truncation_clear":
            w = self._stair.max_hi_below(t) if self._stair is not None else None
            lo, hi, tag = w if w is not None else (0, 0, None)
            return (
                f"prior truncation {_fmt(lo, hi)}{_at(tag)} intersects recovery floor "
                f"{_fmt(t - F, t)}; evidence already evicted"
            )
        if clause == "well_formed":
            return f"the case is inconsistent ({'; '.join(self._why(t, a, b, c, d))}); " \
                "the guard fails closed"
        phi = (max(0, n - F), n)
        if clause == "floor_in_input":
            return f"recovery floor {_fmt(*phi)} is not inside summarizer input {_fmt(a, b)}"
        if clause == "floor_in_tail":
            return f"recovery floor {_fmt(*phi)} is not inside retained tail {_fmt(t, n)}"
        if clause == "tail_intact":
            hit = self.truncated.pieces(t, n)
            return (
                f"offsets {fmt_set(hit)} of the retained tail {_fmt(t, n)} were truncated"
                f"{self._lines(hit)}; the tail is not verbatim"
            )
        if clause == "seam_contiguous":
            return f"summary coverage ends at {d} but the tail starts at {t}; the seam has a gap"
        if clause == "summary_honest":
            x_lo, x_hi = max(a, c), min(b, d)
            unseen = [r for r in ((c, min(d, a)), (max(c, b), d)) if r[0] < r[1]]
            gone = self.truncated.pieces(x_lo, x_hi)
            what = fmt_set(normalize([*unseen, *gone]))
            why = f"; {fmt_set(gone)} were truncated{self._lines(gone)}" if gone else ""
            return f"summary coverage {_fmt(c, d)} claims offsets {what} it never saw{why}"
        if clause == "no_hole":
            return self._holes_sentence(decision.holes)
        return "failed"  # pragma: no cover - every clause id is handled above

    def _lines(self, ranges: list[Pair]) -> str:
        """`` at line 3`` / `` at lines 3, 7``: where ``ranges`` were truncated (text audit)."""
        if self._origins is None or not ranges:
            return ""
        tags: list[tuple[object, object]] = []
        for lo, hi in ranges:
            for tag in self._origins.within(lo, hi):
                if tag[0] is not None and tag not in tags:
                    tags.append(tag)
        if not tags:
            return ""
        text = ", ".join(str(a) if a == b else f"{a} to {b}" for a, b in tags)
        word = "line" if len(tags) == 1 and tags[0][0] == tags[0][1] else "lines"
        return f" at {word} {text}"

    def _holes_sentence(self, holes: tuple[Pair, ...]) -> str:
        truncated: list[Pair] = []
        dropped: list[Pair] = []
        for lo, hi in holes:
            truncated.extend(self.lost.pieces(lo, hi))
            dropped.extend(self.lost.gaps(lo, hi))
        parts = []
        if truncated:
            parts.append(
                f"offsets {fmt_set(truncated)} were truncated{self._lines(truncated)} "
                "and never summarized or spilled"
            )
        if dropped:
            parts.append(
                f"offsets {fmt_set(dropped)} are in no summary, spill or tail "
                "(the compaction evicts them unsummarized)"
            )
        return "; ".join(parts)

    def _why(self, t: int, a: int, b: int, c: int, d: int) -> list[str]:
        n = self.n
        why: list[str] = []
        if n < 0:
            why.append(f"history end {n} is negative")
        if self.F < 0:
            why.append(f"recovery floor span {self.F} is negative")
        if not 0 <= t <= n:
            why.append(f"tail start {t} is outside [0, {n}]")
        for name, lo, hi in (("summary input", a, b), ("summary coverage", c, d)):
            if not 0 <= lo <= hi <= n:
                why.append(f"{name} {_fmt(lo, hi)} is not an interval inside [0, {n}]")
        if self.reversed:
            why.append(f"a recorded range{_at(self._reversed_tag)} has lo > hi")
        if self._min_lo < 0:
            why.append(f"a recorded range{_at(self._min_lo_tag)} starts at {self._min_lo} < 0")
        if self._max_hi > n:
            why.append(
                f"a recorded range{_at(self._max_hi_tag)} ends at {self._max_hi}, past the "
                f"history end {n}"
            )
        units = (("floor_unit", self.floor_unit), ("truncator_unit", self.truncator_unit))
        for name, unit in units:
            if unit not in UNITS:
                why.append(f"{name} {unit!r} is not one of {', '.join(UNITS)}")
        return why

    # -- the equivalent case -----------------------------------------------------

    def equivalent_case(
        self, tail_start: int, summary_input: Pair, summary_covers: Pair
    ) -> dict[str, Any]:
        """The ``tailguard check`` case this state and compaction amount to (needs history)."""
        if self._hist_tr is None or self._hist_pc is None or self._hist_sp is None:
            raise RuntimeError("equivalent_case needs a ledger created with keep_history=True")
        return {
            "history_end": self.n,
            "tail_start": tail_start,
            "summary_input": [summary_input[0], summary_input[1]],
            "summary_covers": [summary_covers[0], summary_covers[1]],
            "recovery_floor_span": self.F,
            "floor_unit": self.floor_unit,
            "truncator_unit": self.truncator_unit,
            "prior_truncations": [list(p) for p in self._hist_tr],
            "prior_coverage": [list(p) for p in self._hist_pc],
            "spills": [list(p) for p in self._hist_sp],
        }


class Ledger:
    """A session's ledger: record what happens, decide compactions, leave an audit trail.

    >>> import io
    >>> log = io.StringIO()
    >>> led = Ledger(recovery_floor_span=12, unit="turns", log=log)
    >>> led.append(40); led.truncate(0, 8); led.append(8)
    >>> d = led.decide(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36)
    >>> d.decision, d.failed, d.holes
    ('refuse', ('no_hole',), ((0, 8),))
    >>> led.commit(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36)
    Traceback (most recent call last):
    ...
    tailguard.seed_api.UnrecoverableCompactionError: compaction refused (no_hole); evicted \
offsets [0, 8) are unrecoverable: no_hole: offsets [0, 8) were truncated at line 3 and never \
summarized or spilled
    >>> led.spill(0, 8, handle="sha256:...")
    >>> led.commit(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36).decision
    'allow'
    >>> print(log.getvalue().splitlines()[2])
    {"event": "truncate", "range": [0, 8]}
    """

    def __init__(
        self,
        recovery_floor_span: int,
        *,
        unit: str = "turns",
        floor_unit: str | None = None,
        truncator_unit: str | None = None,
        profile: str = "strict",
        log: TextIO | None = None,
        flush: bool = True,
        keep_history: bool = False,
    ) -> None:
        """Start a session. ``floor_unit``/``truncator_unit`` default to ``unit``.

        ``log``: a text stream that receives the JSONL event log (header first), flushed
        after every event unless ``flush=False``. ``keep_history`` keeps the raw ranges so
        that :meth:`equivalent_case` works (memory then grows with the events).
        """
        for name, value in (("recovery_floor_span", recovery_floor_span),):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name}: expected an integer, got {value!r}")
        fu = unit if floor_unit is None else floor_unit
        tu = unit if truncator_unit is None else truncator_unit
        for name, s in (("unit", unit), ("floor_unit", fu), ("truncator_unit", tu)):
            if not isinstance(s, str):
                raise TypeError(f"{name}: expected a unit name (string), got {s!r}")
        if profile not in PROFILES:
            raise ValueError(f"profile: unknown profile {profile!r}; known: {sorted(PROFILES)}")
        self.unit = unit
        self.profile = profile
        self._core = LedgerCore(
            recovery_floor_span, fu, tu, keep_history=keep_history, track_origins=True
        )
        self._decide = self._core.decider(profile)
        self._line = 1
        self._writer = EventWriter(log, flush=flush) if log is not None else None
        if self._writer is not None:
            self._writer.session(unit, recovery_floor_span, fu, tu)

    @property
    def history_end(self) -> int:
        """``n``: the offset the next appended unit gets."""
        return self._core.n

    @property
    def core(self) -> LedgerCore:
        return self._core

    def _next_line(self) -> int:
        self._line += 1
        return self._line

    def append(self, count: int = 1) -> None:
        """Record ``count`` appended units."""
        _int(count, "count")
        self._core.append(count)
        self._next_line()
        if self._writer is not None:
            self._writer.append(count)

    def truncate(self, lo: int, hi: int) -> None:
        """Record a budget truncation of ``[lo, hi)``.

        Inconsistent ranges (``lo > hi``, negative, past the history end) are recorded as
        they are, fail-closed: the strict profile refuses with ``well_formed``.
        """
        _int(lo, "range[0]")
        _int(hi, "range[1]")
        self._core.truncate(lo, hi, self._next_line())
        if self._writer is not None:
            self._writer.truncate(lo, hi)

    def spill(self, lo: int, hi: int, handle: str | None = None) -> None:
        """Record that ``[lo, hi)`` was written losslessly to durable storage."""
        _int(lo, "range[0]")
        _int(hi, "range[1]")
        if handle is not None and not isinstance(handle, str):
            raise TypeError(f"handle: expected a string, got {handle!r}")
        self._core.spill(lo, hi, self._next_line())
        if self._writer is not None:
            self._writer.spill(lo, hi, handle)

    def decide(
        self,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        profile: str | None = None,
    ) -> Decision:
        """Decide a compaction without recording it."""
        i, c = summary_input, summary_covers
        if not (  # the common shape, checked inline: this is the hot path
            type(tail_start) is int
            and type(i) is tuple and len(i) == 2 and type(i[0]) is int and type(i[1]) is int
            and type(c) is tuple and len(c) == 2 and type(c[0]) is int and type(c[1]) is int
        ):
            i, c = _pair(i, "summary_input"), _pair(c, "summary_covers")
            _int(tail_start, "tail_start")
        if profile is None:
            return self._decide(tail_start, i, c)
        return self._core.decide(profile, tail_start, i, c)

    def explain(
        self,
        decision: Decision,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        profile: str | None = None,
    ) -> list[str]:
        """One sentence per failed clause of ``decision`` (for a compaction not yet recorded)."""
        return self._core.explain(
            profile or self.profile, decision, tail_start, summary_input, summary_covers
        )

    def commit(
        self,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        override: str | None = None,
    ) -> Decision:
        """Decide and, if allowed, record the compaction (and log it).

        A refused compaction raises :class:`UnrecoverableCompactionError` (failed clauses
        and holes in the message and as attributes) and records nothing, unless
        ``override`` gives a non-empty reason: then it is recorded and logged with an
        ``"override"`` field, and ``tailguard audit`` still reports it as a violation.
        """
        if override is not None and (not isinstance(override, str) or not override.strip()):
            raise ValueError("override: give a non-empty reason to commit a refused compaction")
        i, c = _pair(summary_input, "summary_input"), _pair(summary_covers, "summary_covers")
        _int(tail_start, "tail_start")
        decision = self._core.decide(self.profile, tail_start, i, c)
        if not decision.allowed and override is None:
            sentences = self._core.explain(self.profile, decision, tail_start, i, c)
            raise UnrecoverableCompactionError.from_decision(decision, sentences)
        self._core.compact(i, c, self._next_line())
        if self._writer is not None:
            self._writer.compact(i, c, tail_start, None if decision.allowed else override)
        return decision

    def equivalent_case(
        self, *, summary_input: Pair, summary_covers: Pair, tail_start: int
    ) -> dict[str, Any]:
        """The ``tailguard check`` case for this compaction now (``keep_history=True``)."""
        return self._core.equivalent_case(tail_start, summary_input, summary_covers)


def _int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field}: expected an integer, got {type(value).__name__} {value!r}")
    return value


def _pair(value: object, field: str) -> Pair:
    if type(value) is tuple and len(value) == 2 and type(value[0]) is int \
            and type(value[1]) is int:
        return value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{field}: expected a pair (lo, hi), got {value!r}")
    return (_int(value[0], f"{field}[0]"), _int(value[1], f"{field}[1]"))


class Verdict(NamedTuple):
    """The judgement of one recorded compaction (``explanation`` only when asked for)."""

    line: int
    decision: Decision
    explanation: tuple[str, ...]
    override: str | None
    compaction: Compact
    history_end: int

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, **self.decision.to_json()}


def replay(
    events: Iterable[Event], *, profile: str = "strict", explain: bool = False
) -> Iterator[Session | Verdict]:
    """Replay events (from :func:`tailguard.eventlog.iter_events`) through a ledger core.

    Yields the :class:`~tailguard.eventlog.Session` header first, then one
    :class:`Verdict` per compaction, in log order, each judged against the state recorded
    before it; every compaction is then recorded (it happened). Streams: the state is the
    merged interval sets (plus, with ``explain``, which lines truncated each merged range;
    for the seed profile, the seed's raw truncations reduced to non-dominated pairs).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {sorted(PROFILES)}")
    it = iter(events)
    header = next(it)
    if not isinstance(header, Session):
        raise ValueError("the first event must be the session header")
    yield header
    core = LedgerCore(
        header.recovery_floor_span,
        header.floor_unit,
        header.truncator_unit,
        track_origins=explain,
        seed=profile == "seed",
    )
    decide = core.decide
    for ev in it:
        if type(ev) is Append:
            core.n += ev.amount
        elif type(ev) is Truncate:
            core.truncate(ev.lo, ev.hi, ev.line)
        elif type(ev) is Compact:
            decision = decide(profile, ev.tail_start, ev.summary_input, ev.summary_covers)
            sentences: tuple[str, ...] = ()
            if explain and not decision.allowed:
                sentences = tuple(core.explain(
                    profile, decision, ev.tail_start, ev.summary_input, ev.summary_covers
                ))
            yield Verdict(ev.line, decision, sentences, ev.override, ev, core.n)
            core.compact(ev.summary_input, ev.summary_covers, ev.line)
        elif type(ev) is Spill:
            core.spill(ev.lo, ev.hi, ev.line)
        else:
            raise ValueError(f"line {ev.line}: a second session header")
