"""Which sessions a fleet audit reads, and how one is opened.

Every argument is one of:

- a URL (``scheme://...``, fsspec's chained ``a::b://...`` too): read through fsspec and
  whatever backends are installed (``file://``, ``s3://`` with s3fs, ``gs://`` with gcsfs, ...);
  a glob in it is expanded by that filesystem, a directory (``.../``) stands for its logs;
- a plain local path or glob: expanded with the standard library (``glob``, ``**`` recursive),
  so a local fleet audit needs no fsspec; matches keep the form they were given in (relative
  stays relative), and are opened at their absolute path, so that Dask workers started in
  another directory (on a shared file system) find them;
- a directory, local or URL: every ``*.jsonl`` and ``*.jsonl.gz`` file below it, recursively.

Locally, directory mode and globs follow symbolic links the same way: a link to a directory is
followed (``**`` included), a link that leads back to a directory above it (a loop) is not, and
that loop, like every directory that cannot be read, is a session whose record is an error
(exit 2), never skipped. A matched name that is not a regular file (a FIFO, a socket, a
device) is such a session too: it is never opened for reading.

A name ending ``.gz`` is decompressed (gzip). Sessions are sorted by source and each appears
once however many arguments match it. A glob or directory that matches no log is a usage
error (:class:`SourceError`); an explicit path that does not exist is a session whose record
says it cannot be read.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, NamedTuple

from tailguard.base.errors import SourceError as SourceError
from tailguard.base.safeio import open_regular

__all__ = ["LOG_SUFFIXES", "Item", "SourceError", "expand", "has_glob", "is_url", "open_lines"]

LOG_SUFFIXES = (".jsonl", ".jsonl.gz")
_GLOB_CHARS = frozenset("*?[")
_CHUNK = 1 << 20


class Item(NamedTuple):
    """One session: ``source`` as reported, ``locator`` what a worker opens; ``error``, when
    set, the record's error: a path the expansion could not read or chose not to follow
    (an unreadable directory, a symbolic link loop), reported as an unusable session."""

    source: str
    locator: str
    error: str | None = None
    strict_tail: bool = False  # ``--strict-tail``: a torn last line is the session's error
    #: how a worker opens ``locator`` (default :func:`open_lines`): an importer's reader for
    #: ``audit --from`` (a module-level function or a partial of one, so it pickles)
    opener: Callable[[str], contextlib.AbstractContextManager[Iterable[bytes]]] | None = None
    #: ``audit --from``: how a worker judges ``locator`` with the import's own ledger, given the
    #: profile (:mod:`tailguard.importers.judged_ledger`): the record, or None for a profile it
    #: does not judge (then ``opener``'s log is audited). Picklable as ``opener``.
    judge: Callable[[str, str], Any] | None = None


def is_url(arg: str) -> bool:
    return "://" in arg


def has_glob(arg: str) -> bool:
    return not _GLOB_CHARS.isdisjoint(arg)


def fsspec_module() -> Any:
    """Import fsspec, or raise ModuleNotFoundError naming it (the CLI names the extra)."""
    import fsspec

    return fsspec


def expand(args: Iterable[str]) -> list[Item]:
    """The sessions the arguments name, sorted by source, each once."""
    found: dict[str, Item] = {}
    for arg in args:
        items = _expand_url(arg) if is_url(arg) else _expand_local(arg)
        for item in items:
            found.setdefault(item.source, item)
    return [found[s] for s in sorted(found)]


def _is_log(name: str) -> bool:
    return name.endswith(LOG_SUFFIXES)


def _expand_local(arg: str) -> list[Item]:
    out: list[Item] = []
    if os.path.isdir(arg):
        _walk(arg, out, frozenset())
        if not out:
            raise SourceError(f"{arg}: directory holds no {' or '.join('*' + s for s in LOG_SUFFIXES)} file")
    elif has_glob(arg) and not os.path.lexists(arg):
        _glob(arg, out)
        if not out:
            raise SourceError(f"{arg}: no file matches")
    else:
        out.append(_file(arg))
    return out


def _file(path: str) -> Item:
    return Item(path, os.path.abspath(path))


def _unusable(path: str, reason: str) -> Item:
    return Item(path, os.path.abspath(path), f"{path}:0: directory: {reason}; no log below it is audited")


def _listing(path: str, out: list[Item], ancestors: frozenset[tuple[int, int]],
             ) -> tuple[list[os.DirEntry[str]], frozenset[tuple[int, int]]] | None:
    """The entries of directory ``path`` (sorted by name) and the ancestors below it, or None
    after recording why it cannot be listed (unreadable, or a link back to an ancestor)."""
    try:
        st = os.stat(path)
        ident = (st.st_dev, st.st_ino)
        if ident in ancestors:
            out.append(_unusable(path, "a symbolic link back to a directory above it (a loop): not followed"))
            return None
        with os.scandir(path or ".") as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        out.append(_unusable(path, f"cannot read ({exc.strerror or exc})"))
        return None
    return entries, ancestors | {ident}


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows a symbolic link, as glob's ** does
    except OSError:
        return False


def _walk(path: str, out: list[Item], ancestors: frozenset[tuple[int, int]]) -> None:
    """Directory mode: every log below ``path``; links to directories are followed (loops
    and unreadable directories are error records, never skipped)."""
    listed = _listing(path, out, ancestors)
    if listed is None:
        return
    entries, below = listed
    for e in entries:
        sub = os.path.join(path, e.name)
        if _is_dir(e):
            _walk(sub, out, below)
        elif _is_log(e.name):
            out.append(_file(sub))


def _glob(pattern: str, out: list[Item]) -> None:
    """``glob(pattern, recursive=True)``'s matches that are not directories, but a directory it
    cannot read (or a link loop under ``**``) is an error record instead of silently no match."""
    parts = pattern.split(os.sep)
    k = 0
    while k < len(parts) - 1 and not has_glob(parts[k]):
        k += 1
    base = os.sep.join(parts[:k])
    if not base and pattern.startswith(os.sep):
        base = os.sep
    if k:
        try:
            if not stat.S_ISDIR(os.stat(base).st_mode):
                return
        except (FileNotFoundError, NotADirectoryError):
            return  # no match
        except OSError as exc:  # a directory on the way that cannot be searched (mode 000)
            out.append(_unusable(base, f"cannot read ({exc.strerror or exc})"))
            return
    _match(base, parts[k:], out, frozenset())


def _join(path: str, name: str) -> str:
    return os.path.join(path, name) if path else name


def _match(path: str, comps: list[str], out: list[Item], ancestors: frozenset[tuple[int, int]]) -> None:
    part, rest = comps[0], comps[1:]
    if not has_glob(part):
        sub = _join(path, part)
        try:
            os.lstat(sub)
        except (FileNotFoundError, NotADirectoryError):
            return  # no match
        except OSError as exc:  # a directory on the way that cannot be searched (mode 000)
            out.append(_unusable(path or ".", f"cannot read ({exc.strerror or exc})"))
            return
        if rest:
            if os.path.isdir(sub):
                _match(sub, rest, out, ancestors)
        elif not os.path.isdir(sub):
            out.append(_file(sub))
        return

    listed = _listing(path, out, ancestors)
    if listed is None:
        return
    entries, below = listed
    if part == "**":  # zero or more directories
        if rest:
            _match(path, rest, out, ancestors)
        for e in entries:
            if e.name.startswith("."):
                continue
            if _is_dir(e):
                _match(_join(path, e.name), comps, out, below)
            elif not rest:
                out.append(_file(_join(path, e.name)))
        return
    for e in entries:
        if not fnmatch.fnmatchcase(e.name, part) or (e.name.startswith(".") and not part.startswith(".")):
            continue
        sub = _join(path, e.name)
        if rest:
            if _is_dir(e):
                _match(sub, rest, out, below)
        elif not _is_dir(e):
            out.append(_file(sub))


def _expand_url(arg: str) -> list[Item]:
    fsspec = fsspec_module()
    local = _local_path(fsspec, arg) if not has_glob(arg.split("://", 1)[0]) else None
    if local is not None:  # file://: expanded as a plain path is (links, unreadable directories)
        return _as_urls(fsspec, arg, local)
    try:
        fs, path = fsspec.core.url_to_fs(arg)
        if has_glob(path):
            info = fs.glob(path, detail=True)
            out = [p for p, d in info.items() if d.get("type") != "directory"]
            if not out:
                raise SourceError(f"{arg}: no file matches")
        elif arg.endswith("/") or fs.isdir(path):
            out = [p for p in fs.find(path) if _is_log(p)]
            if not out:
                raise SourceError(f"{arg}: directory holds no {' or '.join('*' + s for s in LOG_SUFFIXES)} file")
        else:
            return [Item(arg, arg)]
    except (SourceError, ModuleNotFoundError):
        raise
    except Exception as exc:  # backend errors (credentials, network, unknown protocol) vary
        raise SourceError(f"{arg}: cannot list ({type(exc).__name__}: {exc})") from None
    prefix = arg.split("::")[:-1]  # keep a chain (simplecache::s3://...) on every match
    urls = [fs.unstrip_protocol(p) for p in out]
    urls = ["::".join([*prefix, u]) for u in urls] if prefix else urls
    return [Item(u, u) for u in urls]


@contextlib.contextmanager
def open_lines(locator: str) -> Iterator[Iterable[bytes]]:
    """The raw lines of one log, streamed (a ``.gz`` name is decompressed)."""
    with contextlib.ExitStack() as stack:
        if is_url(locator):
            fsspec = fsspec_module()
            local = _local_path(fsspec, locator)
            if local is not None:  # file://: a FIFO or device is an error as for a plain path
                f: IO[bytes] = stack.enter_context(open_regular(local))
                kind = fsspec.utils.infer_compression(local)
                if kind is not None:
                    f = stack.enter_context(fsspec.compression.compr[kind](f, mode="rb"))
            else:
                f = stack.enter_context(fsspec.open(locator, "rb", compression="infer"))
            yield _split(f)
            return
        raw = stack.enter_context(open_regular(locator))  # a FIFO or device: an error, never a hang
        if locator.endswith(".gz"):
            yield stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
        else:
            yield raw


def _as_urls(fsspec: Any, arg: str, local: str) -> list[Item]:
    """:func:`_expand_local` of a ``file://`` URL's path, every source (and error) named as a URL."""
    from fsspec.implementations.local import LocalFileSystem

    fs = LocalFileSystem()
    keep_slash = local + "/" if arg.endswith("/") and not local.endswith("/") else local
    try:
        items = _expand_local(keep_slash)
    except SourceError as exc:
        raise SourceError(str(exc).replace(keep_slash, arg, 1)) from None
    out = []
    for it in items:
        url = fs.unstrip_protocol(it.locator)
        error = None if it.error is None else url + it.error[len(it.source):]
        out.append(Item(url, url, error))
    return out


def _local_path(fsspec: Any, locator: str) -> str | None:
    """The local path a ``file://`` URL (no ``::`` chain) names, else None."""
    if "::" in locator:
        return None
    fs, path = fsspec.core.url_to_fs(locator)
    from fsspec.implementations.local import LocalFileSystem

    return str(path) if isinstance(fs, LocalFileSystem) else None


def _split(f: IO[bytes]) -> Iterator[bytes]:
    """Lines exactly as iterating a local file gives them (split after each ``\\n``)."""
    rest = b""
    while chunk := f.read(_CHUNK):
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        for p in parts:
            yield p + b"\n"
    if rest:
        yield rest
