"""Entry point: ``tailguard COMMAND ...``.

Each subcommand lives in its own module under ``tailguard.cli`` and exposes
``add_arguments(parser)`` and ``run(args, stdout, stderr) -> int``. Modules are
imported only when their command runs, so ``tailguard check`` never loads z3.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from typing import Any, Protocol, TextIO

from tailguard.base.safeio import printable

#: set (to anything) to see the traceback of an internal error instead of the one-line report
DEBUG_ENV = "TAILGUARD_TRACEBACK"
REPORT_HINT = "this is a bug in tailguard: please report it with the command and its input"

# command name -> (module under tailguard.cli, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "check": ("check", "decide one compaction case (exit 0 allow, 1 refuse, 2 bad input)"),
    "audit": ("audit", "replay a JSONL event log and judge every compaction"),
    "import": ("import_logs", "turn what a framework persisted into event logs (docs/import.md)"),
    "check-config": ("check_config", "prove a compaction policy safe for every session, or break it"),
    "prove": ("prove", "run the theorems about the spec (z3)"),
    "gen": ("gen", "regenerate derived files from spec/ (--check: fail when stale)"),
    "spill": ("spill", "durable, content-addressed spill store"),
    "conform": ("conform", "run another implementation over the conformance vectors"),
    "verify-guard": ("verify_guard", "check a Python guard function against the spec"),
    "doctor": ("doctor", "check the installed frameworks against each preset and adapter, offline"),
}


# packages some commands need that the runtime guard never does -> the extra that installs them
#: The user extra that brings each optional package a command needs (pyproject.toml).
OPTIONAL_DEPENDENCIES = {"z3": "check-config", "cvc5": "prove", "hypothesis": "verify", "crosshair": "verify"}


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


class _PipeSafe(io.TextIOBase):
    """A text stream whose reader may go away: after a broken pipe, output is dropped.

    The command runs to its end and its exit code (the verdict) is what ``main`` returns:
    ``tailguard audit x | head`` under ``pipefail`` fails when the audit refuses, never 0
    because the reader stopped early. ``buffer`` is guarded the same way.
    """

    def __init__(self, stream: TextIO, keep: str = "\n") -> None:
        self._stream = stream
        self._keep = keep  # the controls a report writes itself (its line ends)
        self.broken = False
        raw = getattr(stream, "buffer", None)
        self._buffer = None if raw is None else _PipeSafeBinary(raw, self)

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                # the last line of defence against input that would drive the terminal: every
                # other control character, bidi override or lone surrogate is shown escaped
                self._stream.write(printable(text, self._keep))
            except BrokenPipeError:
                self._break()
        return len(text)

    def write_raw(self, text: str) -> int:
        """Write as it is, unescaped: data the user asked for (``spill get`` to a text-only
        stream) and the program's own controls (a progress line's ``\\r``, through
        :func:`tailguard.base.safeio.write_control`)."""
        if not self.broken:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._break()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._break()

    def _break(self) -> None:
        self.broken = True
        if self._stream is sys.stdout or self._stream is sys.__stdout__:
            # Python flushes stdout again at exit: point it at /dev/null so that flush is silent
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self._stream.fileno())
                os.close(devnull)
            except (OSError, ValueError):
                pass

    def isatty(self) -> bool:
        return not self.broken and self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def buffer(self) -> Any:
        if self._buffer is None:
            raise AttributeError("buffer")
        return self._buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", "utf-8") or "utf-8"

    def writable(self) -> bool:
        return True

    def getvalue(self) -> str:
        """For a ``StringIO`` underneath (tests)."""
        return self._stream.getvalue()  # type: ignore[attr-defined,no-any-return]


class _PipeSafeBinary:
    def __init__(self, raw: Any, owner: _PipeSafe) -> None:
        self._raw, self._owner = raw, owner

    def write(self, data: bytes) -> int:
        if not self._owner.broken:
            try:
                self._raw.write(data)
            except BrokenPipeError:
                self._owner._break()
        return len(data)

    def flush(self) -> None:
        if not self._owner.broken:
            try:
                self._raw.flush()
            except BrokenPipeError:
                self._owner._break()


def main(
    argv: list[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run the CLI as a function; returns the exit code.

    Exit codes never lie: a closed stdout keeps the command's verdict, and an internal error
    (a bug) is exit 2 with one line on stderr and a hint to report it, never a traceback
    (set ``TAILGUARD_TRACEBACK=1`` to see it).
    """
    safe = _PipeSafe(stdout if stdout is not None else sys.stdout)
    out: TextIO = safe  # type: ignore[assignment]
    err: TextIO = _PipeSafe(stderr if stderr is not None else sys.stderr)  # type: ignore[assignment]
    try:
        code = _main(argv, out, err)
        safe.flush()
        return code
    except KeyboardInterrupt:
        print("tailguard: interrupted", file=err)
        return 130
    except Exception as exc:  # a bug: one line and exit 2, never a traceback read as a verdict
        if os.environ.get(DEBUG_ENV):
            raise
        command = next((a for a in (sys.argv[1:] if argv is None else argv) if a in COMMANDS), "")
        what = f"tailguard {command}".rstrip()
        detail = _one_line(f"{type(exc).__name__}: {exc}")
        print(f"{what}: internal error ({detail}); {REPORT_HINT} ({DEBUG_ENV}=1 shows the traceback)",
              file=err)
        return 2


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def _main(argv: list[str] | None, out: TextIO, err: TextIO) -> int:
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
        if extra == "check-config" and args.command == "prove":
            extra = "prove"  # the same solvers under the name of the command
        print(f"tailguard {args.command}: needs the optional package {top!r}: "
              f"pip install 'tailguard[{extra}]' (or pip install -e '.[{extra}]' in a checkout)", file=err)
        return 2


def console_main() -> None:
    sys.exit(main())
