"""Crash safety, shown: SIGKILL a spilling writer at random moments, then audit the store.

The writer (this file run as a script) spills large deterministic transcripts in a loop and
prints each handle only after ``put`` returned. After every kill the parent checks that:

- no record file is torn or altered (``scan_index().rejected`` is empty);
- every listed record re-reads to exactly the transcript its session names (regenerated here);
- every handle the writer reported is listed (a reported write is never lost);
- at the end, ``verify()`` finds every record and object intact.

Short run in the normal suite; the long run (hundreds of kills) is ``-m slow``::

    TAILGUARD_CRASH_KILLS=500 pytest -m slow tests/test_spill_crash.py -s

``TAILGUARD_CRASH_SEED`` replays a run (the seed is printed on failure).
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


POOL_SIZE = 32 << 20
_pool: list[bytes] = []


def transcript(session: str, size: int) -> bytes:
    """The deterministic transcript a session name stands for: a header, then pool bytes.

    Slicing one fixed random pool (at an offset derived from the session) keeps generation far
    cheaper than the put itself, so most of a writer's time, and so most kills, fall inside puts.
    """
    if not _pool:
        _pool.append(random.Random(0x7A11).randbytes(POOL_SIZE))
    header = f'{{"session":"{session}","size":{size}}}\n'.encode()
    body = size - len(header)
    assert 0 <= body <= POOL_SIZE
    offset = int.from_bytes(hashlib.sha256(session.encode()).digest()[:4], "big")
    offset %= POOL_SIZE - body + 1
    return header + _pool[0][offset : offset + body]


def writer(store_path: str, tag: str, min_size: int, max_size: int) -> None:
    """Spill transcripts forever; report each handle only once ``put`` has returned."""
    from tailguard.spill import FileSpillStore

    store = FileSpillStore(store_path, create=True)
    transcript("warm-up", 1000)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    rng = random.Random(tag)
    for i in range(1_000_000):
        size = rng.randint(min_size, max_size)
        session = f"{tag}/{i}"
        handle = store.put(transcript(session, size), session=session, range=(0, size), unit="tokens")
        sys.stdout.write(f"{handle} {session}\n")
        sys.stdout.flush()


@dataclass
class Stats:
    kills: int = 0
    reported: int = 0
    records: int = 0
    bytes_checked: int = 0
    mid_write: int = 0  # kills that left a temp file or an unlisted object: caught mid-put
    checked: set[str] = field(default_factory=set)  # record sessions already re-read


def _audit(store_path: str, reported: dict[str, str], stats: Stats, context: str) -> None:
    from tailguard.spill import FileSpillStore

    if not os.path.isfile(os.path.join(store_path, "tailguard-spill.json")):
        assert not reported, f"{context}: spills reported into a store never created"
        return  # killed while creating the store: the next writer must finish the job
    store = FileSpillStore(store_path)
    scan = store.scan_index()
    assert scan.rejected == (), f"{context}: torn record accepted or present: {scan.rejected}"
    listed = {(r.session, r.handle) for r in scan.records}
    for session, handle in reported.items():
        assert (session, handle) in listed, f"{context}: reported spill {session} {handle} lost"
    for record in scan.records:
        assert record.session is not None and record.range is not None
        if record.session in stats.checked:
            continue
        expected = transcript(record.session, record.range[1])
        assert record.size == len(expected), f"{context}: size of {record.session}"
        assert store.get(record.handle) == expected, f"{context}: {record.session} differs"
        stats.checked.add(record.session)
        stats.bytes_checked += record.size
    stats.records = len(scan.records)


def crash_run(root: Path, kills: int, seed: int, *, min_size: int, max_size: int, per_store: int) -> Stats:
    """Kill ``kills`` writers; a fresh store every ``per_store`` kills bounds disk use."""
    rng = random.Random(seed)
    stats = Stats()
    env = {**os.environ, "PYTHONPATH": SRC}
    store_path = ""
    reported: dict[str, str] = {}
    for k in range(kills):
        if k % per_store == 0:
            if store_path:
                _final_check(store_path, reported, stats, seed)
            store_path = str(root / f"store-{k // per_store}")
            reported = {}
            stats.checked = set()
        tag = f"{seed}-{k}"
        context = f"seed {seed}, kill {k} (replay: TAILGUARD_CRASH_SEED={seed})"
        before = _leftovers(store_path)
        proc = subprocess.Popen(
            [sys.executable, __file__, "writer", store_path, tag, str(min_size), str(max_size)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert proc.stdout is not None
        first = b""
        if rng.random() < 0.1:  # now and then, during start-up and store creation
            time.sleep(rng.uniform(0.0, 0.15))
        else:  # otherwise inside the put loop
            first = proc.stdout.readline()
            time.sleep(rng.uniform(0.0, 0.4))
        os.kill(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL, f"{context}: writer died on its own: {err!r}"
        for line in (first + out).decode().splitlines(keepends=True):
            if line.endswith("\n") and line != "ready\n":
                handle, session = line.split()
                reported[session] = handle
                stats.reported += 1
        stats.kills += 1
        after = _leftovers(store_path)
        if after[0] > before[0] or after[1] > before[1]:
            stats.mid_write += 1
        _audit(store_path, reported, stats, context)
    _final_check(store_path, reported, stats, seed)
    return stats


def _leftovers(store_path: str) -> tuple[int, int]:
    """(temp files, objects no record lists): what a writer killed inside a put leaves."""
    from tailguard.spill import FileSpillStore

    if not os.path.isfile(os.path.join(store_path, "tailguard-spill.json")):
        return (0, 0)
    objects_dir = os.path.join(store_path, "objects")
    objects = {sub + name for sub in os.listdir(objects_dir) for name in os.listdir(os.path.join(objects_dir, sub))}
    listed = {r.handle[7:] for r in FileSpillStore(store_path).list()}
    return len(os.listdir(os.path.join(store_path, "tmp"))), len(objects - listed)


def _final_check(store_path: str, reported: dict[str, str], stats: Stats, seed: int) -> None:
    from tailguard.spill import FileSpillStore

    if not os.path.isdir(store_path):
        return
    report = FileSpillStore(store_path).verify()
    assert report.ok, f"seed {seed}: verify found {report.problems}"
    assert len(FileSpillStore(store_path).list()) >= len(reported)
    shutil.rmtree(store_path)  # checked: free the disk (a long run writes gigabytes)


def _seed() -> int:
    return int(os.environ.get("TAILGUARD_CRASH_SEED", random.randrange(1 << 32)))


def test_transcripts_are_deterministic_and_sized() -> None:
    assert transcript("a/1", 10_000) == transcript("a/1", 10_000)
    assert transcript("a/1", 10_000) != transcript("a/2", 10_000)
    assert len(transcript("x", 12_345)) == 12_345


def test_sigkill_short_run(tmp_path: Path) -> None:
    """About 20 kills in well under 30 s: the CI-sized version."""
    seed = _seed()
    stats = crash_run(tmp_path, 20, seed, min_size=1 << 20, max_size=6 << 20, per_store=20)
    print(f"\ncrash short run: seed={seed} {stats.kills} kills, {stats.mid_write} mid-put, "
          f"{stats.reported} reported, {stats.records} records re-read exactly")  # fmt: skip
    assert stats.kills == 20
    assert stats.reported > 0, "no writer ever finished a put: the test exercised nothing"
    assert stats.mid_write > 0, "no kill landed inside a put: the test exercised nothing"


@pytest.mark.slow
def test_sigkill_long_run(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Hundreds of kills (``TAILGUARD_CRASH_KILLS``, default 300); only with ``-m slow``."""
    if "slow" not in (request.config.option.markexpr or ""):
        pytest.skip("long crash run: select it with -m slow")
    seed = _seed()
    kills = int(os.environ.get("TAILGUARD_CRASH_KILLS", "300"))
    stats = crash_run(tmp_path, kills, seed, min_size=1 << 20, max_size=24 << 20, per_store=40)
    print(f"\ncrash long run: seed={seed} {stats.kills} kills, {stats.mid_write} mid-put, "
          f"{stats.reported} reported, {stats.bytes_checked} bytes re-read")  # fmt: skip
    assert stats.kills == kills
    assert stats.mid_write > kills // 5, "too few kills landed inside a put to show anything"


if __name__ == "__main__" and len(sys.argv) == 6 and sys.argv[1] == "writer":
    writer(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
