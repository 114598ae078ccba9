"""``Ledger.from_log`` against plain JSON parsing of the same log (issue 25, point 7).

    python benchmarks/bench_from_log.py [--events N] [--compactions K] [--small] [--repeat R]

Writes a session log (deterministic, seed 0) shaped like what the framework adapters record:
messages appended one to three at a time; a budget stage that evicts the oldest verbatim
messages, spilling them first except one time in 200; a compaction every ``N / K`` lines that
cuts ``F = 12`` messages before the end, summarizes the verbatim run before the cut and names
its summary (``s0``, ``s1``, ...), whose summarizer saw the previous summary whole three times in
four (``saw``), saw none the fourth (a trimmer dropped it: its coverage leaves the context),
and which keeps an older summary beside the new one one time in ten (``keeps``); a budget stage
that evicts such a kept summary now and then (``evict_summary``); timestamps on every line, as
real logs have. Defaults: 1,000,000 events and 10,000 compactions; ``--small``: 100,000 and
1,000.

Then times, as CPU time of this process, best of ``R`` (default 3), the two taking turns:

- ``parse``: read the file line by line and ``json.loads`` each line, nothing else;
- ``from_log``: ``Ledger.from_log(path, append=False)`` on the same file.

Goal: ``from_log`` within 3x of parsing alone, whatever the number of compactions (it is linear
in the log's length: ``tests/test_ledger_from_log.py`` checks the work of a departure
structurally). Prints the ratio; the figures are in ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from typing import TextIO

from tailguard.runtime.ledger import Ledger

F = 12  # recovery floor span, in messages: also the tail a compaction keeps


class _Writer:
    """Lines of the normative log (SPEC.md section 9) with a timestamp each."""

    def __init__(self, f: TextIO) -> None:
        self.f, self.clock, self.lines = f, 1_700_000_000.0, 0

    def __call__(self, obj: dict[str, object]) -> None:
        self.clock += 0.25
        obj["ts"] = round(self.clock, 3)
        self.f.write(json.dumps(obj) + "\n")
        self.lines += 1


def write_log(path: str, events: int, compactions: int, seed: int = 0) -> dict[str, int]:
    """Write the log; returns how many lines of each kind (the header not counted)."""
    rnd = random.Random(seed)
    every = max(1, events // max(1, compactions))
    counts = {"append": 0, "truncate": 0, "spill": 0, "compact": 0, "evict_summary": 0}
    with open(path, "w", encoding="utf-8") as f:
        w = _Writer(f)
        w({"event": "session", "unit": "messages", "recovery_floor_span": F, "floor_unit": "messages",
           "truncator_unit": "messages"})
        n = 0  # history end
        verbatim = 0  # oldest message still in the context verbatim
        context: list[str] = []  # summaries in the context, oldest first
        last = 0  # the line of the last compaction
        k = 0
        while w.lines <= events:
            if w.lines - last >= every and n - verbatim > 2 * F:
                t = n - F
                sid = f"s{k}"
                k += 1
                prev = context[-1] if context else None
                saw = [prev] if prev is not None and rnd.random() < 0.75 else []
                keeps: list[str] = []
                if context and context[0] not in saw and rnd.random() < 0.1:
                    keeps = [context[0]]  # the oldest summary stays beside the new one
                w({"event": "compact", "summary_input": [verbatim, t], "summary_covers": [verbatim, t],
                   "tail_start": t, "summary": sid, "saw": saw, "keeps": keeps,
                   "override": "benchmark: record every compaction"})
                context = [s for s in context if s in keeps] + [sid]
                verbatim = t
                last = w.lines
                counts["compact"] += 1
            elif len(context) > 1 and rnd.random() < 0.01:
                w({"event": "evict_summary", "summary": context.pop(0)})
                counts["evict_summary"] += 1
            elif rnd.random() < 0.70 or n - verbatim <= 2 * F + 6:
                c = rnd.randint(1, 3)
                w({"event": "append", "count": c})
                n += c
                counts["append"] += 1
            else:  # the budget stage evicts the oldest verbatim messages
                lo, hi = verbatim, verbatim + rnd.randint(1, 3)
                if rnd.random() < 0.995:
                    w({"event": "spill", "range": [lo, hi], "handle": f"sha256:{rnd.getrandbits(256):064x}"})
                    counts["spill"] += 1
                w({"event": "truncate", "range": [lo, hi]})
                verbatim = hi
                counts["truncate"] += 1
    return counts


def parse_only(path: str) -> int:
    loads = json.loads
    k = 0
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            k += 1
    return k


def rebuild(path: str) -> int:
    return Ledger.from_log(path, append=False).history_end


def best_in_turn(path: str, repeat: int) -> tuple[float, float]:
    """Best CPU time of each (the machine is shared), the two runs taking turns."""
    t_parse: list[float] = []
    t_rebuild: list[float] = []
    for i in range(repeat):
        pair = ((parse_only, t_parse), (rebuild, t_rebuild))
        for fn, times in pair if i % 2 == 0 else pair[::-1]:
            start = time.process_time()
            fn(path)
            times.append(time.process_time() - start)
    return min(t_parse), min(t_rebuild)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the log (default 1,000,000)")
    parser.add_argument("--compactions", type=int, default=10_000, help="compactions (default 10,000)")
    parser.add_argument("--small", action="store_true", help="100,000 events and 1,000 compactions")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (default 3)")
    args = parser.parse_args(argv)
    events, compactions = (100_000, 1_000) if args.small else (args.events, args.compactions)
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    try:
        counts = write_log(path, events, compactions)
        lines = sum(counts.values()) + 1
        led = Ledger.from_log(path, append=False)
        print(f"log: {lines:,} lines, {os.path.getsize(path) / 1e6:.1f} MB, {counts}; "
              f"rebuilt: n = {led.history_end:,}, summaries in the context {len(led.summaries)}")
        t_parse, t_rebuild = best_in_turn(path, args.repeat)
        print(f"parse only: {lines / t_parse:>12,.0f} events/s ({t_parse:.3f} s CPU)")
        print(f"from_log  : {lines / t_rebuild:>12,.0f} events/s ({t_rebuild:.3f} s CPU)")
        print(f"from_log/parse time ratio: {t_rebuild / t_parse:.2f} (goal <= 3)")
    finally:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
