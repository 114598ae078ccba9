"""LangChain-side pieces of the differential harness: messages of a session, the token
counter the drivers give the framework, a recording fake summarizer (LangChain's own
``GenericFakeChatModel``), and the comparison of one LangChain-style compaction (LangChain's
middleware and deepagents', which delegates to it). Shared by the LangChain, deepagents and
langmem drivers; imports LangChain, so only a driver imports it."""

from __future__ import annotations

import html
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tailguard.doctor.harness import Compaction, Mismatch, Turn, content, holes

SUMMARY_SOURCE = "summarization"


def is_summary(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE


def toml_trigger(trigger: Any) -> str:
    """A LangChain ``trigger`` as the preset's TOML: a size ``("tokens", n)``, a
    ``TriggerClause`` dict (AND) or a list of both (OR); deepagents passes it through."""
    def one(size: tuple[str, int] | dict[str, int]) -> str:
        if isinstance(size, dict):
            return "{" + ", ".join(f"{kind} = {amount}" for kind, amount in size.items()) + "}"
        return f'["{size[0]}", {size[1]}]'

    return "[" + ", ".join(one(t) for t in trigger) + "]" if isinstance(trigger, list) else one(trigger)


def make_counter(summary_tokens: int) -> Any:
    """The ``token_counter`` knob the tests pass: a message's tokens are its text's length in
    characters, a summary message (``lc_source == "summarization"``) is ``summary_tokens``."""

    def count(messages: Sequence[BaseMessage], **_: Any) -> int:
        total = 0
        for m in messages:
            if is_summary(m):
                total += summary_tokens
            elif isinstance(m.content, str):
                total += len(m.content)
            else:
                total += sum(len(str(b.get("text", ""))) if isinstance(b, dict) else len(str(b))
                             for b in m.content)
        return total

    return count


def turn_messages(index: int, turn: Turn) -> list[BaseMessage]:
    """The messages of turn ``index``, ids ``t{index}m{k}``."""
    ids = [f"t{index}m{k}" for k in range(turn.messages)]
    texts = [content(index, k, size) for k, size in enumerate(turn.sizes)]
    if turn.kind == "human":
        return [HumanMessage(content=texts[0], id=ids[0])]
    if turn.kind == "ai":
        return [AIMessage(content=texts[0], id=ids[0])]
    calls = [{"name": "lookup", "args": {"q": k}, "id": f"call{index}_{k}", "type": "tool_call"}
             for k in range(1, turn.messages)]
    out: list[BaseMessage] = [AIMessage(content=texts[0], id=ids[0], tool_calls=calls)]
    out += [ToolMessage(content=texts[k], id=ids[k], tool_call_id=f"call{index}_{k}")
            for k in range(1, turn.messages)]
    return out


def turn_of(message: BaseMessage) -> int | None:
    mid = message.id or ""
    if mid.startswith("t") and "m" in mid:
        head = mid[1:].split("m")[0]
        if head.isdigit():
            return int(head)
    return None


class RecordingFake(GenericFakeChatModel):
    """LangChain's own ``GenericFakeChatModel`` that records the prompt of each call."""

    calls: list[str] = []  # noqa: RUF012 - pydantic field, replaced per instance

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.calls.append("\n".join(str(m.content) for m in messages))
        return super()._generate(messages, *args, **kwargs)


def summarizer(profile: int | None = None) -> RecordingFake:
    replies: Iterator[AIMessage] = (AIMessage(content=f"SUMMARY{k}") for k in itertools.count())
    model = RecordingFake(messages=replies, calls=[])
    if profile:
        model.profile = {"max_input_tokens": profile}
    return model


def whole(message: BaseMessage, prompt: str) -> bool:
    """Whether ``message`` appears whole in the summarizer's prompt (which LangChain formats
    as XML, escaping deepagents' ``<summary>`` tags)."""
    text = str(message.content)
    return text in prompt or html.escape(text, quote=False) in prompt


def observe(before: Sequence[BaseMessage], after: Sequence[BaseMessage], prompt: str) -> Compaction:
    """What a LangChain-style compaction did, from the context before and after it and the
    summarizer's prompt: turns deleted, shown whole, kept verbatim, and the earlier summary."""
    kept_ids = {m.id for m in after}
    turn_msgs: dict[int, list[BaseMessage]] = {}
    for m in before:
        t = turn_of(m)
        if t is not None:
            turn_msgs.setdefault(t, []).append(m)
    deleted = tuple(t for t, ms in turn_msgs.items() if all(m.id not in kept_ids for m in ms))
    kept = tuple(t for t, ms in turn_msgs.items() if all(m.id in kept_ids for m in ms))
    if len(deleted) + len(kept) != len(turn_msgs):
        raise Mismatch("a turn was split: some of its messages left the context, others stayed")
    shown = tuple(t for t in deleted if all(whole(m, prompt) for m in turn_msgs[t]))
    earlier = next((m for m in before if is_summary(m)), None)
    summary_shown = None if earlier is None else whole(earlier, prompt)
    return Compaction(deleted, shown, kept, summary_shown)


def compare(real: Compaction | None, model: Compaction | None, kinds: list[str],
            at: int, sizes: Sequence[int] | None = None) -> str:
    """Compare one append's compactions under the declared differences of the LangChain
    presets; return ``"same"``, ``"diverged"`` (``tail_rounds_up``: with a tokens keep LangChain
    kept one tool turn more, whose newest messages fit it; the caller puts it back into the
    model's state) or raise :class:`Mismatch`. ``sizes``: the messages of every turn."""
    where = f"append {at}"
    if real is None and model is None:
        return "same"
    if real is None:  # cut = "messages": nothing within keep, the newest turn always stays
        raise Mismatch(f"{where}: the model compacted {model}, LangChain did not")
    if model is None or real is None:
        raise Mismatch(f"{where}: LangChain compacted {real}, the model did not")
    if real.deleted != model.deleted:
        # tail_rounds_up, now only a tokens keep's straddling tool turn (its newest messages fit)
        extra = set(model.deleted) - set(real.deleted)
        if not set(real.deleted) <= set(model.deleted) or len(extra) != 1 or \
                set(real.kept) != set(model.kept) | extra or sizes is None or \
                sizes[next(iter(extra))] < 2:
            raise Mismatch(f"{where}: LangChain deleted {real.deleted}, the model {model.deleted}")
        return "diverged"  # tail_rounds_up: LangChain kept the straddling turn (resync)
    if real.kept != model.kept:
        raise Mismatch(f"{where}: LangChain kept {real.kept}, the model {model.kept}")
    if real.shown != model.shown and holes(kinds) and real.summary_shown == model.summary_shown:
        return "same"  # start_on_human: which AI-led turns go depends on the kinds; a hole either way
    if real.shown != model.shown or real.summary_shown != model.summary_shown:
        # start_on_human: LangChain may show less, only where the model reports a hole
        less = set(real.shown) <= set(model.shown) and (
            real.summary_shown is None or model.summary_shown or not real.summary_shown)
        spilled = bool(model.deleted) and set(model.deleted) <= set(model.spilled)
        if not (less and (holes(kinds) or model.summary_shown is False or spilled)):
            raise Mismatch(f"{where}: LangChain showed {real.shown} (summary {real.summary_shown}), "
                           f"the model {model.shown} (summary {model.summary_shown}); findings {kinds}")
    return "same"
