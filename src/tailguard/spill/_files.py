"""The embedded default store: content-addressed atomic files in one directory.

Layout (see ``docs/spill.md`` for the durability argument)::

    DIR/tailguard-spill.json          marker, written last at creation
    DIR/objects/ab/<62 hex>           the spilled bytes; name = their sha256
    DIR/records/<64 hex>.json         one index record each; name = sha256 of the record file
    DIR/tmp/                          staging; a crash leaves at most a temp file here

Both objects and records are named by the hash of their own content, so every read checks
itself: a torn, truncated or altered file is rejected, never served. No symbolic link inside
the store is ever followed (``_fsutil``: every directory is opened relative to its parent with
``O_NOFOLLOW``): a subdirectory or file replaced by a link makes ``put`` fail and ``get``
refuse, and ``verify`` reports it (kind ``symlink``).
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from tailguard.base import jsonstrict
from tailguard.base.jsonstrict import MAX_RECORD_BYTES
from tailguard.base.vocab import Pair
from tailguard.spill import _fsutil
from tailguard.spill._interface import (
    HANDLE_SCHEME,
    UNITS,
    CorruptRecordError,
    Problem,
    RecordNotFoundError,
    SpillRecord,
    SpillWriteError,
    StoreNotFoundError,
    VerifyReport,
    check_put_arguments,
    make_handle,
    parse_handle,
)

MARKER = "tailguard-spill.json"
FORMAT = "tailguard-spill"
VERSION = 1
_MARKER_BYTES = (json.dumps({"format": FORMAT, "version": VERSION}, sort_keys=True) + "\n").encode()
_SUBDIRS = ("objects", "records", "tmp")
_RECORD_NAME = re.compile(r"([0-9a-f]{64})\.json")
_HEX2 = re.compile(r"[0-9a-f]{2}")
_HEX62 = re.compile(r"[0-9a-f]{62}")
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z", re.ASCII)
_RECORD_KEYS = frozenset({"format", "handle", "size", "session", "range", "unit", "time"})


@dataclass(frozen=True, slots=True)
class IndexScan:
    """Every intact record (oldest first) and every record file that was rejected."""

    records: tuple[SpillRecord, ...]
    rejected: tuple[Problem, ...]
    stray: tuple[str, ...]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def encode_record(record: SpillRecord) -> bytes:
    """Canonical record file bytes (sorted keys, compact): equal records give equal files."""
    doc = record.to_json()
    doc["format"] = VERSION
    return (json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n").encode()


def decode_record(raw: bytes) -> SpillRecord:
    """Parse and validate a record file's bytes; ``ValueError`` names what is wrong."""
    if len(raw) > MAX_RECORD_BYTES:
        raise ValueError(f"a record of {len(raw):,} bytes is over the limit of {MAX_RECORD_BYTES:,}")
    try:
        doc = jsonstrict.loads(raw.decode("utf-8"))  # duplicate keys, depth and digits included
    except (UnicodeDecodeError, jsonstrict.JSONInputError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or set(doc) != _RECORD_KEYS:
        raise ValueError("not a record object with the expected fields")
    if type(doc["format"]) is not int or doc["format"] != VERSION:  # true == 1 in Python, not here
        raise ValueError(f"unknown record format {doc['format']!r}")
    handle, size, session, rng, unit, when = (
        doc["handle"],
        doc["size"],
        doc["session"],
        doc["range"],
        doc["unit"],
        doc["time"],
    )
    parse_handle(handle)
    if type(size) is not int or size < 0:
        raise ValueError(f"bad size {size!r}")
    if session is not None and not isinstance(session, str):
        raise ValueError(f"bad session {session!r}")
    if unit is not None and unit not in UNITS:
        raise ValueError(f"bad unit {unit!r}")
    if not isinstance(when, str) or _TIME.fullmatch(when) is None:
        raise ValueError(f"bad time {when!r} (expected UTC ISO 8601 as written: 2026-11-30T23:00:00.000000Z)")
    try:
        datetime.strptime(when, "%Y-%m-%dT%H:%M:%S.%fZ")
    except ValueError:
        raise ValueError(f"bad time {when!r} (not a date and time)") from None
    pair: Pair | None = None
    if rng is not None:
        if (
            not isinstance(rng, list)
            or len(rng) != 2
            or any(type(x) is not int for x in rng)
            or not 0 <= rng[0] <= rng[1]
        ):
            raise ValueError(f"bad range {rng!r}")
        pair = (rng[0], rng[1])
    return SpillRecord(handle=handle, size=size, session=session, range=pair, unit=unit, time=when)


class FileSpillStore:
    """Durable spill store in a directory; implements ``SpillStore``.

    ``FileSpillStore(path, create=True)`` makes the store if the directory is missing or empty;
    without ``create`` the directory must already be a store (``StoreNotFoundError`` otherwise).
    Several processes may put into one store at once: every publish is an atomic rename.
    """

    def __init__(self, path: str | os.PathLike[str], *, create: bool = False) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._objects = os.path.join(self.path, "objects")
        self._records = os.path.join(self.path, "records")
        self._tmp = os.path.join(self.path, "tmp")
        marker = os.path.join(self.path, MARKER)
        if os.path.isfile(marker):
            self._check_marker(marker)
        elif create:
            self._initialize()
        elif os.path.isdir(self.path):
            raise StoreNotFoundError(f"{self.path} is not a spill store (no {MARKER})")
        elif os.path.lexists(self.path):
            raise StoreNotFoundError(f"{self.path} is not a directory, so not a spill store (a store is a "
                                     "directory)")
        else:
            raise StoreNotFoundError(f"spill store {self.path} does not exist")

    # ----------------------------------------------------------------- setup

    def _check_marker(self, marker: str) -> None:
        try:
            doc = json.loads(_fsutil.read_regular_file(marker))
        except (OSError, ValueError) as exc:
            raise StoreNotFoundError(f"{self.path}: unreadable store marker: {exc}") from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise StoreNotFoundError(f"{self.path} is not a spill store (bad {MARKER})")
        if doc.get("version") != VERSION:
            raise StoreNotFoundError(
                f"{self.path}: spill store version {doc.get('version')!r} is not supported "
                f"(this tailguard reads version {VERSION})"
            )
        for sub in _SUBDIRS:
            if not os.path.isdir(os.path.join(self.path, sub)):
                raise StoreNotFoundError(f"{self.path}: damaged spill store, {sub}/ is missing")

    def _initialize(self) -> None:
        if os.path.isdir(self.path):
            foreign = [e for e in os.listdir(self.path) if e not in _SUBDIRS]
            if foreign:
                raise StoreNotFoundError(f"{self.path} is not empty and is not a spill store; refusing to write there")
        elif os.path.lexists(self.path):
            raise StoreNotFoundError(f"{self.path} exists and is not a directory")
        try:
            for sub in _SUBDIRS:
                _fsutil.make_dirs_durable(os.path.join(self.path, sub))
            # All 256 fan-out directories now, made durable by one fsync, so that a put does
            # not pay an extra directory fsync the first time it meets a new prefix.
            for i in range(256):
                with contextlib.suppress(FileExistsError):
                    fan = os.path.join(self._objects, f"{i:02x}")
                    os.mkdir(fan, _fsutil.DIR_MODE)
                    os.chmod(fan, _fsutil.DIR_MODE)
            _fsutil.fsync_dir(self._objects)
            _fsutil.atomic_write(os.path.join(self.path, MARKER), _MARKER_BYTES, self._tmp)
        except OSError as exc:
            raise SpillWriteError(f"cannot create spill store {self.path}: {exc}") from exc

    # ----------------------------------------------------------------- write

    def put(
        self,
        data: bytes | bytearray | memoryview,
        *,
        session: str | None = None,
        range: Pair | None = None,
        unit: str | None = None,
    ) -> str:
        """Store ``data`` durably, index it, and return its handle ``sha256:<hex>``.

        Returns only after the object, its record and both directory entries are fsynced.
        Any failure raises ``SpillWriteError`` and leaves no record: the bytes may remain as an
        unlisted object (harmless; ``verify`` notes it), never as a listed torn one.
        """
        session, pair, unit = check_put_arguments(data, session, range, unit)
        payload = bytes(data)
        handle = make_handle(payload)
        digest = handle.split(":", 1)[1]
        record = SpillRecord(handle=handle, size=len(payload), session=session, range=pair, unit=unit, time=_now())
        try:
            with _fsutil.dir_chain(self.path, "tmp") as tmp_fd:
                self._store_object(digest, payload, tmp_fd)
                raw = encode_record(record)
                name = hashlib.sha256(raw).hexdigest() + ".json"
                # A record is this put's alone: if its entry cannot be synced, take it back.
                with _fsutil.dir_chain(self.path, "records") as records_fd:
                    _fsutil.atomic_write_at(records_fd, name, raw, tmp_fd, retract_on_failure=True)
        except OSError as exc:
            raise SpillWriteError(f"spill of {len(payload)} bytes failed, nothing was recorded: {exc}") from exc
        return handle

    def _store_object(self, digest: str, payload: bytes, tmp_fd: int) -> None:
        name = digest[2:]
        with _fsutil.dir_chain(self.path, "objects") as objects_fd:
            sub_fd = _fsutil.make_dir_at(objects_fd, digest[:2], f"objects/{digest[:2]}/")
        try:
            if self._object_intact(sub_fd, name, digest):
                # Same bytes already stored: make sure they and their entry are on disk, then reuse.
                fd = os.open(name, os.O_RDONLY | _fsutil._O_NOFOLLOW | _fsutil._O_CLOEXEC, dir_fd=sub_fd)
                try:
                    _fsutil.fsync_fd(fd)
                finally:
                    os.close(fd)
                _fsutil.fsync_fd(sub_fd)
                return
            if _fsutil.is_link_at(sub_fd, name):  # a rename would replace it; say why instead
                raise _fsutil.SymlinkError(
                    0, f"objects/{digest[:2]}/{name} is a symbolic link; the spill store never follows links")
            _fsutil.atomic_write_at(sub_fd, name, payload, tmp_fd)
        finally:
            os.close(sub_fd)

    @staticmethod
    def _object_intact(dir_fd: int, name: str, digest: str) -> bool:
        try:
            return hashlib.sha256(_fsutil.read_regular_file_at(dir_fd, name)).hexdigest() == digest
        except OSError:
            return False

    # ----------------------------------------------------------------- read

    def _object_path(self, digest: str) -> str:
        return os.path.join(self._objects, digest[:2], digest[2:])

    def get(self, handle: str) -> bytes:
        """The exact bytes stored under ``handle``, after checking they hash to it."""
        digest = parse_handle(handle)  # 64 lowercase hex: cannot name anything outside objects/
        where = f"objects/{digest[:2]}/{digest[2:]}"
        try:
            with _fsutil.dir_chain(self.path, "objects", digest[:2]) as fd:
                data = _fsutil.read_regular_file_at(fd, digest[2:], where)
        except FileNotFoundError:
            raise RecordNotFoundError(f"no spill with handle {handle} in {self.path}") from None
        except OSError as exc:
            raise CorruptRecordError(f"cannot read spill {handle}: {exc}") from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != digest:
            raise CorruptRecordError(
                f"spill {handle} is corrupt: its {len(data)} stored bytes hash to "
                f"{HANDLE_SCHEME}:{actual}; nothing was returned"
            )
        return data

    def scan_index(self) -> IndexScan:
        """Read every record file; intact ones are returned, torn or altered ones rejected."""
        records: list[SpillRecord] = []
        rejected: list[Problem] = []
        stray: list[str] = []
        try:
            with _fsutil.dir_chain(self.path, "records") as fd:
                return self._scan_records(fd)
        except _fsutil.SymlinkError as exc:
            rejected.append(Problem("symlink", "records/", str(exc)))
        return IndexScan(tuple(records), tuple(rejected), tuple(stray))

    def _scan_records(self, records_fd: int) -> IndexScan:
        records: list[SpillRecord] = []
        rejected: list[Problem] = []
        stray: list[str] = []
        for entry in sorted(os.listdir(records_fd)):
            where = f"records/{entry}"
            match = _RECORD_NAME.fullmatch(entry)
            if _fsutil.is_link_at(records_fd, entry):
                rejected.append(Problem("symlink", where, "a symbolic link; the spill store never follows links"))
                continue
            if match is None:
                stray.append(where)
                continue
            try:
                raw = _fsutil.read_regular_file_at(records_fd, entry, where)
            except OSError as exc:
                rejected.append(Problem("corrupt-record", where, f"unreadable: {exc}"))
                continue
            if hashlib.sha256(raw).hexdigest() != match.group(1):
                rejected.append(Problem("corrupt-record", where, "content does not hash to its name (torn)"))
                continue
            try:
                records.append(decode_record(raw))
            except ValueError as exc:
                rejected.append(Problem("corrupt-record", where, str(exc)))
        records.sort(key=lambda r: (r.time, r.handle))
        return IndexScan(tuple(records), tuple(rejected), tuple(stray))

    @staticmethod
    def _verify_objects(
        sub: str, sub_fd: int, problems: builtins.list[Problem], notes: builtins.list[str],
        intact: dict[str, int], bad: set[str],
    ) -> None:
        for entry in sorted(os.listdir(sub_fd)):
            where = f"objects/{sub}/{entry}"
            if _fsutil.is_link_at(sub_fd, entry):
                problems.append(Problem("symlink", where, "a symbolic link; the spill store never follows links"))
                if _HEX62.fullmatch(entry):
                    bad.add(sub + entry)
                continue
            if not _HEX62.fullmatch(entry):
                notes.append(f"stray file {where} ignored")
                continue
            digest = sub + entry
            try:
                data = _fsutil.read_regular_file_at(sub_fd, entry, where)
            except OSError as exc:
                problems.append(Problem("corrupt-object", where, f"unreadable: {exc}"))
                bad.add(digest)
                continue
            if hashlib.sha256(data).hexdigest() != digest:
                problems.append(Problem("corrupt-object", where, "content does not hash to its name"))
                bad.add(digest)
            else:
                intact[digest] = len(data)

    def list(self) -> builtins.list[SpillRecord]:
        """Intact index records, oldest first. Rejected record files are left out (see verify)."""
        return list(self.scan_index().records)

    def verify(self) -> VerifyReport:
        """Re-read every record and every object and check each against its hash."""
        scan = self.scan_index()
        problems: list[Problem] = list(scan.rejected)
        notes: list[str] = [f"stray file {s} ignored" for s in scan.stray]
        intact: dict[str, int] = {}  # digest -> size, for objects that verified
        bad: set[str] = set()

        link = "a symbolic link; the spill store never follows links"
        try:
            with _fsutil.dir_chain(self.path, "objects") as objects_fd:
                for sub in sorted(os.listdir(objects_fd)):
                    if _fsutil.is_link_at(objects_fd, sub):
                        problems.append(Problem("symlink", f"objects/{sub}", link))
                        continue
                    try:
                        sub_fd = _fsutil.open_dir(sub, objects_fd) if _HEX2.fullmatch(sub) else -1
                    except NotADirectoryError:
                        sub_fd = -1
                    if sub_fd < 0:
                        notes.append(f"stray file objects/{sub} ignored")
                        continue
                    try:
                        self._verify_objects(sub, sub_fd, problems, notes, intact, bad)
                    finally:
                        os.close(sub_fd)
        except _fsutil.SymlinkError as exc:
            problems.append(Problem("symlink", "objects/", str(exc)))

        referenced: set[str] = set()
        for record in scan.records:
            digest = record.handle.split(":", 1)[1]
            referenced.add(digest)
            if digest in bad:
                continue  # already reported as corrupt-object
            if digest not in intact:
                problems.append(Problem("missing-object", record.handle, "listed in the index but not stored"))
            elif intact[digest] != record.size:
                problems.append(
                    Problem(
                        "size-mismatch",
                        record.handle,
                        f"record says {record.size} bytes, object has {intact[digest]}",
                    )
                )
        orphans = sorted(set(intact) - referenced)
        if orphans:
            notes.append(f"{len(orphans)} unlisted object(s) from interrupted puts (harmless)")
        try:
            with _fsutil.dir_chain(self.path, "tmp") as tmp_fd:
                leftovers = os.listdir(tmp_fd)
        except _fsutil.SymlinkError as exc:
            problems.append(Problem("symlink", "tmp/", str(exc)))
            leftovers = []
        if leftovers:
            notes.append(f"{len(leftovers)} temp file(s) from interrupted writes in tmp/ (ignored)")
        return VerifyReport(
            records_checked=len(scan.records) + len(scan.rejected),
            objects_checked=len(intact) + len(bad),
            problems=tuple(problems),
            notes=tuple(notes),
        )
