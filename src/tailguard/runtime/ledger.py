"""The session ledger: the guard an orchestrator calls at runtime.

A :class:`Ledger` records, in absolute offsets of one unit, what happens to a session's
history (appends, budget truncations, compactions and the summaries they create, summary
evictions, spills) and decides every compaction by the spec's clauses, exactly as the
generated checker decides the *equivalent case* (:meth:`Ledger.equivalent_case`; SPEC.md
sections 9.3 and 10) but in O(log k) in the number of recorded intervals. It writes
everything it records as the normative JSONL event log (:mod:`tailguard.runtime.eventlog`), each line
*before* the state changes, so a failed write leaves the ledger as it was, and no part of a failed
line can reach the log later (:mod:`tailguard.runtime.ledger_log`; ``durable=True`` fsyncs every line
but appends and truncations). One lock makes a ledger safe to share between threads, and the
log's order is the order in which the state changed. ``tailguard audit``
replays the log with the same core (:func:`tailguard.audit.replay.replay`), and :meth:`Ledger.from_log` rebuilds a
ledger from its own log to continue a session in a new process; both read it through one event
dispatch (:func:`tailguard.runtime.dispatch.apply_events`).

Summary lineage (spec 1.1): every compaction creates a summary with an id; it states which
summaries in the context its summarizer saw whole (``saw``, default: all) and which earlier
ones stay beside it (``keeps``, default: none). Every other summary leaves the context with its
coverage, so offsets only it covered are holes for the next compaction. The defaults give
spec 1.0's meaning exactly.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import os
import threading
import warnings
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from tailguard._generated.checker import SPEC_VERSION, Decision
from tailguard.base.args import check_ids, check_int, check_pair, count_problem
from tailguard.base.safeio import open_regular
from tailguard.base.vocab import Pair
from tailguard.runtime import snapshot as _snapshot, telemetry as _telemetry
from tailguard.runtime.dispatch import apply_events
from tailguard.runtime.eventlog import (
    Event,
    EventWriter,
    Refusal,
    Session,
    iter_events,
    torn_reason,
)
from tailguard.runtime.ledger_core import PROFILES, LedgerCore
from tailguard.runtime.ledger_explain import explain as _explain
from tailguard.runtime.ledger_log import LogFailedError, LogSink
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.runtime.snapshot import SnapshotError

__all__ = ["PROFILES", "Ledger", "LedgerCore", "LogFailedError", "TornLineWarning"]


class TornLineWarning(UserWarning):
    """The last line of a log was cut mid-write (a crash): it was ignored."""


class _SinkStream:
    """What :class:`~tailguard.runtime.eventlog.EventWriter` writes to: one whole line per ``write``."""

    __slots__ = ("sink",)

    def __init__(self, sink: LogSink) -> None:
        self.sink = sink

    def write(self, text: str) -> int:
        self.sink.write(text)
        return len(text)

    def flush(self) -> None:
        pass


def _writer(sink: LogSink) -> EventWriter:
    return EventWriter(_SinkStream(sink), flush=False)  # type: ignore[arg-type]


class Ledger:
    """A session's ledger: record what happens, decide compactions, leave an audit trail.

    >>> import io
    >>> log = io.StringIO()
    >>> led = Ledger(recovery_floor_span=12, unit="turns", log=log)
    >>> led.append(40); led.truncate(0, 8); led.append(8)
    >>> d = led.decide(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36)
    >>> d.decision, d.failed, d.holes
    ('refuse', ('no_hole',), ((0, 8),))
    >>> led.commit(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36)
    Traceback (most recent call last):
    ...
    tailguard.UnrecoverableCompactionError: compaction refused (no_hole); evicted \
