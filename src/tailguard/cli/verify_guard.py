"""``tailguard verify-guard MODULE:FUNCTION [--profile seed|strict|partitioned]``: check a Python guard.

Runs the conformance vectors, then Hypothesis differential testing against the naive
reference, then ``crosshair diffbehavior`` when the guard takes every case field; reports the
smallest disagreeing case. Exit 0 agrees, 1 disagrees, 2 the guard cannot be loaded or called.
See :mod:`tailguard.conform.guard` for the guard protocol and how arguments are adapted.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from tailguard._generated.checker import PROFILES
from tailguard.conform.vectors import VectorError, load_vectors


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 the guard agrees on every case tried, 1 a disagreement found, 2 the guard "
                     "cannot be loaded or called, or the vectors are unusable")
    parser.add_argument("guard", metavar="MODULE:FUNCTION", help="the guard, e.g. mypkg.guards:check_compaction")
    parser.add_argument("--profile", choices=PROFILES, default="strict",
                        help="the contract to check against (default strict)")
    parser.add_argument("--examples", type=int, default=500, metavar="N",
                        help="Hypothesis examples (0 skips the phase; default 500)")
    parser.add_argument("--no-crosshair", action="store_true", help="skip the crosshair diffbehavior phase")
    parser.add_argument("--crosshair-timeout", type=int, default=10, metavar="SEC",
                        help="crosshair --per_condition_timeout (default 10)")
    parser.add_argument("--vectors", type=Path, default=None, metavar="DIR",
                        help="vector directory (default: the kit installed with tailguard, else spec/vectors "
                             "of this checkout)")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    from tailguard.conform.guard import GuardError, render, verify

    try:
        vectors = load_vectors(args.vectors).vectors
    except VectorError as exc:
        print(f"tailguard verify-guard: {exc}", file=stderr)
        return 2
    try:
        verdict = verify(args.guard, profile=args.profile, vectors=vectors, examples=args.examples,
                         crosshair=not args.no_crosshair, crosshair_timeout=args.crosshair_timeout)
    except GuardError as exc:
        print(f"tailguard verify-guard: {exc}", file=stderr)
        return 2
    for line in render(verdict, args.guard):
        print(line, file=stdout)
    return verdict.exit_code
