"""Unit tests of the spill store: handles, exact re-reads, errors, torn and altered files."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tailguard.spill import (
    CorruptRecordError,
    FileSpillStore,
    ForeignHandleError,
    InvalidSpillArgument,
    MalformedHandleError,
    MemorySpillStore,
    RecordNotFoundError,
    SpillStore,
    StoreNotFoundError,
    check_store,
    make_handle,
    parse_handle,
)
from tailguard.spill._files import encode_record

HEX = "0123456789abcdef" * 4


@pytest.fixture
def store(tmp_path: Path) -> FileSpillStore:
    return FileSpillStore(tmp_path / "store", create=True)


def _object_path(store: FileSpillStore, handle: str) -> Path:
    digest = parse_handle(handle)
    return Path(store.path) / "objects" / digest[:2] / digest[2:]


def _object_files(store: FileSpillStore) -> list[Path]:
    return sorted(p for p in (Path(store.path) / "objects").rglob("*") if p.is_file())


def test_new_store_has_every_fan_out_directory(store: FileSpillStore) -> None:
    subdirs = sorted(p.name for p in (Path(store.path) / "objects").iterdir())
    assert subdirs == [f"{i:02x}" for i in range(256)]


def _record_files(store: FileSpillStore) -> list[Path]:
    return sorted((Path(store.path) / "records").iterdir())


# ----------------------------------------------------------------------------- handles


def test_make_handle_is_sha256_of_the_bytes() -> None:
    assert make_handle(b"abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()


@pytest.mark.parametrize(
    ("text", "error", "fragment"),
    [
        ("", MalformedHandleError, "malformed handle ''"),
        ("sha256", MalformedHandleError, "malformed handle"),
        ("sha256:", MalformedHandleError, "exactly 64 lowercase hex"),
        ("sha256:" + HEX[:63], MalformedHandleError, "exactly 64"),
        ("sha256:" + HEX + "0", MalformedHandleError, "exactly 64"),
        ("sha256:" + HEX.upper(), MalformedHandleError, "(hex digits must be lowercase)"),
        ("sha256:../../../../etc/passwd", MalformedHandleError, "malformed handle"),
        ("sha256:" + HEX[:62] + "/x", MalformedHandleError, "malformed handle"),
        ("../objects:" + HEX, MalformedHandleError, "malformed handle"),
        (" sha256:" + HEX, MalformedHandleError, "malformed handle"),
        ("sha256:" + HEX + "\n", MalformedHandleError, "malformed handle"),
        ("SHA256:" + HEX, ForeignHandleError, "scheme 'SHA256'"),
        ("md5:d41d8cd98f00b204e9800998ecf8427e", ForeignHandleError, "scheme 'md5'"),
        ("s3:bucket/key", ForeignHandleError, "foreign handle 's3:bucket/key'"),
    ],
)
def test_parse_handle_rejects(text: str, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error) as info:
        parse_handle(text)
    assert fragment in str(info.value)
    if error is MalformedHandleError:
        assert not isinstance(info.value, ForeignHandleError)


def test_parse_handle_rejects_non_strings() -> None:
    with pytest.raises(MalformedHandleError, match="must be a string, got bytes"):
        parse_handle(b"sha256:" + HEX.encode())


@given(st.text(max_size=80) | st.from_regex(r"sha256:[0-9a-fA-F./]{60,68}", fullmatch=True))
def test_any_accepted_handle_stays_inside_the_store(text: str) -> None:
    try:
        digest = parse_handle(text)
    except MalformedHandleError:
        return
    assert text == "sha256:" + digest
    root = os.path.realpath("/store/objects")
    path = os.path.realpath(os.path.join(root, digest[:2], digest[2:]))
    assert os.path.dirname(os.path.dirname(path)) == root


# ----------------------------------------------------------------------------- put / get


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 1 << 20])
def test_put_get_round_trip_exact(store: FileSpillStore, size: int) -> None:
    data = os.urandom(size)
    handle = store.put(data, session="s", range=(0, 8), unit="turns")
    assert handle == make_handle(data)
    assert store.get(handle) == data
    assert _object_path(store, handle).read_bytes() == data


def test_put_accepts_bytearray_and_memoryview(store: FileSpillStore) -> None:
    assert store.get(store.put(bytearray(b"ab"))) == b"ab"
    assert store.get(store.put(memoryview(b"cd"))) == b"cd"


def test_index_records_session_range_unit_time_oldest_first(store: FileSpillStore) -> None:
    h1 = store.put(b"one", session="alpha", range=(0, 8), unit="turns")
    h2 = store.put(b"two", session="beta", range=(8, 20), unit="tokens")
    h3 = store.put(b"one")  # same bytes again: a second record, one object
    records = store.list()
    assert [(r.handle, r.session, r.range, r.unit, r.size) for r in records] == [
        (h1, "alpha", (0, 8), "turns", 3),
        (h2, "beta", (8, 20), "tokens", 3),
        (h3, None, None, None, 3),
    ]
    assert records[0].time < records[1].time < records[2].time
    assert records[0].time.endswith("Z") and records[0].time[4] == "-"
    assert len(_object_files(store)) == 2


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"range": (5, 2)}, "0 <= lo <= hi, got [5, 2)"),
        ({"range": (-1, 2)}, "0 <= lo <= hi"),
        ({"range": (0, 2, 3)}, "must be a pair"),
        ({"range": (0.0, 2)}, "must be integers"),
        ({"range": (True, 2)}, "must be integers"),
        ({"unit": "bytes"}, "unknown unit 'bytes'"),
        ({"session": 7}, "session must be a string"),
    ],
)
def test_put_rejects_bad_arguments_and_writes_nothing(
    store: FileSpillStore, kwargs: dict[str, object], fragment: str
) -> None:
    with pytest.raises(InvalidSpillArgument) as info:
        store.put(b"data", **kwargs)  # type: ignore[arg-type]
    assert fragment in str(info.value)
    assert store.list() == []
    assert _object_files(store) == []


def test_put_rejects_text(store: FileSpillStore) -> None:
    with pytest.raises(InvalidSpillArgument, match="data must be bytes, got str"):
        store.put("text")  # type: ignore[arg-type]


def test_get_absent_is_not_found(store: FileSpillStore) -> None:
    with pytest.raises(RecordNotFoundError, match="no spill with handle sha256:0000"):
        store.get("sha256:" + "0" * 64)


def test_get_foreign_and_malformed_never_touch_the_disk(store: FileSpillStore) -> None:
    outside = Path(store.path).parent / "secret"
    outside.write_bytes(b"secret")
    for text in ("sha256:../../secret", "file:" + str(outside), "sha256:" + "/" * 64):
        with pytest.raises(MalformedHandleError):
            store.get(text)


def test_get_rejects_flipped_byte(store: FileSpillStore) -> None:
    handle = store.put(b"x" * 1000)
    path = _object_path(store, handle)
    raw = bytearray(path.read_bytes())
    raw[500] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptRecordError, match="is corrupt: its 1000 stored bytes hash to"):
        store.get(handle)


def test_get_rejects_truncated_object(store: FileSpillStore) -> None:
    handle = store.put(b"y" * 1000)
    path = _object_path(store, handle)
    path.write_bytes(b"y" * 999)
    with pytest.raises(CorruptRecordError, match="its 999 stored bytes"):
        store.get(handle)


def test_get_does_not_follow_a_planted_symlink(store: FileSpillStore, tmp_path: Path) -> None:
    data = b"content that lives outside the store"
    handle = store.put(data)
    path = _object_path(store, handle)
    outside = tmp_path / "outside"
    outside.write_bytes(data)  # even the right bytes are refused through a link
    path.unlink()
    path.symlink_to(outside)
    with pytest.raises(CorruptRecordError, match="cannot read spill"):
        store.get(handle)


def test_get_does_not_block_on_a_fifo(store: FileSpillStore) -> None:
    handle = store.put(b"fifo")
    path = _object_path(store, handle)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(CorruptRecordError, match="not a regular file"):
        store.get(handle)


def test_put_again_repairs_a_corrupt_object(store: FileSpillStore) -> None:
    handle = store.put(b"z" * 100)
    _object_path(store, handle).write_bytes(b"garbage")
    assert store.put(b"z" * 100) == handle
    assert store.get(handle) == b"z" * 100
    assert store.verify().ok


# ----------------------------------------------------------------------------- index files


def test_torn_record_is_rejected_not_listed(store: FileSpillStore) -> None:
    good = store.put(b"good", session="a")
    store.put(b"torn", session="b")
    torn = next(p for p in _record_files(store) if b'"b"' in p.read_bytes())
    torn.write_bytes(torn.read_bytes()[:20])
    scan = store.scan_index()
    assert [r.handle for r in scan.records] == [good]
    assert [(p.kind, p.where) for p in scan.rejected] == [("corrupt-record", f"records/{torn.name}")]
    assert "does not hash to its name (torn)" in scan.rejected[0].message
    assert [r.handle for r in store.list()] == [good]
    assert not store.verify().ok


def test_altered_record_with_recomputed_name_is_schema_checked(store: FileSpillStore) -> None:
    store.put(b"data", session="a", range=(0, 4), unit="turns")
    (path,) = _record_files(store)
    doc = json.loads(path.read_bytes())
    doc["range"] = [4, 0]
    raw = json.dumps(doc).encode()
    path.unlink()
    (path.parent / (hashlib.sha256(raw).hexdigest() + ".json")).write_bytes(raw)
    scan = store.scan_index()
    assert scan.records == ()
    assert scan.rejected[0].message == "bad range [4, 0]"


def test_verify_reports_each_problem_kind(store: FileSpillStore) -> None:
    missing = store.put(b"will vanish")
    corrupt = store.put(b"will rot")
    intact = store.put(b"fine")
    _object_path(store, missing).unlink()
    _object_path(store, corrupt).write_bytes(b"rotten")
    # A self-consistent record (right name) that lies about the size.
    (liar,) = [r for r in store.list() if r.handle == intact]
    raw = encode_record(type(liar)(liar.handle, 99, None, None, None, liar.time))
    (Path(store.path) / "records" / (hashlib.sha256(raw).hexdigest() + ".json")).write_bytes(raw)
    (Path(store.path) / "records" / "notes.txt").write_text("operator scribble")
    report = store.verify()
    kinds = sorted((p.kind, p.where) for p in report.problems)
    assert kinds == [
        ("corrupt-object", f"objects/{corrupt[7:9]}/{corrupt[9:]}"),
        ("missing-object", missing),
        ("size-mismatch", intact),
    ]
    assert "stray file records/notes.txt ignored" in report.notes
    assert not report.ok


def test_verify_notes_orphans_and_temp_files_but_stays_ok(store: FileSpillStore) -> None:
    store.put(b"listed")
    for record in _record_files(store):
        record.unlink()  # as if the writer died between object and record
    (Path(store.path) / "tmp" / "x.123.abc.tmp").write_bytes(b"half")
    report = store.verify()
    assert report.ok
    assert report.notes == (
        "1 unlisted object(s) from interrupted puts (harmless)",
        "1 temp file(s) from interrupted writes in tmp/ (ignored)",
    )


# ----------------------------------------------------------------------------- opening


def test_open_requires_an_existing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError, match="does not exist"):
        FileSpillStore(tmp_path / "nope")
    with pytest.raises(StoreNotFoundError, match="is not a spill store"):
        FileSpillStore(tmp_path)


def test_create_refuses_a_foreign_directory(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(StoreNotFoundError, match="not empty and is not a spill store"):
        FileSpillStore(tmp_path, create=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt"]


def test_create_finishes_an_interrupted_creation(tmp_path: Path) -> None:
    (tmp_path / "s" / "objects").mkdir(parents=True)  # crash before the marker was written
    store = FileSpillStore(tmp_path / "s", create=True)
    assert store.get(store.put(b"ok")) == b"ok"
    assert FileSpillStore(tmp_path / "s").list()[0].size == 2


def test_unknown_store_version_is_refused(store: FileSpillStore) -> None:
    marker = Path(store.path) / "tailguard-spill.json"
    marker.write_text('{"format": "tailguard-spill", "version": 99}')
    with pytest.raises(StoreNotFoundError, match="version 99 is not supported"):
        FileSpillStore(store.path)


# ----------------------------------------------------------------------------- contract


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_both_stores_meet_the_contract(tmp_path: Path, kind: str) -> None:
    impl: SpillStore = FileSpillStore(tmp_path / "s", create=True) if kind == "file" else MemorySpillStore()
    assert isinstance(impl, SpillStore)
    assert check_store(impl) == []


def test_contract_checker_catches_a_store_that_returns_wrong_bytes() -> None:
    class Lossy(MemorySpillStore):
        def get(self, handle: str) -> bytes:
            return super().get(handle)[:-1]

    class Lenient(MemorySpillStore):
        def get(self, handle: str) -> bytes:
            return self.objects.get(handle, b"")

    assert any("did not return the exact bytes" in f for f in check_store(Lossy()))
    failures = check_store(Lenient())
    assert any("returned data, expected MalformedHandleError" in f for f in failures)
    assert any("returned data, expected RecordNotFoundError" in f for f in failures)


# ----------------------------------------------------------------------------- concurrency


def _concurrent_writer(path: str, worker: int) -> None:
    store = FileSpillStore(path, create=True)
    for i in range(20):
        store.put(f"{worker}-{i}".encode() * 1000, session=f"w{worker}", range=(i, i + 1))
        store.put(b"shared bytes every writer spills", session=f"w{worker}")


def test_concurrent_writers_never_collide(tmp_path: Path) -> None:
    path = str(tmp_path / "s")
    FileSpillStore(path, create=True)
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_concurrent_writer, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    store = FileSpillStore(path)
    records = store.list()
    assert len(records) == 4 * 40
    for r in records:
        assert make_handle(store.get(r.handle)) == r.handle
    report = store.verify()
    assert report.ok and report.notes == ()


def test_runtime_path_imports_no_solver_or_test_library() -> None:
    code = (
        "import sys, tailguard.spill, tailguard.cli.spill\n"
        "heavy = {'z3', 'crosshair', 'hypothesis'} & {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert out.stdout == "[]\n"


def test_contract_checker_reports_the_docs_stub_store_instead_of_raising() -> None:
    # the custom-store snippet of docs/spill.md, run as written (its methods are `...` stubs)
    text = (Path(__file__).resolve().parents[1] / "docs" / "spill.md").read_text()
    start = text.index("```python\n", text.index("## Interface for custom stores")) + len("```python\n")
    snippet = text[start:text.index("```", start)]
    assert "check_store(MyStore())" in snippet
    namespace: dict[str, object] = {}
    exec(compile(snippet, "docs/spill.md", "exec"), namespace)
    failures = namespace["problems"]
    assert isinstance(failures, list) and failures
    assert any(f.startswith("put(<0 bytes>) returned None, expected 'sha256:") for f in failures)
    assert "list() returned NoneType, expected a list of SpillRecord" in failures
    assert "verify() returned NoneType, expected a VerifyReport" in failures


def test_contract_checker_reports_a_method_that_raises() -> None:
    class Broken(MemorySpillStore):
        def list(self) -> list[object]:
            raise RuntimeError("index offline")

        def verify(self) -> object:
            raise OSError("disk gone")

    failures = check_store(Broken())
    assert "list() raised RuntimeError: index offline" in failures
    assert "verify() raised OSError: disk gone" in failures
