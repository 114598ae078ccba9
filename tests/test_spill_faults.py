"""Disk full and other write failures: nothing is reported written, the store stays consistent.

Two kinds of injection: ``os.write`` behaving like a filling disk (short write, then ENOSPC) at
every interesting byte budget, and failing ``fsync``/``rename`` at every call of a put; plus a
real kernel-enforced limit (``RLIMIT_FSIZE``) on a child process running the CLI.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tailguard.spill import FileSpillStore, SpillRecord, SpillWriteError, make_handle

DATA = os.urandom(300_000)
_real_write = os.write


def _state(store: FileSpillStore) -> tuple[list[SpillRecord], list[str]]:
    tmp = sorted(os.listdir(os.path.join(store.path, "tmp")))
    return store.list(), tmp


def _assert_consistent_and_unchanged(store: FileSpillStore, before: list[SpillRecord]) -> None:
    records, tmp = _state(store)
    assert records == before, "a failed put left a listed record"
    assert tmp == [], "a failed put left its temp file behind"
    report = store.verify()
    assert report.ok, report.problems
    for record in records:
        assert make_handle(store.get(record.handle)) == record.handle


def _filling_disk(free: int) -> Callable[[int, object], int]:
    """``os.write`` on a disk with ``free`` bytes left: short write, then ENOSPC."""
    left = [free]

    def write(fd: int, data: object) -> int:
        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        chunk = view[: left[0]]
        written = _real_write(fd, chunk)
        left[0] -= written
        return written

    return write


@pytest.fixture
def store(tmp_path: Path) -> FileSpillStore:
    s = FileSpillStore(tmp_path / "store", create=True)
    s.put(b"an earlier spill that must survive", session="earlier", range=(0, 3), unit="turns")
    return s


@pytest.mark.parametrize(
    "free",
    [0, 1, 4096, len(DATA) - 1, len(DATA), len(DATA) + 1, len(DATA) + 100],
    ids=lambda f: f"free={f}",
)
def test_disk_full_at_every_stage(store: FileSpillStore, monkeypatch: pytest.MonkeyPatch, free: int) -> None:
    before = store.list()
    monkeypatch.setattr(os, "write", _filling_disk(free))
    with pytest.raises(SpillWriteError, match="nothing was recorded") as info:
        store.put(DATA, session="big", range=(0, 40), unit="turns")
    assert isinstance(info.value.__cause__, OSError)
    assert info.value.__cause__.errno == errno.ENOSPC
    monkeypatch.undo()
    _assert_consistent_and_unchanged(store, before)
    object_published = os.path.exists(
        os.path.join(store.path, "objects", make_handle(DATA)[7:9], make_handle(DATA)[9:])
    )
    assert object_published == (free >= len(DATA))  # object complete or absent, never partial
    # Space comes back: the same put now succeeds and re-reads exactly.
    handle = store.put(DATA, session="big", range=(0, 40), unit="turns")
    assert store.get(handle) == DATA
    assert [r.session for r in store.list()] == ["earlier", "big"]


def _fail_on_call(real: Callable[..., object], at: int) -> Callable[..., object]:
    """``real``, except that call number ``at`` raises EIO."""
    calls = [0]

    def failing(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == at:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(*args, **kwargs)

    return failing


def _count_calls(store: FileSpillStore, monkeypatch: pytest.MonkeyPatch, name: str) -> int:
    calls = [0]
    real = getattr(os, name)

    def counting(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, counting)
    store.put(b"probe " + os.urandom(16))
    monkeypatch.undo()
    return calls[0]


@pytest.mark.parametrize("name", ["fsync", "replace"])
def test_failure_at_every_sync_and_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    probe = FileSpillStore(tmp_path / "probe", create=True)
    total = _count_calls(probe, monkeypatch, name)
    assert total >= (2 if name == "replace" else 4)  # object + record, files and directories
    for fail_at in range(1, total + 1):
        store = FileSpillStore(tmp_path / f"{name}-{fail_at}", create=True)
        store.put(b"an earlier spill")
        before = store.list()
        failing = _fail_on_call(getattr(os, name), fail_at)
        monkeypatch.setattr(os, name, failing)
        with pytest.raises(SpillWriteError, match="Input/output error"):
            store.put(DATA, session="x")
        monkeypatch.undo()
        _assert_consistent_and_unchanged(store, before)


def test_real_file_size_limit_in_a_child_process(tmp_path: Path) -> None:
    """The kernel refuses the write (EFBIG under RLIMIT_FSIZE): exit 1, store unchanged."""
    resource = pytest.importorskip("resource")
    assert resource is not None
    store = FileSpillStore(tmp_path / "store", create=True)
    store.put(b"before the limit", session="earlier")
    before = store.list()
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(2 << 20))
    child = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))\n"
        "from tailguard.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", child, "spill", "put", "--store", store.path, str(big)],
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == b""
    assert b"nothing was recorded: [Errno 27] File too large" in proc.stderr
    _assert_consistent_and_unchanged(store, before)
