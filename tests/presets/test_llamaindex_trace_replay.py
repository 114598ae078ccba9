"""check-config's verdicts on LlamaIndex's memories replayed through the real package (brief 6d,
issue 26 item 2), as tests/presets/test_trace_replay.py does for LangChain and langmem.

Every ``examples/presets/llamaindex-*.toml`` and a few random policies of both presets: the
trace's turns go to the real ``Memory`` (``put_messages``; its SQL store, its blocks) or the real
``ChatSummaryMemoryBuffer`` (``put``, then ``get()`` after each turn), with the echoing
``CustomLLM`` of :mod:`tailguard.doctor.drivers.llamaindex` as summarizer and fact extractor
(``tokenizer_fn=str.split``: a message of ``k`` tokens is its marker and ``k - 1`` words; a turn's
tokens are in its first message, one each in its replies). After each turn the marker oracle reads
what the model would be sent (``get()``: the history, the summary or facts in it): a turn with a
marker it no longer holds is lost (a hole, reported at the turn it is first lost); for the buffer
with an ``llm``, after a ``get()`` that deleted something, a floor turn not verbatim (and not lost)
is a floor loss (a truncation's floor turn is a hole). The real package loses nothing before the
trace's last turn and there exactly what the findings name (``flush_batches``: a ``Memory`` flush
takes whole batches of ``token_flush_size``; a finding's holes are then a subset of what Memory
loses, asserted as declared where the flush takes more). A ``safe`` verdict survives random and
adversarial sessions at its sizes.
"""

from __future__ import annotations

import random
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("llama_index.core", reason="install the frameworks extra (CI does)")

from tailguard.doctor.drivers.llamaindex import BufferRun, MemoryRun, tags
from tailguard.pipeline.model import floor_turns
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.presets import find
from tailguard.pipeline.presets.llamaindex import BUFFER, MEMORY, buffer_keep, flush_size
from tailguard.pipeline.solver import Budget
from tests.presets.replay_check import Loss, check_boundary, check_reproduces, counts_of, decided, named, sessions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("llamaindex-*.toml"))


def values_of(text: str) -> dict[str, Any]:
    """The preset's knob values as check-config resolves them (defaults included)."""
    table = dict(tomllib.loads(text)["framework"])
    preset = find(str(table.pop("name")))
    assert preset is not None
    out = {k.name: k.default for k in preset.knobs}
    out.update({k: (None if v is False and k in ("token_limit", "context_window") else v) for k, v in table.items()})
    if preset is MEMORY:
        out["memory_blocks"] = [b["kind"] for b in out["memory_blocks"] or []]
        return {"preset": MEMORY, **out}
    assert preset.resolve is not None
    return {"preset": BUFFER, **preset.resolve(out, tuple(table))}


def turn_sizes(size: int, count: int) -> list[int]:
    return [max(1, size - (count - 1)), *[1] * (count - 1)]


def replay(policy: Policy, values: dict[str, Any], sizes: Sequence[int], counts: Sequence[int]) -> list[Loss]:
    out: list[Loss] = []
    gone: set[int] = set()
    turns = [turn_sizes(s, c) for s, c in zip(sizes, counts, strict=True)]
    if values["preset"] is MEMORY:
        memory = MemoryRun.build(token_limit=values["token_limit"], ratio=values["chat_history_token_ratio"],
                                 flush=values["token_flush_size"], blocks=values["memory_blocks"])
        for i, turn in enumerate(turns):
            memory.put(i, turn)
            held = tags("\n".join(m.content or "" for m in memory.memory.get()))
            lost = {t for t in range(i + 1) if any((t, m) not in held for m in range(len(turns[t])))}
            out.append(Loss(holes=lost - gone))
            gone |= lost
        return out
    buffer = BufferRun.build(token_limit=values["token_limit"], llm=bool(values["llm"]),
                             count_initial_tokens=bool(values["count_initial_tokens"]))
    for i, turn in enumerate(turns):
        buffer.put_and_get(i, turn, initial=values["initial_token_count"])
        held = tags("\n".join(m.content or "" for m in buffer.outputs[-1]))
        lost = {t for t in range(i + 1) if any((t, m) not in held for m in range(len(turns[t])))}
        loss = Loss(holes=lost - gone)
        if values["llm"] and buffer.deleted[-1]:
            floor = set(floor_turns(policy, list(sizes[: i + 1]), list(counts[: i + 1])))
            loss.floor = floor - set(buffer.kept[-1]) - lost
        gone |= lost
        out.append(loss)
    return out


