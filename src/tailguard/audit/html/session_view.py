"""The session view: an offset axis, one row per compaction, marks for what the log recorded.

Rows (top to bottom inside each compaction row): the summarizer input ``I`` (dashed frame),
the coverage (honest part solid, inherited part striped), the retained tail with the floor
framed over it, and the holes (red, crossed) each labelled with its range, its clause
(``no_hole``) and the log line that caused it. Above the rows, the log's truncations and
spills as marks. Every mark shows its offsets and log line on hover (``<title>``) and on
keyboard focus (a CSS tip). Ranges closer than two pixels are merged into one mark that
says how many it holds, so the picture of a million-event log has a few hundred marks.
"""

from __future__ import annotations

from collections.abc import Iterable

from tailguard.audit.html.session_data import MAX_LISTED, MAX_ROWS, Cause, Row, SessionData
from tailguard.audit.html.svg import Binned, Scale, bin_ranges, esc, fmt, fmt_lines, legend, mark, patterns
from tailguard.base.safeio import elide
from tailguard.base.vocab import Pair

__all__ = ["render_session", "session_svg"]


WIDTH = 1180
LEFT = 200
PLOT = 860
LANES = ((16, "input I"), (29, "coverage C"), (42, "tail T, floor Φ"), (56, "holes"))
MAX_LABELS = 10  # visible hole/mark labels per row; more marks keep their tips
MAX_HOLES_LISTED = 20  # holes listed under each refused compaction
MAX_ID = 120  # characters of an id, name or reason from the log shown in the layout (JSON: whole)
MAX_SENTENCE = 2_000  # characters of one sentence of the audit shown; the text report has it whole


def _clip(text: str) -> str:
    if len(text) <= MAX_SENTENCE:
        return text
    return text[:MAX_SENTENCE] + f"... ({len(text) - MAX_SENTENCE:,} more characters: tailguard audit prints it whole)"


def _triples(arr: Iterable[int]) -> list[tuple[int, int, int]]:
    it = iter(arr)
    return list(zip(it, it, it, strict=True))


def _pairs(ranges: Iterable[Pair], line: int) -> list[tuple[int, int, int]]:
    return [(lo, hi, line) for lo, hi in ranges]


def _what(b: Binned, noun: str, unit: str) -> str:
    if b.count == 1:
        return f"{noun} {fmt(b.lo, b.hi)} ({b.hi - b.lo} {unit}) at {fmt_lines(b.first_line, b.last_line)}"
    return (f"{b.count:,} {noun}s within {fmt(b.lo, b.hi)} ({b.covered:,} {unit} in all) at "
            f"{fmt_lines(b.first_line, b.last_line)}")


def _pieces(b: Binned) -> str:
    """``[lo, hi)``, or ``3 pieces within [lo, hi) (n in all)`` for merged ranges."""
    return fmt(b.lo, b.hi) if b.count == 1 else f"{b.count:,} pieces within {fmt(b.lo, b.hi)} ({b.covered:,} in all)"


class _Svg:
    def __init__(self, scale: Scale) -> None:
        self.scale = scale
        self.parts: list[str] = []
        self.y = 0.0

    def add(self, s: str) -> None:
        self.parts.append(s)

    def text(self, x: float, y: float, text: str, cls: str = "") -> None:
        c = f' class="{cls}"' if cls else ""
        self.add(f'<text x="{x:.1f}" y="{y:.1f}"{c}>{esc(text)}</text>')


def _axis(g: _Svg, unit: str) -> None:
    s = g.scale
    y = g.y + 22
    g.add(f'<line class="axis" x1="{s.left}" y1="{y}" x2="{s.left + s.width}" y2="{y}"/>')
    for t in s.ticks():
        x = s.x(t)
        g.add(f'<line class="axis" x1="{x:.1f}" y1="{y - 4}" x2="{x:.1f}" y2="{y + 4}"/>')
        g.add(f'<text class="tick" x="{x:.1f}" y="{y - 7}">{t:,}</text>')
    g.text(8, y + 4, f"offset ({unit})", "rowlabel")
    g.y += 34