offsets [0, 8) are unrecoverable: no_hole: offsets [0, 8) were truncated at line 3 and never \
summarized or spilled
    >>> led.spill(0, 8, handle="sha256:...")
    >>> led.commit(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36).decision
    'allow'
    >>> print(log.getvalue().splitlines()[2])
    {"event": "truncate", "range": [0, 8]}
    >>> led.summaries
    ('0',)
    """

    def __init__(
        self,
        recovery_floor_span: int,
        *,
        unit: str = "turns",
        floor_unit: str | None = None,
        truncator_unit: str | None = None,
        profile: str = "strict",
        log: TextIO | None = None,
        flush: bool = True,
        durable: bool = False,
        keep_history: bool = False,
        session_id: str | None = None,
        _header: bool = True,
    ) -> None:
        """Start a session. ``floor_unit``/``truncator_unit`` default to ``unit``.

        ``profile``: ``strict`` (default), ``partitioned`` (the summarizer sees the candidates,
        not the tail: LangChain, the OpenAI Agents SDK, OpenHands, langmem) or ``seed``.
        ``log``: a text stream that receives the JSONL event log (header first). Each event's
        line is written before the state changes; if the write fails the call raises, records
        nothing and every later recording call raises :class:`LogFailedError`
        (:mod:`tailguard.runtime.ledger_log`). Lines are written as they happen unless ``flush=False``
        (then in batches: a crash can lose the last ones). ``durable=True`` fsyncs every line
        but ``append`` and ``truncate`` before the call returns (a log with a file
        descriptor is needed). ``keep_history`` keeps the raw ranges so that
        :meth:`equivalent_case` works (memory then grows with the events).

        Threads: every method takes the ledger's lock, so one ledger can be shared; the log's
        line order is the order in which the state changed.
        """
        check_int(recovery_floor_span, "recovery_floor_span")
        fu = unit if floor_unit is None else floor_unit
        tu = unit if truncator_unit is None else truncator_unit
        for name, s in (("unit", unit), ("floor_unit", fu), ("truncator_unit", tu)):
            if not isinstance(s, str):
                raise TypeError(f"{name}: expected a unit name (string), got {s!r}")
        if profile not in PROFILES:
            raise ValueError(f"profile: unknown profile {profile!r}; known: {', '.join(PROFILES)}")
        if session_id is not None and not isinstance(session_id, str):
            raise TypeError(f"session_id: expected a string or None, got {session_id!r}")
        if log is not None and not callable(getattr(log, "write", None)):
            raise TypeError(f"log: expected a text stream (open the file first), got {log!r}")
        self.unit = unit
        self.session_id = session_id
        self.profile = profile
        self._core = LedgerCore(
            recovery_floor_span, fu, tu, keep_history=keep_history, track_origins=True
        )
        self._line = 1
        self._adoptable = True  # only the header and resume lines so far (SPEC.md 11.4)
        self.refusals = 0  #: refused commit attempts (each logged as a ``refusal`` line)
        #: ``(line, reason)`` of a torn last line that :meth:`from_log` ignored, else None
        self.torn_line: tuple[int, str] | None = None
        self._lock = threading.RLock()
        self._sink = LogSink(log, flush=flush, durable=durable) if log is not None else None
        self._writer = _writer(self._sink) if self._sink is not None else None
        if self._writer is not None and _header:
            self._writer.session(unit, recovery_floor_span, fu, tu, session_id)

    # -- properties --------------------------------------------------------------

    @property
    def history_end(self) -> int:
        """``n``: the offset the next appended unit gets."""
        return self._core.n

    @property
    def core(self) -> LedgerCore:
        return self._core

    @property
    def summaries(self) -> tuple[str, ...]:
        """Ids of the summaries in the context, oldest first."""
        with self._lock:
            return self._core.summaries.ids

    @property
    def next_summary_id(self) -> str:
        """The id the next committed compaction gets when it names none (its ordinal)."""
        with self._lock:
            return self._core.summaries.next_id

    # -- recording ---------------------------------------------------------------

    def _next_line(self) -> int:
        self._line += 1
        self._adoptable = False
        return self._line

    def _range(self, lo: int, hi: int) -> None:
        check_int(lo, "range[0]")
        check_int(hi, "range[1]")
        n = self._core.n
        if not 0 <= lo <= hi <= n:
            raise ValueError(f"range: [{lo}, {hi}) is not an interval inside the history [0, {n})")

    def append(self, count: int = 1) -> None:
        """Record ``count`` appended units (``count >= 0``)."""
        check_int(count, "count")
        problem = count_problem(count)
        if problem is not None:
            raise ValueError(f"{problem[0]}: {problem[1]}")
        with self._lock:
            if self._writer is not None:
                self._writer.append(count)
            self._core.append(count)
            self._next_line()

    def truncate(self, lo: int, hi: int) -> None:
        """Record a budget truncation of ``[lo, hi)`` (``0 <= lo <= hi <= history_end``)."""
        with self._lock:
            self._range(lo, hi)
            if self._writer is not None:
                self._writer.truncate(lo, hi)
            self._core.truncate(lo, hi, self._next_line())

    def spill(self, lo: int, hi: int, handle: str | None = None) -> None:
        """Record that ``[lo, hi)`` was written losslessly to durable storage."""
        if handle is not None and not isinstance(handle, str):
            raise TypeError(f"handle: expected a string, got {handle!r}")
        with self._lock:
            self._range(lo, hi)
            if self._writer is not None:
                self._writer.spill(lo, hi, handle)
            self._core.spill(lo, hi, self._next_line())
            if _telemetry.SINKS:
                _telemetry.emit("tailguard.spill", lambda: {**self._trace_base(),
                                                            "tailguard.spill.range": f"[{lo}, {hi})",
                                                            "tailguard.spill.handle": handle or ""})

    def evict_summary(self, summary: str) -> None:
        """Record that a budget stage evicted ``summary`` from the context (its coverage leaves)."""
        if not isinstance(summary, str):
            raise TypeError(f"summary: expected a summary id (string), got {summary!r}")
        with self._lock:
            problem = self._core.evict_problem(summary)
            if problem is not None:
                raise ValueError(f"{problem[0]}: {problem[1]}")
            if self._writer is not None:
                self._writer.evict_summary(summary)
            self._core.evict(summary, self._next_line())

    def _lineage(
        self, summary: str | None, saw: Sequence[str] | None, keeps: Sequence[str], *, new: bool
    ) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
        if summary is not None and not isinstance(summary, str):
            raise TypeError(f"summary: expected a summary id (string) or None, got {summary!r}")
        saw_t = None if saw is None else check_ids(saw, "saw")
        keeps_t = check_ids(keeps, "keeps")
        problem = self._core.lineage_problem(summary, saw_t, keeps_t, new=new)
        if problem is not None:
            raise ValueError(f"{problem[0]}: {problem[1]}")
        return saw_t, keeps_t

    def decide(
        self,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
        profile: str | None = None,
    ) -> Decision:
        """Decide a compaction without recording it.

        ``saw``: the summaries in the context its summarizer saw whole (None: all of them);
        ``keeps``: those that stay in the context beside the new summary. Inconsistent offsets
        are refused (``well_formed``), not raised; unknown summary ids raise ``ValueError``.
        """
        with self._lock:
            if self._sink is not None and self._sink.failure is not None:
                self._sink.check()  # a ledger whose log failed decides nothing until restored
            return self._decide(summary_input, summary_covers, tail_start, saw, keeps, profile)

    def _decide(
        self, i: Pair, c: Pair, tail_start: int, saw: Sequence[str] | None, keeps: Sequence[str],
        profile: str | None,
    ) -> Decision:
        if not (  # the common shape, checked inline: this is the hot path
            type(tail_start) is int
            and type(i) is tuple and len(i) == 2 and type(i[0]) is int and type(i[1]) is int
            and type(c) is tuple and len(c) == 2 and type(c[0]) is int and type(c[1]) is int
        ):
            i, c = check_pair(i, "summary_input"), check_pair(c, "summary_covers")
            check_int(tail_start, "tail_start")
        if saw is not None or keeps:
            saw, keeps = self._lineage(None, saw, keeps, new=False)
        p = self.profile if profile is None else profile
        return self._core.decide(p, tail_start, i, c, saw, keeps)

    def explain(
        self,
        decision: Decision,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
        profile: str | None = None,
    ) -> list[str]:
        """One sentence per failed clause of ``decision`` (for a compaction not yet recorded)."""
        with self._lock:
            return _explain(self._core, profile or self.profile, decision, tail_start, summary_input,
                        summary_covers, saw, keeps)

    def commit(
        self,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        summary: str | None = None,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
        override: str | None = None,
    ) -> Decision:
        """Decide and, if allowed, record the compaction (and log it).

        ``summary`` names the new summary (default: its ordinal, :attr:`next_summary_id`);
        ``saw`` and ``keeps`` as in :meth:`decide`. A refused compaction is logged as a
        ``refusal`` line, raises :class:`UnrecoverableCompactionError` (failed clauses and
        holes in the message and as attributes) and records nothing, unless ``override``
        gives a non-empty reason: then it is recorded and logged with an ``"override"``
        field, and ``tailguard audit`` still reports it as a violation.
        """
        if override is not None and (not isinstance(override, str) or not override.strip()):
            raise ValueError("override: give a non-empty reason to commit a refused compaction")
        i, c = check_pair(summary_input, "summary_input"), check_pair(summary_covers, "summary_covers")
        check_int(tail_start, "tail_start")
        with self._lock:
            saw_t, keeps_t = self._lineage(summary, saw, keeps, new=True)
            core = self._core
            decision = core.decide(self.profile, tail_start, i, c, saw_t, keeps_t)
            if not decision.allowed and override is None:
                sentences = _explain(core, self.profile, decision, tail_start, i, c, saw_t, keeps_t)
                self._log_refusal(decision, i, c, tail_start)
                raise UnrecoverableCompactionError.from_decision(decision, sentences)
            if self._writer is not None:
                self._writer.compact_lineage(i, c, tail_start,
                                             None if decision.allowed else override,
                                             summary, saw_t, keeps_t)
            core.compact(i, c, self._next_line(), summary=summary, saw=saw_t, keeps=keeps_t)
            if _telemetry.SINKS:
                _telemetry.emit("tailguard.compaction",
                                lambda: {**self._trace_decision(decision, i, c, tail_start),
                                         "tailguard.summary": summary or "", "tailguard.override": override or ""})
            return decision

    def log_refusal(
        self, decision: Decision, *, summary_input: Pair, summary_covers: Pair, tail_start: int
    ) -> None:
        """Log a refused attempt (a ``refusal`` line: counted by the audit, never coverage).

        :meth:`commit` does this itself when it refuses; call it when you decided with
        :meth:`decide` and will not commit.
        """
        if not isinstance(decision, Decision):
            raise TypeError(f"decision: expected a Decision, got {decision!r}")
        if decision.allowed:
            raise ValueError("log_refusal: the decision allows; only refusals are logged as such")
        i, c = check_pair(summary_input, "summary_input"), check_pair(summary_covers, "summary_covers")
        check_int(tail_start, "tail_start")
        with self._lock:
            self._log_refusal(decision, i, c, tail_start)

    def _log_refusal(self, decision: Decision, i: Pair, c: Pair, tail_start: int) -> None:
        if self._writer is not None:
            self._writer.refusal(i, c, tail_start, decision.failed, decision.holes)
        self.refusals += 1
        self._next_line()
        if _telemetry.SINKS:
            _telemetry.emit("tailguard.refusal", lambda: self._trace_decision(decision, i, c, tail_start))

    def _trace_base(self) -> dict[str, Any]:
        out: dict[str, Any] = {"tailguard.unit": self.unit, "tailguard.profile": self.profile,
                               "tailguard.history_end": self._core.n}
        if self.session_id is not None:
            out["tailguard.session_id"] = out["gen_ai.conversation.id"] = self.session_id
        return out

    def _trace_decision(self, decision: Decision, i: Pair, c: Pair, tail_start: int) -> dict[str, Any]:
        return {**self._trace_base(), "tailguard.decision": "allow" if decision.allowed else "refuse",
                "tailguard.failed": list(decision.failed), "tailguard.holes": _telemetry.ranges(decision.holes),
                "tailguard.summary_input": f"[{i[0]}, {i[1]})", "tailguard.summary_covers": f"[{c[0]}, {c[1]})",
                "tailguard.tail_start": tail_start,
                "tailguard.unverified": _telemetry.ranges(self._core.unverified)}

    def equivalent_case(
        self,
        *,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        saw: Sequence[str] | None = None,
        keeps: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The ``tailguard check`` case for this compaction now (``keep_history=True``)."""
        with self._lock:
            if saw is not None or keeps:
                saw, keeps = self._lineage(None, saw, keeps, new=False)
            return self._core.equivalent_case(tail_start, summary_input, summary_covers, saw, keeps)

    # -- surviving the process -----------------------------------------------------

    @classmethod
    def from_log(
        cls,
        source: str | os.PathLike[str] | Iterable[str | bytes],
        *,
        profile: str = "strict",
        log: TextIO | None = None,
        append: bool | None = None,
        flush: bool = True,
        durable: bool = False,
        keep_history: bool = False,
    ) -> Ledger:
        """Rebuild a ledger from its own event log and continue the session.

        ``source`` is a path, or the log's lines. Every event is re-recorded, with its line
        number as the tag diagnostics name; refusal lines are counted. A torn last line (a
        crash mid-write: no line end and not valid JSON) is ignored and reported, by a
        :class:`TornLineWarning` and in :attr:`torn_line`; a bad line anywhere else raises
        :class:`~tailguard.runtime.eventlog.EventLogError` naming it, as do ranges or ids the
        ledger's own calls would reject.

        Continuing: with a path, the ledger appends its next events to that file
        (``append=False`` to only read it), first cutting a torn last line off. With lines,
        pass ``log=`` to continue into a stream of your own. ``flush`` and ``durable`` as in
        the constructor.
        """
        torn: tuple[int, str] | None = None
        path: Path | None = None
        if isinstance(source, (str, os.PathLike)):
            path = Path(source)
            with open_regular(path) as f:  # a FIFO or device is an error, never a hang
                ident = os.fstat(f.fileno())
                data = f.read()
            lines: list[bytes] = data.splitlines(keepends=True)
            where = str(path)
        else:
            lines = [x.encode() if isinstance(x, str) else x for x in source]
            where = "<log>"
        keep = len(lines)
        if lines and (why := torn_reason(lines[-1])) is not None:  # the rule `tailguard audit` applies
            torn = (len(lines), f"the last line was cut mid-write and is ignored ({why})")
            keep = len(lines) - 1
        events = iter_events(lines[:keep], where)
        header = next(events)
        assert isinstance(header, Session)
        led = cls(header.recovery_floor_span, unit=header.unit, floor_unit=header.floor_unit,
                  truncator_unit=header.truncator_unit, profile=profile, keep_history=keep_history)
        led._rebuild_from(events, where)
        led._line = max(keep, 1)
        if torn is not None:
            led.torn_line = torn
            warnings.warn(f"{where}:{torn[0]}: {torn[1]}", TornLineWarning, stacklevel=2)
        if path is not None and (append is None or append):
            kept = sum(len(x) for x in lines[:keep])
            newline = bool(keep) and not lines[keep - 1].endswith((b"\n", b"\r"))
            # under the log's lock, and only if no other writer continued it since it was read
            led._sink = LogSink.resuming(path, len(data), (ident.st_dev, ident.st_ino), kept, newline,
                                         flush=flush, durable=durable)
            led._writer = _writer(led._sink)
            weakref.finalize(led, led._sink.close)  # its descriptor: held lines out, then closed
        elif log is not None:
            led._sink = LogSink(log, flush=flush, durable=durable)
            led._writer = _writer(led._sink)
        return led

    def _rebuild_from(self, events: Iterator[Event], where: str) -> None:
        for ev in apply_events(self._core, events, where, ranges_inside=True):
            if type(ev) is Refusal:
                self.refusals += 1

    # -- spec 1.2: adoption, snapshots ------------------------------------------------

    def adopt(self, count: int, *, reason: str, summary: str | None = None) -> str:
        """Record that offsets ``[0, count)`` predate the guard: a summary it did not make covers
        them, **unverified** (SPEC.md section 11). Only before any other event. Returns the
        adopted summary's id (default ``"adopted"``); it follows lineage like any summary, so if
        it later leaves the context unseen, those offsets are holes."""
        check_int(count, "count")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("reason: say why the history is adopted (a non-empty string)")
        if summary is not None and not isinstance(summary, str):
            raise TypeError(f"summary: expected a summary id (string) or None, got {summary!r}")
        sid = "adopted" if summary is None else summary
        with self._lock:
            problem = self._core.adopt_problem(count, sid)
            if problem is None and not self._adoptable:  # a line that changed nothing was written before
                problem = ("event", "adopt must come before every other event (it names what predates the guard)")
            if problem is not None:
                raise ValueError(f"{problem[0]}: {problem[1]}")
            if self._writer is not None:
                self._writer.adopt(count, reason, summary)
            self._core.adopt(count, sid, self._next_line())
            if _telemetry.SINKS:
                _telemetry.emit("tailguard.adopt", lambda: {
                    **self._trace_base(), "tailguard.summary": sid, "tailguard.adopt.reason": reason,
                    "tailguard.unverified": _telemetry.ranges(self._core.unverified)})
        return sid

    @property
    def unverified(self) -> tuple[Pair, ...]:
        """The offset ranges adopted from before the guard (unverified), merged."""
        with self._lock:
            return tuple(self._core.unverified)

    def snapshot(self) -> dict[str, Any]:
        """The ledger's state as a versioned JSON value (SPEC.md section 11).

        :meth:`restore` gives a ledger that decides every continuation exactly as this one.
        Its size is O(merged intervals + summaries in the context). With a log file, it
        records where the log ends (size and the last line's digest), so a restore can check
        that it continues that log and nothing else has been written since.
        """
        with self._lock:
            if self._sink is not None:
                self._sink.check()
                self._sink.flush()
            state = _snapshot.capture(self._core)
            value: dict[str, Any] = {
                "format": _snapshot.FORMAT, "version": _snapshot.VERSION, "spec": SPEC_VERSION,
                "session_id": self.session_id, "unit": self.unit, "profile": self.profile,
                "log": {"lines": self._line, "refusals": self.refusals,
                        **(self._sink.position() if self._sink is not None else {})},
                "state": state,
            }
            value["integrity"] = _snapshot.integrity(value)
            return value

    @classmethod
    def restore(
        cls,
        value: object,
        *,
        session_id: str | None = None,
        log: TextIO | None = None,
        path: str | os.PathLike[str] | None = None,
        flush: bool = True,
        durable: bool = False,
    ) -> Ledger:
        """A ledger from :meth:`snapshot`'s value that decides every continuation as the writer did.

        ``session_id``: when given, the snapshot must be of that session. ``path``: the
        session's log file, which must end exactly where the snapshot says (else another writer
        continued the session, or it was rotated or replaced); the ledger appends to it, first a
        ``resume`` line naming the snapshot. ``log``: a stream of your own to continue into
        (the ``resume`` line goes there). Raises :class:`SnapshotError` naming the field and why.
        """
        env = _snapshot.header_of(value)
        if env.get("integrity") != _snapshot.integrity(env):
            raise SnapshotError("integrity", "the snapshot does not match its integrity digest "
                                "(it was altered or damaged)")
        if session_id is not None and env.get("session_id") != session_id:
            raise SnapshotError("session_id", f"this is a snapshot of session {env.get('session_id')!r}, "
                                f"not {session_id!r}")
        if path is not None and log is not None:
            raise TypeError("restore: give path= or log=, not both")
        state = _snapshot.check_state(env.get("state"), "state")
        pos = env.get("log")
        if not isinstance(pos, dict) or type(pos.get("lines")) is not int or type(pos.get("refusals")) is not int:
            raise SnapshotError("log", "expected the log position {\"lines\": L, \"refusals\": R, ...}")
        profile = env.get("profile")
        if profile not in PROFILES:
            raise SnapshotError("profile", f"unknown profile {profile!r}")
        core = _snapshot.load(state, seed=True, line=pos["lines"])
        led = cls(core.F, unit=str(env.get("unit")), floor_unit=core.floor_unit,
                  truncator_unit=core.truncator_unit, profile=str(profile),
                  session_id=env.get("session_id"), _header=False)
        led._core = core
        led._line = pos["lines"]
        led.refusals = pos["refusals"]
        if path is not None:
            led._sink, refused = LogSink.continuing(path, pos, flush=flush, durable=durable)
            led._line += refused  # refusal lines past the snapshot: logged, no state to restore
            led.refusals += refused
            led._writer = _writer(led._sink)
            weakref.finalize(led, led._sink.close)
        elif log is not None:
            led._sink = LogSink(log, flush=flush, durable=durable)
            led._writer = _writer(led._sink)
        if led._writer is not None:
            led._writer.resume(state["digest"], led._line)
            led._next_line()
        # a snapshot of the header alone may still adopt: a resume line changes no state (SPEC.md 11.4)
        led._adoptable = pos["lines"] == 1 and led.refusals == 0
        return led

    def flush(self) -> None:
        """Write the lines ``flush=False`` kept back (a no-op otherwise)."""
        with self._lock:
            if self._sink is not None:
                self._sink.flush()

    def close(self) -> None:
        """Write what ``flush=False`` kept back (unless a write failed), and close the log file
        :meth:`from_log` opened (a stream you passed stays yours). After a failed write nothing
        is written, flushed or closed but that file: no failed line can reach the log."""
        with self._lock:
            if self._sink is not None:
                self._sink.close()
