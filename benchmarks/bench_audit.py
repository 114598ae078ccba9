"""Audit throughput against plain JSON parsing of the same file.

    /work/venv/bin/python benchmarks/bench_audit.py [--events N] [--quick]

Writes a session log with the :class:`~tailguard.runtime.ledger.Ledger` (deterministic, seed 0):
a long session where units are appended, the truncator evicts the oldest verbatim units
(spilling them first, except one time in 200, so a few holes exist), and a compaction runs every ~40 events, with
timestamps on every line as real logs have. Then times, best of 5 in one run, alternating:

- ``parse``: read the file line by line and ``json.loads`` each line, nothing else;
- ``audit``: ``tailguard audit --format json`` (strict) on the same file, through the CLI
  function, report written to a null stream.

Target: audit runs at no less than half the speed of parsing alone (ratio >= 0.5).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import sys
import tempfile
import time

from tailguard.cli.main import main as cli_main
from tailguard.runtime.ledger import Ledger


def write_log(path: str, events: int, seed: int = 0) -> dict[str, int]:
    rnd = random.Random(seed)
    counts = {"append": 0, "truncate": 0, "spill": 0, "compact": 0}
    clock = [1_700_000_000.0]

    with open(path, "w", encoding="utf-8") as f:
        out = io.StringIO()
        led = Ledger(12, unit="turns", log=out, flush=False)
        summarized = 0  # everything below this is covered by a summary
        verbatim_from = 0  # oldest verbatim unit
        total = 0
        while total < events:
            r = rnd.random()
            n = led.history_end
            if r < 0.70:
                led.append(rnd.randint(1, 3))
                counts["append"] += 1
            elif r < 0.88 and n - verbatim_from > 30:
                lo, hi = verbatim_from, verbatim_from + rnd.randint(1, 3)
                if rnd.random() < 0.995:
                    led.spill(lo, hi, handle=f"sha256:{rnd.getrandbits(256):064x}")
                    counts["spill"] += 1
                    total += 1
                led.truncate(lo, hi)
                verbatim_from = hi
                counts["truncate"] += 1
            elif r < 0.975 or n - verbatim_from <= 24:
                led.append(1)
                counts["append"] += 1
            else:
                t = n - 12
                a = verbatim_from
                led.commit(summary_input=(a, n), summary_covers=(a, t), tail_start=t,
                           override="benchmark: record every compaction")
                summarized, verbatim_from = t, t
                counts["compact"] += 1
            total += 1
            if out.tell() > 1 << 20:
                _flush(out, f, clock)
        _flush(out, f, clock)
    del summarized
    return counts


def _flush(out: io.StringIO, f: io.TextIOBase, clock: list[float]) -> None:
    """Copy the ledger's lines to the file with a timestamp on each (extra keys are allowed)."""
    for line in out.getvalue().splitlines():
        clock[0] += 0.25
        f.write(line[:-1] + f', "ts": {clock[0]:.3f}}}\n')
    out.seek(0)
    out.truncate()


def parse_only(path: str) -> int:
    loads = json.loads
    k = 0
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            k += 1
    return k


def audit(path: str) -> int:
    sink = io.StringIO()
    return cli_main(["audit", "--format", "json", path], stdout=sink, stderr=sys.stderr)


def best_interleaved(path: str, repeat: int) -> tuple[float, float]:
    """Best time of each, the two runs alternating so that load drifts hit both alike."""
    t_parse, t_audit = [], []
    for _ in range(repeat):
        for fn, times in ((parse_only, t_parse), (audit, t_audit)):
            start = time.perf_counter()
            fn(path)
            times.append(time.perf_counter() - start)
    return min(t_parse), min(t_audit)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=300_000, help="events in the log (default 300,000)")
    parser.add_argument("--quick", action="store_true", help="50,000 events")
    args = parser.parse_args(argv)
    events = 50_000 if args.quick else args.events
    fd, path = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    try:
        counts = write_log(path, events)
        lines = sum(counts.values()) + 1
        size = os.path.getsize(path)
        code = audit(path)
        print(f"log: {lines:,} lines, {size / 1e6:.1f} MB, {counts}; audit exit {code}")
        t_parse, t_audit = best_interleaved(path, 5)
        print(f"parse only: {lines / t_parse:>12,.0f} events/s ({t_parse:.3f} s)")
        print(f"audit     : {lines / t_audit:>12,.0f} events/s ({t_audit:.3f} s)")
        print(f"audit/parse throughput ratio: {t_parse / t_audit:.2f} (target >= 0.5)")
    finally:
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
