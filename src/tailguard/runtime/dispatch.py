"""The one event dispatch: apply an event log's events to a ledger core, in log order.

:meth:`tailguard.runtime.ledger.Ledger.from_log` (a ledger rebuilt from its own log),
:func:`tailguard.audit.replay.replay` (the audit's judgement) and, through ``replay``, the HTML
session view read a log with :func:`apply_events`, so every event means the same thing to each of
them (SPEC.md sections 9 and 10): an ``append`` goes through :meth:`LedgerCore.append`, a summary
id that names no summary in the context (``saw``, ``keeps``, ``evict_summary``) or a repeated new
id is an :class:`~tailguard.runtime.eventlog.EventLogError` naming the line and the field, a
negative count is one too, a ``refusal`` line changes no state, an ``adopt`` line (spec 1.2) must
come first and a ``resume`` line must continue the state the log reached (:func:`resume_problem`).

The hook: a compaction is judged against the state recorded *before* it. ``apply_events`` is a
generator that yields each :class:`~tailguard.runtime.eventlog.Compact` after checking its lineage
and before recording it: what the caller does before asking for the next event (the audit decides
and explains it, the session view reads the core) sees that state; the compaction is recorded
when the next event is asked for (it happened, whatever the verdict). Each
:class:`~tailguard.runtime.eventlog.Refusal` line is yielded as it is, for the caller to count,
and each :class:`~tailguard.runtime.eventlog.Adopt` line once it is recorded, for the caller to
report its unverified offsets.

Where the readers differ, they say so by argument: the ledger refuses a truncation or a spill
that is not an interval inside the history (``ranges_inside``), as its own calls would; the audit
records such ranges as they are and the strict profile refuses them with ``well_formed``.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tailguard.runtime import snapshot as _snapshot
from tailguard.runtime.eventlog import (
    Adopt,
    Append,
    Compact,
    Event,
    EventLogError,
    EvictSummary,
    Refusal,
    Resume,
    Spill,
    Truncate,
)
from tailguard.runtime.ledger_core import LedgerCore

__all__ = ["apply_events", "check_lineage", "resume_problem"]


def check_lineage(core: LedgerCore, ev: Compact, source: str) -> None:
    """Raise :class:`EventLogError` when ``ev``'s ``saw``/``keeps`` name a summary not in the
    context, or its new summary's id (given or ordinal) was already used."""
    problem = core.lineage_problem(ev.summary, ev.saw, ev.keeps, new=True)
    if problem is not None:
        raise EventLogError(source, ev.line, *problem)


def resume_problem(core: LedgerCore, ev: Resume) -> tuple[str, str] | None:
    """Why a ``resume`` line does not continue the state the log reached, or None (spec 1.2)."""
    if ev.at != ev.line - 1:
        return ("line", f"the snapshot restored here was taken at line {ev.at}, but the log reached "
                f"line {ev.line - 1}: lines were written in between by another writer")
    digest = _snapshot.state_digest(core)
    if ev.snapshot != digest:
        return ("snapshot", f"the state restored here ({ev.snapshot}) is not the state the log "
                f"reached at line {ev.at} ({digest})")
    return None


_ADOPT_FIRST = "adopt must come before every other event (it names what predates the guard)"


def _outside(core: LedgerCore, ev: Truncate | Spill, source: str) -> EventLogError:
    return EventLogError(source, ev.line, "range", f"[{ev.lo}, {ev.hi}) is not an interval inside "
                         f"the history [0, {core.n})")


def apply_events(
    core: LedgerCore, events: Iterable[Event], source: str, *, ranges_inside: bool = False
) -> Iterator[Compact | Refusal | Adopt]:
    """Apply ``events`` (the lines after the session header) to ``core``, each tagged with its
    line; yield each compaction before recording it, each refusal line, and each adoption after
    recording it (module docstring).

    ``source`` names the log in errors. ``ranges_inside``: refuse a truncation or spill that is
    not ``0 <= lo <= hi <= n`` (the ledger's rule) instead of recording it as it is (the
    audit's). A second session header raises ``ValueError`` (``iter_events`` never yields one).
    """
    append, truncate, spill = core.append, core.truncate, core.spill
    first = True  # an adopt line must be the first event (SPEC.md 11.4), even after one that changed nothing
    for ev in events:
        if first and type(ev) is not Resume:  # a resume line changes no state: adopt may follow it
            first = False
            if type(ev) is Adopt:
                sid = ev.summary or "adopted"
                problem = core.adopt_problem(ev.hi, sid)
                if problem is not None:
                    raise EventLogError(source, ev.line, *problem)
                core.adopt(ev.hi, sid, ev.line)
                yield ev
                continue
        if type(ev) is Append:
            if ev.amount < 0:  # SPEC.md 9.4, as the reader and Ledger.append: offsets never repeat
                raise EventLogError(source, ev.line, "count", f"expected a count >= 0, got {ev.amount}")
            append(ev.amount)
        elif type(ev) is Truncate:
            if ranges_inside and not 0 <= ev.lo <= ev.hi <= core.n:
                raise _outside(core, ev, source)
            truncate(ev.lo, ev.hi, ev.line)
        elif type(ev) is Spill:
            if ranges_inside and not 0 <= ev.lo <= ev.hi <= core.n:
                raise _outside(core, ev, source)
            spill(ev.lo, ev.hi, ev.line)
        elif type(ev) is Compact:
            check_lineage(core, ev, source)
            yield ev  # the hook: judged against the state before it
            core.compact(ev.summary_input, ev.summary_covers, ev.line, summary=ev.summary, saw=ev.saw,
                         keeps=ev.keeps)
        elif type(ev) is EvictSummary:
            problem = core.evict_problem(ev.summary)
            if problem is not None:
                raise EventLogError(source, ev.line, *problem)
            core.evict(ev.summary, ev.line)
        elif type(ev) is Refusal:
            yield ev
        elif type(ev) is Adopt:  # not the first event
            raise EventLogError(source, ev.line, "event", _ADOPT_FIRST)
        elif type(ev) is Resume:
            problem = resume_problem(core, ev)
            if problem is not None:
                raise EventLogError(source, ev.line, *problem)
        else:
            raise ValueError(f"line {ev.line}: a second session header")
