"""The spill-store contract: handles, records, reports, errors and the ``SpillStore`` protocol.

Everything a custom store needs lives here; the default store (``_files``) and the test store
(``_memory``) only implement it. Standard library only: this is the runtime path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tailguard.base.errors import (
    CorruptRecordError as CorruptRecordError,
    ForeignHandleError as ForeignHandleError,
    InvalidSpillArgument as InvalidSpillArgument,
    MalformedHandleError as MalformedHandleError,
    RecordNotFoundError as RecordNotFoundError,
    SpillError as SpillError,
    SpillWriteError as SpillWriteError,
    StoreNotFoundError as StoreNotFoundError,
)
from tailguard.base.vocab import UNITS as UNITS, Pair

HANDLE_SCHEME = "sha256"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+._-]{0,31}")


# --------------------------------------------------------------------------- errors


# --------------------------------------------------------------------------- handles


def make_handle(data: bytes) -> str:
    """The content address of ``data``: ``sha256:<64 lowercase hex>``.

    >>> make_handle(b"")
    'sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'
    """
    return f"{HANDLE_SCHEME}:{hashlib.sha256(data).hexdigest()}"


def parse_handle(handle: object) -> str:
    """Return the 64-char hex digest of ``handle``, or raise a handle error.

    Only ``sha256:`` followed by exactly 64 lowercase hex digits is accepted, so a digest can be
    used as a file name: it has no separator, dot or other character that could leave the store.

    >>> parse_handle("sha256:" + "ab" * 32) == "ab" * 32
    True
    """
    if not isinstance(handle, str):
        raise MalformedHandleError(f"handle must be a string, got {type(handle).__name__}")
    scheme, sep, digest = handle.partition(":")
    if not sep or not _SCHEME.fullmatch(scheme):
        raise MalformedHandleError(f"malformed handle {_show(handle)}: expected 'sha256:<64 lowercase hex digits>'")
    if scheme != HANDLE_SCHEME:
        raise ForeignHandleError(
            f"foreign handle {_show(handle)}: scheme {scheme!r} was not issued by a tailguard "
            f"spill store (expected 'sha256:')"
        )
    if not _HEX64.fullmatch(digest):
        hint = " (hex digits must be lowercase)" if _HEX64.fullmatch(digest.lower()) else ""
        raise MalformedHandleError(
            f"malformed handle {_show(handle)}: expected 'sha256:' followed by exactly 64 lowercase hex digits{hint}"
        )
    return digest


def _show(text: str, limit: int = 80) -> str:
    """``repr`` of ``text``, shortened so an error message stays one readable line."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "..."


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class SpillRecord:
    """One index entry: what was spilled, for which session and offset range ``[lo, hi)``."""

    handle: str
    size: int
    session: str | None
    range: Pair | None
    unit: str | None
    time: str  # ISO 8601, UTC, microseconds: "2026-11-30T23:00:00.000000Z"

    def to_json(self) -> dict[str, object]:
        """The record as a JSON-ready dict (range as a ``[lo, hi]`` pair, per the brief)."""
        return {
            "handle": self.handle,
            "size": self.size,
            "session": self.session,
            "range": None if self.range is None else [self.range[0], self.range[1]],
            "unit": self.unit,
            "time": self.time,
        }


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing ``verify`` found wrong: a kind (stable id), where, and a one-line reason."""

    kind: str  # corrupt-object | missing-object | corrupt-record | size-mismatch | stray-file | symlink
    where: str
    message: str


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Outcome of re-reading every record. ``ok`` only when nothing at all is wrong."""

    records_checked: int
    objects_checked: int
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = field(default=())  # harmless leftovers (orphans, crash temp files)

    @property
    def ok(self) -> bool:
        return not self.problems


def check_put_arguments(
    data: object, session: object, range: object, unit: object
) -> tuple[str | None, Pair | None, str | None]:
    """Validate put arguments before anything touches storage; returns them normalized."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidSpillArgument(f"data must be bytes, got {type(data).__name__}")
    if session is not None and not isinstance(session, str):
        raise InvalidSpillArgument(f"session must be a string, got {type(session).__name__}")
    if unit is not None and unit not in UNITS:
        raise InvalidSpillArgument(f"unknown unit {unit!r}: expected one of {', '.join(UNITS)}")
    if range is None:
        return session, None, unit
    if not isinstance(range, Sequence) or isinstance(range, str | bytes) or len(range) != 2:
        raise InvalidSpillArgument(f"range must be a pair (lo, hi), got {range!r}")
    lo, hi = range
    if type(lo) is not int or type(hi) is not int:
        raise InvalidSpillArgument(f"range bounds must be integers, got {range!r}")
    if lo < 0 or lo > hi:
        raise InvalidSpillArgument(f"range must satisfy 0 <= lo <= hi, got [{lo}, {hi})")
    return session, (lo, hi), unit


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class SpillStore(Protocol):
    """What tailguard needs from durable storage. Implement these four methods for your own.

    Contract (``tailguard.spill.check_store`` exercises it):

    - ``put`` returns only after the bytes and their index record are durable; on any failure it
      raises ``SpillWriteError`` (or ``InvalidSpillArgument``) and no record is listed.
    - the handle is ``make_handle(data)``; ``get(handle)`` returns exactly ``data``.
    - ``get`` raises ``MalformedHandleError``/``ForeignHandleError`` for text that is not one of
      our handles, ``RecordNotFoundError`` when absent, ``CorruptRecordError`` when the stored
      bytes do not hash to the handle. It never returns partial data.
    - ``list`` returns intact index records only, oldest first; ``verify`` re-reads everything.
    """

    def put(
        self,
        data: bytes,
        *,
        session: str | None = None,
        range: Pair | None = None,
        unit: str | None = None,
    ) -> str: ...

    def get(self, handle: str) -> bytes: ...

    def verify(self) -> VerifyReport: ...

    def list(self) -> list[SpillRecord]: ...
