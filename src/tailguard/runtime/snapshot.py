"""A ledger's state as a versioned JSON value, and back (spec 1.2, SPEC.md section 11).

A session outlives the process that recorded it: a server restarts, another worker takes the
next turn, a stateless API sends the history back with every request. :func:`capture` turns a
:class:`~tailguard.runtime.ledger_core.LedgerCore` into a plain JSON value that the framework's
own persistence can keep beside the session (a LangGraph state key, the OpenAI session store, a
summary message's metadata), and :func:`load` rebuilds a core that decides every continuation
exactly as the one that wrote it.

Its size is O(merged intervals + summaries in the context): the truncation and spill unions as
merged ranges, each summary in the context with its effective coverage, the ids already used
(run-length ranges for ordinal ids, so a session that never names its summaries costs a
constant), and, for diagnostics, which log lines truncated what and why the offsets of a
summary that left the context are lost (only where they are not spilled: where a hole can be).
The raw history is there only for a ledger made with ``keep_history=True``.

:func:`state_digest` hashes what decides in profiles strict and partitioned (history end,
truncations, spills, unverified offsets, the summaries and their coverage, the ids used; the
seed profile's staircase is in the snapshot but not in the digest): the ``resume`` line of a log names
it, so the audit can check that the state a process restored is the state the log had reached.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from tailguard._generated.checker import SPEC_VERSION
from tailguard.base.errors import SnapshotError as SnapshotError
from tailguard.runtime.interval_index import IntervalUnion, Runs
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.runtime.lineage import Summary

__all__ = ["FORMAT", "VERSION", "SnapshotError", "capture", "check_state", "header_of", "integrity", "load",
           "state_digest"]

FORMAT = "tailguard.ledger"
VERSION = 1
_ORDINAL = re.compile(r"0|[1-9][0-9]{0,17}")  # ids the ledger would give (run-length encoded)

Row = tuple[int, int, object]


class Earlier:
    """The tag of a summary id used before the snapshot, whose line the snapshot does not keep
    (ids of summaries that left the context, so its size does not grow with the compactions):
    messages name it as ``line L or earlier``, L the snapshot's last line."""

    __slots__ = ("line",)

    def __init__(self, line: int) -> None:
        self.line = line

    def __str__(self) -> str:
        return f"{self.line} or earlier"


# -- reading the structures ------------------------------------------------------------------


def _rows(runs: Runs) -> list[list[Any]]:
    """Every row of ``runs`` as ``[lo, hi]`` or ``[lo, hi, tag]`` (tags as JSON values)."""
    out: list[list[Any]] = []
    for lo, hi, b, o in runs._rows((0, 0)):
        if runs._tags is None:
            out.append([lo, hi])
        else:
            tag = runs._tag(b, o)
            out.append([lo, hi, list(tag) if isinstance(tag, tuple) else tag])
    return out


def _fill(runs: Runs, rows: Iterable[list[Any]], *, pair_tags: bool = False) -> None:
    """Append rows read by :func:`_rows` (ascending, as written) to an empty structure."""
    for row in rows:
        tag: object = None
        if runs._tags is not None:
            tag = tuple(row[2]) if pair_tags else row[2]
        runs._insert((len(runs._los), 0), row[0], row[1], tag)


def _ids_used(used: dict[str, object], in_context: Iterable[str]) -> dict[str, Any]:
    """The ids of summaries no longer in the context: ordinal ones as ranges, the rest listed."""
    here = set(in_context)
    ordinals: list[int] = []
    names: list[str] = []
    for sid in used:
        if sid in here:
            continue
        if _ORDINAL.fullmatch(sid):
            ordinals.append(int(sid))
        else:
            names.append(sid)
    ordinals.sort()
    runs: list[list[int]] = []
    for k in ordinals:
        if runs and runs[-1][1] == k:
            runs[-1][1] = k + 1
        else:
            runs.append([k, k + 1])
    return {"ordinals": runs, "names": sorted(names)}


# -- the state -------------------------------------------------------------------------------


