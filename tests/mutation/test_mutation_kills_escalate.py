"""Tests written to kill surviving mutants of ``tailguard.runtime.escalate`` (tools/mutation.sh).

Each pins a behaviour the older tests did not: the lineage (``saw``, ``keeps``) reaches the
decision, the explanation and the commit; the summary id of a two-phase commit; the ``ready``
outcome's decision; the argument checks and the messages a halt carries.
"""

from __future__ import annotations

import pytest

from tailguard.runtime.escalate import maybe_auto_compact
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import MemorySpillStore


def summarized_once() -> Ledger:
    """20 turns, summary "0" covering [0, 16) with the tail [16, 20); then 10 more turns (n = 30)."""
    ledger = Ledger(recovery_floor_span=4, unit="turns")
    ledger.append(20)
    ledger.commit(summary_input=(0, 20), summary_covers=(0, 16), tail_start=16)
    ledger.append(10)
    return ledger


SECOND = {"occupancy": 10, "threshold": 5, "summary_input": (16, 30), "summary_covers": (16, 26), "tail_start": 26}


def test_a_summarizer_that_did_not_see_the_earlier_summary_is_refused_naming_the_hole() -> None:
    ledger = summarized_once()
    assert maybe_auto_compact(summarized_once(), **SECOND).allowed  # saw every summary (the default)
    with pytest.raises(UnrecoverableCompactionError) as err:
        maybe_auto_compact(ledger, **SECOND, saw=[])
    assert "[0, 16)" in str(err.value)  # the explanation is of the case with the lineage given
    assert "no_hole: " in str(err.value)  # the sentences reach the error, not only the clause ids
    # ... and they are explained with the lineage given: summary "0" was not seen
    assert "covered only by summary '0'" in str(err.value) and "did not see" in str(err.value)
    assert ledger.summaries == ("0",)  # nothing recorded


def test_keeps_reaches_the_decision_and_the_commit() -> None:
    ledger = summarized_once()
    out = maybe_auto_compact(ledger, **SECOND, saw=[], keeps=["0"], summarize=lambda: "s")
    assert out.action == "compacted"
    assert ledger.summaries == ("0", "1")  # "0" kept beside the new summary


def test_two_phase_commit_names_the_summary() -> None:
    ledger = summarized_once()
    out = maybe_auto_compact(ledger, **SECOND)
    assert out.action == "ready" and out.decision is not None and out.decision.allowed
    assert ledger.summaries == ("0",)
    out.commit("named")
    assert ledger.summaries == ("named",) and out.action == "compacted"

    ledger = summarized_once()
    maybe_auto_compact(ledger, **SECOND, summary="given").commit()
    assert ledger.summaries == ("given",)

    ledger = summarized_once()
    maybe_auto_compact(ledger, **SECOND, summary="given").commit("later")
    assert ledger.summaries == ("later",)


def test_a_compacted_outcome_reports_the_summary_id() -> None:
    ledger = summarized_once()
    out = maybe_auto_compact(ledger, **SECOND, summarize=lambda: "text")
    assert (out.summary, out.summary_id, ledger.summaries) == ("text", "1", ("1",))
    ledger = summarized_once()
    out = maybe_auto_compact(ledger, **SECOND, summary="mine", summarize=lambda: "text")
    assert (out.summary_id, ledger.summaries) == ("mine", ("mine",))


@pytest.mark.parametrize("missing", ["store", "transcript"])
def test_policy_spill_needs_both_a_store_and_a_transcript(missing: str) -> None:
    kwargs = {"store": MemorySpillStore(), "transcript": lambda: b"x"}
    kwargs[missing] = None  # type: ignore[assignment]
    with pytest.raises(ValueError, match=r"^policy 'spill' needs a store and a transcript source$"):
        maybe_auto_compact(summarized_once(), **SECOND, policy="spill", **kwargs)  # type: ignore[arg-type]


class _Corrupting(MemorySpillStore):
    def get(self, handle: str) -> bytes:
        return super().get(handle) + b"!"


def test_a_spill_that_does_not_re_read_says_so() -> None:
    ledger = summarized_once()
    with pytest.raises(UnrecoverableCompactionError, match=r"did not re-read to the bytes written"):
        maybe_auto_compact(ledger, **SECOND, saw=[], policy="spill", store=_Corrupting(), transcript=lambda: b"t")


def test_a_spill_that_cannot_repair_names_every_clause_left() -> None:
    ledger = Ledger(recovery_floor_span=12, unit="turns")
    ledger.append(40)
    ledger.truncate(0, 8)
    ledger.append(8)
    shape = {"summary_input": (8, 48), "summary_covers": (0, 36), "tail_start": 40}
    left = [c for c in ledger.decide(**shape).failed if c != "no_hole"]
    assert len(left) >= 2, left
    with pytest.raises(UnrecoverableCompactionError) as err:
        maybe_auto_compact(ledger, occupancy=1, threshold=0, **shape, policy="spill", store=MemorySpillStore(),
                           transcript=lambda: b"t" * 48)
    assert f"a spill cannot repair {', '.join(left)}" in str(err.value)
