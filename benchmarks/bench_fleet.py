"""Fleet audit throughput: one process, the local process pool and Dask, on one generated fleet.

    python benchmarks/bench_fleet.py [--sessions N] [--lines N] [--workers N]
                                     [--files-per-task N] [--repeat N] [--quick]

Writes ``--sessions`` synthetic session logs of about ``--lines`` lines each (deterministic,
seed 0: appends, spilled truncations, compactions, timestamps on every line; one session in
seven loses a truncated range, so some refusals are explained), then audits the same fleet
with each engine and prints lines per second and the ratios to one process. Every engine's
records must be identical (the benchmark fails otherwise). Best of ``--repeat`` runs each,
each engine alternating with one process so that load drifts hit both alike (local first,
while the process has one thread, so that its pool forks as the CLI's does); Dask's
``LocalCluster`` start is timed apart and not counted (a cluster outlives one audit), the
local pool's start is counted.

Each line also gives the CPU seconds that the whole process tree spent (psutil: this process,
pool workers once reaped, the forkserver, Dask's workers) and how many cores the run obtained
(CPU / wall). On a shared machine the scheduler may give this benchmark well under 2 cores
(Linux autogroups share the CPU per session, whatever the number of processes): then no engine
can beat one process, and the CPU ratio shows each engine's overhead instead.

Goal on 2 cores: local >= 1.6x one process, dask >= 1.2x. Figures are only as quiet as the
machine: the cores may be shared.

:func:`write_fleet` is also the fixture generator of ``tests/test_fleet*.py``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tailguard.audit.fleet import engines
from tailguard.audit.fleet.record import Record
from tailguard.audit.fleet.sources import expand

HEADER = {"event": "session", "unit": "turns", "floor_unit": "turns", "truncator_unit": "turns"}


def session_lines(rnd: random.Random, lines: int, *, lossy: bool, logged_refusal: bool) -> list[str]:
    """One session: appends, truncations (spilled first unless ``lossy`` drops one), compactions."""
    floor = rnd.randint(2, 8)
    clock = 1_700_000_000.0 + rnd.random() * 1e6
    out = [json.dumps({**HEADER, "recovery_floor_span": floor, "session_id": f"s{rnd.getrandbits(32):08x}"})]
    n = verbatim = 0
    lost = False

    def emit(obj: dict[str, Any]) -> None:
        nonlocal clock
        clock += rnd.random() * 3
        obj["ts"] = round(clock, 3)
        out.append(json.dumps(obj))

    while len(out) < lines:
        r = rnd.random()
        if r < 0.75 or n - verbatim < floor + 6:
            k = rnd.randint(1, 3)
            emit({"event": "append", "count": k})
            n += k
        elif r < 0.97:
            lo, hi = verbatim, verbatim + rnd.randint(1, 3)
            if lossy and not lost and rnd.random() < 0.3:
                lost = True  # truncated, never spilled: the next compaction has a hole
            else:
                emit({"event": "spill", "range": [lo, hi], "handle": f"sha256:{rnd.getrandbits(256):064x}"})
            emit({"event": "truncate", "range": [lo, hi]})
            verbatim = hi
        else:
            t = n - floor
            if logged_refusal and rnd.random() < 0.1:
                emit({"event": "refusal", "summary_input": [verbatim, n], "summary_covers": [verbatim, t + 1],
                      "tail_start": t, "failed": ["seam_contiguous"], "holes": []})
            emit({"event": "compact", "summary_input": [verbatim, n], "summary_covers": [verbatim, t],
                  "tail_start": t})
            verbatim = t
    return out


def write_fleet(root: Path, sessions: int, lines: int, *, seed: int = 0, malformed: bool = True,
                nested: bool = True) -> list[Path]:
    """``sessions`` logs under ``root`` (some in subdirectories when ``nested``); returns them.

    Every seventh session loses a range (refusals), every fifth logs guard refusals, and with
    ``malformed`` the session at index 3 has a broken line at line 5 (not valid JSON).
    """
    rnd = random.Random(seed)
    paths = []
    for i in range(sessions):
        sub = root / f"day{i % 3}" if nested else root
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"session-{i:05d}.jsonl"
        body = session_lines(rnd, lines, lossy=i % 7 == 6, logged_refusal=i % 5 == 4)
        if malformed and i == 3:
            body[4] = body[4][:-5]  # cut inside the object
        path.write_text("\n".join(body) + "\n")
        paths.append(path)
    return paths


def _tree_cpu() -> dict[int, float]:
    """CPU seconds of this process and every descendant, reaped children included (psutil)."""
    import psutil

    me = psutil.Process()
    out: dict[int, float] = {}
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        out[p.pid] = t.user + t.system + t.children_user + t.children_system
    return out


def _time(fn: Any) -> tuple[float, float, list[Record]]:
    """Wall seconds, CPU seconds of the whole process tree, and the records."""
    before = _tree_cpu()
    start = time.perf_counter()
    records = fn()
    wall = time.perf_counter() - start
    after = _tree_cpu()
    return wall, sum(c - before.get(pid, 0.0) for pid, c in after.items()), records


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench_fleet.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=400, help="session logs in the fleet (default 400)")
    p.add_argument("--lines", type=int, default=1000, help="lines per session log (default 1000)")
    p.add_argument("--workers", type=int, default=engines.default_workers(),
                   help="local pool and LocalCluster processes (default: the usable cores)")
    p.add_argument("--files-per-task", type=int, default=None,
                   help="sessions per task (default: the CLI's defaults per engine)")
    p.add_argument("--repeat", type=int, default=3, help="runs of each engine, best kept (default 3)")
    p.add_argument("--quick", action="store_true", help="100 sessions of 500 lines, 1 run each")
    args = p.parse_args(argv)
    if args.quick:
        args.sessions, args.lines, args.repeat = 100, 500, 1

    from distributed import Client, LocalCluster

    tmp = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    try:
        write_fleet(tmp, args.sessions, args.lines, malformed=False)
        items = expand([str(tmp)])
        total_lines = sum(Path(it.locator).read_bytes().count(b"\n") for it in items)
        size = sum(os.path.getsize(it.locator) for it in items)
        w = args.workers
        local_fpt = args.files_per_task or engines.default_files_per_task("local", len(items), w)
        dask_fpt = args.files_per_task or engines.default_files_per_task("dask", len(items), w)  # w threads
        print(f"fleet: {len(items):,} sessions, {total_lines:,} lines, {size / 1e6:.0f} MB; "
              f"{w} workers; files per task: local {local_fpt}, dask {dask_fpt}; cores usable: "
              f"{engines.default_workers()}; load average {os.getloadavg()[0]:.2f}")
        best: dict[str, float] = {}
        cpu: dict[str, float] = {}
        reference: list[Record] | None = None

        def measure(runs: dict[str, Any]) -> bool:
            nonlocal reference
            for _ in range(args.repeat):
                for name, fn in runs.items():
                    t, c, records = _time(fn)
                    if t < best.get(name, float("inf")):
                        best[name], cpu[name] = t, c
                    if reference is None:
                        reference = records
                    elif records != reference:
                        print(f"FAIL: {name} records differ from one process", file=sys.stderr)
                        return False
            return True

        serial = ("one process", lambda: engines.run_serial(items, "strict").records)
        # local first, while this process has one thread: its pool forks as the CLI's does
        # (a Dask client leaves threads behind, after which the pool uses the forkserver)
        local = ("local", lambda: engines.run_local(items, "strict", w, local_fpt).records)
        if not measure(dict([serial, local])):
            return 1
        start = time.perf_counter()
        cluster = LocalCluster(n_workers=w, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.ERROR)
        client = Client(cluster)
        print(f"LocalCluster start: {time.perf_counter() - start:.2f} s (not counted below)")
        address = cluster.scheduler_address
        dask = ("dask", lambda: engines.run_dask(items, "strict", None, dask_fpt, address).records)
        ok = measure(dict([serial, dask]))
        client.close()
        cluster.close()
        if not ok:
            return 1
        assert reference is not None
        refused = sum(1 for r in reference if r["refusals"])
        print(f"sessions with refusals: {refused}; all three engines gave identical records")
        base = total_lines / best["one process"]
        for name, t in best.items():
            rate = total_lines / t
            print(f"{name:<12}: {rate:>11,.0f} lines/s ({t:.2f} s)  {rate / base:.2f}x one process; "
                  f"CPU {cpu[name]:.2f} s in all processes ({cpu[name] / cpu['one process']:.2f}x one "
                  f"process's), {cpu[name] / t:.2f} cores obtained")
        print(f"ratios: local {best['one process'] / best['local']:.2f}x (goal >= 1.6), "
              f"dask {best['one process'] / best['dask']:.2f}x (goal >= 1.2)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
