"""Run the per-session audit over a fleet: in this process, a local process pool, or Dask.

Every engine calls :func:`tailguard.audit.fleet.record.audit_batch` on batches of whole sessions
and returns the records sorted by source, each source exactly once, whatever the completion
order and whatever workers died on the way:

- ``serial``: this process, one session after the other (``--workers 1``; the benchmark's
  baseline);
- ``local``: a :class:`concurrent.futures.ProcessPoolExecutor`. A worker that dies (killed,
  out of memory) breaks the pool: the results already in are kept, and the unfinished batches
  are submitted again to a fresh pool. After two broken pools the rest runs one session at a
  time in a one-worker pool, so a log that kills its worker every time is named (its record
  says so) and every other session is still judged;
- ``dask``: a ``distributed`` client, on a :class:`distributed.LocalCluster` of ``workers``
  single-threaded processes or on a running scheduler. The scheduler re-runs the tasks of a
  worker that died (up to ``distributed.scheduler.allowed-failures`` times, then
  ``KilledWorker``: those sessions' records say so); results are keyed by source, so a task
  that ran twice cannot duplicate one.

Progress is reported through a callback ``(sessions done, total)`` from the calling thread.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import logging
import multiprocessing
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from tailguard.audit.fleet.record import Record, audit_batch, audit_source, error_record
from tailguard.audit.fleet.sources import Item
from tailguard.base.errors import EngineError as EngineError

__all__ = ["ENGINES", "EngineError", "Run", "batches", "default_files_per_task", "default_workers", "run_dask",
           "run_local", "run_serial", "version_problem", "worker_version"]

ENGINES = ("local", "dask")
Progress = Callable[[int, int], None]
MAX_FILES_PER_TASK = 32
_BROKEN_POOLS_BEFORE_ISOLATION = 2
_DEATHS_IN_A_ROW = 3


def _no_progress(done: int, total: int) -> None:
    pass


@dataclass
class Run:
    """What an engine returns: the records (sorted by source) and how faults were met."""

    records: list[Record]
    restarts: int = 0  # local: pools rebuilt after a worker died
    isolated: int = 0  # local: sessions run one at a time after repeated deaths


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def default_files_per_task(engine: str, sessions: int, workers: int) -> int:
    """Sessions per task when ``--files-per-task`` is not given: enough tasks that every worker
    gets several (load balance; little to redo when a worker dies), at most 32 a task (Dask's
    per-task overhead: one task per file was 5x slower than batches of 32 to 64). Local: about
    eight batches per worker; Dask (``workers``: the cluster's threads): about four."""
    per_worker = 4 if engine == "dask" else 8
    return max(1, min(MAX_FILES_PER_TASK, sessions // (per_worker * max(1, workers))))


def batches(items: Sequence[Item], size: int) -> list[list[Item]]:
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def _sorted(results: dict[str, Record]) -> list[Record]:
    return [results[s] for s in sorted(results)]


def run_serial(items: Sequence[Item], profile: str, progress: Progress = _no_progress) -> Run:
    results: dict[str, Record] = {}
    for item in items:
        results[item.source] = audit_source(item, profile)
        progress(len(results), len(items))
    return Run(_sorted(results))


def _context() -> multiprocessing.context.BaseContext:
    # fork is the cheapest start and safe in a single-threaded process (the CLI). With other
    # threads running (a Dask client, an embedding application) forking is not safe: the
    # forkserver (started once per process, the audit preloaded) forks clean workers instead.
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["tailguard.audit.fleet.record"])
        return ctx
    return multiprocessing.get_context("spawn")


def run_local(
    items: Sequence[Item], profile: str, workers: int, files_per_task: int,
    progress: Progress = _no_progress,
) -> Run:
    total = len(items)
    results: dict[str, Record] = {}
    pending = dict(enumerate(batches(items, files_per_task)))
    run = Run([])
    ctx = _context()

    def take(recs: list[Record]) -> None:
        for r in recs:
            results.setdefault(r["source"], r)
        progress(len(results), total)

    while pending and run.restarts < _BROKEN_POOLS_BEFORE_ISOLATION:
        with cf.ProcessPoolExecutor(max_workers=min(workers, len(pending)), mp_context=ctx) as pool:
            futures: dict[cf.Future[list[Record]], int] = {}
            try:  # submit raises too once a worker has died
                for i, b in pending.items():
                    futures[pool.submit(audit_batch, b, profile)] = i
                for fut in cf.as_completed(futures):
                    take(fut.result())
                    del pending[futures[fut]]
            except BrokenProcessPool:
                run.restarts += 1
                for fut, i in futures.items():  # keep what finished before the pool broke
                    if i in pending and fut.done() and not fut.cancelled() and fut.exception() is None:
                        take(fut.result())
                        del pending[i]
    if pending:
        _isolate([it for _, b in sorted(pending.items()) for it in b], profile, ctx, take, run)
    run.records = _sorted(results)
    return run


def _isolate(items: list[Item], profile: str, ctx: multiprocessing.context.BaseContext,
             take: Callable[[list[Record]], None], run: Run) -> None:
    """One session at a time in a one-worker pool: a death is that session's (after two tries)."""
    deaths: dict[str, int] = {}
    condemned = 0  # sessions in a row whose worker died twice: the workers, not the logs
    pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx)
    try:
        queue = list(items)
        while queue:
            item = queue[0]
            try:
                take(pool.submit(audit_batch, [item], profile).result())
                queue.pop(0)
                run.isolated += 1
                condemned = 0
            except BrokenProcessPool:
                pool.shutdown(wait=True)
                pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx)
                deaths[item.source] = deaths.get(item.source, 0) + 1
                if deaths[item.source] >= 2:
                    condemned += 1
                    if condemned >= _DEATHS_IN_A_ROW:
                        raise EngineError(f"the local pool's worker processes keep dying ({condemned} "
                                          "sessions in a row, each twice); stopped") from None
                    queue.pop(0)
                    take([error_record(item.source, f"{item.source}:0: file: the worker process auditing "
                                                    "this log died twice; not judged")])
    finally:
        pool.shutdown(wait=True)


