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
import hashlib
import os
import re
import threading
from collections.abc import Awaitable, Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO, TypeVar

from tailguard._generated.checker import Decision
from tailguard.adapters._offsets import AdapterError, OffsetTracker, Plan
from tailguard.base.args import is_int
from tailguard.base.vocab import Pair, Unit
from tailguard.runtime.ledger import PROFILES, Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tailguard.spill import FileSpillStore, SpillStore

__all__ = [
    "ON_REFUSE", "ON_UNKNOWN_HISTORY", "STEPS", "UNSET", "CompactionGuard", "GuardOptions", "LogArg", "OnRefuse",
    "OnUnknownHistory", "Resolution", "SessionLogs", "StoreArg", "Unset", "arun_steps", "guard_options",
    "log_file_name", "missing_framework", "run_steps",
]

OnRefuse = Literal["halt", "spill", "defer"]
ON_REFUSE: tuple[str, ...] = ("halt", "spill", "defer")
OnUnknownHistory = Literal["adopt", "refuse"]
ON_UNKNOWN_HISTORY: tuple[str, ...] = ("adopt", "refuse")
StoreArg = SpillStore | str | os.PathLike[str] | None
#: A session's log: one file or stream (one session), a directory (one file per session id), or
#: a function from session id to the path of that session's log.
LogArg = str | os.PathLike[str] | TextIO | Callable[[str], "str | os.PathLike[str]"] | None

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
    is where a session's event log goes: a path (new or empty) or a text stream for one
    session, or, for an adapter that serves many sessions, an existing directory (one file per
    session id, :func:`log_file_name`) or a function from session id to path.
    ``on_unknown_history`` is what a guard does when it first meets history it did not record
    (a summary it did not make): ``"adopt"`` records it as unverified (SPEC.md section 11.4)
    and continues, ``"refuse"`` raises.

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
    on_unknown_history: OnUnknownHistory = "adopt"

    def __post_init__(self) -> None:
        span = self.recovery_floor_span
        if not is_int(span) or span < 0:
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
        if self.log is not None and not isinstance(self.log, (str, os.PathLike)) and not hasattr(self.log, "write") \
                and not callable(self.log):
            raise TypeError(f"log: expected a path, a directory, a text stream or a function from session id "
                            f"to path, got {type(self.log).__name__}")
        if self.on_unknown_history not in ON_UNKNOWN_HISTORY:
            raise ValueError(f"on_unknown_history: expected one of {', '.join(map(repr, ON_UNKNOWN_HISTORY))}, "
                             f"got {self.on_unknown_history!r}")


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
        ledger: Ledger | None = None,
        tracker: OffsetTracker | None = None,
        store: SpillStore | None = None,
        owned: TextIO | None = None,
    ) -> None:
        """``ledger`` (and its ``tracker``): a session opened by :class:`SessionLogs` (new or
        restored), whose log the ledger already writes (``owned``: the file to close with it);
        ``store``: the spill store already opened."""
        if options.floor_unit not in units:
            raise ValueError(f"floor_unit: {framework} offsets can be {' or '.join(map(repr, units))}, "
                             f"got {options.floor_unit!r}")
        self.options = options
        self.framework = framework
        self.session = session
        self.store = store if store is not None else _open_store(options.store)
        if ledger is None:
            self._log, self._owned = _open_log(options.log)
            ledger = Ledger(options.recovery_floor_span, unit=options.floor_unit, profile=options.profile,
                            log=self._log)
        else:
            self._log, self._owned = None, owned
        self.ledger = ledger
        self.tracker = tracker if tracker is not None else OffsetTracker(self.ledger)
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
        else:
            self.ledger.close()

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
        done: list[tuple[Pair, str]] = []
        try:
            self.spill_runs(plan.deleted, payload, done)
        except SpillFailed as exc:
            msg = f"{exc}, nothing was deleted: {exc.__cause__}"
            raise UnrecoverableCompactionError.from_decision(decision, [msg]) from exc.__cause__
        return done

    def spill_runs(self, runs: Iterable[Pair], payload: Callable[[Pair], bytes],
                   done: list[tuple[Pair, str]] | None = None) -> list[tuple[Pair, str]]:
        """Write each run's payload to the spill store, check it re-reads to the same bytes, and
        record the spill in the ledger; the runs spilled so far are appended to ``done``. A run
        whose write, re-read or payload fails raises :class:`SpillFailed` (its cause the error)
        after the runs before it were recorded."""
        assert self.store is not None
        done = [] if done is None else done
        for run in runs:
            try:
                data = payload(run)
                handle = self.store.put(data, session=self.session, range=run, unit=self.unit)
                if self.store.get(handle) != data:
                    raise OSError(f"spill {handle} did not re-read to the bytes written")
            except Exception as exc:
                raise SpillFailed(f"spill of [{run[0]}, {run[1]}) failed") from exc
            self.ledger.spill(run[0], run[1], handle=handle)
            done.append((run, handle))
            self.spills.append((run, handle))
        return done


class SpillFailed(Exception):
    """A spill that could not be written or did not re-read (the cause says why)."""


def _open_store(store: StoreArg) -> SpillStore | None:
    if store is None or isinstance(store, SpillStore):
        return store
    return FileSpillStore(store, create=True)


def open_store(store: StoreArg) -> SpillStore | None:
    """The spill store ``GuardOptions.store`` names, opened (a directory becomes a
    :class:`~tailguard.spill.FileSpillStore`)."""
    return _open_store(store)


def log_file_name(session_id: str) -> str:
    """The file name of a session's log in a log directory: a hash of the session id (so two ids
    never share a file, whatever their characters) and a readable slug of it."""
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", session_id).strip("._-")[:48] or "session"
    return f"{digest}-{slug}.jsonl"


