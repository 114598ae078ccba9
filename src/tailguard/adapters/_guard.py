"""The guard's options, a session's decision with its three outcomes, and the steps around it.

:class:`GuardOptions` is the guard's configuration (floor, unit, profile, ``on_refuse``, spill
store, log): immutable, validated once, and holding no session's state, so one value can
configure every session an adapter guards. :class:`CompactionGuard` is one session under those
options: its :class:`~tailguard.runtime.ledger.Ledger` (profile ``partitioned`` by default), its
event log and spill store as opened, an :class:`~tailguard.adapters._offsets.OffsetTracker` and
the spills so far.

Every adapter takes the same named steps (:data:`STEPS`) for each compaction: it *observes* the
framework's context (offsets by item key), *plans* the compaction the framework is about to run
(a :class:`~tailguard.adapters._offsets.Plan`), *resolves* it with
:meth:`CompactionGuard.resolve` **before anything is deleted**, lets the framework run, then
*confirms* that the framework did what was decided and *applies* it (commits the summary). The
ledger decides (the rule lives there, nothing is restated here). When it refuses, the refusal is
logged and ``on_refuse`` says what happens:

- ``"halt"``: raise :class:`~tailguard.runtime.seed_api.UnrecoverableCompactionError` with the failed
  clauses and the holes; the framework's state is untouched.
- ``"defer"``: skip this compaction (the context grows); the refusal is in the log.
- ``"spill"``: write what the compaction deletes to the store, re-read it, record the spill,
  decide again and proceed. In this mode *every* compaction spills what it deletes, allowed or
  not: a later summarizer that drops this compaction's summary (LangChain's trimmer drops the
  oldest message first) then finds its coverage in a spill instead of a hole. A failed write
  records nothing and halts; a refusal a spill cannot repair (the floor, the tail, the seam)
  halts too.

An adapter whose framework has a sync and an async entry point writes the compaction once, as a
generator that yields where the framework's summarizer runs; :func:`run_steps` and
:func:`arun_steps` drive it with the sync or the async summarizer.

Standard library only.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO, TypeVar

from tailguard._generated.checker import Decision
from tailguard.adapters._offsets import AdapterError, OffsetTracker, Plan
from tailguard.base.vocab import Pair, Unit
from tailguard.runtime.ledger import PROFILES, Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, SpillStore

__all__ = [
    "ON_REFUSE", "STEPS", "UNSET", "CompactionGuard", "GuardOptions", "LogArg", "OnRefuse", "Resolution",
    "StoreArg", "Unset", "arun_steps", "guard_options", "missing_framework", "run_steps",
]

OnRefuse = Literal["halt", "spill", "defer"]
ON_REFUSE: tuple[str, ...] = ("halt", "spill", "defer")
StoreArg = SpillStore | str | os.PathLike[str] | None
LogArg = str | os.PathLike[str] | TextIO | None

#: The named steps of a compaction, in order; every adapter defines each of them (its own
#: arguments: the framework's pieces), and its entry points call them in this order.
STEPS: tuple[str, ...] = ("_observe", "_plan", "_resolve", "_confirm", "_apply")


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


#: The default of an adapter's guard keywords: "not given" (so that ``options=`` and a keyword
#: cannot both be given unnoticed).
UNSET: Final = _Unset.UNSET
Unset = Literal[_Unset.UNSET]


@dataclass(frozen=True, slots=True, kw_only=True)
class GuardOptions:
    """The guard's configuration: what every session an adapter guards shares.

    ``recovery_floor_span`` units (of ``floor_unit``: ``"messages"``, or ``"tokens"`` where the
    framework counts them) must stay verbatim; ``profile`` is the spec profile the ledger
    decides with; ``on_refuse`` is what a refusal does (``"halt"``, ``"spill"`` or
    ``"defer"``); ``store`` is the spill store (a :class:`~tailguard.spill.SpillStore`, or the
    directory of a :class:`~tailguard.spill.FileSpillStore`), required by ``"spill"``; ``log``
    is where a session's event log goes (a path, which must be new or empty, or a text stream).

    Immutable and checked when built (``ValueError``/``TypeError`` name the field). It holds no
    session's state: the ledger, the offsets, the open log and the spills of a session are its
    :class:`CompactionGuard`'s. Whether the framework counts ``floor_unit`` is checked by the
    adapter.
    """

    recovery_floor_span: int
    floor_unit: Unit = "messages"
    on_refuse: OnRefuse = "halt"
    store: StoreArg = None
    log: LogArg = None
    profile: str = "partitioned"

    def __post_init__(self) -> None:
        span = self.recovery_floor_span
        if isinstance(span, bool) or not isinstance(span, int) or span < 0:
            raise ValueError(f"recovery_floor_span: expected an integer >= 0, got {span!r}")
        if not isinstance(self.floor_unit, str):
            raise TypeError(f"floor_unit: expected a unit name (string), got {self.floor_unit!r}")
        if self.on_refuse not in ON_REFUSE:
            raise ValueError(f"on_refuse: expected one of {', '.join(map(repr, ON_REFUSE))}, "
                             f"got {self.on_refuse!r}")
        if self.profile not in PROFILES:
            raise ValueError(f"profile: unknown profile {self.profile!r}; known: {', '.join(PROFILES)}")
        if self.store is not None and not isinstance(self.store, (SpillStore, str, os.PathLike)):
            raise TypeError(f"store: expected a SpillStore or a directory path, got {type(self.store).__name__}")
        if self.on_refuse == "spill" and self.store is None:
            raise ValueError("on_refuse='spill' needs store=: a SpillStore or the directory of a FileSpillStore")
        if self.log is not None and not isinstance(self.log, (str, os.PathLike)) and not hasattr(self.log, "write"):
            raise TypeError(f"log: expected a path or a text stream, got {type(self.log).__name__}")


def guard_options(options: GuardOptions | None, adapter: str, defaults: dict[str, Any] | None = None,
                  **keywords: Any) -> GuardOptions:
    """An adapter's options: ``options`` as given, or built once from the guard keywords.

    ``keywords`` are the adapter's guard keywords as called, :data:`UNSET` where not given;
    ``defaults`` are the adapter's own defaults of those keywords where they differ from
    :class:`GuardOptions`' (the OpenAI Agents SDK's floor of 0). Giving ``options`` and a
    keyword is a ``TypeError``.
    """
    given = {k: v for k, v in keywords.items() if v is not UNSET}
    if options is not None:
        if not isinstance(options, GuardOptions):
            raise TypeError(f"options: expected a GuardOptions, got {type(options).__name__}")
        if given:
            raise TypeError(f"{adapter}: give options= or {', '.join(f'{k}=' for k in sorted(given))}, not both "
                            "(dataclasses.replace(options, ...) changes a field)")
        return options
    chosen = {**(defaults or {}), **given}
    if "recovery_floor_span" not in chosen:
        raise TypeError(f"{adapter}: recovery_floor_span= is required (or options=GuardOptions(...))")
    return GuardOptions(**chosen)


def missing_framework(module: str, framework: str, extra: str, supported: tuple[str, ...]) -> str:
    """The ``ImportError`` message of an adapter whose framework is not installed."""
    return (f"tailguard.adapters.{module} needs {framework}: pip install 'tailguard[{extra}]' "
            f"(validated with {', '.join(supported)})")


@dataclass(slots=True)
class Resolution:
    """What to do with a planned compaction: ``proceed`` (perhaps after spills) or ``defer``."""

    action: Literal["proceed", "defer"]
    decision: Decision
    spills: list[tuple[Pair, str]] = field(default_factory=list)


class CompactionGuard:
    """One session under :class:`GuardOptions`: its ledger, log, store, offsets and spills, and the
    decision with its three outcomes."""

    def __init__(
        self,
        options: GuardOptions,
        *,
        framework: str,
        units: tuple[str, ...] = ("messages", "tokens"),
        session: str | None = None,
    ) -> None:
        if options.floor_unit not in units:
            raise ValueError(f"floor_unit: {framework} offsets can be {' or '.join(map(repr, units))}, "
                             f"got {options.floor_unit!r}")
        self.options = options
        self.framework = framework
        self.session = session
        self.store = _open_store(options.store)
        self._log, self._owned = _open_log(options.log)
        self.ledger = Ledger(options.recovery_floor_span, unit=options.floor_unit, profile=options.profile,
                             log=self._log)
        self.tracker = OffsetTracker(self.ledger)
        self.spills: list[tuple[Pair, str]] = []  #: every spill of the session, oldest first

    @property
    def unit(self) -> str:
        """The unit of the session's offsets (``options.floor_unit``)."""
        return self.options.floor_unit

    @property
    def on_refuse(self) -> str:
        """What a refusal does (``options.on_refuse``)."""
        return self.options.on_refuse

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
    return FileSpillStore(store, create=True)


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
    return log, None


Request = TypeVar("Request")
Answer = TypeVar("Answer")
Result = TypeVar("Result")


def run_steps(steps: Generator[Request, Answer, Result], call: Callable[[Request], Answer]) -> Result:
    """Run an adapter's compaction ``steps``, answering each request it yields with ``call``
    (the framework's sync summarizer). When ``call`` raises, ``steps`` is closed (its cleanup
    runs) and the error propagates."""
    try:
        request = next(steps)
    except StopIteration as done:
        first: Result = done.value
        return first
    while True:
        try:
            answer = call(request)
        except BaseException:
            steps.close()
            raise
        try:
            request = steps.send(answer)
        except StopIteration as done:
            result: Result = done.value
            return result


async def arun_steps(steps: Generator[Request, Answer, Result],
                     call: Callable[[Request], Awaitable[Answer]]) -> Result:
    """:func:`run_steps` with the framework's async summarizer."""
    try:
        request = next(steps)
    except StopIteration as done:
        first: Result = done.value
        return first
    while True:
        try:
            answer = await call(request)
        except BaseException:
            steps.close()
            raise
        try:
            request = steps.send(answer)
        except StopIteration as done:
            result: Result = done.value
            return result
