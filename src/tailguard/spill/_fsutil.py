"""Durable file primitives: write-temp, fsync, rename, fsync-directory; no symlink followed.

Kept apart from the store so that tests can inject failures (``os.write`` raising ``ENOSPC``)
at exactly one layer, and so that the durability argument in ``docs/spill.md`` has one place to
point at.

Inside a store nothing is reached by a path that the kernel resolves through a link: the store
directory is opened once, each directory below it is opened relative to its parent's
descriptor with ``O_NOFOLLOW | O_DIRECTORY`` (:func:`dir_chain`, :func:`open_dir`), and every
file is created, read, renamed or removed relative to a directory descriptor, again with
``O_NOFOLLOW``. A directory or file replaced by a symbolic link raises :class:`SymlinkError`;
a link swapped in after a check cannot redirect a later step, since no later step resolves a
path through it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterator

from tailguard.base.errors import SymlinkError as SymlinkError

_O_BINARY = getattr(os, "O_BINARY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

#: spill files hold transcripts: only their owner reads them (issue 30), whatever the umask
FILE_MODE = 0o600
DIR_MODE = 0o700


def fsync_fd(fd: int) -> None:
    """Flush a file's data and metadata to stable storage (``F_FULLFSYNC`` on macOS)."""
    if sys.platform == "darwin":  # pragma: no cover - plain fsync does not reach the platter there
        import fcntl

        try:
            fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
            return
        except OSError:
            pass
    os.fsync(fd)


