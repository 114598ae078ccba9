"""``tailguard spill put|get|verify|list``: the durable spill store from the command line.

Exit codes: 0 success; 1 absent or corrupt spill, failed write, or a store with problems;
2 unusable input (malformed or foreign handle, bad range, unreadable file, not a store).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import BinaryIO, TextIO

from tailguard.base.safeio import open_regular
from tailguard.base.vocab import Pair
from tailguard.spill import (
    UNITS,
    CorruptRecordError,
    FileSpillStore,
    MalformedHandleError,
    RecordNotFoundError,
    SpillError,
    SpillWriteError,
    StoreNotFoundError,
)

PROG = "tailguard spill"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the four spill subcommands on ``parser``."""
    sub = parser.add_subparsers(dest="spill_command", metavar="SUBCOMMAND")

    parser.epilog = ("exit codes: put and verify 0 ok, 1 failed; get 0 ok, 1 absent or corrupt, 2 malformed "
                     "handle; list 0 ok, 1 rejected index records; every subcommand: 2 unusable arguments "
                     "or no store at DIR")
    put = sub.add_parser("put", help="store FILE durably; prints its handle as the last line",
                         epilog="exit codes: 0 stored, 1 the write failed (nothing half-written), 2 unusable input")
    put.add_argument("--store", required=True, metavar="DIR", help="spill store directory")
    put.add_argument("file", metavar="FILE", help="file to spill ('-' reads standard input)")
    put.add_argument("--session", default=None, help="session id to record")
    put.add_argument(
        "--range", nargs=2, type=int, metavar=("LO", "HI"), default=None,
        help="offset range [LO, HI) the bytes hold",
    )  # fmt: skip
    put.add_argument("--unit", choices=UNITS, default=None, help="unit of the offsets")

    get = sub.add_parser("get", help="write the exact bytes of HANDLE to standard output",
                         epilog="exit codes: 0 the exact bytes written, 1 absent or corrupt, 2 malformed handle "
                                "or no store at DIR")
    get.add_argument("--store", required=True, metavar="DIR", help="spill store directory")
    get.add_argument("handle", metavar="HANDLE", help="sha256:<64 hex>, as printed by put")

    verify = sub.add_parser("verify", help="re-read every record; exit 0 only if all intact",
                            epilog="exit codes: 0 all intact, 1 some problem (each printed), 2 no store at DIR")
    verify.add_argument("--store", required=True, metavar="DIR", help="spill store directory")

    lister = sub.add_parser("list", help="list the index: handle, size, session, range, time",
                            epilog="exit codes: 0 listed, 1 some index record rejected (named on stderr), "
                                   "2 no store at DIR")
    lister.add_argument("--store", required=True, metavar="DIR", help="spill store directory")
    lister.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: one line per record (default); json: records and rejected lines")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Run one spill subcommand; returns the exit code (never raises for bad input)."""
    command = getattr(args, "spill_command", None)
    if command is None:
        print(f"{PROG}: choose a subcommand: put, get, verify or list", file=stderr)
        return 2
    try:
        if command == "put":
            return _put(args, stdout, stderr)
        store = FileSpillStore(args.store)
        if command == "get":
            return _get(store, args.handle, stdout, stderr)
        if command == "verify":
            return _verify(store, stdout)
        return _list(store, args.format, stdout, stderr)
    except StoreNotFoundError as exc:
        print(f"{PROG} {command}: {exc}", file=stderr)
        return 2
    except (OSError, SpillError) as exc:  # e.g. the store vanished or became unreadable mid-run
        print(f"{PROG} {command}: cannot read store {args.store}: {exc}", file=stderr)
        return 1


def _put(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    rng: Pair | None = None
    if args.range is not None:
        lo, hi = args.range
        if lo < 0 or lo > hi:
            print(f"{PROG} put: --range must satisfy 0 <= LO <= HI, got {lo} {hi}", file=stderr)
            return 2
        rng = (lo, hi)
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open_regular(args.file) as handle:
                data = handle.read()
    except OSError as exc:
        print(f"{PROG} put: cannot read {args.file}: {exc.strerror or exc}", file=stderr)
        return 2
    try:
        store = FileSpillStore(args.store, create=True)
        spill_handle = store.put(data, session=args.session, range=rng, unit=args.unit)
    except SpillWriteError as exc:
        print(f"{PROG} put: {exc}", file=stderr)
        return 1
    print(spill_handle, file=stdout)
    return 0


def _get(store: FileSpillStore, handle: str, stdout: TextIO, stderr: TextIO) -> int:
    try:
        data = store.get(handle)
    except MalformedHandleError as exc:  # includes ForeignHandleError
        print(f"{PROG} get: {exc}", file=stderr)
        return 2
    except (RecordNotFoundError, CorruptRecordError) as exc:
        print(f"{PROG} get: {exc}", file=stderr)
        return 1
    binary: BinaryIO | None = getattr(stdout, "buffer", None)
    if binary is None:  # a text-only stream (tests): bytes that are not UTF-8 survive as escapes
        getattr(stdout, "write_raw", stdout.write)(data.decode("utf-8", errors="surrogateescape"))
    else:
        stdout.flush()
        binary.write(data)
        binary.flush()
    return 0


def _verify(store: FileSpillStore, stdout: TextIO) -> int:
    report = store.verify()
    for problem in report.problems:
        print(f"PROBLEM {problem.kind} {problem.where}: {problem.message}", file=stdout)
    for note in report.notes:
        print(f"note: {note}", file=stdout)
    verdict = "all intact" if report.ok else f"{len(report.problems)} problem(s)"
    print(
        f"{report.records_checked} record(s), {report.objects_checked} object(s) checked: {verdict}",
        file=stdout,
    )
    return 0 if report.ok else 1


def _shown(text: str) -> str:
    """``text`` as is when printable; else quoted with JSON escapes (lone surrogates, controls)."""
    return text if text.isprintable() else json.dumps(text)


def _list(store: FileSpillStore, fmt: str, stdout: TextIO, stderr: TextIO) -> int:
    scan = store.scan_index()
    if fmt == "json":
        doc = {
            "records": [r.to_json() for r in scan.records],
            "rejected": [{"where": p.where, "reason": p.message} for p in scan.rejected],
        }
        print(json.dumps(doc, indent=2), file=stdout)
    else:
        for r in scan.records:
            span = "-" if r.range is None else f"[{r.range[0]}, {r.range[1]})"
            print(
                f"{_shown(r.time)}  {r.handle}  {r.size}  {_shown(r.session or '-')}  {r.unit or '-'}  {span}",
                file=stdout,
            )
    for problem in scan.rejected:
        print(f"{PROG} list: rejected {problem.where}: {problem.message}", file=stderr)
    return 1 if scan.rejected else 0
