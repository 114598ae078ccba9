"""``Ledger.snapshot()`` / ``Ledger.restore()`` (spec 1.2, SPEC.md section 11).

The property: a ledger restored from a snapshot (through JSON text) decides every continuation
exactly as the ledger that wrote it: the same decisions, the same refusal sentences, the same
errors for bad calls, and the same log lines after the restore's ``resume`` line. Then the
errors a user meets: a snapshot of another version, another session, altered, or not the state
of the log it claims to continue.
"""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tailguard import Ledger
from tailguard.audit.replay import replay
from tailguard.base.errors import LogFailedError, SnapshotError, UnrecoverableCompactionError
from tailguard.runtime.eventlog import iter_events
from tailguard.runtime.snapshot import state_digest

PROFILES = ("strict", "partitioned", "seed")


def _outcome(fn: Any) -> tuple[str, object]:
    try:
        return ("ok", fn())
    except UnrecoverableCompactionError as exc:
        return ("refused", (str(exc), exc.failed, exc.holes))
    except (ValueError, TypeError) as exc:
        return (type(exc).__name__, str(exc))


def _shifted(outcome: tuple[str, object], at: int) -> tuple[str, object]:
    """``outcome`` with every ``line N`` past ``at`` named one line earlier (the resume line)."""
    def fix(text: str) -> str:
        def lines(m: re.Match[str]) -> str:
            return m[1] + re.sub(r"\d+", lambda k: str(int(k[0]) - (int(k[0]) > at)), m[2])
        return re.sub(r"(lines? )(\d+(?:(?:, | to | and )\d+)*)", lines, text)
    return _earlier(*_fix_with(outcome, fix))


def _earlier(kind: str, value: object) -> tuple[str, object]:
    """Where a snapshot keeps no line (a summary id used before it, whose summary left the
    context), messages say ``line L or earlier``: compare that part as ``line #``."""
    def fix(text: str) -> str:
        return re.sub(r"(already used at line|created at line) \d+( or earlier)?", r"\1 #", text)
    return _fix_with((kind, value), fix)


def _fix_with(outcome: tuple[str, object], fix: Any) -> tuple[str, object]:
    kind, value = outcome
    if kind == "refused":
        msg, failed, holes = value  # type: ignore[misc]
        return kind, (fix(msg), failed, holes)
    if kind == "ok" and isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], list):
        return kind, (value[0], [fix(x) for x in value[1]])
    return kind, value if not isinstance(value, str) else fix(value)


def _step(data: st.DataObject, led: Ledger, k: int) -> tuple[str, Any]:
    """Draw one operation for ``led``'s current state (valid or not): (name, kwargs)."""
    n = led.history_end
    ids = list(led.summaries)
    kind = data.draw(st.sampled_from(["append", "append", "truncate", "spill", "commit", "commit",
                                      "decide", "evict"]), label=f"op{k}")
    point = st.integers(0, n + 1)
    if kind == "append":
        return kind, {"count": data.draw(st.integers(0, 6))}
    if kind in ("truncate", "spill"):
        lo = data.draw(point)
        return kind, {"lo": lo, "hi": data.draw(st.integers(lo, n + 1))}
    if kind == "evict":
        pool = [*ids, "nope"]
        return kind, {"summary": data.draw(st.sampled_from(pool))}
    a = data.draw(point)
    b = data.draw(st.integers(a, n + 1))
    c = data.draw(point)
    d = data.draw(st.integers(c, n + 1))
    t = data.draw(point)
    args: dict[str, Any] = {"summary_input": (a, b), "summary_covers": (c, d), "tail_start": t}
    if data.draw(st.booleans()):
        args["saw"] = data.draw(st.lists(st.sampled_from(ids), unique=True)) if ids else []
    if ids and data.draw(st.booleans()):
        args["keeps"] = data.draw(st.lists(st.sampled_from(ids), unique=True))
    if kind == "commit":
        if data.draw(st.booleans()):
            args["summary"] = data.draw(st.sampled_from(["x", "y", "z", "0", "1", *ids]))
        if data.draw(st.booleans()):
            args["override"] = "because"
    return kind, args


