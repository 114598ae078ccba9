"""Offsets by item key: what a framework's context holds, in the ledger's absolute offsets.

Frameworks name their items (a LangChain message id, a langmem message id, the position of
an OpenAI Agents SDK item in its store); the ledger counts units. :class:`OffsetTracker` gives
every item the next offsets when it first appears (one offset per message, or its token count),
keeps which items and which summaries are in the context, and turns a framework's compaction
(what it deletes, what its summarizer was shown whole, what it keeps) into the ledger's
arguments (:class:`Plan`). Items that vanish between two observations were evicted by someone
else: they are recorded as truncations (items) or ``evict_summary`` (summaries), never ignored.

Anything the tracker cannot place (an item back after it left, a new item before known ones,
a summary it never recorded, a cutoff that is not a partition) raises :class:`AdapterError`
before anything is recorded: fail closed.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from tailguard.base.args import is_int
from tailguard.base.errors import AdapterError as AdapterError
from tailguard.base.intervals import difference, interval, normalize
from tailguard.base.vocab import Pair
from tailguard.runtime.ledger import Ledger

__all__ = ["AdapterError", "Entry", "OffsetTracker", "Plan"]


class Entry(NamedTuple):
    """One item of a framework's context: its key, whether it is a summary, its size in units."""

    key: str
    summary: bool = False
    size: int = 1


@dataclass(frozen=True, slots=True)
class Plan:
    """A compaction in ledger terms, before it is decided.

    ``summary_input`` is the newest contiguous run of deleted units the summarizer saw whole
    that ends at the tail (empty at ``tail_start`` when there is none: a smaller input only
    refuses more, theorem T12); ``summary_covers`` equals it. ``deleted`` are the deleted
    units as maximal runs, ``unseen`` those of them outside ``summary_input``.
    """

    summary_input: Pair
    summary_covers: Pair
    tail_start: int
    saw: tuple[str, ...]
    keeps: tuple[str, ...]
    deleted: tuple[Pair, ...]
    unseen: tuple[Pair, ...]
    deleted_keys: tuple[str, ...]
    dropped_summaries: tuple[str, ...]

    def ledger_args(self) -> dict[str, object]:
        """Keyword arguments of :meth:`Ledger.decide` (and, with ``summary=``, of ``commit``)."""
        return {"summary_input": self.summary_input, "summary_covers": self.summary_covers,
                "tail_start": self.tail_start, "saw": list(self.saw), "keeps": list(self.keeps)}


