"""Issue 30, "fail closed at the edges": every numbered point of the review, pinned.

Each test names its point. The ones that were already fixed on main when the issue was taken
up say so; they reproduce the issue's scenario so that it stays fixed.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tailguard.runtime.ledger import Ledger, LogFailedError
from tests.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def _reads_mode_000() -> bool:
    """Whether this process reads a mode-000 directory (root, or CAP_DAC_OVERRIDE)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        locked = Path(d) / "locked"
        locked.mkdir()
        locked.chmod(0)
        try:
            os.listdir(locked)
            return True
        except PermissionError:
            return False
        finally:
            locked.chmod(0o700)


READS_MODE_000 = _reads_mode_000()
SHAPE: dict[str, Any] = {"summary_input": (8, 48), "summary_covers": (8, 36), "tail_start": 36}
HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 12, "floor_unit": "turns", '
          '"truncator_unit": "turns"}')
REFUSED = [HEADER, '{"event": "append", "count": 40}', '{"event": "truncate", "range": [0, 8]}',
           '{"event": "append", "count": 8}',
           '{"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36], "tail_start": 36}']
CLEAN = [HEADER, '{"event": "append", "count": 48}',
         '{"event": "compact", "summary_input": [0, 48], "summary_covers": [0, 36], "tail_start": 36}']