def worker_version() -> str:
    """The tailguard version where this runs (called on every Dask worker before the audit)."""
    from tailguard import __version__

    return __version__


def version_problem(versions: dict[str, str], mine: str) -> str | None:
    """Why the workers must not audit for this client: none, or a tailguard of another version
    (its verdicts could differ from the local engine's). No workers yet (an adaptive cluster
    scales up once tasks arrive) is no problem; workers that join later are not checked."""
    other = sorted({(v, a) for a, v in versions.items() if v != mine})
    if other:
        v, a = other[0]
        more = f" and {len(other) - 1} more" if len(other) > 1 else ""
        return (f"Dask worker {a}{more} runs tailguard {v}, this client {mine}; install the same "
                "version in the worker image")
    return None


def run_dask(
    items: Sequence[Item], profile: str, workers: int | None, files_per_task: int | None,
    scheduler: str | None, progress: Progress = _no_progress,
) -> Run:
    """Audit on Dask; raises ModuleNotFoundError without distributed, OSError when the
    scheduler cannot be reached."""
    # distributed is partly typed (untyped constructors): used through Any, checked by the tests
    dd: Any = importlib.import_module("distributed")
    Client, LocalCluster, as_completed = dd.Client, dd.LocalCluster, dd.as_completed
    total = len(items)
    results: dict[str, Record] = {}
    token = uuid.uuid4().hex[:12]
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                               processes=True, dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
    else:
        cluster = None
        client = Client(scheduler)  # connect timeout: dask config distributed.comm.timeouts.connect
    try:
        try:
            versions = client.run(worker_version)
        except Exception as exc:  # the workers cannot even unpickle a tailguard function
            raise EngineError(f"the Dask workers cannot run the audit ({type(exc).__name__}: {exc}); "
                              "the worker image needs tailguard installed (docs/fleet.md)") from None
        problem = version_problem(versions, worker_version())
        if problem is not None:
            raise EngineError(problem)
        if files_per_task is None:
            threads = sum(client.nthreads().values()) or 1
            files_per_task = default_files_per_task("dask", total, threads)
        work = batches(items, files_per_task)
        futures = [client.submit(audit_batch, b, profile, key=f"tailguard-audit-{token}-{i}", pure=False)
                   for i, b in enumerate(work)]
        batch_of = {f.key: b for f, b in zip(futures, work, strict=True)}
        for fut in as_completed(futures):
            try:
                recs: list[Record] = fut.result()
            except Exception as exc:  # KilledWorker after repeated deaths, or a lost scheduler
                recs = [error_record(it.source, f"{it.source}:0: file: its Dask task failed "
                                                f"({type(exc).__name__}: {exc}); not judged")
                        for it in batch_of[fut.key]]
            for r in recs:
                results.setdefault(r["source"], r)
            progress(len(results), total)
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return Run(_sorted(results))