_OUTSIDE_LABEL = "<the session of calls outside a graph>"


class SessionLogs:
    """Where each session's event log goes under ``GuardOptions.log``, and opening it.

    - ``None``: no log.
    - a text stream or a file path: **one** session's log. The first session this object opens
      binds it; another session is an :class:`AdapterError` (give a directory or a function).
    - an existing directory (or a path ending in ``/``, created): one file per session id,
      named by :func:`log_file_name`.
    - a function from session id to path: that session's log file.

    A new session's file must be new or empty; its header names ``session_id``. A continued
    session is restored from its snapshot with ``path=`` (the ledger checks that the file ends
    where the snapshot says and appends a ``resume`` line). Thread-safe.
    """

    def __init__(self, log: LogArg) -> None:
        self.log = log
        self._lock = threading.Lock()
        self._bound: str | None = None
        self.kind: Literal["none", "stream", "file", "dir", "func"]
        if log is None:
            self.kind = "none"
        elif isinstance(log, (str, os.PathLike)):
            text = os.fspath(log)
            if text.endswith(("/", os.sep)):
                Path(text).mkdir(parents=True, exist_ok=True)
            self.kind = "dir" if Path(text).is_dir() else "file"
        elif hasattr(log, "write"):
            self.kind = "stream"
        else:
            self.kind = "func"

    @property
    def per_session(self) -> bool:
        """Whether every session gets its own log (a directory or a function)."""
        return self.kind in ("dir", "func")

    def path(self, session_id: str | None) -> Path | None:
        """The log file of ``session_id`` (None for no log or a stream; a session without an id is
        named ``default``)."""
        session_id = "default" if session_id is None else session_id
        if self.kind == "file":
            return Path(self.log)  # type: ignore[arg-type]
        if self.kind == "dir":
            return Path(self.log) / log_file_name(session_id)  # type: ignore[arg-type]
        if self.kind == "func":
            target = self.log(session_id)  # type: ignore[misc,operator]
            if not isinstance(target, (str, os.PathLike)):
                raise TypeError(f"log: the function gave {type(target).__name__} for session {session_id!r}, "
                                "expected a path")
            return Path(target)
        return None

    def _claim(self, session_id: str | None) -> None:
        if self.kind not in ("file", "stream"):
            return
        session_id = _OUTSIDE_LABEL if session_id is None else session_id
        with self._lock:
            if self._bound is None:
                self._bound = session_id
            elif self._bound != session_id:
                where = f"the file {os.fspath(self.log)}" if self.kind == "file" else "one stream"  # type: ignore[arg-type]
                raise AdapterError(f"log: {where} holds the log of one session ({self._bound!r}); session "
                                   f"{session_id!r} needs its own: give log= a directory or a function "
                                   "from session id to path")

    def start(self, options: GuardOptions, session_id: str | None) -> tuple[Ledger, TextIO | None]:
        """A new session's ledger, its log opened (header naming ``session_id``); and the file
        to close with it."""
        self._claim(session_id)
        owned: TextIO | None = None
        stream: TextIO | None = None
        path = self.path(session_id)
        if path is not None:
            if path.exists() and path.stat().st_size > 0:
                raise AdapterError(f"log: {path} already holds a session; a new session {session_id!r} "
                                   "starts a new log (give a new path, or continue the session from its state)")
            path.parent.mkdir(parents=True, exist_ok=True)
            owned = stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 - owned by the guard
        elif self.kind == "stream":
            stream = self.log  # type: ignore[assignment]
        ledger = Ledger(options.recovery_floor_span, unit=options.floor_unit, profile=options.profile,
                        log=stream, session_id=session_id)
        return ledger, owned

    def discard(self, session_id: str | None) -> None:
        """Take back the log of a session that was started and then given up before it recorded
        anything worth keeping (its ledger closed): a per-session file is removed, the one log
        file emptied and unbound. A stream cannot be taken back."""
        path = self.path(session_id)
        if self.kind in ("dir", "func") and path is not None:
            path.unlink(missing_ok=True)
        elif self.kind == "file" and path is not None:
            with self._lock:
                if self._bound == (_OUTSIDE_LABEL if session_id is None else session_id):
                    path.write_bytes(b"")
                    self._bound = None

    def resume(self, snapshot: object, session_id: str | None) -> Ledger:
        """A continued session's ledger from its snapshot (``SnapshotError`` when the snapshot is
        not of ``session_id``, altered, or its log file does not end where it says)."""
        self._claim(session_id)
        path = self.path(session_id)
        if path is not None:
            return Ledger.restore(snapshot, session_id=session_id, path=path)
        if self.kind == "stream":
            return Ledger.restore(snapshot, session_id=session_id, log=self.log)  # type: ignore[arg-type]
        return Ledger.restore(snapshot, session_id=session_id)


def _open_log(log: LogArg) -> tuple[TextIO | None, TextIO | None]:
    """A one-session adapter's log: a file (new or empty) or a stream."""
    if log is None:
        return None, None
    if isinstance(log, (str, os.PathLike)):
        path = Path(log)
        if path.is_dir():
            raise AdapterError(f"log: {path} is a directory; this adapter guards one session: give a file")
        if path.exists() and path.stat().st_size > 0:
            raise AdapterError(f"log: {path} already holds a session; an adapter starts a new one "
                               "(give a new path)")
        stream = open(path, "w", encoding="utf-8")  # noqa: SIM115 - owned by the guard
        return stream, stream
    if not hasattr(log, "write"):
        raise AdapterError("log: this adapter guards one session; give a log file or a stream")
    given: TextIO = log  # type: ignore[assignment]
    return given, None


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
