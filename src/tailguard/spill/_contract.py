"""``check_store``: exercise the ``SpillStore`` contract against any implementation."""

from __future__ import annotations

import os

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


def check_store(store: SpillStore) -> list[str]:
    """Run the contract against a scratch ``store``; returns the violations (empty when it holds).

    It writes a few small spills, so point it at an instance made for the purpose.
    """
    failures: list[str] = []
    blobs = [b"", b"\x00\xff" * 3, os.urandom(70_000)]
    for i, blob in enumerate(blobs):
        handle = store.put(blob, session=f"contract-{i}", range=(i, i + 1), unit="turns")
        if handle != make_handle(blob):
            failures.append(f"put returned {handle!r}, expected {make_handle(blob)!r}")
            continue
        if store.get(handle) != blob:
            failures.append(f"get({handle}) did not return the exact bytes")
    listed = {(r.handle, r.session, r.range, r.unit) for r in store.list()}
    for i, blob in enumerate(blobs):
        if (make_handle(blob), f"contract-{i}", (i, i + 1), "turns") not in listed:
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
    if not store.verify().ok:
        failures.append("verify() reports problems on a store holding only intact spills")
    return failures
