"""Escalation: the seed's ``maybe_auto_compact``, on the ledger, with a real spill path.

Below the threshold nothing happens. At or above it the ledger decides the planned compaction.
Allowed: it is recorded and the caller compacts. Refused: the policy either **spills** (writes
the full transcript ``[0, n)`` to a :class:`~tailguard.spill.SpillStore`, re-reads it, records
the spill in the ledger, and returns without compacting, so that the next attempt can be allowed
under ``strict``), or **halts** (raises :class:`UnrecoverableCompactionError` naming the failed
clauses and the evicted ranges).

A spill repairs only ``no_hole`` (theorem 8 of the brief). When a refusal fails any other clause,
the spill policy still spills (the evidence is kept) and then halts, since no later attempt of
that compaction can be allowed. A spill that fails in any way (disk full, permissions, a
transcript source that raises, a re-read that does not match) is never recorded and always
halts: a failed spill never leads to an allowed compaction.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tailguard._generated.checker import Decision
from tailguard.ledger import Ledger
from tailguard.seed_api import UnrecoverableCompactionError
from tailguard.spill import SpillStore

__all__ = ["REPAIRABLE", "Outcome", "Policy", "maybe_auto_compact"]

Pair = tuple[int, int]
Policy = Literal["spill", "halt"]
REPAIRABLE = frozenset({"no_hole"})  # the clauses a spill of [0, n) can make hold


@dataclass(frozen=True, slots=True)
class Outcome:
    """What ``maybe_auto_compact`` did: ``none`` (below threshold), ``compacted`` or ``spilled``."""

    action: Literal["none", "compacted", "spilled"]
    decision: Decision | None = None
    handle: str | None = None
    spilled: Pair | None = None

    @property
    def compacted(self) -> bool:
        """True when the caller should now run the compaction (it is already recorded)."""
        return self.action == "compacted"


def maybe_auto_compact(
    ledger: Ledger,
    *,
    occupancy: int,
    threshold: int,
    summary_input: Pair,
    summary_covers: Pair,
    tail_start: int,
    policy: Policy = "halt",
    store: SpillStore | None = None,
    transcript: Callable[[], bytes] | None = None,
    session: str | None = None,
) -> Outcome:
    """Decide, and on refusal spill or halt, as configured; see the module docstring.

    ``transcript()`` must return the session's full transcript, offsets ``[0, n)`` with
    ``n = ledger.history_end``, as bytes; ``store`` receives it. Both are required for
    ``policy="spill"``.
    """
    if policy not in ("spill", "halt"):
        raise ValueError(f"policy: expected 'spill' or 'halt', got {policy!r}")
    if policy == "spill" and (store is None or transcript is None):
        raise ValueError("policy 'spill' needs a store and a transcript source")
    if occupancy < threshold:
        return Outcome("none")
    i, c, t = summary_input, summary_covers, tail_start
    decision = ledger.decide(summary_input=i, summary_covers=c, tail_start=t)
    if decision.allowed:
        return Outcome("compacted", ledger.commit(summary_input=i, summary_covers=c, tail_start=t))
    sentences = ledger.explain(decision, summary_input=i, summary_covers=c, tail_start=t)
    if policy == "halt":
        raise UnrecoverableCompactionError.from_decision(decision, sentences)
    assert store is not None and transcript is not None
    n = ledger.history_end
    try:
        data = transcript()
        handle = store.put(data, session=session, range=(0, n), unit=ledger.unit)
        if store.get(handle) != data:
            raise OSError(f"spill {handle} did not re-read to the bytes written")
    except Exception as exc:
        error = UnrecoverableCompactionError.from_decision(
            decision, [*sentences, f"spill of [0, {n}) failed, nothing recorded: {exc}"]
        )
        raise error from exc
    ledger.spill(0, n, handle=handle)
    unrepairable = [c for c in decision.failed if c not in REPAIRABLE]
    if unrepairable:
        why = f"spilled [0, {n}) as {handle}, but a spill cannot repair {', '.join(unrepairable)}"
        raise UnrecoverableCompactionError.from_decision(decision, [*sentences, why])
    return Outcome("spilled", decision, handle, (0, n))
