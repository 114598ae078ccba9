"""Fleet audit, local engines: records equal the single-file audit, faults, CLI contract.

The Dask engine is in ``test_fleet_dask.py``. Fixture logs come from the benchmark's generator
(``benchmarks/bench_fleet.py``): a few dozen sessions, some lossy, one malformed.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.bench_fleet import write_fleet
from tailguard.audit.fleet import engines, output, record, sources, summary
from tailguard.audit.fleet.record import Record
from tailguard.audit.fleet.sources import Item, expand
from tailguard.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "examples" / "traces"
SESSIONS = 36


def audit(*args: str, tty: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), _Tty() if tty else io.StringIO()
    code = main(["audit", *args], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    write_fleet(root / "logs", SESSIONS, 120)
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
    return engines.run_serial(items, "strict").records


def test_the_fixture_fleet_has_clean_lossy_logged_and_malformed_sessions(serial: list[Record]) -> None:
    assert len(serial) == SESSIONS
    s = summary.summarize(serial)
    assert s.unreadable == 1 and s.with_refusals >= 3 and s.clean >= 20, s
    assert sum(r["logged_refusals"] for r in serial) > 0
    assert any(h["clause"] == "no_hole" and h["ranges"] for r in serial for h in r["holes"])
    bad = next(r for r in serial if r["error"])
    assert bad["source"] == "logs/day0/session-00003.jsonl"
    assert bad["error"].startswith("logs/day0/session-00003.jsonl:5: line: not valid JSON (")
    assert bad["events"] == 4  # read before the broken line


def _alone(path: str, profile: str = "strict") -> Record:
    """What the single-file audit says about one log, in the fleet record's terms."""
    code, out, err = audit("--profile", profile, "--format", "json", path)
    tcode, text, terr = audit("--profile", profile, path)
    assert (tcode, terr) == (code, err)
    if code == 2:
        assert out == text == "" and err.count("\n") == 1
        return {"source": path, "events": -1, "compactions": -1, "refusals": -1, "logged_refusals": -1,
                "holes": [], "unverified": [], "error": err.rstrip("\n"), "warning": None}
    report = json.loads(out)
    prefix = f"{path}:"
    sentences = [ln[len(prefix):] for ln in text.splitlines() if ": refuse " in ln]
    holes: list[record.Hole] = []
    for c in report["compactions"]:
        if c["decision"] == "refuse":
            for clause in c["failed"]:
                mine = [s for s in sentences if s.startswith(f"{c['line']}: refuse {clause}: ")]
                assert len(mine) == 1
                holes.append({"line": c["line"], "clause": clause,
                              "ranges": c["holes"] if clause == "no_hole" else [],
                              "truncated_at": [],  # compared apart: _truncation_lines_are_real
                              "why": mine[0].split(f"refuse {clause}: ", 1)[1]})
    assert len(sentences) == len(holes)
    return {"source": path, "events": -1, "compactions": len(report["compactions"]),
            "refusals": report["violations"], "logged_refusals": report["refusals"], "holes": holes,
            "unverified": report.get("unverified", []), "error": None, "warning": None}


def _comparable(r: Record) -> Record:
    if r["error"] is not None:
        return {**r, "events": -1, "compactions": -1, "refusals": -1, "logged_refusals": -1, "holes": [],
                "unverified": []}
    return {**r, "events": -1}


@pytest.mark.parametrize("profile", ["strict", "seed", "partitioned"])
def test_every_record_equals_auditing_the_file_alone(
    fleet: Path, items: list[Item], profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fleet)
    records = engines.run_serial(items, profile).records
    assert [r["source"] for r in records] == sorted(it.source for it in items)
    for r in records:
        mine, alone = _comparable(r), _alone(r["source"], profile)
        # the text audit explains a hole once and later says "still open since line L"; the
        # record keeps the full sentence at every compaction: those compare by line, clause, ranges
        for h_rec, h_alone in zip(mine["holes"], alone["holes"], strict=False):
            _truncation_lines_are_real(fleet / r["source"], h_rec)
            h_rec["truncated_at"] = []
            if "still open since line" in h_alone["why"]:
                assert h_rec["why"] and "still open" not in h_rec["why"]
                h_rec["why"] = h_alone["why"] = ""
        assert mine == alone
    if profile == "strict":
        assert sum(r["refusals"] for r in records) > 0


def _truncation_lines_are_real(path: Path, hole: record.Hole) -> None:
    """Each line a hole names is a truncate event of that log, before the compaction, whose
    range meets the hole; and a no_hole hole the text blames on truncations names some."""
    events = [json.loads(ln) for ln in path.read_text().splitlines()]
    for line in hole["truncated_at"]:
        ev = events[line - 1]
        assert ev["event"] == "truncate" and line < hole["line"], (path, hole)
        lo, hi = ev["range"]
        assert any(max(lo, a) < min(hi, b) for a, b in hole["ranges"]), (path, hole)
    if hole["clause"] == "no_hole" and "were truncated at line" in hole["why"]:
        assert hole["truncated_at"], (path, hole)


