"""``check_store``: exercise the ``SpillStore`` contract against any implementation."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from functools import partial

from tailguard.spill._interface import (
    ForeignHandleError,
    MalformedHandleError,
    RecordNotFoundError,
    SpillError,
    SpillStore,
    make_handle,
)

_MALFORMED = (
    "",
    "sha256",
    "sha256:",
    "sha256:../../etc/passwd",
    "sha256:" + "A" * 64,
    "sha256:" + "0" * 63,
    "sha256:" + "0" * 65,
    "../" + "0" * 64,
    " sha256:" + "0" * 64,
)
_FOREIGN = ("md5:d41d8cd98f00b204e9800998ecf8427e", "s3:bucket/key")


_RAISED = object()


def _call(failures: list[str], what: str, fn: Callable[[], object]) -> object:
    """``fn()``, or ``_RAISED`` with a failure naming ``what`` when it raises (the contract forbids it)."""
    try:
        return fn()
    except Exception as exc:
        failures.append(f"{what} raised {type(exc).__name__}: {exc}")
        return _RAISED


def check_store(store: SpillStore) -> list[str]:
    """Run the contract against a scratch ``store``; returns the violations (empty when it holds).

    Reports, never raises: a method that raises where the contract says it returns, or
    returns something of the wrong type (``None`` from a stub), is a violation named in the
    list. It writes a few small spills, so point it at an instance made for the purpose.
    """
    failures: list[str] = []
    missing = [m for m in ("put", "get", "verify", "list") if not callable(getattr(store, m, None))]
    if missing:
        return [f"the store has no method {m}()" for m in missing]
    blobs = [b"", b"\x00\xff" * 3, os.urandom(70_000)]
    stored: list[int] = []
    for i, blob in enumerate(blobs):
        what = f"put(<{len(blob)} bytes>)"
        handle = _call(failures, what,
                       partial(store.put, blob, session=f"contract-{i}", range=(i, i + 1), unit="turns"))
        if handle is _RAISED:
            continue
        if handle != make_handle(blob):
            failures.append(f"{what} returned {handle!r}, expected {make_handle(blob)!r}")
            continue
        stored.append(i)
        got = _call(failures, f"get({handle})", partial(store.get, make_handle(blob)))
        if got is not _RAISED and got != blob:
            failures.append(f"get({handle}) did not return the exact bytes (got {type(got).__name__})")
    records = _call(failures, "list()", store.list)
    if records is not _RAISED:
        if isinstance(records, (str, bytes)) or not isinstance(records, Iterable):
            failures.append(f"list() returned {type(records).__name__}, expected a list of SpillRecord")
        else:
            listed = {(getattr(r, "handle", None), getattr(r, "session", None), getattr(r, "range", None),
                       getattr(r, "unit", None)) for r in records}
            for i in stored:
                if (make_handle(blobs[i]), f"contract-{i}", (i, i + 1), "turns") not in listed:
                    failures.append(f"list() lacks the record of contract-{i}")
    absent = make_handle(b"tailguard contract: never stored " + os.urandom(16))
    cases: list[tuple[str, type[SpillError]]] = [(absent, RecordNotFoundError)]
    cases += [(h, MalformedHandleError) for h in _MALFORMED]
    cases += [(h, ForeignHandleError) for h in _FOREIGN]
    for handle, expected in cases:
        try:
            store.get(handle)
        except expected:
            continue
        except Exception as exc:
            failures.append(f"get({handle!r}) raised {type(exc).__name__}, not {expected.__name__}")
        else:
            failures.append(f"get({handle!r}) returned data, expected {expected.__name__}")
    report = _call(failures, "verify()", store.verify)
    if report is not _RAISED and getattr(report, "ok", None) is not True:
        if getattr(report, "ok", None) is None:
            failures.append(f"verify() returned {type(report).__name__}, expected a VerifyReport")
        else:
            failures.append("verify() reports problems on a store holding only intact spills")
    return failures
