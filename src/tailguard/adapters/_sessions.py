"""The session machinery an adapter serving many sessions needs, framework-free.

An adapter that serves many sessions at once (LangGraph threads through one compiled graph,
langmem's ``SummarizationNode`` in such a graph) keeps each session's guard state **beside the
session**, in the framework's own persistence, as one versioned JSON value (SPEC.md section 11):
``{"format", "version", "session", ..., "integrity"}``. This module holds what is the same for
every such adapter:

- :func:`canonical` (the canonical JSON bytes of a value) and :func:`integrity` (the digest a
  state value carries of itself), and :func:`check_state_value`, which reads a value back and
  fails closed with an :class:`~tailguard.adapters._offsets.AdapterError` naming where the value
  came from and why it is refused (another format, another version, altered, no session);
- :class:`SessionTable`: the restored sessions this process holds (an LRU by session id, never
  evicting a session in use) and a lock per session, sync (:meth:`SessionTable.locked`) and
  async (:meth:`SessionTable.alocked`, which waits without blocking the event loop). Two
  compactions of one session never interleave; different sessions run in parallel.

A cached session is only as good as the state it last handed out: adapters keep its integrity
digest (``persisted``) and use the cached session only when the state the framework holds is
that one (:meth:`SessionTable.cached_for`).

Standard library only.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from tailguard.adapters._offsets import AdapterError

__all__ = ["POLL_FIRST", "POLL_MAX", "LockEntry", "SessionTable", "canonical", "check_state_value", "integrity"]

#: Seconds an async task waits for a session's lock: first, at most (doubling in between).
POLL_FIRST, POLL_MAX = 1 / 2000, 1 / 50


def canonical(value: object) -> bytes:
    """The canonical JSON bytes of ``value`` (sorted keys, ASCII, no spaces)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def integrity(value: dict[str, Any]) -> str:
    """The integrity digest of a state value: ``sha256:`` of its canonical JSON without the
    ``integrity`` key itself."""
    return "sha256:" + hashlib.sha256(canonical({k: v for k, v in value.items() if k != "integrity"})).hexdigest()


def check_state_value(value: object, where: str, *, fmt: str, version: int, framework: str) -> str:
    """The session id of a guard state value, after checking it is one (``fmt``, ``version``,
    its integrity digest, a session id); else :class:`AdapterError` naming ``where`` and why."""
    if not isinstance(value, dict) or value.get("format") != fmt:
        raise AdapterError(f"{where}: not a tailguard {framework} guard state (no 'format': {fmt!r})")
    if value.get("version") != version:
        raise AdapterError(f"{where}: guard state version {value.get('version')!r}; this tailguard reads "
                           f"version {version}")
    if value.get("integrity") != integrity(value):
        raise AdapterError(f"{where}: the guard state does not match its integrity digest (altered or damaged)")
    sid = value.get("session")
    if not isinstance(sid, str):
        raise AdapterError(f"{where}: the guard state names no session")
    return sid


@dataclass(slots=True)
class LockEntry:
    """A session's lock and how many callers hold or wait for it (the entry goes when none do)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class _Closable(Protocol):
    persisted: str | None

    def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


class SessionTable(Generic[S]):
    """Restored sessions by id (an LRU of ``cache_size``) and a lock per session key.

    ``mutex`` guards the cache and the lock table and is never held long; ``cache`` and
    ``locks`` are exposed for adapters that inspect them (read them under ``mutex``).
    A session evicted from the cache is closed (its log file); one whose lock is in use is
    evicted later.
    """

    def __init__(self, cache_size: int) -> None:
        self.cache_size = cache_size
        self.mutex = threading.Lock()
        self.cache: OrderedDict[str, S] = OrderedDict()
        self.locks: dict[str, LockEntry] = {}

    def get(self, sid: str) -> S | None:
        """The cached session ``sid``, if any (not moved in the LRU)."""
        with self.mutex:
            return self.cache.get(sid)

    @staticmethod
    def cached_for(cached: S | None, value: dict[str, Any] | None) -> S | None:
        """``cached`` when it last handed out ``value`` (same integrity digest), else None."""
        if cached is None or value is None or cached.persisted != value.get("integrity"):
            return None
        return cached

    def remember(self, sid: str, sess: S) -> None:
        """Put ``sess`` in the cache as the newest; close the sessions that fall out of it."""
        evicted: list[S] = []
        with self.mutex:
            self.cache[sid] = sess
            self.cache.move_to_end(sid)
            while len(self.cache) > self.cache_size:
                old_sid, old = next(iter(self.cache.items()))
                entry = self.locks.get(old_sid)
                if entry is not None and entry.users:
                    break  # in use: evicted later
                del self.cache[old_sid]
                evicted.append(old)
        for old in evicted:
            old.close()

    def forget(self, sid: str) -> S | None:
        """Take ``sid`` out of the cache (the caller closes it)."""
        with self.mutex:
            return self.cache.pop(sid, None)

    def drain(self) -> list[S]:
        """Every cached session, the cache emptied (the caller closes them)."""
        with self.mutex:
            out = list(self.cache.values())
            self.cache.clear()
        return out

    # -- locks: one compaction of a session at a time ---------------------------------------

    def enter(self, key: str) -> LockEntry:
        with self.mutex:
            entry = self.locks.setdefault(key, LockEntry())
            entry.users += 1
        return entry

    def leave(self, key: str, entry: LockEntry) -> None:
        with self.mutex:
            entry.users -= 1
            if entry.users == 0 and self.locks.get(key) is entry:
                del self.locks[key]

    @contextmanager
    def locked(self, key: str) -> Iterator[None]:
        """Hold the lock of session ``key`` (blocking)."""
        entry = self.enter(key)
        try:
            with entry.lock:
                yield
        finally:
            self.leave(key, entry)

    @asynccontextmanager
    async def alocked(self, key: str) -> AsyncIterator[None]:
        """:meth:`locked` without blocking the event loop: a task waits by sleeping, so two
        tasks of one session on one loop never deadlock, and cancelling the wait takes nothing."""
        entry = self.enter(key)
        try:
            delay = POLL_FIRST
            while not entry.lock.acquire(blocking=False):
                await asyncio.sleep(delay)
                delay = min(delay * 2, POLL_MAX)
            try:
                yield
            finally:
                entry.lock.release()
        finally:
            self.leave(key, entry)
