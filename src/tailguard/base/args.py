"""The checks of what a caller hands the guard, each defined once.

*An integer argument* is an ``int`` that is not a ``bool`` (:func:`is_int`): ``True`` is an
``int`` to Python, never an offset, a count or a size to tailguard. The ledger's calls, the
framework adapters, the log sink and the policy reader all mean this. The event log's reader
(:mod:`tailguard.runtime.eventlog`) reads JSON, where an integer is exactly an ``int``, and
keeps its own inline ``type(value) is int`` (the same on a decoded value, and its hot path).

*The ledger's call arguments* (:func:`check_int`, :func:`check_pair`, :func:`check_ids`)
return the value checked or raise ``TypeError`` reading ``"field: reason"``.

*Checks two readers share* return a problem, ``(field, reason)``, or ``None``, in the style of
:meth:`~tailguard.runtime.ledger_core.LedgerCore.lineage_problem`; the caller raises its own
error from it (the ledger a ``TypeError`` or ``ValueError`` reading ``"field: reason"``, the
event log's reader an :class:`~tailguard.base.errors.EventLogError` naming the line). ``show``
writes the bad value back as the reader's user wrote it: ``repr`` for a Python argument, a JSON
excerpt for a field of the log.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeGuard

from tailguard.base.vocab import Pair

__all__ = ["Problem", "check_ids", "check_int", "check_pair", "count_problem", "ids_problem", "is_int"]

#: What a shared check found wrong: the field at fault (``saw[2]``) and why.
Problem = tuple[str, str]


def is_int(value: object) -> TypeGuard[int]:
    """An integer argument: an ``int`` that is not a ``bool``.

    >>> is_int(3), is_int(True), is_int(3.0)
    (True, False, False)
    """
    return isinstance(value, int) and not isinstance(value, bool)


def count_problem(count: int, field: str = "count") -> Problem | None:
    """A negative count of appended units (offsets are permanent: it would hand some out again)."""
    return None if count >= 0 else (field, f"expected a count >= 0, got {count}")


def ids_problem(ids: Iterable[object], field: str, show: Callable[[object], str]) -> Problem | None:
    """The first of ``ids`` that is not a summary id (a string), named ``field[i]``."""
    for i, sid in enumerate(ids):
        if not isinstance(sid, str):
            return f"{field}[{i}]", f"expected a summary id (string), got {show(sid)}"
    return None


def check_int(value: object, field: str) -> int:
    """``value``, an integer argument; else ``TypeError`` naming ``field``, the type and the value."""
    if type(value) is int or is_int(value):  # an exact int first: the common argument, one test
        return value
    raise TypeError(f"{field}: expected an integer, got {type(value).__name__} {value!r}")


def check_pair(value: object, field: str) -> Pair:
    """``value`` as ``(lo, hi)``: a tuple or a list of two integer arguments; else ``TypeError``."""
    if type(value) is tuple and len(value) == 2 and type(value[0]) is int \
            and type(value[1]) is int:
        return value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{field}: expected a pair (lo, hi), got {value!r}")
    return (check_int(value[0], f"{field}[0]"), check_int(value[1], f"{field}[1]"))


def check_ids(value: object, field: str) -> tuple[str, ...]:
    """Summary ids as a tuple: a list or tuple (order kept) or a set (sorted) of strings."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
        raise TypeError(f"{field}: expected a list of summary ids (strings), got {value!r}")
    out = tuple(sorted(value)) if isinstance(value, (set, frozenset)) else tuple(value)
    problem = ids_problem(out, field, repr)
    if problem is not None:
        raise TypeError(f"{problem[0]}: {problem[1]}")
    return out
