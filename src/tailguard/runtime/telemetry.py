"""Decision hooks for tracing tools: off unless a sink is installed.

The ledger calls :func:`emit` once per recorded decision (a compaction it commits, a refusal it
logs, a spill, an adoption), with an event name under ``tailguard.*`` and flat attributes
(strings, integers, booleans and lists of strings: what OpenTelemetry attributes accept).
With no sink installed, the cost is one truth test of a module global per recorded event; the
attributes are not even built. :mod:`tailguard.adapters.otel` installs the OpenTelemetry sink
(``pip install 'tailguard[otel]'``); any callable ``sink(name, attributes)`` works.

A sink never changes a decision: an exception it raises is reported once as a
:class:`RuntimeWarning` and otherwise ignored. Standard library only.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tailguard.base.vocab import Pair

#: ``sink(event_name, attributes)``.
Sink = Callable[[str, Mapping[str, Any]], None]

#: The installed sinks (a tuple, replaced whole: reading it needs no lock).
SINKS: tuple[Sink, ...] = ()

_lock = threading.Lock()
_warned: set[int] = set()


def install(sink: Sink) -> None:
    """Add ``sink`` (a no-op if it is installed already)."""
    global SINKS
    if not callable(sink):
        raise TypeError(f"sink: expected a callable sink(name, attributes), got {sink!r}")
    with _lock:
        if sink not in SINKS:
            SINKS = (*SINKS, sink)


def uninstall(sink: Sink) -> None:
    """Remove ``sink`` (a no-op if it is not installed)."""
    global SINKS
    with _lock:
        SINKS = tuple(s for s in SINKS if s != sink)


def ranges(pairs: Iterable[Pair]) -> list[str]:
    """Half-open ranges as attribute strings: ``["[0, 8)", ...]``."""
    return [f"[{lo}, {hi})" for lo, hi in pairs]


def emit(name: str, build: Callable[[], dict[str, Any]]) -> None:
    """Send event ``name`` with the attributes ``build()`` returns to every sink (``build`` is
    called only when a sink is installed)."""
    sinks = SINKS
    if not sinks:
        return
    attributes = build()
    for sink in sinks:
        try:
            sink(name, attributes)
        except Exception as exc:  # tracing never changes a decision
            if id(sink) not in _warned:
                _warned.add(id(sink))
                warnings.warn(f"tailguard telemetry sink {sink!r} failed ({exc!r}); its events are dropped",
                              RuntimeWarning, stacklevel=2)
