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
  buffered line back and fails the sink.

A stream without a file descriptor (``io.StringIO``, a wrapper of your own) gets
``stream.write(line)`` and ``stream.flush()``. If either raises, the sink is failed as above,
but whatever that stream buffered is the stream's: the ledger never writes, flushes or closes
it again; durability needs a real file (``durable=True`` rejects such a stream).

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import io
import os
import stat
from typing import TextIO

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

    __slots__ = ("_durable", "_fd", "_flush", "_owned", "_pending", "_pending_size", "_regular",
                 "_stream", "failure")

    def __init__(
        self, stream: TextIO | None = None, *, fd: int | None = None, owned: bool = False,
        flush: bool = True, durable: bool = False,
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
        if self._fd is not None:
            if stream is not None:
                stream.flush()  # whatever it buffered goes before our first line, never after
            self._regular = stat.S_ISREG(os.fstat(self._fd).st_mode)
            if self._regular:  # our lines go at the end; a failed one is cut back to it
                os.lseek(self._fd, 0, os.SEEK_END)

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
        """Write the lines kept by ``flush=False`` (with ``durable``, fsync them too)."""
        self.check()
        if self._pending:
            self._write_fd(self._durable)

    def close(self) -> None:
        """Flush (unless failed) and close a descriptor the sink owns; a stream stays the caller's."""
        try:
            if self.failure is None and self._pending:
                self._write_fd(self._durable)
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
        start = os.lseek(fd, 0, os.SEEK_CUR) if self._regular else -1
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:  # pragma: no cover - POSIX write never returns 0 here
                    raise OSError("write accepted no bytes")
                view = view[written:]
            if sync:
                os.fsync(fd)
        except BaseException as exc:
            self.failure = f"{type(exc).__name__}: {exc}"
            self._take_back(fd, start)
            raise

    def _take_back(self, fd: int, start: int) -> None:
        """Cut a regular file back to ``start``: no part of a failed line stays in the log."""
        if start < 0:
            return
        try:
            end = os.fstat(fd).st_size
            if end > start:
                os.ftruncate(fd, start)
            os.lseek(fd, start, os.SEEK_SET)
        except OSError as exc:
            # nothing else to try: from_log and the audit report the torn last line
            self.failure = f"{self.failure}; and the partial line could not be removed: {exc}"
