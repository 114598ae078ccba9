"""Verdict times for the bundled example policies, and the explorer-vs-z3 crossover.

Run: ``python benchmarks/bench_check_config.py`` (prints two tables; best of 3 runs).
The crossover grows one small safe policy's window by ``d`` tokens and times the
exhaustive explorer against the z3 engine on each.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from tailguard.pipeline.explorer import explore
from tailguard.pipeline.policy import Compact, Policy, Truncate, load_policy
from tailguard.pipeline.solver import decide

ROOT = Path(__file__).resolve().parents[1]


def best(func: Callable[[], str], runs: int = 3) -> tuple[float, str]:
    """Best wall time of ``runs`` calls and the last result."""
    times, result = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def scaled(d: int) -> Policy:
    """A safe truncate-then-compact policy whose window grows by ``d`` tokens (P4's
    conditions hold: (10 + d) - 1 + 3 <= 13 + d, 1 + 5 < 10 + d, 2 <= 5 - 3 + 1)."""
    return Policy(f"grown-{d}", 1, 3, 2, "tokens",
                  (Truncate("tokens", 13 + d), Compact("tokens", 10 + d, "tokens", 5, 1)))


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    print(f"{'example':40} {'verdict':8} {'seconds':>8}")
    for path in sorted((ROOT / "examples" / "policies").glob("*.toml")):
        policy = load_policy(str(path))
        seconds, verdict = best(lambda p=policy: decide(p).verdict)
        print(f"{path.stem:40} {verdict:8} {seconds:8.3f}")
    print()
    print(f"{'window+d':>8} {'explorer s':>11} {'states':>8} {'z3 s':>8} {'verdicts':>16}")
    for k in (0, 2, 4, 6, 8, 10):
        policy = scaled(k)
        states = [0]

        def run_explorer(p: Policy = policy, out: list[int] = states) -> str:
            result = explore(p, max_states=400_000)
            out[0] = result.states
            return result.verdict

        t_explore, v_explore = best(run_explorer, runs=1)
        t_z3, v_z3 = best(lambda p=policy: decide(p).verdict)
        print(f"{k:8} {t_explore:11.3f} {states[0]:8} {t_z3:8.3f} {v_explore + '/' + v_z3:>16}")


if __name__ == "__main__":
    main()
