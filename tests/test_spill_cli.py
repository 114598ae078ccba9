"""``tailguard spill`` from outside: exit codes, exact bytes on stdout, messages, a real process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tailguard.cli.main import main
from tailguard.spill import FileSpillStore, make_handle

BINARY = bytes(range(256)) * 64 + b"\xff\xfe not utf-8 \x00\r\n"


class Run:
    """Result of one in-process CLI call; stdout keeps raw bytes."""

    def __init__(self, argv: list[str]) -> None:
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n", write_through=True)
        err = io.StringIO()
        self.code = main(argv, stdout=out, stderr=err)
        out.flush()
        self.raw = raw.getvalue()
        self.out = self.raw.decode("utf-8", errors="replace")
        self.err = err.getvalue()


@pytest.fixture
def spilled(tmp_path: Path) -> tuple[str, str, Path]:
    src = tmp_path / "transcript.bin"
    src.write_bytes(BINARY)
    store = str(tmp_path / "store")
    run = Run(["spill", "put", "--store", store, str(src), "--session", "s1", "--range", "0", "8",
               "--unit", "turns"])  # fmt: skip
    assert run.code == 0, run.err
    return store, run.out.splitlines()[-1], src


def test_put_prints_the_handle_as_last_line(spilled: tuple[str, str, Path]) -> None:
    _, handle, _ = spilled
    assert handle == make_handle(BINARY)


def test_get_writes_exact_bytes(spilled: tuple[str, str, Path]) -> None:
    store, handle, _ = spilled
    run = Run(["spill", "get", "--store", store, handle])
    assert (run.code, run.raw, run.err) == (0, BINARY, "")


def test_get_without_binary_stdout_falls_back_to_text(spilled: tuple[str, str, Path]) -> None:
    store, handle, _ = spilled
    out = io.StringIO()
    assert main(["spill", "get", "--store", store, handle], stdout=out, stderr=io.StringIO()) == 0
    assert out.getvalue().encode("utf-8", errors="surrogateescape") == BINARY


@pytest.mark.parametrize(
    ("handle", "code", "message"),
    [
        ("sha256:" + "0" * 64, 1, "no spill with handle sha256:" + "0" * 64),
        ("sha256:abc", 2, "malformed handle 'sha256:abc'"),
        ("sha256:../../etc/passwd", 2, "malformed handle"),
        ("md5:d41d8cd98f00b204e9800998ecf8427e", 2, "foreign handle 'md5:"),
    ],
)
def test_get_errors(spilled: tuple[str, str, Path], handle: str, code: int, message: str) -> None:
    store, _, _ = spilled
    run = Run(["spill", "get", "--store", store, handle])
    assert run.code == code
    assert run.raw == b""
    assert run.err.startswith("tailguard spill get: ") and message in run.err
    assert "Traceback" not in run.err


def test_get_corrupt_exits_1_and_prints_nothing(spilled: tuple[str, str, Path]) -> None:
    store, handle, _ = spilled
    digest = handle.split(":")[1]
    obj = Path(store) / "objects" / digest[:2] / digest[2:]
    obj.write_bytes(BINARY[:-1] + b"X")
    run = Run(["spill", "get", "--store", store, handle])
    assert (run.code, run.raw) == (1, b"")
    assert "is corrupt" in run.err
    verify = Run(["spill", "verify", "--store", store])
    assert verify.code == 1
    assert f"PROBLEM corrupt-object objects/{digest[:2]}/{digest[2:]}" in verify.out
    assert verify.out.splitlines()[-1] == "1 record(s), 1 object(s) checked: 1 problem(s)"


def test_verify_intact_store(spilled: tuple[str, str, Path]) -> None:
    store, _, _ = spilled
    run = Run(["spill", "verify", "--store", store])
    assert run.code == 0
    assert run.out == "1 record(s), 1 object(s) checked: all intact\n"


def test_list_text_and_json(spilled: tuple[str, str, Path]) -> None:
    store, handle, src = spilled
    assert Run(["spill", "put", "--store", store, str(src)]).code == 0
    text = Run(["spill", "list", "--store", store])
    assert text.code == 0
    lines = text.out.splitlines()
    assert len(lines) == 2
    assert lines[0].split("  ")[1:] == [handle, str(len(BINARY)), "s1", "turns", "[0, 8)"]
    assert lines[1].split("  ")[1:] == [handle, str(len(BINARY)), "-", "-", "-"]
    doc = json.loads(Run(["spill", "list", "--store", store, "--format", "json"]).out)
    assert doc["rejected"] == []
    assert [(r["handle"], r["session"], r["range"], r["unit"], r["size"]) for r in doc["records"]] == [
        (handle, "s1", [0, 8], "turns", len(BINARY)),
        (handle, None, None, None, len(BINARY)),
    ]


def test_list_reports_a_torn_record_and_exits_1(spilled: tuple[str, str, Path]) -> None:
    store, _, _ = spilled
    (record,) = (Path(store) / "records").iterdir()
    record.write_bytes(record.read_bytes()[:-5])
    run = Run(["spill", "list", "--store", store, "--format", "json"])
    assert run.code == 1
    assert json.loads(run.out)["records"] == []
    assert f"rejected records/{record.name}" in run.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["put", "--range", "5", "2"], "--range must satisfy 0 <= LO <= HI, got 5 2"),
        (["put", "--range", "-1", "2"], "--range must satisfy 0 <= LO <= HI, got -1 2"),
    ],
)
def test_put_bad_range(tmp_path: Path, argv: list[str], message: str) -> None:
    src = tmp_path / "f"
    src.write_bytes(b"x")
    run = Run(["spill", *argv, "--store", str(tmp_path / "s"), str(src)])
    assert run.code == 2
    assert message in run.err
    assert not (tmp_path / "s").exists()


def test_put_unreadable_file(tmp_path: Path) -> None:
    run = Run(["spill", "put", "--store", str(tmp_path / "s"), str(tmp_path / "missing")])
    assert run.code == 2
    assert run.err == f"tailguard spill put: cannot read {tmp_path / 'missing'}: No such file or directory\n"


def test_put_into_a_foreign_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("x")
    run = Run(["spill", "put", "--store", str(tmp_path), str(tmp_path / "keep.txt")])
    assert run.code == 2
    assert "not empty and is not a spill store" in run.err


@pytest.mark.parametrize("sub", ["get", "verify", "list"])
def test_reading_commands_need_an_existing_store(tmp_path: Path, sub: str) -> None:
    extra = ["sha256:" + "0" * 64] if sub == "get" else []
    run = Run(["spill", sub, "--store", str(tmp_path / "absent"), *extra])
    assert run.code == 2
    assert run.err == f"tailguard spill {sub}: spill store {tmp_path / 'absent'} does not exist\n"
    assert not (tmp_path / "absent").exists()


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert Run(["spill"]).code == 2
    assert Run(["spill", "get"]).code == 2  # argparse: missing --store and HANDLE
    assert Run(["spill", "put", "--store", str(tmp_path), "f", "--unit", "bytes"]).code == 2


def test_write_failure_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    from tailguard.spill import _fsutil

    def full(fd: int, data: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    src = tmp_path / "f"
    src.write_bytes(b"abc")
    FileSpillStore(tmp_path / "s", create=True)
    monkeypatch.setattr(_fsutil, "write_all", full)
    run = Run(["spill", "put", "--store", str(tmp_path / "s"), str(src)])
    assert run.code == 1
    assert run.out == ""
    assert "nothing was recorded: [Errno 28] No space left on device" in run.err


def test_real_process_round_trip(tmp_path: Path) -> None:
    """The installed entry point, in a child process: put from stdin, get to a pipe."""
    store = str(tmp_path / "store")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    cmd = [sys.executable, "-m", "tailguard", "spill"]
    put = subprocess.run([*cmd, "put", "--store", store, "-", "--session", "proc"], input=BINARY,
                         capture_output=True, env=env, timeout=60, check=False)  # fmt: skip
    assert put.returncode == 0, put.stderr
    handle = put.stdout.decode().splitlines()[-1]
    assert handle == make_handle(BINARY)
    get = subprocess.run([*cmd, "get", "--store", store, handle], capture_output=True, env=env,
                         timeout=60, check=False)  # fmt: skip
    assert (get.returncode, get.stdout, get.stderr) == (0, BINARY, b"")
    bad = subprocess.run([*cmd, "get", "--store", store, "sha256:nope"], capture_output=True,
                         env=env, timeout=60, check=False)  # fmt: skip
    assert bad.returncode == 2
    assert b"Traceback" not in bad.stderr and b"malformed handle" in bad.stderr


def test_store_removed_under_a_reader_is_a_clean_error(spilled: tuple[str, str, Path]) -> None:
    import shutil

    store, _, _ = spilled
    opened = FileSpillStore(store)
    shutil.rmtree(Path(store) / "records")
    with pytest.raises(FileNotFoundError):
        opened.list()
    run = Run(["spill", "list", "--store", store])
    assert run.code == 2
    assert "damaged spill store, records/ is missing" in run.err


def test_io_error_while_reading_is_exit_1_not_a_traceback(
    spilled: tuple[str, str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _, _ = spilled

    def denied(self: FileSpillStore) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(FileSpillStore, "verify", denied)
    run = Run(["spill", "verify", "--store", store])
    assert run.code == 1
    assert run.err == f"tailguard spill verify: cannot read store {store}: [Errno 13] Permission denied\n"