def fsync_dir(path: str) -> None:
    """Make a directory's entries (a rename, a new file or subdirectory) durable."""
    if os.name == "nt":  # pragma: no cover - directories cannot be opened there; NTFS journals
        return
    fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        fsync_fd(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    """``os.write`` until every byte is accepted (a write may be short)."""
    view = memoryview(data).cast("B")
    chunk = 1 << 30
    while view:
        written = os.write(fd, view[:chunk])
        if written <= 0:  # pragma: no cover - POSIX write never returns 0 for a regular file
            raise OSError("write accepted no bytes")
        view = view[written:]


def make_dirs_durable(path: str) -> None:
    """Create ``path`` and missing parents, fsyncing each parent whose entries changed."""
    missing: list[str] = []
    probe = os.path.abspath(path)
    while not os.path.isdir(probe):
        missing.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:  # pragma: no cover - the root always exists
            break
        probe = parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(directory):
                raise
        else:
            os.chmod(directory, DIR_MODE)  # exactly 0700, whatever the umask
        fsync_dir(os.path.dirname(directory))


def atomic_write(
    final_path: str,
    data: bytes | bytearray | memoryview,
    tmp_dir: str,
    *,
    retract_on_failure: bool = False,
) -> None:
    """Publish ``data`` at ``final_path`` all at once, durably, or not at all.

    Sequence: create a fresh temp file in ``tmp_dir`` (same filesystem), write every byte, fsync
    it, rename it over ``final_path``, fsync the destination directory. A crash at any point
    leaves either no file at ``final_path`` or the complete one; a leftover temp file is never
    read as data. On error the temp file is removed and the ``OSError`` propagates; with
    ``retract_on_failure`` a file already renamed into place whose directory entry could not be
    synced is removed again, so a failed write is never left visible.
    """
    name = f"{os.path.basename(final_path)[:24]}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    tmp_path = os.path.join(tmp_dir, name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOFOLLOW | _O_CLOEXEC
    fd = os.open(tmp_path, flags, FILE_MODE)
    published = False
    try:
        try:
            os.fchmod(fd, FILE_MODE)  # exactly 0600, whatever the umask: spills are transcripts
            write_all(fd, data)
            fsync_fd(fd)
        finally:
            os.close(fd)
        os.replace(tmp_path, final_path)
        published = True
        try:
            fsync_dir(os.path.dirname(final_path))
        except OSError:
            if retract_on_failure:
                with contextlib.suppress(OSError):
                    os.unlink(final_path)
            raise
    finally:
        if not published:
            with contextlib.suppress(OSError):
                os.unlink(tmp_path)


def read_regular_file(path: str) -> bytes:
    """Read a whole regular file without following a symlink or blocking on a FIFO.

    Raises ``FileNotFoundError`` when absent and ``IsADirectoryError``/``OSError`` when the
    entry is not a plain file, so a planted link or device can never be served as data.
    """
    fd = os.open(path, os.O_RDONLY | _O_BINARY | _O_NOFOLLOW | _O_CLOEXEC | os.O_NONBLOCK)
    return _read_fd(fd, path)


def _read_fd(fd: int, path: str) -> bytes:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file: {path}")
        chunks: list[bytes] = []
        remaining = info.st_size
        while True:
            chunk = os.read(fd, max(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# -- relative to directory descriptors, never through a link ------------------------------

_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC


def _is_link(name: str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _refuse_link(exc: OSError, name: str, dir_fd: int | None, where: str) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(name, dir_fd):
        return SymlinkError(errno.ELOOP, f"{where or name} is a symbolic link; the spill store never follows links")
    return exc


def open_dir(name: str, dir_fd: int | None = None, where: str = "") -> int:
    """Open directory ``name`` (relative to ``dir_fd``) without following a link to it."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _refuse_link(exc, name, dir_fd, where) from None


@contextlib.contextmanager
def dir_chain(root: str, *parts: str) -> Iterator[int]:
    """A descriptor of ``root/part/...``: ``root`` as named, every part below it link-free."""
    fd = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        where = ""
        for part in parts:
            where = f"{where}{part}/"
            below = open_dir(part, fd, where)
            os.close(fd)
            fd = below
        yield fd
    finally:
        os.close(fd)


def read_regular_file_at(dir_fd: int, name: str, where: str = "") -> bytes:
    """:func:`read_regular_file` for ``name`` relative to ``dir_fd`` (no link followed)."""
    try:
        fd = os.open(name, os.O_RDONLY | _O_BINARY | _O_NOFOLLOW | _O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        raise _refuse_link(exc, name, dir_fd, where) from None
    return _read_fd(fd, where or name)


def make_dir_at(dir_fd: int, name: str, where: str = "") -> int:
    """Open subdirectory ``name`` of ``dir_fd``, creating it (durably) if missing; no link followed."""
    try:
        os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
    except FileExistsError:
        return open_dir(name, dir_fd, where)
    fsync_fd(dir_fd)
    fd = open_dir(name, dir_fd, where)
    try:
        os.fchmod(fd, DIR_MODE)  # exactly 0700, whatever the umask
    except BaseException:
        os.close(fd)
        raise
    return fd


def atomic_write_at(
    dir_fd: int,
    name: str,
    data: bytes | bytearray | memoryview,
    tmp_fd: int,
    *,
    retract_on_failure: bool = False,
) -> None:
    """:func:`atomic_write` of ``dir_fd``/``name``, staging in the directory ``tmp_fd``.

    The temp file is created with ``O_EXCL | O_NOFOLLOW`` and renamed relative to both
    descriptors (a rename replaces a link at ``name``; it never writes through one).
    """
    tmp_name = f"{name[:24]}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_NOFOLLOW | _O_CLOEXEC
    fd = os.open(tmp_name, flags, FILE_MODE, dir_fd=tmp_fd)
    published = False
    try:
        try:
            os.fchmod(fd, FILE_MODE)  # exactly 0600, whatever the umask: spills are transcripts
            write_all(fd, data)
            fsync_fd(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, name, src_dir_fd=tmp_fd, dst_dir_fd=dir_fd)
        published = True
        try:
            fsync_fd(dir_fd)
        except OSError:
            if retract_on_failure:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=dir_fd)
            raise
    finally:
        if not published:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name, dir_fd=tmp_fd)


def is_link_at(dir_fd: int, name: str) -> bool:
    """Whether ``name`` in ``dir_fd`` is a symbolic link (``False`` when absent)."""
    return _is_link(name, dir_fd)