def test_events_counts_every_event_line(fleet: Path, serial: list[Record]) -> None:
    for r in serial:
        if r["error"] is None:
            lines = (fleet / r["source"]).read_text().splitlines()
            assert r["events"] == len(lines)


def test_example_traces_and_the_record_shape() -> None:
    rec = record.audit_source(Item("seed-incident.jsonl", str(TRACES / "seed-incident.jsonl")), "strict")
    assert rec == {
        "source": "seed-incident.jsonl", "events": 5, "compactions": 1, "refusals": 1, "logged_refusals": 0,
        "holes": [{"line": 5, "clause": "no_hole", "ranges": [[0, 8]], "truncated_at": [3],
                   "why": "offsets [0, 8) were truncated at line 3 and never summarized or spilled"}],
        "unverified": [], "error": None, "warning": None,
    }
    assert list(rec) == ["source", "events", "compactions", "refusals", "logged_refusals", "holes", "unverified",
                         "error", "warning"]


def test_local_pool_equals_one_process_whatever_the_batch_size(items: list[Item], serial: list[Record]) -> None:
    for per_task in (1, 5, 64):
        run = engines.run_local(items, "strict", 2, per_task)
        assert run.records == serial and run.restarts == 0


def _kill_one_worker_once(done: int, total: int, state: dict[str, int]) -> None:
    if state.get("killed") or done < 3:
        return
    children = multiprocessing.active_children()
    assert children, "no pool worker to kill"
    os.kill(children[0].pid or 0, signal.SIGKILL)
    state["killed"] = done
    state["total"] = total


def slow_batch(items: Sequence[Item], profile: str) -> list[Record]:
    """audit_batch taking at least 50 ms: the workers are still busy when the test kills one
    (tiny fixture logs could otherwise all be done before the third result is read)."""
    time.sleep(0.05)
    return record.audit_batch(items, profile)


def test_a_local_worker_killed_mid_job_loses_and_duplicates_nothing(
    items: list[Item], serial: list[Record], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engines, "audit_batch", slow_batch)
    state: dict[str, int] = {}
    run = engines.run_local(items, "strict", 2, 1, lambda d, t: _kill_one_worker_once(d, t, state))
    assert state["killed"] < state["total"]  # the kill happened mid-job
    assert run.restarts >= 1  # and broke the pool
    assert run.records == serial
    assert len({r["source"] for r in run.records}) == len(run.records) == SESSIONS


POISON = "logs/day1/session-00004.jsonl"


def poisoned_batch(items: Sequence[Item], profile: str) -> list[Record]:
    """audit_batch, except that the worker dies whenever it meets POISON (a log that kills it)."""
    if any(it.source == POISON for it in items):
        os._exit(9)
    return record.audit_batch(items, profile)


def test_a_log_that_kills_its_worker_every_time_is_named_and_the_rest_judged(
    items: list[Item], serial: list[Record], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engines, "audit_batch", poisoned_batch)
    run = engines.run_local(items, "strict", 2, 4)
    assert run.restarts == 2 and run.isolated >= 1
    assert [r["source"] for r in run.records] == [r["source"] for r in serial]
    for got, want in zip(run.records, serial, strict=True):
        if got["source"] == POISON:
            assert got["error"] == f"{POISON}:0: file: the worker process auditing this log died twice; not judged"
        else:
            assert got == want


def dying_batch(items: Sequence[Item], profile: str) -> list[Record]:
    os._exit(9)


def test_workers_that_always_die_stop_the_audit_with_exit_2(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fleet)
    monkeypatch.setattr(engines, "audit_batch", dying_batch)
    code, out, err = audit("--workers", "2", "logs")
    assert (code, out) == (2, "")
    assert err == ("tailguard audit: the local pool's worker processes keep dying (3 sessions in a row, "
                   "each twice); stopped\n")