def _log(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def _other_process(code: str) -> None:
    """Run ``code`` in a second Python process (a second writer), which must succeed."""
    subprocess.run([PY, "-c", textwrap.dedent(code)], check=True, env=ENV, timeout=120)


# -- point 1: a failed write never removes another writer's lines ----------------------------------

def test_1_a_second_writer_lines_survive_the_first_writers_next_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's scenario with two real processes: the disk is full when the first writer
    writes again, after the second appended a truncation and an override compaction. (Fixed on
    main by the brief's section 9 work: the lock and the end-of-file check make the stale first
    writer fail before it writes, so there is nothing of its own to cut back.)"""
    log = tmp_path / "s.jsonl"
    first = Ledger(12, unit="turns", log=open(log, "a", encoding="utf-8"))  # noqa: SIM115
    first.append(40)
    _other_process(f"""
        from tailguard.runtime.ledger import Ledger
        led = Ledger.from_log({str(log)!r})
        led.truncate(0, 8); led.append(8)
        led.commit(summary_input=(8, 48), summary_covers=(8, 36), tail_start=36, override="TICKET-1")
        led.close()
    """)
    before = log.read_bytes()

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "write", full)
        with pytest.raises(LogFailedError, match="another writer continued it"):
            first.append(1)
    assert log.read_bytes() == before
    code, out, _ = run_cli("audit", str(log))
    assert code == 1 and "override" in out


def test_1_a_failed_write_keeps_lines_an_unlocked_writer_appended_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC after part of our line went out, while another process (not taking the lock)
    appended its line: cutting back to where our line began would remove its line."""
    log = tmp_path / "s.jsonl"
    led = Ledger(12, unit="turns", log=open(log, "a", encoding="utf-8"))  # noqa: SIM115
    led.append(40)
    real_write = os.write
    calls: list[int] = []

    def filling(fd: int, data: Any) -> int:
        if calls:
            raise OSError(errno.ENOSPC, "No space left on device")
        calls.append(1)
        done = real_write(fd, bytes(data[:5]))
        _other_process(f"""
            with open({str(log)!r}, "a") as f:
                f.write('{{"event": "append", "count": 8}}\\n')
        """)
        return done

    monkeypatch.setattr(os, "write", filling)
    with pytest.raises(OSError, match="No space left"):
        led.truncate(0, 8)
    monkeypatch.setattr(os, "write", real_write)
    data = log.read_text(encoding="utf-8")
    assert '{"event": "append", "count": 8}\n' in data  # the other writer's line is still there
    with pytest.raises(LogFailedError, match="another writer appended after them"):
        led.append(1)


def test_1_from_log_never_cuts_a_line_appended_while_it_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Ledger.from_log`` cut the file back to the size it had read: a line another writer
    appended in the meantime was removed."""
    log = _log(tmp_path / "s.jsonl", REFUSED[:2])
    real = Ledger._rebuild_from

    def slow_rebuild(self: Ledger, events: Any, where: str) -> None:
        real(self, events, where)
        _other_process(f"""
            with open({str(log)!r}, "a") as f:
                f.write('{{"event": "truncate", "range": [0, 8]}}\\n')
        """)

    monkeypatch.setattr(Ledger, "_rebuild_from", slow_rebuild)
    with pytest.raises(LogFailedError, match="another writer is continuing it"):
        Ledger.from_log(log)
    assert log.read_text(encoding="utf-8").endswith('{"event": "truncate", "range": [0, 8]}\n')


# -- point 3: a replaced or deleted log fails the next write ---------------------------------------

@pytest.mark.parametrize("how", ["rotate", "delete"])
@pytest.mark.parametrize("opened", ["stream", "from_log", "restore"])
def test_3_a_rotated_or_deleted_log_fails_the_next_write_loudly(tmp_path: Path, how: str, opened: str) -> None:
    """Logrotate's rename-then-create (or a delete) under a running durable ledger: the override
    went to the orphaned file and commit returned. The stream form was already fixed on main;
    ``Ledger.from_log`` (which opened the file itself) was not."""
    log = tmp_path / "s.jsonl"
    if opened == "stream":
        led = Ledger(12, unit="turns", log=open(log, "a", encoding="utf-8"), durable=True)  # noqa: SIM115
    elif opened == "from_log":
        _log(log, [HEADER])
        led = Ledger.from_log(log, durable=True)
    else:
        first = Ledger(12, unit="turns", log=open(log, "a", encoding="utf-8"))  # noqa: SIM115
        saved = first.snapshot()
        first.close()
        led = Ledger.restore(saved, path=log, durable=True)
    led.append(40)
    led.truncate(0, 8)
    led.append(8)
    if how == "rotate":
        os.rename(log, tmp_path / "s.jsonl.1")
        log.touch()
    else:
        log.unlink()
    with pytest.raises(LogFailedError, match=r"replaced or rotated|removed"):
        led.commit(**SHAPE, override="TICKET-1")
    with pytest.raises(LogFailedError):
        led.decide(**SHAPE)


def test_3_a_relative_log_name_survives_a_chdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    led = Ledger(12, unit="turns", log=open("s.jsonl", "a", encoding="utf-8"))  # noqa: SIM115
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    led.append(40)  # the path is the one opened, not s.jsonl of the new directory
    led.close()
    assert (tmp_path / "s.jsonl").read_text(encoding="utf-8").count("\n") == 2


# -- point 12: a ledger that lost a write refuses to decide -----------------------------------------

def test_12_flush_false_after_enospc_decides_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Already fixed on main: ``decide()`` raises once a write (here a batch of kept lines) failed."""
    log = tmp_path / "s.jsonl"
    led = Ledger(12, unit="turns", log=open(log, "a", encoding="utf-8"), flush=False)  # noqa: SIM115
    led.append(48)

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        led.flush()
    monkeypatch.undo()
    with pytest.raises(LogFailedError):
        led.decide(summary_input=(0, 48), summary_covers=(0, 36), tail_start=36)
    with pytest.raises(LogFailedError):
        led.commit(summary_input=(0, 48), summary_covers=(0, 36), tail_start=36)
    assert log.read_bytes() == b""  # nothing of the lost batch, and no compaction, reached the log



def test_12_a_stream_without_a_descriptor_that_fails_to_flush_decides_nothing() -> None:
    """With ``flush=False`` and a stream that has no file descriptor (a wrapper, a network
    stream), ``Ledger.flush()`` never flushed it: its ENOSPC went unseen and ``decide()``
    answered ``allow`` from lines the log never took."""
    import io

    class Full(io.StringIO):  # buffers until flushed, then the disk is full
        def flush(self) -> None:
            if self.getvalue():
                raise OSError(errno.ENOSPC, "No space left on device")

    stream = Full()
    led = Ledger(12, unit="turns", log=stream, flush=False)
    led.append(48)
    with pytest.raises(OSError, match="No space left"):
        led.flush()
    with pytest.raises(LogFailedError, match="No space left"):
        led.decide(summary_input=(0, 48), summary_covers=(0, 36), tail_start=36)
    other = Ledger(12, unit="turns", log=Full(), flush=False)
    other.append(48)
    with pytest.raises(OSError, match="No space left"):
        other.close()  # close() flushes it too, and fails loudly
    with pytest.raises(LogFailedError):
        other.decide(summary_input=(0, 48), summary_covers=(0, 36), tail_start=36)

# -- point 2: a fleet run never skips what it cannot read, and follows links one way ----------------

def _fleet(*argv: str) -> tuple[int, str, str]:
    return run_cli("audit", "--workers", "1", *argv)


def test_2_an_unreadable_subdirectory_is_an_error_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A subdirectory the fleet cannot list was skipped: "0 refused", exit 0, a refusal inside.
    (Permission denied is simulated so that the test also runs as root.)"""
    _log(tmp_path / "logs" / "ok" / "a.jsonl", CLEAN)
    _log(tmp_path / "logs" / "locked" / "b.jsonl", REFUSED)
    locked = str(tmp_path / "logs" / "locked")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.abspath(os.fspath(path)) == locked:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(tmp_path)
    for arg in ("logs", "logs/**/*.jsonl", "logs/*/*.jsonl"):
        code, out, err = _fleet("--format", "json", arg)
        summary = json.loads(out)
        assert code == 2, (arg, out, err)
        assert summary["unreadable"] == 1
        assert summary["errors"] == ["logs/locked:0: directory: cannot read (Permission denied); no log below it "
                                     "is audited"]



def test_2_a_file_url_skips_nothing_either(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``file://DIR/`` went through fsspec's walk, which omits a directory it cannot list."""
    pytest.importorskip("fsspec")
    _log(tmp_path / "logs" / "ok" / "a.jsonl", CLEAN)
    _log(tmp_path / "logs" / "locked" / "b.jsonl", REFUSED)
    locked = str(tmp_path / "logs" / "locked")
    real_scandir, real_listdir = os.scandir, os.listdir

    def denied(path: Any) -> None:
        if os.path.abspath(os.fspath(path)) == locked:
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    def scandir(path: Any = ".") -> Any:
        denied(path)
        return real_scandir(path)

    def listdir(path: Any = ".") -> Any:
        denied(path)
        return real_listdir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(os, "listdir", listdir)
    for arg in (f"file://{tmp_path}/logs/", f"file://{tmp_path}/logs", f"file://{tmp_path}/logs/**/*.jsonl"):
        code, out, err = _fleet("--format", "json", arg)
        summary = json.loads(out)
        assert code == 2, (arg, out, err)
        assert summary["errors"] == [f"file://{locked}:0: directory: cannot read (Permission denied); no log "
                                     "below it is audited"], arg

@pytest.mark.skipif(READS_MODE_000, reason="this process reads a mode-000 directory (root)")
def test_2_a_mode_000_subdirectory_is_an_error_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _log(tmp_path / "logs" / "ok" / "a.jsonl", CLEAN)
    _log(tmp_path / "logs" / "locked" / "b.jsonl", REFUSED)
    (tmp_path / "logs" / "locked").chmod(0)
    try:
        monkeypatch.chdir(tmp_path)
        for arg in ("logs", "logs/**/*.jsonl", "logs/*/b.jsonl", "logs/locked/*.jsonl", "logs/locked/sub/*.jsonl"):
            code, out, err = _fleet(arg)
            assert code == 2 and "logs/locked" in out and "(Permission denied)" in out, (arg, out, err)
    finally:
        (tmp_path / "logs" / "locked").chmod(0o755)


def test_2_directory_mode_and_globs_follow_links_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Symlinked subdirectories: not followed in directory mode (exit 0), followed by ``**``
    (exit 1). Both follow them now; a loop is an error record in both (docs/fleet.md)."""
    _log(tmp_path / "elsewhere" / "bad.jsonl", REFUSED)
    _log(tmp_path / "logs" / "a.jsonl", CLEAN)
    (tmp_path / "logs" / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    results = {}
    for arg in ("logs", "logs/**/*.jsonl"):
        code, out, _ = _fleet("--format", "json", arg)
        results[arg] = (code, json.loads(out)["sessions"])
    assert results == {"logs": (1, 2), "logs/**/*.jsonl": (1, 2)}
    (tmp_path / "logs" / "loop").symlink_to(tmp_path / "logs", target_is_directory=True)
    for arg in ("logs", "logs/**/*.jsonl"):
        code, out, _ = _fleet("--format", "json", arg)
        summary = json.loads(out)
        assert code == 2 and summary["unreadable"] == 1, arg
        assert "logs/loop:0: directory: a symbolic link back to a directory above it (a loop)" in summary["errors"][0]
    docs = " ".join((ROOT / "docs" / "fleet.md").read_text(encoding="utf-8").split())
    assert "directory mode and globs follow symbolic links the same way" in docs


# -- point 7: only regular files are opened ---------------------------------------------------------

def _cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "tailguard", *argv], capture_output=True, text=True, env=ENV,
                          timeout=timeout)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_7_a_fifo_is_an_error_naming_it_never_a_hang(tmp_path: Path) -> None:
    """A FIFO named ``*.jsonl``, alone or in a fleet directory, hung ``audit`` forever."""
    fifo = tmp_path / "logs" / "pipe.jsonl"
    _log(tmp_path / "logs" / "a.jsonl", CLEAN)
    os.mkfifo(fifo)
    alone = _cli("audit", str(fifo), timeout=30)
    assert alone.returncode == 2
    assert alone.stderr == f"tailguard audit: cannot read {fifo}: not a regular file: a FIFO\n"
    fleet = _cli("audit", "--workers", "1", str(tmp_path / "logs"), timeout=30)
    assert fleet.returncode == 2 and f"{fifo}:0: file: cannot read (not a regular file: a FIFO)" in fleet.stdout
    for url in (f"file://{fifo}", f"file://{tmp_path}/logs/*.jsonl", f"file://{tmp_path}/logs/"):
        fleet = _cli("audit", "--workers", "1", url, timeout=30)
        assert fleet.returncode == 2, url
        assert f"file://{fifo}:0: file: cannot read (not a regular file: a FIFO)" in fleet.stdout, url
    html = _cli("audit", "--html", str(tmp_path / "r.html"), str(fifo), timeout=30)
    assert html.returncode == 2
    policy = tmp_path / "p.toml"
    os.mkfifo(policy)
    cc = _cli("check-config", str(policy), timeout=30)
    assert cc.returncode == 2 and f"{policy}:0: file: not a regular file: a FIFO" in cc.stderr
    case = _cli("check", str(policy), timeout=30)
    assert case.returncode == 2 and "not a regular file: a FIFO" in case.stderr
    with pytest.raises(OSError, match="not a regular file: a FIFO"):
        Ledger.from_log(fifo)



@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_7_spec_and_vector_readers_refuse_a_fifo(tmp_path: Path) -> None:
    """The spec loader and the conformance vectors read a FIFO with a blocking open (a hang)."""
    fifo = tmp_path / "clauses.toml"
    os.mkfifo(fifo)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": 1, "files": [{"path": "clauses.toml",
                                                                                "sha256": "0" * 64}]}))
    code = f"""
        from pathlib import Path
        from tailguard.conform.vectors import VectorError, load_vectors
        from tailguard.speclang.load import load_spec
        try:
            load_spec({str(fifo)!r})
        except OSError as exc:
            assert "not a regular file: a FIFO" in str(exc), exc
        else:
            raise AssertionError("read a FIFO")
        import tailguard.conform.vectors as v
        v.FORMAT = 1
        try:
            load_vectors(Path({str(tmp_path)!r}))
        except VectorError as exc:
            assert "not a regular file: a FIFO" in str(exc), exc
        else:
            raise AssertionError("read a FIFO")
    """
    subprocess.run([PY, "-c", textwrap.dedent(code)], check=True, env=ENV, timeout=30)

def test_7_a_socket_and_a_device_are_errors(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.jsonl"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(sock_path))
        code, _, err = run_cli("audit", str(sock_path))
        assert code == 2 and "not a regular file: a socket" in err
    finally:
        sock.close()
    code, _, err = run_cli("audit", os.devnull)
    assert code == 2 and err == f"tailguard audit: cannot read {os.devnull}: not a regular file: a character device\n"


# -- point 6: spill files 0600, directories 0700, whatever the umask --------------------------------

@pytest.mark.parametrize("umask", [0o000, 0o022])
def test_6_spill_objects_and_directories_are_private(tmp_path: Path, umask: int) -> None:
    from tailguard.spill import FileSpillStore

    old = os.umask(umask)
    try:
        store = FileSpillStore(tmp_path / "store", create=True)
        store.put(b"a transcript", session="s", range=(0, 3), unit="turns")
    finally:
        os.umask(old)
    for root, _, files in os.walk(tmp_path / "store"):
        assert stat.S_IMODE(os.stat(root).st_mode) == 0o700, root
        for f in files:
            assert stat.S_IMODE(os.stat(os.path.join(root, f)).st_mode) == 0o600, f
    assert sum(len(f) for _, _, f in os.walk(tmp_path / "store")) >= 3  # marker, object, record


# -- point 5: input strings cannot drive a terminal or reorder a page -------------------------------

HOSTILE = "turns\x1b[2J\x1b]8;;http://evil.example\x07click\x1b]8;;\x07\u202eenilno\u2066\r\x9b"


def _no_controls(text: str) -> None:
    assert not any(c in text for c in "\x1b\x07\u202e\u2066\x9b\r"), repr(text)


def test_5_text_audit_escapes_the_unit_and_the_file_name(tmp_path: Path) -> None:
    header = json.loads(HEADER)
    header["unit"] = HOSTILE
    log = _log(tmp_path / "a\u202egol\x1b[1A.jsonl", [json.dumps(header), *REFUSED[1:]])
    code, out, err = run_cli("audit", str(log))
    assert code == 1
    _no_controls(out + err)
    assert "\\x1b[2J" in out and "\\u202e" in out
    code, out, err = run_cli("audit", "--workers", "1", str(log), str(_log(tmp_path / "b.jsonl", CLEAN)))
    assert code == 1
    _no_controls(out + err)


def test_5_check_config_escapes_the_policy_name(tmp_path: Path) -> None:
    text = (ROOT / "examples" / "policies" / "seed-incident.toml").read_text(encoding="utf-8")
    hostile = json.dumps("x\x1b[2K\u202e\nname")  # a TOML basic string is JSON's
    policy = tmp_path / "p.toml"
    policy.write_text("\n".join(f"name = {hostile}" if ln.startswith("name") else ln for ln in text.splitlines()),
                      encoding="utf-8")
    code, out, err = run_cli("check-config", str(policy))
    assert code == 1 and "\\x1b[2K\\u202e\\x0aname" in out
    _no_controls(out + err)
    code, _, _ = run_cli("check-config", "--html", str(tmp_path / "r.html"), str(policy))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert code == 1 and "\u202e" not in page and "\x1b" not in page and "\\u202e" in page


def test_5_html_shows_bidi_overrides_escaped(tmp_path: Path) -> None:
    lines = [*REFUSED[:-1], json.dumps({"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36],
                                        "tail_start": 36, "override": "ok\u202edesufer", "summary": "s\u2067"})]
    log = _log(tmp_path / "a.jsonl", lines)
    code, _, _ = run_cli("audit", "--html", str(tmp_path / "r.html"), str(log))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert code == 1 and "ok\\u202edesufer" in page and "\u202e" not in page and "\u2067" not in page



def test_5_a_carriage_return_from_input_is_escaped_on_stderr_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """stderr kept ``\\r`` raw (for the progress line), so a file name could rewrite the line a
    reviewer reads there. Now only the program's own progress line writes ``\\r``."""
    import io

    import tailguard.cli.audit as cli_audit
    import tailguard.cli.main as cli_main
    from tailguard.cli.main import main

    def forged(argv: Any, out: Any, err: Any) -> int:  # any message that carries input raw
        print("x\rtailguard audit: all allowed", file=err)
        return 0

    with monkeypatch.context() as m:
        m.setattr(cli_main, "_main", forged)
        err_stream = io.StringIO()
        assert main(["audit"], stdout=io.StringIO(), stderr=err_stream) == 0
    assert err_stream.getvalue() == "x\\x0dtailguard audit: all allowed\n"

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    ticks = iter(range(0, 1000, 2))
    monkeypatch.setattr(cli_audit.time, "monotonic", lambda: float(next(ticks)))
    monkeypatch.setattr(cli_audit, "_PROGRESS_EVERY", 10)
    log = _log(tmp_path / "long.jsonl", [HEADER, *['{"event": "append"}'] * 50])
    out, tty = io.StringIO(), Tty()
    assert main(["audit", str(log)], stdout=out, stderr=tty) == 0
    assert "\rtailguard audit: 10 lines" in tty.getvalue()  # the progress line redraws itself

# -- point 4: a report never says safe for input it could not read ----------------------------------

@pytest.mark.parametrize("body", [None, "", "name = 'x'\nbogus = 1\n"])
def test_4_check_config_html_of_unusable_input_is_not_safe(tmp_path: Path, body: str | None) -> None:
    policy = tmp_path / "p.toml"
    if body is not None:
        policy.write_text(body, encoding="utf-8")
    code, _, err = run_cli("check-config", "--html", str(tmp_path / "r.html"), str(policy))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    title = page.split("<title>", 1)[1].split("</title>", 1)[0]
    assert code == 2 and err
    assert "safe" not in title and "(error, " in title
    assert 'data-verdict="error"' in page


def test_4_a_page_for_several_files_shows_the_bad_one(tmp_path: Path) -> None:
    good = ROOT / "examples" / "policies" / "seed-repaired.toml"
    code, _, _ = run_cli("check-config", "--html", str(tmp_path / "r.html"), str(good), str(tmp_path / "missing.toml"))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert code == 2
    assert "missing.toml" in page and page.count('data-verdict="error"') == 1
    assert "(error, profile partitioned)</title>" in page


# -- point 8: the policy view of every shipped example ----------------------------------------------

@pytest.mark.parametrize("name", ["deepagents-offload-proceed", "langchain-clipped-summarizer",
                                  "langchain-summary-message"])
def test_8_check_config_html_of_the_shipped_examples(tmp_path: Path, name: str) -> None:
    """``ValueError: too many values to unpack`` in the policy view: exit 2, not 1."""
    code, _, err = run_cli("check-config", "--html", str(tmp_path / "r.html"),
                           str(ROOT / "examples" / "policies" / f"{name}.toml"))
    assert (code, err) == (1, "")
    assert "The counterexample session" in (tmp_path / "r.html").read_text(encoding="utf-8")


# -- point 9: lone surrogates, and an atomic report ---------------------------------------------------

def _surrogate_log(tmp_path: Path, size: int = 1) -> Path:
    compact = {"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36], "tail_start": 36,
               "override": "\ud800" + "o" * size, "summary": "s\udfff" + "x" * size}
    return _log(tmp_path / "a.jsonl", [*REFUSED[:-1], json.dumps(compact)])


def test_9_a_lone_surrogate_in_an_id_or_override(tmp_path: Path) -> None:
    log = _surrogate_log(tmp_path)
    report = tmp_path / "r.html"
    report.write_text("the old report", encoding="utf-8")
    code, _, err = run_cli("audit", "--html", str(report), str(log))
    assert (code, err) == (1, "")
    page = report.read_text(encoding="utf-8")
    assert "\\ud800" in page and "s\\udfff" in page
    assert run_cli("audit", str(log))[0] == 1


def test_9_a_failed_report_leaves_the_old_one_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log(tmp_path / "a.jsonl", REFUSED)
    report = tmp_path / "r.html"
    report.write_text("the old report", encoding="utf-8")
    def full(src: Any, dst: Any) -> None:  # the last step of writing the new report fails
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    code, _, err = run_cli("audit", "--html", str(report), str(log))
    monkeypatch.undo()
    assert code == 2 and "No space left" in err

    assert report.read_text(encoding="utf-8") == "the old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "r.html"]  # no temporary file left



def test_9_a_failed_emit_trace_leaves_the_old_trace_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``check-config --emit-trace FILE`` wrote in place (a failure midway truncated an existing
    trace); now it writes a temporary file and renames it, so a failure leaves the old one."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("the old trace\n", encoding="utf-8")

    def full(src: Any, dst: Any) -> None:  # the last step of writing the new trace fails
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    code, _, err = run_cli("check-config", "--emit-trace", str(trace),
                           str(ROOT / "examples" / "policies" / "seed-incident.toml"))
    monkeypatch.undo()
    assert code == 2 and "No space left" in err, err
    assert trace.read_text(encoding="utf-8") == "the old trace\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]  # no temporary file left
    code, _, _ = run_cli("check-config", "--emit-trace", str(trace),
                         str(ROOT / "examples" / "policies" / "seed-incident.toml"))
    assert code == 1 and trace.read_text(encoding="utf-8").startswith('{"event": "session"')


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_9_an_atomic_report_writes_through_a_link_with_the_usual_mode(tmp_path: Path, umask: int) -> None:
    """The rename must not replace a link named by ``--html`` (``open`` wrote through it), and a
    new report gets the mode a plain ``open`` gives under the umask (not mkstemp's 0600)."""
    from tailguard.base.safeio import write_atomic

    real = tmp_path / "site" / "r.html"
    real.parent.mkdir()
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "r.html"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"
    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "fresh.html", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.html").stat().st_mode) == 0o666 & ~umask

# -- point 10: a long id is elided in the layout, never in JSON -------------------------------------

def test_10_a_200000_character_id_stays_in_the_page_width(tmp_path: Path) -> None:
    log = _surrogate_log(tmp_path, 200_000)
    code, _, _ = run_cli("audit", "--html", str(tmp_path / "r.html"), str(log))
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert code == 1
    assert "x" * 200 not in page and "o" * 200 not in page and "more characters" in page
    assert len(page) < 100_000
    code, out, _ = run_cli("audit", str(log))  # the text report prints it whole
    assert code == 1 and json.dumps("\ud800" + "o" * 200_000) in out



# -- point 11: a torn last line is the same record alone and in a fleet -----------------------------

def test_11_a_torn_last_line_in_fleet_mode_is_what_the_single_audit_says(tmp_path: Path) -> None:
    torn = tmp_path / "logs" / "torn.jsonl"
    _log(torn, REFUSED[:-1])
    with open(torn, "a", encoding="utf-8") as f:
        f.write('{"event": "compact", "summary_in')
    _log(tmp_path / "logs" / "ok.jsonl", CLEAN)
    alone = run_cli("audit", str(torn))
    assert alone[0] == 0 and "warning: torn last line ignored" in alone[2]
    code, out, _ = _fleet("--format", "json", "--out", str(tmp_path / "r.jsonl"), str(tmp_path / "logs"))
    assert code == 0 and json.loads(out)["unreadable"] == 0
    records = {json.loads(x)["source"]: json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()}
    rec = records[str(torn)]
    assert rec["error"] is None and rec["events"] == 4
    assert rec["warning"] == alone[2].rstrip("\n")
    code, out, _ = _fleet("--strict-tail", str(tmp_path / "logs"))
    assert code == 2 and "torn last line" in out
    assert run_cli("audit", "--strict-tail", str(torn))[0] == 2


def test_11_an_over_limit_torn_last_line_is_classified_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``audit`` called an over-limit torn last line an error, ``Ledger.from_log`` a tear."""
    from tailguard.base import jsonstrict
    from tailguard.runtime.eventlog import EventLogError

    monkeypatch.setattr(jsonstrict, "MAX_LINE_BYTES", 200)
    log = _log(tmp_path / "a.jsonl", CLEAN)
    with open(log, "a", encoding="utf-8") as f:
        f.write('{"event": "append", "count": 1, "pad": "' + "p" * 400)
    code, _, err = run_cli("audit", str(log))
    assert code == 2 and "over the limit" in err
    with pytest.raises(EventLogError, match="over the limit"):
        Ledger.from_log(log, append=False)


# -- point 13: messages -------------------------------------------------------------------------------

def test_13_no_starting_at_at_column(tmp_path: Path) -> None:
    log = _log(tmp_path / "a.jsonl", [HEADER, '{"event": "append", "count": 1, "x": "open}'])
    code, _, err = run_cli("audit", str(log))
    assert code == 2 and "at at" not in err and "Unterminated string starting at column" in err
    torn = tmp_path / "t.jsonl"
    torn.write_text(HEADER + '\n{"event": "app', encoding="utf-8")
    err = run_cli("audit", str(torn))[2]
    assert "starting at column 11" in err and "at, column" not in err
    case = tmp_path / "case.json"
    case.write_text('{"a": "open}', encoding="utf-8")
    code, _, err = run_cli("check", str(case))  # the strict JSON reader's message ended "starting at"
    assert code == 2 and err.rstrip().endswith("invalid JSON: Unterminated string starting at line 1, column 7"), err


def test_13_store_that_is_a_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.write_text("not a store", encoding="utf-8")
    code, _, err = run_cli("spill", "list", "--store", str(store))
    assert code == 2 and "does not exist" not in err and "is not a directory" in err


@pytest.mark.parametrize(("field", "value"), [("format", True), ("time", "yesterday"), ("time", ""),
                                               ("time", "2026-13-45T99:00:00.000000Z")])
def test_13_a_bad_spill_record_fails_verify(tmp_path: Path, field: str, value: Any) -> None:
    from tailguard.spill import FileSpillStore

    store = FileSpillStore(tmp_path / "store", create=True)
    store.put(b"data", session="s", range=(0, 1), unit="turns")
    (record,) = (tmp_path / "store" / "records").iterdir()
    doc = json.loads(record.read_text(encoding="utf-8"))
    doc[field] = value
    raw = (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()
    record.unlink()  # records are named by their content's sha256: plant one that matches its name
    (record.parent / (hashlib.sha256(raw).hexdigest() + ".json")).write_bytes(raw)
    code, out, err = run_cli("spill", "verify", "--store", str(tmp_path / "store"))
    assert code != 0, (out, err)
    assert f"unknown record format {value!r}" in out if field == "format" else f"bad time {value!r}" in out


@pytest.mark.parametrize(("key", "line"), [('"bogus key"', 2), ("'bogus'", 2), ('"e\\u0041"', 2)])
def test_13_a_quoted_unknown_key_is_reported_at_its_line(tmp_path: Path, key: str, line: int) -> None:
    text = (ROOT / "examples" / "policies" / "seed-repaired.toml").read_text(encoding="utf-8")
    policy = tmp_path / "p.toml"
    policy.write_text(f"# a comment\n{key} = 1\n{text}", encoding="utf-8")
    code, _, err = run_cli("check-config", str(policy))
    assert code == 2 and err.startswith(f"tailguard check-config: {policy}:{line}: "), err
    staged = tmp_path / "q.toml"
    staged.write_text(f"{text}\n{key} = 1\n", encoding="utf-8")
    code, _, err = run_cli("check-config", str(staged))
    last = len(staged.read_text(encoding="utf-8").splitlines())
    assert code == 2 and f"{staged}:{last}: " in err, err


def test_13_sarif_uris_are_percent_encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tailguard.pipeline.report import sarif_uri

    monkeypatch.chdir(tmp_path)
    assert sarif_uri("my policy#1%.toml") == {"uri": "my%20policy%231%25.toml", "uriBaseId": "%SRCROOT%"}
    raw = os.fsdecode(b"caf\xe9.toml")  # not UTF-8: a surrogate escape
    uri = sarif_uri(raw)["uri"]
    assert uri == "caf%E9.toml" and uri.isascii()
    assert sarif_uri(str(Path("/") / "elsewhere" / "a b.toml"))["uri"] == "file:///elsewhere/a%20b.toml"


def test_13_a_nul_filled_log_says_so(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_bytes(b"\0" * 64 + b"\n")
    code, _, err = run_cli("audit", str(log))
    assert code == 2 and "NUL bytes" in err and "Expecting value" not in err
    tail = tmp_path / "b.jsonl"
    tail.write_bytes((HEADER + "\n").encode() + b"\0" * 4096)  # a crash left zeros, not a cut line
    code, _, err = run_cli("audit", str(tail))
    assert code == 2 and "NUL bytes" in err
