"""``tailguard prove [--format text|json] [--only ID ...] [--solver z3|cvc5|both] [--rlimit N]``:
run the theorems about the spec.

Exit 0 only when every theorem has its expected outcome (proved, or a witness found and
replayed); a counterexample, a missing witness, a replay mismatch, a disagreement between
the solvers or unknown exits 1. Exit 2: bad usage, the spec or the solver missing.
The theorems live in the top-level ``proofs/`` package (see ``tailguard.tooling.project``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from typing import TextIO

from tailguard.base.safeio import write_control
from tailguard.tooling.theorems import DEFAULT_RLIMIT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 every theorem holds, 1 some theorem failed or was unknown (budget), "
                     "2 setup (no spec/ or proofs/, unknown --only id)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: one line per theorem (default); json: one object per theorem")
    parser.add_argument("--only", nargs="+", metavar="ID", help="run only these theorem ids")
    parser.add_argument("--solver", choices=("z3", "cvc5", "both"), default="z3",
                        help="who decides each query: z3 (default), cvc5 (models still come from z3), "
                             "or both, which must agree (a disagreement fails)")
    parser.add_argument("--rlimit", type=_positive, metavar="N", default=None,
                        help=f"z3 resource budget per query (default {DEFAULT_RLIMIT:,}); "
                             "an exhausted budget is unknown, which fails")
    parser.add_argument("--cvc5-rlimit", type=_positive, metavar="N", default=None,
                        help="cvc5 resource budget per query and strategy (default 200,000,000)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {value}")
    return value


def load_theorems() -> None:
    """Import every proof module so that its theorems register."""
    from tailguard.tooling.project import project_root

    root = str(project_root())
    if root not in sys.path:
        sys.path.insert(0, root)
    proofs = importlib.import_module("proofs")
    for info in pkgutil.iter_modules(proofs.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"proofs.{info.name}")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    import z3  # noqa: F401  (a missing solver is reported by the dispatcher)

    from tailguard.backends import cvc5_check
    from tailguard.backends.z3_eval import solver_settings
    if args.solver != "z3" and not cvc5_check.available():
        print(f"tailguard prove: --solver {args.solver} needs cvc5: pip install 'tailguard[prove]' "
              "(or pip install cvc5)", file=stderr)
        return 2

    from tailguard.speclang.load import SpecError
    from tailguard.tooling.project import ProjectNotFound
    try:
        load_theorems()
    except (ProjectNotFound, SpecError) as exc:
        print(f"tailguard prove: {exc}", file=stderr)
        return 2
    from tailguard.tooling.theorems import REGISTRY

    selected = list(REGISTRY.values())
    if args.only:
        unknown = sorted(set(args.only) - set(REGISTRY))
        if unknown:
            print(f"tailguard prove: --only: no theorem {', '.join(unknown)}; "
                  f"known: {', '.join(REGISTRY)}", file=stderr)
            return 2
        selected = [t for t in selected if t.id in args.only]
    outcomes = []
    live = args.format == "text" and stdout.isatty()
    for thm in selected:
        if live:
            print(f"     {thm.id:<5} {thm.title} ...", end="", file=stdout, flush=True)
        with solver_settings(solver=args.solver, rlimit=args.rlimit, cvc5_rlimit=args.cvc5_rlimit):
            outcome = thm.run()
        outcomes.append(outcome)
        if args.format == "text":
            mark = "ok " if outcome.passed else "FAIL"
            if live:
                write_control(stdout, "\r")  # over the "..." line drawn above
            print(f"{mark} {thm.id:<5} {outcome.result.status:<14} {outcome.seconds:7.3f}s  {thm.title}",
                  file=stdout)
            if thm.bound:
                print(f"          bounded: {thm.bound}", file=stdout)
            if outcome.result.detail and not outcome.passed:
                print(f"          {outcome.result.detail}", file=stdout)
            if outcome.result.note:
                print(f"          note: {outcome.result.note}", file=stdout)
            if outcome.result.model is not None:
                print(f"          case: {json.dumps(outcome.result.model)}", file=stdout)
    failed = [o for o in outcomes if not o.passed]
    if args.format == "json":
        print(json.dumps({"solver": args.solver, "theorems": [o.to_json() for o in outcomes],
                          "failed": len(failed)}, indent=2), file=stdout)
    else:
        spent = {s: sum(o.solver_seconds.get(s, 0.0) for o in outcomes) for s in ("z3", "cvc5")}
        print("solver time: " + ", ".join(f"{s} {v:.1f}s" for s, v in spent.items() if v), file=stdout)
        print(f"{len(outcomes) - len(failed)} of {len(outcomes)} theorems hold"
              + (f"; FAILED: {', '.join(o.theorem.id for o in failed)}" if failed else ""), file=stdout)
    return 1 if failed else 0
