"""Fail closed at the edges (issue 30): open only regular files, show input strings harmlessly.

- :func:`open_regular`: open a path for reading only if it is a regular file. A FIFO, socket,
  device or directory is an :class:`OSError` naming what it is (never a read that blocks
  forever): the path is opened with ``O_NONBLOCK`` (a FIFO opens at once), checked with
  ``fstat``, and only then switched back to blocking reads.
- :func:`printable`: a string as it can be shown on a terminal or in a page: control
  characters (C0, DEL, C1), the bidirectional controls (U+202A..U+202E, U+2066..U+2069,
  U+200E, U+200F, U+061C), the line and paragraph separators and lone surrogates are
  written as escapes (``\\x1b``, ``\\u202e``, ``\\ud800``), so input can neither move the
  cursor, clear the screen, plant a hyperlink, nor reorder what a reviewer reads.
  ``keep`` names characters left as they are (a report's own line ends).
- :func:`elide`: a long string shortened for a layout (the HTML page), saying how much was cut.
  JSON output is never elided.
- :func:`write_control`: the program's own control characters (a progress line's ``\\r``),
  written past that escaping.
- :func:`write_atomic`: write a report through a temporary file and a rename, so a failure
  leaves the old report intact.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from typing import BinaryIO, TextIO

__all__ = ["NotRegularFileError", "elide", "file_kind", "open_regular", "printable", "write_atomic", "write_control"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class NotRegularFileError(OSError):
    """A path that is not a regular file (a FIFO, socket, device): never opened for reading."""


def file_kind(mode: int) -> str:
    """What a ``st_mode`` is, in words (``a FIFO``, ``a socket``, ...)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def _refuse(mode: int, path: str | os.PathLike[str]) -> OSError:
    kind = file_kind(mode)
    if stat.S_ISDIR(mode):
        return IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
    return NotRegularFileError(errno.EINVAL, f"not a regular file: {kind}", os.fspath(path))


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``open(path, "rb")`` for a regular file only (see the module docstring); symlinks to a
    regular file are followed. Raises :class:`OSError` (``strerror`` says why)."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_BINARY | _O_CLOEXEC | _O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket (or a device with no driver) cannot be opened
            try:
                mode = os.stat(path).st_mode
            except OSError:
                raise exc from None
            raise _refuse(mode, path) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(mode, path)
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


# C0 and C1 controls, DEL, bidi controls, line/paragraph separators, surrogates
_UNSAFE_CHARS = ("\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                 "\ud800-\udfff")
_UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]")


def _escape(m: re.Match[str]) -> str:
    o = ord(m.group())
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def printable(text: object, keep: str = "") -> str:
    """``str(text)`` with every unsafe character escaped (see the module docstring), but
    those in ``keep``."""
    s = text if isinstance(text, str) else str(text)
    if not keep:
        return _UNSAFE.sub(_escape, s)
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m), s)


def write_control(stream: TextIO, text: str) -> None:
    """Write the program's own terminal control (a progress line's ``\\r``) to ``stream`` as
    it is: the CLI's streams escape every control character but ``\\n`` (``write_raw`` bypasses
    that); any other stream gets a plain ``write``. Never pass input through this."""
    getattr(stream, "write_raw", stream.write)(text)


def elide(text: str, limit: int = 200) -> str:
    """``text``, or its first ``limit`` characters and how many more were cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def _umask() -> int:
    """The process's umask, read without changing it where the system says it (Linux)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o077)  # elsewhere: set and restore at once (never a wider mode meanwhile)
    os.umask(umask)
    return umask


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in its directory and a rename: the
    old file stays whole if anything fails (and after a crash it is the old or the new file,
    whole). The new file gets the mode a plain ``open`` gives (an existing file's mode is kept).
    A symbolic link is written through, as ``open`` does: its target is replaced, not the link."""
    target = os.fspath(path)
    if os.path.islink(target):
        target = os.path.realpath(target)
    try:
        existing = os.stat(target).st_mode
    except OSError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing):  # /dev/stdout, a FIFO: no rename over it
        with open(target, "wb") as out:
            out.write(data)
        return
    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=".tailguard-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        mode = stat.S_IMODE(existing) if existing is not None else 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