def _log_row(g: _Svg, data: SessionData) -> None:
    s, unit = g.scale, data.header.unit
    y = g.y
    truncs = bin_ranges(_triples(data.truncs), s)
    spills = bin_ranges(_triples(data.spills), s)
    g.text(8, y + 24, "log", "rowlabel")
    g.text(8, y + 38, f"{len(data.truncs) // 3:,} truncations, {len(data.spills) // 3:,} spills", "sub")
    for b in truncs:
        tip = _what(b, "truncation", unit)
        g.add(mark("trunc", s, b.lo, b.hi, y + 16, 10, tip, y + 11,
                   data=(("line", b.first_line), ("last-line", b.last_line), ("count", b.count))))
    for b in spills:
        tip = _what(b, "spill", unit)
        g.add(mark("spill", s, b.lo, b.hi, y + 28, 10, tip, y + 11,
                   data=(("line", b.first_line), ("last-line", b.last_line), ("count", b.count))))
    labels = [("trunc", b, _what(b, "truncation", unit)) for b in truncs] + \
             [("spill", b, _what(b, "spill", unit)) for b in spills]
    ly = y + 52
    for kind, b, text in labels[:MAX_LABELS]:
        ly = _label(g, ly, kind, b.lo, b.hi, b.first_line, text)
    ly = _more_labels(g, ly, len(labels), "marks")
    g.y = ly + 4


def _label_x(s: Scale, lo: int) -> float:
    return min(s.x(lo), s.left + s.width - 420)


def _label(g: _Svg, ly: float, kind: str, lo: int, hi: int, line: int, text: str) -> float:
    """One visible text label of a mark at height ``ly``; returns the height of the next."""
    g.add(f'<text class="lbl {kind}" x="{_label_x(g.scale, lo):.1f}" y="{ly:.1f}" '
          f'data-kind="{kind}" data-lo="{lo}" data-hi="{hi}" data-line="{line}">{esc(text)}</text>')
    return ly + 14


def _more_labels(g: _Svg, ly: float, total: int, what: str) -> float:
    """Past :data:`MAX_LABELS` labels of a row, a line counting the rest (``what``: their noun)."""
    if total <= MAX_LABELS:
        return ly
    g.text(g.scale.left, ly, f"and {total - MAX_LABELS:,} more {what}: hover or focus them", "sub")
    return ly + 14


def _hole_label(hole: Pair, causes_of: dict[Pair, list[Cause]]) -> tuple[str, str]:
    """Visible label and the lines that caused the hole (for ``data-cause-lines``)."""
    causes = causes_of.get(hole, [])
    lines = sorted({x for c in causes for x in (c.first, c.last)})
    why = "; ".join(f"{fmt(c.lo, c.hi)} {c.text}" if len(causes) > 1 else c.text for c in causes)
    return f"hole {fmt(*hole)} · no_hole · {why}", " ".join(str(x) for x in lines)


def _compaction_row(g: _Svg, row: Row, unit: str) -> None:
    s = g.scale
    y = g.y
    verdict = "refused" if row.refused else "allowed"
    g.add(f'<g class="row {verdict}" data-line="{row.line}">')
    g.text(8, y + 26, f"line {row.line}: compaction", "rowlabel")
    g.text(8, y + 40, f"{verdict}" + (f": {', '.join(row.failed)}" if row.failed else ""),
           "sub bad" if row.refused else "sub good")
    if row.summary is not None:
        g.text(8, y + 54, f"summary {elide(row.summary, MAX_ID)}", "sub")
    tip_y = y + 11
    for dy, name in LANES:
        g.text(s.left + s.width + 8, y + dy + 8, name, "lane")
    a, b = row.summary_input
    c, d = row.summary_covers
    t, n = row.tail_start, row.n
    g.add(f'<line class="hend" x1="{s.x(n):.1f}" y1="{y + 14}" x2="{s.x(n):.1f}" y2="{y + 68}"/>')
    if a < b:
        g.add(mark("input", s, a, b, y + 16, 8, f"line {row.line}: summarizer input {fmt(a, b)}", tip_y))
    for bn in bin_ranges(_pairs(row.inherited, row.line), s):
        g.add(mark("inherited", s, bn.lo, bn.hi, y + 29, 8,
                   f"line {row.line}: inherited coverage {_pieces(bn)} (earlier summaries seen or kept)", tip_y))
    for bn in bin_ranges(_pairs(row.honest, row.line), s):
        g.add(mark("honest", s, bn.lo, bn.hi, y + 29, 8,
                   f"line {row.line}: honest coverage {_pieces(bn)} of claimed {fmt(c, d)}", tip_y))
    if t < n:
        g.add(mark("tail", s, t, n, y + 42, 8, f"line {row.line}: retained tail {fmt(t, n)}", tip_y))
    flo, fhi = row.floor
    if flo < fhi:
        g.add(mark("floor", s, flo, fhi, y + 40, 12, f"line {row.line}: recovery floor {fmt(flo, fhi)}", tip_y))
    ly = y + 82
    bins = bin_ranges(_pairs((h for h, _ in row.holes), row.line), s)
    causes_of = dict(row.holes)
    for k, bn in enumerate(bins):
        if bn.count == 1:
            text, causes = _hole_label((bn.lo, bn.hi), causes_of)
        else:
            text, causes = f"{bn.count:,} holes within {fmt(bn.lo, bn.hi)} ({bn.covered:,} {unit}) · no_hole", ""
        g.add(mark("hole", s, bn.lo, bn.hi, y + 56, 10, f"line {row.line}: {text}", tip_y,
                   data=(("line", row.line), ("count", bn.count), ("cause-lines", causes))))
        if k < MAX_LABELS:
            ly = _label(g, ly, "hole", bn.lo, bn.hi, row.line, text)
    ly = _more_labels(g, ly, len(bins), "holes")
    g.add("</g>")
    g.y = max(ly, y + 72) + 6


