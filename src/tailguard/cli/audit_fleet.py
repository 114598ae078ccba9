"""Fleet mode of ``tailguard audit``: many logs, on a local process pool or a Dask cluster.

``tailguard audit [--engine local|dask] [--workers N] [--scheduler ADDRESS]
[--files-per-task N] [--out PATH] PATH_OR_GLOB...`` (``docs/fleet.md``).

Audit is in fleet mode when any of those five options is given, or more than one path, or
the one path is a URL (``scheme://``), a directory, or a glob (``*``, ``?``, ``[``) that is not
itself an existing file. Otherwise (one plain path, or ``-``) it is the single-file audit,
byte for byte as before. Writes one record per session to ``--out`` and a summary on stdout;
exit 0 every session clean, 1 any refusal, 2 any log unusable (all the others still audited)
or bad arguments (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import TYPE_CHECKING, TextIO

from tailguard.base.safeio import write_control
from tailguard.cli.profile_option import profile_problem

if TYPE_CHECKING:
    from tailguard.audit.fleet.sources import Item

PROG = "tailguard audit"
FLEET_OPTIONS = ("engine", "workers", "scheduler", "files_per_task", "out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("fleet audit (many logs; docs/fleet.md)")
    g.add_argument("more", nargs="*", metavar="PATH_OR_GLOB",
                   help="more logs, globs, directories or URLs (fsspec): audit them all")
    g.add_argument("--engine", choices=("local", "dask"), default=None,
                   help="local: a process pool (default); dask: a LocalCluster, or --scheduler")
    g.add_argument("--workers", type=int, metavar="N", default=None,
                   help="processes (local pool or LocalCluster; default: the usable cores)")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="a running Dask scheduler, e.g. tcp://10.0.0.5:8786 (implies --engine dask)")
    g.add_argument("--files-per-task", type=int, metavar="N", default=None,
                   help="sessions per task (default: about 8 tasks per local worker, 4 per Dask "
                        "worker thread, at most 32)")
    g.add_argument("--out", metavar="PATH", default=None,
                   help="per-session records: a JSONL file, a directory (results.jsonl in it) "
                        "or a .parquet file (pyarrow)")


def wanted(args: argparse.Namespace) -> bool:
    """Whether these arguments ask for fleet mode (see the module docstring)."""
    from tailguard.audit.fleet.sources import has_glob, is_url

    if any(getattr(args, name, None) is not None for name in FLEET_OPTIONS) or getattr(args, "more", None):
        return True
    path: str = args.trace
    if path == "-":
        return False
    return is_url(path) or os.path.isdir(path) or (has_glob(path) and not os.path.exists(path))


class _Progress:
    """``sessions done of total`` redrawn on stderr (a terminal) at most ten times a second."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.last, self.drawn = stream, 0.0, False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        write_control(self.stream, f"\r{PROG}: {done:,} of {total:,} sessions  ")
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            write_control(self.stream, "\r" + " " * 60 + "\r")
            self.stream.flush()


def _missing(what: str, exc: ModuleNotFoundError, stderr: TextIO) -> int:
    from tailguard.audit.fleet import EXTRA

    name = (exc.name or "").split(".")[0]
    extra = "parquet" if name == "pyarrow" else EXTRA
    print(f"{PROG}: {what} needs the optional package {name!r}: pip install 'tailguard[{extra}]' "
          f"(or pip install -e '.[{extra}]' in a checkout)", file=stderr)
    return 2


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO, items: list[Item] | None = None) -> int:
    """The fleet audit of the arguments' paths, or of ``items`` (``audit --from``: imported sessions)."""
    from tailguard.audit.fleet import engines, output, summary
    from tailguard.audit.fleet.sources import SourceError, expand, is_url

    def usage(message: str) -> int:
        print(f"{PROG}: {message}", file=stderr)
        return 2

    if (problem := profile_problem(args.profile)) is not None:
        return usage(problem)
    paths: list[str] = [args.trace, *args.more]
    if "-" in paths and items is None:
        return usage("'-' (stdin) audits one log; a fleet audit reads files, directories, globs and URLs")
    engine = args.engine or ("dask" if args.scheduler is not None else "local")
    if args.scheduler is not None and engine != "dask":
        return usage("--scheduler: a Dask scheduler needs --engine dask")
    if args.scheduler is not None and args.workers is not None:
        return usage("--workers: a running scheduler has its own workers; give one or the other")
    for name in ("workers", "files_per_task"):
        value = getattr(args, name)
        if value is not None and value < 1:
            return usage(f"--{name.replace('_', '-')}: expected a positive integer, got {value}")

    out = output.resolve(args.out) if args.out is not None else None
    try:
        if out is not None:
            output.check_writable(out)
    except ModuleNotFoundError as exc:
        return _missing(f"--out {out}", exc, stderr)
    except output.OutputError as exc:
        return usage(str(exc))
    if items is None:
        try:
            items = expand(paths)
        except ModuleNotFoundError as exc:
            return _missing("a URL (" + next(p for p in paths if is_url(p)) + ")", exc, stderr)
        except SourceError as exc:
            return usage(str(exc))

    if getattr(args, "strict_tail", False):
        items = [it._replace(strict_tail=True) for it in items]
    workers = args.workers or engines.default_workers()
    per_task: int | None = args.files_per_task
    progress = _Progress(stderr) if stderr.isatty() else None
    report = progress if progress is not None else (lambda done, total: None)
    try:
        if engine == "dask":
            try:
                done = engines.run_dask(items, args.profile, args.workers, per_task, args.scheduler, report)
            except ModuleNotFoundError as exc:
                return _missing("--engine dask", exc, stderr)
            except (OSError, TimeoutError) as exc:
                where = args.scheduler or "a LocalCluster"
                return usage(f"--scheduler {where}: cannot reach the Dask scheduler ({exc})"
                             if args.scheduler else f"cannot start {where} ({exc})")
        elif workers == 1 or len(items) == 1:
            done = engines.run_serial(items, args.profile, report)
        else:
            per_task = per_task or engines.default_files_per_task("local", len(items), workers)
            done = engines.run_local(items, args.profile, workers, per_task, report)
    except engines.EngineError as exc:
        return usage(str(exc))
    finally:
        if progress is not None:
            progress.clear()

    if out is not None:
        try:
            output.write(out, done.records)
        except output.OutputError as exc:
            return usage(str(exc))
    result = summary.summarize(done.records)
    if args.format == "json":
        stdout.write(json.dumps(result.to_json(args.profile, out)) + "\n")
    else:
        stdout.write(result.text(PROG, args.profile, out))
    return result.exit_code
