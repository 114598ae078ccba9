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

Private functions of langmem this module relies on (validated with langmem 0.0.30):
``langmem.short_term.summarization._preprocess_messages``,
``_adjust_messages_before_summarization`` and ``_prepare_summarization_result``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any, TextIO

try:
    from langchain_core.messages import AnyMessage, BaseMessage, SystemMessage, messages_to_dict
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import RunnableLambda
    from langmem.short_term import summarization as _lm
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("tailguard.adapters.langmem needs langmem: pip install 'tailguard[langmem]'") from exc

from tailguard.adapters._guard import CompactionGuard
from tailguard.adapters._offsets import AdapterError, Entry, Plan
from tailguard.adapters._spill_tool import encode_run
from tailguard.base.vocab import Pair
from tailguard.spill import SpillStore

__all__ = ["GuardedSummarizationNode", "GuardedSummarizer"]

SUMMARY_KEY = "langmem-summary:"


class GuardedSummarizer:
    """One langmem session's guard: call :meth:`summarize_messages` where you called langmem's."""

    def __init__(
        self,
        *,
        recovery_floor_span: int,
        floor_unit: str = "messages",
        on_refuse: str = "halt",
        store: SpillStore | str | os.PathLike[str] | None = None,
        log: str | os.PathLike[str] | TextIO | None = None,
        profile: str = "partitioned",
    ) -> None:
        self.guard = CompactionGuard(framework="langmem", recovery_floor_span=recovery_floor_span,
                                     floor_unit=floor_unit, on_refuse=on_refuse, store=store, log=log,
                                     profile=profile)
        self._messages: dict[str, BaseMessage] = {}

    def summarize_messages(self, messages: list[AnyMessage], *, running_summary: Any, model: Any,
                           **kwargs: Any) -> Any:
        """``langmem.short_term.summarize_messages`` with the guard; same arguments, same result."""
        step = self._begin(messages, running_summary, kwargs)
        if step is None or step[0] is None:
            return _lm.summarize_messages(messages, running_summary=running_summary, model=model, **kwargs)
        plan, pre, shown, res = step
        if res == "defer":
            return self._unchanged(messages, running_summary, pre, kwargs)
        seen: list[Any] = []
        recorder = _recorder(model, seen)
        result = _lm.summarize_messages(messages, running_summary=running_summary, model=recorder, **kwargs)
        return self._finish(plan, pre, shown, running_summary, result, seen)

    async def asummarize_messages(self, messages: list[AnyMessage], *, running_summary: Any, model: Any,
                                  **kwargs: Any) -> Any:
        """``langmem.short_term.asummarize_messages`` with the guard."""
        step = self._begin(messages, running_summary, kwargs)
        if step is None or step[0] is None:
            return await _lm.asummarize_messages(messages, running_summary=running_summary, model=model,
                                                 **kwargs)
        plan, pre, shown, res = step
        if res == "defer":
            return self._unchanged(messages, running_summary, pre, kwargs)
        seen: list[Any] = []
        recorder = _recorder(model, seen)
        result = await _lm.asummarize_messages(messages, running_summary=running_summary, model=recorder,
                                               **kwargs)
        return self._finish(plan, pre, shown, running_summary, result, seen)

    # -- the steps ------------------------------------------------------------------------

    def _begin(self, messages: list[AnyMessage], running: Any, kwargs: dict[str, Any]) -> Any:
        unknown = set(kwargs) - {"max_tokens", "max_tokens_before_summary", "max_summary_tokens", "token_counter",
                                 "initial_summary_prompt", "existing_summary_prompt", "final_prompt"}
        if unknown:
            raise TypeError(f"summarize_messages: unexpected keyword arguments {sorted(unknown)}")
        if "max_tokens" not in kwargs:
            raise TypeError("summarize_messages: max_tokens is required")
        counter = kwargs.get("token_counter", count_tokens_approximately)
        body = messages[1:] if messages and isinstance(messages[0], SystemMessage) else list(messages)
        for i, m in enumerate(body):
            if m.id is None:
                raise AdapterError(f"message {i} has no id; langmem and the guard need message ids")
        done: set[str] = set(running.summarized_message_ids) if running is not None else set()
        live = [m for m in body if m.id not in done]
        entries: list[Entry] = []
        if running is not None:
            entries.append(Entry(SUMMARY_KEY + str(running.last_summarized_message_id), True, 0))
        by_tokens = self.guard.unit == "tokens"
        entries += [Entry(str(m.id), False, int(counter([m])) if by_tokens else 1) for m in live]
        self.guard.tracker.observe(entries)
        for m in live:
            self._messages.setdefault(str(m.id), m)
        pre = _lm._preprocess_messages(
            messages=messages, running_summary=running, max_tokens=kwargs["max_tokens"],
            max_tokens_before_summary=kwargs.get("max_tokens_before_summary"),
            max_summary_tokens=kwargs.get("max_summary_tokens", 256), token_counter=counter)
        if not pre.messages_to_summarize:
            return (None, None, None, None)
        shown = _lm._adjust_messages_before_summarization(pre, counter)
        marked = {str(m.id) for m in pre.messages_to_summarize}
        by_id = {str(m.id): m for m in pre.messages_to_summarize}
        shown_keys = [str(m.id) for m in shown if str(m.id) in by_id and m == by_id[str(m.id)]]
        summary_keys = [e.key for e in entries if e.summary]
        plan = self.guard.tracker.plan(
            deleted=[*summary_keys, *(str(m.id) for m in pre.messages_to_summarize)],
            shown=[*summary_keys, *shown_keys],  # the running summary is always in the prompt
            kept=[str(m.id) for m in live if str(m.id) not in marked])
        res = self.guard.resolve(plan, self._payload)
        return plan, pre, shown, res.action

    def _unchanged(self, messages: list[AnyMessage], running: Any, pre: Any, kwargs: dict[str, Any]) -> Any:
        body = messages[1:] if pre.existing_system_message is not None else messages
        nothing = dataclasses.replace(pre, messages_to_summarize=[])
        return _lm._prepare_summarization_result(
            preprocessed_messages=nothing, messages=body, existing_summary=running, running_summary=running,
            final_prompt=kwargs.get("final_prompt", _lm.DEFAULT_FINAL_SUMMARY_PROMPT))

    def _finish(self, plan: Plan, pre: Any, shown: Sequence[BaseMessage], running: Any, result: Any,
                seen: list[Any]) -> Any:
        new = result.running_summary
        if new is None or len(seen) != 1:
            raise AdapterError("langmem did not summarize as planned; nothing was recorded")
        before = set(running.summarized_message_ids) if running is not None else set()
        marked = {str(m.id) for m in pre.messages_to_summarize}
        if set(new.summarized_message_ids) - before != marked:
            raise AdapterError("langmem marked other messages summarized than the guard decided on")
        prompt = seen[0]
        prompt_messages = list(prompt.to_messages() if hasattr(prompt, "to_messages") else prompt)
        if not all(any(p == m for p in prompt_messages) for m in shown):
            raise AdapterError("langmem's model was not shown the messages the guard decided on")
        self.guard.tracker.commit(plan, key=SUMMARY_KEY + str(new.last_summarized_message_id))
        for key in plan.deleted_keys:
            self._messages.pop(key, None)
        return result

    def _payload(self, run: Pair) -> bytes:
        return encode_run("langmem", self.guard.unit, run, self.guard.tracker, self._messages,
                          lambda m: messages_to_dict([m])[0])


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

    def _kwargs(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "max_tokens_before_summary": self.max_tokens_before_summary,
                "max_summary_tokens": self.max_summary_tokens, "token_counter": self.token_counter,
                "initial_summary_prompt": self.initial_summary_prompt,
                "existing_summary_prompt": self.existing_summary_prompt, "final_prompt": self.final_prompt}

    def _func(self, input: Any) -> dict[str, Any]:
        messages, context = self._parse_input(input)
        result = self.tailguard.summarize_messages(messages, running_summary=context.get("running_summary"),
                                                   model=self.model, **self._kwargs())
        update: dict[str, Any] = self._prepare_state_update(context, result)
        return update

    async def _afunc(self, input: Any) -> dict[str, Any]:
        messages, context = self._parse_input(input)
        result = await self.tailguard.asummarize_messages(
            messages, running_summary=context.get("running_summary"), model=self.model, **self._kwargs())
        update: dict[str, Any] = self._prepare_state_update(context, result)
        return update
