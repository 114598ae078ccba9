"""Stopping a fix search on time: ``--timeout``, SIGINT and SIGTERM.

The search runs in a worker thread; the main thread waits, owns the signal handlers and the
clock, and on a stop interrupts the z3 context the worker's current probe runs in
(``Context.interrupt``: z3 then answers ``unknown`` at once). The worker checks the flag
before each probe and discards a probe that was interrupted, so a stop never turns into a
verdict; what it had verified before the stop is kept and printed. A second signal falls
back to the default handler (a hard stop).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """Raised inside the search when it must end; carries nothing: the reason is on the flag."""


class StopFlag:
    """Why the search must end (``""``: it need not), set by the clock or a signal.

    ``guarded``: the worker is re-checking a fix found safe; the timeout then waits up to
    ``grace`` seconds more before interrupting it (a signal does not wait)."""

    def __init__(self, timeout: float | None = None, grace: float = 5.0) -> None:
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.grace = grace
        self.reason = ""
        self.guarded = False
        self._event = threading.Event()

    def set(self, reason: str) -> None:
        if not self.reason:
            self.reason = reason
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise :class:`Stopped` if the search must end (called before every probe)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.set("timeout")
        if self.is_set():
            raise Stopped

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


def _interrupt_z3() -> None:
    try:
        import z3

        ctx = getattr(z3.z3, "_main_ctx", None)
        if ctx is not None:
            ctx.interrupt()
    except Exception:
        pass


def run_stoppable(work: Callable[[], T], flag: StopFlag) -> T:
    """Run ``work`` in a worker thread until it returns, stopping it (through ``flag`` and a
    z3 interrupt) at the deadline or on SIGINT/SIGTERM. ``work`` must return its best result
    when it sees the flag. Signal handlers are installed only in the main thread."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=target, name="tailguard-suggest", daemon=True)
    saved: dict[signal.Signals, Any] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        flag.set(signal.Signals(signum).name)
        for sig, old in saved.items():  # a second signal: the default behaviour
            signal.signal(sig, old)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            saved[sig] = signal.signal(sig, on_signal)
    try:
        worker.start()
        stopped_at: float | None = None
        while worker.is_alive():
            worker.join(0.05)
            if flag.deadline is not None and time.monotonic() >= flag.deadline:
                flag.set("timeout")
            if not flag.is_set():
                continue
            if stopped_at is None:
                stopped_at = time.monotonic()
            late = time.monotonic() - stopped_at > flag.grace
            if not flag.guarded or flag.reason != "timeout" or late:
                _interrupt_z3()
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
