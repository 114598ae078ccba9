"""The fleet summary: how many sessions are clean, refused or unusable, and the worst ones.

The three counts partition the sessions: ``unreadable`` (``error`` set, whatever was judged
before the error), else ``with_refusals`` (any compaction refused), else ``clean``. Exit code:
2 when any session is unreadable, else 1 when any has a refusal, else 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from tailguard.audit.fleet.record import Record
from tailguard.base.safeio import printable

__all__ = ["WORST", "Summary", "summarize"]

WORST = 10  # offenders and errors listed by name


class Summary(NamedTuple):
    sessions: int
    clean: int
    with_refusals: int
    unreadable: int
    events: int
    compactions: int
    refusals: int
    worst: list[Record]  # most refusals first, then by source
    errors: list[Record]  # unreadable sessions, by source
    warnings: tuple[str, ...] = ()  # torn last lines ignored (the sessions are judged), by source

    @property
    def exit_code(self) -> int:
        return 2 if self.unreadable else 1 if self.with_refusals else 0

    def to_json(self, profile: str, out: str | None) -> dict[str, Any]:
        return {
            "sessions": self.sessions, "clean": self.clean, "with_refusals": self.with_refusals,
            "unreadable": self.unreadable, "events": self.events, "compactions": self.compactions,
            "refusals": self.refusals, "profile": profile,
            "worst": [{"source": r["source"], "refusals": r["refusals"], "compactions": r["compactions"],
                       "first_line": r["holes"][0]["line"] if r["holes"] else None} for r in self.worst],
            "errors": [r["error"] for r in self.errors],
            **({"warnings": list(self.warnings)} if self.warnings else {}),
            "results": out,
        }

    def text(self, prog: str, profile: str, out: str | None) -> str:
        lines = [
            f"{prog}: {self.sessions:,} {_plural(self.sessions, 'session')} (profile {profile}): "
            f"{self.clean:,} clean, {self.with_refusals:,} with refusals, {self.unreadable:,} unreadable; "
            f"{self.compactions:,} {_plural(self.compactions, 'compaction')} judged, "
            f"{self.refusals:,} refused, {self.events:,} events"
        ]
        if self.worst:
            shown = f"the {len(self.worst)} " if self.with_refusals > len(self.worst) else ""
            lines.append(f"worst offenders ({shown}most refused compactions):")
            for r in self.worst:
                first = r["holes"][0]["line"]
                clauses = ", ".join(h["clause"] for h in r["holes"] if h["line"] == first)
                lines.append(f"  {printable(r['source'])}: {r['refusals']:,} of {r['compactions']:,} "
                             f"{_plural(r['compactions'], 'compaction')} refused, first at line "
                             f"{first} ({clauses})")
        if self.errors:
            more = self.unreadable - len(self.errors)
            lines.append("unreadable" + (f" (the first {len(self.errors)}):" if more else ":"))
            lines.extend(f"  {printable(r['error'])}" for r in self.errors)
        if self.warnings:
            lines.append("warnings:")
            lines.extend(f"  {printable(w)}" for w in self.warnings)
        if out is not None:
            lines.append(f"results: {printable(out)}")
        return "\n".join(lines) + "\n"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def summarize(records: Sequence[Record], worst: int = WORST) -> Summary:
    bad = [r for r in records if r["error"] is not None]
    refused = [r for r in records if r["error"] is None and r["refusals"]]
    ranked = sorted(refused, key=lambda r: (-r["refusals"], r["source"]))
    return Summary(
        sessions=len(records),
        clean=len(records) - len(bad) - len(refused),
        with_refusals=len(refused),
        unreadable=len(bad),
        events=sum(r["events"] for r in records),
        compactions=sum(r["compactions"] for r in records),
        refusals=sum(r["refusals"] for r in records),
        worst=ranked[:worst],
        errors=sorted(bad, key=lambda r: r["source"])[:worst],
        warnings=tuple([w for r in sorted(records, key=lambda r: r["source"]) if (w := r.get("warning"))][:worst]),
    )
