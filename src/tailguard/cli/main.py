"""Entry point: ``tailguard COMMAND ...``.

Each subcommand lives in its own module under ``tailguard.cli`` and exposes
``add_arguments(parser)`` and ``run(args, stdout, stderr) -> int``. Modules are
imported only when their command runs, so ``tailguard check`` never loads z3.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Protocol, TextIO

# command name -> (module under tailguard.cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "decide one compaction case (exit 0 allow, 1 refuse, 2 bad input)"),
    "audit": ("audit", "replay a JSONL event log and judge every compaction"),
    "check-config": ("check_config", "prove a compaction policy safe for every session, or break it"),
    "prove": ("prove", "run the theorems about the spec (z3)"),
    "gen": ("gen", "regenerate derived files from spec/ (--check: fail when stale)"),
    "spill": ("spill", "durable, content-addressed spill store"),
    "conform": ("conform", "run another implementation over the conformance vectors"),
    "verify-guard": ("verify_guard", "check a Python guard function against the spec"),
}


# packages some commands need that the runtime guard never does -> the extra that installs them
OPTIONAL_DEPENDENCIES = {"z3": "prove", "hypothesis": "dev", "crosshair": "dev"}


class CommandModule(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int: ...


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors with exit code 2 and no traceback (its default)."""


def _load(name: str) -> Any:
    module_name, _ = COMMANDS[name]
    try:
        mod = importlib.import_module(f"tailguard.cli.{module_name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"tailguard.cli.{module_name}":
            return None
        raise
    return mod


def version_string() -> str:
    """``tailguard 0.1.0 (spec 1.1.0)``: the package and the spec its checker was generated from."""
    from tailguard import SPEC_VERSION, __version__

    return f"tailguard {__version__} (spec {SPEC_VERSION})"


def build_parser(selected: str | None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tailguard",
        description="Refuse lossy compaction whenever recovery cannot be proven.",
        epilog="exit codes: each command's --help lists its own; 2 for a usage error",
    )
    parser.add_argument("--version", action="version", version=version_string(),
                        help="print the package and spec versions and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=help_text)
        if name == selected:
            mod = _load(name)
            if mod is not None:
                mod.add_arguments(sp)
    return parser


def main(
    argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run the CLI as a function; returns the exit code."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    args_list = list(sys.argv[1:] if argv is None else argv)
    selected = next((a for a in args_list if not a.startswith("-")), None)
    parser = build_parser(selected if selected in COMMANDS else None)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse already printed the message
        return int(exc.code) if isinstance(exc.code, int) else 2
    if args.command is None:
        parser.print_help(out)
        return 2
    mod = _load(args.command)
    if mod is None:
        print(f"tailguard: command {args.command!r} is not available in this build", file=err)
        return 2
    try:
        code: int = mod.run(args, out, err)
        return code
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top not in OPTIONAL_DEPENDENCIES:
            raise
        extra = OPTIONAL_DEPENDENCIES[top]
        print(f"tailguard {args.command}: needs the optional package {top!r}: "
              f"pip install 'tailguard[{extra}]' (or pip install -e '.[{extra}]' in a checkout)", file=err)
        return 2
    except KeyboardInterrupt:
        print("tailguard: interrupted", file=err)
        return 130
    except BrokenPipeError:
        return 0


def console_main() -> None:
    sys.exit(main())
