"""Text audit report against the JSON report of the same long log, in one run.

    python benchmarks/bench_audit_report.py [--events N] [--quick] [--keep PATH]

Builds the log of ``bench_audit.py`` (deterministic, seed 0) with 1,500,000 events by default
(about 106 MB): the truncator spills what it evicts except one time in 200, so holes open
and stay open, and a compaction runs every ~40 events and is committed with an override, so
every later compaction is refused with every hole still open. Then runs, through the CLI
function, alternating, best of ``--repeat`` (default 1 at full size, 3 with --quick):

- ``json``   ``tailguard audit --format json`` (the full per-compaction hole lists);
- ``text``   ``tailguard audit`` (the post-mortem a person reads);
- ``summary`` ``tailguard audit --summary`` (counts only);

and prints each one's wall and CPU time, output size and longest line. Target: text within 2x
of json (compared on CPU time, which other load on a shared machine disturbs less).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit import write_log

from tailguard.cli.main import main as cli_main


class _Measure:
    """A write-only sink that counts characters and the longest line, keeping nothing."""

    def __init__(self) -> None:
        self.chars = 0
        self.longest = 0
        self._run = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        parts = text.split("\n")
        if len(parts) == 1:
            self._run += len(text)
        else:
            self.longest = max(self.longest, self._run + len(parts[0]), *(len(p) for p in parts[1:-1]))
            self._run = len(parts[-1])
        self.longest = max(self.longest, self._run)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def run_once(args: list[str]) -> tuple[float, float, int, _Measure]:
    """(wall seconds, CPU seconds of this process, exit code, what was written)."""
    sink = _Measure()
    start, cpu = time.perf_counter(), time.process_time()
    code = cli_main(["audit", *args], stdout=sink, stderr=sys.stderr)  # type: ignore[arg-type]
    return time.perf_counter() - start, time.process_time() - cpu, code, sink


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=1_500_000, help="events in the log (default 1,500,000)")
    parser.add_argument("--quick", action="store_true", help="150,000 events, best of 3")
    parser.add_argument("--repeat", type=int, default=None, help="runs of each mode (best is reported)")
    parser.add_argument("--keep", metavar="PATH", help="write the log to PATH and keep it (reused if it exists)")
    args = parser.parse_args(argv)
    events = 150_000 if args.quick else args.events
    repeat = args.repeat or (3 if args.quick else 1)
    if args.keep:
        path = args.keep
    else:
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
    try:
        if not (args.keep and os.path.exists(path) and os.path.getsize(path)):
            start = time.perf_counter()
            counts = write_log(path, events)
            print(f"log: {sum(counts.values()) + 1:,} lines, {counts}, written in {time.perf_counter() - start:.1f} s")
        print(f"log: {path}, {os.path.getsize(path) / 1e6:.1f} MB")
        modes = {"json": ["--format", "json", path], "text": [path], "summary": ["--summary", path]}
        best: dict[str, tuple[float, float, int, _Measure]] = {}
        for _ in range(repeat):
            for name, mode_args in modes.items():
                got = run_once(mode_args)
                if name not in best or got[1] < best[name][1]:
                    best[name] = got
        for name, (secs, cpu, code, sink) in best.items():
            print(f"{name:8} {secs:8.2f} s wall {cpu:8.2f} s CPU  exit {code}  {sink.chars / 1e6:9.2f} MB out  "
                  f"longest line {sink.longest:,}")
        ratio = best["text"][1] / best["json"][1]
        print(f"text/json CPU time ratio: {ratio:.2f} (target <= 2; CPU time, since the machine is shared)")
    finally:
        if not args.keep:
            os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
