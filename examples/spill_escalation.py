"""Replay the seed's incident through the ledger, once per escalation policy.

    python examples/spill_escalation.py [--store DIR]

The incident: 40 turns appended, budget enforcement truncates the 8 oldest ([0, 8)), 8 more
turns arrive, then compaction fires with summarizer input [8, 48), coverage [8, 36), tail
[36, 48) and a 12-turn recovery floor. The seed's guard allows it; the strict ledger refuses
(no_hole: [0, 8) was never summarized or spilled).

- spill policy: attempt 1 is refused, the full transcript [0, 48) is spilled to a durable
  store and the spill recorded; attempt 2 is allowed.
- halt policy: the attempt raises UnrecoverableCompactionError naming [0, 8).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile

from tailguard.runtime.escalate import Outcome, Policy, maybe_auto_compact
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError, assert_compaction_safe
from tailguard.spill import FileSpillStore

TURNS = [f'{{"turn": {i}, "role": "user", "text": "turn {i}"}}\n' for i in range(48)]
TURNS[0] = '{"turn": 0, "role": "user", "text": "never modify files under /etc"}\n'


def incident(log: io.StringIO) -> Ledger:
    ledger = Ledger(recovery_floor_span=12, unit="turns", log=log)
    ledger.append(40)
    ledger.truncate(0, 8)
    ledger.append(8)
    return ledger


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--store", default=None, help="spill store directory (default: a temp dir)")
    args = parser.parse_args(argv)
    store_dir = args.store or tempfile.mkdtemp(prefix="tailguard-spill-demo-")

    assert_compaction_safe(8, 36, 12, [(0, 8)], "turns", "turns")
    print("seed guard: allows the incident (no check fires)")

    log = io.StringIO()
    ledger = incident(log)
    store = FileSpillStore(store_dir, create=True)

    def transcript() -> bytes:
        return "".join(TURNS[: ledger.history_end]).encode()

    def attempt(policy: Policy, led: Ledger) -> Outcome:
        """The incident's compaction at 163k tokens of occupancy, trigger 160k."""
        return maybe_auto_compact(
            led,
            occupancy=163_000,
            threshold=160_000,
            summary_input=(8, 48),
            summary_covers=(8, 36),
            tail_start=36,
            summarize=lambda: "summary of turns [8, 36)",  # recorded only after this returns
            policy=policy,
            store=store,
            transcript=transcript,
            session="incident",
        )

    first = attempt("spill", ledger)
    assert first.decision is not None and first.spilled is not None
    print(
        f"spill policy, attempt 1: refused ({', '.join(first.decision.failed)}), "
        f"spilled [{first.spilled[0]}, {first.spilled[1]}) as {first.handle}"
    )
    second = attempt("spill", ledger)
    print(f"spill policy, attempt 2: {'allowed, compaction recorded' if second.compacted else second.action}")
    assert first.handle is not None
    print(f"re-read from {store_dir}: {store.get(first.handle).splitlines()[0].decode()}")
    print("ledger event log:")
    for line in log.getvalue().splitlines():
        print(f"  {line}")

    try:
        attempt("halt", incident(io.StringIO()))
    except UnrecoverableCompactionError as exc:
        print(f"halt policy: UnrecoverableCompactionError: {exc}")
    else:
        print("halt policy: allowed (unexpected)")
        return 1
    return 0 if second.compacted else 1


if __name__ == "__main__":
    sys.exit(main())
