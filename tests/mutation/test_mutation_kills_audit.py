"""Tests written to kill surviving mutants of ``tailguard.cli.audit`` (tools/mutation.sh).

They pin what the older tests left loose: the exact ``tailguard audit --help`` texts (options,
metavars, choices, defaults, the exit-code epilog: user-facing contract), the progress line on a
terminal (its counts, megabytes, percentage, redraw interval and the erase at the end), and the
exact messages and exit codes of ``run``.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

import tailguard.cli.audit as cli_audit
from tailguard.cli.main import main

HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 2, '
          '"floor_unit": "turns", "truncator_unit": "turns"}')

# The options `tailguard audit` itself defines (cli/audit.py), exactly as --help shows them.
OWN_OPTIONS = {
    "trace": ((), "TRACE.jsonl", None, None, "the event log ('-' reads stdin)"),
    "format": (("--format",), None, ("text", "json"), "text",
               "text: a post-mortem of every refused compaction, each hole explained once (default); "
               "json: one object with every compaction's full hole list"),
    "summary": (("--summary",), None, None, False, "counts only: compactions judged, refused, refusals logged"),
    "html": (("--html",), "REPORT.html", None, None,
             "also write the session as one self-contained HTML page (docs/html-report.md)"),
    "strict_tail": (("--strict-tail",), None, None, False,
                    "a torn last line (no line end, not valid JSON: a writer killed mid-line) is an input "
                    "error (exit 2); by default it is a warning and the lines before it are judged"),
}
EPILOG = ("exit codes: 0 every compaction allowed, 1 some compaction refused, 2 unusable input "
          "(FILE:LINE: field: reason)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tailguard audit")
    cli_audit.add_arguments(parser)
    return parser


def test_help_texts_of_the_audit_options_are_pinned() -> None:
    parser = _parser()
    assert parser.epilog == EPILOG
    seen = {}
    for action in parser._actions:
        if action.dest in OWN_OPTIONS:
            seen[action.dest] = (tuple(action.option_strings), action.metavar,
                                 tuple(action.choices) if action.choices else None, action.default, action.help)
    assert seen == OWN_OPTIONS
    # the flags take no value; the others take exactly one
    flags = {a.dest: a.nargs for a in parser._actions if a.dest in OWN_OPTIONS}
    assert flags == {"trace": None, "format": None, "summary": 0, "html": None, "strict_tail": 0}
    ns = parser.parse_args(["--summary", "--strict-tail", "--format", "json", "--html", "r.html", "t.jsonl"])
    assert (ns.summary, ns.strict_tail, ns.format, ns.html, ns.trace) == (True, True, "json", "r.html", "t.jsonl")
    with pytest.raises(SystemExit):
        parser.parse_args(["--format", "xml", "t.jsonl"])


def test_the_rendered_help_shows_the_metavars_and_the_epilog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    text = _parser().format_help()
    assert "[--format {text,json}] [--summary] [--html REPORT.html] [--strict-tail]" in text
    assert "  TRACE.jsonl " in text and text.rstrip().endswith(EPILOG)
    # the profile option and the fleet options are added too (their texts are pinned where defined)
    assert "--profile PROFILE" in text and "fleet audit (many logs; docs/fleet.md)" in text


class _Stream(io.BytesIO):
    """A log whose reported position is scaled (each 5-byte line counts as 150,000 bytes)."""

    def __init__(self, data: bytes, seekable: bool = True) -> None:
        super().__init__(data)
        self._seekable = seekable

    def seekable(self) -> bool:
        return self._seekable

    def tell(self) -> int:
        return super().tell() * 30_000


class _Err(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.flushed_at: list[int] = []

    def flush(self) -> None:
        self.flushed_at.append(len(self.getvalue()))


def _clock(monkeypatch: pytest.MonkeyPatch, times: list[float]) -> None:
    ticks: Iterator[float] = iter(times)
    monkeypatch.setattr(cli_audit.time, "monotonic", lambda: next(ticks))
    monkeypatch.setattr(cli_audit, "_PROGRESS_EVERY", 10)


def test_progress_line_counts_megabytes_and_percent(monkeypatch: pytest.MonkeyPatch) -> None:
    # clock: start 0; checks at lines 10, 20, 30, 40, 50 see 0.5, 1.0, 1.5, 2.0, 2.1
    _clock(monkeypatch, [0.0, 0.5, 1.0, 1.5, 2.0, 2.1])
    err = _Err()
    lines = list(cli_audit._progress(_Stream(b"abcd\n" * 55), 4_000_000, err))  # type: ignore[arg-type]
    assert lines == [b"abcd\n"] * 55
    # drawn at line 20 (exactly 1 s after the start: 3.0 MB of 4) and at line 40 (1 s after the
    # last draw; the check at 1.5 s is only 0.5 s after it); then erased
    first = "\rtailguard audit: 20 lines, 3 MB (75%)  "
    second = "\rtailguard audit: 40 lines, 6 MB (150%)  "
    erase = "\r" + " " * 72 + "\r"
    assert err.getvalue() == first + second + erase
    assert err.flushed_at == [len(first), len(first + second), len(first + second + erase)]


def test_progress_rounds_megabytes_and_floors_the_percentage(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch, [0.0, 5.0])
    err = _Err()
    # line 10 at 1.5 MB (10 x 5 x 30,000 bytes) of 1.6 MB: 93.75% shown as 93%, 1.5 MB as 2
    list(cli_audit._progress(_Stream(b"abcd\n" * 10), 1_600_000, err))  # type: ignore[arg-type]
    assert err.getvalue().startswith("\rtailguard audit: 10 lines, 2 MB (93%)  \r")


def test_progress_of_an_unseekable_stream_or_unknown_size(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch, [0.0, 5.0])
    err = _Err()
    list(cli_audit._progress(_Stream(b"abcd\n" * 12, seekable=False), 1, err))  # type: ignore[arg-type]
    assert err.getvalue().startswith("\rtailguard audit: 10 lines, 0 MB (0%)  \r")
    _clock(monkeypatch, [0.0, 5.0])
    err = _Err()
    list(cli_audit._progress(_Stream(b"abcd\n" * 12), 0, err))  # type: ignore[arg-type]
    assert err.getvalue().startswith("\rtailguard audit: 10 lines, 2 MB  \r")  # no size: no percentage


def test_no_progress_line_before_a_second_has_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    _clock(monkeypatch, [0.0, 0.9, 0.95])
    err = _Err()
    assert len(list(cli_audit._progress(_Stream(b"abcd\n" * 25), 1, err))) == 25  # type: ignore[arg-type]
    assert (err.getvalue(), err.flushed_at) == ("", [])  # nothing drawn: nothing erased either


class _Tty(_Err):
    def isatty(self) -> bool:
        return True


def _log(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text(HEADER + "\n" + '{"event": "append"}\n' * n)
    return path


def test_audit_of_a_file_on_a_terminal_shows_its_share_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _log(tmp_path, 30)
    size = path.stat().st_size
    _clock(monkeypatch, [0.0, 5.0, 5.1, 5.2])
    out, err = io.StringIO(), _Tty()
    assert main(["audit", str(path)], stdout=out, stderr=err) == 0
    at10 = len(HEADER) + 1 + 9 * len('{"event": "append"}\n')
    assert err.getvalue() == (f"\rtailguard audit: 10 lines, 0 MB ({100 * at10 // size}%)  "
                              + "\r" + " " * 72 + "\r")
    assert out.getvalue() == f"{path}: 0 compactions judged, all allowed (profile strict)\n"


def test_audit_of_stdin_on_a_terminal_shows_no_percentage(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (HEADER + "\n" + '{"event": "append"}\n' * 30).encode()

    class _Stdin:
        buffer = io.BytesIO(data)  # no file descriptor: the size is unknown

    monkeypatch.setattr(cli_audit.sys, "stdin", _Stdin)
    _clock(monkeypatch, [0.0, 5.0, 5.1, 5.2])
    out, err = io.StringIO(), _Tty()
    assert main(["audit", "-"], stdout=out, stderr=err) == 0
    assert err.getvalue() == "\rtailguard audit: 10 lines, 0 MB  " + "\r" + " " * 72 + "\r"
    assert out.getvalue() == "<stdin>: 0 compactions judged, all allowed (profile strict)\n"