def _apply(led: Ledger, kind: str, args: dict[str, Any]) -> tuple[str, object]:
    if kind == "append":
        return _outcome(lambda: led.append(**args))
    if kind == "truncate":
        return _outcome(lambda: led.truncate(**args))
    if kind == "spill":
        return _outcome(lambda: led.spill(**args))
    if kind == "evict":
        return _outcome(lambda: led.evict_summary(**args))
    if kind == "decide":
        def both() -> object:
            d = led.decide(**args)
            sentences = led.explain(d, **args) if not d.allowed else []
            return d, sentences
        return _outcome(both)
    return _outcome(lambda: led.commit(**args))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), profile=st.sampled_from(PROFILES), F=st.integers(0, 5),
       unit=st.sampled_from(["turns", "messages", "tokens"]), adopt=st.integers(-1, 4))
def test_a_restored_ledger_decides_every_continuation_alike(
        data: st.DataObject, profile: str, F: int, unit: str, adopt: int) -> None:
    log_a = io.StringIO()
    a = Ledger(F, unit=unit, profile=profile, log=log_a, session_id="s")
    if adopt >= 0:
        a.adopt(adopt, reason="compacted before the guard came")
    before = data.draw(st.integers(0, 12), label="steps before the snapshot")
    for k in range(before):
        kind, args = _step(data, a, k)
        _apply(a, kind, args)
    text = json.dumps(a.snapshot())
    mark = len(log_a.getvalue())
    log_b = io.StringIO()
    b = Ledger.restore(json.loads(text), session_id="s", log=log_b)
    assert b.history_end == a.history_end and b.summaries == a.summaries
    assert b.next_summary_id == a.next_summary_id and b.unverified == a.unverified
    assert state_digest(b.core) == state_digest(a.core)
    after = data.draw(st.integers(1, 12), label="steps after")
    at = json.loads(text)["log"]["lines"]  # b's log has its resume line there: later lines are one on
    for k in range(after):
        kind, args = _step(data, a, before + k)
        assert _shifted(_apply(b, kind, args), at) == _earlier(*_apply(a, kind, args)), (kind, args)
    resume, *rest_b = log_b.getvalue().splitlines()
    assert json.loads(resume)["event"] == "resume"
    assert rest_b == log_a.getvalue()[mark:].splitlines()
    assert b.refusals == a.refusals


def _session(tmp_path: Path) -> tuple[Ledger, Path]:
    path = tmp_path / "s.jsonl"
    f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - the ledger's log for the test's life
    led = Ledger(2, unit="messages", profile="partitioned", log=f, session_id="alice")
    led.append(10)
    led.truncate(0, 1)
    led.spill(0, 1, handle="sha256:x")
    led.commit(summary_input=(1, 8), summary_covers=(1, 8), tail_start=8)
    return led, path


def test_restore_continues_the_log_and_the_audit_judges_it_as_one_session(tmp_path: Path) -> None:
    led, path = _session(tmp_path)
    snap = json.loads(json.dumps(led.snapshot()))
    again = Ledger.restore(snap, session_id="alice", path=path)
    again.append(5)
    again.commit(summary_input=(8, 13), summary_covers=(8, 13), tail_start=13)
    again.close()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[5]) == {"event": "resume", "snapshot": snap["state"]["digest"], "line": 5}
    verdicts = [v for v in replay(iter_events(lines), profile="partitioned") if hasattr(v, "decision")]
    assert [v.decision.decision for v in verdicts] == ["allow", "allow"]


