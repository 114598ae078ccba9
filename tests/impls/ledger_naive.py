"""A ledger audit written naively from SPEC.md sections 9 to 11, speaking the ledger protocol of
``tailguard conform --ledger`` (docs/implementing.md section 7); some modes are wrong on purpose.

Sets of integer offsets and plain lists, nothing shared with :mod:`tailguard.runtime`: each
compaction's equivalent case (SPEC.md 9.3 and 10) goes to the generated checker.

    python tests/impls/ledger_naive.py                 # correct: conforms
    python tests/impls/ledger_naive.py rule-1.0        # spec 1.0: every honest part counts forever
                                                       #   (saw, keeps and evict_summary ignored)
    python tests/impls/ledger_naive.py ignore-keeps    # keeps read as none
    python tests/impls/ledger_naive.py ignore-evict    # evict_summary is a no-op
    python tests/impls/ledger_naive.py saw-empty-is-all  # an explicit "saw": [] read as every summary
    python tests/impls/ledger_naive.py no-unverified   # never reports unverified offsets
    python tests/impls/ledger_naive.py garbage | crash | hang | short | extra   # protocol breakers
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tailguard._generated.checker import check_case

MODE = sys.argv[1] if len(sys.argv) > 1 else "correct"


class InputError(Exception):
    def __init__(self, line: int, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.line, self.field = line, field


def offsets(p: list[int]) -> set[int]:
    return set(range(p[0], p[1]))


def runs(points: set[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for x in sorted(points):
        if out and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
    return out


def judge(profile: str, events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[int]]]:
    head = events[0]
    n = 0
    truncations: list[list[int]] = []
    spills: list[list[int]] = []
    context: list[str] = []  # ids in the context, oldest first
    effective: dict[str, set[int]] = {}
    used: set[str] = set()
    honest_parts: set[int] = set()  # spec 1.0: every honest part, forever
    ordinal = 0
    unverified: set[int] = set()
    verdicts: list[dict[str, Any]] = []
    for line, ev in enumerate(events[1:], 2):
        kind = ev["event"]
        if kind == "append":
            count = ev.get("count", 1)
            if count < 0:
                raise InputError(line, "count", f"expected a count >= 0, got {count}")
            n += count
        elif kind == "truncate":
            truncations.append(ev["range"])
        elif kind == "spill":
            spills.append(ev["range"])
        elif kind == "adopt":
            if line != 2:
                raise InputError(line, "event", "adopt must come right after the header")
            hi = ev["range"][1]
            sid = ev.get("summary") or "adopted"
            n += hi
            unverified |= set(range(hi))
            effective[sid] = set(range(hi))
            honest_parts |= effective[sid]
            context.append(sid)
            used.add(sid)
        elif kind == "evict_summary":
            sid = ev["summary"]
            if MODE == "rule-1.0":
                continue
            if sid not in context:
                raise InputError(line, "summary", f"no summary {sid!r} is in the context")
            if MODE != "ignore-evict":
                context.remove(sid)
        elif kind == "compact":
            saw = ev.get("saw")
            keeps = ev.get("keeps") or []
            if MODE == "ignore-keeps":
                keeps = []
            if MODE == "saw-empty-is-all" and saw == []:
                saw = None
            sid = ev.get("summary") or str(ordinal)
            if MODE != "rule-1.0":
                for name, ids in (("saw", saw or []), ("keeps", keeps)):
                    for i, s in enumerate(ids):
                        if s not in context:
                            raise InputError(line, f"{name}[{i}]", f"no summary {s!r} is in the context")
                if sid in used:
                    raise InputError(line, "summary", f"summary id {sid!r} was already used")
            seen = list(context) if saw is None else list(saw)
            prior: set[int] = set()
            for s in [*seen, *keeps]:
                prior |= effective.get(s, set())
            if MODE == "rule-1.0":
                prior = set(honest_parts)
            case = {
                "history_end": n, "tail_start": ev["tail_start"],
                "summary_input": ev["summary_input"], "summary_covers": ev["summary_covers"],
                "recovery_floor_span": head["recovery_floor_span"], "floor_unit": head["floor_unit"],
                "truncator_unit": head["truncator_unit"], "prior_truncations": truncations,
                "prior_coverage": runs(prior), "spills": spills,
            }
            verdicts.append({"line": line, **check_case(case, profile).to_json()})
            truncated: set[int] = set()
            for p in truncations:
                truncated |= offsets(p)
            honest = (offsets(ev["summary_covers"]) & offsets(ev["summary_input"])) - truncated
            honest_parts |= honest
            cov = set(honest)
            for s in seen:
                cov |= effective.get(s, set())
            effective[sid] = cov
            used.add(sid)
            ordinal += 1
            context = [s for s in context if s in keeps] + [sid]
    return verdicts, ([] if MODE == "no-unverified" else runs(unverified))


def serve() -> None:
    stdin, out = sys.stdin, sys.stdout
    first = True
    while True:
        head = stdin.readline()
        if not head:
            return
        if not head.strip():
            continue
        req = json.loads(head)
        lines = [stdin.readline() for _ in range(req["lines"])]
        if MODE == "crash":
            sys.stderr.write("boom: cannot read this log\n")
            sys.exit(3)
        if MODE == "hang":
            time.sleep(3600)
        if MODE == "garbage":
            out.write("ok, judged\n")
            out.flush()
            continue
        events = [json.loads(ln) for ln in lines if ln.strip()]
        try:
            verdicts, unverified = judge(req["profile"], events)
        except InputError as exc:
            out.write(json.dumps({"error": str(exc), "line": exc.line}) + "\n")
            out.flush()
            continue
        if MODE == "short" and verdicts and not first:
            verdicts = verdicts[:-1]
        if MODE == "extra":
            verdicts.append({"line": 999, "decision": "allow", "failed": [], "holes": []})
        first = False
        for v in verdicts:
            out.write(json.dumps(v) + "\n")
        out.write(json.dumps({"end": True, "unverified": unverified}) + "\n")
        out.flush()


if __name__ == "__main__":
    serve()
