"""Python's cyclic garbage collector paused for the span of one session's import.

Importing a thread allocates tens of thousands of short-lived objects (LangChain messages,
tracker entries, intervals), nearly all freed by reference counting; the cyclic collector
still runs a generation-0 pass every 700 allocations, and now and then a full pass over every
object the process holds (LangChain, LangGraph and pydantic's classes and schemas). Paused
while one session is imported, it collects once afterwards what the import left (one
generation-0 pass, at the next allocation), instead of dozens of times during it.

:func:`paused` is scoped: the collector is enabled again when the outermost pause ends
(also on an error), and only if it was enabled when that pause began; pauses may nest and
run in several threads at once (a counter under a lock). Nothing outlives the call.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off inside the block (as it was after the outermost one)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
