"""The guard inside LangChain v1's ``SummarizationMiddleware``.

``GuardedSummarizationMiddleware`` is a drop-in subclass: every keyword of the base class, plus
``recovery_floor_span``, ``floor_unit``, ``on_refuse``, ``store``, ``log`` and ``profile``.
Before the base class would return its update (``RemoveMessage(REMOVE_ALL_MESSAGES)``, the
summary, the kept messages), the guard has

- given every message offsets by its id (one per message, or its token count with
  ``floor_unit="tokens"``), and recorded messages someone else removed as truncations;
- taken the summarizer's input from the trimmed list the base class hands its summarizer
  (``_trim_messages_for_summary``); a message the trimmer cut part-way (``allow_partial=True``
  keeps the id and cuts the content) is unseen, and so is the whole input when the base class
  falls back to cutting the middle out of the prompt (``_overflow_retry_prompt``);
- recorded whether the earlier summary (the message with ``lc_source == "summarization"``)
  reached the summarizer whole (lineage: ``saw``);
- decided, **before anything is deleted**: ``halt`` raises ``UnrecoverableCompactionError``
  and the graph state stays as it was, ``spill`` writes the messages about to be deleted to
  the store and proceeds, ``defer`` skips this compaction and logs the refusal.

The summary message gets the id ``tailguard-summary-<id>`` and carries every spill handle of
the session (in its text and in ``additional_kwargs["tailguard"]``); ``spill_reader_tool(store)``
is a tool the agent calls with a handle to read the spilled messages back.

One middleware guards one session (one LangGraph thread): a second thread raises.

The guard's options are one :class:`~tailguard.adapters._guard.GuardOptions` (``options=``), or
the keywords above, from which it is built once; giving both is a ``TypeError``. A compaction
takes the adapters' named steps (``_observe``, ``_plan``, ``_resolve``, ``_confirm``,
``_apply``), written once for ``before_model`` and ``abefore_model``: they differ only in the
summarizer they hand it (``_create_summary`` or ``_acreate_summary``).

Validated with the versions in :data:`SUPPORTED` (the LangChain preset's ``validated_on``). Private
hooks of ``SummarizationMiddleware`` this module relies on (see docs/integrations.md):
``_ensure_message_ids``, ``_should_summarize``, ``_determine_cutoff_index``,
``_partition_messages``, ``_trim_messages_for_summary``, ``_create_summary``,
``_acreate_summary``, ``_build_new_messages`` and, where present, ``_overflow_retry_prompt``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tailguard.adapters._guard import (
    UNSET,
    CompactionGuard,
    GuardOptions,
    LogArg,
    Resolution,
    StoreArg,
    Unset,
    arun_steps,
    guard_options,
    missing_framework,
    run_steps,
)
from tailguard.adapters._offsets import AdapterError, Entry, Plan
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.langchain import PRESET
from tailguard.spill import SpillError, SpillStore

try:
    from langchain.agents.middleware.summarization import SummarizationMiddleware
    from langchain_core.messages import (
        AnyMessage,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        messages_from_dict,
        messages_to_dict,
    )
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("langchain", "LangChain", "langchain", PRESET.validated_on)) from exc

__all__ = ["SUPPORTED", "GuardedSummarizationMiddleware", "messages_from_spill", "spill_reader_tool"]

#: The versions this adapter is validated with: the LangChain preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

SUMMARY_ID_PREFIX = "tailguard-summary-"
_trimmed: contextvars.ContextVar[list[list[AnyMessage]] | None] = contextvars.ContextVar(
    "tailguard_langchain_trimmed", default=None)
_overflowed: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "tailguard_langchain_overflowed", default=None)


def _is_summary(m: BaseMessage) -> bool:
    return isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_source") == "summarization"


@dataclass(frozen=True, slots=True)
class _Probe:
    """What the base class's hooks report while the summarizer runs: each list the trimmer
    returned, and whether the overflow retry cut the middle out of the prompt."""

    trims: list[list[AnyMessage]]
    overflowed: list[bool]


@contextmanager
def _probing() -> Iterator[_Probe]:
    probe = _Probe([], [])
    trimmed, overflowed = _trimmed.set(probe.trims), _overflowed.set(probe.overflowed)
    try:
        yield probe
    finally:
        _overflowed.reset(overflowed)
        _trimmed.reset(trimmed)


@dataclass(frozen=True, slots=True)
class _Compaction:
    """One compaction between its decision and its update: the plan and the base class's
    partition of the messages."""

    plan: Plan
    to_summarize: list[AnyMessage]
    preserved: list[AnyMessage]


class GuardedSummarizationMiddleware(SummarizationMiddleware):
    """``SummarizationMiddleware`` that refuses a compaction losing what it never summarized."""

    def __init__(
        self,
        model: Any,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        self.options = guard_options(options, "GuardedSummarizationMiddleware",
                                     recovery_floor_span=recovery_floor_span, floor_unit=floor_unit,
                                     on_refuse=on_refuse, store=store, log=log, profile=profile)
        self.guard = CompactionGuard(self.options, framework="langchain")
        self._thread: object = None
        self._busy = False
        self._messages: dict[str, AnyMessage] = {}  # every message the guard placed, by id

    # -- the base class's two entry points, one body ----------------------------------------

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return run_steps(self._compaction(state), self._create_summary)

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return await arun_steps(self._compaction(state), self._acreate_summary)

    def _compaction(self, state: Any) -> Generator[list[AnyMessage], str, dict[str, Any] | None]:
        """The steps of one call; yields what the summarizer is given and receives its summary."""
        if self._busy:
            raise AdapterError("a compaction of this session is already in progress")
        messages: list[AnyMessage] = state["messages"]
        self._observe(messages)
        total_tokens = self.token_counter(messages)
        if not self._should_summarize(messages, total_tokens):
            return None
        cutoff = self._determine_cutoff_index(messages)
        if cutoff <= 0:
            return None
        to_summarize, preserved = self._partition_messages(messages, cutoff)
        plan = self._plan(to_summarize, preserved, self._trim_messages_for_summary(to_summarize))
        self._busy = True
        try:
            res = self._resolve(plan)
            if res.action == "defer":
                return None
            compaction = _Compaction(plan, to_summarize, preserved)
            with _probing() as probe:
                summary = yield to_summarize
            confirmed = self._confirm(compaction, probe)
            return None if confirmed is None else self._apply(compaction, confirmed, summary)
        finally:
            self._busy = False

    # -- hooks: what the summarizer was really shown ----------------------------------------

    def _trim_messages_for_summary(self, messages: list[AnyMessage]) -> list[AnyMessage]:
        out: list[AnyMessage] = super()._trim_messages_for_summary(messages)
        record = _trimmed.get()
        if record is not None:
            record.append(list(out))
        return out

    def _overflow_retry_prompt(self, messages: list[AnyMessage]) -> str | None:
        record = _overflowed.get()
        if record is not None:
            record.append(True)
        parent = getattr(super(), "_overflow_retry_prompt", None)
        if parent is None:
            return None
        prompt: str | None = parent(messages)
        return prompt

    # -- the steps ------------------------------------------------------------------------

    def _observe(self, messages: list[AnyMessage]) -> None:
        """Offsets for new messages (by id); messages someone else removed become truncations."""
        self._ensure_message_ids(messages)
        self._bind_thread()
        entries = [Entry(str(m.id), _is_summary(m), 0 if _is_summary(m) else self._size(m)) for m in messages]
        self.guard.tracker.observe(entries)
        for m in messages:
            if not _is_summary(m):
                self._messages.setdefault(str(m.id), m)

    def _plan(self, to_summarize: Sequence[AnyMessage], preserved: Sequence[AnyMessage],
              trimmed: Sequence[AnyMessage] | None) -> Plan:
        """The compaction deleting ``to_summarize``, its summarizer shown ``trimmed`` (what of it is
        whole: same id, same message), keeping ``preserved``."""
        by_id = {str(m.id): m for m in to_summarize}
        shown = [] if trimmed is None else [
            str(t.id) for t in trimmed if t.id is not None and str(t.id) in by_id and t == by_id[str(t.id)]
        ]
        return self.guard.tracker.plan(deleted=[str(m.id) for m in to_summarize], shown=shown,
                                       kept=[str(m.id) for m in preserved])

    def _resolve(self, plan: Plan) -> Resolution:
        return self.guard.resolve(plan, self._payload)

    def _confirm(self, compaction: _Compaction, probe: _Probe) -> Plan | None:
        """The summarizer must have been shown what was decided on; else decide again, smaller.

        Returns the plan to commit, or None when the new decision defers.
        """
        if probe.overflowed:  # the base class cut the middle out of the prompt: nothing was seen whole
            smaller = self._plan(compaction.to_summarize, compaction.preserved, None)
            res = self._resolve(smaller)
            return None if res.action == "defer" else smaller
        if probe.trims and [(m.id, m) for m in probe.trims[-1]] != [
                (m.id, m) for m in self._decided_trim(compaction.to_summarize)]:
            raise AdapterError("the summarizer was shown other messages than the guard decided on; "
                               "nothing was deleted")
        return compaction.plan

    def _apply(self, compaction: _Compaction, plan: Plan, summary: str) -> dict[str, Any]:
        """Commit ``plan`` with the summary message; the update the base class would return."""
        new = self._build_new_messages(summary)
        if len(new) != 1 or not _is_summary(new[0]):
            raise AdapterError("SummarizationMiddleware._build_new_messages no longer returns one "
                               "summary message; this LangChain version is not supported")
        msg = new[0]
        sid = self.guard.ledger.next_summary_id
        msg.id = SUMMARY_ID_PREFIX + sid
        spills = self.guard.spills
        if spills:
            lines = "\n".join(f"- offsets [{lo}, {hi}): {h}" for (lo, hi), h in spills)
            msg.content = (f"{msg.content}\n\n[tailguard] Earlier messages were spilled losslessly "
                           f"before they left the context; call read_spilled_messages with a handle to "
                           f"read them back:\n{lines}")
        msg.additional_kwargs["tailguard"] = {
            "summary": sid, "unit": self.guard.unit,
            "spills": [{"range": [lo, hi], "handle": h} for (lo, hi), h in spills],
        }
        self.guard.tracker.commit(plan, key=str(msg.id), summary=sid)
        for key in plan.deleted_keys:  # spilled (or not needed) once deleted
            self._messages.pop(key, None)
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), msg, *compaction.preserved]}

    # -- helpers --------------------------------------------------------------------------

    def _size(self, m: AnyMessage) -> int:
        if self.guard.unit == "messages":
            return 1
        counter: Any = getattr(self, "_partial_token_counter", None) or self.token_counter
        return int(counter([m]))

    def _bind_thread(self) -> None:
        try:
            from langgraph.config import get_config

            thread = get_config().get("configurable", {}).get("thread_id")
        except (ImportError, RuntimeError):
            return  # called outside a graph run (tests, direct calls)
        if thread is None:
            return
        if self._thread is None:
            self._thread = thread
        elif thread != self._thread:
            raise AdapterError(f"this guard records the session of thread {self._thread!r}, not "
                               f"{thread!r}: create one GuardedSummarizationMiddleware per thread")

    def _decided_trim(self, to_summarize: list[AnyMessage]) -> list[AnyMessage]:
        token = _trimmed.set(None)
        try:
            return self._trim_messages_for_summary(to_summarize)
        finally:
            _trimmed.reset(token)

    def _payload(self, run: Pair) -> bytes:
        return encode_run("langchain", self.guard.unit, run, self.guard.tracker, self._messages,
                          lambda m: messages_to_dict([m])[0])


def messages_from_spill(store: SpillStore, handle: str) -> list[BaseMessage]:
    """The LangChain messages of a spill, as they were before they were deleted."""
    doc = read_spill(store, handle)
    if doc.get("framework") != "langchain":
        raise ValueError(f"spill {handle} was written by {doc.get('framework')!r}, not langchain")
    return list(messages_from_dict([x["item"] for x in doc["items"]]))


def spill_reader_tool(store: SpillStore, *, name: str = "read_spilled_messages") -> BaseTool:
    """A LangChain tool the agent calls with a spill handle to read the spilled messages back.

    It returns the spill's bytes as stored (canonical JSON: offsets, message ids and
    ``messages_to_dict`` of each message), or a one-line reason when the handle is unusable.
    """

    def read_spilled_messages(handle: str) -> str:
        """Read back messages the context guard spilled before they were deleted.

        Args:
            handle: the spill handle named in the conversation summary ("sha256:...").
        """
        try:
            data = store.get(handle.strip())
            doc = read_spill(store, handle.strip())
        except (SpillError, ValueError) as exc:
            return f"cannot read spill {handle!r}: {exc}"
        if doc.get("framework") != "langchain":
            return f"cannot read spill {handle!r}: it holds {doc.get('framework')!r} items"
        return data.decode("utf-8")

    return StructuredTool.from_function(read_spilled_messages, name=name)

