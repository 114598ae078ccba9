"""The per-session audit: one log in, one record out; every engine calls this and only this.

A record is a plain JSON-ready dict (key order fixed, so JSONL output is byte-stable):

- ``source``: the path or URL as given (a glob's matches in the form the glob was given);
- ``events``: events read, the session header included (up to the error, if any);
- ``compactions``: compactions judged; ``refusals``: how many of them the audit refuses (the
  single-file JSON's ``violations``); ``logged_refusals``: ``refusal`` lines the guard logged
  (attempts it refused and that were not committed: the single-file JSON's ``refusals``);
- ``holes``: one entry per failed clause of each refused compaction: ``line`` (the compaction's
  log line), ``clause``, ``ranges`` (the lost offsets ``[lo, hi)`` for ``no_hole``, else empty),
  ``truncated_at`` (for ``no_hole``: the log lines of the truncations that evicted those
  offsets while nothing else held them, sorted; empty when a lost summary is the cause) and
  ``why``, the single-file text audit's sentence, which names the lines that truncated
  the offsets or the lost summary that covered them (in full at every compaction, where the
  text audit says ``still open since line L`` for a hole it already explained);
- ``unverified`` (spec 1.2): the offset ranges ``[lo, hi)`` the guard adopted from before it
  came (``adopt`` lines): neither verified nor counted as lost, their own category;
- ``error``: null, or why the log is unusable, as ``FILE:LINE: field: reason`` (exactly the
  single-file audit's message; line 0 when the file as a whole could not be read);
- ``warning``: null, or the single-file audit's warning about a torn last line (a writer killed
  mid-line): as there, the lines before it are judged and the session is not unusable, unless
  the audit runs with ``--strict-tail`` (then it is the ``error``).

A clean session is decided in one fast pass; a session with a refusal is replayed a second
time with the explanations on (tracking which line truncated what costs about half again).
Standard library only (fsspec only for URL sources, through :mod:`tailguard.audit.fleet.sources`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypedDict

from tailguard.audit.fleet.sources import Item, open_lines
from tailguard.audit.replay import Verdict, replay
from tailguard.base.errors import ImportSourceError
from tailguard.base.vocab import NO_HOLE
from tailguard.runtime.eventlog import Adopt, Event, EventLogError, Refusal, iter_events

__all__ = ["Hole", "Record", "audit_batch", "audit_lines", "audit_source", "error_record"]


class Hole(TypedDict):
    line: int
    clause: str
    ranges: list[list[int]]
    truncated_at: list[int]
    why: str


class Record(TypedDict):
    source: str
    events: int
    compactions: int
    refusals: int
    logged_refusals: int
    holes: list[Hole]
    unverified: list[list[int]]
    error: str | None
    warning: str | None


def _counted(events: Iterator[Event], box: list[int]) -> Iterator[Event]:
    n = 0
    try:
        for n, ev in enumerate(events, 1):  # noqa: B007 - n is read after the loop
            yield ev
    finally:
        box[0] = n


def audit_lines(source: str, lines: Iterable[bytes], profile: str, *, explain: bool,
                strict_tail: bool = False) -> Record:
    """Audit one session's lines (pure: the same lines give the same record).

    An unusable log gives ``error`` (``source:line: field: reason``) and the counts read
    before it. Without ``explain`` each hole's ``why`` is empty (:func:`audit_source` replays
    a session with refusals with it on). I/O errors from ``lines`` propagate.
    """
    box = [0]
    compactions = refusals = logged = 0
    holes: list[Hole] = []
    unverified: list[list[int]] = []
    error: str | None = None
    torn: list[str] = []

    def on_torn(line: int, reason: str) -> None:  # the single-file audit's rule and words
        if strict_tail:
            raise EventLogError(source, line, "line", f"torn last line (no line end; {reason}); "
                                "without --strict-tail the lines before it are judged")
        torn.append(f"{source}:{line}: warning: torn last line ignored (no line end; {reason}); "
                    f"judged lines 1 to {line - 1} (--strict-tail makes this an error)")

    results = replay(_counted(iter_events(lines, source, on_torn=on_torn), box), profile=profile,
                     explain=explain, source=source)
    try:
        next(results)  # the session header
        for v in results:
            if type(v) is Refusal:
                logged += 1
                continue
            if type(v) is Adopt:
                if v.hi > 0:
                    unverified.append([0, v.hi])
                continue
            assert isinstance(v, Verdict)
            compactions += 1
            d = v.decision
            if d.allowed:
                continue
            refusals += 1
            sentences = dict(s.split(": ", 1) for s in v.explanation)
            for clause in d.failed:
                hole = clause == NO_HOLE
                ranges = [list(h) for h in d.holes] if hole else []
                holes.append({"line": v.line, "clause": clause, "ranges": ranges,
                              "truncated_at": list(v.truncated_at) if hole else [],
                              "why": sentences.get(clause, "")})
    except EventLogError as exc:
        error = str(exc)
    return {"source": source, "events": box[0], "compactions": compactions, "refusals": refusals,
            "logged_refusals": logged, "holes": holes, "unverified": unverified, "error": error,
            "warning": torn[0] if torn and error is None else None}


def error_record(source: str, error: str) -> Record:
    """The record of a session that could not be read or audited at all."""
    return {"source": source, "events": 0, "compactions": 0, "refusals": 0, "logged_refusals": 0,
            "holes": [], "unverified": [], "error": error, "warning": None}


def audit_source(item: Item, profile: str) -> Record:
    """Open ``item`` and audit it; never raises for a bad, missing or unreadable log.

    A session with a refusal is audited twice, the second time with the explanations on.
    """
    source = item.source
    if item.error is not None:  # the expansion could not read it, or chose not to follow it
        return error_record(source, item.error)
    if item.judge is not None:  # audit --from: the import's ledger judges (same record, no log replayed)
        try:
            judged: Record | None = item.judge(item.locator, profile)
        except ImportSourceError as exc:
            return error_record(source, str(exc))
        except OSError as exc:
            return error_record(source, f"{source}:0: file: cannot read ({exc.strerror or exc})")
        except Exception as exc:  # a fleet never stops for one log (docs/fleet.md)
            return error_record(source, f"{source}:0: file: cannot audit ({type(exc).__name__}: {exc})")
        if judged is not None:
            return judged
    explain = False
    while True:
        try:
            with (item.opener or open_lines)(item.locator) as lines:
                record = audit_lines(source, lines, profile, explain=explain, strict_tail=item.strict_tail)
        except ImportSourceError as exc:  # audit --from: what the framework persisted is unusable
            return error_record(source, str(exc))
        except OSError as exc:
            return error_record(source, f"{source}:0: file: cannot read ({exc.strerror or exc})")
        except Exception as exc:  # a fleet never stops for one log (docs/fleet.md)
            return error_record(source, f"{source}:0: file: cannot audit ({type(exc).__name__}: {exc})")
        if not record["refusals"] or explain:
            return record
        explain = True


def audit_batch(items: Sequence[Item], profile: str) -> list[Record]:
    """One task: a few whole sessions, audited one after the other (never split across tasks)."""
    return [audit_source(item, profile) for item in items]
