"""Escalation on the ledger: below threshold nothing; refusal spills or halts; failed spills halt."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tailguard.runtime.escalate import Outcome, Policy, maybe_auto_compact
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, MemorySpillStore, SpillStore, SpillWriteError, make_handle

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT = b"".join(f'{{"turn": {i}, "text": "turn {i}"}}\n'.encode() for i in range(48))


def attempt(
    ledger: Ledger,
    *,
    policy: Policy = "halt",
    store: SpillStore | None = None,
    transcript: Callable[[], bytes] | None = None,
    session: str | None = None,
    occupancy: int = 163,
) -> Outcome:
    """The incident's compaction, at occupancy 163 against a threshold of 160."""
    return maybe_auto_compact(
        ledger,
        occupancy=occupancy,
        threshold=160,
        summary_input=(8, 48),
        summary_covers=(8, 36),
        tail_start=36,
        summarize=lambda: "a summary of turns [8, 36)",
        policy=policy,
        store=store,
        transcript=transcript,
        session=session,
    )


def incident(log: io.StringIO | None = None, **kwargs: str) -> Ledger:
    """The seed's incident: 40 turns, the 8 oldest truncated, 8 more, a 12-turn floor."""
    ledger = Ledger(recovery_floor_span=12, unit="turns", log=log, **kwargs)  # type: ignore[arg-type]
    ledger.append(40)
    ledger.truncate(0, 8)
    ledger.append(8)
    return ledger


def events(log: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.getvalue().splitlines()]


def test_below_threshold_nothing_happens() -> None:
    log = io.StringIO()
    ledger = incident(log)
    store = MemorySpillStore()
    out = attempt(ledger, policy="spill", store=store, transcript=lambda: TRANSCRIPT, occupancy=159)
    assert (out.action, out.decision, out.compacted) == ("none", None, False)
    assert store.list() == []
    assert [e["event"] for e in events(log)] == ["session", "append", "truncate", "append"]


HEALTHY = {"summary_input": (0, 48), "summary_covers": (0, 36), "tail_start": 36}


def test_at_threshold_a_healthy_compaction_is_recorded_after_its_summary_exists() -> None:
    log = io.StringIO()
    ledger = Ledger(recovery_floor_span=12, unit="turns", log=log)
    ledger.append(48)
    seen: list[int] = []

    def summarize() -> str:
        seen.append(len(events(log)))  # nothing is recorded while the summarizer runs
        return "the summary"

    out = maybe_auto_compact(ledger, occupancy=160, threshold=160, summarize=summarize, summary="s0",
                             **HEALTHY)  # type: ignore[arg-type]
    assert out.compacted and out.decision is not None and out.decision.allowed
    assert (out.summary, out.summary_id, seen) == ("the summary", "s0", [2])
    assert events(log)[-1] == {"event": "compact", "summary_input": [0, 48], "summary_covers": [0, 36],
                               "tail_start": 36, "summary": "s0"}
    assert ledger.summaries == ("s0",)


def test_a_summarizer_that_raises_leaves_no_coverage() -> None:
    log = io.StringIO()
    ledger = Ledger(recovery_floor_span=12, unit="turns", log=log)
    ledger.append(48)

    def broken() -> str:
        raise TimeoutError("model timed out")

    with pytest.raises(TimeoutError):
        maybe_auto_compact(ledger, occupancy=160, threshold=160, summarize=broken, **HEALTHY)  # type: ignore[arg-type]
    assert [e["event"] for e in events(log)] == ["session", "append"]
    assert ledger.summaries == ()
    # its coverage never counts: evicting [0, 36) now is a hole
    ledger.truncate(0, 36)
    d = ledger.decide(summary_input=(36, 48), summary_covers=(36, 40), tail_start=40)
    assert d.holes == ((0, 36),)


def test_two_phase_records_only_on_commit() -> None:
    log = io.StringIO()
    ledger = Ledger(recovery_floor_span=12, unit="turns", log=log)
    ledger.append(48)
    out = maybe_auto_compact(ledger, occupancy=160, threshold=160, **HEALTHY)  # type: ignore[arg-type]
    assert (out.action, out.allowed, out.compacted) == ("ready", True, False)
    assert events(log)[-1]["event"] == "append"  # not recorded yet
    assert out.commit().allowed and out.compacted
    assert events(log)[-1]["event"] == "compact" and ledger.summaries == ("0",)
    with pytest.raises(RuntimeError, match="nothing to commit"):
        out.commit()


