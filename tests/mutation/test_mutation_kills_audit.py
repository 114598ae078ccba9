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
          "(FILE:LINE: field: reason; with --from, SOURCE: where: why)")


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


# -- run: messages, exit codes, the modes it dispatches to -------------------------------------

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


def _audit(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_html_needs_one_log_as_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = str(tmp_path / "r.html")
    message = ("tailguard audit: --html: needs one log as a file (it is read a second time), not stdin or "
               "several\n")
    assert _audit("--html", page, "-") == (2, "", message)
    assert _audit("--html", page, str(TRACES / "healthy.jsonl"), str(TRACES / "seed-incident.jsonl")) == (
        2, "", message)
    assert not (tmp_path / "r.html").exists()
    # one file: the report as without --html, and the page, of the profile asked for
    healthy = str(TRACES / "healthy.jsonl")
    assert _audit("--profile", "seed", "--html", page, healthy) == (
        0, f"{healthy}: 2 compactions judged, all allowed (profile seed)\n", "")
    assert "<dt>profile</dt><dd>seed</dd>" in (tmp_path / "r.html").read_text(encoding="utf-8")
    code, out, err = _audit("--html", str(tmp_path / "no" / "r.html"), healthy)
    assert (code, out) == (2, f"{healthy}: 2 compactions judged, all allowed (profile strict)\n")
    assert err == f"tailguard audit: --html: cannot write {tmp_path / 'no' / 'r.html'}: No such file or directory\n"


def test_several_logs_are_a_fleet_audit() -> None:
    healthy, seed = str(TRACES / "healthy.jsonl"), str(TRACES / "seed-incident.jsonl")
    code, out, err = _audit("--workers", "1", healthy, seed)
    assert (code, err) == (1, "")
    assert out.startswith("tailguard audit: 2 sessions (profile strict): 1 clean, 1 with refusals, 0 unreadable; ")
    assert f"  {seed}: 1 of 1 compaction refused, first at line 5 (no_hole)\n" in out
    tty = _Tty()
    assert main(["audit", "--workers", "1", healthy, seed], stdout=io.StringIO(), stderr=tty) == 1
    assert "tailguard audit: 2 of 2 sessions" in tty.getvalue()  # the fleet's progress, on its stderr


def test_a_bad_profile_and_an_unreadable_log(tmp_path: Path) -> None:
    assert _audit("--profile", "lenient", str(TRACES / "healthy.jsonl")) == (
        2, "", "tailguard audit: --profile: unknown profile 'lenient'; choose one of seed, strict, partitioned\n")
    missing = str(tmp_path / "missing.jsonl")
    assert _audit(missing) == (2, "", f"tailguard audit: cannot read {missing}: No such file or directory\n")


class _FailingRead(io.BytesIO):
    def __init__(self, exc: OSError) -> None:
        super().__init__(HEADER.encode() + b"\n")
        self.exc = exc
        self.calls = 0

    def readline(self, size: int | None = -1) -> bytes:
        self.calls += 1
        if self.calls > 1:
            raise self.exc
        return super().readline(size)


@pytest.mark.parametrize(("exc", "why"), [(OSError(5, "Input/output error"), "Input/output error"),
                                          (OSError("device gone"), "device gone")])
def test_a_read_error_midway_is_exit_2(monkeypatch: pytest.MonkeyPatch, exc: OSError, why: str) -> None:
    class _Stdin:
        buffer = _FailingRead(exc)

    monkeypatch.setattr(cli_audit.sys, "stdin", _Stdin)
    assert _audit("-") == (2, "", f"tailguard audit: cannot read <stdin>: {why}\n")


def test_a_log_that_is_not_utf8_is_read_as_bytes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER.encode() + b'\n{"event": "append", "x": "\xff"}\n')
    assert _audit(str(path)) == (2, "", f"{path}:2: line: not valid UTF-8 (byte 27: invalid start byte)\n")


