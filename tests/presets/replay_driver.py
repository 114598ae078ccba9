"""Replay a session through the real LangChain ``SummarizationMiddleware`` or langmem's
``summarize_messages`` and say what it lost (brief 6d: "every printed counterexample
reproduces").

A session is the model's: turn sizes in tokens and message counts. A turn of one message is
a ``HumanMessage``, a turn of more an ``AIMessage`` with tool calls and its ``ToolMessage``
results (the first turn opens with the user's ``HumanMessage``, as ``create_agent``'s input
does). The newest message of a turn holds all its tokens, the others none, so LangChain's
message-level cut and trim keep or drop a turn whole, as the model does (a tool turn whose
newest messages fit the rest of a tokens ``keep`` is the declared ``tail_rounds_up``). The
token counter is the tests' own knob: a message counts the size the session gave it, a part
of one the lines it kept, a summary message ``summary_tokens`` (LangChain) or its length
(langmem). Contents are unique tags, the message holding a turn's tokens followed by one line
per token, so ``trim_messages(allow_partial=True)`` keeps its newest lines when some budget is
left (a turn shown in part is not shown). The marker oracle: a turn is shown when every one
of its messages is whole in the summarizer's prompt; a turn is lost when a compaction deletes
it unshown, or deletes an earlier summary (not shown whole) that held it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tailguard.doctor.drivers.langchain_messages import RecordingFake, is_summary, turn_of
from tailguard.pipeline.model import floor_turns
from tailguard.pipeline.policy import Policy


def messages_of(index: int, tokens: int, count: int) -> tuple[list[BaseMessage], dict[str, int]]:
    """Turn ``index``: its messages and the tokens of each (by id)."""
    ids = [f"t{index}m{k}" for k in range(count)]
    sizes = {**{i: 0 for i in ids[:-1]}, ids[-1]: tokens}
    out = _messages(index, ids)
    out[-1].content = f"[{ids[-1]}]" + "\n" + "x\n" * (tokens - 1)  # a partial keeps its last lines
    return out, sizes


def _messages(index: int, ids: list[str]) -> list[BaseMessage]:
    count = len(ids)
    if count == 1:
        return [HumanMessage(content=f"[{ids[0]}]", id=ids[0])]
    out: list[BaseMessage] = []
    if index == 0:  # the conversation opens with the user's message (declared: start_on_human)
        out.append(HumanMessage(content=f"[{ids[0]}]", id=ids[0]))
        ids = ids[1:]
        if len(ids) == 1:
            return [*out, AIMessage(content=f"[{ids[0]}]", id=ids[0])]
    calls = [{"name": "lookup", "args": {}, "id": f"c{index}_{k}", "type": "tool_call"} for k in range(1, len(ids))]
    out.append(AIMessage(content=f"[{ids[0]}]", id=ids[0], tool_calls=calls))
    out += [ToolMessage(content=f"[{ids[k]}]", id=ids[k], tool_call_id=f"c{index}_{k}") for k in range(1, len(ids))]
    return out


class Tokens:
    """The token counter the tests pass: a session's message counts the size the session gave
    it, a part of one (``allow_partial``) the lines it kept, a LangChain summary
    ``summary_tokens``, anything else (langmem's running summary) its length."""

    def __init__(self, summary_tokens: int | None) -> None:
        self.summary_tokens = summary_tokens
        self.sizes: dict[str, int] = {}
        self.texts: dict[str, str] = {}

    def add(self, messages: Sequence[BaseMessage], sizes: dict[str, int]) -> None:
        self.sizes.update(sizes)
        self.texts.update({str(m.id): str(m.content) for m in messages})

    def one(self, m: BaseMessage) -> int:
        text = str(m.content)
        if str(m.id) in self.sizes:
            return self.sizes[str(m.id)] if text == self.texts[str(m.id)] else text.count("\n")
        if self.summary_tokens is not None and is_summary(m):
            return self.summary_tokens
        return len(text)

    def count(self, messages: Sequence[BaseMessage], **_: Any) -> int:
        return sum(self.one(m) for m in messages)


@dataclass
class Loss:
    """What the real package lost at one append: turns deleted unshown or with a dropped
    summary (``holes``) and floor turns out of the context (``floor``)."""

    holes: set[int] = field(default_factory=set)
    floor: set[int] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.holes or self.floor)


def _shown(deleted: Sequence[BaseMessage], prompt: str) -> set[int]:
    by_turn: dict[int, list[BaseMessage]] = {}
    for m in deleted:
        if (t := turn_of(m)) is not None:
            by_turn.setdefault(t, []).append(m)
    return {t for t, ms in by_turn.items() if all(str(m.content) in prompt for m in ms)}


def _floor(policy: Policy, sizes: list[int], counts: list[int], context: Sequence[BaseMessage]) -> set[int]:
    present = {t for m in context if (t := turn_of(m)) is not None}
    return set(floor_turns(policy, sizes, counts)) - present


