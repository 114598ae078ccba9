"""What the session view draws, read off the audit's own replay.

:func:`collect` runs :func:`tailguard.audit.replay.replay` (the audit's engine: every verdict,
failed clause, hole and sentence shown is the one ``tailguard audit`` reports) on a
:class:`~tailguard.runtime.ledger_core.LedgerCore` of its own making, which at each verdict holds
exactly the state the compaction was judged against (replay records a compaction only when the
next event is asked for). It is read, never written, to answer *where from*: the honest and
inherited coverage of each compaction and which log line caused each hole. Nothing here decides
anything.

Memory stays bounded for long logs: truncations and spills are kept as compact arrays,
compactions beyond :data:`MAX_ROWS` are folded into aggregate rows as they stream past.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from tailguard.audit.replay import Verdict, replay
from tailguard.base.intervals import difference
from tailguard.base.vocab import Pair
from tailguard.runtime.eventlog import (
    Adopt,
    Compact,
    Event,
    EvictSummary,
    Refusal,
    Session,
    Spill,
    Truncate,
    iter_events,
)
from tailguard.runtime.interval_index import IntervalUnion
from tailguard.runtime.ledger_core import LedgerCore

__all__ = ["MAX_ROWS", "Cause", "Row", "SessionData", "collect"]


_AT_LINE = re.compile(r"at line (\d+)$")
MAX_ROWS = 24  #: compactions drawn one per row; later ones are folded into aggregate rows
MAX_LISTED = 30  #: refused compactions and guard refusals listed with their sentences
MAX_AGGREGATE = 16  #: aggregate rows at most, after the detailed ones


@dataclass(frozen=True)
class Cause:
    """Part of a hole and where it came from: ``first``/``last`` the log lines named."""

    lo: int
    hi: int
    why: str  # "truncated", "lost summary", "unseen summary", "evicted by this compaction"
    first: int
    last: int
    text: str


@dataclass
class Row:
    """One compaction (``count == 1``) or several folded together (an aggregate row)."""

    line: int
    last_line: int
    count: int
    refused: int
    failed: tuple[str, ...]
    n: int
    summary_input: Pair
    summary_covers: Pair
    tail_start: int
    floor: Pair
    honest: list[Pair]
    inherited: list[Pair]
    holes: list[tuple[Pair, list[Cause]]]
    sentences: tuple[str, ...]
    override: str | None
    summary: str | None
    aggregate: bool = False
    # aggregate rows: unions over the folded compactions
    inputs: IntervalUnion = field(default_factory=IntervalUnion)
    tails: IntervalUnion = field(default_factory=IntervalUnion)
    hole_union: IntervalUnion = field(default_factory=IntervalUnion)


@dataclass
class SessionData:
    """Everything the session view shows."""

    source: str
    profile: str
    header: Session
    n: int = 0
    events: int = 0
    truncs: array[int] = field(default_factory=lambda: array("q"))  # lo, hi, line triples
    spills: array[int] = field(default_factory=lambda: array("q"))  # lo, hi, line triples
    handles: dict[int, str] = field(default_factory=dict)  # line -> handle (first MAX_LISTED)
    evictions: list[tuple[int, str]] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    compactions: int = 0
    violations: int = 0
    refusal_lines: list[Refusal] = field(default_factory=list)
    refusals: int = 0
    listed: list[Row] = field(default_factory=list)  # refused compactions with sentences
    chunk: int = 1  # compactions per aggregate row
    torn: tuple[int, str] | None = None  # a torn last line the audit ignores (line, reason)
    adopted: list[Adopt] = field(default_factory=list)  # spec 1.2: offsets that predate the guard


def hole_causes(core: LedgerCore, hole: Pair, ev: Compact) -> list[Cause]:
    """Split ``hole`` by cause, in the order of the audit's ``no_hole`` sentence
    (:mod:`tailguard.runtime.ledger_explain`): unseen summaries, lost summaries, truncations, and
    offsets this compaction evicts unsummarized."""
    rest = [hole]
    out: list[Cause] = []

    def take(lo: int, hi: int, why: str, first: int, last: int, text: str) -> None:
        nonlocal rest
        out.append(Cause(lo, hi, why, first, last, text))
        rest = difference(rest, [(lo, hi)])  # rest stays sorted and disjoint

    if ev.saw is not None:
        used = set(ev.saw) | set(ev.keeps)
        for sid in core.summaries.ids:
            if sid in used:
                continue
            s = core.summaries.get(sid)
            tag = s.tag if isinstance(s.tag, int) else ev.line
            for lo, hi in [p for r in rest for p in s.coverage.pieces(*r)]:
                take(lo, hi, "unseen summary", tag, tag,
                     f"covered only by summary {sid!r} (line {tag}), not seen or kept by line {ev.line}")
    if core.lost_coverage:
        for lo, hi, why in [p for r in list(rest) for p in core.lost_coverage.within(*r)]:
            m = _AT_LINE.search(why)
            at = int(m.group(1)) if m else ev.line
            take(lo, hi, "lost summary", at, at, f"covered only by {why}")
    for r in list(rest):
        for lo, hi in core.truncated.pieces(*r):
            tags = core.origins.within(lo, hi) if core.origins is not None else []
            lines = [int(x) for tag in tags for x in tag if isinstance(x, int)]
            first, last = (min(lines), max(lines)) if lines else (ev.line, ev.line)
            where = f"line {first}" if first == last else f"lines {first} to {last}"
            take(lo, hi, "truncated", first, last, f"truncated at {where}, never summarized or spilled")
    for lo, hi in list(rest):
        take(lo, hi, "evicted", ev.line, ev.line,
             f"in no summary, spill or tail: evicted unsummarized by the compaction at line {ev.line}")
    return sorted(out, key=lambda c: c.lo)


def _tee(events: Iterator[Event], data: SessionData) -> Iterator[Event]:
    """Pass events to replay, noting what the view lists of each."""
    for ev in events:
        data.events += 1
        yield ev
        if type(ev) is Truncate:
            data.truncs.extend((ev.lo, ev.hi, ev.line))
        elif type(ev) is Spill:
            data.spills.extend((ev.lo, ev.hi, ev.line))
            if ev.handle is not None and len(data.handles) < MAX_LISTED:
                data.handles[ev.line] = ev.handle
        elif type(ev) is EvictSummary and len(data.evictions) < MAX_LISTED:
            data.evictions.append((ev.line, ev.summary))


def collect(lines: Iterable[bytes], source: str, profile: str) -> SessionData:
    """Replay an event log as the audit does and gather what the session view draws.

    Raises :class:`~tailguard.runtime.eventlog.EventLogError` for unusable input, as the audit does;
    a torn last line is ignored and noted, as the audit does without ``--strict-tail``.
    """
    torn: list[tuple[int, str]] = []
    events = iter_events(lines, source, on_torn=lambda line, reason: torn.append((line, reason)))
    header = next(events)
    assert isinstance(header, Session)
    core = LedgerCore(header.recovery_floor_span, header.floor_unit, header.truncator_unit,
                      track_origins=True, seed=profile == "seed")
    data = SessionData(source, profile, header)

    def with_header() -> Iterator[Event]:
        yield header
        yield from _tee(events, data)

    results = replay(with_header(), profile=profile, explain=True, source=source, core=core)
    next(results)
    for v in results:
        if type(v) is Refusal:
            data.refusals += 1
            if len(data.refusal_lines) < MAX_LISTED:
                data.refusal_lines.append(v)
            continue
        if type(v) is Adopt:  # recorded in the core, whose state the rows read; listed as unverified
            data.adopted.append(v)
            continue
        assert isinstance(v, Verdict)
        _verdict(data, core, v)
    data.n = core.n
    data.torn = torn[0] if torn else None
    if data.compactions > MAX_ROWS:
        _fold_early_allowed(data)
    return data


def _fold_early_allowed(data: SessionData) -> None:
    """In a long log, the first compactions that were allowed say little one row each (they
    sit at the left end of a long axis): fold them into one aggregate row, first, and keep
    the refused ones as rows of their own."""
    early = data.rows[:MAX_ROWS]
    allowed = [r for r in early if not r.refused]
    if not allowed:
        return
    agg = Row(line=allowed[0].line, last_line=allowed[-1].line, count=0, refused=0, failed=(),
              n=allowed[-1].n, summary_input=allowed[0].summary_input, summary_covers=allowed[0].summary_covers,
              tail_start=allowed[0].tail_start, floor=(0, 0), honest=[], inherited=[], holes=[],
              sentences=(), override=None, summary=None, aggregate=True)
    for r in allowed:
        agg.count += 1
        a, b = r.summary_input
        if 0 <= a < b:
            agg.inputs.add(a, b)
        if 0 <= r.tail_start < r.n:
            agg.tails.add(r.tail_start, r.n)
    data.rows[:MAX_ROWS] = [agg, *(r for r in early if r.refused)]


def _verdict(data: SessionData, core: LedgerCore, v: Verdict) -> None:
    ev = v.compaction
    data.compactions += 1
    refused = not v.decision.allowed
    data.violations += refused
    holes = [(lo, hi) for lo, hi in v.decision.holes]
    detailed = data.compactions <= MAX_ROWS
    listed = refused and len(data.listed) < MAX_LISTED
    if not (detailed or listed):
        _fold(data, v, holes)
        return
    n, F = v.history_end, core.F
    floor = (max(0, n - F), n) if F >= 0 else (n, n)
    well = all(0 <= x <= n for x in (*ev.summary_input, *ev.summary_covers, ev.tail_start))
    honest = core.honest_part(ev.summary_input, ev.summary_covers) if well else []
    inherited: list[Pair] = []
    if well:
        pc, _, _ = core.prior(ev.saw, ev.keeps)
        inherited = list(pc)
    row = Row(
        line=v.line, last_line=v.line, count=1, refused=int(refused), failed=v.decision.failed, n=n,
        summary_input=ev.summary_input, summary_covers=ev.summary_covers, tail_start=ev.tail_start,
        floor=floor, honest=honest, inherited=inherited,
        holes=[((lo, hi), hole_causes(core, (lo, hi), ev)) for lo, hi in holes],
        sentences=v.explanation, override=v.override, summary=ev.summary,
    )
    if listed:
        data.listed.append(row)
    if detailed:
        data.rows.append(row)
    else:
        _fold(data, v, holes)


def _fold(data: SessionData, v: Verdict, holes: list[Pair]) -> None:
    """Fold a compaction into the aggregate rows after the detailed ones.

    Each aggregate row holds ``data.chunk`` consecutive compactions; when there would be more
    than :data:`MAX_AGGREGATE` of them, neighbours merge pairwise and the chunk doubles, so
    the number of rows stays bounded for any log.
    """
    ev = v.compaction
    agg = data.rows[MAX_ROWS:]
    last = agg[-1] if agg else None
    if last is None or last.count >= data.chunk:
        if len(agg) >= MAX_AGGREGATE:
            merged = [_merge(agg[i], agg[i + 1]) if i + 1 < len(agg) else agg[i] for i in range(0, len(agg), 2)]
            data.rows[MAX_ROWS:] = merged
            data.chunk *= 2
            last = data.rows[-1] if data.rows[-1].count < data.chunk else None
        else:
            last = None
        if last is None:
            last = Row(line=v.line, last_line=v.line, count=0, refused=0, failed=(), n=v.history_end,
                       summary_input=ev.summary_input, summary_covers=ev.summary_covers,
                       tail_start=ev.tail_start, floor=(0, 0), honest=[], inherited=[], holes=[],
                       sentences=(), override=None, summary=None, aggregate=True)
            data.rows.append(last)
    last.count += 1
    last.last_line = v.line
    last.n = v.history_end
    last.refused += not v.decision.allowed
    last.failed = tuple(dict.fromkeys((*last.failed, *v.decision.failed)))
    a, b = ev.summary_input
    if 0 <= a < b:
        last.inputs.add(a, b)
    if 0 <= ev.tail_start < v.history_end:
        last.tails.add(ev.tail_start, v.history_end)
    for lo, hi in holes:
        last.hole_union.add(lo, hi)


def _merge(x: Row, y: Row) -> Row:
    for src, dst in ((y.inputs, x.inputs), (y.tails, x.tails), (y.hole_union, x.hole_union)):
        for lo, hi in src:
            dst.add(lo, hi)
    x.count += y.count
    x.last_line, x.n = y.last_line, y.n
    x.refused += y.refused
    x.failed = tuple(dict.fromkeys((*x.failed, *y.failed)))
    return x
