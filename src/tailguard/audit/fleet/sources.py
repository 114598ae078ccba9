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

A name ending ``.gz`` is decompressed (gzip). Sessions are sorted by source and each appears
once however many arguments match it. A glob or directory that matches no log is a usage
error (:class:`SourceError`); an explicit path that does not exist is a session whose record
says it cannot be read.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from collections.abc import Iterable, Iterator
from glob import glob
from typing import IO, Any, NamedTuple

from tailguard.base.errors import SourceError as SourceError

__all__ = ["LOG_SUFFIXES", "Item", "SourceError", "expand", "has_glob", "is_url", "open_lines"]

LOG_SUFFIXES = (".jsonl", ".jsonl.gz")
_GLOB_CHARS = frozenset("*?[")
_CHUNK = 1 << 20


class Item(NamedTuple):
    """One session: ``source`` as reported, ``locator`` what a worker opens."""

    source: str
    locator: str


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
    out: list[str] = []
    if os.path.isdir(arg):
        for root, dirs, files in os.walk(arg):
            dirs.sort()
            out.extend(os.path.join(root, f) for f in files if _is_log(f))
        if not out:
            raise SourceError(f"{arg}: directory holds no {' or '.join('*' + s for s in LOG_SUFFIXES)} file")
    elif has_glob(arg) and not os.path.exists(arg):
        out = [p for p in glob(arg, recursive=True) if os.path.isfile(p)]
        if not out:
            raise SourceError(f"{arg}: no file matches")
    else:
        out = [arg]
    return [Item(p, os.path.abspath(p)) for p in out]


def _expand_url(arg: str) -> list[Item]:
    fsspec = fsspec_module()
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
            f: IO[bytes] = stack.enter_context(fsspec.open(locator, "rb", compression="infer"))
            yield _split(f)
            return
        raw = stack.enter_context(open(locator, "rb"))
        if locator.endswith(".gz"):
            yield stack.enter_context(gzip.GzipFile(fileobj=raw, mode="rb"))
        else:
            yield raw


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
