"""Durable, content-addressed spill store: write a transcript losslessly, re-read it by handle.

``FileSpillStore`` is the embedded default (atomic files in a directory, standard library only);
implement ``SpillStore`` for your own storage and check it with ``check_store``.
"""

from __future__ import annotations

from tailguard.spill._contract import check_store
from tailguard.spill._files import FileSpillStore
from tailguard.spill._interface import (
    UNITS,
    CorruptRecordError,
    ForeignHandleError,
    InvalidSpillArgument,
    MalformedHandleError,
    Problem,
    RecordNotFoundError,
    SpillError,
    SpillRecord,
    SpillStore,
    SpillWriteError,
    StoreNotFoundError,
    VerifyReport,
    check_put_arguments,
    make_handle,
    parse_handle,
)
from tailguard.spill._memory import MemorySpillStore

__all__ = [
    "UNITS",
    "CorruptRecordError",
    "FileSpillStore",
    "ForeignHandleError",
    "InvalidSpillArgument",
    "MalformedHandleError",
    "MemorySpillStore",
    "Problem",
    "RecordNotFoundError",
    "SpillError",
    "SpillRecord",
    "SpillStore",
    "SpillWriteError",
    "StoreNotFoundError",
    "VerifyReport",
    "check_put_arguments",
    "check_store",
    "make_handle",
    "parse_handle",
]
