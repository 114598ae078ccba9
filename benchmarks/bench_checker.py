"""Cost of one decision by the generated checker, as ratios against the seed's guard.

Both run in this process on the same cases, best of several timeit repeats. The seed's
loop is O(k) in the number of truncations and reads nothing else; the strict checker also
merges prior coverage and spills (O(k log k)). The "per interval" column shows the growth:
it must stay flat (up to the log factor) as k grows.

    python benchmarks/bench_checker.py [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import timeit

from tailguard._generated.checker import check
from tailguard.seed_transcribed import UnrecoverableCompactionError, assert_compaction_safe


def make_case(k: int, seed: int = 7) -> dict[str, object]:
    """A session of 10k-unit slots: k truncations, k prior coverages and k spills, none in the floor."""
    rng = random.Random(seed)
    n = 10 * (k + 1) + 100
    trs = [(10 * i, 10 * i + rng.randint(1, 5)) for i in range(k)]
    rng.shuffle(trs)
    return {
        "history_end": n, "tail_start": n - 50, "summary_input": [0, n], "summary_covers": [0, n - 50],
        "recovery_floor_span": 50, "floor_unit": "turns", "truncator_unit": "turns",
        "prior_truncations": trs, "prior_coverage": [(10 * i, 10 * i + 10) for i in range(k)],
        "spills": [(10 * i, 10 * i + 10) for i in range(k)],
    }


def seed_call(case: dict[str, object]) -> None:
    with contextlib.suppress(UnrecoverableCompactionError):
        assert_compaction_safe(case["summary_input"][0], case["tail_start"],  # type: ignore[index]
                               case["recovery_floor_span"], case["prior_truncations"],  # type: ignore[arg-type]
                               case["floor_unit"], case["truncator_unit"])  # type: ignore[arg-type]


def best(stmt: object, number: int) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=5)) / number  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="stop at 10,000 intervals")
    args = ap.parse_args()
    sizes = [0, 10, 1_000, 10_000] + ([] if args.quick else [100_000])
    print(f"{'k':>8} {'seed guard':>12} {'seed profile':>13} {'strict':>12} {'strict/seed':>12} "
          f"{'strict ns/interval':>19}")
    for k in sizes:
        case = make_case(k)
        number = max(1, 20_000 // (k + 1))
        t_seed = best(lambda c=case: seed_call(c), number)
        t_sp = best(lambda c=case: check("seed", **c), number)  # type: ignore[arg-type]
        t_st = best(lambda c=case: check("strict", **c), number)  # type: ignore[arg-type]
        per = (t_st / (3 * k) * 1e9) if k else float("nan")
        print(f"{k:>8} {t_seed * 1e6:>10.2f}µs {t_sp * 1e6:>11.2f}µs {t_st * 1e6:>10.2f}µs "
              f"{t_st / t_seed:>11.1f}x {per:>18.1f}")


if __name__ == "__main__":
    main()
