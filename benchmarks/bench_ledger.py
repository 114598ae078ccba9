"""The ledger's costs: decisions against the seed's guard, the lock, durable logs, truncation order.

    python benchmarks/bench_ledger.py [--quick] [--truncations N] [--only SECTION ...]

Sections (all by default; ``--only`` picks some):

``decide``: one compaction decision at k = 0, 10, 1,000 and 100,000 recorded truncations
(disjoint and non-adjacent, so the merged set keeps k intervals: the ledger's worst case), of

- ``seed loop``: the seed's ``assert_compaction_safe``, transcribed from the seed document,
  given the session's truncation log (it scans every entry: none intersects the floor);
- ``ledger seed``: ``Ledger.decide(..., profile="seed")``, the same decision, O(log k);
- ``ledger strict``: ``Ledger.decide(...)`` in the strict profile (spills cover the
  truncations, so it allows).

All three allow. Two shapes: the one an orchestrator produces (truncations of the oldest
units, spilled first; the summary starts after them), where the strict ledger's checks are
O(1) reads of the merged sets' ends, and an interior one where every check costs a ``bisect``.
Target: at 100,000 truncations the ledger is at least 1,000 times faster than the seed's loop.

``lock``: what the ledger's lock (one ``RLock`` taken by every method) costs a decision and an
append: ``Ledger.decide`` against the same decision without the lock, in the same run.

``durable``: one ``spill`` and one ``commit`` with a log file, ``durable=False`` (written with
``os.write``, no fsync) against ``durable=True`` (fsynced before the call returns), on the
file system of the temporary directory (``--dir`` to pick another).

``order``: N truncations (``--truncations``, default 400,000; 100,000 with ``--quick``) of
disjoint, non-adjacent units recorded through ``Ledger.truncate`` in sorted order and shuffled
(seeded): the truncation index costs O(log k) per insertion whatever the order. Target:
shuffled within 2x of sorted (issue 17; the flat index took 59.6 s shuffled, 0.93 s sorted).

``telemetry``: an append, a spill and a commit with tracing off (no sink: the OpenTelemetry
extra not enabled), against the same with a no-op sink installed (the attributes built).

Timing is ``timeit``, best of 7 (3 with ``--quick``), in one run; ratios compare numbers from
that same run (run-to-run noise here is 15 to 20 %).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import timeit

from tailguard.oracles.seed_transcribed import assert_compaction_safe
from tailguard.runtime.ledger import Ledger

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


def decide_section(repeat: int) -> None:
    print(f"one compaction decision, best of {repeat} (Python {sys.version.split()[0]})")
    print(f"{'truncations':>12} {'seed loop':>12} {'ledger seed':>12} {'ledger strict':>14}"
          f" {'seed/ledger(seed)':>18} {'seed/ledger(strict)':>20}")
    for shape in ("oldest", "interior"):
        print(f"shape: {shape}")
        for k in (0, 10, 1_000, 100_000):
            seed, led_seed, led_strict = measure(k, repeat, shape)
            print(f"{k:>12,} {seed * 1e6:>10.3f}us {led_seed * 1e6:>10.3f}us {led_strict * 1e6:>12.3f}us"
                  f" {seed / led_seed:>17.1f}x {seed / led_strict:>19.1f}x")


def lock_section(repeat: int) -> None:
    import threading

    ledger = Ledger(F, unit="turns")
    ledger.append(1000)
    ledger.spill(0, 500)
    ledger.truncate(100, 200)
    i, c, t = (500, 1000), (500, 988), 988
    lock = threading.RLock()

    def bare() -> object:
        return ledger._decide(i, c, t, None, (), None)

    def locked() -> object:
        return ledger.decide(summary_input=i, summary_covers=c, tail_start=t)

    def with_lock() -> None:
        with lock:
            pass

    # alternate the two so that the load of a shared machine hits both alike; keep each best
    best_locked = best_bare = float("inf")
    for _ in range(repeat):
        best_bare = min(best_bare, _best(bare, 1))
        best_locked = min(best_locked, _best(locked, 1))
    raw = _best(with_lock, repeat)
    print(f"lock (one RLock taken by every Ledger method), best of {repeat}, alternated")
    print(f"  decide: {best_locked * 1e6:.3f}us through Ledger.decide, {best_bare * 1e6:.3f}us without "
          f"the lock: +{(best_locked - best_bare) * 1e9:.0f} ns ({best_locked / best_bare:.2f}x)")
    print(f"  'with RLock(): pass' alone: {raw * 1e9:.0f} ns")


def durable_section(repeat: int, directory: str | None) -> None:
    print(f"durable log: one spill / one commit with a log file, best of {repeat} "
          f"(file system of {directory or tempfile.gettempdir()})")
    results: dict[bool, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        for durable in (False, True):
            path = os.path.join(tmp, f"log-{durable}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                led = Ledger(F, unit="turns", log=f, durable=durable)
                led.append(100)

                def spill(led: Ledger = led) -> None:
                    led.spill(0, 50, handle="sha256:" + "0" * 64)

                def commit(led: Ledger = led) -> None:
                    led.append(1)
                    n = led.history_end
                    led.commit(summary_input=(0, n), summary_covers=(0, n - F), tail_start=n - F)

                number = 20 if durable else 200
                results[durable] = (
                    min(timeit.repeat(spill, repeat=repeat, number=number)) / number,
                    min(timeit.repeat(commit, repeat=repeat, number=number)) / number,
                )
                led.close()
    (s0, c0), (s1, c1) = results[False], results[True]
    print(f"  spill:  {s0 * 1e6:9.1f}us written, {s1 * 1e6:9.1f}us durable ({s1 / s0:.0f}x, +{(s1 - s0) * 1e3:.2f} ms)")
    print(f"  commit: {c0 * 1e6:9.1f}us written, {c1 * 1e6:9.1f}us durable ({c1 / c0:.0f}x, +{(c1 - c0) * 1e3:.2f} ms)"
          "  (commit includes an append, never fsynced)")


def _record(order: list[int]) -> float:
    led = Ledger(F, unit="turns")
    led.append(2 * len(order) + 2)
    start = time.perf_counter()
    truncate = led.truncate
    for x in order:
        truncate(2 * x, 2 * x + 1)
    elapsed = time.perf_counter() - start
    assert len(led.core.truncated) == len(order)
    return elapsed


def order_section(k: int) -> None:
    ordered = list(range(k))
    shuffled = ordered[:]
    random.Random(17).shuffle(shuffled)
    sorted_s = _record(ordered)
    shuffled_s = _record(shuffled)
    print(f"truncation order: {k:,} disjoint truncations through Ledger.truncate (one run each)")
    print(f"  sorted {sorted_s:.2f} s ({sorted_s / k * 1e6:.2f}us each), shuffled {shuffled_s:.2f} s "
          f"({shuffled_s / k * 1e6:.2f}us each): shuffled/sorted {shuffled_s / sorted_s:.2f}x (target <= 2x)")


def telemetry_section(repeat: int) -> None:
    """A recorded spill and commit (no log) with tracing off, then with a no-op sink installed."""
    from tailguard.runtime import telemetry

    def sink(name: str, attrs: object) -> None:
        pass

    def ops(led: Ledger) -> None:
        led.append(1)
        n = led.history_end
        led.spill(n - 1, n)
        led.commit(summary_input=(0, n), summary_covers=(0, n - F), tail_start=n - F)

    best = {False: float("inf"), True: float("inf")}
    number = 2000
    for _ in range(repeat):  # alternated, as the lock section
        for on in (False, True):
            if on:
                telemetry.install(sink)
            try:
                led = Ledger(F, unit="turns")
                led.append(100)
                best[on] = min(best[on], min(timeit.repeat(lambda led=led: ops(led), repeat=1, number=number)) / number)
            finally:
                telemetry.uninstall(sink)
    off, on = best[False], best[True]
    print(f"telemetry (tailguard.runtime.telemetry), an append + spill + commit, best of {repeat}, alternated")
    print(f"  off: {off * 1e6:.2f}us; with a no-op sink: {on * 1e6:.2f}us ({on / off:.2f}x: building the "
          "attributes of two events). Off costs a truth test per recorded event.")


SECTIONS = ("decide", "lock", "durable", "order", "telemetry")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="bench_ledger.py", description=__doc__.split("\n\n", 1)[0],
        epilog="Sections: " + ", ".join(SECTIONS) + ". See the module docstring for what each measures.")
    parser.add_argument("--quick", action="store_true", help="best of 3 and 100,000 truncations for 'order'")
    parser.add_argument("--truncations", type=int, default=None, metavar="N",
                        help="truncations for the 'order' section (default 400,000)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS), metavar="SECTION",
                        help=f"run only these sections ({', '.join(SECTIONS)})")
    parser.add_argument("--dir", default=None, help="directory for the 'durable' section's log files")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    k = args.truncations if args.truncations is not None else (100_000 if args.quick else 400_000)
    for section in args.only:
        if section == "decide":
            decide_section(repeat)
        elif section == "lock":
            lock_section(repeat)
        elif section == "durable":
            durable_section(repeat, args.dir)
        elif section == "telemetry":
            telemetry_section(repeat)
        else:
            order_section(k)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
