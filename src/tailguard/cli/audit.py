"""``tailguard audit [--profile seed|strict|partitioned] [--format text|json] [--summary] TRACE.jsonl``.

Replays an event log (``spec/SPEC.md, section 9``) and judges every compaction against the ledger
state at that moment. Exit 0 when every compaction is allowed, 1 when any is refused, 2 for
unusable input (``FILE:LINE: field: reason`` on stderr, never a traceback).

The text report is :class:`tailguard.audit.report.TextReport` (each hole explained once).
Streams: memory is the ledger's interval sets (plus, for text, which line truncated
what and the holes already reported); results are spooled to a temporary file so that an input error found late never
leaves half a report on stdout. A progress line is drawn on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, Protocol, TextIO

from tailguard.audit.replay import Verdict, replay
from tailguard.audit.report import TextReport
from tailguard.base.safeio import open_regular, printable, write_control
from tailguard.cli import audit_fleet
from tailguard.cli.profile_option import add_profile_option, profile_problem
from tailguard.runtime.case import display_name
from tailguard.runtime.eventlog import Adopt, EventLogError, Refusal, Session, bounded_lines, iter_events

PROG = "tailguard audit"
_SPOOL_BYTES = 8 << 20
_PROGRESS_EVERY = 1 << 16  # lines between clock checks


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 every compaction allowed, 1 some compaction refused, 2 unusable input "
                     "(FILE:LINE: field: reason; with --from, SOURCE: where: why)")
    parser.add_argument("trace", metavar="TRACE.jsonl", help="the event log ('-' reads stdin)")
    add_profile_option(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: a post-mortem of every refused compaction, each hole explained once "
                             "(default); json: one object with every compaction's full hole list")
    parser.add_argument("--summary", action="store_true",
                        help="counts only: compactions judged, refused, refusals logged")
    parser.add_argument("--html", metavar="REPORT.html",
                        help="also write the session as one self-contained HTML page (docs/html-report.md)")
    parser.add_argument("--strict-tail", action="store_true",
                        help="a torn last line (no line end, not valid JSON: a writer killed mid-line) is "
                             "an input error (exit 2); by default it is a warning and the lines before it "
                             "are judged")
    parser.add_argument("--from", dest="from_format", metavar="FORMAT", default=None,
                        help="the arguments are what a framework persisted, not event logs: import them "
                             "first (langgraph: SqliteSaver databases, every thread a session; openhands: "
                             "conversation directories; openai-agents: SQLiteSession databases, each of their sessions "
                             "one; docs/import.md); an unusable source is exit 2 (SOURCE: where: why)")
    from tailguard.cli.import_logs import add_import_options

    add_import_options(parser)  # --knobs, --thread (with --from)
    audit_fleet.add_arguments(parser)  # more paths, globs, URLs, engines: docs/fleet.md


def _progress(lines: BinaryIO, total: int, stderr: TextIO) -> Iterator[bytes]:
    """Pass lines through, redrawing a progress line on stderr about once a second."""
    last = time.monotonic()
    count = 0
    drawn = False
    for count, raw in enumerate(bounded_lines(lines), 1):
        if not count % _PROGRESS_EVERY:
            now = time.monotonic()
            if now - last >= 1.0:
                last = now
                done = lines.tell() if lines.seekable() else 0
                pct = f" ({100 * done // total}%)" if total else ""
                write_control(stderr, f"\r{PROG}: {count:,} lines, {done / 1e6:,.0f} MB{pct}  ")
                stderr.flush()
                drawn = True
        yield raw
    if drawn:
        write_control(stderr, "\r" + " " * 72 + "\r")
        stderr.flush()


class _Out(Protocol):
    def write(self, text: str, /) -> object: ...


def _audit(
    lines: Iterable[bytes], where: str, profile: str, fmt: str, out: _Out,
    on_torn: Callable[[int, str], None] | None = None, summary: bool = False,
    holes: list[tuple[int, int]] | None = None,
) -> tuple[int, int]:
    """Write the report to ``out``; return (compactions, violations)."""
    explain = fmt == "text" and not summary
    report = TextReport(where, out) if explain else None
    events = iter_events(lines, where, on_torn=on_torn)
    results = replay(events, profile=profile, explain=explain, source=where,
                     narrow=None if report is None else report.narrow)
    header = next(results)
    assert isinstance(header, Session)
    if report is not None:
        report.unit = printable(header.unit)  # a unit from the log cannot drive the terminal
    compactions = violations = refusals = 0
    adopted: list[Adopt] = []
    if fmt == "json" and not summary:
        out.write('{"compactions": [')
    dumps = json.dumps
    for v in results:
        if type(v) is Refusal:
            refusals += 1
            continue
        if type(v) is Adopt:
            adopted.append(v)
            if report is not None:
                out.write(f"{where}:{v.line}: unverified: offsets [0, {v.hi}) predate the guard (adopted as "
                          f"summary {dumps(v.summary or 'adopted')}, reason {dumps(v.reason)}); nothing "
                          "here verifies them\n")
            continue
        assert isinstance(v, Verdict)
        compactions += 1
        refused = not v.decision.allowed
        violations += refused
        if refused and holes is not None:
            holes.extend(v.decision.holes)
        if report is not None:
            report.verdict(v)
        elif fmt == "json" and not summary:
            out.write((", " if compactions > 1 else "") + dumps(v.to_json()))
    unverified = [[0, a.hi] for a in adopted if a.hi > 0]
    extra = {"unverified": unverified} if adopted else {}  # spec 1.2 logs only: 1.1 output unchanged
    if fmt == "json" and summary:
        out.write(dumps({"judged": compactions, "violations": violations, "refusals": refusals, **extra}) + "\n")
    elif fmt == "text":
        noun = "compaction" if compactions == 1 else "compactions"
        tally = f"{violations} refused" if violations else "all allowed"
        logged = ""
        if refusals:
            attempts = "attempt" if refusals == 1 else "attempts"
            logged = f"; {refusals} refused {attempts} logged by the guard and not committed"
        note = ""
        if unverified:
            note = "; unverified (predate the guard): " + ", ".join(f"[{lo}, {hi})" for lo, hi in unverified)
        out.write(f"{where}: {compactions} {noun} judged, {tally} (profile {profile}){logged}{note}\n")
    else:
        tail = f', "unverified": {dumps(unverified)}' if adopted else ""
        out.write(f'], "violations": {violations}, "refusals": {refusals}{tail}}}\n')
    return compactions, violations


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if args.from_format is not None:
        from tailguard.cli.audit_from import run_from

        return run_from(args, stdout, stderr, _audit)
    for name in ("knobs", "thread"):
        if getattr(args, name) is not None:
            print(f"{PROG}: --{name}: only with --from FORMAT (importing what a framework persisted)",
                  file=stderr)
            return 2
    if args.html and (args.trace == "-" or audit_fleet.wanted(args)):
        print(f"{PROG}: --html: needs one log as a file (it is read a second time), not stdin or several",
              file=stderr)
        return 2
    if audit_fleet.wanted(args):
        return audit_fleet.run(args, stdout, stderr)
    if (problem := profile_problem(args.profile)) is not None:
        print(f"{PROG}: {problem}", file=stderr)
        return 2
    where = "<stdin>" if args.trace == "-" else display_name(args.trace)
    torn: list[tuple[int, str]] = []

    def on_torn(line: int, reason: str) -> None:
        if args.strict_tail:
            raise EventLogError(where, line, "line", f"torn last line (no line end; {reason}); "
                                "without --strict-tail the lines before it are judged")
        torn.append((line, reason))
    with contextlib.ExitStack() as stack:
        try:
            stream: BinaryIO = (
                sys.stdin.buffer if args.trace == "-"
                else stack.enter_context(open_regular(args.trace))  # a FIFO: an error, not a hang
            )
        except OSError as exc:
            print(f"{PROG}: cannot read {where}: {exc.strerror or exc}", file=stderr)
            return 2
        lines: Iterable[bytes] = bounded_lines(stream)
        if stderr.isatty():
            try:
                total = os.fstat(stream.fileno()).st_size
            except (OSError, ValueError):
                total = 0
            lines = _progress(stream, total, stderr)
        spool = stack.enter_context(
            tempfile.SpooledTemporaryFile(_SPOOL_BYTES, mode="w+", encoding="utf-8",
                                          errors="backslashreplace")  # lone surrogates of JSON ids
        )
        try:
            _, violations = _audit(lines, where, args.profile, args.format, spool, on_torn, args.summary)
        except EventLogError as exc:
            print(exc, file=stderr)
            return 2
        except OSError as exc:
            print(f"{PROG}: cannot read {where}: {exc.strerror or exc}", file=stderr)
            return 2
        for line, reason in torn:
            print(f"{where}:{line}: warning: torn last line ignored (no line end; {reason}); "
                  f"judged lines 1 to {line - 1} (--strict-tail makes this an error)", file=stderr)
        spool.seek(0)
        shutil.copyfileobj(spool, stdout)
    if args.html:
        from tailguard.audit.html import audit_html

        problem = audit_html(args.html, args.trace, args.profile)
        if problem is not None:
            print(f"{PROG}: --html: {problem}", file=stderr)
            return 2
    return 1 if violations else 0
