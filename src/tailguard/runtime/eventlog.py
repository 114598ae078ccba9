"""The normative JSONL event log: read it (streaming, line-numbered errors), write it.

Format (``spec/SPEC.md, section 9``, schema ``spec/eventlog.schema.json``): UTF-8 JSON, one
object per line; line 1 is the session header, every later line one event:

- ``{"event": "session", "unit": U, "recovery_floor_span": F,``
  ``"floor_unit": U1, "truncator_unit": U2}``
- ``{"event": "append", "count": k}`` (``count`` defaults to 1)
- ``{"event": "truncate", "range": [lo, hi]}``
- ``{"event": "compact", "summary_input": [a, b], "summary_covers": [c, d], "tail_start": t}``
  (optional ``"override": "reason"``: committed although refused; spec 1.1 lineage, optional:
  ``"summary": ID``, ``"saw": [ID, ...]``, ``"keeps": [ID, ...]``)
- ``{"event": "spill", "range": [lo, hi], "handle": "..."}`` (``handle`` optional)
- ``{"event": "evict_summary", "summary": ID}`` (spec 1.1: a budget stage evicted a summary)
- ``{"event": "refusal", "summary_input": ..., "summary_covers": ..., "tail_start": t,``
  ``"failed": [...], "holes": [...]}`` (spec 1.1: an attempted compaction the guard refused and
  that was not committed; counted, never coverage)

Extra keys are ignored. Blank lines are skipped. Offsets are JSON integers of at most
:data:`~tailguard.base.jsonstrict.MAX_INT_DIGITS` digits; integers that are inconsistent
(negative, reversed, past the history end) are not input errors: the strict profile refuses
them with ``well_formed``. A negative ``count`` is an input error (SPEC.md 9.4): it would hand
out offsets again. Anything else unusable raises :class:`EventLogError` naming the
line and the field: a key repeated in one object, a line over
:data:`~tailguard.base.jsonstrict.MAX_LINE_BYTES`, nesting deeper than
:data:`~tailguard.base.jsonstrict.MAX_DEPTH` (:mod:`tailguard.base.jsonstrict`, SPEC.md "Limits").

A **torn last line** (no line end and not valid JSON: a writer killed mid-line) is what
:func:`torn_reason` recognizes; :func:`iter_events` reports it through ``on_torn`` and stops
there, so that the intact prefix can be judged, or, without ``on_torn``, raises like any bad line.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, NamedTuple, TextIO

from tailguard.base import jsonstrict
from tailguard.base.args import count_problem, ids_problem
from tailguard.base.errors import EventLogError as EventLogError
from tailguard.base.vocab import Pair

__all__ = [
    "Adopt",
    "Append",
    "Compact",
    "Event",
    "EventLogError",
    "EventWriter",
    "EvictSummary",
    "Refusal",
    "Resume",
    "Session",
    "Spill",
    "Truncate",
    "bounded_lines",
    "iter_events",
    "parse_event",
    "torn_reason",
]

EVENT_KINDS = ("session", "append", "truncate", "compact", "spill", "evict_summary", "refusal", "adopt", "resume")


class Session(NamedTuple):
    line: int
    unit: str
    recovery_floor_span: int
    floor_unit: str
    truncator_unit: str
    session_id: str | None = None  # spec 1.2: the session this log is of


class Append(NamedTuple):
    line: int
    amount: int  # the ``count`` field (``count`` would shadow ``tuple.count``)


class Truncate(NamedTuple):
    line: int
    lo: int
    hi: int


class Compact(NamedTuple):
    line: int
    summary_input: Pair
    summary_covers: Pair
    tail_start: int
    override: str | None
    summary: str | None = None  # the new summary's id; None: its ordinal among compactions
    saw: tuple[str, ...] | None = None  # summaries seen whole; None: every one in the context
    keeps: tuple[str, ...] = ()  # earlier summaries that stay in the context beside the new one


class Spill(NamedTuple):
    line: int
    lo: int
    hi: int
    handle: str | None


class EvictSummary(NamedTuple):
    line: int
    summary: str


class Refusal(NamedTuple):
    """An attempted compaction that the guard refused and that was not committed."""

    line: int
    summary_input: Pair
    summary_covers: Pair
    tail_start: int
    failed: tuple[str, ...]
    holes: tuple[Pair, ...]


class Adopt(NamedTuple):
    """Spec 1.2: offsets ``[0, hi)`` predate the guard (unverified); an adopted summary covers them."""

    line: int
    hi: int
    reason: str
    summary: str | None  # the adopted summary's id; None: ``"adopted"``


class Resume(NamedTuple):
    """Spec 1.2: a process continued the session from a snapshot of the state at line ``at``."""

    line: int
    snapshot: str  # the state digest of the snapshot restored (``sha256:<hex>``)
    at: int  # the number of log lines that state reflects


Event = Session | Append | Truncate | Compact | Spill | EvictSummary | Refusal | Adopt | Resume


class _Bad(Exception):
    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason


def _describe(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, (bytes, bytearray)) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(obj: dict[str, Any], field: str) -> int:
    if field not in obj:
        raise _Bad(field, "missing field")
    value = obj[field]
    if type(value) is not int:
        raise _Bad(field, f"expected an integer, got {_describe(value)}")
    return value


def _str(obj: dict[str, Any], field: str) -> str:
    if field not in obj:
        raise _Bad(field, "missing field")
    value = obj[field]
    if not isinstance(value, str):
        raise _Bad(field, f"expected a string, got {_describe(value)}")
    return value


def _ids(obj: dict[str, Any], field: str, *, null: bool) -> tuple[str, ...] | None:
    """A list of summary ids; absent is None (``null`` also, when allowed)."""
    if field not in obj or (null and obj[field] is None):
        return None
    value = obj[field]
    if type(value) is not list:
        what = "a list of summary ids (strings)" + (" or null" if null else "")
        raise _Bad(field, f"expected {what}, got {_describe(value)}")
    problem = ids_problem(value, field, _describe)
    if problem is not None:
        raise _Bad(*problem)
    return tuple(value)


def _opt_str(obj: dict[str, Any], field: str) -> str | None:
    value = obj.get(field)
    if value is not None and not isinstance(value, str):
        raise _Bad(field, f"expected a string, got {_describe(value)}")
    return value


def _pairs(obj: dict[str, Any], field: str) -> tuple[Pair, ...]:
    value = obj.get(field, [])
    if type(value) is not list:
        raise _Bad(field, f"expected a list of [lo, hi] pairs, got {_describe(value)}")
    return tuple(_pair({f"{field}[{i}]": v}, f"{field}[{i}]") for i, v in enumerate(value))


def _pair(obj: dict[str, Any], field: str) -> Pair:
    value = obj.get(field)
    if type(value) is list and len(value) == 2 and type(value[0]) is int and type(value[1]) is int:
        return (value[0], value[1])
    if field not in obj:
        raise _Bad(field, "missing field")
    if not isinstance(value, list) or len(value) != 2:
        raise _Bad(field, f"expected a pair [lo, hi] of integers, got {_describe(value)}")
    for i in (0, 1):
        if type(value[i]) is not int:
            raise _Bad(f"{field}[{i}]", f"expected an integer, got {_describe(value[i])}")
    raise AssertionError("unreachable")  # pragma: no cover


def parse_event(obj: object, line: int, *, first: bool) -> Event:
    """Check one decoded line; ``first`` says whether it is line 1 (the header).

    Raises :class:`EventLogError` (source ``"<event>"``) naming the field at fault.
    """
    try:
        return _parse(obj, line, first)
    except _Bad as bad:
        raise EventLogError("<event>", line, bad.field, bad.reason) from None


def _parse(obj: object, line: int, first: bool) -> Event:
    if type(obj) is not dict:
        raise _Bad("event", f"expected a JSON object, got {_describe(obj)}")
    kind = obj.get("event")
    if first:
        if kind != "session":
            if "event" not in obj:
                raise _Bad("event", "missing field; line 1 must be the session header")
            raise _Bad("event", f"expected the session header first, got {_describe(kind)}")
        return Session(
            line,
            _str(obj, "unit"),
            _int(obj, "recovery_floor_span"),
            _str(obj, "floor_unit"),
            _str(obj, "truncator_unit"),
            _opt_str(obj, "session_id"),
        )
    if kind == "append":
        count = obj.get("count", 1)
        if type(count) is not int:
            raise _Bad("count", f"expected an integer, got {_describe(count)}")
        problem = count_problem(count)
        if problem is not None:  # offsets are permanent: a negative count would hand them out again
            raise _Bad(*problem)
        return Append(line, count)
    if kind == "truncate":
        lo, hi = _pair(obj, "range")
        return Truncate(line, lo, hi)
    if kind == "compact":
        override = _opt_str(obj, "override")
        return Compact(
            line,
            _pair(obj, "summary_input"),
            _pair(obj, "summary_covers"),
            _int(obj, "tail_start"),
            override,
            _opt_str(obj, "summary"),
            _ids(obj, "saw", null=True),
            _ids(obj, "keeps", null=True) or (),
        )
    if kind == "evict_summary":
        return EvictSummary(line, _str(obj, "summary"))
    if kind == "adopt":
        lo, hi = _pair(obj, "range")
        if lo != 0 or hi < 0:
            raise _Bad("range", f"expected [0, a] with a >= 0 (what predates the guard), got [{lo}, {hi}]")
        return Adopt(line, hi, _str(obj, "reason"), _opt_str(obj, "summary"))
    if kind == "resume":
        at = _int(obj, "line")
        if at < 1:
            raise _Bad("line", f"expected a line number >= 1, got {at}")
        return Resume(line, _str(obj, "snapshot"), at)
    if kind == "refusal":
        failed = obj.get("failed", [])
        if type(failed) is not list or not all(isinstance(f, str) for f in failed):
            raise _Bad("failed", f"expected a list of clause ids (strings), got {_describe(failed)}")
        return Refusal(
            line,
            _pair(obj, "summary_input"),
            _pair(obj, "summary_covers"),
            _int(obj, "tail_start"),
            tuple(failed),
            _pairs(obj, "holes"),
        )
    if kind == "spill":
        lo, hi = _pair(obj, "range")
        handle = obj.get("handle")
        if handle is not None and not isinstance(handle, str):
            raise _Bad("handle", f"expected a string, got {_describe(handle)}")
        return Spill(line, lo, hi, handle)
    if "event" not in obj:
        raise _Bad("event", "missing field")
    if kind == "session":
        raise _Bad("event", "a second session header; only line 1 may be one")
    raise _Bad(
        "event",
        f"unknown event kind {_describe(kind)}; known: {', '.join(EVENT_KINDS[1:])}",
    )


def torn_reason(raw: bytes | str) -> str | None:
    """Why ``raw`` is a torn last line (no line end and not valid JSON), or None if it is not.

    The rule :meth:`tailguard.runtime.ledger.Ledger.from_log` and ``tailguard audit`` share: a line
    that ends with ``\\n`` or ``\\r`` is complete, and so is one that decodes (a valid last line
    without its line end); a repeated key, an over-limit value or line, and NUL bytes (zeros a
    crash or a preallocating file system leaves, never a writer's cut line) are not a tear but an error.
    """
    ends = (b"\n", b"\r") if isinstance(raw, bytes) else ("\n", "\r")
    if raw.endswith(ends):  # type: ignore[arg-type]
        return None
    if len(raw) > jsonstrict.MAX_LINE_BYTES:  # over the limit is an error wherever it is (audit, from_log)
        return None
    if (b"\x00" if isinstance(raw, bytes) else "\x00") in raw:  # type: ignore[operator]
        return None  # zeros are never a writer's cut line: damage, an error (issue 30)
    try:
        text = raw.decode() if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        return f"cut inside a UTF-8 character at byte {exc.start + 1}"
    if not text.strip(" \t\r\n"):
        return None
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        sep = " " if exc.msg.endswith(" at") else ", "  # "starting at column 11", not "at, column"
        return f"not valid JSON: {exc.msg}{sep}column {exc.colno}"
    except (ValueError, RecursionError):
        return None
    return None


def bounded_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of a binary stream, each read at most :data:`~tailguard.base.jsonstrict.MAX_LINE_BYTES`
    plus one bytes at a time, so that a line over the limit is never read whole."""
    readline = stream.readline
    limit = jsonstrict.MAX_LINE_BYTES + 1
    while True:
        raw = readline(limit)
        if not raw:
            return
        yield raw


def iter_events(
    lines: Iterable[bytes | str], source: str = "<trace>",
    on_torn: Callable[[int, str], None] | None = None,
) -> Iterator[Event]:
    """Decode and check a log line by line; the first event yielded is the :class:`Session`.

    Streams: holds one line at a time. Raises :class:`EventLogError` at the first unusable
    line (including a log with no header at all). With ``on_torn``, a torn last line
    (:func:`torn_reason`) is not an error: ``on_torn(line, reason)`` is called and the
    iteration ends with the intact prefix.
    """
    scan = _SCAN  # the strict decoder's scanner, minus the wrappers loads adds per call
    first = True
    lineno = 0
    max_line = jsonstrict.MAX_LINE_BYTES
    for lineno, raw in enumerate(lines, 1):
        if len(raw) > max_line:
            reason = jsonstrict.too_long(len(raw), max_line, "a line") if isinstance(raw, str) else (
                f"a line over the limit of {max_line:,} bytes")
            raise EventLogError(source, lineno, "line", reason)
        try:
            text = raw.decode() if isinstance(raw, bytes) else raw
            if len(text) > _PRECHECK_FROM and (
                    text.count("[") + text.count("{") > _MAX_DEPTH or len(text) > _MAX_DIGITS):
                jsonstrict.precheck(text)  # integer length and depth, before decoding
            try:
                obj, end = scan(text, 0)
                if end != len(text) and text[end:] not in _TRAILERS:
                    obj = _strict_loads(text)  # leaves the verdict (and message) to the decoder
            except StopIteration:
                obj = _strict_loads(text)
        except jsonstrict.DuplicateKeyError as dup:
            raise EventLogError(source, lineno, dup.key or "line", f"{dup.reason} in one object") from None
        except UnicodeDecodeError as exc:
            if on_torn is not None and (why := torn_reason(raw)) is not None:
                on_torn(lineno, why)
                break
            reason = f"not valid UTF-8 (byte {exc.start + 1}: {exc.reason})"
            raise EventLogError(source, lineno, "line", reason) from None
        except jsonstrict.JSONInputError as exc:  # over a limit
            raise EventLogError(source, lineno, "line", exc.reason) from None
        except ValueError as exc:  # JSONDecodeError, NaN/Infinity, or an integer too long to convert
            if not text.strip(" \t\r\n"):  # a blank line (JSON whitespace only)
                continue
            if on_torn is not None and (why := torn_reason(raw)) is not None:
                on_torn(lineno, why)
                break
            reason = _json_reason(exc)
            raise EventLogError(source, lineno, "line", f"not valid JSON ({reason})") from None
        except RecursionError:
            raise EventLogError(source, lineno, "line", "JSON nested too deeply") from None
        if not first and type(obj) is dict and obj.get("event") == "append":
            count = obj.get("count", 1)
            if type(count) is int and count >= 0:  # the common line, checked inline
                yield Append(lineno, count)
                continue
        try:
            yield _parse(obj, lineno, first)
        except _Bad as bad:
            raise EventLogError(source, lineno, bad.field, bad.reason) from None
        first = False
    if first:
        raise EventLogError(source, max(lineno, 1), "event", "missing session header (empty log)")


_strict_loads = jsonstrict.decode_unchecked


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        try:  # re-decode without the line ending so a column past the end reads as such
            json.loads(exc.doc.rstrip("\r\n"))
        except json.JSONDecodeError as bare:
            exc = bare
        except ValueError:
            pass
        if "\x00" in exc.doc:  # a preallocated or crash-damaged file: say so, not "Expecting value"
            return (f"NUL bytes from column {exc.doc.index(chr(0)) + 1}: zeros, not JSON; a crash or a "
                    "preallocating file system leaves them where lines were never written")
        return f"{exc.msg}{at_column(exc.msg, exc.pos)}"
    return str(exc)


def at_column(msg: str, pos: int) -> str:
    """`` at column N`` after a decoder's message (`` column N`` after one ending in "at")."""
    return f" column {pos + 1}" if msg.endswith(" at") else f" at column {pos + 1}"


_SCAN: Callable[[str, int], tuple[Any, int]] = jsonstrict.scanner()
_MAX_DEPTH, _MAX_DIGITS = jsonstrict.MAX_DEPTH, jsonstrict.MAX_INT_DIGITS
_PRECHECK_FROM = min(2 * _MAX_DEPTH, _MAX_DIGITS)  # a shorter line is within both limits
_TRAILERS = frozenset(("\n", "\r\n", "\r", " \n", " "))  # json.loads' whitespace


class EventWriter:
    """Write the event log to a text stream, one JSON object per line.

    >>> import io
    >>> out = io.StringIO(); w = EventWriter(out)
    >>> w.append(3); w.spill(0, 2, None)
    >>> print(out.getvalue(), end="")
    {"event": "append", "count": 3}
    {"event": "spill", "range": [0, 2]}
    """

    def __init__(self, stream: TextIO, *, flush: bool = True) -> None:
        self._stream = stream
        self._flush = flush

    def _write(self, obj: dict[str, Any]) -> None:
        self._stream.write(json.dumps(obj) + "\n")
        if self._flush:
            self._stream.flush()

    def session(
        self, unit: str, recovery_floor_span: int, floor_unit: str, truncator_unit: str,
        session_id: str | None = None,
    ) -> None:
        obj: dict[str, Any] = {
            "event": "session",
            "unit": unit,
            "recovery_floor_span": recovery_floor_span,
            "floor_unit": floor_unit,
            "truncator_unit": truncator_unit,
        }
        if session_id is not None:
            obj["session_id"] = session_id
        self._write(obj)

    def append(self, count: int = 1) -> None:
        self._write({"event": "append", "count": count})

    def truncate(self, lo: int, hi: int) -> None:
        self._write({"event": "truncate", "range": [lo, hi]})

    def compact(
        self,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        override: str | None = None,
    ) -> None:
        obj: dict[str, Any] = {
            "event": "compact",
            "summary_input": list(summary_input),
            "summary_covers": list(summary_covers),
            "tail_start": tail_start,
        }
        if override is not None:
            obj["override"] = override
        self._write(obj)

    def compact_lineage(
        self,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        override: str | None,
        summary: str | None,
        saw: tuple[str, ...] | None,
        keeps: tuple[str, ...],
    ) -> None:
        """A ``compact`` line with the spec 1.1 lineage keys (only those that differ from the default)."""
        obj: dict[str, Any] = {
            "event": "compact",
            "summary_input": list(summary_input),
            "summary_covers": list(summary_covers),
            "tail_start": tail_start,
        }
        if override is not None:
            obj["override"] = override
        if summary is not None:
            obj["summary"] = summary
        if saw is not None:
            obj["saw"] = list(saw)
        if keeps:
            obj["keeps"] = list(keeps)
        self._write(obj)

    def evict_summary(self, summary: str) -> None:
        self._write({"event": "evict_summary", "summary": summary})

    def refusal(
        self,
        summary_input: Pair,
        summary_covers: Pair,
        tail_start: int,
        failed: tuple[str, ...],
        holes: tuple[Pair, ...],
    ) -> None:
        self._write({
            "event": "refusal",
            "summary_input": list(summary_input),
            "summary_covers": list(summary_covers),
            "tail_start": tail_start,
            "failed": list(failed),
            "holes": [list(h) for h in holes],
        })  # fmt: skip

    def spill(self, lo: int, hi: int, handle: str | None = None) -> None:
        obj: dict[str, Any] = {"event": "spill", "range": [lo, hi]}
        if handle is not None:
            obj["handle"] = handle
        self._write(obj)

    def adopt(self, hi: int, reason: str, summary: str | None) -> None:
        obj: dict[str, Any] = {"event": "adopt", "range": [0, hi], "reason": reason}
        if summary is not None:
            obj["summary"] = summary
        self._write(obj)

    def resume(self, snapshot: str, at: int) -> None:
        self._write({"event": "resume", "snapshot": snapshot, "line": at})

    def write_event(self, event: Event) -> None:
        """Write an event read by :func:`iter_events` (round trip)."""
        if isinstance(event, Session):
            self.session(*event[1:])
        elif isinstance(event, Append):
            self.append(event.amount)
        elif isinstance(event, Truncate):
            self.truncate(event.lo, event.hi)
        elif isinstance(event, Compact):
            self.compact_lineage(event.summary_input, event.summary_covers, event.tail_start,
                                 event.override, event.summary, event.saw, event.keeps)
        elif isinstance(event, EvictSummary):
            self.evict_summary(event.summary)
        elif isinstance(event, Refusal):
            self.refusal(event.summary_input, event.summary_covers, event.tail_start, event.failed,
                         event.holes)
        elif isinstance(event, Adopt):
            self.adopt(event.hi, event.reason, event.summary)
        elif isinstance(event, Resume):
            self.resume(event.snapshot, event.at)
        else:
            self.spill(event.lo, event.hi, event.handle)
