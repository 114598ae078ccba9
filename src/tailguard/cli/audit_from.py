"""``tailguard audit --from FORMAT SOURCE...``: import what a framework persisted, then audit it.

The import (``tailguard.importers``) gives each session the normative event log, and the
audit that reads every log judges it: one session gets the single-log report (text, JSON,
``--html``), with the messages each hole lost named by id and text; several sessions, or any
fleet option, the fleet audit (``--engine local|dask``; each worker imports the sessions it
audits; an unusable source is that session's error record and the others are still judged).
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

PROG = "tailguard audit"
AuditFn = Callable[..., tuple[int, int]]


def _fleet_wanted(args: argparse.Namespace) -> bool:
    return any(getattr(args, name, None) is not None for name in audit_fleet.FLEET_OPTIONS)


def run_from(args: argparse.Namespace, stdout: TextIO, stderr: TextIO, audit: AuditFn) -> int:
    from tailguard.importers import FORMATS, expand, import_session, knobs_for
    from tailguard.importers.sessions import fleet_item

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
    if _fleet_wanted(args) or len(refs) > 1:
        if args.html:
            print(f"{PROG}: --html: one session only ({len(refs)} here; choose one with --thread ID)", file=stderr)
            return 2
        return audit_fleet.run(args, stdout, stderr, items=[fleet_item(fmt, r, knobs) for r in refs])
    ref = refs[0]
    try:
        imported = import_session(fmt, ref, knobs)
    except ImportSourceError as exc:
        print(exc, file=stderr)
        return 2
    lines = [line.encode("utf-8") for line in imported.lines]
    out = io.StringIO()
    holes: list[tuple[int, int]] = []
    try:
        _, violations = audit(lines, ref.source, args.profile, args.format, out, None, args.summary, holes)
    except EventLogError as exc:  # an importer bug: its log must always be readable
        print(f"{PROG}: {ref.source}: the imported log is unusable ({exc}); please report this", file=stderr)
        return 2
    judged = normalize(holes)
    lost = [{"offsets": [n.lo, n.hi], "id": n.id, "text": n.text, "judged": True}
            for lo, hi in judged for n in imported.messages_in(lo, hi)]
    named = {row["id"] for row in lost}
    lost += [{"offsets": [n.lo, n.hi], "id": n.id, "text": n.text, "judged": False}
             for lo, hi in imported.pending for n in imported.messages_in(lo, hi) if n.id not in named]
    if args.format == "json" and not args.summary:
        doc: dict[str, Any] = json.loads(out.getvalue())
        doc["source"] = ref.source
        doc["lost_messages"] = lost
        stdout.write(json.dumps(doc) + "\n")
    else:
        stdout.write(out.getvalue())
        if args.format == "text" and not args.summary:
            _name_lost(stdout, ref.source, lost)
    if args.html:
        from tailguard.audit.html import session_report, write_html

        try:
            page = session_report(iter(lines), ref.source, args.profile)
        except EventLogError as exc:
            print(f"{PROG}: --html: {exc}", file=stderr)
            return 2
        problem = write_html(args.html, page)
        if problem is not None:
            print(f"{PROG}: --html: {problem}", file=stderr)
            return 2
    return 1 if violations else 0


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
            out.write(f"  {at}: {r['id']}: {json.dumps(r['text'])}\n")
