"""LlamaIndex's memories against the two LlamaIndex presets (``llamaindex.Memory``,
``llamaindex.ChatSummaryMemoryBuffer``), and the adapter (``GuardedMemory``,
``GuardedChatSummaryMemoryBuffer``) on the same sessions.

The memories run as installed: the real ``Memory`` (its default SQL store, in-memory SQLite)
with the real memory blocks, and the real ``ChatSummaryMemoryBuffer``, on an :class:`EchoLLM`: a
``CustomLLM`` (LlamaIndex's extension point for an LLM) that writes back the markers it was
shown, as facts (``<facts><fact>[t3m0]</fact>...``) or as a summary (``[s2] [t0m0] ...``), and
records every prompt.

Every message carries a unique tag ``[t<turn>m<message>]``; sizes are in tokens as the memories
count them with ``tokenizer_fn=str.split`` (their own knob): a message of ``k`` tokens is its tag
and ``k - 1`` filler words. A turn is a user message and its replies (assistant messages).

For every append :func:`compare_memory` and :func:`compare_buffer` compare what left the history,
what the summarizer or the fact LLM was shown and what stayed with the preset's model stepped turn
by turn. Declared differences, as declared: ``flush_batches`` (the first flush at the model's
first truncation, the model's dropped turns the oldest of the real flush; the model is then
re-synchronised to the real active history) and ``vector_retrieval`` (a flush into a vector block
counts as no coverage). A *compaction* is a ``Memory`` flush, or a ``get()`` of the buffer that
deleted something. The marker oracle closes each session: a marker in no ``get()`` is lost, and
the model must have named it (or, with a covering fact block, nothing is lost).

The adapter runs sessions with the guarded memories (``on_refuse="halt"``, no store): it must
refuse at the append where the preset's model finds its first hole or floor finding, and allow
every flush (summary) of a session where the model finds none.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.llms import ChatMessage, CompletionResponse, CustomLLM, LLMMetadata, TextBlock
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.memory import ChatSummaryMemoryBuffer, Memory
from llama_index.core.memory.memory_blocks import FactExtractionMemoryBlock, StaticMemoryBlock, VectorMemoryBlock
from llama_index.core.storage.chat_store.base_db import MessageStatus
from pydantic import Field

from tailguard.adapters.llamaindex import GuardedChatSummaryMemoryBuffer, GuardedMemory
from tailguard.doctor.harness import Case, Mismatch
from tailguard.pipeline.model import Event, State, step
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.llamaindex import BUFFER, MEMORY
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["SUMMARY_TAG", "TAG", "BufferRun", "BufferSession", "EchoLLM", "MemoryRun", "MemorySession",
           "adapter_buffer", "adapter_memory", "cases", "compare_buffer", "compare_memory", "memory_blocks",
           "message_text", "policy", "random_buffer", "random_memory", "resync", "tags", "turn_messages"]

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
            out.append(StaticMemoryBlock(static_content=[TextBlock(text="static")]))
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
              session_id: str = "s", memory_class: Any = Memory, **kw: Any) -> MemoryRun:
        """``blocks``: ``fact`` (priority 0: it covers a flush), ``fact-priority`` (a fact block
        of priority 1, which ``get()`` may truncate), ``static``, ``vector``."""
        llm = EchoLLM()
        kinds = ["fact" if b == "fact-priority" else b for b in blocks]
        memory = memory_class.from_defaults(session_id=session_id, token_limit=token_limit,
                                            chat_history_token_ratio=ratio, token_flush_size=flush,
                                            tokenizer_fn=str.split, memory_blocks=memory_blocks(kinds, llm), **kw)
        for block, kind in zip(memory.memory_blocks, blocks, strict=True):
            if kind == "fact-priority":
                block.priority = 1
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
    def build(cls, *, token_limit: int, llm: bool, count_initial_tokens: bool = False,
              buffer_class: Any = ChatSummaryMemoryBuffer, **kw: Any) -> BufferRun:
        model = EchoLLM() if llm else None
        buf = buffer_class.from_defaults(llm=model, token_limit=token_limit, tokenizer_fn=str.split,
                                         count_initial_tokens=count_initial_tokens, **kw)
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


# -- the preset's model ------------------------------------------------------------------------------

HEAD = 'name = "p"\nturn_tokens = [1, {tmax}]\nmessages_per_turn = [1, 4]\nfloor = {floor}\nfloor_unit = "messages"\n'


def policy(framework: str, knobs: str, *, tmax: int = 40, floor: int = 0) -> Policy:
    """The translated policy of preset ``framework`` with ``knobs`` (TOML lines of ``[framework]``)."""
    return parse_policy(HEAD.format(tmax=tmax, floor=floor) + f'[framework]\nname = "{framework}"\n{knobs}', "p.toml")


def resync(state: State, active: Sequence[int]) -> None:
    """The model's history made the real one (Memory's flush batches: ``flush_batches``)."""
    state.verbatim = list(active)
    state.body = sum(state.sizes[j] for j in active)
    state.mbody = sum(state.messages[j] for j in active)


def _all_tags(turns: Sequence[Sequence[int]]) -> set[tuple[int, int]]:
    return {(t, m) for t, sizes in enumerate(turns) for m in range(len(sizes))}


@dataclass(frozen=True)
class MemorySession:
    """A ``Memory``'s knobs and a session (each turn the sizes of its messages, clipped to a
    quarter of the history budget, so a turn always fits the budget: the preset's ``turn_tokens``)."""

    turns: tuple[tuple[int, ...], ...]
    limit: int
    ratio: float = 0.7
    flush: int = 5
    blocks: tuple[str, ...] = ()

    @classmethod
    def of(cls, turns: Sequence[Sequence[int]], limit: int, ratio: float, flush: int,
           blocks: Sequence[str] = ()) -> MemorySession:
        most = max(1, int(limit * ratio) // 4)
        return cls(tuple(tuple(min(s, most) for s in sizes) for sizes in turns), limit, ratio, flush, tuple(blocks))

    @property
    def covered(self) -> bool:
        """A fact block of priority 0 takes every flush (the preset's compact stage)."""
        return "fact" in self.blocks

    def policy(self, floor: int = 0) -> Policy:
        kinds = ", ".join('{kind = "fact", priority = 1}' if b == "fact-priority" else f'{{kind = "{b}"}}'
                          for b in self.blocks)
        return policy(MEMORY.name, f"token_limit = {self.limit}\nchat_history_token_ratio = {self.ratio}\n"
                                   f"token_flush_size = {self.flush}\nmemory_blocks = [{kinds}]\n",
                      tmax=int(self.limit * self.ratio), floor=floor)

    def run(self, **kw: Any) -> MemoryRun:
        return MemoryRun.build(token_limit=self.limit, ratio=self.ratio, flush=self.flush, blocks=self.blocks, **kw)

    def label(self, floor: int | None = None, *, sizes: bool = True) -> str:
        blocks = ", ".join(self.blocks) or "no blocks"
        where = f", floor {floor}" if floor is not None else ""
        return (f"Memory (token_limit={self.limit}, chat_history_token_ratio={self.ratio}, token_flush_size="
                f"{self.flush}, {blocks}){where}, {len(self.turns)} turns"
                + (f" {[list(t) for t in self.turns]}" if sizes else ""))


@dataclass(frozen=True)
class BufferSession:
    """A ``ChatSummaryMemoryBuffer``'s knobs (``llm``: an echoing LLM summarizes) and a session."""

    turns: tuple[tuple[int, ...], ...]
    limit: int
    llm: bool

    def policy(self, floor: int = 0) -> Policy:
        return policy(BUFFER.name, f"token_limit = {self.limit}\nllm = {str(self.llm).lower()}\n", floor=floor)

    def label(self, floor: int | None = None, *, sizes: bool = True) -> str:
        where = f", floor {floor}" if floor is not None else ""
        return (f"ChatSummaryMemoryBuffer (token_limit={self.limit}, llm={self.llm}){where}, {len(self.turns)} turns"
                + (f" {[list(t) for t in self.turns]}" if sizes else ""))


# -- the comparison (returns the real compactions compared, raises Mismatch) --------------------------


def compare_memory(session: MemorySession) -> int:
    """Drive ``Memory`` and the model over one session; raise :class:`Mismatch` on a difference
    the preset does not declare. Returns the flushes compared."""
    pol = session.policy()
    real = session.run()
    state = State()
    flushes = 0
    where = session.label()
    for i, sizes in enumerate(session.turns):
        events: list[Event] = []
        found = step(pol, state, sum(sizes), events, messages=len(sizes))
        prompts = len(real.llm.prompts)
        real.put(i, sizes)
        flushed = real.flushed[-1]
        at = flushes + 1
        left = sorted(set(range(i + 1)) - set(real.active[-1]) - set().union(*real.flushed[:-1]))
        if flushed != left:
            raise Mismatch(f"append {i} ({where}): Memory archived turns {flushed}, the turns that left its "
                           f"active history are {left}", at)
        if session.covered:
            fired = any(e.kind in ("compact", "attempt") for e in events)
            if found:
                raise Mismatch(f"append {i} ({where}): the model finds {[f.kind for f in found]} with a fact "
                               "block that covers every flush", at)
            if fired != bool(flushed):
                raise Mismatch(f"append {i} ({where}): Memory flushed turns {flushed}, the model "
                               f"{'compacted' if fired else 'did not compact'}", at)
            shown = set().union(*(tags(p) for p in real.llm.prompts[prompts:]))
            flushed_tags = {(t, m) for t in flushed for m in range(len(session.turns[t]))}
            if not flushed_tags <= shown:
                raise Mismatch(f"append {i} ({where}): the fact LLM was not shown {sorted(flushed_tags - shown)}, "
                               "which Memory flushed", at)
            block = real.memory.memory_blocks[0]
            assert isinstance(block, FactExtractionMemoryBlock)
            facts = {x for f in block.facts for x in tags(f)}
            if not flushed_tags <= facts:
                raise Mismatch(f"append {i} ({where}): the facts lack {sorted(flushed_tags - facts)}", at)
        else:
            dropped = [j for e in events if e.kind == "truncate" for j in range(*e.data)]
            if bool(dropped) != bool(flushed) or flushed[: len(dropped)] != dropped:
                raise Mismatch(f"append {i} ({where}): Memory flushed turns {flushed}, the model dropped "
                               f"{dropped} (flush_batches: the first flush at the same append, the model's "
                               "dropped turns the oldest flushed)", at)
        flushes += bool(flushed)
        resync(state, real.active[-1])
    context = tags("\n".join(m.content or "" for m in real.memory.get()))
    everything = _all_tags(session.turns)
    if session.covered:
        if context != everything:
            raise Mismatch(f"{where}: markers lost with a covering fact block: {sorted(everything - context)}",
                           flushes)
    else:
        archived = {(t, m) for fl in real.flushed for t in fl for m in range(len(session.turns[t]))}
        # what a vector block's retrieval or a fact block of priority 1 brings back is not judged
        # (vector_retrieval; a truncatable block is no coverage): only that nothing else is lost
        exact = not {"vector", "fact-priority"} & set(session.blocks)
        if not everything - context <= archived or (exact and everything - context != archived):
            raise Mismatch(f"{where}: markers lost {sorted(everything - context)}, flushed {sorted(archived)}",
                           flushes)
    return flushes


def compare_buffer(session: BufferSession) -> int:
    """Drive ``ChatSummaryMemoryBuffer`` (``get()`` after each turn) and the model over one session;
    raise :class:`Mismatch` on a difference. Returns the ``get()`` calls that deleted something."""
    pol = session.policy()
    real = BufferRun.build(token_limit=session.limit, llm=session.llm)
    state = State()
    covered: set[int] = set()
    compactions = 0
    where = session.label()
    for i, sizes in enumerate(session.turns):
        before = [*state.verbatim, i]
        events: list[Event] = []
        found = step(pol, state, sum(sizes), events, messages=len(sizes))
        real.put_and_get(i, sizes)
        deleted = real.deleted[-1]
        at = compactions + 1
        gone = [j for j in before if j not in state.verbatim]
        if gone != deleted or state.verbatim != real.kept[-1]:
            raise Mismatch(f"append {i} ({where}): the buffer deleted {deleted} and kept {real.kept[-1]}, the model "
                           f"dropped {gone} and kept {state.verbatim}", at)
        holes = sorted(j for f in found if f.kind == "hole" for j in f.offsets)
        if holes != ([] if session.llm else deleted):
            raise Mismatch(f"append {i} ({where}): the model's holes {holes}, the buffer lost "
                           f"{[] if session.llm else deleted}", at)
        if session.llm:
            wanted = {(t, m) for t in {*deleted, *(covered if deleted else ())} for m in range(len(session.turns[t]))}
            if not wanted <= real.shown[-1]:
                raise Mismatch(f"append {i} ({where}): the summarizer was not shown {sorted(wanted - real.shown[-1])}",
                               at)
            covered |= set(deleted)
            summary = {t for m in real.outputs[-1] if m.role == "system" for t, _ in tags(m.content or "")}
            if summary != covered:
                raise Mismatch(f"append {i} ({where}): the summary holds turns {sorted(summary)}, the buffer "
                               f"summarized {sorted(covered)}", at)
        compactions += bool(deleted)
    context = tags("\n".join(m.content or "" for m in real.outputs[-1])) if real.outputs else set()
    everything = _all_tags(session.turns)
    lost = {t for t, _ in everything - context}
    expected = set() if session.llm else {t for d in real.deleted for t in d}
    if lost != expected:
        raise Mismatch(f"{where}: turns lost {sorted(lost)}, the model's holes {sorted(expected)}", compactions)
    return compactions


# -- the adapter -------------------------------------------------------------------------------------


def _first_finding(pol: Policy, turns: Sequence[Sequence[int]]) -> int | None:
    """The first append at which the preset's model finds a hole or a floor finding (before it,
    the model and the real memory agree turn for turn, ``flush_batches`` included)."""
    state = State()
    for i, sizes in enumerate(turns):
        if any(f.kind in ("hole", "floor") for f in step(pol, state, sum(sizes), [], messages=len(sizes))):
            return i
    return None


def _judge(found: int | None, refused: int | None, allowed: int, turns: int, must_refuse: bool) -> int:
    if must_refuse and refused is None:
        raise Mismatch(f"the adapter refused none of the {turns} appends ({allowed} flushes ran) of a session "
                       f"where the preset's model finds a hole at append {found}", allowed)
    if refused != found:
        raise Mismatch(f"the adapter refused append {refused}, the preset's model finds its first hole or floor "
                       f"finding at append {found}", allowed + 1)
    return allowed


def adapter_memory(session: MemorySession, floor: int = 0, *, must_refuse: bool = False) -> int:
    """``GuardedMemory`` (``recovery_floor_span=floor``, halt) over ``session``: it refuses at the
    append where the preset's model (at ``floor``) finds its first hole or floor finding, and
    allows every flush before it. Returns the flushes it allowed."""
    found = _first_finding(session.policy(floor), session.turns)
    real = session.run(memory_class=GuardedMemory, recovery_floor_span=floor, on_refuse="halt")
    refused = None
    for i, sizes in enumerate(session.turns):
        try:
            real.put(i, sizes)
        except UnrecoverableCompactionError:
            refused = i
            break
    return _judge(found, refused, sum(map(bool, real.flushed)), len(session.turns), must_refuse)


def adapter_buffer(session: BufferSession, floor: int = 0, *, must_refuse: bool = False) -> int:
    """``GuardedChatSummaryMemoryBuffer`` (``recovery_floor_span=floor``, halt), ``get()`` after each
    turn: refused where the model finds its first hole or floor finding, allowed before it."""
    found = _first_finding(session.policy(floor), session.turns)
    real = BufferRun.build(token_limit=session.limit, llm=session.llm, buffer_class=GuardedChatSummaryMemoryBuffer,
                           recovery_floor_span=floor, on_refuse="halt")
    refused = None
    for i, sizes in enumerate(session.turns):
        try:
            real.put_and_get(i, sizes)
        except UnrecoverableCompactionError:
            refused = i
            break
    return _judge(found, refused, sum(map(bool, real.deleted)), len(session.turns), must_refuse)


# -- doctor's cases ----------------------------------------------------------------------------------

#: ten turns of one to three messages, 35 tokens: each memory flushes or summarizes several times
FIXED_TURNS = ((3, 3), (2, 4, 1), (5,), (3, 3), (4, 2), (6,), (2, 2, 2), (3, 3), (5, 1), (4,))
ONES = tuple([(1,)] * 40)
#: Memory without a block first on 40 turns of one token (the history is at every size, so a budget
#: one token off is seen at the first flush; 7 flushes), then on the ten turns, then with a fact block
FIXED_MEMORY = (MemorySession.of(ONES, 40, 0.5, 3), MemorySession.of(FIXED_TURNS, 40, 0.5, 5),
                MemorySession.of(FIXED_TURNS, 40, 0.5, 5, ("fact",)))
#: the buffer on both (without an LLM: a truncation; with one: summaries), 10 tokens kept
FIXED_BUFFER = (BufferSession(ONES, 10, False), BufferSession(FIXED_TURNS, 10, False), BufferSession(ONES, 10, True),
                BufferSession(FIXED_TURNS, 10, True))
#: examples/presets/llamaindex-memory-defaults.toml's trace at Memory's defaults: turn 0 is flushed
#: to no block at append 2
DEFAULTS = MemorySession(((8000,), (5001,), (8000,)), 30000, 0.7, 3000)
MEMORY_BLOCKS = ((), ("static",), ("vector",), ("fact-priority",), ("fact",))


def _random_turns(rng: random.Random, tmax: int = 40, count: int = 30) -> list[list[int]]:
    """A session as the differential tests' ``turns`` strategy draws it."""
    return [[rng.randint(1, max(1, tmax // 4)) for _ in range(rng.randint(1, 4))]
            for _ in range(rng.randint(1, count))]


def random_memory(rng: random.Random) -> MemorySession:
    """Knobs and a session as tests/presets/test_llamaindex_preset.py draws them."""
    return MemorySession.of(_random_turns(rng), rng.randint(20, 90), rng.choice((0.5, 0.7, 1.0)), rng.randint(1, 30),
                            rng.choice(MEMORY_BLOCKS))


def random_buffer(rng: random.Random) -> BufferSession:
    return BufferSession(tuple(map(tuple, _random_turns(rng))), rng.randint(8, 80), rng.random() < 0.5)


def _fixed() -> int:
    """The fixed sessions through Memory (no block: truncation; a fact block) and the buffer
    (without and with an LLM): every run flushes or summarizes."""
    total = 0
    for session in (*FIXED_MEMORY, *FIXED_BUFFER):
        compared = compare_memory(session) if isinstance(session, MemorySession) else compare_buffer(session)
        if not compared:
            raise Mismatch(f"the fixed session compacted nothing on {session.label()}: the check would be vacuous")
        total += compared
    return total


def cases(rng: random.Random, sessions: int) -> list[Case]:
    fixed = "; ".join(s.label(sizes=False) for s in (*FIXED_MEMORY, *FIXED_BUFFER))
    out = [Case("preset", f"the fixed sessions: {fixed}", _fixed)]
    for i in range(sessions - 1):
        if i % 2 == 0:
            memory = random_memory(rng)
            out.append(Case("preset", memory.label(), functools.partial(compare_memory, memory)))
        else:
            buffer = random_buffer(rng)
            out.append(Case("preset", buffer.label(), functools.partial(compare_buffer, buffer)))
    lossy, facts = DEFAULTS, FIXED_MEMORY[2]
    out.append(Case("adapter", lossy.label(8), lambda: adapter_memory(lossy, 8, must_refuse=True)))
    out.append(Case("adapter", facts.label(0), lambda: adapter_memory(facts, 0)))
    summarizing = FIXED_BUFFER[3]
    out.append(Case("adapter", summarizing.label(0), lambda: adapter_buffer(summarizing, 0)))
    memory, buffer = random_memory(rng), random_buffer(rng)
    out.append(Case("adapter", memory.label(0), functools.partial(adapter_memory, memory, 0)))
    out.append(Case("adapter", buffer.label(0), functools.partial(adapter_buffer, buffer, 0)))
    return out