def _decisive(core: LedgerCore) -> dict[str, Any]:
    """What decides: everything a decision of any profile reads (the digest's input)."""
    ctx = core.summaries
    return {
        "n": core.n,
        "recovery_floor_span": core.F,
        "floor_unit": core.floor_unit,
        "truncator_unit": core.truncator_unit,
        "truncated": _rows(core.truncated),
        "spilled": _rows(core.spilled),
        "unverified": _rows(core.unverified),
        "bounds": [core._min_lo, core._max_hi, core.reversed],
        "summaries": [[s.id, _rows(s.coverage)] for s in ctx._ids.values()],
        "count": ctx._count,
        "used": _ids_used(ctx._used, ctx._ids),
    }


def state_digest(core: LedgerCore) -> str:
    """``sha256:<hex>`` of the decisive state (canonical JSON): equal digests decide alike."""
    text = json.dumps(_decisive(core), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def capture(core: LedgerCore) -> dict[str, Any]:
    """The core's state as a JSON value (see the module docstring); :func:`load` reverses it."""
    ctx = core.summaries
    state = _decisive(core)
    state["stair"] = None if core._stair is None else _rows(core._stair)
    state["tags"] = {
        "bounds": [core._min_lo_tag, core._max_hi_tag, core._reversed_tag],
        "summaries": [s.tag for s in ctx._ids.values()],
    }
    state["origins"] = None if core.origins is None else {
        "merged": _rows(core.origins), "exact": _rows(core.origins._exact)}
    lc = core.lost_coverage
    # why a departed summary's offsets are lost, only where a hole can still be: a spilled offset
    # never is one again (spills are permanent), so a session that spills what it loses keeps
    # this empty, whatever the number of compactions
    state["lost_coverage"] = None if lc is None else [
        [g_lo, g_hi, why] for lo, hi, why in zip(lc._los, lc._his, lc._tags, strict=True)
        for g_lo, g_hi in core.spilled.gaps(lo, hi)]
    state["history"] = None if core._hist_tr is None or core._hist_sp is None else {
        "truncations": [list(p) for p in core._hist_tr], "spills": [list(p) for p in core._hist_sp]}
    state["digest"] = state_digest(core)
    return state


def load(state: dict[str, Any], *, seed: bool, line: int = 0) -> LedgerCore:
    """A core with ``state`` (from :func:`capture`, already checked by :func:`check_state`);
    ``line`` is the log line the snapshot was taken at (:class:`Earlier` names it)."""
    history = state["history"]
    core = LedgerCore(state["recovery_floor_span"], state["floor_unit"], state["truncator_unit"],
                      keep_history=history is not None, track_origins=state["origins"] is not None,
                      seed=seed)
    tags = state["tags"]
    core.n = state["n"]
    _fill(core.truncated, state["truncated"])
    _fill(core.spilled, state["spilled"])
    _fill(core.unverified, state["unverified"])
    if core._stair is not None:
        if state["stair"] is None:
            raise SnapshotError("stair", "this snapshot has no seed-profile staircase; restore it "
                                "with a profile other than seed")
        _fill(core._stair, state["stair"])
    core._min_lo, core._max_hi, core.reversed = state["bounds"]
    core._min_lo_tag, core._max_hi_tag, core._reversed_tag = tags["bounds"]
    ctx = core.summaries
    ctx._count = state["count"]
    earlier = Earlier(line)
    for (lo, hi) in state["used"]["ordinals"]:
        for k in range(lo, hi):
            ctx._used[str(k)] = earlier
    for name in state["used"]["names"]:
        ctx._used[name] = earlier
    for (sid, cov), tag in zip(state["summaries"], tags["summaries"], strict=True):
        union = IntervalUnion()
        _fill(union, cov)
        ctx._ids[sid] = Summary(sid, tag, union)
        ctx._used[sid] = tag
    ctx._cov = None
    if core.origins is not None:
        _fill(core.origins, state["origins"]["merged"], pair_tags=True)
        _fill(core.origins._exact, state["origins"]["exact"])
    if core.lost_coverage is not None:
        for lo, hi, why in state["lost_coverage"]:
            core.lost_coverage._los.append(lo)
            core.lost_coverage._his.append(hi)
            core.lost_coverage._tags.append(why)
    if history is not None:
        assert core._hist_tr is not None and core._hist_sp is not None
        core._hist_tr.extend((lo, hi) for lo, hi in history["truncations"])
        core._hist_sp.extend((lo, hi) for lo, hi in history["spills"])
    core._rebuild()
    if state_digest(core) != state["digest"]:
        raise SnapshotError("digest", "the snapshot's state does not hash to its digest "
                            "(it was altered or damaged)")
    return core


# -- checking a value read back ----------------------------------------------------------------


def _fail(field: str, reason: str) -> SnapshotError:
    return SnapshotError(field, reason)


def _int(v: object, field: str) -> int:
    if type(v) is not int:
        raise _fail(field, f"expected an integer, got {v!r}"[:200])
    return v


def _ranges(v: object, field: str, *, tags: int = 0) -> None:
    if type(v) is not list:
        raise _fail(field, "expected a list of ranges")
    prev_hi: int | None = None
    for i, r in enumerate(v):
        if type(r) is not list or len(r) != 2 + tags:
            raise _fail(f"{field}[{i}]", f"expected [lo, hi{', tag' if tags else ''}]")
        lo, hi = _int(r[0], f"{field}[{i}][0]"), _int(r[1], f"{field}[{i}][1]")
        if not lo < hi or (prev_hi is not None and lo <= prev_hi and not tags):
            raise _fail(f"{field}[{i}]", "ranges must be non-empty, sorted and merged")
        prev_hi = hi


def check_state(value: object, where: str = "snapshot") -> dict[str, Any]:
    """``value`` as a state :func:`load` can read, or :class:`SnapshotError` naming the field."""
    if not isinstance(value, dict):
        raise _fail(where, f"expected a JSON object, got {type(value).__name__}")
    for key in ("n", "recovery_floor_span", "count"):
        _int(value.get(key), f"{where}.{key}")
    for key in ("floor_unit", "truncator_unit", "digest"):
        if not isinstance(value.get(key), str):
            raise _fail(f"{where}.{key}", "expected a string")
    _ranges(value.get("truncated"), f"{where}.truncated")
    _ranges(value.get("spilled"), f"{where}.spilled")
    _ranges(value.get("unverified"), f"{where}.unverified")
    summaries = value.get("summaries")
    if type(summaries) is not list:
        raise _fail(f"{where}.summaries", "expected a list")
    for i, s in enumerate(summaries):
        if type(s) is not list or len(s) != 2 or not isinstance(s[0], str):
            raise _fail(f"{where}.summaries[{i}]", "expected [id, coverage]")
        _ranges(s[1], f"{where}.summaries[{i}][1]")
    used = value.get("used")
    if not isinstance(used, dict) or type(used.get("ordinals")) is not list \
            or type(used.get("names")) is not list:
        raise _fail(f"{where}.used", "expected {\"ordinals\": [...], \"names\": [...]}")
    _ranges(used["ordinals"], f"{where}.used.ordinals")
    tags = value.get("tags")
    if not isinstance(tags, dict) or type(tags.get("summaries")) is not list \
            or len(tags["summaries"]) != len(summaries) or type(tags.get("bounds")) is not list:
        raise _fail(f"{where}.tags", "expected the tags of every summary and of the bounds")
    bounds = value.get("bounds")
    if type(bounds) is not list or len(bounds) != 3:
        raise _fail(f"{where}.bounds", "expected [min_lo, max_hi, reversed]")
    stair = value.get("stair")
    if stair is not None and (type(stair) is not list or not all(
            type(r) is list and len(r) == 3 and type(r[0]) is int and type(r[1]) is int for r in stair)):
        raise _fail(f"{where}.stair", "expected the staircase's [lo, hi, tag] rows")
    return value


def integrity(envelope: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the envelope's canonical JSON, without its ``integrity`` key."""
    body = {k: v for k, v in envelope.items() if k != "integrity"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def header_of(value: object) -> dict[str, Any]:
    """The envelope of a ledger snapshot, checked (format, version, spec), or SnapshotError."""
    if not isinstance(value, dict):
        raise _fail("snapshot", f"expected a JSON object, got {type(value).__name__}")
    if value.get("format") != FORMAT:
        raise _fail("format", f"not a tailguard ledger snapshot (format {value.get('format')!r}, "
                    f"expected {FORMAT!r})")
    if value.get("version") != VERSION:
        raise _fail("version", f"snapshot version {value.get('version')!r}; this tailguard reads "
                    f"version {VERSION} (spec {SPEC_VERSION})")
    return value
