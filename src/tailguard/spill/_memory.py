"""An in-memory ``SpillStore``: for tests and examples only, it is not durable."""

from __future__ import annotations

import builtins
import hashlib
from datetime import UTC, datetime

from tailguard.base.vocab import Pair
from tailguard.spill._interface import (
    CorruptRecordError,
    Problem,
    RecordNotFoundError,
    SpillRecord,
    SpillWriteError,
    VerifyReport,
    check_put_arguments,
    make_handle,
    parse_handle,
)


class MemorySpillStore:
    """Keeps spills in a dict. ``fail_writes`` makes every put raise, to test escalation paths."""

    def __init__(self, *, fail_writes: bool = False) -> None:
        self.objects: dict[str, bytes] = {}
        self.records: list[SpillRecord] = []
        self.fail_writes = fail_writes

    def put(
        self,
        data: bytes | bytearray | memoryview,
        *,
        session: str | None = None,
        range: Pair | None = None,
        unit: str | None = None,
    ) -> str:
        """Keep a copy of ``data`` and index it; raises ``SpillWriteError`` when told to fail."""
        session, pair, unit = check_put_arguments(data, session, range, unit)
        if self.fail_writes:
            raise SpillWriteError("spill failed, nothing was recorded: injected failure")
        payload = bytes(data)
        handle = make_handle(payload)
        self.objects[handle] = payload
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.records.append(SpillRecord(handle, len(payload), session, pair, unit, when))
        return handle

    def get(self, handle: str) -> bytes:
        """The bytes under ``handle``, checked against it."""
        digest = parse_handle(handle)
        try:
            data = self.objects[handle]
        except KeyError:
            raise RecordNotFoundError(f"no spill with handle {handle} in memory") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise CorruptRecordError(f"spill {handle} is corrupt; nothing was returned")
        return data

    def list(self) -> builtins.list[SpillRecord]:
        """Records in insertion order."""
        return list(self.records)

    def verify(self) -> VerifyReport:
        """Check every record's bytes against its handle."""
        problems: list[Problem] = []
        for record in self.records:
            try:
                self.get(record.handle)
            except RecordNotFoundError as exc:
                problems.append(Problem("missing-object", record.handle, str(exc)))
            except CorruptRecordError as exc:
                problems.append(Problem("corrupt-object", record.handle, str(exc)))
        return VerifyReport(len(self.records), len(self.objects), tuple(problems))
