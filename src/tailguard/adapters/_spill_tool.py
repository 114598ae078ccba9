"""The spill payload adapters write, and reading it back by handle.

A spill is one JSON document per deleted run of offsets: which framework wrote it, the unit,
the range ``[lo, hi)`` and, per item, its offsets, its key and the framework's own lossless
serialization of it (LangChain's ``messages_to_dict``, an OpenAI Agents SDK input item as
stored). The bytes are canonical (sorted keys, UTF-8), so a spill re-reads byte-exact and the
same items give the same handle. Standard library only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tailguard.base.vocab import Pair
from tailguard.spill import SpillStore

if TYPE_CHECKING:
    from tailguard.adapters._offsets import OffsetTracker

__all__ = ["FORMAT", "INDEX_FORMAT", "decode_index", "decode_spill", "encode_index", "encode_run", "encode_spill",
           "read_index", "read_spill"]

Item = TypeVar("Item")

FORMAT = "tailguard-adapter-spill"
INDEX_FORMAT = "tailguard-adapter-spill-index"
VERSION = 1


def encode_run(framework: str, unit: str, run: Pair, tracker: OffsetTracker, held: Mapping[str, Item],
               to_json: Callable[[Item], Any]) -> bytes:
    """The spill of every held item (by key) whose offsets lie inside ``run``, oldest first;
    ``to_json`` is the framework's lossless serialization of one item."""
    items: list[tuple[Pair, str, Any]] = []
    for key, item in held.items():
        lo, hi = tracker.interval(key)
        if run[0] <= lo and hi <= run[1] and lo < hi:
            items.append(((lo, hi), key, to_json(item)))
    items.sort(key=lambda x: x[0])
    return encode_spill(framework, unit, run, items)


def encode_spill(framework: str, unit: str, run: Pair, items: Sequence[tuple[Pair, str, Any]]) -> bytes:
    """Canonical bytes of one spill: ``items`` are ``(offsets, key, json_value)``, oldest first."""
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "framework": framework,
        "unit": unit,
        "range": [run[0], run[1]],
        "items": [{"offsets": [o[0], o[1]], "key": k, "item": v} for o, k, v in items],
    }
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_spill(data: bytes) -> dict[str, Any]:
    """Parse and check a spill written by :func:`encode_spill`; ``ValueError`` says what is wrong."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a tailguard adapter spill: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError("not a tailguard adapter spill (no 'format': 'tailguard-adapter-spill')")
    if doc.get("version") != VERSION:
        raise ValueError(f"unsupported spill version {doc.get('version')!r} (this reader knows {VERSION})")
    items = doc.get("items")
    if not isinstance(items, list) or not all(isinstance(x, dict) and "item" in x for x in items):
        raise ValueError("spill 'items' must be a list of objects with an 'item'")
    return doc


def read_spill(store: SpillStore, handle: str) -> dict[str, Any]:
    """Re-read a spill by handle (the store checks the bytes against the handle)."""
    return decode_spill(store.get(handle))


def encode_index(framework: str, unit: str, session: str | None,
                 spills: Sequence[tuple[Pair, str]]) -> bytes:
    """Canonical bytes of a spill index: every spill of a session so far, ``(range, handle)``
    oldest first. A summary names one index handle (constant size) instead of every spill."""
    doc = {
        "format": INDEX_FORMAT,
        "version": VERSION,
        "framework": framework,
        "unit": unit,
        "session": session,
        "spills": [{"range": [r[0], r[1]], "handle": h} for r, h in spills],
    }
    return json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_index(data: bytes) -> list[tuple[Pair, str]]:
    """The spills an index written by :func:`encode_index` lists; ``ValueError`` says what is wrong."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a tailguard spill index: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != INDEX_FORMAT:
        raise ValueError("not a tailguard spill index (no 'format': 'tailguard-adapter-spill-index')")
    if doc.get("version") != VERSION:
        raise ValueError(f"unsupported spill index version {doc.get('version')!r} (this reader knows {VERSION})")
    out: list[tuple[Pair, str]] = []
    for x in doc.get("spills", []):
        r, h = x.get("range") if isinstance(x, dict) else None, x.get("handle") if isinstance(x, dict) else None
        if not (isinstance(r, list) and len(r) == 2 and all(type(v) is int for v in r) and isinstance(h, str)):
            raise ValueError(f"spill index: bad entry {x!r}")
        out.append(((r[0], r[1]), h))
    return out


def read_index(store: SpillStore, handle: str) -> list[tuple[Pair, str]]:
    """Re-read a spill index by handle."""
    return decode_index(store.get(handle))
