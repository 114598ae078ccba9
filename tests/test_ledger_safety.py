"""Issue 17, the ledger's half: no lost or invented evidence, threads, inputs that fail closed.

Each test is a finding of the reliability review turned into a regression test:

- a failed log write (ENOSPC, EFBIG) leaves the ledger unchanged, raises, and no part of the
  failed line can reach the log afterwards (not from ``close()``, a retry or the stream);
- ``durable=True`` fsyncs every evidence line (header, compact, override, spill, refusal,
  evict_summary) and no append/truncate line;
- one ledger shared by threads logs its events in the order its state changed (the audit of
  its log agrees with every decision it made);
- a writer killed with SIGKILL loses no line it reported written;
- a negative append count is an input error in the ledger, ``Ledger.from_log``, ``replay`` and
  ``tailguard audit`` alike (``append -8`` then ``append 8`` cannot re-use offsets);
- floats, ``inf``, bools, iterators and non-pairs are rejected naming the argument.
"""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tailguard.audit.replay import Verdict, replay
from tailguard.cli.main import main
from tailguard.runtime.eventlog import (
    Append,
    Compact,
    Event,
    EventLogError,
    Session,
    Spill,
    Truncate,
    iter_events,
)
from tailguard.runtime.ledger import Ledger, LogFailedError
from tailguard.runtime.seed_api import UnrecoverableCompactionError

ROOT = Path(__file__).resolve().parent.parent
SHAPE: dict[str, Any] = {"summary_input": (8, 48), "summary_covers": (8, 36), "tail_start": 36}


def _state(led: Ledger) -> tuple[object, ...]:
    core = led.core
    # the core decides here: after a failed write the ledger itself decides nothing (spec 1.2)
    return (led.history_end, led.summaries, led.refusals, list(core.truncated), list(core.spilled),
            list(core.recovered), list(core.lost),
            core.decide(led.profile, SHAPE["tail_start"], SHAPE["summary_input"], SHAPE["summary_covers"], None, ()))


def _session(led: Ledger) -> None:
    led.append(40)
    led.truncate(0, 8)
    led.append(8)


# -- a failed write --------------------------------------------------------------------


class FullDisk(io.TextIOBase):
    """A buffered text file whose disk fills up: ``flush`` raises ENOSPC and keeps the buffer,
    as ``io.BufferedWriter`` does; ``close`` flushes. Counts every call the ledger makes."""

    def __init__(self) -> None:
        self.disk = ""
        self.buffer_ = ""
        self.full = False
        self.calls = 0

    def write(self, s: str) -> int:
        self.calls += 1
        self.buffer_ += s
        return len(s)

    def flush(self) -> None:
        self.calls += 1
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.disk += self.buffer_
        self.buffer_ = ""


def test_a_failed_flush_leaves_the_ledger_unchanged_raises_and_nothing_more_is_written() -> None:
    log = FullDisk()
    led = Ledger(recovery_floor_span=12, unit="turns", log=log)  # type: ignore[arg-type]
    _session(led)
    led.spill(0, 8, handle="sha256:...")
    before, disk = _state(led), log.disk
    log.full = True
    with pytest.raises(OSError, match="No space left"):
        led.commit(**SHAPE)
    assert _state(led) == before  # no phantom compaction: coverage, summaries, n unchanged
    calls = log.calls
    for call in (lambda: led.commit(**SHAPE), lambda: led.append(1), lambda: led.truncate(0, 1),
                 lambda: led.spill(0, 1), lambda: led.commit(**SHAPE, override="x"), led.flush):
        with pytest.raises(LogFailedError, match=r"an earlier write failed .*No space left"):
            call()
    led.close()
    assert _state(led) == before
    assert log.calls == calls  # the ledger never wrote, flushed or closed the stream again
    assert log.disk == disk and all(json.loads(x) for x in disk.splitlines())


