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

Private hooks of ``SummarizationMiddleware`` this module relies on (validated with
langchain 1.5.0 and 1.5.2; see docs/integrations.md): ``_ensure_message_ids``,
``_should_summarize``, ``_determine_cutoff_index``, ``_partition_messages``,
``_trim_messages_for_summary``, ``_create_summary``, ``_acreate_summary``,
``_build_new_messages`` and, where present, ``_overflow_retry_prompt``.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Sequence
from typing import Any, TextIO

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
    raise ImportError(
        "tailguard.adapters.langchain needs LangChain: pip install 'tailguard[langchain]'"
    ) from exc

from tailguard.adapters._guard import CompactionGuard, Resolution
from tailguard.adapters._offsets import AdapterError, Entry, Plan
from tailguard.adapters._spill_tool import encode_run, read_spill
from tailguard.base.vocab import Pair
from tailguard.spill import SpillError, SpillStore

__all__ = ["GuardedSummarizationMiddleware", "messages_from_spill", "spill_reader_tool"]

SUMMARY_ID_PREFIX = "tailguard-summary-"
_trimmed: contextvars.ContextVar[list[list[AnyMessage]] | None] = contextvars.ContextVar(
    "tailguard_langchain_trimmed", default=None)
_overflowed: contextvars.ContextVar[list[bool] | None] = contextvars.ContextVar(
    "tailguard_langchain_overflowed", default=None)


def _is_summary(m: BaseMessage) -> bool:
    return isinstance(m, HumanMessage) and m.additional_kwargs.get("lc_source") == "summarization"


class GuardedSummarizationMiddleware(SummarizationMiddleware):
    """``SummarizationMiddleware`` that refuses a compaction losing what it never summarized."""

    def __init__(
        self,
        model: Any,
        *,
        recovery_floor_span: int,
        floor_unit: str = "messages",
        on_refuse: str = "halt",
        store: SpillStore | str | os.PathLike[str] | None = None,
        log: str | os.PathLike[str] | TextIO | None = None,
        profile: str = "partitioned",
        **kwargs: Any,
    ) -> None:
        super().__init__(model, **kwargs)
        self.guard = CompactionGuard(framework="langchain", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile)
        self._thread: object = None
        self._busy = False
        self._messages: dict[str, AnyMessage] = {}  # every message the guard placed, by id

    # -- the base class's two entry points --------------------------------------------------

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        step = self._begin(state)
        if step is None:
            return None
        try:
            plan, to_summarize, preserved, res = step
            if res.action == "defer":
                return None
            probe = self._probe()
            try:
                summary: str = self._create_summary(to_summarize)
            finally:
                self._end_probe(probe)
            checked = self._check_input(plan, to_summarize, preserved, probe)
            return None if checked is None else self._finish(summary, checked, preserved, res)
        finally:
            self._busy = False

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        step = self._begin(state)
        if step is None:
            return None
        try:
            plan, to_summarize, preserved, res = step
            if res.action == "defer":
                return None
            probe = self._probe()
            try:
                summary = await self._acreate_summary(to_summarize)
            finally:
                self._end_probe(probe)
            checked = self._check_input(plan, to_summarize, preserved, probe)
            return None if checked is None else self._finish(summary, checked, preserved, res)
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

    def _begin(self, state: Any) -> tuple[Plan, list[AnyMessage], list[AnyMessage], Resolution] | None:
        if self._busy:
            raise AdapterError("a compaction of this session is already in progress")
        messages: list[AnyMessage] = state["messages"]
        self._ensure_message_ids(messages)
        self._bind_thread()
        entries = [Entry(str(m.id), _is_summary(m), 0 if _is_summary(m) else self._size(m)) for m in messages]
        self.guard.tracker.observe(entries)
        for m in messages:
            if not _is_summary(m):
                self._messages.setdefault(str(m.id), m)
        total_tokens = self.token_counter(messages)
        if not self._should_summarize(messages, total_tokens):
            return None
        cutoff = self._determine_cutoff_index(messages)
        if cutoff <= 0:
            return None
        to_summarize, preserved = self._partition_messages(messages, cutoff)
        trimmed = self._trim_messages_for_summary(to_summarize)
        plan = self._plan(to_summarize, preserved, trimmed)
        self._busy = True
        try:
            res = self.guard.resolve(plan, self._payload)
        except BaseException:
            self._busy = False
            raise
        return plan, to_summarize, preserved, res

    def _plan(self, to_summarize: Sequence[AnyMessage], preserved: Sequence[AnyMessage],
              trimmed: Sequence[AnyMessage] | None) -> Plan:
        by_id = {str(m.id): m for m in to_summarize}
        shown = [] if trimmed is None else [
            str(t.id) for t in trimmed if t.id is not None and str(t.id) in by_id and t == by_id[str(t.id)]
        ]
        return self.guard.tracker.plan(deleted=[str(m.id) for m in to_summarize], shown=shown,
                                       kept=[str(m.id) for m in preserved])

    def _probe(self) -> tuple[contextvars.Token[Any], contextvars.Token[Any], list[list[AnyMessage]], list[bool]]:
        trims: list[list[AnyMessage]] = []
        flags: list[bool] = []
        return _trimmed.set(trims), _overflowed.set(flags), trims, flags

    @staticmethod
    def _end_probe(probe: tuple[contextvars.Token[Any], contextvars.Token[Any], Any, Any]) -> None:
        _overflowed.reset(probe[1])
        _trimmed.reset(probe[0])

    def _check_input(self, plan: Plan, to_summarize: list[AnyMessage], preserved: list[AnyMessage],
                     probe: Any) -> Plan | None:
        """The summarizer must have been shown what was decided on; else decide again, smaller.

        Returns the plan to commit, or None when the new decision defers.
        """
        trims: list[list[AnyMessage]] = probe[2]
        overflowed: list[bool] = probe[3]
        if overflowed:  # the base class cut the middle out of the prompt: nothing was seen whole
            smaller = self._plan(to_summarize, preserved, None)
            res = self.guard.resolve(smaller, self._payload)
            return None if res.action == "defer" else smaller
        if trims and [(m.id, m) for m in trims[-1]] != [(m.id, m) for m in self._decided_trim(to_summarize)]:
            raise AdapterError("the summarizer was shown other messages than the guard decided on; "
                               "nothing was deleted")
        return plan

    def _decided_trim(self, to_summarize: list[AnyMessage]) -> list[AnyMessage]:
        token = _trimmed.set(None)
        try:
            return self._trim_messages_for_summary(to_summarize)
        finally:
            _trimmed.reset(token)

    def _payload(self, run: Pair) -> bytes:
        return encode_run("langchain", self.guard.unit, run, self.guard.tracker, self._messages,
                          lambda m: messages_to_dict([m])[0])

    def _finish(self, summary: str, plan: Plan, preserved: list[AnyMessage], res: Resolution) -> dict[str, Any]:
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
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), msg, *preserved]}


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

