"""The guard around langmem's ``summarize_messages`` and ``SummarizationNode``.

langmem summarizes the oldest unsummarized messages once they pass
``max_tokens_before_summary``, but shows its model only the newest ``max_tokens`` of them
(``trim_messages(..., allow_partial=True)``) and then marks **every** one of them summarized:
they leave the model's context. ``GuardedSummarizer.summarize_messages`` takes the same
arguments, works out first what langmem will mark and what its model will be shown (langmem's
own ``_preprocess_messages`` and ``_adjust_messages_before_summarization``), decides before
the model is called, then runs the real ``summarize_messages`` with the model wrapped in a
recorder and checks that the model was shown exactly that. Offsets are given by message id; the
running summary is the one summary in the context, always shown whole to the next summarizer
(langmem passes it in the prompt). ``halt`` raises, ``defer`` returns the messages with the
running summary unchanged (nothing newly marked), ``spill`` writes the messages about to be
marked to the store first. ``GuardedSummarizationNode`` is ``SummarizationNode`` with the guard.

The guard's options are one :class:`~tailguard.adapters._guard.GuardOptions` (``options=``), or
the keywords, from which it is built once; giving both is a ``TypeError``. A call takes the
adapters' named steps (``_observe``, ``_plan``, ``_resolve``, ``_confirm``, ``_apply``), written
once for ``summarize_messages`` and ``asummarize_messages``: they differ only in which of
langmem's two functions runs the summary.

Validated with the versions in :data:`SUPPORTED` (the langmem preset's ``validated_on``).
Private functions of langmem this module relies on:
``langmem.short_term.summarization._preprocess_messages``,
``_adjust_messages_before_summarization`` and ``_prepare_summarization_result``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Sequence
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
from tailguard.adapters._spill_tool import encode_run
from tailguard.base.vocab import Pair
from tailguard.pipeline.presets.langmem import PRESET

try:
    from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage, messages_to_dict
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import RunnableLambda
    from langmem.short_term import summarization as _lm
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(missing_framework("langmem", "langmem", "langmem", PRESET.validated_on)) from exc

__all__ = ["SUPPORTED", "GuardedSummarizationNode", "GuardedSummarizer"]

#: The versions this adapter is validated with: the langmem preset's ``validated_on``.
SUPPORTED: tuple[str, ...] = PRESET.validated_on

SUMMARY_KEY = "langmem-summary:"


_KWARGS = frozenset({"max_tokens", "max_tokens_before_summary", "max_summary_tokens", "token_counter",
                     "initial_summary_prompt", "existing_summary_prompt", "final_prompt"})


@dataclass(frozen=True, slots=True)
class _Compaction:
    """One call between its decision and langmem's result: the plan, langmem's preprocessing
    (what it will mark) and what its model will be shown."""

    plan: Plan
    pre: Any  # langmem's PreprocessedMessages
    shown: list[BaseMessage]


class GuardedSummarizer:
    """One langmem session's guard: call :meth:`summarize_messages` where you called langmem's."""

    def __init__(
        self,
        *,
        options: GuardOptions | None = None,
        recovery_floor_span: int | Unset = UNSET,
        floor_unit: str | Unset = UNSET,
        on_refuse: str | Unset = UNSET,
        store: StoreArg | Unset = UNSET,
        log: LogArg | Unset = UNSET,
        profile: str | Unset = UNSET,
    ) -> None:
        self.options = guard_options(options, "GuardedSummarizer", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile)
        self.guard = CompactionGuard(self.options, framework="langmem")
        self._messages: dict[str, BaseMessage] = {}

    def summarize_messages(self, messages: list[AnyMessage], *, running_summary: Any, model: Any,
                           **kwargs: Any) -> Any:
        """``langmem.short_term.summarize_messages`` with the guard; same arguments, same result."""

        def call(m: Any) -> Any:
            return _lm.summarize_messages(messages, running_summary=running_summary, model=m, **kwargs)

        return run_steps(self._compaction(messages, running_summary, model, kwargs), call)

    async def asummarize_messages(self, messages: list[AnyMessage], *, running_summary: Any, model: Any,
                                  **kwargs: Any) -> Any:
        """``langmem.short_term.asummarize_messages`` with the guard."""

        async def call(m: Any) -> Any:
            return await _lm.asummarize_messages(messages, running_summary=running_summary, model=m, **kwargs)

        return await arun_steps(self._compaction(messages, running_summary, model, kwargs), call)

    def _compaction(self, messages: list[AnyMessage], running: Any, model: Any,
                    kwargs: dict[str, Any]) -> Generator[Any, Any, Any]:
        """The steps of one call; yields the model langmem is to run with, receives its result."""
        unknown = set(kwargs) - _KWARGS
        if unknown:
            raise TypeError(f"summarize_messages: unexpected keyword arguments {sorted(unknown)}")
        if "max_tokens" not in kwargs:
            raise TypeError("summarize_messages: max_tokens is required")
        counter = kwargs.get("token_counter", count_tokens_approximately)
        live = self._observe(messages, running, counter)
        pre = _lm._preprocess_messages(
            messages=messages, running_summary=running, max_tokens=kwargs["max_tokens"],
            max_tokens_before_summary=kwargs.get("max_tokens_before_summary"),
            max_summary_tokens=kwargs.get("max_summary_tokens", 256), token_counter=counter)
        if not pre.messages_to_summarize:
            return (yield model)  # nothing to summarize: langmem runs as it is
        shown = _lm._adjust_messages_before_summarization(pre, counter)
        plan = self._plan(pre, shown, live, running)
        res = self._resolve(plan)
        if res.action == "defer":
            return self._unchanged(messages, running, pre, kwargs)
        compaction = _Compaction(plan, pre, shown)
        seen: list[Any] = []
        result = yield _recorder(model, seen)
        return self._apply(self._confirm(compaction, running, result, seen), result)

    # -- the steps ------------------------------------------------------------------------

    def _observe(self, messages: list[AnyMessage], running: Any, counter: Any) -> list[AnyMessage]:
        """Offsets by message id for the messages not yet summarized (returned), and the running
        summary as the one summary in the context."""
        body = messages[1:] if messages and isinstance(messages[0], SystemMessage) else list(messages)
        for i, m in enumerate(body):
            if m.id is None:
                raise AdapterError(f"message {i} has no id; langmem and the guard need message ids")
        done: set[str] = set(running.summarized_message_ids) if running is not None else set()
        live = [m for m in body if m.id not in done]
        by_tokens = self.guard.unit == "tokens"
        entries = [Entry(k, True, 0) for k in _summary_keys(running)]
        entries += [Entry(str(m.id), False, int(counter([m])) if by_tokens else 1) for m in live]
        self.guard.tracker.observe(entries)
        for m in live:
            self._messages.setdefault(str(m.id), m)
        return live

    def _plan(self, pre: Any, shown: Sequence[BaseMessage], live: Sequence[AnyMessage], running: Any) -> Plan:
        """The compaction marking ``pre.messages_to_summarize``, its model shown ``shown`` (what of
        it is whole) and the running summary, keeping the rest of ``live``."""
        marked = {str(m.id) for m in pre.messages_to_summarize}
        by_id = {str(m.id): m for m in pre.messages_to_summarize}
        shown_keys = [str(m.id) for m in shown if str(m.id) in by_id and m == by_id[str(m.id)]]
        summary_keys = _summary_keys(running)
        return self.guard.tracker.plan(
            deleted=[*summary_keys, *(str(m.id) for m in pre.messages_to_summarize)],
            shown=[*summary_keys, *shown_keys],  # the running summary is always in the prompt
            kept=[str(m.id) for m in live if str(m.id) not in marked])

    def _resolve(self, plan: Plan) -> Resolution:
        return self.guard.resolve(plan, self._payload)

    def _confirm(self, compaction: _Compaction, running: Any, result: Any, seen: list[Any]) -> Plan:
        """langmem must have summarized once, marked what was decided and shown its model what was
        decided; else nothing is recorded."""
        new = result.running_summary
        if new is None or len(seen) != 1:
            raise AdapterError("langmem did not summarize as planned; nothing was recorded")
        before = set(running.summarized_message_ids) if running is not None else set()
        marked = {str(m.id) for m in compaction.pre.messages_to_summarize}
        if set(new.summarized_message_ids) - before != marked:
            raise AdapterError("langmem marked other messages summarized than the guard decided on")
        prompt = seen[0]
        prompt_messages = list(prompt.to_messages() if hasattr(prompt, "to_messages") else prompt)
        if not all(any(p == m for p in prompt_messages) for m in compaction.shown):
            raise AdapterError("langmem's model was not shown the messages the guard decided on")
        return compaction.plan

    def _apply(self, plan: Plan, result: Any) -> Any:
        """Commit ``plan`` under the new running summary's key; langmem's result, unchanged."""
        self.guard.tracker.commit(plan, key=SUMMARY_KEY + str(result.running_summary.last_summarized_message_id))
        for key in plan.deleted_keys:
            self._messages.pop(key, None)
        return result

    # -- helpers --------------------------------------------------------------------------

    def _unchanged(self, messages: list[AnyMessage], running: Any, pre: Any, kwargs: dict[str, Any]) -> Any:
        body = messages[1:] if pre.existing_system_message is not None else messages
        nothing = dataclasses.replace(pre, messages_to_summarize=[])
        return _lm._prepare_summarization_result(
            preprocessed_messages=nothing, messages=body, existing_summary=running, running_summary=running,
            final_prompt=kwargs.get("final_prompt", _lm.DEFAULT_FINAL_SUMMARY_PROMPT))

    def _payload(self, run: Pair) -> bytes:
        return encode_run("langmem", self.guard.unit, run, self.guard.tracker, self._messages,
                          lambda m: messages_to_dict([m])[0])


def _summary_keys(running: Any) -> list[str]:
    """The running summary's key in the context, when there is one."""
    return [] if running is None else [SUMMARY_KEY + str(running.last_summarized_message_id)]


