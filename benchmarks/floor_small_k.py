"""How fast can a strict decision be at small k? A lower bound, against the seed's guard.

Issue 14 asks for ``check("strict", ...)`` within 8x of the seed's guard at k <= 10 (k
truncations, k prior coverages and k spills: the cases of ``bench_checker.py``). This script
measures a *lower bound* on that: ``lower_bound`` below is a hand-written strict decision that
does less than any correct checker must (it is not one, and nothing imports it):

* it reads the keywords and type-tests the three scalars and each pair of each list (a tuple of
  two ``int`` inside ``[0, n]``), merging each list in the same pass, as the generated checker's
  fused pass does;
* it skips what a checker must also do: the digit limit, the type tests of ``summary_input``
  and ``summary_covers``, reading a list that is not a tuple list, the ``TRU`` cut of
  ``C & I`` and of the tail in ``covered``, and the explanation of the holes.

So a correct decision can only be slower than ``lower_bound``: when the bound itself is above 8x
of the guard, the goal is below what Python can do for a decision that reads every interval.

    python benchmarks/floor_small_k.py [--repeat N] [--wall]
"""

from __future__ import annotations

import argparse
import time
import timeit
from collections.abc import Callable
from typing import Any

from bench_checker import make_case, seed_call

from tailguard._generated.checker import check

Pairs = list[tuple[int, int]]


def _run(items: Any, low: int, high: int) -> Pairs | None:
    """The union of sorted bounded pairs in one typed pass; None for anything else."""
    out: Pairs = []
    started = False
    rlo = rhi = 0
    for item in items:
        if type(item) is tuple and len(item) == 2:
            lo, hi = item
            if type(lo) is int and type(hi) is int and low <= lo <= hi <= high:
                if lo < hi:
                    if not started:
                        started, rlo, rhi = True, lo, hi
                    elif lo < rlo:
                        return None
                    elif lo <= rhi:
                        if hi > rhi:
                            rhi = hi
                    else:
                        out.append((rlo, rhi))
                        rlo, rhi = lo, hi
                continue
        return None
    if started:
        out.append((rlo, rhi))
    return out


def lower_bound(*, history_end: Any, tail_start: Any, summary_input: Any, summary_covers: Any,
                recovery_floor_span: Any, floor_unit: Any, truncator_unit: Any,
                prior_truncations: Any = (), prior_coverage: Any = (), spills: Any = ()) -> object:
    """Less work than any correct strict decision (see the module docstring); not a checker."""
    n, t, f = history_end, tail_start, recovery_floor_span
    if not (type(n) is int and type(t) is int and type(f) is int):
        raise TypeError("not an integer")
    i0, i1 = summary_input
    c0, c1 = summary_covers
    tru, pc, sp = _run(prior_truncations, 0, n), _run(prior_coverage, 0, n), _run(spills, 0, n)
    if tru is None or pc is None or sp is None or not (
            0 <= t <= n and f >= 0 and 0 <= i0 <= i1 <= n and 0 <= c0 <= c1 <= n):
        return "well_formed"
    failed = []
    if floor_unit != truncator_unit:
        failed.append("units_agree")
    p0 = max(0, n - f)
    if p0 < n and i0 > p0:
        failed.append("floor_in_input")
    if p0 < n and t > p0:
        failed.append("floor_in_tail")
    if tru and t < n and tru[-1][1] > t:
        failed.append("tail_intact")
    if not (t == 0 or c1 >= t):
        failed.append("seam_contiguous")
    if c0 < c1 and (not (i0 <= c0 and c1 <= i1) or any(lo < c1 and hi > c0 for lo, hi in tru)):
        failed.append("summary_honest")
    holes: Pairs = []
    cur = 0
    for lo, hi in sorted(pc + sp + [(max(c0, i0), min(c1, i1)), (t, n)]):
        if lo > cur:
            holes.append((cur, lo))
        if hi > cur:
            cur = hi
    if cur < n:
        holes.append((cur, n))
    return failed, holes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="rounds of timing, in turn across the sides")
    ap.add_argument("--wall", action="store_true", help="time by the wall clock, not this thread's CPU time")
    args = ap.parse_args()
    timer = time.perf_counter if args.wall else time.thread_time
    print(f"{'k':>4} {'seed guard':>11} {'lower bound':>12} {'generated':>10} {'bound/guard':>12} {'strict/guard':>13}")
    for k in (0, 1, 10):
        case = make_case(k, shuffled=False)
        sides: dict[str, Callable[[], object]] = {
            "guard": lambda c=case: seed_call(c),  # type: ignore[misc]
            "bound": lambda c=case: lower_bound(**c),  # type: ignore[misc]
            "strict": lambda c=case: check("strict", **c),  # type: ignore[misc, arg-type]
        }
        best = dict.fromkeys(sides, float("inf"))
        names = list(sides)
        for r in range(args.repeat):
            for name in names[r % 3:] + names[:r % 3]:
                t = timeit.Timer(sides[name], timer=timer).timeit(number=20_000) / 20_000
                best[name] = min(best[name], t)
        g, b, s = best["guard"], best["bound"], best["strict"]
        print(f"{k:>4} {g * 1e6:>9.2f}µs {b * 1e6:>10.2f}µs {s * 1e6:>8.2f}µs {b / g:>11.1f}x {s / g:>12.1f}x")


if __name__ == "__main__":
    main()
