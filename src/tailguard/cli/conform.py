"""``tailguard conform [--ledger] [--profile P|all|both] [--mode M] [--random N --seed S] -- COMMAND ARGS...``.

Runs COMMAND as a child process speaking the line protocol (:mod:`tailguard.conform.protocol`),
replays every conformance vector for each profile, then N random cases compared with the
naive reference. With ``--ledger``, COMMAND is a ledger or audit and speaks the ledger protocol
(:mod:`tailguard.conform.ledger`): every event-log vector (``ledger.json``), then N random logs
judged by the reference ledger core. Exit 0 all agree, 1 any mismatch, 2 the implementation
crashed, hung or spoke something else (or the vectors / arguments are unusable).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import TextIO

from tailguard._generated.checker import PROFILES
from tailguard.conform import harness
from tailguard.conform.harness import MODES, random_checks, report, vector_checks
from tailguard.conform.vectors import VectorError, load_vectors


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 every answer agrees, 1 some mismatch, 2 the implementation crashed, hung or "
                     "spoke something else, or the vectors or arguments are unusable")
    parser.add_argument("--ledger", action="store_true",
                        help="COMMAND is a ledger or audit: send it event logs (the ledger vectors, then "
                             "--random N random logs) and compare its judgment of every compaction")
    parser.add_argument("--profile", choices=(*PROFILES, "all", "both"), default="all",
                        help="which profile's answers to check: one of them, all (the default), or "
                             "both (seed and strict, the 1.0 default)")
    parser.add_argument("--mode", choices=MODES, default="everything",
                        help="what must agree: decision; decision and failed clauses; everything "
                             "(decision, clauses and holes; the default)")
    parser.add_argument("--random", type=int, default=100, metavar="N",
                        help="random cases after the vectors, judged by the reference (default 100)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the random cases (default 0)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SEC",
                        help="per-case timeout in seconds (default 5)")
    parser.add_argument("--vectors", type=Path, default=None, metavar="DIR",
                        help="vector directory (default: the kit installed with tailguard, else spec/vectors "
                             "of this checkout)")
    parser.add_argument("--only", action="append", default=[], metavar="ID",
                        help="run only vectors whose id starts with ID (repeatable; no random cases)")
    parser.add_argument("--max-report", type=int, default=10, metavar="N",
                        help="mismatches shown in full (default 10)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: a summary and the first mismatches (default); json: one object with every "
                             "mismatch")
    parser.add_argument("impl", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                        help="the implementation to run, after --")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    command = list(args.impl)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("tailguard conform: give the implementation to run after --, "
              "e.g. `tailguard conform -- python -m tailguard.conform.reference_impl`", file=stderr)
        return 2
    if args.ledger:
        return _run_ledger(args, command, stdout, stderr)
    try:
        vset = load_vectors(args.vectors)
    except VectorError as exc:
        print(f"tailguard conform: {exc}", file=stderr)
        return 2
    profiles = {"all": list(PROFILES), "both": ["seed", "strict"]}.get(args.profile, [args.profile])
    vectors = [v for v in vset.vectors if not args.only or any(v.id.startswith(o) for o in args.only)]
    if args.only and not vectors:
        print(f"tailguard conform: --only: no vector id starts with {', '.join(args.only)}", file=stderr)
        return 2
    random_n = 0 if args.only else max(0, args.random)
    checks = itertools.chain(vector_checks(vectors, profiles), random_checks(random_n, args.seed, profiles))
    outcome = harness.run(command, checks, mode=args.mode, timeout=args.timeout)
    if args.format == "json":
        print(json.dumps({
            "exit": outcome.exit_code, "checks": outcome.checks, "agreed": outcome.agreed,
            "declined": outcome.declined,
            "mode": args.mode, "spec_version": vset.spec_version, "vectors_sha256": vset.sha256,
            "mismatches": [{"id": m.check.id, "profile": m.check.profile, "exercises": m.check.what,
                            "case": m.check.case,
                            "case_text": m.check.case_text, "expected": m.check.expected, "actual": m.actual}
                           for m in outcome.mismatches],
            "failure": None if outcome.failure is None else {"kind": outcome.failure.kind,
                                                              "detail": outcome.failure.detail},
        }), file=stdout)
    else:
        print(f"conform: {len(vectors)} vectors (spec {vset.spec_version}) x {len(profiles)} profile(s)"
              f" + {random_n} random cases (seed {args.seed}) -> {' '.join(command)}", file=stdout)
        for line in report(outcome, command, mode=args.mode, max_details=args.max_report):
            print(line, file=stdout)
    return outcome.exit_code



def _run_ledger(args: argparse.Namespace, command: list[str], stdout: TextIO, stderr: TextIO) -> int:
    from tailguard.conform import ledger

    try:
        vset = ledger.load_ledger_vectors(args.vectors)
    except VectorError as exc:
        print(f"tailguard conform: {exc}", file=stderr)
        return 2
    profiles = {"all": list(PROFILES), "both": ["seed", "strict"]}.get(args.profile, [args.profile])
    vectors = [v for v in vset.vectors if not args.only or any(v.id.startswith(o) for o in args.only)]
    if args.only and not vectors:
        print(f"tailguard conform: --only: no ledger vector id starts with {', '.join(args.only)}", file=stderr)
        return 2
    random_n = 0 if args.only else max(0, args.random)
    checks = itertools.chain(ledger.vector_checks(vectors, profiles),
                             ledger.random_checks(random_n, args.seed, profiles))
    outcome = ledger.run(command, checks, mode=args.mode, timeout=args.timeout)
    if args.format == "json":
        print(json.dumps({
            "exit": outcome.exit_code, "checks": outcome.checks, "agreed": outcome.agreed,
            "compactions": outcome.compactions, "mode": args.mode, "spec_version": vset.spec_version,
            "vectors_sha256": vset.sha256,
            "mismatches": [{"id": m.check.id, "profile": m.check.profile, "exercises": m.check.what,
                            "log": list(m.check.lines), "expected": m.check.expected, "actual": m.actual,
                            "why": m.why} for m in outcome.mismatches],
            "failure": None if outcome.failure is None else {"kind": outcome.failure.kind,
                                                              "detail": outcome.failure.detail},
        }), file=stdout)
    else:
        print(f"conform --ledger: {len(vectors)} logs (spec {vset.spec_version}) x {len(profiles)} profile(s)"
              f" + {random_n} random logs (seed {args.seed}) -> {' '.join(command)}", file=stdout)
        for line in ledger.report(outcome, command, mode=args.mode, max_details=args.max_report):
            print(line, file=stdout)
    return outcome.exit_code
