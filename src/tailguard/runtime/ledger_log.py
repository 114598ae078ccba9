"""Where the ledger's event log goes: each line whole before the state changes, or not at all.

The ledger (:mod:`tailguard.runtime.ledger`) writes an event's line through a :class:`LogSink` and
changes its state only once :meth:`LogSink.write` has returned. The sink's contract:

- **Written means handed to the operating system.** With a log that has a file descriptor
  (an open file, or the file :meth:`Ledger.from_log` opens), the sink writes the line's bytes
  with ``os.write`` on that descriptor, bypassing the stream's own buffer (flushed once, when
  the sink is made). So no Python buffer ever holds a line: a line that failed cannot reach
  the log later, from a retry, a ``flush()``, ``close()`` or the garbage collector. The log
  is the ledger's from then on: do not write to that stream yourself. A new log file's
  directory entry is yours to make durable (``durable=True`` syncs the file, not its directory).
- **A failed write is taken back.** If ``os.write`` (or ``fsync``) raises (``ENOSPC``,
  ``EFBIG``, ``EIO``), the sink truncates a regular file back to where the line began, so the
  log holds only whole lines the ledger recorded, and re-raises. The sink is then *failed*:
  every later write raises :class:`LogFailedError`, and nothing buffered is ever written.
- ``durable=True``: every line except ``append`` and ``truncate`` (the session header and every
  ``compact``, ``spill``, ``refusal`` and ``evict_summary`` line, overrides included) is
  ``fsync``-ed before the write returns; an ``fsync`` also makes the lines before it durable.
  A power loss can then only lose ``append``/``truncate`` lines after the last such line,
  never evidence the ledger reported.
- ``flush=False``: lines are kept in memory (at most 64 KiB) and written with the next
  durable line, when the buffer fills, on :meth:`flush` or :meth:`close` (the ledger's), or
  when the ledger is garbage-collected if it opened the file itself; a crash loses them, and
  so does closing your own stream before ``Ledger.close()``. A failed batch takes every
  buffered line back and fails the sink. A stream without a descriptor gets its lines at once
  but is flushed only by :meth:`flush` and :meth:`close`; a failed flush fails the sink too,
  so the ledger never decides from lines its log did not take.

- **One writer at a time, and never a stale one** (spec 1.2). Every write to a regular file
  takes an advisory lock (``flock``) on it, so writers in several processes are serialized. Under
  the lock the sink checks, before it writes, that the path still names the file it opened (a
  log rotated, replaced or deleted under it is detected) and that the file still ends where its
  own last line ended (a ledger whose log another writer continued is stale: its state is not
  the log's). Either is a failure: the write raises :class:`LogFailedError`, nothing is
  written, and the ledger decides nothing more until it is restored (``Ledger.restore``). A
  failed write is cut back to where the file ended under the lock, so it never removes a line
  another writer wrote.

A stream without a file descriptor (``io.StringIO``, a wrapper of your own) gets
``stream.write(line)`` and ``stream.flush()``. If either raises, the sink is failed as above,
but whatever that stream buffered is the stream's: the ledger never writes, flushes or closes
it again; durability needs a real file (``durable=True`` rejects such a stream).

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from collections.abc import Mapping
from typing import Any, TextIO

try:
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, the checks still run
    _fcntl = None  # type: ignore[assignment]

from tailguard.base.args import is_int
from tailguard.base.errors import LogFailedError as LogFailedError

__all__ = ["LogFailedError", "LogSink"]

_PENDING_LIMIT = 1 << 16
_PLAIN = ('{"event": "append"', '{"event": "truncate"')  # the lines durable=True does not fsync


def _descriptor(stream: object) -> int | None:
    fileno = getattr(stream, "fileno", None)
    if fileno is None:
        return None
    try:
        fd = fileno()
    except (OSError, ValueError, io.UnsupportedOperation):  # StringIO, a closed or fake file
        return None
    return fd if is_int(fd) and fd >= 0 else None


class LogSink:
    """The ledger's log (see the module docstring). Not thread-safe: the ledger's lock guards it."""

    __slots__ = ("_durable", "_end", "_fd", "_flush", "_ident", "_last", "_owned", "_path", "_pending",
                 "_pending_size", "_regular", "_stream", "failure")

    def __init__(
        self, stream: TextIO | None = None, *, fd: int | None = None, owned: bool = False,
        flush: bool = True, durable: bool = False, path: str | os.PathLike[str] | None = None,
    ) -> None:
        """Write to ``stream``, or to the descriptor ``fd`` (closed by :meth:`close` if ``owned``)."""
        if (stream is None) == (fd is None):
            raise TypeError("LogSink: give a stream or a file descriptor")
        self._stream = stream
        self._fd = fd if fd is not None else _descriptor(stream)
        self._owned = owned and fd is not None
        self._flush = flush
        self._durable = durable
        self._pending: list[str] = []
        self._pending_size = 0
        #: why the sink failed (the first error), or None
        self.failure: str | None = None
        if durable and self._fd is None:
            raise ValueError(
                f"log: durable=True needs a log with a file descriptor (an open file), got {stream!r}"
            )
        self._regular = False
        self._end = -1  # where the file ended after our last line (regular files)
        self._last = b""  # our last line, as written
        self._path: str | None = None
        self._ident: tuple[int, int] | None = None
        if self._fd is not None:
            if stream is not None:
                stream.flush()  # whatever it buffered goes before our first line, never after
            st = os.fstat(self._fd)
            self._regular = stat.S_ISREG(st.st_mode)
            if self._regular:  # our lines go at the end; a failed one is cut back to it
                self._end = os.lseek(self._fd, 0, os.SEEK_END)
                name = path if path is not None else getattr(stream, "name", None)
                if isinstance(name, (str, os.PathLike)) and not isinstance(name, int):
                    where = os.path.abspath(os.fspath(name))  # a later chdir changes nothing
                    try:
                        named = os.stat(where)
                    except OSError:
                        named = None
                    if path is not None or (named is not None and (named.st_dev, named.st_ino) ==
                                            (st.st_dev, st.st_ino)):  # "<stdout>" names no file
                        self._path = where
                        self._ident = (st.st_dev, st.st_ino)
                        if named is None or (named.st_dev, named.st_ino) != self._ident:
                            self.failure = (f"the log {where} was replaced or removed before this "
                                            "ledger's first line")

    @property
    def durable(self) -> bool:
        return self._durable

    def check(self) -> None:
        """Raise :class:`LogFailedError` if an earlier write failed."""
        if self.failure is not None:
            raise LogFailedError(f"log: an earlier write failed ({self.failure}); this ledger "
                                 "records nothing more (rebuild it with Ledger.from_log)")

    def write(self, line: str) -> None:
        """Write one whole line (ending in a newline); returns only once it is written."""
        self.check()
        sync = self._durable and not line.startswith(_PLAIN)
        if self._fd is None:
            self._write_stream(line)
            return
        if not (self._flush or sync) and self._pending_size + len(line) <= _PENDING_LIMIT:
            self._pending.append(line)
            self._pending_size += len(line)
            return
        self._pending.append(line)
        self._write_fd(sync)

    def flush(self) -> None:
        """Write the lines kept by ``flush=False`` (with ``durable``, fsync them too); a stream
        without a descriptor is flushed, and if that fails the sink is failed as for a write."""
        self.check()
        if self._pending:
            self._write_fd(self._durable)
        elif self._fd is None and self._stream is not None and not self._flush:
            try:
                self._stream.flush()  # where flush=False left its lines: they must reach the log now
            except BaseException as exc:
                self.failure = f"{type(exc).__name__}: {exc}"
                raise

    def close(self) -> None:
        """Flush (unless failed) and close a descriptor the sink owns; a stream stays the caller's."""
        try:
            if self.failure is None and self._pending:
                self._write_fd(self._durable)
            elif (self.failure is None and self._fd is None and self._stream is not None and not self._flush
                  and not getattr(self._stream, "closed", False)):
                self.flush()  # a stream flush=False wrote to without flushing: its failure is ours
        finally:
            self._pending.clear()
            if self._owned and self._fd is not None:
                fd, self._fd = self._fd, None
                self.failure = self.failure or "the log was closed"
                os.close(fd)

    # -- internals ---------------------------------------------------------------

    def _write_stream(self, line: str) -> None:
        stream = self._stream
        assert stream is not None
        try:
            stream.write(line)
            if self._flush:
                stream.flush()
        except BaseException as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            raise

    def _write_fd(self, sync: bool) -> None:
        fd = self._fd
        assert fd is not None
        if self._stream is not None and self._stream.closed:  # its descriptor may be another file's now
            self.failure = "the log stream was closed"
            self._pending.clear()
            self.check()
        data = "".join(self._pending).encode("utf-8")
        self._pending.clear()
        self._pending_size = 0
        if not self._regular:
            self._write_all(fd, data, sync, -1)
            return
        locked = _lock(fd)
        try:
            start = os.fstat(fd).st_size
            problem = self._stale(start)
            if problem is not None:
                self.failure = problem
                self.check()
            self._write_all(fd, data, sync, start)
            self._end = start + len(data)
            self._last = data[data.rfind(b"\n", 0, len(data) - 1) + 1:]
        finally:
            if locked:
                _unlock(fd)

    def _stale(self, size: int) -> str | None:
        """Why this sink must not write now (the log moved, or another writer continued it)."""
        if self._path is not None and self._ident is not None:
            try:
                st = os.stat(self._path)
            except OSError as exc:
                return f"the log {self._path} was removed or cannot be read ({exc.strerror or exc})"
            if (st.st_dev, st.st_ino) != self._ident:
                return f"the log {self._path} was replaced or rotated since this ledger opened it"
        if self._end >= 0 and size != self._end:
            how = "another writer continued it" if size > self._end else "it was cut short"
            return (f"the log ends at byte {size}, not at this ledger's last line (byte {self._end}): "
                    f"{how}; restore the ledger from the session's snapshot")
        return None

    def _write_all(self, fd: int, data: bytes, sync: bool, start: int) -> None:
        done = 0
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:  # pragma: no cover - POSIX write never returns 0 here
                    raise OSError("write accepted no bytes")
                done += written
                view = view[written:]
            if sync:
                os.fsync(fd)
        except BaseException as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            self._take_back(fd, start, done)
            raise

    def position(self) -> dict[str, Any]:
        """Where the log ends (regular files): ``{"bytes": size, "last": digest of the last line}``."""
        if not self._regular or self._end < 0:
            return {}
        return {"bytes": self._end, "last": _digest(self._last)}

    @classmethod
    def continuing(
        cls, path: str | os.PathLike[str], position: Mapping[str, Any], *, flush: bool = True,
        durable: bool = False,
    ) -> tuple[LogSink, int]:
        """A sink appending to ``path``, which must end where ``position`` (from :meth:`position`
        of the writer that took the snapshot) says, and the number of lines past it; else
        :class:`SnapshotError` naming why. Whole ``refusal`` lines past the snapshot are
        accepted (a refusal changes no state: a compaction the guard refused, whose session
        state was never saved because the framework's step raised); anything else is not."""
        from tailguard.base.errors import SnapshotError

        size, last = position.get("bytes"), position.get("last")
        if type(size) is not int or not isinstance(last, str):
            raise SnapshotError("log", "this snapshot was not taken with a log file: it records no "
                                "log position to continue")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # not inherited by children (PEP 446)
        try:
            locked = _lock(fd)
            try:
                actual = os.fstat(fd).st_size
                tail = _last_line(path, size) if actual >= size else None
                extra = _refusals_past(path, size, actual) if actual > size else 0
            finally:
                if locked:
                    _unlock(fd)
            if actual > size and extra > 0:
                size = actual
            if actual != size:
                how = "has grown: another writer continued the session (or a write was not saved with the " \
                      "session's state)" if actual > size else "is shorter: it was cut, rotated or replaced"
                raise SnapshotError("log", f"{os.fspath(path)} ends at byte {actual}, the snapshot at byte "
                                    f"{size}; the log {how}")
            if tail is None or _digest(tail) != last:
                raise SnapshotError("log", f"{os.fspath(path)}: the last line is not the one the snapshot "
                                    "saw: this is another log, or it was rewritten")
            sink = cls(fd=fd, owned=True, flush=flush, durable=durable, path=path)
            sink._last = tail if not extra else _last_line(path, actual)
            return sink, extra
        except BaseException:
            os.close(fd)
            raise

    @classmethod
    def resuming(
        cls, path: str | os.PathLike[str], read: int, ident: tuple[int, int], kept: int, newline: bool,
        *, flush: bool = True, durable: bool = False,
    ) -> LogSink:
        """The sink :meth:`Ledger.from_log` continues ``path`` with, after reading its first
        ``read`` bytes from the file ``ident`` (device, inode): under the lock, the file must
        still be that file and end there (else :class:`LogFailedError`: another writer is
        continuing the log, or it was replaced, and nothing is cut or written); only then is
        a torn last line cut off (back to ``kept``) and a last line with no line end ended."""
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # not inherited by children (PEP 446)
        try:
            locked = _lock(fd)
            try:
                st = os.fstat(fd)
                where = os.fspath(path)
                if (st.st_dev, st.st_ino) != ident:
                    raise LogFailedError(f"log: {where} was replaced while it was read; this ledger "
                                         "does not continue it")
                if st.st_size != read:
                    raise LogFailedError(
                        f"log: {where} ends at byte {st.st_size:,}, not at byte {read:,} where it was "
                        "read: another writer is continuing it; this ledger does not write to it "
                        "(and cuts nothing)")
                if kept < read:
                    os.ftruncate(fd, kept)
                if newline:
                    os.write(fd, b"\n")
            finally:
                if locked:
                    _unlock(fd)
            return cls(fd=fd, owned=True, flush=flush, durable=durable, path=path)
        except BaseException:
            os.close(fd)
            raise

    def _take_back(self, fd: int, start: int, ours: int) -> None:
        """Cut a regular file back to ``start``, removing the ``ours`` bytes of the failed line
        and nothing else: if the file does not end exactly where our bytes end (a writer that
        does not take the lock appended after them), nothing is cut, and the failure says so
        (the audit then reports the torn line; another writer's lines are never removed)."""
        if start < 0:
            return
        try:
            end = os.fstat(fd).st_size
            if end == start + ours:
                if ours:
                    os.ftruncate(fd, start)
                os.lseek(fd, start, os.SEEK_SET)
            elif end > start:
                self.failure = (f"{self.failure}; and the {ours:,} bytes of the failed line were left "
                                f"in the log: it ends at byte {end:,}, not where they end (byte "
                                f"{start + ours:,}), so another writer appended after them and "
                                "cutting them would remove its lines")
        except OSError as exc:
            # nothing else to try: from_log and the audit report the torn last line
            self.failure = f"{self.failure}; and the partial line could not be removed: {exc}"


