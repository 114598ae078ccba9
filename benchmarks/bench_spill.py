"""Spill throughput against a plain buffered file write of the same bytes, in one run.

    python benchmarks/bench_spill.py [--sizes-mb 1 100] [--dir DIR]

Rows, per size (median of the repetitions, MB = 10**6 bytes):

- ``plain write``          ``open(p, "wb").write(data)``: the baseline (no fsync, page cache only)
- ``plain write + fsync``  the same followed by ``os.fsync``: the floor any durable write pays
- ``spill put``            ``FileSpillStore.put``: hash, temp file, fsync, rename, fsync dir, record
- ``spill get``            ``FileSpillStore.get``: read back and verify the hash
- ``sqlite blob (WAL)``    the alternative we did not choose: one INSERT, WAL, synchronous=FULL

The ratio column is each row's MB/s over the plain write's, measured in the same run, since
run-to-run noise on these machines is 15 to 20 %.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tailguard.spill import FileSpillStore


def fsync_latency(root: Path, reps: int = 20) -> float:
    """Median seconds for write-1-byte-and-fsync: what each durable step costs on this disk."""
    fd, path = tempfile.mkstemp(dir=root)
    try:
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            os.write(fd, b"x")
            os.fsync(fd)
            times.append(time.perf_counter() - start)
        return statistics.median(times)
    finally:
        os.close(fd)
        os.unlink(path)


def bench_size(size: int, reps: int, root: Path) -> list[tuple[str, float]]:
    """Seconds (median) per method for one transcript size."""
    base = os.urandom(size)
    # Distinct bytes per repetition so the store never takes its dedupe path; made up front.
    payloads = [i.to_bytes(8, "big") + base[8:] for i in range(reps)]
    work = Path(tempfile.mkdtemp(prefix="bench-spill-", dir=root))
    results: list[tuple[str, float]] = []
    try:

        def plain(i: int) -> None:
            with open(work / f"plain-{i}", "wb") as fh:
                fh.write(payloads[i])

        def plain_fsync(i: int) -> None:
            with open(work / f"plainsync-{i}", "wb") as fh:
                fh.write(payloads[i])
                fh.flush()
                os.fsync(fh.fileno())

        store = FileSpillStore(work / "store", create=True)
        handles: list[str] = []

        def put(i: int) -> None:
            handles.append(store.put(payloads[i], session="bench", range=(0, size), unit="tokens"))

        def get(i: int) -> None:
            store.get(handles[i])

        db = sqlite3.connect(work / "spill.sqlite3")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("CREATE TABLE spill (handle TEXT PRIMARY KEY, data BLOB)")

        def sqlite_put(i: int) -> None:
            with db:
                db.execute("INSERT INTO spill VALUES (?, ?)", (f"k{i}", payloads[i]))

        actions = [
            ("plain write", plain),
            ("plain write + fsync", plain_fsync),
            ("spill put", put),
            ("spill get", get),
            ("sqlite blob (WAL)", sqlite_put),
        ]
        # Interleaved: repetition i runs every method once, so a change in machine load
        # (other processes, page-cache writeback) hits all rows alike.
        times: dict[str, list[float]] = {name: [] for name, _ in actions}
        for i in range(reps):
            for name, action in actions:
                start = time.perf_counter()
                action(i)
                times[name].append(time.perf_counter() - start)
        results = [(name, statistics.median(times[name])) for name, _ in actions]
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where to write (a disk)")
    args = parser.parse_args(argv)
    print(f"spill throughput, one run, MB = 10**6 bytes, target dir {args.dir}")
    print(f"fsync latency (1-byte write + fsync, median): {fsync_latency(Path(args.dir)) * 1e3:.2f} ms")
    print(f"{'size':>7}  {'method':<20} {'MB/s':>9} {'ratio':>7}")
    for mb in args.sizes_mb:
        size = mb * 1_000_000
        reps = 40 if mb <= 4 else 5
        rows = bench_size(size, reps, Path(args.dir))
        baseline = size / rows[0][1]
        for name, seconds in rows:
            rate = size / seconds
            print(f"{mb:>5}MB  {name:<20} {rate / 1e6:>9.1f} {rate / baseline:>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