def _aggregate_row(g: _Svg, row: Row, unit: str) -> None:
    s = g.scale
    y = g.y
    verdict = f"{row.refused:,} refused" if row.refused else "all allowed"
    for dy, name in LANES:
        g.text(s.left + s.width + 8, y + dy + 8, name, "lane")
    g.add(f'<g class="row aggregate" data-line="{row.line}" data-last-line="{row.last_line}" '
          f'data-count="{row.count}">')
    g.text(8, y + 26, f"lines {row.line}–{row.last_line}", "rowlabel")
    g.text(8, y + 40, f"{row.count:,} compactions, {verdict}", "sub bad" if row.refused else "sub good")
    tip_y = y + 11
    for bn in bin_ranges(_pairs(row.inputs, row.line), s):
        g.add(mark("input", s, bn.lo, bn.hi, y + 16, 8,
                   f"lines {row.line}–{row.last_line}: summarizer inputs within {fmt(bn.lo, bn.hi)}", tip_y))
    for bn in bin_ranges(_pairs(row.tails, row.line), s):
        g.add(mark("tail", s, bn.lo, bn.hi, y + 42, 8,
                   f"lines {row.line}–{row.last_line}: retained tails within {fmt(bn.lo, bn.hi)}", tip_y))
    ly = y + 82
    bins = bin_ranges(_pairs(row.hole_union, row.line), s)
    for k, bn in enumerate(bins):
        text = (f"holes within {fmt(bn.lo, bn.hi)} ({bn.covered:,} {unit}) · no_hole · judged at lines "
                f"{row.line}–{row.last_line}")
        g.add(mark("hole", s, bn.lo, bn.hi, y + 56, 10, text, tip_y,
                   data=(("line", row.line), ("last-line", row.last_line), ("count", bn.count))))
        if k < MAX_LABELS:
            ly = _label(g, ly, "hole", bn.lo, bn.hi, row.line, text)
    ly = _more_labels(g, ly, len(bins), "hole marks")
    g.add("</g>")
    g.y = max(ly, y + 72) + 6


def session_svg(data: SessionData, title: str = "session") -> str:
    """The picture: legend, axis, log row and one row per compaction (or aggregate)."""
    scale = Scale(max(data.n, 1), LEFT, PLOT)
    g = _Svg(scale)
    leg, h = legend(6, WIDTH)
    g.add(leg)
    g.y = h + 10
    _axis(g, data.header.unit)
    _log_row(g, data)
    for row in data.rows:
        (_aggregate_row if row.aggregate else _compaction_row)(g, row, data.header.unit)
    height = g.y + 10
    return (f'<svg class="view" role="img" aria-label="{esc(title)}" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}">{patterns()}{"".join(g.parts)}</svg>')


def _row_sentence(row: Row, unit: str) -> str:
    (a, b), (c, d) = row.summary_input, row.summary_covers
    return (f"line {row.line}: compaction refused ({', '.join(row.failed)}): summary covers {fmt(c, d)} of "
            f"input {fmt(a, b)}, tail starts at {row.tail_start}, history end {row.n} {unit}")


