"""What an importer gives the audit: one session's event log and the item at each offset."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tailguard.adapters._offsets import OffsetTracker

__all__ = ["Imported", "Named", "named_units", "pending_holes"]


@dataclass(frozen=True, slots=True)
class Named:
    """The message at offsets ``[lo, hi)``: its id and its text (the text blocks of its content)."""

    lo: int
    hi: int
    id: str
    text: str


@dataclass(slots=True)
class Imported:
    """One imported session: its event log (lines, header first) and the message at each offset."""

    source: str
    lines: list[str]
    units: list[Named] = field(default_factory=list)
    unverified: str | None = None  # why a range was adopted instead of verified, if one was
    #: offsets already lost in the thread's last context but judged by no compaction (a trim
    #: after the last one): the audit judges compactions, so the report names these apart
    pending: list[tuple[int, int]] = field(default_factory=list)

    def messages_in(self, lo: int, hi: int) -> list[Named]:
        """The messages with an offset in ``[lo, hi)``, oldest first."""
        return [u for u in self.units if u.lo < hi and lo < u.hi]


def pending_holes(tracker: OffsetTracker) -> list[tuple[int, int]]:
    """Offsets lost in the last context (no summary in it, no spill, not in it) that no compaction
    judged: the holes of a compaction that would summarize nothing and keep every summary."""
    ledger = tracker.ledger
    t = min((lo for lo, _ in tracker.units.values()), default=ledger.history_end)
    d = ledger.decide(summary_input=(t, t), summary_covers=(t, t), tail_start=t, saw=[], keeps=list(ledger.summaries))
    return [(lo, hi) for lo, hi in d.holes]


def named_units(tracker: OffsetTracker, names: Mapping[str, str]) -> list[Named]:
    """Every unit the tracker placed (it must remember them), with its text, in offset order."""
    return sorted((Named(lo, hi, key, names.get(key, "")) for key, (lo, hi) in tracker._all.items()),
                  key=lambda n: n.lo)
