"""LlamaIndex's memories driven offline: the real ``Memory`` (its default SQL store, in-memory
SQLite) with the real memory blocks, and the real ``ChatSummaryMemoryBuffer``, on an
:class:`EchoLLM`: a ``CustomLLM`` (LlamaIndex's extension point for an LLM) that writes back the
markers it was shown, as facts (``<facts><fact>[t3m0]</fact>...``) or as a summary (``[s2] [t0m0]
...``), and records every prompt.

Every message carries a unique tag ``[t<turn>m<message>]``; sizes are in tokens as the memories
count them with ``tokenizer_fn=str.split`` (their own knob): a message of ``k`` tokens is its tag
and ``k - 1`` filler words. A turn is a user message and its replies (assistant messages).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.llms import ChatMessage, CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import ChatSummaryMemoryBuffer, Memory
from llama_index.core.memory.memory_blocks import FactExtractionMemoryBlock, StaticMemoryBlock, VectorMemoryBlock
from llama_index.core.storage.chat_store.sql import MessageStatus
from pydantic import Field

TAG = re.compile(r"\[t(\d+)m(\d+)\]")
SUMMARY_TAG = re.compile(r"\[s(\d+)\]")


def tags(text: str) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in TAG.findall(text)}


def message_text(turn: int, message: int, size: int) -> str:
    return " ".join([f"[t{turn}m{message}]", *(["w"] * (size - 1))])


def turn_messages(turn: int, sizes: Sequence[int]) -> list[ChatMessage]:
    """A turn: the user's message, then its replies."""
    return [ChatMessage(role="user" if j == 0 else "assistant", content=message_text(turn, j, s))
            for j, s in enumerate(sizes)]


class EchoLLM(CustomLLM):
    """Writes back the markers of its prompt: ``<facts>`` for a fact-extraction prompt, else a
    summary ``[s<k>]`` followed by the markers (summaries it wrote included)."""

    prompts: list[str] = Field(default_factory=list)
    context: int = 128000

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context, num_output=256, model_name="echo")

    def _answer(self, prompt: str) -> str:
        self.prompts.append(prompt)
        found = sorted(tags(prompt))
        if "<facts>" in prompt:
            return "<facts>" + "".join(f"<fact>[t{t}m{m}]</fact>" for t, m in found) + "</facts>"
        k = sum(1 for p in self.prompts if "<facts>" not in p) - 1
        return " ".join([f"[s{k}]", *(f"[t{t}m{m}]" for t, m in found)])

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._answer(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        text = self._answer(prompt)

        def gen() -> Any:
            yield CompletionResponse(text=text, delta=text)

        return gen()


def memory_blocks(kinds: Sequence[str], llm: EchoLLM) -> list[Any]:
    out: list[Any] = []
    for kind in kinds:
        if kind == "fact":
            out.append(FactExtractionMemoryBlock(llm=llm))
        elif kind == "static":
            out.append(StaticMemoryBlock(static_content="static"))
        elif kind == "vector":
            from llama_index.core.embeddings import MockEmbedding
            from llama_index.core.vector_stores import SimpleVectorStore

            store = SimpleVectorStore()
            store.stores_text = True
            out.append(VectorMemoryBlock(vector_store=store, embed_model=MockEmbedding(embed_dim=4)))
    return out


@dataclass
class MemoryRun:
    """A real ``Memory`` and what happened at each put: the turns flushed, the turns active."""

    memory: Memory
    llm: EchoLLM
    flushed: list[list[int]] = field(default_factory=list)
    active: list[list[int]] = field(default_factory=list)

    @classmethod
    def build(cls, *, token_limit: int, ratio: float, flush: int, blocks: Sequence[str] = (),
              session_id: str = "s", **kw: Any) -> MemoryRun:
        llm = EchoLLM()
        memory = Memory.from_defaults(session_id=session_id, token_limit=token_limit, chat_history_token_ratio=ratio,
                                      token_flush_size=flush, tokenizer_fn=str.split,
                                      memory_blocks=memory_blocks(blocks, llm), **kw)
        return cls(memory, llm)

    def turns_of(self, status: MessageStatus) -> list[tuple[int, int]]:
        return [t for m in self.memory.get_all(status=status) for t in sorted(tags(m.content or ""))]

    def put(self, turn: int, sizes: Sequence[int]) -> None:
        before = set(self.turns_of(MessageStatus.ARCHIVED))
        self.memory.put_messages(turn_messages(turn, sizes))
        archived = [t for t in self.turns_of(MessageStatus.ARCHIVED) if t not in before]
        self.flushed.append(sorted({t for t, _ in archived}))
        self.active.append(sorted({t for t, _ in self.turns_of(MessageStatus.ACTIVE)}))


@dataclass
class BufferRun:
    """A real ``ChatSummaryMemoryBuffer``; ``get()`` after each turn, what it deleted and kept."""

    buffer: ChatSummaryMemoryBuffer
    llm: EchoLLM | None
    deleted: list[list[int]] = field(default_factory=list)
    kept: list[list[int]] = field(default_factory=list)
    shown: list[set[tuple[int, int]]] = field(default_factory=list)
    outputs: list[list[ChatMessage]] = field(default_factory=list)

    @classmethod
    def build(cls, *, token_limit: int, llm: bool, count_initial_tokens: bool = False) -> BufferRun:
        model = EchoLLM() if llm else None
        buf = ChatSummaryMemoryBuffer.from_defaults(llm=model, token_limit=token_limit, tokenizer_fn=str.split,
                                                    count_initial_tokens=count_initial_tokens)
        return cls(buf, model)

    def put_and_get(self, turn: int, sizes: Sequence[int], initial: int = 0) -> None:
        for m in turn_messages(turn, sizes):
            self.buffer.put(m)
        before = {t for m in self.buffer.get_all() if m.role != "system" for t, _ in tags(m.content or "")}
        prompts = len(self.llm.prompts) if self.llm else 0
        out = self.buffer.get(initial_token_count=initial)
        self.outputs.append(out)
        after = {t for m in out if m.role != "system" for t, _ in tags(m.content or "")}
        self.deleted.append(sorted(before - after))
        self.kept.append(sorted(after))
        seen = set().union(*(tags(p) for p in self.llm.prompts[prompts:])) if self.llm else set()
        self.shown.append(seen)