@pytest.mark.parametrize("accepted", [0, 1, 20, -1])  # bytes of the line the OS takes first
def test_a_failed_write_to_a_file_is_cut_back_and_cannot_reach_it_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, accepted: int
) -> None:
    """A real file: the line is written with os.write, never buffered; a short write followed by
    ENOSPC is cut back, so the log holds whole recorded lines only, whatever happens next."""
    path = tmp_path / "log.jsonl"
    f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below, after the failure
    led = Ledger(recovery_floor_span=12, unit="turns", log=f)
    _session(led)
    before, content = _state(led), path.read_bytes()
    real_write = os.write

    def filling(fd: int, data: Any) -> int:
        n = len(data) - 1 if accepted < 0 else accepted  # -1: all but the newline
        if n:
            monkeypatch.setattr(os, "write", full)
            return real_write(fd, bytes(data)[:n])
        return full(fd, data)

    def full(fd: int, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", filling)
    with pytest.raises(OSError, match="No space left"):
        led.spill(0, 8, handle="h")
    monkeypatch.undo()
    assert _state(led) == before and path.read_bytes() == content
    with pytest.raises(LogFailedError):
        led.spill(0, 8, handle="h")
    with pytest.raises(LogFailedError):  # and it decides nothing more until restored
        led.decide(**SHAPE)
    led.close()
    f.write("")
    f.close()  # the stream's own close: nothing of the ledger's was in its buffer
    assert path.read_bytes() == content
    rebuilt = Ledger.from_log(path, append=False)
    assert _state(rebuilt) == before


def test_efbig_from_a_real_file_size_limit_leaves_a_log_that_rebuilds_to_the_ledger(tmp_path: Path) -> None:
    """The kernel's own EFBIG (RLIMIT_FSIZE) in a child: short writes, then the error."""
    pytest.importorskip("resource")
    path = tmp_path / "log.jsonl"
    child = textwrap.dedent(f"""
        import json, resource, signal, sys
        from tailguard.runtime.ledger import Ledger, LogFailedError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))
        led = Ledger(recovery_floor_span=2, unit="turns", log=open({str(path)!r}, "w"))
        err = None
        for i in range(1000):
            try:
                led.append(3)
                led.truncate(led.history_end - 3, led.history_end - 2)
                led.spill(led.history_end - 3, led.history_end - 2, handle="h" * 30)
            except OSError as exc:
                err = exc.errno
                break
        try:
            led.append(1)
        except LogFailedError:
            pass
        else:
            sys.exit("a failed ledger recorded more")
        c = led.core
        print(json.dumps([err, c.n, list(c.truncated), list(c.spilled)]))
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    err, n, truncated, spilled = json.loads(out)
    assert err == errno.EFBIG
    assert path.stat().st_size <= 1500 and path.read_bytes().endswith(b"\n")
    rebuilt = Ledger.from_log(path, append=False)
    assert [rebuilt.core.n, list(rebuilt.core.truncated), list(rebuilt.core.spilled)] == \
        [n, [tuple(p) for p in truncated], [tuple(p) for p in spilled]]


# -- durable=True ------------------------------------------------------------------------


def test_durable_fsyncs_every_evidence_line_and_no_append_or_truncate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    def counting(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    path = tmp_path / "log.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        led = Ledger(recovery_floor_span=12, unit="turns", log=f, durable=True)
        expect = [("session", 1)]
        steps: list[tuple[str, Callable[[], object], int]] = [
            ("append", lambda: led.append(40), 0),
            ("truncate", lambda: led.truncate(0, 8), 0),
            ("append", lambda: led.append(8), 0),
            ("refusal", lambda: _refused(led), 1),
            ("compact", lambda: led.commit(**SHAPE, override="ops ticket 7"), 1),
            ("spill", lambda: led.spill(0, 8, handle="h"), 1),
            ("evict_summary", lambda: led.evict_summary("0"), 1),
        ]
        for name, call, count in steps:
            call()
            expect.append((name, count))
        led.close()
    assert len(synced) == sum(c for _, c in expect)
    kinds = [json.loads(x)["event"] for x in path.read_text().splitlines()]
    assert kinds == [k for k, _ in expect]


def _refused(led: Ledger) -> None:
    with pytest.raises(UnrecoverableCompactionError):
        led.commit(**SHAPE)


def test_durable_with_flush_false_writes_held_lines_with_the_next_evidence_line(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        led = Ledger(recovery_floor_span=12, unit="turns", log=f, durable=True, flush=False)
        size = path.stat().st_size  # the header is evidence: written at once
        _session(led)
        assert path.stat().st_size == size  # appends and truncations held back
        led.spill(0, 8)
        assert len(path.read_text().splitlines()) == 5
        led.append(1)
        led.close()
        assert len(path.read_text().splitlines()) == 6


def test_durable_needs_a_file_descriptor() -> None:
    with pytest.raises(ValueError, match="durable=True needs a log with a file descriptor"):
        Ledger(recovery_floor_span=12, log=io.StringIO(), durable=True)


def test_from_log_continues_durably_and_close_really_closes(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        _session(Ledger(recovery_floor_span=12, unit="turns", log=f))
    led = Ledger.from_log(path, durable=True)
    led.spill(0, 8)
    led.close()
    with pytest.raises(LogFailedError, match="closed"):
        led.append(1)
    assert Ledger.from_log(path, append=False).core.spilled.covers(0, 8)


# -- threads -----------------------------------------------------------------------------


def test_one_ledger_shared_by_threads_logs_in_the_order_its_state_changed() -> None:
    """One thread appends and truncates, another commits: every compaction the ledger allowed
    is allowed by the audit of its log, and every refusal is a refusal line."""
    log = io.StringIO()
    led = Ledger(recovery_floor_span=2, unit="turns", log=log)
    led.append(10)
    allowed = refused = 0
    stop = threading.Event()
    errors: list[BaseException] = []

    def appender() -> None:
        try:
            i = 0
            # until both outcomes were seen often (the interleaving is the scheduler's)
            while (allowed + refused < 3000 or min(allowed, refused) <= 10) and i < 300_000:
                i += 1
                led.append(2)
                n = led.history_end
                if i % 3 == 0:
                    led.truncate(n - 1, n)  # refused until the next spill covers it
                elif i % 3 == 1:
                    led.spill(0, n)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    def committer() -> None:
        nonlocal allowed, refused
        try:
            while not stop.is_set():
                n = led.history_end
                try:
                    led.commit(summary_input=(0, n), summary_covers=(n - 2, n - 2), tail_start=n - 2)
                    allowed += 1
                except UnrecoverableCompactionError:
                    refused += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=appender), threading.Thread(target=committer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors
    assert allowed > 10 and refused > 10, (allowed, refused)  # both outcomes were exercised
    out = list(replay(iter_events(log.getvalue().splitlines())))
    verdicts = [v for v in out if isinstance(v, Verdict)]
    assert len(verdicts) == allowed and all(v.decision.allowed for v in verdicts)
    assert len(out) - 1 - len(verdicts) == refused == led.refusals


# -- SIGKILL -----------------------------------------------------------------------------

_WRITER = """
import json, os, sys
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
led = Ledger(recovery_floor_span=2, unit="turns", log=open(sys.argv[1], "w"), durable=True)
report = os.fdopen(1, "w", buffering=1)
report.write("1 session\\n")
i = 0
while True:
    n = led.history_end
    kind = ("append", "truncate", "spill", "compact", "refusal")[i % 5]
    i += 1
    if kind == "append":
        led.append(4)
    elif kind == "truncate":
        led.truncate(n - 1, n)
    elif kind == "spill":
        led.spill(n - 1, n, handle="sha256:" + "0" * 64)
    else:
        try:
            led.commit(summary_input=(0, n), summary_covers=(0, n - 2), tail_start=n - 2,
                       override="kept" if kind == "compact" else None)
            kind = "compact"
        except UnrecoverableCompactionError:
            kind = "refusal"
    report.write(f"{led._line} {kind}\\n")
"""


def _reports(proc: subprocess.Popen[str], count: int) -> Iterator[tuple[int, str]]:
    assert proc.stdout is not None
    for _ in range(count):
        line = proc.stdout.readline()
        if not line:
            return
        number, kind = line.split()
        yield int(number), kind


@pytest.mark.parametrize("seed", range(4))
def test_a_durable_writer_killed_with_sigkill_loses_no_line_it_reported(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "log.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        reported = list(_reports(proc, 50 + 97 * seed))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()
    assert len(reported) > 40
    lines = path.read_bytes().splitlines(keepends=True)
    for number, kind in reported:  # every line the child was told was written is there, whole
        assert lines[number - 1].endswith(b"\n")
        assert json.loads(lines[number - 1])["event"] == kind
    led = Ledger.from_log(path, append=False)  # at most a torn last line after the reported ones
    assert led.torn_line is None or led.torn_line[0] > reported[-1][0]


# -- negative counts: an input error everywhere ------------------------------------------

HEADER = ('{"event": "session", "unit": "turns", "recovery_floor_span": 2, '
          '"floor_unit": "turns", "truncator_unit": "turns"}')
REUSE = [  # the finding: a spill of the first [8, 16) "covers" the second, evicted [8, 16)
    HEADER,
    '{"event": "append", "count": 16}',
    '{"event": "spill", "range": [8, 16]}',
    '{"event": "append", "count": -8}',
    '{"event": "append", "count": 8}',
    '{"event": "truncate", "range": [8, 16]}',
    '{"event": "append", "count": 4}',
    '{"event": "compact", "summary_input": [0, 20], "summary_covers": [0, 18], "tail_start": 18}',
]


def test_a_negative_count_is_an_input_error_in_the_audit(tmp_path: Path) -> None:
    path = tmp_path / "reuse.jsonl"
    path.write_text("".join(x + "\n" for x in REUSE))
    for fmt in ("text", "json"):
        out, err = io.StringIO(), io.StringIO()
        code = main(["audit", "--format", fmt, str(path)], stdout=out, stderr=err)
        assert (code, out.getvalue()) == (2, "")
        assert f"{path}:4: count: expected a count >= 0, got -8" in err.getvalue()
    # without the negative line the same log refuses: the spill covered other turns
    fixed = tmp_path / "fixed.jsonl"
    fixed.write_text("".join(x + "\n" for x in REUSE if '"count": -8' not in x and '"count": 8}' not in x))
    assert main(["audit", str(fixed)], stdout=io.StringIO(), stderr=io.StringIO()) == 1


def test_a_negative_count_is_an_input_error_in_replay_from_log_and_the_ledger() -> None:
    events: list[Event] = [Session(1, "turns", 2, "turns", "turns"), Append(2, 16), Spill(3, 8, 16, None),
              Append(4, -8), Append(5, 8), Truncate(6, 8, 16), Append(7, 4),
              Compact(8, (0, 20), (0, 18), 18, None)]
    with pytest.raises(EventLogError, match=r"t.jsonl:4: count: expected a count >= 0, got -8"):
        list(replay(events, source="t.jsonl"))
    with pytest.raises(EventLogError, match=r":4: count: expected a count >= 0, got -8"):
        Ledger.from_log(REUSE)
    led = Ledger(recovery_floor_span=2, unit="turns")
    led.append(16)
    with pytest.raises(ValueError, match="count: expected a count >= 0, got -8"):
        led.append(-8)
    assert led.history_end == 16


# -- arguments that fail closed ----------------------------------------------------------


@pytest.mark.parametrize(("call", "field"), [
    (lambda led: led.append(1.0), "count"),
    (lambda led: led.append(float("inf")), "count"),
    (lambda led: led.append(True), "count"),
    (lambda led: led.truncate(0.0, 4), r"range\[0\]"),
    (lambda led: led.spill(0, float("inf")), r"range\[1\]"),
    (lambda led: led.truncate(False, 4), r"range\[0\]"),
    (lambda led: led.decide(summary_input=map(int, [0, 8]), summary_covers=(0, 8), tail_start=8),
     "summary_input"),
    (lambda led: led.decide(summary_input=(0, 8), summary_covers=(0, 8, 9), tail_start=8),
     "summary_covers"),
    (lambda led: led.decide(summary_input=(0, 8.0), summary_covers=(0, 8), tail_start=8),
     r"summary_input\[1\]"),
    (lambda led: led.decide(summary_input=(0, 8), summary_covers=(0, 8), tail_start=True),
     "tail_start"),
    (lambda led: led.commit(summary_input=[0, 8], summary_covers=(0, 8), tail_start=float("inf")),
     "tail_start"),
    (lambda led: led.commit(summary_input=(0, 8), summary_covers=(0, 8), tail_start=8,
                            saw=iter(["0"])), "saw"),
    (lambda led: led.decide(summary_input=(0, 8), summary_covers=(0, 8), tail_start=8,
                            keeps=(x for x in ["0"])), "keeps"),
    (lambda led: Ledger(recovery_floor_span=2.0), "recovery_floor_span"),  # type: ignore[arg-type]
    (lambda led: Ledger(recovery_floor_span=True), "recovery_floor_span"),
])
def test_bad_arguments_raise_naming_the_argument_and_record_nothing(call: Any, field: str) -> None:
    log = io.StringIO()
    led = Ledger(recovery_floor_span=2, unit="turns", log=log)
    led.append(10)
    before, text = _state(led), log.getvalue()
    with pytest.raises(TypeError, match=rf"^{field}: expected"):
        call(led)
    assert (_state(led), log.getvalue()) == (before, text)


def test_an_iterable_log_source_is_read_once() -> None:
    lines = iter([HEADER + "\n", '{"event": "append", "count": 3}\n'])
    assert Ledger.from_log(lines).history_end == 3


def test_a_closed_log_stream_fails_closed_instead_of_writing_to_its_old_descriptor(tmp_path: Path) -> None:
    f = open(tmp_path / "log.jsonl", "w", encoding="utf-8")  # noqa: SIM115 - closed on purpose
    led = Ledger(recovery_floor_span=2, unit="turns", log=f)
    f.close()
    other = open(tmp_path / "other.txt", "w", encoding="utf-8")  # may get the same descriptor  # noqa: SIM115
    try:
        with pytest.raises(LogFailedError, match="closed"):
            led.append(1)
        assert led.history_end == 0
    finally:
        other.close()
    assert (tmp_path / "other.txt").read_text() == ""


def test_from_log_with_flush_false_writes_held_lines_when_the_ledger_is_collected(tmp_path: Path) -> None:
    import gc

    path = tmp_path / "log.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        Ledger(recovery_floor_span=2, unit="turns", log=f)
    led = Ledger.from_log(path, flush=False)
    led.append(3)
    assert len(path.read_text().splitlines()) == 1
    del led
    gc.collect()
    assert Ledger.from_log(path, append=False).history_end == 3


def test_the_ledger_log_and_the_spill_store_import_only_the_standard_library() -> None:
    code = (
        "import sys, tailguard.runtime.ledger, tailguard.runtime.ledger_log, tailguard.runtime.interval_index, "
        "tailguard.spill; "
        "top = {m.split('.')[0] for m in sys.modules}; "
        "ok = {'tailguard', '__main__', '_distutils_hack'}; "  # the last: setuptools' .pth hook
        "bad = sorted(m for m in top if m not in sys.stdlib_module_names and m not in ok); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
