"""The text report of ``tailguard audit``: a post-mortem that stays readable on long logs.

A hole (a maximal unrecoverable offset range) is explained once, at the first refused
compaction that finds it: what evicted it, with the exact log lines. A later compaction that
still finds it says ``still open since line L`` instead of repeating the explanation, so the
report grows with the number of distinct holes, not with holes times compactions. The JSON
report is not affected: it keeps every compaction's full hole list.

What counts as already reported is exact, per offset: the pieces of a hole that an earlier
refused compaction reported (and that stayed holes at every refused compaction since) are
"still open"; the rest (a hole that grew, or reopened after a compaction that found it closed)
is explained again. Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from typing import Protocol

from tailguard._generated.checker import Decision
from tailguard.audit.replay import Verdict
from tailguard.base.vocab import NO_HOLE, WELL_FORMED, Pair

__all__ = ["TextReport"]

# still-open groups shown in full per compaction, and ranges shown per group
_GROUPS_SHOWN = 3
_RANGES_SHOWN = 4


class Out(Protocol):
    def write(self, text: str, /) -> object: ...


class _Reported:
    """Disjoint sorted ranges, each tagged with the line of the compaction that first reported it."""

    __slots__ = ("_annotated", "_last", "his", "lines", "los")

    def __init__(self) -> None:
        self.los: list[int] = []
        self.his: list[int] = []
        self.lines: list[int] = []
        # the holes of the last call and their annotated pieces: a long run of refused
        # compactions usually finds exactly the same holes, answered without a walk
        self._last: tuple[Pair, ...] = ()
        self._annotated: list[tuple[int, int, int]] = []

    def split(self, holes: tuple[Pair, ...], line: int) -> tuple[list[tuple[int, int, int]], list[Pair]]:
        """``(still_open, new)`` for ``holes`` (sorted, disjoint), then remember exactly ``holes``.

        ``still_open`` are ``(lo, hi, since_line)`` pieces reported before; ``new`` the rest,
        now tagged ``line``. Offsets reported before that are not in ``holes`` are forgotten:
        they were found closed, so if they open again they are explained again.
        """
        if holes == self._last:
            return self._annotated, []
        los, his, lines = self.los, self.his, self.lines
        old: list[tuple[int, int, int]] = []
        new: list[Pair] = []
        n_los: list[int] = []
        n_his: list[int] = []
        n_lines: list[int] = []
        i = bisect_right(his, holes[0][0]) if holes and his else 0
        for lo, hi in holes:
            cur = lo
            while i < len(los) and his[i] <= cur:
                i += 1
            j = i
            while j < len(los) and los[j] < hi:
                p_lo, p_hi = max(los[j], cur), min(his[j], hi)
                if cur < p_lo:
                    new.append((cur, p_lo))
                    n_los.append(cur)
                    n_his.append(p_lo)
                    n_lines.append(line)
                if p_lo < p_hi:
                    old.append((p_lo, p_hi, lines[j]))
                    n_los.append(p_lo)
                    n_his.append(p_hi)
                    n_lines.append(lines[j])
                    cur = p_hi
                if his[j] > hi:
                    break
                j += 1
            i = j
            if cur < hi:
                new.append((cur, hi))
                n_los.append(cur)
                n_his.append(hi)
                n_lines.append(line)
        self.los, self.his, self.lines = n_los, n_his, n_lines
        self._last, self._annotated = holes, list(zip(n_los, n_his, n_lines, strict=True))
        return old, new

    def clear(self) -> None:
        self.los, self.his, self.lines = [], [], []
        self._last, self._annotated = (), []


def _ranges(pieces: list[Pair]) -> str:
    shown = ", ".join(f"[{lo}, {hi})" for lo, hi in pieces[:_RANGES_SHOWN])
    more = len(pieces) - _RANGES_SHOWN
    return shown + (f" and {more:,} more" if more > 0 else "")


def still_open_sentence(pieces: list[tuple[int, int, int]]) -> str:
    """``offsets [0, 8) still open since line 5; ...``: bounded whatever the number of pieces."""
    groups: dict[int, list[Pair]] = {}
    for lo, hi, since in pieces:
        groups.setdefault(since, []).append((lo, hi))
    order = sorted(groups)
    parts = [f"offsets {_ranges(groups[s])} still open since line {s}" for s in order[:_GROUPS_SHOWN]]
    rest = order[_GROUPS_SHOWN:]
    if rest:
        count = sum(len(groups[s]) for s in rest)
        where = f"line {rest[0]}" if len(rest) == 1 else f"lines {rest[0]} to {rest[-1]}"
        noun = "compaction" if len(rest) == 1 else "compactions"
        parts.append(f"{count:,} more still open since {len(rest):,} later {noun} ({where})")
    return "; ".join(parts) + " (explained where first reported)"


class TextReport:
    """Feed it every verdict of :func:`tailguard.audit.replay.replay` (with ``narrow=report.narrow``)."""

    def __init__(self, where: str, out: Out, unit: str = "") -> None:
        self.where = where
        self.unit = unit  # the session header's unit, named in every refusal line
        self.out = out
        self._reported = _Reported()
        self._still_open: dict[int, list[tuple[int, int, int]]] = {}
        self._sentence: tuple[list[tuple[int, int, int]] | None, str] = (None, "")  # last list, its sentence

    def narrow(self, line: int, decision: Decision) -> Decision:
        """What to explain of a refused compaction: only the holes not reported yet."""
        if decision.failed == (WELL_FORMED,):
            return decision  # no holes are computed; what was reported stays reported
        old, new = self._reported.split(decision.holes, line)
        if not old:
            return decision
        self._still_open[line] = old
        failed = decision.failed if new else tuple(c for c in decision.failed if c != NO_HOLE)
        return Decision(decision.decision, failed, tuple(new))

    def verdict(self, v: Verdict) -> None:
        if v.decision.allowed:
            self._reported.clear()  # every offset is recoverable here: nothing is still open
            return
        where, line = self.where, v.line
        c = v.compaction
        (a, b), (cc, d), t = c.summary_input, c.summary_covers, c.tail_start
        out = [
            f"{where}:{line}: compaction refused ({', '.join(v.decision.failed)}): summary "
            f"covers [{cc}, {d}) of input [{a}, {b}), tail starts at {t}, history end "
            f"{v.history_end} {self.unit}"
        ]
        sentences = list(v.explanation)
        old = self._still_open.pop(line, None)
        if old:
            if self._sentence[0] is not old:
                self._sentence = (old, still_open_sentence(old))
            still = self._sentence[1]
            at = next((i for i, x in enumerate(sentences) if x.startswith("no_hole: ")), None)
            if at is None:
                sentences.append(f"no_hole: {still}")
            else:
                sentences[at] += f"; {still}"
        out.extend(f"{where}:{line}: refuse {sentence}" for sentence in sentences)
        if v.override is not None:
            out.append(f"{where}:{line}: committed anyway, override: {json.dumps(v.override)}")
        self.out.write("\n".join(out) + "\n")