def check_unsafe(name: str, text: str, policy: Policy, got: Any) -> None:
    values = values_of(text)
    losses = replay(policy, values, got.trace, counts_of(policy, got))
    want, last = named(got.findings), losses[-1]
    if values["preset"] is MEMORY and last.holes != want.holes:
        # flush_batches (declared): the first loss at the same append, the named holes the oldest of it
        assert not any(losses[:-1]) and want.holes < last.holes, (name, got.trace, losses, want)
        assert sorted(last.holes)[: len(want.holes)] == sorted(want.holes), (name, last, want)
        return
    check_reproduces(name, got, losses)
    check_boundary(name, policy, got, lambda sizes, counts: replay(policy, values, sizes, counts))


def check(name: str, text: str, seed: int, count: int = 2, length: int = 30, budget: Budget | None = None) -> str:
    policy, got = decided(text, name, budget)
    if got.verdict == "unsafe":
        check_unsafe(name, text, policy, got)
        return "unsafe"
    values = values_of(text)
    for sizes, counts in sessions(policy, seed, count, length):
        real = replay(policy, values, [max(s, c) for s, c in zip(sizes, counts, strict=True)], counts)
        assert not any(real), (name, sizes, counts, [(i, x) for i, x in enumerate(real) if x])
    return "safe"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_llamaindex(path: Path) -> None:
    check(path.name, path.read_text(encoding="utf-8"), seed=len(path.name))


def test_the_examples_are_the_expected_ones() -> None:
    verdicts = {p.name: decided(p.read_text(encoding="utf-8"), p.name)[1].verdict for p in EXAMPLES}
    assert verdicts == {"llamaindex-chat-summary-defaults.toml": "unsafe", "llamaindex-chat-summary-llm.toml": "safe",
                        "llamaindex-memory-defaults.toml": "unsafe", "llamaindex-memory-facts.toml": "safe"}


def random_policy(seed: int) -> str:
    """Even seeds: ``Memory`` (with a fact block or none); odd: ``ChatSummaryMemoryBuffer``."""
    rng = random.Random(seed)
    mpt = rng.randint(1, 3)
    if seed % 2 == 0:
        limit = rng.randint(200, 2000)
        ratio = rng.choice((0.5, 0.7, 0.9))
        facts = rng.random() < 0.5
        hi = rng.randint(mpt, int(limit * ratio))
        return (f'name = "random-{seed}"\nturn_tokens = [{mpt}, {hi}]\nmessages_per_turn = [1, {mpt}]\n'
                f'floor = 0\nfloor_unit = "messages"\n\n[framework]\nname = "{MEMORY.name}"\n'
                f"token_limit = {limit}\nchat_history_token_ratio = {ratio}\n"
                f"token_flush_size = {rng.randint(10, limit)}\n"
                + ('memory_blocks = [{kind = "fact"}]\n' if facts else ""))
    limit = rng.randint(50, 1500)
    llm = rng.random() < 0.6
    return (f'name = "random-{seed}"\nturn_tokens = [{mpt}, {rng.randint(mpt + 5, limit)}]\n'
            f'messages_per_turn = [1, {mpt}]\nfloor = {rng.randint(0, 6)}\n'
            f'floor_unit = "{rng.choice(("messages", "turns"))}"\n\n[framework]\nname = "{BUFFER.name}"\n'
            f"token_limit = {limit}\nllm = {str(llm).lower()}\n")


CI_SEEDS = tuple(range(8))


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_llamaindex(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=1, length=20, budget=Budget.of(20))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 60))
def test_random_policies_verdicts_reproduce_on_llamaindex_long(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=3, length=40, budget=Budget.of(20))


def test_helpers_agree_with_the_preset() -> None:
    """The knob values the replay builds the memories with are the preset's (its defaults)."""
    memory = values_of((ROOT / "examples/presets/llamaindex-memory-defaults.toml").read_text(encoding="utf-8"))
    assert (memory["token_limit"], memory["chat_history_token_ratio"], flush_size(memory)) == (30000, 0.7, 3000)
    buffer = values_of((ROOT / "examples/presets/llamaindex-chat-summary-llm.toml").read_text(encoding="utf-8"))
    assert buffer_keep(buffer) == 96000 and buffer["llm"] is True
