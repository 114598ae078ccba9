"""``tailguard check [--profile seed|strict|partitioned] [--format text|json] CASE.json``.

Exit 0 allow, 1 refuse, 2 unusable input (the message names the field).
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from tailguard._generated.checker import check, explain
from tailguard.cli.profile_option import add_profile_option, profile_problem
from tailguard.runtime.case import InputError, display_name, load_case_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "exit codes: 0 allow, 1 refuse, 2 unusable input (the message names the field)"
    parser.add_argument("case", metavar="CASE.json", help="the case file ('-' reads stdin)")
    add_profile_option(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: the decision and one sentence per failed clause (default); json: "
                             '{"decision", "failed", "holes"}')


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    if (problem := profile_problem(args.profile)) is not None:
        print(f"tailguard check: {problem}", file=stderr)
        return 2
    try:
        fields = load_case_file(args.case)
    except InputError as exc:
        print(f"tailguard check: {exc}", file=stderr)
        return 2
    decision = check(args.profile, **fields)
    if args.format == "json":
        print(json.dumps(decision.to_json()), file=stdout)
    else:
        where = display_name(args.case) if args.case != "-" else "<stdin>"
        print(f"{where}: {decision.decision} (profile {args.profile})", file=stdout)
        for line in explain(args.profile, decision, **fields):
            print(f"  refuse {line}", file=stdout)
    return 0 if decision.allowed else 1
