"""Escalation: the seed's ``maybe_auto_compact``, on the ledger, in the right order.

Below the threshold nothing happens. At or above it the ledger **decides first**; nothing is
recorded until the summary exists:

- **Allowed.** With ``summarize=`` (a callable that produces the summary), it is called, and
  only when it returns is the compaction recorded (``Outcome.action == "compacted"``). A
  summarizer that raises leaves no coverage behind: the exception propagates and the ledger is
  as it was. Without ``summarize``, the outcome is ``"ready"``: produce the summary, then call
  :meth:`Outcome.commit` (two-phase); until then nothing is recorded.
- **Refused.** The attempt is written to the log as a ``refusal`` line (never as coverage), so
  platform teams can count refusals. Then the policy either **halts** (raises
  :class:`UnrecoverableCompactionError` naming the failed clauses and the evicted ranges) or
  **spills**: writes the full transcript ``[0, n)`` to a :class:`~tailguard.spill.SpillStore`,
  re-reads it, records the spill, and decides the same compaction again. If that decision
  allows, it returns ``"spilled"`` without compacting, so the next attempt is allowed; if not
  (a spill repairs only ``no_hole``, theorem T8), it halts naming what is left. The ledger's
  own decision says what a spill repaired: no list of repairable clauses is restated here.

A spill that fails in any way (disk full, permissions, a transcript source that raises, a
re-read that does not match) is never recorded and always halts: a failed spill never leads to
an allowed compaction.

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tailguard._generated.checker import Decision
from tailguard.base.vocab import Pair
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import SpillStore

__all__ = ["Outcome", "Policy", "maybe_auto_compact"]

Policy = Literal["spill", "halt"]
Action = Literal["none", "ready", "compacted", "spilled"]


@dataclass(slots=True)
class Outcome:
    """What ``maybe_auto_compact`` did.

    ``none``: below the threshold. ``ready``: allowed and not yet recorded; produce the summary,
    then :meth:`commit`. ``compacted``: allowed, summarized (``summary`` holds what
    ``summarize()`` returned) and recorded. ``spilled``: refused, the transcript spilled, and
    the same compaction is now allowed: attempt it again.
    """

    action: Action
    decision: Decision | None = None
    handle: str | None = None
    spilled: Pair | None = None
    summary: Any = None
    summary_id: str | None = None
    _commit: Callable[[str | None], Decision] | None = field(default=None, repr=False)

    @property
    def compacted(self) -> bool:
        """True when the compaction is recorded in the ledger."""
        return self.action == "compacted"

    @property
    def allowed(self) -> bool:
        """True when the compaction may go ahead (``ready``) or already went (``compacted``)."""
        return self.action in ("ready", "compacted")

    def commit(self, summary: str | None = None) -> Decision:
        """Phase two of a ``ready`` outcome: the summary exists, record the compaction.

        ``summary`` names it (default: the id given to ``maybe_auto_compact``, else its
        ordinal). The ledger decides again: if anything was recorded in between that makes
        it unsafe, this raises :class:`UnrecoverableCompactionError` and records nothing.
        """
        if self._commit is None:
            raise RuntimeError(f"nothing to commit: the outcome is {self.action!r}, not 'ready'")
        commit, self._commit = self._commit, None
        decision = commit(summary)
        self.action, self.decision = "compacted", decision
        return decision


def maybe_auto_compact(
    ledger: Ledger,
    *,
    occupancy: int,
    threshold: int,
    summary_input: Pair,
    summary_covers: Pair,
    tail_start: int,
    summarize: Callable[[], Any] | None = None,
    summary: str | None = None,
    saw: Sequence[str] | None = None,
    keeps: Sequence[str] = (),
    policy: Policy = "halt",
    store: SpillStore | None = None,
    transcript: Callable[[], bytes] | None = None,
    session: str | None = None,
) -> Outcome:
    """Decide, then summarize and record, or refuse and spill or halt; see the module docstring.

    ``summary``, ``saw`` and ``keeps`` describe the new summary's lineage as in
    :meth:`Ledger.commit`. ``transcript()`` must return the session's full transcript, offsets
    ``[0, n)`` with ``n = ledger.history_end``, as bytes; ``store`` receives it. Both are
    required for ``policy="spill"``.
    """
    if policy not in ("spill", "halt"):
        raise ValueError(f"policy: expected 'spill' or 'halt', got {policy!r}")
    if policy == "spill" and (store is None or transcript is None):
        raise ValueError("policy 'spill' needs a store and a transcript source")
    if occupancy < threshold:
        return Outcome("none")
    shape: dict[str, Any] = {"summary_input": summary_input, "summary_covers": summary_covers,
                             "tail_start": tail_start}
    lineage: dict[str, Any] = {"saw": saw, "keeps": keeps}
    decision = ledger.decide(**shape, **lineage)
    if decision.allowed:
        def commit(sid: str | None) -> Decision:
            return ledger.commit(**shape, **lineage, summary=sid if sid is not None else summary)

        if summarize is None:
            return Outcome("ready", decision, _commit=commit)
        sid = summary if summary is not None else ledger.next_summary_id
        result = summarize()  # raises: nothing was recorded
        return Outcome("compacted", commit(summary), summary=result, summary_id=sid)
    sentences = ledger.explain(decision, **shape, **lineage)
    ledger.log_refusal(decision, **shape)
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
    after = ledger.decide(**shape, **lineage)
    if not after.allowed:
        why = (f"spilled [0, {n}) as {handle}, but the compaction is still refused: a spill cannot "
               f"repair {', '.join(after.failed)}")
        raise UnrecoverableCompactionError.from_decision(after, [*sentences, why])
    return Outcome("spilled", decision, handle, (0, n))
