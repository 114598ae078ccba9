"""Fleet audit on Dask: a real LocalCluster, a killed worker, and a scheduler and worker
started as separate processes on localhost. Outputs must equal the local engine's byte for byte.

About 30 s on 2 idle cores (cluster starts dominate); nothing here is marked slow.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bench_fleet import write_fleet
from tailguard.audit.fleet import engines, output, record
from tailguard.audit.fleet.record import Record
from tailguard.audit.fleet.sources import Item, expand
from tailguard.cli.main import main

SESSIONS = 36


def audit(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dask-fleet")
    write_fleet(root / "logs", SESSIONS, 150, seed=1)
    return root


@pytest.fixture(scope="module")
def items(fleet: Path) -> list[Item]:
    old = os.getcwd()
    os.chdir(fleet)
    try:
        return expand(["logs"])
    finally:
        os.chdir(old)


@pytest.fixture(scope="module")
def serial(items: list[Item]) -> list[Record]:
    records = engines.run_serial(items, "strict").records
    assert sum(1 for r in records if r["error"]) == 1 and sum(1 for r in records if r["refusals"]) >= 3
    return records


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      silence_logs=logging.ERROR) as c:
        yield c


def _strip_results(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if not ln.startswith("results: ")]


def test_cli_dask_on_its_own_local_cluster_equals_local(
    fleet: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(fleet)
    local = audit("--engine", "local", "--workers", "2", "--out", str(tmp_path / "local.jsonl"), "logs")
    dask = audit("--engine", "dask", "--workers", "2", "--out", str(tmp_path / "dask.jsonl"), "logs")
    assert local[0] == dask[0] == 2 and local[2] == dask[2] == ""
    assert _strip_results(local[1]) == _strip_results(dask[1])
    assert (tmp_path / "local.jsonl").read_bytes() == (tmp_path / "dask.jsonl").read_bytes()
    assert len((tmp_path / "dask.jsonl").read_text().splitlines()) == SESSIONS


@pytest.mark.parametrize("per_task", [1, 7, 32])
def test_dask_equals_one_process_whatever_the_batch_size(
    cluster: Any, items: list[Item], serial: list[Record], per_task: int
) -> None:
    run = engines.run_dask(items, "strict", None, per_task, cluster.scheduler_address)
    assert run.records == serial


def slow_batch(items: Sequence[Item], profile: str) -> list[Record]:
    """audit_batch taking at least 100 ms, so the killed worker has a task in flight."""
    time.sleep(0.1)
    return record.audit_batch(items, profile)


def test_a_dask_worker_killed_mid_job_loses_and_duplicates_nothing(
    cluster: Any, items: list[Item], serial: list[Record], monkeypatch: pytest.MonkeyPatch
) -> None:
    from distributed import Client

    monkeypatch.setattr(engines, "audit_batch", slow_batch)

    with Client(cluster) as client:
        pids = client.run(os.getpid)
    assert len(pids) == 2
    victim = min(pids.values())
    state: dict[str, int] = {}

    def kill_once(done: int, total: int) -> None:
        if not state and done >= 2:
            os.kill(victim, signal.SIGKILL)
            state.update(killed=done, total=total)

    run = engines.run_dask(items, "strict", None, 1, cluster.scheduler_address, kill_once)
    assert state and state["killed"] < state["total"]  # killed mid-job
    assert run.records == serial
    assert len({r["source"] for r in run.records}) == len(run.records) == SESSIONS
    with Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        assert victim not in client.run(os.getpid).values()  # the kill took: a new worker stands in


def test_an_unreachable_scheduler_is_exit_2(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dask

    monkeypatch.chdir(fleet)
    port = _free_port()
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, out, err = audit("--scheduler", f"tcp://127.0.0.1:{port}", "logs")
    assert (code, out) == (2, "")
    assert err.startswith(f"tailguard audit: --scheduler tcp://127.0.0.1:{port}: cannot reach the Dask "
                          "scheduler (") and err.count("\n") == 1


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _started(argv: list[str], cwd: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with open(log, "wb") as sink:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                                start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def test_a_separately_started_scheduler_and_worker(
    fleet: Path, serial: list[Record], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from distributed import Client

    here = tmp_path / "elsewhere"  # the worker runs in another directory: locators are absolute
    here.mkdir()
    scheduler_file = tmp_path / "scheduler.json"
    dask_cli = [sys.executable, "-m", "dask"]
    with _started([*dask_cli, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                   "--scheduler-file", str(scheduler_file)], here, tmp_path / "scheduler.log") as sched:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            assert sched.poll() is None, (tmp_path / "scheduler.log").read_text()
            assert time.monotonic() < deadline, "scheduler did not start in 60 s"
            time.sleep(0.1)
        time.sleep(0.2)  # the file is written whole, but give it a moment
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        with _started([*dask_cli, "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard",
                       "--host", "127.0.0.1", "--local-directory", str(tmp_path / "worker-space")],
                      here, tmp_path / "worker.log") as worker:
            with Client(address, timeout="30s") as client:
                client.wait_for_workers(2, timeout=60)
            assert worker.poll() is None
            monkeypatch.chdir(fleet)
            out = tmp_path / "remote.jsonl"
            code, text, err = audit("--scheduler", address, "--files-per-task", "5", "--out", str(out), "logs")
            assert (code, err) == (2, "")
            assert out.read_text() == output.jsonl(serial)
            local = audit("--workers", "2", "logs")
            assert _strip_results(text) == _strip_results(local[1])


def test_workers_of_another_tailguard_version_are_refused() -> None:
    assert engines.version_problem({"tcp://a:1": "0.1.0", "tcp://b:1": "0.1.0"}, "0.1.0") is None
    assert engines.version_problem({}, "0.1.0") is None  # an adaptive cluster with no worker yet
    assert engines.version_problem({"tcp://a:1": "0.1.0", "tcp://b:1": "0.0.9", "tcp://c:1": "0.2.0"}, "0.1.0") == (
        "Dask worker tcp://b:1 and 1 more runs tailguard 0.0.9, this client 0.1.0; install the same version in "
        "the worker image")
