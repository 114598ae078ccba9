"""Small SVG and HTML building blocks: escaping, the offset axis, binned marks, patterns.

Everything here returns strings; nothing reads a clock, the environment or a file, so the
same input gives the same bytes. Marks are SVG groups that take keyboard focus
(``tabindex``) and carry their offsets and log line in a ``<title>`` (hover) and in a tip
that CSS shows on ``:hover`` and ``:focus``; no script.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tailguard.base.safeio import printable

__all__ = ["Binned", "Scale", "bin_ranges", "esc", "fmt", "fmt_lines", "legend", "mark", "patterns"]


def esc(text: object) -> str:
    """HTML-escape any value (quotes too: the result is safe inside an attribute), with control
    characters, bidi overrides and lone surrogates shown escaped (``\\u202e``): input can
    neither reorder what the page shows nor make it unencodable."""
    return html.escape(printable(str(text), "\n"), quote=True)


def fmt(lo: int, hi: int) -> str:
    return f"[{lo}, {hi})"


def fmt_lines(first: int, last: int) -> str:
    """``line 3`` or ``lines 3 to 9``."""
    return f"line {first}" if first == last else f"lines {first} to {last}"


@dataclass(frozen=True)
class Scale:
    """Offsets ``[0, n)`` onto ``[left, left + width)`` pixels."""

    n: int
    left: float
    width: float

    def x(self, offset: int) -> float:
        if self.n <= 0:
            return self.left
        return self.left + self.width * (min(max(offset, 0), self.n) * 10_000 // self.n) / 10_000

    def span(self, lo: int, hi: int) -> tuple[float, float]:
        """x and width, at least one pixel wide so that a single offset is still seen."""
        x0, x1 = self.x(lo), self.x(hi)
        w = max(x1 - x0, 1.5)
        return x0, w

    def offsets_per_px(self) -> float:
        try:
            return self.n / self.width if self.width else 0.0
        except OverflowError:  # offsets are integers of any size
            return float("inf")

    def ticks(self) -> list[int]:
        """Round tick positions, about 10 across the axis."""
        if self.n <= 0:
            return [0]
        raw = self.n / 10
        step = 1
        while step * 10 <= raw:
            step *= 10
        for k in (1, 2, 5, 10):
            if step * k >= raw:
                step *= k
                break
        return list(range(0, self.n + 1, step))


@dataclass(frozen=True)
class Binned:
    """Ranges merged for drawing: their hull, how many, and the log lines they came from."""

    lo: int
    hi: int
    count: int
    first_line: int
    last_line: int
    covered: int  # offsets actually in the merged ranges (<= hi - lo)


def bin_ranges(ranges: Iterable[tuple[int, int, int]], scale: Scale, gap_px: float = 2.0) -> list[Binned]:
    """Merge ``(lo, hi, line)`` ranges whose drawn gap is under ``gap_px`` pixels.

    The result has at most about ``scale.width / gap_px`` entries whatever the number of
    ranges, so a million-event log draws as a few hundred marks; a merged mark says how many
    ranges it holds and which lines they came from. Ranges are drawn, not judged: the
    verdicts come from the audit.
    """
    gap = gap_px * scale.offsets_per_px()
    out: list[Binned] = []
    cur: list[int] | None = None  # lo, hi, count, first, last, covered
    for lo, hi, line in sorted(r for r in ranges if r[0] < r[1]):
        if cur is not None and lo - cur[1] <= gap:
            if hi > cur[1]:
                cur[5] += hi - max(lo, cur[1])
                cur[1] = hi
            cur[2] += 1
            cur[3] = min(cur[3], line)
            cur[4] = max(cur[4], line)
        else:
            if cur is not None:
                out.append(Binned(*cur))
            cur = [lo, hi, 1, line, line, hi - lo]
    if cur is not None:
        out.append(Binned(*cur))
    return out


def mark(
    kind: str,
    scale: Scale,
    lo: int,
    hi: int,
    y: float,
    h: float,
    tip: str,
    tip_y: float,
    *,
    data: Sequence[tuple[str, object]] = (),
) -> str:
    """One focusable mark over ``[lo, hi)``: a shape styled by its kind (pattern or frame,
    see the page's CSS), a hover ``<title>`` and a tip that CSS shows on focus."""
    x, w = scale.span(lo, hi)
    attrs = "".join(f' data-{k}="{esc(v)}"' for k, v in data)
    tip_x = min(max(x, scale.left), scale.left + scale.width - 6 * min(len(tip), 120))
    tip_x = max(tip_x, 4.0)
    return (
        f'<g class="mk {kind}" tabindex="0" data-kind="{kind}" data-lo="{lo}" data-hi="{hi}"{attrs}>'
        f"<title>{esc(tip)}</title>"
        f'<rect class="shape" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}"/>'
        f'<text class="tip" x="{tip_x:.1f}" y="{tip_y:.1f}">{esc(tip)}</text></g>'
    )


# Colour and a pattern for every kind, so that the picture reads in grey too.
_PATTERNS = """<defs>
<pattern id="p-hole" width="6" height="6" patternUnits="userSpaceOnUse">
<rect width="6" height="6" fill="#d7191c"/><path d="M0,0 L6,6 M6,0 L0,6" stroke="#fff" stroke-width="1.2"/></pattern>
<pattern id="p-trunc" width="4" height="4" patternUnits="userSpaceOnUse">
<rect width="4" height="4" fill="#6b3b0c"/><path d="M2,0 L2,4" stroke="#f0c090" stroke-width="1"/></pattern>
<pattern id="p-spill" width="5" height="5" patternUnits="userSpaceOnUse">
<rect width="5" height="5" fill="#2b6cb0"/><circle cx="2.5" cy="2.5" r="1.1" fill="#fff"/></pattern>
<pattern id="p-honest" width="4" height="4" patternUnits="userSpaceOnUse">
<rect width="4" height="4" fill="#1a9641"/></pattern>
<pattern id="p-inherited" width="6" height="6" patternUnits="userSpaceOnUse">
<rect width="6" height="6" fill="#a6d96a"/><path d="M0,6 L6,0" stroke="#1a9641" stroke-width="1.5"/></pattern>
<pattern id="p-tail" width="4" height="4" patternUnits="userSpaceOnUse">
<rect width="4" height="4" fill="#bdbdbd"/><path d="M0,2 L4,2" stroke="#636363" stroke-width="1"/></pattern>
</defs>"""


def patterns() -> str:
    return _PATTERNS


LEGEND: tuple[tuple[str, str], ...] = (
    ("input", "summarizer input I (dashed frame)"),
    ("honest", "honest coverage (C ∩ I) \\ TRU (solid)"),
    ("inherited", "inherited coverage: earlier summaries seen or kept (stripes)"),
    ("tail", "retained tail [t, n) (lines)"),
    ("floor", "recovery floor Φ (thick frame)"),
    ("hole", "hole: unrecoverable offsets (red, crossed)"),
    ("trunc", "truncation (brown, ticks)"),
    ("spill", "spill (blue, dots)"),
)


def legend(y: float, width: float) -> tuple[str, float]:
    """The legend as SVG at ``y``; returns it and its height."""
    parts: list[str] = []
    x, row = 10.0, 0
    for kind, text in LEGEND:
        w = 26 + 6.2 * len(text)
        if x + w > width:
            x, row = 10.0, row + 1
        yy = y + row * 20
        parts.append(f'<g class="legend {kind}"><rect class="shape" x="{x:.1f}" y="{yy:.1f}" width="18" height="11"/>'
                     f'<text x="{x + 24:.1f}" y="{yy + 10:.1f}">{esc(text)}</text></g>')
        x += w + 14
    return "".join(parts), (row + 1) * 20
