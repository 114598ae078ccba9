"""Cost of one compaction decision: the ledger against the seed's transcribed guard.

    /work/venv/bin/python benchmarks/bench_ledger.py [--quick]

At k = 0, 10, 1,000 and 100,000 recorded truncations (disjoint and non-adjacent, so the
merged set keeps k intervals: the ledger's worst case), times one decision of

- ``seed loop``: the seed's ``assert_compaction_safe``, transcribed from the seed document,
  given the session's truncation log (it scans every entry: none intersects the floor);
- ``ledger seed``: ``Ledger.decide(..., profile="seed")``, the same decision, O(log k);
- ``ledger strict``: ``Ledger.decide(...)`` in the strict profile (spills cover the
  truncations, so it allows).

All three allow. Two shapes: the one an orchestrator produces (truncations of the oldest
units, spilled first; the summary starts after them), where the strict ledger's checks are
O(1) reads of the merged sets' ends, and an interior one where every check costs a ``bisect``. Timing
is ``timeit``, best of 7, in one run, and the ratios compare numbers from that same run
(run-to-run noise here is 15 to 20 %). Target: at 100,000
truncations the ledger is at least 1,000 times faster than the seed's loop.
"""

from __future__ import annotations

import argparse
import sys
import timeit

from tailguard.ledger import Ledger
from tailguard.seed_transcribed import assert_compaction_safe

F = 12



def _best(stmt: object, repeat: int) -> float:
    timer = timeit.Timer(stmt)  # type: ignore[arg-type]
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=repeat, number=number)) / number


def measure(k: int, repeat: int, shape: str = "oldest") -> tuple[float, float, float]:
    """``oldest``: truncations of the oldest units, the summary after them (the orchestrator
    shape). ``interior``: every other offset truncated inside the summarizer's input, a spill
    interleaved, so that the strict checks must bisect."""
    n = 2 * k + 100
    if shape == "oldest":
        log = [(2 * i, 2 * i + 1) for i in range(k)]
        spill, a, c = (0, 2 * k), 2 * k, 2 * k
    else:
        log = [(2 * i + 1, 2 * i + 2) for i in range(k)]
        spill, a, c = (0, n - F), 0, 2 * k + 10
    ledger = Ledger(F, unit="turns")
    ledger.append(n)
    if k or shape == "interior":
        ledger.spill(*spill)
    for lo, hi in log:
        ledger.truncate(lo, hi)
    t = n - F
    kw = {"summary_input": (a, n), "summary_covers": (c, t), "tail_start": t}
    assert ledger.decide(**kw).allowed  # type: ignore[arg-type]
    assert ledger.decide(profile="seed", **kw).allowed  # type: ignore[arg-type]
    assert_compaction_safe(a, t, F, log, "turns", "turns")
    seed = _best(lambda: assert_compaction_safe(a, t, F, log, "turns", "turns"), repeat)
    led_seed = _best(lambda: ledger.decide(profile="seed", **kw), repeat)  # type: ignore[arg-type]
    led_strict = _best(lambda: ledger.decide(**kw), repeat)  # type: ignore[arg-type]
    return seed, led_seed, led_strict


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="best of 3 instead of 7")
    repeat = 3 if parser.parse_args(argv).quick else 7
    print(f"one compaction decision, best of {repeat} (Python {sys.version.split()[0]})")
    print(f"{'truncations':>12} {'seed loop':>12} {'ledger seed':>12} {'ledger strict':>14}"
          f" {'seed/ledger(seed)':>18} {'seed/ledger(strict)':>20}")
    for shape in ("oldest", "interior"):
        print(f"shape: {shape}")
        for k in (0, 10, 1_000, 100_000):
            seed, led_seed, led_strict = measure(k, repeat, shape)
            print(f"{k:>12,} {seed * 1e6:>10.3f}us {led_seed * 1e6:>10.3f}us {led_strict * 1e6:>12.3f}us"
                  f" {seed / led_seed:>17.1f}x {seed / led_strict:>19.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
