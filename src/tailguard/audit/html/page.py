"""The page: one self-contained HTML document (inline CSS and SVG, no script, no fetch).

Fonts are the system's (``font-family`` lists generic families only), nothing is loaded
from anywhere, and the bytes depend only on the input: no date, no path of the machine.
"""

from __future__ import annotations

from tailguard import __version__
from tailguard.audit.html.svg import esc

__all__ = ["page"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:16px 24px;color:#1b1b1b;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:22px 0 6px}h3{font-size:15px;margin:16px 0 4px}
.scroll{overflow-x:auto;border:1px solid #ddd;padding:4px 0;margin:8px 0}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0}
dl.facts dt{color:#555}dl.facts dd{margin:0}
.bad{color:#b2182b;font-weight:600}.good{color:#1a7a37}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
code{font-family:ui-monospace,monospace;background:#f3f3f3;padding:0 3px}
.note{color:#555}
h1,h2,p,li,dd,td{overflow-wrap:anywhere}

svg.view{display:block;font:12px system-ui,sans-serif}
svg text{fill:#222}svg .tick{text-anchor:middle;fill:#555;font-size:11px}
svg .rowlabel{font-weight:600}svg .lane{fill:#666;font-size:10px}
svg .sub{fill:#555;font-size:11px}svg .sub.bad{fill:#b2182b}
svg .sub.good{fill:#1a7a37}svg .lbl{font-size:11.5px}svg .lbl.hole{fill:#b2182b;font-weight:600}
svg .axis{stroke:#555;stroke-width:1}svg .hend{stroke:#000;stroke-dasharray:2 2}
svg .limit{stroke-width:1.5;stroke-dasharray:6 3}svg .limit.trigger{stroke:#d95f02}
svg .limit.ceiling{stroke:#7b3294}svg .limit.window{stroke:#000;stroke-dasharray:none}
svg .occ{fill:#9ecae1;stroke:#3182bd}svg .occ.peak{fill:none;stroke:#3182bd;stroke-dasharray:2 2}
.mk{cursor:default;outline:none}.mk .shape{stroke-width:.6}
.hole .shape{fill:url(#p-hole);stroke:#67000d}
.trunc .shape{fill:url(#p-trunc);stroke:#3d2106}
.spill .shape{fill:url(#p-spill);stroke:#08306b}
.honest .shape{fill:url(#p-honest);stroke:#00441b}
.inherited .shape{fill:url(#p-inherited);stroke:#1a9641}
.tail .shape{fill:url(#p-tail);stroke:#404040}
.input .shape{fill:none;stroke:#08519c;stroke-width:1.4;stroke-dasharray:4 2}
.floor .shape{fill:none;stroke:#e66101;stroke-width:2.4}
.mk .tip{visibility:hidden;font-size:11.5px;fill:#000;paint-order:stroke;stroke:#fff;stroke-width:4px;
  stroke-linejoin:round}
.mk:hover .tip,.mk:focus .tip{visibility:visible}
.mk:hover .shape,.mk:focus .shape{stroke:#000;stroke-width:2}
"""


def page(title: str, body: str) -> str:
    """A complete HTML document around ``body``."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="tailguard {esc(__version__)}">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head>\n"
        f"<body><h1>{esc(title)}</h1>\n{body}\n"
        f'<p class="note">Written by tailguard {esc(__version__)}. Hover or focus (Tab) a mark for its '
        "offsets and log line. Colours come with patterns: holes are crossed, truncations ticked, spills "
        "dotted, inherited coverage striped, the tail lined.</p></body></html>\n"
    )
