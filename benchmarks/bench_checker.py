"""Cost of one decision by the generated checker, against the seed's guard and two floors.

Everything runs in this one process on the same cases (best of several timeit repeats): the
seed's guard (``assert_compaction_safe``, which reads only the truncations), the generated
checker through its public keyword API for every profile, and two floors over the same 3k
intervals (k truncations, k prior coverages, k spills):

* sort + merge: ``sorted`` of the three lists together, then one merging pass (what any exact
  decision over unsorted lists needs at least);
* linear scan: the same merging pass over each list as given, without the sort (the floor
  on sorted input, which is what a ledger or an adapter writes).

The ratios are what count: the machine is shared, and absolute times move 15 to 20 % from
run to run (NOTES.md), ratios within one run much less. Every column is timed the same way: by
default the CPU time of this thread (``time.thread_time``), so that the time other jobs hold
the core is not counted (on a loaded machine wall-clock ratios moved by 2x between runs), and
the repeats are taken in turn across the sides of a row, so that a burst of load falls on all of
them alike; ``--wall`` times by the wall clock (``time.perf_counter``, timeit's default).

    python benchmarks/bench_checker.py [--quick] [--repeat N] [--wall]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
import timeit
from collections.abc import Callable

from tailguard._generated.checker import PROFILES, check
from tailguard.oracles.seed_transcribed import UnrecoverableCompactionError, assert_compaction_safe

Pairs = list[tuple[int, int]]
SIZES = (0, 1, 10, 100, 1_000, 10_000)


def make_case(k: int, *, shuffled: bool, seed: int = 7) -> dict[str, object]:
    """A session of 10-unit slots: k truncations, k prior coverages and k spills, none in the floor."""
    rng = random.Random(seed)
    n = 10 * (k + 1) + 100
    trs = [(10 * i, 10 * i + rng.randint(1, 5)) for i in range(k)]
    pcs = [(10 * i, 10 * i + 10) for i in range(k)]
    sps = [(10 * i, 10 * i + 10) for i in range(k)]
    if shuffled:
        for lst in (trs, pcs, sps):
            rng.shuffle(lst)
    return {
        "history_end": n, "tail_start": n - 50, "summary_input": [0, n], "summary_covers": [0, n - 50],
        "recovery_floor_span": 50, "floor_unit": "turns", "truncator_unit": "turns",
        "prior_truncations": trs, "prior_coverage": pcs, "spills": sps,
    }


def seed_call(case: dict[str, object]) -> None:
    with contextlib.suppress(UnrecoverableCompactionError):
        assert_compaction_safe(case["summary_input"][0], case["tail_start"],  # type: ignore[index]
                               case["recovery_floor_span"], case["prior_truncations"],  # type: ignore[arg-type]
                               case["floor_unit"], case["truncator_unit"])  # type: ignore[arg-type]


def merge_pass(pairs: Pairs) -> Pairs:
    """The plain merging pass of a sorted list (the loop of any normalization)."""
    out: Pairs = []
    for lo, hi in pairs:
        if out and lo <= out[-1][1]:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def sort_merge_floor(case: dict[str, object]) -> Pairs:
    return merge_pass(sorted(case["prior_truncations"] + case["prior_coverage"] + case["spills"]))  # type: ignore[operator]


def linear_floor(case: dict[str, object]) -> None:
    for field in ("prior_truncations", "prior_coverage", "spills"):
        merge_pass(case[field])  # type: ignore[arg-type]


TIMER: Callable[[], float] = time.thread_time


def best_of(sides: dict[str, Callable[[], object]], number: int, repeat: int) -> dict[str, float]:
    """The best time of each side, the repeats taken in turn across the sides (a round starts
    at another side each time), so that a burst of load falls on every side alike."""
    timers = {name: timeit.Timer(stmt, timer=TIMER) for name, stmt in sides.items()}
    out = dict.fromkeys(sides, float("inf"))
    names = list(sides)
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            out[name] = min(out[name], timers[name].timeit(number=number) / number)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="stop at 1,000 intervals per list")
    ap.add_argument("--repeat", type=int, default=7,
                    help="rounds of timing, in turn across the sides (the best counts)")
    ap.add_argument("--wall", action="store_true", help="time by the wall clock, not this thread's CPU time")
    args = ap.parse_args()
    global TIMER
    TIMER = time.perf_counter if args.wall else time.thread_time
    sizes = [k for k in SIZES if not (args.quick and k > 1_000)]
    profiles = [p for p in ("seed", "strict", "partitioned") if p in PROFILES]
    head = (f"{'k':>6} {'input':>8} {'seed guard':>11} " + " ".join(f"{p:>12}" for p in profiles)
            + f" {'sort+merge':>11} {'scan':>10} {'strict/guard':>13} {'strict/floor':>13}")
    print(head)
    for k in sizes:
        for shuffled in (False, True):
            case = make_case(k, shuffled=shuffled)
            number = max(1, 20_000 // (3 * k + 1))
            sides: dict[str, Callable[[], object]] = {
                "guard": lambda c=case: seed_call(c),  # type: ignore[misc]
                **{p: (lambda c=case, p=p: check(p, **c)) for p in profiles},  # type: ignore[misc, arg-type]
                "sort": lambda c=case: sort_merge_floor(c),  # type: ignore[misc]
                "scan": lambda c=case: linear_floor(c),  # type: ignore[misc]
            }
            t = best_of(sides, number, args.repeat)
            t_seed, t_sort, t_scan = t["guard"], t["sort"], t["scan"]
            times = {p: t[p] for p in profiles}
            floor = t_sort if shuffled else t_scan
            print(f"{k:>6} {'shuffled' if shuffled else 'sorted':>8} {t_seed * 1e6:>9.2f}µs "
                  + " ".join(f"{times[p] * 1e6:>10.2f}µs" for p in profiles)
                  + f" {t_sort * 1e6:>9.2f}µs {t_scan * 1e6:>8.2f}µs {times['strict'] / t_seed:>12.1f}x"
                  f" {times['strict'] / floor:>12.2f}x")


if __name__ == "__main__":
    main()