def _recorder(model: Any, seen: list[Any]) -> Any:
    """``model`` as a Runnable that records what it is shown (sync and async)."""

    def call(x: Any) -> Any:
        seen.append(x)
        return model.invoke(x)

    async def acall(x: Any) -> Any:
        seen.append(x)
        return await model.ainvoke(x)

    return RunnableLambda(call, afunc=acall)


class GuardedSummarizationNode(_lm.SummarizationNode):  # type: ignore[misc]
    """``SummarizationNode`` whose summarization goes through a :class:`GuardedSummarizer`."""

    def __init__(self, *, guard: GuardedSummarizer, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tailguard = guard

    def _arguments(self, context: dict[str, Any]) -> dict[str, Any]:
        return {"running_summary": context.get("running_summary"), "model": self.model,
                "max_tokens": self.max_tokens, "max_tokens_before_summary": self.max_tokens_before_summary,
                "max_summary_tokens": self.max_summary_tokens, "token_counter": self.token_counter,
                "initial_summary_prompt": self.initial_summary_prompt,
                "existing_summary_prompt": self.existing_summary_prompt, "final_prompt": self.final_prompt}

    def _func(self, input: Any) -> dict[str, Any]:
        messages, context = self._parse_input(input)
        result = self.tailguard.summarize_messages(messages, **self._arguments(context))
        update: dict[str, Any] = self._prepare_state_update(context, result)
        return update

    async def _afunc(self, input: Any) -> dict[str, Any]:
        messages, context = self._parse_input(input)
        result = await self.tailguard.asummarize_messages(messages, **self._arguments(context))
        update: dict[str, Any] = self._prepare_state_update(context, result)
        return update
