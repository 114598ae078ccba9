"""The offset tracker every adapter uses, against a naive per-offset reading (no framework).

Random contexts (units of 0 to 3 offsets, observed in batches, some dropped by "someone else"),
a random cutoff and a random shown subset: the plan must give the tail start, the summarizer
input (the newest run of shown offsets that ends at the tail, else empty at the tail), the
deleted runs and the unseen runs exactly as a per-offset computation does; the truncations it
recorded must be the dropped offsets.
"""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings, strategies as st

from tailguard.adapters._offsets import AdapterError, Entry, OffsetTracker
from tailguard.runtime.ledger import Ledger


def runs(points: set[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for x in sorted(points):
        if out and out[-1][1] == x:
            out[-1] = (out[-1][0], x + 1)
        else:
            out.append((x, x + 1))
    return out


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=6), min_size=1, max_size=4),
    drop=st.sets(st.integers(0, 23), max_size=5),
    cut=st.integers(0, 30),
    shown_bits=st.lists(st.booleans(), min_size=30, max_size=30),
)
def test_plan_matches_per_offset_reading(batches: list[list[int]], drop: set[int], cut: int,
                                         shown_bits: list[bool]) -> None:
    log = io.StringIO()
    led = Ledger(2, unit="tokens", profile="partitioned", log=log)
    tr = OffsetTracker(led)
    live: list[tuple[str, int]] = []
    at, k = 0, 0
    spans: dict[str, tuple[int, int]] = {}
    dropped: set[int] = set()
    for batch in batches:
        for size in batch:
            key = f"u{k}"
            k += 1
            live.append((key, size))
            spans[key] = (at, at + size)
            at += size
        tr.observe([Entry(key, False, size) for key, size in live])
    gone = [key for i, (key, _) in enumerate(live) if i in drop]
    live = [(key, size) for key, size in live if key not in gone]
    tr.observe([Entry(key, False, size) for key, size in live])
    for key in gone:
        dropped |= set(range(*spans[key]))
    n = led.history_end
    assert n == at
    c = min(cut, len(live))
    deleted = [key for key, _ in live[:c]]
    kept = [key for key, _ in live[c:]]
    shown = [key for i, key in enumerate(deleted) if shown_bits[i]]
    plan = tr.plan(deleted=deleted, shown=shown, kept=kept)
    t = spans[kept[0]][0] if kept else n
    seen = {x for key in shown for x in range(*spans[key])}
    lo = t
    while lo - 1 in seen:
        lo -= 1
    assert plan.tail_start == t
    assert plan.summary_input == plan.summary_covers == (lo, t)
    dels = {x for key in deleted for x in range(*spans[key])}
    assert list(plan.deleted) == runs(dels)
    assert list(plan.unseen) == runs(dels - set(range(lo, t)))
    truncated = [tuple(e["range"]) for e in map(json.loads, log.getvalue().splitlines()) if e["event"] == "truncate"]
    assert truncated == runs(dropped)


def test_bad_contexts_fail_closed() -> None:
    led = Ledger(1, unit="messages", profile="partitioned")
    tr = OffsetTracker(led)
    tr.observe([Entry("a"), Entry("b")])
    for entries, message in [
        ([Entry("a"), Entry("a")], "appears twice"),
        ([Entry("x"), Entry("a")], "precedes it"),
        ([Entry("b"), Entry("a")], "out of offset order"),
        ([Entry("s", summary=True)], "was not created by a compaction"),
        ([Entry("a", size=-1)], "size must be"),
    ]:
        try:
            tr.observe(entries)
        except AdapterError as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"accepted {entries}")
    assert led.history_end == 2  # nothing was recorded by the refused observations
    try:
        tr.plan(deleted=["b"], shown=[], kept=["a"])
    except AdapterError as exc:
        assert "newer than one it keeps" in str(exc)
    else:
        raise AssertionError("accepted a cutoff that is not a partition")


@settings(max_examples=100, deadline=None)
@given(batches=st.lists(st.lists(st.integers(0, 3), max_size=4), min_size=1, max_size=6),
       drop=st.sets(st.integers(0, 23), max_size=4))
def test_extend_is_observe_of_the_context_plus_new_units(batches: list[list[int]], drop: set[int]) -> None:
    """``extend(new)`` records and places exactly what ``observe(context + new)`` does (the
    langgraph importer's append path), and refuses what is not a new unit."""
    logs = io.StringIO(), io.StringIO()
    full, fast = (OffsetTracker(Ledger(0, unit="tokens", log=log, session_id="s")) for log in logs)
    live: list[Entry] = []
    k = 0
    for i, batch in enumerate(batches):
        new = [Entry(f"u{k + j}", False, size) for j, size in enumerate(batch)]
        k += len(batch)
        live += new
        full.observe(live)
        fast.extend(new)
        if i == 1:  # someone else drops units: both observe it, then go on extending
            live = [e for j, e in enumerate(live) if j not in drop]
            full.observe(live)
            fast.observe(live)
    assert logs[0].getvalue() == logs[1].getvalue()
    assert fast.units == full.units and fast._all == full._all
    gone = next((e for j, e in enumerate([Entry(f"u{x}", False, 1) for x in range(k)]) if e.key not in fast.units),
                None)
    for bad in ([Entry("s", True, 0)], [Entry("n", False, 1)] * 2, [Entry("n", False, -1)],
                [next(iter([Entry(key, False, 1) for key in fast.units]), Entry("x", False, -1))],
                [gone] if gone is not None else [Entry("", False, 1)]):
        with pytest.raises(AdapterError):
            fast.extend(bad)