def _digest(line: bytes) -> str:
    return "sha256:" + hashlib.sha256(line).hexdigest()


def _last_line(path: str | os.PathLike[str], size: int) -> bytes:
    """The last line of the first ``size`` bytes of ``path`` (with its line end)."""
    from tailguard.base.jsonstrict import MAX_LINE_BYTES

    with open(path, "rb") as f:
        start = max(0, size - MAX_LINE_BYTES - 2)
        f.seek(start)
        data = f.read(size - start)
    return data[data.rfind(b"\n", 0, len(data) - 1) + 1:]


def _refusals_past(path: str | os.PathLike[str], start: int, end: int) -> int:
    """How many whole ``refusal`` lines fill ``[start, end)`` of ``path``; 0 if anything else does."""
    import json

    if end - start > (1 << 20):
        return 0
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    if not data.endswith(b"\n"):
        return 0
    count = 0
    for raw in data.splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            return 0
        if not isinstance(obj, dict) or obj.get("event") != "refusal":
            return 0
        count += 1
    return count


def _lock(fd: int) -> bool:
    if _fcntl is None:  # pragma: no cover
        return False
    _fcntl.flock(fd, _fcntl.LOCK_EX)
    return True


def _unlock(fd: int) -> None:
    if _fcntl is not None:
        _fcntl.flock(fd, _fcntl.LOCK_UN)
