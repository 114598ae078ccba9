"""``tailguard doctor [--framework NAME]... [--sessions N | --quick] [--seed S] [--versions-only]
[--format text|json | --json]``.

For every framework tailguard knows (:mod:`tailguard.doctor.registry`): the installed version
against its preset's validated versions and its adapter's validated range, then, offline, the
differential check of what is installed (the real package driven with its own fake model over
a few generated sessions, every compaction compared with the preset's model; the adapter run on
the same knobs). Progress goes to stderr. Exit codes: :data:`tailguard.doctor.run.EXIT_CODES`.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TextIO

from tailguard.base.safeio import printable
from tailguard.doctor.registry import FRAMEWORKS, by_name
from tailguard.doctor.run import EXIT_CODES, Report, check_framework, exit_code

DEFAULT_SESSIONS = 6
QUICK_SESSIONS = 2
MAX_SESSIONS = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "exit codes: " + "; ".join(f"{code} {text}" for code, text in sorted(EXIT_CODES.items())) + \
        ". Frameworks: " + ", ".join(f.name for f in FRAMEWORKS) + " (docs/doctor.md)."
    parser.add_argument("--framework", action="append", metavar="NAME", default=[],
                        help="check only this framework (repeatable; default: every framework)")
    parser.add_argument("--sessions", type=int, default=None, metavar="N",
                        help=f"differential sessions per framework (default {DEFAULT_SESSIONS}; the first is a "
                             "fixed session that compacts)")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_SESSIONS} sessions per framework (a few seconds each)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated sessions (default 0)")
    parser.add_argument("--versions-only", action="store_true",
                        help="compare the installed versions only; run no differential check")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help='text (default) or json: {"exit_code", "frameworks": [...]}')
    parser.add_argument("--json", action="store_const", dest="format", const="json",
                        help="the same as --format json")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    names: list[str] = list(dict.fromkeys(args.framework))
    unknown = [n for n in names if by_name(n) is None]
    if unknown:
        known = ", ".join(f.name for f in FRAMEWORKS)
        print(f"tailguard doctor: --framework: unknown framework {printable(unknown[0])!r} (known: {known})",
              file=stderr)
        return 2
    if args.quick and args.sessions is not None:
        print("tailguard doctor: give --quick or --sessions, not both", file=stderr)
        return 2
    sessions = QUICK_SESSIONS if args.quick else DEFAULT_SESSIONS if args.sessions is None else args.sessions
    if not 1 <= sessions <= MAX_SESSIONS:
        print(f"tailguard doctor: --sessions must be in [1, {MAX_SESSIONS}], got {sessions}", file=stderr)
        return 2
    selected = [f for f in FRAMEWORKS if not names or f.name in names]

    def progress(line: str) -> None:
        print(f"tailguard doctor: {line}", file=stderr, flush=True)

    wall, cpu = time.perf_counter(), time.process_time()
    reports: list[Report] = []
    for framework in selected:
        reports.append(check_framework(framework, sessions=sessions, seed=args.seed,
                                       differential=not args.versions_only, progress=progress))
    code = exit_code(reports, names)
    totals = {"seconds": round(time.perf_counter() - wall, 2), "cpu_seconds": round(time.process_time() - cpu, 2)}
    if args.format == "json":
        print(json.dumps({"exit_code": code, "meaning": EXIT_CODES[code], "sessions": sessions, "seed": args.seed,
                          **totals, "frameworks": [r.to_json() for r in reports]}, indent=2), file=stdout)
    else:
        for r in reports:
            stdout.write(_text(r))
        stdout.write(f"exit {code}: {EXIT_CODES[code]} ({totals['seconds']} s, CPU {totals['cpu_seconds']} s)\n")
    return code


LABELS = {"ok": "ok", "outside": "outside the validated range, agrees", "disagrees": "DISAGREES",
          "error": "ERROR: the check could not run", "not-installed": "not installed",
          "not-checked": "versions only"}


def _text(r: Report) -> str:
    head = f"{r.framework}: {LABELS[r.status]}"
    if r.version is not None:
        head += f" ({r.version})"
    lines = [head]
    if r.status == "not-installed":
        if r.note:
            lines.append(f"  {r.note}")
        return "\n".join(lines) + "\n"
    for p in r.packages:
        mark = "-" if p.installed is None else "ok" if p.ok else "OUTSIDE"
        lines.append(f"  {p.source} {p.name} {p.installed or 'not installed'} (validated {p.wanted}): {mark}")
    if r.status in ("ok", "outside"):
        lines.append(f"  agreed on {r.sessions} sessions ({r.compactions} compactions compared) and "
                     f"{r.adapter_runs} adapter runs in {r.seconds:.1f} s")
    elif r.status in ("disagrees", "error") and (r.sessions or r.adapter_runs):
        lines.append(f"  agreed on {r.sessions} sessions ({r.compactions} compactions compared) and "
                     f"{r.adapter_runs} adapter runs before this:")
    if r.disagreement is not None:
        d = r.disagreement
        at = f", compaction {d['compaction']}" if d["compaction"] else ""
        lines.append(f"  {d['check']} case {d['case']}{at}: {d['what']}")
        lines.append(f"  session: {d['session']} (--seed {d['seed']})")
    if r.error is not None:
        lines.append(f"  {r.error}")
    return "\n".join(printable(line) for line in lines) + "\n"
