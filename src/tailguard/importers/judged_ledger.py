"""The fleet audit's record of an imported session, judged by the ledger the import builds.

``tailguard audit --from FORMAT`` with a fleet option imports each session and audits it: the
import replays what the framework persisted into a :class:`~tailguard.runtime.ledger.Ledger`,
which writes the event log, and the audit then parses that log and replays it through a
second ledger core (:func:`tailguard.audit.replay.replay`) to judge every compaction against the
state before it. The import's ledger already holds that state: its core
(:class:`~tailguard.runtime.ledger_core.LedgerCore`, with ``track_origins`` on, numbering its
events by their line in the log) is fed the same events in the same order, by direct calls
instead of through the log's dispatch. :class:`JudgingLedger` judges each compaction on it
before recording it, exactly as the replay does (``LedgerCore.decide`` with the audit's
profile, then, for a refused one, the explanation and the lines of the truncations behind its
holes), and :meth:`JudgingLedger.record` gives the fleet record the audit of the written log
gives (:func:`tailguard.audit.fleet.record.audit_lines`), without writing, parsing and
replaying the log.

Only for the profiles a ledger core of the import decides (``strict``, ``partitioned``): the
``seed`` profile needs a core built for it, so there the log is written and audited as before.
``tests/importers/test_judged_ledger.py`` checks, for every real-agent thread of the importer
tests and the benchmark's, with and without knobs and for each profile, that the record is the
one the audit of the imported log gives and that the import still writes the same log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tailguard.audit.fleet.record import Hole, Record
from tailguard.audit.replay import hole_truncation_lines
from tailguard.base.vocab import NO_HOLE, Pair
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.ledger_explain import explain

__all__ = ["JUDGED_PROFILES", "JudgingLedger"]

#: the profiles an import's ledger core can judge with (not ``seed``: it needs a seed core)
JUDGED_PROFILES = ("strict", "partitioned")


class JudgingLedger(Ledger):
    """A :class:`Ledger` that also judges each compaction it records with ``judge``'s profile,
    as ``tailguard audit`` judges that compaction's log line."""

    def __init__(self, *args: Any, judge: str, **kwargs: Any) -> None:
        if judge not in JUDGED_PROFILES:
            raise ValueError(f"judge: the import's ledger judges only {', '.join(JUDGED_PROFILES)}, not {judge!r}")
        super().__init__(*args, **kwargs)
        self.judge = judge
        self.compactions = 0
        self.refused = 0
        self.holes: list[Hole] = []
        self.adopted: list[list[int]] = []

    def adopt(self, count: int, *, reason: str, summary: str | None = None) -> str:
        sid = super().adopt(count, reason=reason, summary=summary)
        if count > 0:
            self.adopted.append([0, count])
        return sid

    def commit(
        self, *, summary_input: Pair, summary_covers: Pair, tail_start: int, summary: str | None = None,
        saw: Sequence[str] | None = None, keeps: Sequence[str] = (), override: str | None = None,
    ) -> Any:
        line = self._line + 1  # the line its log line gets
        core = self.core
        i, c = (summary_input[0], summary_input[1]), (summary_covers[0], summary_covers[1])
        saw_t, keeps_t = (None if saw is None else tuple(saw)), tuple(keeps)
        decision = core.decide(self.judge, tail_start, i, c, saw_t, keeps_t)
        holes: list[Hole] = []
        if not decision.allowed:
            sentences = dict(s.split(": ", 1) for s in explain(core, self.judge, decision, tail_start, i, c,
                                                                saw_t, keeps_t))
            truncated_at = list(hole_truncation_lines(core, decision))
            for clause in decision.failed:
                hole = clause == NO_HOLE
                holes.append({"line": line, "clause": clause, "ranges": [list(h) for h in decision.holes] if hole
                              else [], "truncated_at": truncated_at if hole else [],
                              "why": sentences.get(clause, "")})
        result = super().commit(summary_input=summary_input, summary_covers=summary_covers, tail_start=tail_start,
                                summary=summary, saw=saw, keeps=keeps, override=override)
        self.compactions += 1  # recorded: the log holds its line
        if not decision.allowed:
            self.refused += 1
            self.holes += holes
        return result

    def record(self, source: str) -> Record:
        """The fleet audit's record of the log this ledger wrote (or would have written)."""
        return {"source": source, "events": self._line, "compactions": self.compactions, "refusals": self.refused,
                "logged_refusals": self.refusals, "holes": self.holes, "unverified": self.adopted, "error": None,
                "warning": None}