def test_a_torn_last_line_warns_or_with_strict_tail_fails(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(HEADER.encode() + b'\n{"event": "append", "count": 3}\n{"event": "app')
    why = "not valid JSON: Unterminated string starting at column 11"
    code, out, err = _audit(str(path))
    assert (code, out) == (0, f"{path}: 0 compactions judged, all allowed (profile strict)\n")
    assert err == (f"{path}:3: warning: torn last line ignored (no line end; {why}); judged lines 1 to 2 "
                   "(--strict-tail makes this an error)\n")
    assert _audit("--strict-tail", str(path)) == (
        2, "", f"{path}:3: line: torn last line (no line end; {why}); without --strict-tail the lines "
               "before it are judged\n")


def test_refused_attempts_logged_are_counted(tmp_path: Path) -> None:
    refusal = ('{"event": "refusal", "summary_input": [0, 2], "summary_covers": [0, 1], "tail_start": 1, '
               '"failed": ["no_hole"], "holes": [[0, 1]]}')
    one = tmp_path / "one.jsonl"
    one.write_text(f'{HEADER}\n{{"event": "append", "count": 2}}\n{refusal}\n')
    two = tmp_path / "two.jsonl"
    two.write_text(f'{HEADER}\n{{"event": "append", "count": 2}}\n{refusal}\n{refusal}\n{refusal}\n')
    tail = " refused {} logged by the guard and not committed\n"
    assert _audit(str(one)) == (
        0, f"{one}: 0 compactions judged, all allowed (profile strict); 1" + tail.format("attempt"), "")
    assert _audit(str(two)) == (
        0, f"{two}: 0 compactions judged, all allowed (profile strict); 3" + tail.format("attempts"), "")
    assert _audit("--summary", "--format", "json", str(two)) == (
        0, '{"judged": 0, "violations": 0, "refusals": 3}\n', "")


def test_audit_writes_the_full_json_report_unless_asked_for_a_summary() -> None:
    out = io.StringIO()
    lines = [HEADER.encode(), b'{"event": "append", "count": 2}',
             b'{"event": "compact", "summary_input": [0, 2], "summary_covers": [0, 1], "tail_start": 1}']
    assert cli_audit._audit(lines, "w", "strict", "json", out) == (1, 1)
    assert out.getvalue().startswith('{"compactions": [{"line": 3, ')


def test_the_report_is_spooled_in_utf8_and_goes_to_disk_past_its_memory_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import codecs
    import tempfile

    made: list[tuple[tuple[object, ...], dict[str, object], tempfile.SpooledTemporaryFile[str]]] = []
    real = tempfile.SpooledTemporaryFile

    def spool(*args: object, **kwargs: object) -> tempfile.SpooledTemporaryFile[str]:
        f = real(*args, **kwargs)  # type: ignore[call-overload]
        made.append((args, kwargs, f))
        return f  # type: ignore[no-any-return]

    monkeypatch.setattr(cli_audit.tempfile, "SpooledTemporaryFile", spool)
    monkeypatch.setattr(cli_audit, "_SPOOL_BYTES", 64)
    path = tmp_path / "t.jsonl"
    # a lone surrogate and a non-ASCII character in summary ids: the text report names them
    path.write_text(HEADER + '\n{"event": "append", "count": 4}\n{"event": "truncate", "range": [0, 1]}\n'
                    '{"event": "compact", "summary_input": [1, 4], "summary_covers": [1, 2], "tail_start": 2, '
                    '"summary": "\\udc80\u00e9"}\n{"event": "append", "count": 2}\n'
                    '{"event": "compact", "summary_input": [2, 6], "summary_covers": [2, 4], "tail_start": 4, '
                    '"saw": [], "override": "ops"}\n', encoding="utf-8")
    code, out, err = _audit(str(path))
    assert (code, err) == (1, "")
    assert "summary '\\udc80\u00e9' (line 4)" in out  # the surrogate escaped, the rest as it is
    ((args, kwargs, f),) = made
    assert args == (64,) and kwargs["mode"] == "w+" and kwargs["errors"] == "backslashreplace"
    assert codecs.lookup(str(kwargs["encoding"])).name == "utf-8"
    assert f._rolled  # type: ignore[attr-defined]  # past 64 bytes it went to a file
