"""Issue 17, point 5: the file store never follows a symbolic link inside the store.

The finding: with ``objects/ab``, ``records/`` or ``tmp/`` replaced by a link to a directory
outside, ``put`` wrote outside the store, ``get`` served what was there and ``verify`` said
intact. Now ``put`` fails (nothing recorded, nothing written outside), ``get`` refuses, and
``verify`` reports each link as a ``symlink`` problem.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from tailguard.cli.main import main
from tailguard.spill import CorruptRecordError, FileSpillStore, SpillWriteError, make_handle, parse_handle

DATA = b"the full transcript, offsets [0, 48)"


def _outside_files(outside: Path) -> list[Path]:
    return sorted(p for p in outside.rglob("*") if p.is_file())


def _replace_with_link(target: Path, outside: Path) -> None:
    """Move ``target`` (a directory of the store) outside and leave a link in its place."""
    shutil.copytree(target, outside, dirs_exist_ok=True)
    shutil.rmtree(target)
    target.symlink_to(outside, target_is_directory=True)


@pytest.fixture
def store(tmp_path: Path) -> FileSpillStore:
    s = FileSpillStore(tmp_path / "store", create=True)
    s.put(b"an earlier spill", session="earlier")
    return s


@pytest.mark.parametrize("sub", ["objects/ab", "objects", "records", "tmp"])
def test_put_never_writes_through_a_link(store: FileSpillStore, tmp_path: Path, sub: str) -> None:
    digest = parse_handle(make_handle(DATA))
    sub = sub.replace("ab", digest[:2])
    outside = tmp_path / "outside"
    _replace_with_link(Path(store.path) / sub, outside)
    before = _outside_files(outside)
    with pytest.raises(SpillWriteError, match="symbolic link"):
        store.put(DATA, session="s")
    assert _outside_files(outside) == before  # nothing written outside the store


@pytest.mark.parametrize("sub", ["objects/ab", "objects"])
def test_get_never_serves_through_a_link(store: FileSpillStore, tmp_path: Path, sub: str) -> None:
    handle = store.put(DATA)
    sub = sub.replace("ab", parse_handle(handle)[:2])
    _replace_with_link(Path(store.path) / sub, tmp_path / "outside")  # the right bytes, outside
    with pytest.raises(CorruptRecordError, match="symbolic link"):
        store.get(handle)


def test_a_linked_object_file_is_refused_by_get_and_by_a_put_of_the_same_bytes(
    store: FileSpillStore, tmp_path: Path
) -> None:
    handle = store.put(DATA)
    digest = parse_handle(handle)
    path = Path(store.path) / "objects" / digest[:2] / digest[2:]
    outside = tmp_path / "outside.bin"
    outside.write_bytes(DATA)
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(CorruptRecordError, match="symbolic link"):
        store.get(handle)
    with pytest.raises(SpillWriteError, match="symbolic link"):
        store.put(DATA)
    assert outside.read_bytes() == DATA


@pytest.mark.parametrize("sub", ["objects/ab", "objects", "records", "tmp", "records/file", "objects/ab/file"])
def test_verify_reports_every_link_as_a_problem(store: FileSpillStore, tmp_path: Path, sub: str) -> None:
    handle = store.put(DATA)
    digest = parse_handle(handle)
    base = Path(store.path)
    if sub.endswith("/file"):
        parent = base / sub[: -len("/file")].replace("ab", digest[:2])
        victim = sorted(parent.iterdir())[0]
        outside = tmp_path / "outside.bin"
        outside.write_bytes(victim.read_bytes())
        victim.unlink()
        victim.symlink_to(outside)
        where = str(victim.relative_to(base))
    else:
        sub = sub.replace("ab", digest[:2])
        _replace_with_link(base / sub, tmp_path / "outside")
        where = sub
    report = store.verify()
    assert not report.ok
    assert any(p.kind == "symlink" and p.where.rstrip("/") == where for p in report.problems), report
    out = io.StringIO()
    code = main(["spill", "verify", "--store", store.path], stdout=out, stderr=io.StringIO())
    assert code == 1 and "PROBLEM symlink" in out.getvalue()
