"""Sentences for a refused compaction, naming offsets, log lines and lost summaries.

``explain(core, ...)`` gives one sentence per failed clause, ``"<clause>: <what is wrong>"``.
For ``no_hole`` each hole is split by cause: coverage of a summary this compaction neither saw
nor keeps, coverage of a summary that already left the context (not seen by a later
summarizer, or evicted: named with its lines), offsets truncated and never summarized or
spilled, and offsets this compaction evicts unsummarized.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from collections.abc import Sequence

from tailguard._generated.checker import UNITS, Decision
from tailguard.base.intervals import difference, fmt_set, normalize
from tailguard.base.vocab import (
    FLOOR_IN_INPUT,
    FLOOR_IN_TAIL,
    FLOOR_REACH,
    NO_HOLE,
    SEAM_CONTIGUOUS,
    SUMMARY_HONEST,
    TAIL_INTACT,
    TRUNCATION_CLEAR,
    UNITS_AGREE,
    WELL_FORMED,
    Pair,
)
from tailguard.runtime.ledger_core import LedgerCore, fmt

__all__ = ["explain"]


def _at(tag: object) -> str:
    return f" (line {tag})" if tag is not None else ""


def explain(
    core: LedgerCore,
    profile: str,
    decision: Decision,
    tail_start: int,
    summary_input: Pair,
    summary_covers: Pair,
    saw: Sequence[str] | None = None,
    keeps: Sequence[str] = (),
) -> list[str]:
    """One sentence per failed clause of ``decision``, in its order."""
    return [
        f"{clause}: " + _sentence(core, clause, decision, tail_start, summary_input, summary_covers, saw, keeps)
        for clause in decision.failed
    ]


def _sentence(
    core: LedgerCore,
    clause: str,
    decision: Decision,
    t: int,
    summary_input: Pair,
    summary_covers: Pair,
    saw: Sequence[str] | None,
    keeps: Sequence[str],
) -> str:
    (a, b), (c, d) = summary_input, summary_covers
    n, F = core.n, core.F
    if clause == UNITS_AGREE:
        return (
            f"recovery floor unit {core.floor_unit!r} cannot be honored by truncator unit "
            f"{core.truncator_unit!r}; the floor is unenforceable"
        )
    if clause == FLOOR_REACH:
        return (
            f"summarizer input starts at {a}, but the recovery floor begins at {t - F}; "
            "floor is not a subset of input"
        )
    if clause == TRUNCATION_CLEAR:
        w = core.seed_witness(t)
        lo, hi, tag = w if w is not None else (0, 0, None)
        return (
            f"prior truncation {fmt(lo, hi)}{_at(tag)} intersects recovery floor "
            f"{fmt(t - F, t)}; evidence already evicted"
        )
    if clause == WELL_FORMED:
        why = "; ".join(_why(core, t, a, b, c, d, saw, keeps))
        return f"the case is inconsistent ({why}); the guard fails closed"
    phi = (max(0, n - F), n)
    if clause == FLOOR_IN_INPUT:
        return f"recovery floor {fmt(*phi)} is not inside summarizer input {fmt(a, b)}"
    if clause == FLOOR_IN_TAIL:
        return f"recovery floor {fmt(*phi)} is not inside retained tail {fmt(t, n)}"
    if clause == TAIL_INTACT:
        hit = core.truncated.pieces(t, n)
        return (
            f"offsets {fmt_set(hit)} of the retained tail {fmt(t, n)} were truncated"
            f"{_lines(core, hit)}; the tail is not verbatim"
        )
    if clause == SEAM_CONTIGUOUS:
        return f"summary coverage ends at {d} but the tail starts at {t}; the seam has a gap"
    if clause == SUMMARY_HONEST:
        x_lo, x_hi = max(a, c), min(b, d)
        unseen = [r for r in ((c, min(d, a)), (max(c, b), d)) if r[0] < r[1]]
        gone = core.truncated.pieces(x_lo, x_hi)
        what = fmt_set(normalize([*unseen, *gone]))
        why = f"; {fmt_set(gone)} were truncated{_lines(core, gone)}" if gone else ""
        return f"summary coverage {fmt(c, d)} claims offsets {what} it never saw{why}"
    if clause == NO_HOLE:
        return _holes_sentence(core, decision.holes, saw, keeps)
    return "failed"  # pragma: no cover - every clause id is handled above


def _lines(core: LedgerCore, ranges: list[Pair]) -> str:
    """`` at line 3`` / `` at lines 3, 7``: where ``ranges`` were truncated (text audit)."""
    if core.origins is None or not ranges:
        return ""
    # deduplicated in O(1) per tag (a list's `in` made 200k scattered truncation lines quadratic)
    seen: dict[tuple[object, object], None] = {}
    for lo, hi in ranges:
        for tag in core.origins.within(lo, hi):
            if tag[0] is not None:
                seen[tag] = None
    if not seen:
        return ""
    tags = list(seen)
    if all(isinstance(x, int) and isinstance(y, int) for x, y in tags):
        tags.sort(key=lambda xy: (xy[0], xy[1]))
    text = ", ".join(str(x) if x == y else f"{x} to {y}" for x, y in tags)
    word = "line" if len(tags) == 1 and tags[0][0] == tags[0][1] else "lines"
    return f" at {word} {text}"


def _holes_sentence(core: LedgerCore, holes: tuple[Pair, ...], saw: Sequence[str] | None,
                    keeps: Sequence[str]) -> str:
    parts: list[str] = []
    rest = list(holes)
    # 1. coverage of summaries in the context that this compaction neither saw nor keeps
    if saw is not None:
        used = set(saw) | set(keeps)
        for sid in core.summaries.ids:
            if sid in used:
                continue
            s = core.summaries.get(sid)
            hit = [p for lo, hi in rest for p in s.coverage.pieces(lo, hi)]
            if hit:
                parts.append(
                    f"offsets {fmt_set(hit)} were covered only by summary {sid!r}{_at(s.tag)}, which "
                    "this compaction's summarizer did not see and which it does not keep"
                )
                rest = _minus(rest, hit)
    # 2. coverage of summaries that already left the context
    if core.lost_coverage:
        by_reason: dict[str, list[Pair]] = {}
        for lo, hi in rest:
            for p_lo, p_hi, why in core.lost_coverage.within(lo, hi):
                by_reason.setdefault(why, []).append((p_lo, p_hi))
        for why, hit in by_reason.items():
            parts.append(f"offsets {fmt_set(normalize(hit))} were covered only by {why}")
            rest = _minus(rest, hit)
    # 3. truncated and never recovered; 4. evicted by this compaction
    truncated = [p for lo, hi in rest for p in core.truncated.pieces(lo, hi)]
    dropped = _minus(rest, truncated)
    if truncated:
        parts.append(f"offsets {_truncated_where(core, normalize(truncated))} and never summarized or spilled")
    if dropped:
        parts.append(
            f"offsets {fmt_set(dropped)} are in no summary, spill or tail "
            "(the compaction evicts them unsummarized)"
        )
    return "; ".join(parts)


def _truncated_where(core: LedgerCore, ranges: list[Pair]) -> str:
    """``[0, 8) were truncated at line 3``, or per range: ``[0, 8) (line 3), [9, 12) (lines 5, 6) were truncated``.

    The lines are exact: each truncation that evicted part of a range, not the span of lines
    between the first and the last (see :class:`~tailguard.runtime.ledger_core.TruncationOrigins`).
    """
    if core.origins is None or len(ranges) == 1:
        return f"{fmt_set(ranges)} were truncated{_lines(core, ranges)}"
    parts = []
    for lo, hi in ranges:
        where = _lines(core, [(lo, hi)])
        parts.append(fmt(lo, hi) + (f" ({where.removeprefix(' at ')})" if where else ""))
    return ", ".join(parts) + " were truncated"


def _minus(ranges: list[Pair], cut: list[Pair]) -> list[Pair]:
    """``ranges \\ cut`` as maximal ranges."""
    return difference(normalize(ranges), normalize(cut))


def _why(core: LedgerCore, t: int, a: int, b: int, c: int, d: int, saw: Sequence[str] | None,
         keeps: Sequence[str]) -> list[str]:
    n = core.n
    why: list[str] = []
    if n < 0:
        why.append(f"history end {n} is negative")
    if core.F < 0:
        why.append(f"recovery floor span {core.F} is negative")
    if not 0 <= t <= n:
        why.append(f"tail start {t} is outside [0, {n}]")
    for name, lo, hi in (("summary input", a, b), ("summary coverage", c, d)):
        if not 0 <= lo <= hi <= n:
            why.append(f"{name} {fmt(lo, hi)} is not an interval inside [0, {n}]")
    for what, tag in core.bounds_problems():
        why.append(f"a recorded range{_at(tag)} {what}")
    pc, _, _ = core.prior(saw, keeps)
    if pc and (pc.min_lo < 0 or pc.max_hi > n):
        why.append(f"prior coverage {fmt_set(list(pc))} is not inside [0, {n}]")
    units = (("floor_unit", core.floor_unit), ("truncator_unit", core.truncator_unit))
    for name, unit in units:
        if unit not in UNITS:
            why.append(f"{name} {unit!r} is not one of {', '.join(UNITS)}")
    return why
