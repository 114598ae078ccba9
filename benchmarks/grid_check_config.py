"""The 40-policy grid of issue 10: verdict and time of every policy, decided alone.

Run: ``python benchmarks/grid_check_config.py`` (each policy in a fresh subprocess, so
nothing checked before it can matter; prints one line per policy, then the number of
unknowns and the max and median times: the decision's own wall time as check-config
reports it, the whole process's wall time and its CPU time, which on a shared machine
says more than wall time). ``--write DIR`` writes the 40 policies as TOML
files (what ``tailguard check-config DIR/*.toml`` reads), ``--in-process`` decides them
one after the other in this process instead, ``--budget N`` passes check-config's budget.

Parameters (issue 10): model windows of 128k and 200k tokens; turns of up to 2k, 5k, 8k
and 20k tokens; five shapes, each a realistic pipeline written with the window's
fractions the frameworks use:

- ``langchain-trim``: LangChain's SummarizationMiddleware defaults: compact at 85% of the
  window, keep the newest 20 turns, the summarizer shown the newest 4,000 tokens of the
  candidates; floor 20 turns.
- ``langchain-window``: the same without the trim, then a token truncator at the window
  (the model's hard limit); floor 5% of the window in tokens.
- ``seed-repaired``: truncate at the window, then compact at 80% keeping 30% of the window
  in tokens; floor 20% of the window in tokens; ``input = "all"``.
- ``compact-then-truncate``: compact at 75% keeping 25% of the window in tokens, then a
  truncator at the window; floor 10% of the window in tokens.
- ``codex-like``: a truncator at 95% of the window before a compaction at 90% keeping
  the newest 8 turns; floor 8,000 tokens.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WINDOWS = (128_000, 200_000)
TURN_MAX = (2_000, 5_000, 8_000, 20_000)
SHAPES = ("langchain-trim", "langchain-window", "seed-repaired", "compact-then-truncate",
          "codex-like")


def _stage(**knobs: object) -> str:
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in knobs.items())
    return f"\n[[stage]]\n{body}\n"


def policy_text(shape: str, window: int, turn_max: int) -> str:
    """One grid policy as TOML."""
    head = f'name = "{shape}-{window // 1000}k-{turn_max // 1000}k"\n' \
           f"turn_tokens = [1, {turn_max}]\n"
    w = window
    if shape == "langchain-trim":
        return head + 'base_tokens = 1000\nfloor = 20\nfloor_unit = "turns"\n' + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * 85 // 100, keep_unit="turns",
            keep=20, summary_tokens=1500, input_limit=4000)
    if shape == "langchain-window":
        return head + f'base_tokens = 1000\nfloor = {w // 20}\nfloor_unit = "tokens"\n' + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * 85 // 100, keep_unit="turns",
            keep=20, summary_tokens=1500) + _stage(kind="truncate", unit="tokens", limit=w)
    if shape == "seed-repaired":
        return head + f'base_tokens = 4000\nfloor = {w // 5}\nfloor_unit = "tokens"\n' + _stage(
            kind="truncate", unit="tokens", limit=w) + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * 8 // 10, keep_unit="tokens",
            keep=w * 3 // 10, summary_tokens=2000, input="all")
    if shape == "compact-then-truncate":
        return head + f'base_tokens = 2000\nfloor = {w // 10}\nfloor_unit = "tokens"\n' + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * 3 // 4, keep_unit="tokens",
            keep=w // 4, summary_tokens=3000) + _stage(kind="truncate", unit="tokens", limit=w)
    if shape == "codex-like":
        return head + 'base_tokens = 3000\nfloor = 8000\nfloor_unit = "tokens"\n' + _stage(
            kind="truncate", unit="tokens", limit=w * 95 // 100) + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * 9 // 10, keep_unit="turns",
            keep=8, summary_tokens=4000)
    raise ValueError(shape)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the machine may be shared:
    wall time then says more about the neighbours than about the checker)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def grid() -> list[tuple[str, str]]:
    """(file name, TOML) for the 40 policies, in a fixed order."""
    return [(f"{s}-{w // 1000}k-{t // 1000}k.toml", policy_text(s, w, t))
            for s in SHAPES for w in WINDOWS for t in TURN_MAX]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", metavar="DIR")
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--budget", type=int)
    args = parser.parse_args()
    directory = Path(args.write or tempfile.mkdtemp(prefix="tailguard-grid-"))
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for name, text in grid():
        (directory / name).write_text(text, encoding="utf-8")
        files.append(directory / name)
    if args.write:
        print(f"wrote {len(files)} policies to {directory}")
        return
    extra = ["--budget", str(args.budget)] if args.budget else []
    times: list[float] = []
    cpu: list[float] = []
    decided: list[float] = []
    verdicts: dict[str, int] = {}
    print(f"{'policy':40} {'verdict':8} {'decide':>7} {'wall s':>7} {'cpu s':>7}  method / reason")
    for path in files:
        start, cpu_start = time.perf_counter(), _cpu()
        if args.in_process:
            from tailguard.pipeline.policy import load_policy
            from tailguard.pipeline.solver import Budget, decide

            d = decide(load_policy(str(path)), Budget.of(args.budget) if args.budget else None)
            verdict, how = d.verdict, d.detail or d.method
            trace_len = len(d.trace)
            decided.append(d.seconds)
        else:
            proc = subprocess.run(
                [sys.executable, "-m", "tailguard", "check-config", "--format", "json", *extra,
                 str(path)], capture_output=True, text=True, check=False)
            data = json.loads(proc.stdout)
            entry = data["policies"][0] if "policies" in data else data
            verdict = entry["verdict"]
            how = entry.get("unknown_reason") or entry.get("method", "")
            trace_len = max((len(f.get("trace", [])) for f in entry["findings"]), default=0)
            decided.append(float(entry["seconds"]))
        seconds = time.perf_counter() - start
        times.append(seconds)
        cpu.append(_cpu() - cpu_start)
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        tail = f" ({trace_len} appends)" if trace_len else ""
        print(f"{path.stem:40} {verdict:8} {decided[-1]:7.2f} {seconds:7.2f} {cpu[-1]:7.2f}  "
              f"{how}{tail}", flush=True)
    print()
    print(f"verdicts: {json.dumps(verdicts, sort_keys=True)}; unknown: {verdicts.get('unknown', 0)}")
    where = "in process" if args.in_process else "one process each, start-up included"
    for label, values in (("decide (wall, in the checker)", decided), ("process wall", times),
                          ("process cpu", cpu)):
        print(f"{label} seconds: max {max(values):.2f}, median {statistics.median(values):.2f}, "
              f"total {sum(values):.1f} ({where})")


if __name__ == "__main__":
    main()