def test_a_snapshot_of_another_session_version_or_altered_is_refused(tmp_path: Path) -> None:
    led, _ = _session(tmp_path)
    snap = led.snapshot()
    with pytest.raises(SnapshotError, match=r"^session_id: this is a snapshot of session 'alice', not 'bob'$"):
        Ledger.restore(snap, session_id="bob")
    with pytest.raises(SnapshotError, match=r"^version: snapshot version 2; this tailguard reads version 1"):
        Ledger.restore({**snap, "version": 2})
    with pytest.raises(SnapshotError, match=r"^format: not a tailguard ledger snapshot"):
        Ledger.restore({"format": "x"})
    altered = json.loads(json.dumps(snap))
    altered["state"]["truncated"] = []
    with pytest.raises(SnapshotError, match=r"^integrity: the snapshot does not match its integrity digest"):
        Ledger.restore(altered)
    with pytest.raises(SnapshotError, match=r"^snapshot: expected a JSON object, got list$"):
        Ledger.restore([])


def test_a_snapshot_that_does_not_match_its_log_is_refused(tmp_path: Path) -> None:
    led, path = _session(tmp_path)
    snap = led.snapshot()
    led.append(1)  # the log moves on past the snapshot
    with pytest.raises(SnapshotError, match=r"^log: .* ends at byte \d+, the snapshot at byte \d+; the log has grown"):
        Ledger.restore(snap, path=path)
    other = tmp_path / "other.jsonl"
    other.write_bytes(path.read_bytes()[: snap["log"]["bytes"] - 3] + b"xx\n")
    with pytest.raises(SnapshotError, match=r"the last line is not the one the snapshot saw"):
        Ledger.restore(snap, path=other)
    streamed = Ledger(1, log=io.StringIO()).snapshot()
    with pytest.raises(SnapshotError, match=r"^log: this snapshot was not taken with a log file"):
        Ledger.restore(streamed, path=path)


def test_refusal_lines_past_the_snapshot_do_not_stop_a_restore(tmp_path: Path) -> None:
    """A halted compaction logs its refusal and raises, so the framework never saves the state
    that would follow it: a new process restores the older snapshot, past a log that moved on only
    by refusal lines (they change no state), and the audit reads the log as one session."""
    led, path = _session(tmp_path)
    snap = led.snapshot()
    led.append(4)
    with pytest.raises(UnrecoverableCompactionError):
        led.commit(summary_input=(9, 12), summary_covers=(9, 12), tail_start=12)
    with pytest.raises(SnapshotError, match="the log has grown"):
        Ledger.restore(snap, path=path)  # an append is state: the snapshot is stale
    led2, path2 = _session(tmp_path / "b") if (tmp_path / "b").mkdir() is None else (None, None)
    assert led2 is not None and path2 is not None
    snap2 = led2.snapshot()
    for _ in range(2):
        with pytest.raises(UnrecoverableCompactionError):
            led2.commit(summary_input=(8, 9), summary_covers=(8, 9), tail_start=9)
    again = Ledger.restore(snap2, path=path2)
    assert again.refusals == 2
    again.append(1)
    again.close()
    lines = path2.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[7]) == {"event": "resume", "snapshot": snap2["state"]["digest"], "line": 7}
    assert list(replay(iter_events(lines), profile="partitioned"))  # one session: every line read


def test_a_stale_or_rotated_writer_fails_loudly_and_never_cuts_another_writers_lines(tmp_path: Path) -> None:
    led, path = _session(tmp_path)
    snap = led.snapshot()
    other = Ledger.restore(snap, path=path)  # a second process continues the session
    other.append(2)
    size = path.stat().st_size
    with pytest.raises(LogFailedError, match=r"another writer continued it; restore the ledger"):
        led.append(1)  # the first is stale: its state is not the log's any more
    assert path.stat().st_size == size
    with pytest.raises(LogFailedError):
        led.decide(summary_input=(0, 1), summary_covers=(0, 1), tail_start=1)  # decides nothing more
    os.rename(path, tmp_path / "rotated.jsonl")
    path.write_text("", encoding="utf-8")
    with pytest.raises(LogFailedError, match=r"was replaced or rotated since this ledger opened it"):
        other.append(1)
    assert (tmp_path / "rotated.jsonl").stat().st_size == size