def _size_of(value: Any) -> Any:
    """A TOML size (``["tokens", n]``), clause table or list of them as LangChain takes it."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str):
        return (value[0], value[1])
    if isinstance(value, list):
        return [_size_of(v) for v in value]
    return value


def langchain_run(policy: Policy, knobs: dict[str, Any], sizes: Sequence[int],
                  counts: Sequence[int]) -> Iterator[Loss]:
    """Each append's loss on the real ``SummarizationMiddleware`` with the preset's knobs."""
    from langchain.agents.middleware.summarization import SummarizationMiddleware

    summary_tokens = int(knobs.get("summary_tokens", 1000))
    tokens = Tokens(summary_tokens)
    count = tokens.count

    model = RecordingFake(messages=(AIMessage(content=f"S{k}") for k in itertools.count()), calls=[])
    window = knobs.get("window")
    if window:
        model.profile = {"max_input_tokens": window}
    trim = knobs.get("trim_tokens_to_summarize", 4000)
    mw = SummarizationMiddleware(model, trigger=_size_of(knobs.get("trigger")),
                                 keep=_size_of(knobs.get("keep", ["messages", 20])), token_counter=count,
                                 trim_tokens_to_summarize=None if trim is False else trim)
    context: list[BaseMessage] = []
    covered: set[int] = set()
    seen_sizes: list[int] = []
    for index, (size, n) in enumerate(zip(sizes, counts, strict=True)):
        new, own = messages_of(index, size, n)
        tokens.add(new, own)
        seen_sizes.append(size)
        context = [*context, *new]
        calls = len(model.calls)
        update = mw.before_model({"messages": context}, None)  # type: ignore[arg-type]
        loss = Loss()
        if update is not None:
            kept = list(update["messages"][1:])
            kept_ids = {m.id for m in kept}
            prompt = model.calls[-1] if len(model.calls) > calls else ""
            deleted = [m for m in context if m.id not in kept_ids]
            shown = _shown(deleted, prompt)
            earlier = next((m for m in deleted if is_summary(m)), None)
            if earlier is not None and str(earlier.content) not in prompt:
                loss.holes |= covered
                covered = set()
            gone = {t for m in deleted if (t := turn_of(m)) is not None}
            loss.holes |= gone - shown
            covered |= shown
            context = kept
            loss.floor = _floor(policy, seen_sizes, list(counts[: index + 1]), context)
        yield loss


def langmem_run(policy: Policy, knobs: dict[str, Any], sizes: Sequence[int],
                counts: Sequence[int]) -> Iterator[Loss]:
    """Each append's loss on the real ``summarize_messages`` (the fake summarizer writes
    exactly ``max_summary_tokens`` tokens: the budget langmem reserves)."""
    from langmem.short_term import summarize_messages

    max_tokens = int(knobs["max_tokens"])
    reply = int(knobs.get("max_summary_tokens", 256))
    before = knobs.get("max_tokens_before_summary")
    tokens = Tokens(None)
    count = tokens.count

    model = RecordingFake(messages=(AIMessage(content=f"S{k}".ljust(reply, "s")[:reply])
                                    for k in itertools.count()), calls=[])
    messages: list[BaseMessage] = []
    running: Any = None
    seen_sizes: list[int] = []
    for index, (size, n) in enumerate(zip(sizes, counts, strict=True)):
        new, own = messages_of(index, size, n)
        tokens.add(new, own)
        seen_sizes.append(size)
        messages = [*messages, *new]
        calls = len(model.calls)
        result = summarize_messages(messages, running_summary=running, model=model, max_tokens=max_tokens,
                                    max_tokens_before_summary=None if before is False else before,
                                    max_summary_tokens=reply, token_counter=count)
        loss = Loss()
        if result.running_summary is not None and result.running_summary is not running:
            done = set(running.summarized_message_ids) if running else set()
            newly = set(result.running_summary.summarized_message_ids) - done
            prompt = model.calls[-1] if len(model.calls) > calls else ""
            deleted = [m for m in messages if m.id in newly]
            loss.holes = {t for m in deleted if (t := turn_of(m)) is not None} - _shown(deleted, prompt)
            running = result.running_summary
            context = [m for m in messages if m.id not in running.summarized_message_ids]
            loss.floor = _floor(policy, seen_sizes, list(counts[: index + 1]), context)
        yield loss


def run(framework: str, policy: Policy, knobs: dict[str, Any], sizes: Sequence[int],
        counts: Sequence[int]) -> list[Loss]:
    """Every append's loss, for a ``langchain.*`` or ``langmem.*`` preset."""
    runner = langchain_run if framework.startswith("langchain") else langmem_run
    return list(runner(policy, knobs, sizes, counts))
