"""``tailguard import FORMAT SOURCE... [-o LOG | --out-dir DIR] [--knobs POLICY.toml] [--thread ID]``.

Turns what a framework persisted into the normative event log (``spec/SPEC.md`` section 9;
brief section 10; ``docs/import.md``). One session goes to ``-o LOG`` or stdout; several
need ``--out-dir DIR`` (one ``*.jsonl`` per session, named after its source). A source that
cannot be read is reported (``SOURCE: where: why``) and the others are still imported.
Exit 0 every session imported, 2 any source unusable or bad arguments (never a traceback).
"""

from __future__ import annotations

import argparse
import os
import urllib.parse
from typing import TextIO

from tailguard.base.errors import ImportSourceError, PolicyError
from tailguard.base.safeio import write_atomic

PROG = "tailguard import"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from tailguard.importers import FORMATS, langgraph, openai_agents, openhands

    parser.epilog = ("exit codes: 0 every session imported, 2 a source unusable (SOURCE: where: why; the "
                     "other sources are still imported) or bad arguments")
    parser.add_argument("format", choices=FORMATS, metavar="FORMAT",
                        help=f"what persisted the sessions: {', '.join(FORMATS)} (docs/import.md)")
    parser.add_argument("sources", nargs="+", metavar="SOURCE",
                        help="langgraph: a SqliteSaver database file (every thread is a session; validated on "
                             f"{', '.join(langgraph.VALIDATED_ON)}); openhands: a conversation directory (events/ "
                             "and base_state.json) or the persistence_dir holding them (every conversation is a "
                             f"session; validated on {', '.join(openhands.VALIDATED_ON)}, Python >= 3.12); "
                             "openai-agents: an OpenAI Agents SDK SQLiteSession database (each of its sessions is one; "
                             f"validated on {', '.join(openai_agents.VALIDATED_ON)})")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="LOG", default=None,
                       help="write the one session's event log here (default: stdout)")
    where.add_argument("--out-dir", metavar="DIR", default=None,
                       help="write one log per session into DIR (created if missing), named after "
                            "the source and thread")
    add_import_options(parser)


def add_import_options(parser: argparse.ArgumentParser) -> None:
    """``--knobs`` and ``--thread``, shared with ``audit --from``."""
    parser.add_argument("--knobs", metavar="POLICY.toml", default=None,
                        help="the framework's knobs as check-config reads them ([framework] table; "
                             "top-level floor and floor_unit set the log's floor): what the record does "
                             "not say is computed from them; without them it is recorded as unverified")
    parser.add_argument("--thread", metavar="ID", default=None,
                        help="langgraph: import this thread only; openhands: this conversation only, by its "
                             "directory name; openai-agents: this session id only (default: every one)")


def log_name(source: str) -> str:
    """A file name for a session's log: its database's name and its thread, quoted."""
    path, _, thread = source.partition("#")
    stem = os.path.splitext(os.path.basename(path))[0] or "session"
    return f"{stem}.{urllib.parse.quote(thread, safe='')}.jsonl" if thread else f"{stem}.jsonl"


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from tailguard.importers import expand, import_session, knobs_for

    try:
        knobs = knobs_for(args.format, args.knobs)
    except PolicyError as exc:
        print(f"{PROG}: --knobs: {exc}", file=stderr)
        return 2
    refs = expand(args.format, list(args.sources), args.thread)
    usable = [r for r in refs if r.error is None]
    if len(usable) > 1 and args.out_dir is None:
        print(f"{PROG}: {len(usable)} sessions ({', '.join(r.source for r in usable[:3])}"
              f"{', ...' if len(usable) > 3 else ''}): give --out-dir DIR (or --thread ID)", file=stderr)
        return 2
    if args.out_dir is not None:
        try:
            os.makedirs(args.out_dir, exist_ok=True)
        except OSError as exc:
            print(f"{PROG}: --out-dir {args.out_dir}: cannot create ({exc.strerror or exc})", file=stderr)
            return 2
    failed = 0
    names: dict[str, str] = {}
    for ref in refs:
        try:
            imported = import_session(args.format, ref, knobs)
        except ImportError as exc:  # the framework is not installed: the extra is named
            print(f"{PROG}: {args.format}: {exc}", file=stderr)
            return 2
        except ImportSourceError as exc:
            print(exc, file=stderr)
            failed += 1
            continue
        text = "".join(imported.lines)
        target = args.output
        if args.out_dir is not None:
            name = log_name(ref.source)
            if name in names:  # two databases of one name in different directories
                name = f"{name[:-len('.jsonl')]}.{len(names)}.jsonl"
            names[name] = ref.source
            target = os.path.join(args.out_dir, name)
        if target is None or target == "-":
            stdout.write(text)
            continue
        try:
            write_atomic(target, text.encode("utf-8"))
        except OSError as exc:
            print(f"{PROG}: cannot write {target}: {exc.strerror or exc}", file=stderr)
            return 2
        print(f"{ref.source}: {len(imported.lines):,} events -> {target}"
              + ("" if not any('"adopt"' in line for line in imported.lines[:3]) else
                 " (unverified ranges: no --knobs)" if args.knobs is None else
                 " (unverified ranges: see its adopt line)"), file=stderr)
    return 2 if failed else 0
