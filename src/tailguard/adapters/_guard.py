"""The decision every adapter makes, and its three outcomes.

:class:`CompactionGuard` owns a session's :class:`~tailguard.runtime.ledger.Ledger` (profile
``partitioned`` by default), its event log and its spill store, and an
:class:`~tailguard.adapters._offsets.OffsetTracker`. For each compaction the adapter builds a
:class:`~tailguard.adapters._offsets.Plan` and calls :meth:`CompactionGuard.resolve`
**before anything is deleted**; the ledger decides (the rule lives there, nothing is restated
here). When it refuses, the refusal is logged and ``on_refuse`` says what happens:

- ``"halt"``: raise :class:`~tailguard.runtime.seed_api.UnrecoverableCompactionError` with the failed
  clauses and the holes; the framework's state is untouched.
- ``"defer"``: skip this compaction (the context grows); the refusal is in the log.
- ``"spill"``: write what the compaction deletes to the store, re-read it, record the spill,
  decide again and proceed. In this mode *every* compaction spills what it deletes, allowed or
  not: a later summarizer that drops this compaction's summary (LangChain's trimmer drops the
  oldest message first) then finds its coverage in a spill instead of a hole. A failed write
  records nothing and halts; a refusal a spill cannot repair (the floor, the tail, the seam)
  halts too.

Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

from tailguard._generated.checker import Decision
from tailguard.adapters._offsets import AdapterError, OffsetTracker, Plan
from tailguard.base.args import is_int
from tailguard.base.vocab import Pair
from tailguard.runtime.ledger import PROFILES, Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, SpillStore

__all__ = ["ON_REFUSE", "CompactionGuard", "OnRefuse", "Resolution"]

OnRefuse = Literal["halt", "spill", "defer"]
ON_REFUSE: tuple[str, ...] = ("halt", "spill", "defer")
StoreArg = SpillStore | str | os.PathLike[str] | None
LogArg = str | os.PathLike[str] | TextIO | None


@dataclass(slots=True)
class Resolution:
    """What to do with a planned compaction: ``proceed`` (perhaps after spills) or ``defer``."""

    action: Literal["proceed", "defer"]
    decision: Decision
    spills: list[tuple[Pair, str]] = field(default_factory=list)


class CompactionGuard:
    """A session's ledger, log, store and offsets, and the decision with its three outcomes."""

    def __init__(
        self,
        *,
        framework: str,
        recovery_floor_span: int,
        floor_unit: str,
        on_refuse: str = "halt",
        store: StoreArg = None,
        log: LogArg = None,
        profile: str = "partitioned",
        units: tuple[str, ...] = ("messages", "tokens"),
        session: str | None = None,
    ) -> None:
        if not is_int(recovery_floor_span) or recovery_floor_span < 0:
            raise ValueError(f"recovery_floor_span: expected an integer >= 0, got {recovery_floor_span!r}")
        if floor_unit not in units:
            raise ValueError(f"floor_unit: {framework} offsets can be {' or '.join(map(repr, units))}, "
                             f"got {floor_unit!r}")
        if on_refuse not in ON_REFUSE:
            raise ValueError(f"on_refuse: expected one of {', '.join(map(repr, ON_REFUSE))}, got {on_refuse!r}")
        if profile not in PROFILES:
            raise ValueError(f"profile: unknown profile {profile!r}; known: {', '.join(PROFILES)}")
        self.framework = framework
        self.on_refuse: str = on_refuse
        self.unit = floor_unit
        self.session = session
        self.store = _open_store(store)
        if on_refuse == "spill" and self.store is None:
            raise ValueError("on_refuse='spill' needs store=: a SpillStore or the directory of a FileSpillStore")
        self._log, self._owned = _open_log(log)
        self.ledger = Ledger(recovery_floor_span, unit=floor_unit, profile=profile, log=self._log)
        self.tracker = OffsetTracker(self.ledger)
        self.spills: list[tuple[Pair, str]] = []  #: every spill of the session, oldest first

    def close(self) -> None:
        """Close the log file this guard opened (a stream you passed stays yours)."""
        if self._owned is not None:
            self._owned.close()
            self._owned = None

    def resolve(self, plan: Plan, payload: Callable[[Pair], bytes]) -> Resolution:
        """Decide ``plan`` before anything is deleted; ``payload(run)`` gives a run's spill bytes."""
        led = self.ledger
        args = plan.ledger_args()
        decision = led.decide(**args)  # type: ignore[arg-type]
        if not decision.allowed:
            sentences = led.explain(decision, **args)  # type: ignore[arg-type]
            led.log_refusal(decision, summary_input=plan.summary_input,
                            summary_covers=plan.summary_covers, tail_start=plan.tail_start)
            if self.on_refuse == "halt":
                raise UnrecoverableCompactionError.from_decision(decision, sentences)
            if self.on_refuse == "defer":
                return Resolution("defer", decision)
        if self.on_refuse != "spill":
            return Resolution("proceed", decision)
        done = self._spill(plan, payload, decision)
        after = led.decide(**args)  # type: ignore[arg-type]
        if not after.allowed:
            sentences = led.explain(after, **args)  # type: ignore[arg-type]
            why = f"a spill cannot repair {', '.join(after.failed)}; nothing was deleted"
            raise UnrecoverableCompactionError.from_decision(after, [*sentences, why])
        return Resolution("proceed", decision, done)

    def _spill(self, plan: Plan, payload: Callable[[Pair], bytes], decision: Decision) -> list[tuple[Pair, str]]:
        assert self.store is not None
        done: list[tuple[Pair, str]] = []
        for run in plan.deleted:
            try:
                data = payload(run)
                handle = self.store.put(data, session=self.session, range=run, unit=self.unit)
                if self.store.get(handle) != data:
                    raise OSError(f"spill {handle} did not re-read to the bytes written")
            except Exception as exc:
                msg = f"spill of [{run[0]}, {run[1]}) failed, nothing was deleted: {exc}"
                raise UnrecoverableCompactionError.from_decision(decision, [msg]) from exc
            self.ledger.spill(run[0], run[1], handle=handle)
            done.append((run, handle))
            self.spills.append((run, handle))
        return done


def _open_store(store: StoreArg) -> SpillStore | None:
    if store is None or isinstance(store, SpillStore):
        return store
    if isinstance(store, (str, os.PathLike)):
        return FileSpillStore(store, create=True)
    raise TypeError(f"store: expected a SpillStore or a directory path, got {type(store).__name__}")


def _open_log(log: LogArg) -> tuple[TextIO | None, TextIO | None]:
    if log is None:
        return None, None
    if isinstance(log, (str, os.PathLike)):
        path = Path(log)
        if path.exists() and path.stat().st_size > 0:
            raise AdapterError(f"log: {path} already holds a session; an adapter starts a new one "
                               "(give a new path)")
        stream = open(path, "w", encoding="utf-8")  # noqa: SIM115 - owned by the guard
        return stream, stream
    if hasattr(log, "write"):
        return log, None
    raise TypeError(f"log: expected a path or a text stream, got {type(log).__name__}")
