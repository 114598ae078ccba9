"""``tailguard audit --from FORMAT SOURCE...``: import what a framework persisted, then audit it.

The import (``tailguard.importers``) gives each session the normative event log, and the
audit that reads every log judges it: every session gets the single-log report (text, JSON;
``--html`` for one), with the messages each hole lost named by id and text (several sessions:
one after the other, then a tally; JSON ``{"sessions": [...]}``); any fleet option
(``--engine local|dask``, ``--workers``, ``--out``, ...) gives the fleet audit instead (each
worker imports the sessions it audits). An unusable source is named on stderr (or is that
session's error record) and the others are still judged.
Exit codes as ``tailguard audit``: 0 clean, 1 a compaction refused, 2 unusable input
(``SOURCE: where: why``, never a traceback).
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from tailguard.base.errors import EventLogError, ImportSourceError, PolicyError
from tailguard.base.intervals import normalize
from tailguard.cli import audit_fleet
from tailguard.cli.profile_option import profile_problem
from tailguard.importers.imported import Imported

PROG = "tailguard audit"
PREVIEW = 72  # characters of a lost message's text in the text report (JSON keeps it whole)
AuditFn = Callable[..., tuple[int, int]]


def _fleet_wanted(args: argparse.Namespace) -> bool:
    return any(getattr(args, name, None) is not None for name in audit_fleet.FLEET_OPTIONS)


def run_from(args: argparse.Namespace, stdout: TextIO, stderr: TextIO, audit: AuditFn) -> int:
    from tailguard.importers import FORMATS, expand, import_session, knobs_for
    from tailguard.importers.sessions import fleet_item, require

    fmt = args.from_format
    if fmt not in FORMATS:
        print(f"{PROG}: --from: unknown format {fmt!r} (formats: {', '.join(FORMATS)})", file=stderr)
        return 2
    if (problem := profile_problem(args.profile)) is not None:
        print(f"{PROG}: {problem}", file=stderr)
        return 2
    if "-" in (args.trace, *args.more):
        print(f"{PROG}: --from: '-' (stdin) is not a source; give the files the framework wrote", file=stderr)
        return 2
    try:
        knobs = knobs_for(fmt, args.knobs)
    except PolicyError as exc:
        print(f"{PROG}: --knobs: {exc}", file=stderr)
        return 2
    refs = expand(fmt, [args.trace, *args.more], args.thread)
    if _fleet_wanted(args):
        if args.html:
            print(f"{PROG}: --html: one session only, not with the fleet options", file=stderr)
            return 2
        try:  # loaded once here, so that the local pool's forked workers inherit the framework
            require(fmt)
        except ImportError as exc:
            print(f"{PROG}: --from {fmt}: {exc}", file=stderr)
            return 2
        return audit_fleet.run(args, stdout, stderr, items=[fleet_item(fmt, r, knobs) for r in refs])
    if args.html and len(refs) > 1:
        print(f"{PROG}: --html: one session only ({len(refs)} here; choose one with --thread ID)", file=stderr)
        return 2
    codes: list[int] = []
    docs: list[dict[str, Any]] = []
    for ref in refs:
        try:
            imported = import_session(fmt, ref, knobs)
        except ImportError as exc:  # the framework is not installed: the extra is named
            print(f"{PROG}: --from {fmt}: {exc}", file=stderr)
            return 2
        except ImportSourceError as exc:
            print(exc, file=stderr)
            codes.append(2)
            docs.append({"source": ref.source, "error": str(exc)})
            continue
        code, doc = _one(args, ref.source, imported, audit, stdout if len(refs) == 1 else None, stderr)
        codes.append(code)
        if doc is not None:
            docs.append(doc)
        if code == 2 or not args.html:
            continue
        from tailguard.audit.html import session_report, write_html

        page = session_report(iter([line.encode("utf-8") for line in imported.lines]), ref.source, args.profile)
        problem = write_html(args.html, page)
        if problem is not None:
            print(f"{PROG}: --html: {problem}", file=stderr)
            return 2
    if len(refs) > 1:
        if args.format == "json":
            stdout.write(json.dumps({"sessions": docs}) + "\n")
        else:
            for doc in docs:
                stdout.write(doc.get("text", ""))
            bad, refused = codes.count(2), codes.count(1)
            stdout.write(f"{PROG}: {len(refs)} sessions: {len(refs) - bad - refused} clean, {refused} with "
                         f"refusals, {bad} unusable (profile {args.profile})\n")
    return 2 if 2 in codes else 1 if 1 in codes else 0


def _one(args: argparse.Namespace, source: str, imported: Imported, audit: AuditFn, stdout: TextIO | None,
         stderr: TextIO) -> tuple[int, dict[str, Any] | None]:
    """Audit one imported session: written to ``stdout`` when given (one session), else returned
    (``text`` holds the text report)."""
    lines = [line.encode("utf-8") for line in imported.lines]
    out = io.StringIO()
    holes: list[tuple[int, int]] = []
    try:
        _, violations = audit(lines, source, args.profile, args.format, out, None, args.summary, holes)
    except EventLogError as exc:  # an importer bug: its log must always be readable
        print(f"{PROG}: {source}: the imported log is unusable ({exc}); please report this", file=stderr)
        return 2, {"source": source, "error": str(exc)}
    judged = normalize(holes)
    lost = [{"offsets": [n.lo, n.hi], "id": n.id, "text": n.text, "judged": True}
            for lo, hi in judged for n in imported.messages_in(lo, hi)]
    named = {row["id"] for row in lost}
    lost += [{"offsets": [n.lo, n.hi], "id": n.id, "text": n.text, "judged": False}
             for lo, hi in imported.pending for n in imported.messages_in(lo, hi) if n.id not in named]
    code = 1 if violations else 0
    if args.format == "json":
        doc: dict[str, Any] = json.loads(out.getvalue())
        if not args.summary:
            doc["lost_messages"] = lost
        doc = {"source": source, **doc}
        if stdout is not None:
            stdout.write(json.dumps(doc) + "\n")
        return code, doc
    if not args.summary:
        _name_lost(out, source, lost)
    if stdout is not None:
        stdout.write(out.getvalue())
    return code, {"text": out.getvalue()}


def _name_lost(out: TextIO, source: str, lost: Iterable[dict[str, Any]]) -> None:
    rows = list(lost)
    if not rows:
        return
    for judged, title in ((True, "lost messages (in no later context, summary or spill), oldest first"),
                          (False, "lost after the last compaction (trimmed; no compaction judged them)")):
        part = [r for r in rows if r["judged"] is judged]
        if part:
            out.write(f"{source}: {title}:\n")
        for r in part:
            lo, hi = r["offsets"]
            at = f"offset {lo}" if hi == lo + 1 else f"offsets [{lo}, {hi})"
            out.write(f"  {at}: {r['id']}: {json.dumps(' '.join(r['text'].split())[:PREVIEW])}\n")
