"""``--emit-trace``: a failing session as a JSONL event log for ``tailguard audit``.

The log is in turns (offsets are absolute turn indices). A tokens floor is written
as the number of turns that hold the newest F tokens at the last compaction in the
log. The session is extended with maximal turns to the next compaction attempt, so
the audit judges a compaction after the loss (a triggered compaction with nothing to
summarize is written as an empty one at the tail's start); when none would ever run,
the log ends with the compaction the policy would need (marked ``"forced": true``).
"""

from __future__ import annotations

import json
from typing import Any

from tailguard.pipeline.model import Event, State, floor_turns, step
from tailguard.pipeline.policy import Policy

MAX_EXTENSION = 1_000


def session_events(policy: Policy, trace: list[int]) -> list[dict[str, Any]]:
    """Replay ``trace`` (then extend it) and return the audit event log as dicts."""
    state = State()
    events: list[Event] = []
    for size in trace:
        step(policy, state, size, events)
    extended = 0
    start = len(events)
    def attempted() -> bool:
        return any(e.kind in ("compact", "attempt") for e in events[start:])

    while extended < MAX_EXTENSION and not attempted():
        step(policy, state, policy.turn_max, events)
        extended += 1
    out: list[dict[str, Any]] = []
    for event in events:
        if event.kind == "append":
            out.append({"event": "append", "count": 1})
        elif event.kind == "truncate":
            out.append({"event": "truncate", "range": list(event.data)})
        elif event.kind == "attempt":
            (t,) = event.data
            out.append({"event": "compact", "summary_input": [t, t], "summary_covers": [t, t],
                        "tail_start": t})
        else:
            a, b, t = event.data
            out.append({"event": "compact", "summary_input": [a, b], "summary_covers": [a, b],
                        "tail_start": t})
    if not attempted():
        t = state.verbatim[0] if state.verbatim else len(state.sizes)
        out.append({"event": "compact", "summary_input": [0, t], "summary_covers": [0, t],
                    "tail_start": t, "forced": True})
    span = policy.floor if policy.floor_unit == "turns" else len(floor_turns(policy, state.sizes))
    header = {"event": "session", "unit": "turns", "recovery_floor_span": span,
              "floor_unit": "turns", "truncator_unit": "turns"}
    return [header, *_merge_appends(out)]


def _merge_appends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged: list[dict[str, Any]] = []
    for event in events:
        if event["event"] == "append" and merged and merged[-1]["event"] == "append":
            merged[-1]["count"] += 1
        else:
            merged.append(dict(event))
    return merged


def render_jsonl(events: list[dict[str, Any]]) -> str:
    """One JSON object per line."""
    return "".join(json.dumps(e) + "\n" for e in events)