def test_the_snapshot_stays_small_however_long_the_session(tmp_path: Path) -> None:
    """O(merged intervals + summaries in the context): a long session of default ids."""
    sizes = []
    for rounds in (10, 1000):
        led = Ledger(2, unit="messages", profile="partitioned")
        for _ in range(rounds):
            led.append(10)
            n = led.history_end
            led.commit(summary_input=(0, n - 2), summary_covers=(0, n - 2), tail_start=n - 2)
        sizes.append(len(json.dumps(led.snapshot())))
    assert sizes[1] - sizes[0] < 40, sizes


def test_the_snapshot_stays_small_when_every_compaction_loses_a_summary_it_spilled() -> None:
    """LangChain's trimmer drops the earlier summary every time (``saw=[]``); spill mode writes
    what leaves first. The reasons kept for diagnostics cover only offsets a hole can still be."""
    sizes = []
    for rounds in (10, 400):
        led = Ledger(2, unit="messages", profile="partitioned")
        for _ in range(rounds):
            cut = led.history_end
            led.append(10)
            n = led.history_end
            led.spill(0, n - 2, handle="sha256:x")
            led.commit(summary_input=(cut, n - 2), summary_covers=(cut, n - 2), tail_start=n - 2, saw=[])
        sizes.append(len(json.dumps(led.snapshot())))
    assert sizes[1] - sizes[0] < 60, sizes


def test_adopt_marks_the_offsets_unverified_and_follows_lineage() -> None:
    led = Ledger(2, unit="messages", profile="partitioned", log=io.StringIO())
    assert led.adopt(3, reason="thread compacted before the guard") == "adopted"
    assert led.unverified == ((0, 3),) and led.summaries == ("adopted",)
    led.append(6)
    ok = led.decide(summary_input=(3, 7), summary_covers=(3, 7), tail_start=7)
    assert ok.allowed  # the adopted summary is seen (default): [0, 3) recoverable, unverified
    lost = led.decide(summary_input=(3, 7), summary_covers=(3, 7), tail_start=7, saw=[])
    assert lost.failed == ("no_hole",) and lost.holes == ((0, 3),)
    with pytest.raises(ValueError, match=r"^event: adopt must come before every other event"):
        led.adopt(1, reason="again")


def test_adopt_after_an_event_that_changed_nothing_is_refused_by_the_ledger_and_the_log_reader() -> None:
    """SPEC.md 11.4: the adopt line comes right after the header, even if what came before it
    (an append of 0, a refusal line) changed no state; a ledger never writes a log its reader rejects."""
    led = Ledger(2, log=io.StringIO())
    led.append(0)
    with pytest.raises(ValueError, match=r"^event: adopt must come before every other event"):
        led.adopt(3, reason="too late")
    log = ['{"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns", '
           '"truncator_unit": "turns"}', '{"event": "append", "count": 0}',
           '{"event": "adopt", "range": [0, 3], "reason": "too late"}']
    with pytest.raises(ValueError, match=r":3: event: adopt must come before every other event"):
        list(replay(iter_events(log)))


_WORKER = r'''
import json, sys
from tailguard import Ledger
from tailguard.base.errors import LogFailedError, SnapshotError
path, snap_in, snap_out, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
try:
    if start == 0:
        led = Ledger(2, unit="messages", profile="partitioned", log=open(path, "w"), session_id="t")
    else:
        led = Ledger.restore(json.load(open(snap_in)), session_id="t", path=path)
    led.append(10)
    n = led.history_end
    lo = max(0, n - 12)
    led.commit(summary_input=(lo, n - 2), summary_covers=(lo, n - 2), tail_start=n - 2)
    json.dump(led.snapshot(), open(snap_out, "w"))
    print("ok")
except (LogFailedError, SnapshotError) as exc:
    print("refused:", exc)
'''