def test_two_phase_commit_decides_again() -> None:
    ledger = Ledger(recovery_floor_span=12, unit="turns")
    ledger.append(48)
    out = maybe_auto_compact(ledger, occupancy=160, threshold=160, **HEALTHY)  # type: ignore[arg-type]
    ledger.truncate(40, 44)  # the tail lost a turn while the summary was being written
    with pytest.raises(UnrecoverableCompactionError, match="tail_intact"):
        out.commit()
    assert ledger.summaries == ()


def test_halt_names_the_evicted_range() -> None:
    log = io.StringIO()
    ledger = incident(log)
    with pytest.raises(UnrecoverableCompactionError) as info:
        attempt(ledger, policy="halt")
    assert info.value.failed == ("no_hole",)
    assert info.value.holes == ((0, 8),)
    assert "evicted offsets [0, 8) are unrecoverable" in str(info.value)
    # the refused attempt is logged, as a refusal, never as coverage
    assert events(log)[-1] == {"event": "refusal", "summary_input": [8, 48], "summary_covers": [8, 36],
                               "tail_start": 36, "failed": ["no_hole"], "holes": [[0, 8]]}
    assert ledger.refusals == 1 and ledger.summaries == ()


def test_spill_then_the_next_attempt_is_allowed(tmp_path: Path) -> None:
    log = io.StringIO()
    ledger = incident(log)
    store = FileSpillStore(tmp_path / "spills", create=True)
    first = attempt(ledger, policy="spill", store=store, transcript=lambda: TRANSCRIPT, session="incident")
    assert first.action == "spilled" and not first.compacted
    assert first.decision is not None and first.decision.holes == ((0, 8),)
    assert first.handle == make_handle(TRANSCRIPT)
    assert first.spilled == (0, 48)
    assert store.get(first.handle) == TRANSCRIPT
    (record,) = store.list()
    assert (record.session, record.range, record.unit) == ("incident", (0, 48), "turns")
    assert events(log)[-1] == {"event": "spill", "range": [0, 48], "handle": first.handle}
    second = attempt(ledger, policy="spill", store=store, transcript=lambda: TRANSCRIPT, session="incident")
    assert second.compacted
    assert events(log)[-1]["event"] == "compact"
    assert len(store.list()) == 1  # no second spill


def _assert_halts_and_records_nothing(
    ledger: Ledger, log: io.StringIO, store: SpillStore, transcript: Callable[[], bytes]
) -> None:
    with pytest.raises(UnrecoverableCompactionError) as info:
        attempt(ledger, policy="spill", store=store, transcript=transcript)
    assert info.value.holes == ((0, 8),)
    assert "spill of [0, 48) failed, nothing recorded" in str(info.value)
    assert info.value.__cause__ is not None
    assert [e["event"] for e in events(log)] == ["session", "append", "truncate", "append", "refusal"]
    # The next attempt is still refused: a failed spill never leads to an allowed compaction.
    with pytest.raises(UnrecoverableCompactionError):
        attempt(ledger, policy="halt")


def test_failed_write_halts() -> None:
    log = io.StringIO()
    _assert_halts_and_records_nothing(
        incident(log), log, store=MemorySpillStore(fail_writes=True), transcript=lambda: TRANSCRIPT
    )


def test_disk_full_on_the_file_store_halts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileSpillStore(tmp_path / "spills", create=True)

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    log = io.StringIO()
    ledger = incident(log)
    with pytest.raises(UnrecoverableCompactionError) as info:
        attempt(ledger, policy="spill", store=store, transcript=lambda: TRANSCRIPT)
    monkeypatch.undo()
    assert isinstance(info.value.__cause__, SpillWriteError)
    assert "No space left on device" in str(info.value)
    assert store.list() == [] and store.verify().ok
    assert events(log)[-1]["event"] == "refusal"


def test_transcript_source_failure_halts() -> None:
    def broken() -> bytes:
        raise RuntimeError("transcript unavailable")

    log = io.StringIO()
    _assert_halts_and_records_nothing(incident(log), log, store=MemorySpillStore(), transcript=broken)


def test_a_store_that_re_reads_other_bytes_halts() -> None:
    class Lying(MemorySpillStore):
        def get(self, handle: str) -> bytes:
            return b"not what was written"

    log = io.StringIO()
    _assert_halts_and_records_nothing(incident(log), log, store=Lying(), transcript=lambda: TRANSCRIPT)


def test_spill_cannot_repair_other_clauses_so_it_spills_and_halts() -> None:
    log = io.StringIO()
    ledger = incident(log, floor_unit="turns", truncator_unit="tokens")
    store = MemorySpillStore()
    with pytest.raises(UnrecoverableCompactionError) as info:
        attempt(ledger, policy="spill", store=store, transcript=lambda: TRANSCRIPT)
    assert "units_agree" in info.value.failed
    assert "still refused: a spill cannot repair units_agree" in str(info.value)
    assert [r.range for r in store.list()] == [(0, 48)]  # the evidence is kept all the same
    assert events(log)[-1]["event"] == "spill"