def test_cli_writes_sorted_jsonl_and_a_summary(fleet: Path, serial: list[Record], monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.chdir(fleet)
    code, out, err = audit("--workers", "2", "--out", str(tmp_path), "logs")
    assert (code, err) == (2, "")  # one malformed log: exit 2, every other session still judged
    written = (tmp_path / "results.jsonl").read_text()
    assert written == output.jsonl(serial)
    assert [json.loads(x) for x in written.splitlines()] == serial
    s = summary.summarize(serial)
    first = out.splitlines()[0]
    assert first == (f"tailguard audit: {SESSIONS} sessions (profile strict): {s.clean} clean, "
                     f"{s.with_refusals} with refusals, 1 unreadable; {s.compactions:,} compactions judged, "
                     f"{s.refusals} refused, {s.events:,} events")
    assert "worst offenders" in out and "  logs/day0/session-00003.jsonl:5: line: not valid JSON" in out
    assert out.endswith(f"results: {tmp_path}/results.jsonl\n")
    worst = [ln.split(":")[0].strip() for ln in out.splitlines() if ln.startswith("  logs/") and " refused" in ln]
    ranked = sorted((r for r in serial if r["refusals"] and not r["error"]),
                    key=lambda r: (-r["refusals"], r["source"]))
    assert worst == [r["source"] for r in ranked][: summary.WORST]


def test_exit_codes_0_1_2(fleet: Path, monkeypatch: pytest.MonkeyPatch, serial: list[Record]) -> None:
    monkeypatch.chdir(fleet)
    clean = [r["source"] for r in serial if not r["error"] and not r["refusals"]]
    lossy = [r["source"] for r in serial if not r["error"] and r["refusals"]]
    assert audit(*clean[:4])[0] == 0
    assert audit(*clean[:3], lossy[0])[0] == 1
    assert audit(clean[0], lossy[0], "logs/day0/session-00003.jsonl")[0] == 2
    code, out, err = audit("--format", "json", clean[0], "missing.jsonl")
    assert code == 2 and err == ""
    report = json.loads(out)
    assert report["errors"] == ["missing.jsonl:0: file: cannot read (No such file or directory)"]
    assert (report["sessions"], report["clean"], report["unreadable"]) == (2, 1, 1)


def test_local_engine_without_fsspec_reads_paths_and_globs(
    fleet: Path, serial: list[Record], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(fleet)
    monkeypatch.setitem(sys.modules, "fsspec", None)
    out = tmp_path / "r.jsonl"
    code, _, err = audit("--out", str(out), "logs/**/*.jsonl")
    assert (code, err) == (2, "")
    assert out.read_text() == output.jsonl(serial)
    code, stdout, err = audit("file:///nowhere/*.jsonl")
    assert (code, stdout) == (2, "")
    assert err == ("tailguard audit: a URL (file:///nowhere/*.jsonl) needs the optional package 'fsspec': "
                   "pip install 'tailguard[fleet]' (or pip install -e '.[fleet]' in a checkout)\n")


def test_dask_missing_names_the_extra(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(fleet)
    monkeypatch.setitem(sys.modules, "distributed", None)
    code, out, err = audit("--engine", "dask", "logs")
    assert (code, out) == (2, "")
    assert err == ("tailguard audit: --engine dask needs the optional package 'distributed': "
                   "pip install 'tailguard[fleet]' (or pip install -e '.[fleet]' in a checkout)\n")


def test_urls_globs_directories_and_gzip_through_fsspec(fleet: Path, serial: list[Record], tmp_path: Path) -> None:
    import gzip

    logs = fleet / "logs"
    via_glob = expand([f"file://{logs}/**/*.jsonl"])
    assert [it.source for it in via_glob] == sorted(f"file://{p}" for p in logs.rglob("*.jsonl"))
    assert expand([f"file://{logs}/"]) == via_glob == expand([f"file://{logs}"])
    one = logs / "day0" / "session-00000.jsonl"
    assert expand([f"file://{one}"]) == [Item(f"file://{one}", f"file://{one}")]
    chained = expand([f"simplecache::file://{logs}/day0/*.jsonl"])  # a chain stays on every match
    assert [it.source for it in chained] == [f"simplecache::{it.source}" for it in via_glob if "/day0/" in it.source]
    assert {**record.audit_source(chained[0], "strict"), "source": "x"} == {**serial[0], "source": "x"}
    records = engines.run_local(via_glob, "strict", 2, 3).records
    for got, want in zip(records, serial, strict=True):
        stripped = got["source"].removeprefix(f"file://{fleet}/")
        assert {**got, "source": stripped, "error": _unprefix(got["error"], fleet)} == want
    gz = tmp_path / "a.jsonl.gz"
    gz.write_bytes(gzip.compress(one.read_bytes()))
    for src in (str(gz), f"file://{gz}"):
        rec = record.audit_source(expand([src])[0], "strict")
        assert {**rec, "source": "x"} == {**serial[0], "source": "x"}


def _unprefix(error: str | None, fleet: Path) -> str | None:
    return None if error is None else error.removeprefix(f"file://{fleet}/")


def test_sources_are_sorted_and_deduplicated(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(fleet)
    got = expand(["logs/day2", "logs/*/session-0000[0-5].jsonl", "logs/day0/session-00000.jsonl"])
    assert [it.source for it in got] == sorted({*map(str, Path("logs/day2").glob("*.jsonl")),
                                                *map(str, Path("logs").glob("*/session-0000[0-5].jsonl"))})
    assert all(os.path.isabs(it.locator) for it in got)


def test_fleet_mode_is_chosen_only_when_asked(fleet: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tailguard.cli import audit_fleet
    from tailguard.cli.main import build_parser

    def wanted(*argv: str) -> bool:
        return audit_fleet.wanted(build_parser("audit").parse_args(["audit", *argv]))

    monkeypatch.chdir(fleet)
    one = "logs/day0/session-00000.jsonl"
    assert not wanted(one) and not wanted("-") and not wanted("missing.jsonl")
    assert not wanted("--format", "json", "--profile", "seed", one)
    assert wanted(one, one) and wanted("logs") and wanted("logs/*/*.jsonl") and wanted("s3://b/k.jsonl")
    for option in ("--engine=local", "--workers=1", "--scheduler=tcp://x:1", "--files-per-task=2", "--out=o"):
        assert wanted(option, one)
    odd = tmp_path / "odd[1].jsonl"  # an existing file whose name looks like a glob: one file
    odd.write_text((TRACES / "healthy.jsonl").read_text())
    assert not wanted(str(odd))


def test_single_file_audit_is_unchanged() -> None:
    path = str(TRACES / "seed-incident.jsonl")
    assert audit("--format", "json", path) == (1, '{"compactions": [{"line": 5, "decision": "refuse", '
                                               '"failed": ["no_hole"], "holes": [[0, 8]]}], "violations": 1, '
                                               '"refusals": 0}\n', "")
    code, out, err = audit("missing.jsonl")
    assert (code, out, err) == (2, "", "tailguard audit: cannot read missing.jsonl: No such file or directory\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["nomatch/*.jsonl"], "nomatch/*.jsonl: no file matches"),
    (["-", "a.jsonl"], "'-' (stdin) audits one log; a fleet audit reads files, directories, globs and URLs"),
    (["--engine", "local", "--scheduler", "tcp://127.0.0.1:1", "a"],
     "--scheduler: a Dask scheduler needs --engine dask"),
    (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2", "a"],
     "--workers: a running scheduler has its own workers; give one or the other"),
    (["--workers", "0", "a", "b"], "--workers: expected a positive integer, got 0"),
    (["--files-per-task", "-1", "a"], "--files-per-task: expected a positive integer, got -1"),
    (["--out", "no/such/dir/r.jsonl", "a"], "--out no/such/dir/r.jsonl: directory no/such/dir does not exist"),
    (["--profile", "lax", "a", "b"], "--profile: unknown profile 'lax'; choose one of seed, strict, partitioned"),
])
def test_bad_arguments_exit_2_with_one_line(argv: list[str], message: str, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    assert audit(*argv) == (2, "", f"tailguard audit: {message}\n")


def test_empty_directory_is_a_usage_error(tmp_path: Path) -> None:
    assert audit(str(tmp_path)) == (2, "", f"tailguard audit: {tmp_path}: directory holds no *.jsonl or "
                                          "*.jsonl.gz file\n")


def test_progress_only_on_a_terminal(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(fleet)
    code, out, err = audit("--workers", "2", "logs", tty=True)
    assert code == 2 and f"\rtailguard audit: {SESSIONS} of {SESSIONS} sessions" in err
    assert err.endswith("\r" + " " * 60 + "\r") and "\r" not in out
    assert audit("--workers", "2", "logs")[2] == ""


def test_parquet_output_round_trips(fleet: Path, serial: list[Record], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    monkeypatch.chdir(fleet)
    path = tmp_path / "r.parquet"
    assert audit("--out", str(path), "logs")[0] == 2
    assert pq.read_table(path).to_pylist() == serial
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    code, out, err = audit("--out", str(path), "logs")
    assert (code, out) == (2, "")
    assert err == (f"tailguard audit: --out {path} needs the optional package 'pyarrow': pip install "
                   "'tailguard[parquet]' (or pip install -e '.[parquet]' in a checkout)\n")


def test_summary_json_shape(serial: list[Record]) -> None:
    doc = summary.summarize(serial).to_json("strict", None)
    assert list(doc) == ["sessions", "clean", "with_refusals", "unreadable", "events", "compactions", "refusals",
                         "profile", "worst", "errors", "results"]
    assert doc["sessions"] == doc["clean"] + doc["with_refusals"] + doc["unreadable"]
    assert sources.LOG_SUFFIXES == (".jsonl", ".jsonl.gz")


def test_out_may_be_a_url(fleet: Path, serial: list[Record], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(fleet)
    url = f"file://{tmp_path}/r.jsonl"
    code, out, _ = audit("--out", url, "logs")
    assert code == 2 and out.endswith(f"results: {url}\n")
    assert (tmp_path / "r.jsonl").read_text() == output.jsonl(serial)