def render_session(data: SessionData, heading: str = "Session") -> str:
    """The session view as an HTML section (SVG picture, facts and the refused compactions)."""
    h = data.header
    unit = elide(h.unit, MAX_ID)  # strings from the log are elided in the layout, never in JSON
    source = elide(data.source, MAX_ID)
    tally = f"{data.violations:,} refused" if data.violations else "all allowed"
    facts = [
        ("log", source), ("profile", data.profile), ("unit", unit),
        ("recovery floor", f"{h.recovery_floor_span:,} {h.floor_unit} (truncator unit {h.truncator_unit})"),
        ("events", f"{data.events:,}"), ("history end", f"{data.n:,} {unit}"),
        ("compactions judged", f"{data.compactions:,}, {tally}"),
        ("refused attempts logged by the guard", f"{data.refusals:,}"),
    ]
    out = [f'<section class="session"><h2>{esc(heading)}: {esc(source)}</h2>',
           '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>"]
    if data.torn is not None:
        line, reason = data.torn
        out.append(f'<p class="note bad">Line {line}: torn last line ignored ({esc(reason)}); lines 1 to '
                   f"{line - 1} are judged.</p>")
    for a in data.adopted:  # spec 1.2: their own category, never shown as verified
        out.append(f'<p class="note unverified">Line {a.line}: unverified: offsets [0, {a.hi}) predate the guard '
                   f'(adopted as summary {esc(elide(a.summary or "adopted", MAX_ID))}: '
                   f'{esc(elide(a.reason, MAX_ID))}); nothing in this log '
                   "verifies them.</p>")
    if any(r.aggregate for r in data.rows):
        out.append(f'<p class="note">A long log: the refused compactions among the first {MAX_ROWS} have a row '
                   f'each, the allowed ones among them share one, later compactions are merged into rows of '
                   f'{data.chunk:,}, and ranges closer than two pixels into one mark that says how many it '
                   f'holds.</p>')
    out.append(f'<div class="scroll">{session_svg(data, heading)}</div>')
    out.append("<h3>Refused compactions</h3>")
    if not data.listed:
        out.append("<p>None: every compaction was allowed.</p>")
    else:
        out.append('<ol class="refused">')
        for row in data.listed:
            items = "".join(f"<li>refuse {esc(_clip(x))}</li>" for x in row.sentences)
            holes = "".join(
                f'<li class="hole" data-lo="{lo}" data-hi="{hi}">hole {fmt(lo, hi)}: '
                + esc(_clip("; ".join(f"{fmt(c.lo, c.hi)} {c.text}" for c in causes))) + "</li>"
                for (lo, hi), causes in row.holes[:MAX_HOLES_LISTED])
            if len(row.holes) > MAX_HOLES_LISTED:
                holes += f"<li>and {len(row.holes) - MAX_HOLES_LISTED:,} more holes (drawn above)</li>"
            over = (f"<li>committed anyway, override: {esc(elide(row.override, MAX_ID))}</li>"
                    if row.override is not None else "")
            out.append(f'<li data-line="{row.line}"><span class="bad">{esc(_row_sentence(row, unit))}</span>'
                       f"<ul>{items}{holes}{over}</ul></li>")
        out.append("</ol>")
        if data.violations > len(data.listed):
            out.append(f"<p>and {data.violations - len(data.listed):,} more refused compactions: "
                       f"<code>tailguard audit {esc(source)}</code> lists every one.</p>")
    if data.refusal_lines:
        out.append("<h3>Attempts the guard refused (refusal lines, never committed)</h3><ol>")
        for r in data.refusal_lines:
            holes = ", ".join(fmt(lo, hi) for lo, hi in r.holes) or "none"
            out.append(f'<li data-line="{r.line}">line {r.line}: refused ({esc(", ".join(r.failed))}): summary '
                       f"covers {fmt(*r.summary_covers)} of input {fmt(*r.summary_input)}, tail starts at "
                       f"{r.tail_start}; holes {holes}</li>")
        out.append("</ol>")
    out.append(_ranges_table(data))
    out.append("</section>")
    return "\n".join(out)


def _ranges_table(data: SessionData) -> str:
    rows: list[tuple[int, str, int, int, str]] = []
    for kind, arr in (("truncate", data.truncs), ("spill", data.spills)):
        for lo, hi, line in _triples(arr[: 3 * MAX_LISTED]):
            rows.append((line, kind, lo, hi, data.handles.get(line, "") if kind == "spill" else ""))
    for line, sid in data.evictions:
        rows.append((line, "evict_summary", 0, 0, sid))
    if not rows:
        return "<h3>Truncations, spills, evictions</h3><p>None recorded.</p>"
    rows.sort()
    body = "".join(
        f"<tr><td>{line}</td><td>{kind}</td><td>{'' if kind == 'evict_summary' else fmt(lo, hi)}</td>"
        f"<td>{esc(elide(extra, MAX_ID))}</td></tr>" for line, kind, lo, hi, extra in rows)
    more = len(data.truncs) // 3 + len(data.spills) // 3 - sum(1 for r in rows if r[1] != "evict_summary")
    tail = f"<p>and {more:,} more (the first {MAX_LISTED} of each kind are listed).</p>" if more > 0 else ""
    return (f"<h3>Truncations, spills, evictions</h3><table><thead><tr><th>line</th><th>event</th>"
            f"<th>range</th><th>handle / summary</th></tr></thead><tbody>{body}</tbody></table>{tail}")