def test_policy_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="policy 'spill' needs a store and a transcript source"):
        attempt(incident(), policy="spill", occupancy=0)
    with pytest.raises(ValueError, match="expected 'spill' or 'halt', got 'retry'"):
        attempt(incident(), policy="retry")  # type: ignore[arg-type]


def test_the_demonstration_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "spill_escalation.py"), "--store", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "spill policy, attempt 1: refused (no_hole), spilled [0, 48) as sha256:" in out
    assert "spill policy, attempt 2: allowed, compaction recorded" in out
    assert "halt policy: UnrecoverableCompactionError: compaction refused (no_hole); evicted offsets [0, 8)" in out


def test_under_the_seed_profile_a_spill_repairs_nothing_so_it_halts() -> None:
    """Brief 3.d: the seed's guard refuses forever once a truncation meets the floor."""
    ledger = Ledger(recovery_floor_span=12, unit="turns", profile="seed")
    ledger.append(48)
    ledger.truncate(0, 30)
    store = MemorySpillStore()
    with pytest.raises(UnrecoverableCompactionError) as info:
        attempt(ledger, policy="spill", store=store, transcript=lambda: TRANSCRIPT)
    assert info.value.failed == ("truncation_clear",)
    assert "still refused: a spill cannot repair truncation_clear" in str(info.value)
    assert [r.range for r in store.list()] == [(0, 48)]


# Issue 16: the escalation halts on every clause a spill cannot repair, and the list of those
# clauses is the spec's (every clause but no_hole, theorem T8), not a list restated here.
# Each entry: how to make the incident's compaction fail that clause (and, with it, usually
# no_hole, so that the spill is really attempted).
UNREPAIRABLE_CASES: dict[str, tuple[dict[str, str], dict[str, object], tuple[int, int] | None]] = {
    # (ledger keywords, compaction arguments, an extra truncation after the 8 new turns)
    "units_agree": ({"floor_unit": "turns", "truncator_unit": "tokens"}, {}, None),
    "floor_in_input": ({}, {"summary_input": (8, 40)}, None),
    "floor_in_tail": ({}, {"tail_start": 40, "summary_covers": (8, 40)}, None),
    "tail_intact": ({}, {}, (40, 42)),
    "seam_contiguous": ({}, {"summary_covers": (8, 30)}, None),
    "summary_honest": ({}, {"summary_input": (10, 48)}, None),
}


def _strict_clauses() -> list[str]:
    from tailguard.speclang.load import load_spec
    from tailguard.tooling.project import spec_path

    return [c.id for c in load_spec(spec_path()).profile("strict").clauses]


def test_the_unrepairable_cases_cover_every_clause_but_no_hole() -> None:
    # well_formed cannot be reached through the ledger: it rejects inconsistent offsets itself
    assert set(UNREPAIRABLE_CASES) == set(_strict_clauses()) - {"no_hole", "well_formed"}


@pytest.mark.parametrize(("profile", "clause"), [
    (profile, clause) for profile in ("strict", "partitioned") for clause in sorted(UNREPAIRABLE_CASES)
    if not (profile == "partitioned" and clause == "floor_in_input")  # partitioned has none (brief 4b)
])
def test_spill_halts_on_every_clause_it_cannot_repair(clause: str, profile: str) -> None:
    ledger_kwargs, compaction, truncation = UNREPAIRABLE_CASES[clause]
    log = io.StringIO()
    ledger = Ledger(recovery_floor_span=12, profile=profile, log=log,
                    **(ledger_kwargs or {"unit": "turns"}))  # type: ignore[arg-type]
    ledger.append(40)
    ledger.truncate(0, 8)
    ledger.append(8)
    if truncation is not None:
        ledger.truncate(*truncation)
    store = MemorySpillStore()
    with pytest.raises(UnrecoverableCompactionError) as info:
        maybe_auto_compact(ledger, occupancy=163, threshold=160, **{
            "summary_input": (8, 48), "summary_covers": (8, 36), "tail_start": 36,
            **compaction}, summarize=lambda: "summary", policy="spill", store=store,  # type: ignore[arg-type]
            transcript=lambda: TRANSCRIPT)
    assert clause in info.value.failed
    message = str(info.value)
    assert "still refused: a spill cannot repair " in message, message
    assert clause in message.split("cannot repair ", 1)[1], message
    assert [r.range for r in store.list()] == [(0, 48)], "the evidence is spilled, once, before halting"
    assert [e["event"] for e in events(log)].count("compact") == 0, "nothing was compacted"