def _worker(tmp_path: Path, log: Path, snap_in: str, snap_out: str, start: int) -> Any:
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", _WORKER, str(log), snap_in, snap_out, str(start)],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)


def test_processes_taking_turns_write_one_log_the_audit_judges_as_one_session(tmp_path: Path) -> None:
    """Four processes continue one session in turn (each restores the last one's snapshot)."""
    log = tmp_path / "t.jsonl"
    for turn in range(4):
        out = _worker(tmp_path, log, f"s{turn - 1}.json", f"s{turn}.json", turn).communicate()[0]
        assert out == "ok\n", out
    lines = log.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["event"] for x in lines].count("resume") == 3
    verdicts = [v for v in replay(iter_events(lines), profile="partitioned") if hasattr(v, "decision")]
    assert [v.decision.allowed for v in verdicts] == [True] * 4
    again = Ledger.from_log(log, profile="partitioned", append=False)
    assert again.history_end == 40 and again.summaries == ("3",)


def test_two_processes_continuing_one_snapshot_at_once_never_both_write(tmp_path: Path) -> None:
    """Both restore the same snapshot and race: one continues, the other is refused loudly,
    and the log stays one consistent session (its audit reads it whole)."""
    log = tmp_path / "t.jsonl"
    assert _worker(tmp_path, log, "-", "s0.json", 0).communicate()[0] == "ok\n"
    for rnd in range(3):
        procs = [_worker(tmp_path, log, f"s{rnd}.json", f"s{rnd + 1}-{k}.json", 1) for k in range(2)]
        outs = [p.communicate()[0] for p in procs]
        assert sorted(o.split(":")[0].strip() for o in outs) == ["ok", "refused"], outs
        winner = next(k for k, o in enumerate(outs) if o == "ok\n")
        os.replace(tmp_path / f"s{rnd + 1}-{winner}.json", tmp_path / f"s{rnd + 1}.json")
    lines = log.read_text(encoding="utf-8").splitlines()
    verdicts = [v for v in replay(iter_events(lines), profile="partitioned") if hasattr(v, "decision")]
    assert len(verdicts) == 4 and all(v.decision.allowed for v in verdicts)


def test_the_audit_its_json_html_and_fleet_show_adopted_offsets_as_unverified(tmp_path: Path) -> None:
    from tailguard.audit.fleet import record
    from tailguard.audit.fleet.sources import Item
    from tailguard.cli.main import main

    path = tmp_path / "t.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        led = Ledger(2, unit="messages", profile="partitioned", log=f, session_id="t")
        led.adopt(3, reason="compacted <before>")
        led.append(10)
        led.commit(summary_input=(3, 11), summary_covers=(3, 11), tail_start=11)
    out, err = io.StringIO(), io.StringIO()
    assert main(["audit", "--profile", "partitioned", str(path)], stdout=out, stderr=err) == 0
    assert f"{path}:2: unverified: offsets [0, 3) predate the guard" in out.getvalue()
    assert out.getvalue().endswith("all allowed (profile partitioned); unverified (predate the guard): [0, 3)\n")
    out = io.StringIO()
    assert main(["audit", "--profile", "partitioned", "--format", "json", str(path)], stdout=out, stderr=err) == 0
    assert json.loads(out.getvalue())["unverified"] == [[0, 3]]
    page = tmp_path / "t.html"
    assert main(["audit", "--profile", "partitioned", "--html", str(page), str(path)],
                stdout=io.StringIO(), stderr=err) == 0
    assert "unverified: offsets [0, 3) predate the guard" in page.read_text(encoding="utf-8")
    assert "&lt;before&gt;" in page.read_text(encoding="utf-8")
    rec = record.audit_source(Item("t.jsonl", str(path)), "partitioned")
    assert rec["unverified"] == [[0, 3]] and rec["refusals"] == 0



def test_a_ledger_log_must_be_a_stream(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="log: expected a text stream"):
        Ledger(2, log=tmp_path / "s.jsonl")  # type: ignore[arg-type]
