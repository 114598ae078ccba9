"""What an importer gives the audit: one session's event log and the item at each offset."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Imported", "Named"]


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