class OffsetTracker:
    """Items in the context by key, their offsets, and the summaries beside them.

    ``remember=True`` (the default) also remembers every key that left the context (seeing one
    again is an error) and the offsets of every unit ever placed; ``remember=False`` keeps only
    what is in the context, so that :meth:`export` is the whole state, O(items in the context):
    an item back after it left is then a new item (new offsets) when it is the newest, and an
    item placed before known ones (an error) otherwise.
    """

    def __init__(self, ledger: Ledger, *, remember: bool = True) -> None:
        self.ledger = ledger
        self.remember = remember
        self._units: dict[str, Pair] = {}  # in the context, in offset order
        self._gone: set[str] = set()  # left the context; seeing one again is an error
        self._summaries: dict[str, str] = {}  # key -> ledger summary id, in the context
        self._gone_summaries: set[str] = set()
        self._all: dict[str, Pair] = {}  # every unit ever placed (for spill payloads)

    # -- the state as a JSON value ------------------------------------------------------

    def export(self) -> dict[str, Any]:
        """What is in the context: ``{"units": [[key, lo, hi], ...], "summaries": [[key, id], ...]}``
        (oldest first). With ``remember=False`` this is all the tracker holds."""
        return {"units": [[k, lo, hi] for k, (lo, hi) in self._units.items()],
                "summaries": [[k, s] for k, s in self._summaries.items()]}

    @classmethod
    def restore(cls, ledger: Ledger, value: object) -> OffsetTracker:
        """A tracker (``remember=False``) from :meth:`export`'s value, checked against ``ledger``:
        units in offset order inside its history, the same summaries in the context."""
        if not isinstance(value, dict) or not isinstance(value.get("units"), list) \
                or not isinstance(value.get("summaries"), list):
            raise AdapterError("tracker state: expected {\"units\": [...], \"summaries\": [...]}")
        out = cls(ledger, remember=False)
        at = 0
        for row in value["units"]:
            if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and row[0]
                    and all(type(x) is int for x in row[1:])):
                raise AdapterError(f"tracker state: bad unit {row!r}")
            key, lo, hi = row
            if lo < at or hi < lo or hi > ledger.history_end or key in out._units:
                raise AdapterError(f"tracker state: unit {key!r} at [{lo}, {hi}) is out of order or "
                                   f"past the history end {ledger.history_end}")
            out._units[key] = (lo, hi)
            at = hi
        for row in value["summaries"]:
            if not (isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) and x for x in row)):
                raise AdapterError(f"tracker state: bad summary {row!r}")
            out._summaries[row[0]] = row[1]
        if tuple(out._summaries.values()) != ledger.summaries:
            raise AdapterError(f"tracker state: summaries {list(out._summaries.values())} are not the "
                               f"ledger's {list(ledger.summaries)}")
        return out

    def adopt(self, key: str, count: int, *, reason: str) -> str:
        """Adopt offsets ``[0, count)`` as history the guard did not record (SPEC.md section
        11.4), covered by the summary ``key`` (which stays in the context). Only first."""
        if self._units or self._summaries or self.ledger.history_end:
            raise AdapterError("history can be adopted only before the guard recorded anything")
        sid = self.ledger.adopt(count, reason=reason)
        self._summaries[key] = sid
        return sid

    # -- what is in the context ---------------------------------------------------------

    def interval(self, key: str) -> Pair:
        """The offsets of a unit the tracker placed (in the context, or remembered)."""
        try:
            return self._units[key] if key in self._units else self._all[key]
        except KeyError:
            raise AdapterError(f"item {key!r} was never placed by the guard") from None

    @property
    def units(self) -> dict[str, Pair]:
        """Keys of the units in the context and their offsets, oldest first (a copy)."""
        return dict(self._units)

    @property
    def summaries(self) -> dict[str, str]:
        """Keys of the summaries in the context and their ledger ids (a copy)."""
        return dict(self._summaries)

    def observe(self, entries: Sequence[Entry]) -> None:
        """Bring the ledger up to date with the context as the framework holds it now.

        New units (unknown keys) are appended, in order, after every known one; units and
        summaries in the context that are no longer listed are recorded as evicted.
        """
        seen: set[str] = set()
        last_known = -1  # the highest offset of a known unit so far, in list order
        new: list[Entry] = []
        listed_summaries: set[str] = set()
        for i, e in enumerate(entries):
            if not isinstance(e.key, str) or not e.key:
                raise AdapterError(f"item {i}: expected a non-empty string key, got {e.key!r}")
            if e.key in seen:
                raise AdapterError(f"item {i}: key {e.key!r} appears twice in the context")
            seen.add(e.key)
            if e.summary:
                if e.key not in self._summaries:
                    why = ("left the context earlier" if e.key in self._gone_summaries
                           else "was not created by a compaction the guard recorded")
                    raise AdapterError(f"item {i}: summary {e.key!r} {why}; its coverage is unknown")
                listed_summaries.add(e.key)
                continue
            if not is_int(e.size) or e.size < 0:
                raise AdapterError(f"item {i}: size must be an integer >= 0, got {e.size!r}")
            if e.key in self._gone:
                raise AdapterError(f"item {i}: {e.key!r} left the context earlier and is back; "
                                   "the guard cannot give it its offsets again")
            if e.key in self._units:
                if new:
                    raise AdapterError(f"item {i}: {e.key!r} was placed before the new item "
                                       f"{new[0].key!r} that precedes it; offsets only grow")
                lo = self._units[e.key][0]
                if lo < last_known:
                    raise AdapterError(f"item {i}: {e.key!r} is out of offset order")
                last_known = lo
            else:
                new.append(e)
        vanished = [k for k in self._units if k not in seen]
        evicted = [k for k in self._summaries if k not in listed_summaries]
        for lo, hi in normalize(self._units[k] for k in vanished):
            self.ledger.truncate(lo, hi)
        for k in vanished:
            del self._units[k]
            self._forget(k)
        for k in evicted:
            self.ledger.evict_summary(self._summaries.pop(k))
            self._forget(k, summary=True)
        total = sum(e.size for e in new)
        if total:
            self.ledger.append(total)
        at = self.ledger.history_end - total
        for e in new:
            self._units[e.key] = (at, at + e.size)
            if self.remember:
                self._all[e.key] = (at, at + e.size)
            at += e.size

    def extend(self, entries: Sequence[Entry]) -> None:
        """Append new units after every known one, in O(len(entries)): what :meth:`observe` does
        with the context last observed followed by ``entries``, when they are units (no summary)
        whose keys the tracker never saw. Anything else raises :class:`AdapterError`."""
        seen: set[str] = set()
        for i, e in enumerate(entries):
            if not isinstance(e.key, str) or not e.key or e.key in seen or e.summary:
                raise AdapterError(f"item {i}: extend takes new units with distinct keys, got {e.key!r}")
            if e.key in self._units or e.key in self._gone or e.key in self._summaries:
                raise AdapterError(f"item {i}: {e.key!r} is not new")
            if not is_int(e.size) or e.size < 0:
                raise AdapterError(f"item {i}: size must be an integer >= 0, got {e.size!r}")
            seen.add(e.key)
        total = sum(e.size for e in entries)
        if total:
            self.ledger.append(total)
        at = self.ledger.history_end - total
        for e in entries:
            self._units[e.key] = (at, at + e.size)
            if self.remember:
                self._all[e.key] = (at, at + e.size)
            at += e.size

    def _forget(self, key: str, *, summary: bool = False) -> None:
        if self.remember:
            (self._gone_summaries if summary else self._gone).add(key)

    # -- a compaction -------------------------------------------------------------------

    def plan(self, *, deleted: Sequence[str], shown: Iterable[str], kept: Sequence[str]) -> Plan:
        """The compaction that deletes ``deleted``, was shown ``shown`` whole, keeps ``kept``.

        ``deleted`` and ``kept`` are keys of the context (units and summaries) and together
        must be all of it; every deleted unit must precede every kept one.
        """
        n = self.ledger.history_end
        d_units = [k for k in deleted if k not in self._summaries]
        k_units = [k for k in kept if k not in self._summaries]
        for k in (*d_units, *k_units):
            if k not in self._units:
                raise AdapterError(f"item {k!r} is not in the context the guard observed")
        listed = set(deleted) | set(kept)
        missing = [k for k in (*self._units, *self._summaries) if k not in listed]
        if missing or len(listed) != len(deleted) + len(kept):
            raise AdapterError(f"the compaction does not partition the context (unaccounted: {missing[:3]})")
        tail = min((self._units[k][0] for k in k_units), default=n)
        if any(self._units[k][1] > tail for k in d_units):
            raise AdapterError("the compaction deletes an item newer than one it keeps; "
                               "offsets cannot describe that cutoff")
        deleted_runs = tuple(normalize(self._units[k] for k in d_units))
        shown_set = set(shown)
        seen_runs = normalize(self._units[k] for k in d_units if k in shown_set)
        run = next((r for r in seen_runs if r[1] == tail), (tail, tail))
        saw = tuple(self._summaries[k] for k in deleted if k in self._summaries and k in shown_set)
        keeps = tuple(self._summaries[k] for k in kept if k in self._summaries)
        dropped = tuple(self._summaries[k] for k in deleted if k in self._summaries)
        return Plan(run, run, tail, saw, keeps, deleted_runs, tuple(difference(list(deleted_runs), interval(*run))),
                    tuple(deleted), dropped)

    def commit(self, plan: Plan, *, key: str, summary: str | None = None, override: str | None = None) -> str:
        """Record the planned compaction (the ledger decides again) and its summary ``key``.

        Returns the new summary's ledger id. A refusal raises and records nothing, unless
        ``override`` says why it is recorded anyway (an importer: the framework committed it).
        """
        if key in self._summaries or key in self._gone_summaries or key in self._all or key in self._units:
            raise AdapterError(f"summary key {key!r} is already in use")
        sid = summary if summary is not None else self.ledger.next_summary_id
        self.ledger.commit(summary_input=plan.summary_input, summary_covers=plan.summary_covers,
                           tail_start=plan.tail_start, summary=sid, saw=list(plan.saw),
                           keeps=list(plan.keeps), override=override)
        for k in plan.deleted_keys:
            if k in self._units:
                del self._units[k]
                self._forget(k)
        kept = set(plan.keeps)
        for k, s in list(self._summaries.items()):
            if s not in kept:
                del self._summaries[k]
                self._forget(k, summary=True)
        self._summaries[key] = sid
        return sid
