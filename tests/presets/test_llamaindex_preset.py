"""The LlamaIndex presets against the real package (brief 6c, 6d): ``llamaindex.Memory`` and
``llamaindex.ChatSummaryMemoryBuffer``.

For every append the real memory runs (tailguard.doctor.drivers.llamaindex, which ``tailguard
doctor`` runs too: the real ``Memory`` on its SQL store and the real blocks, the real
``ChatSummaryMemoryBuffer``, an echoing ``CustomLLM``) and the preset's model steps; what left
the history, what the summarizer or the fact LLM was shown and what stayed are compared.
``Memory``'s flush batches are a declared difference (``flush_batches``): there the model is
re-synchronised to the real history before each append, and the first loss and the model's
dropped turns are checked against the real flush. The unsafe verdicts' traces are replayed on
the real package and lose exactly the named turns; the safe examples lose nothing on random
sessions at real sizes (marker oracle).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("llama_index.core", reason="install the frameworks extra (CI does)")

from tailguard.cli.main import main
from tailguard.doctor.drivers.llamaindex import (
    FIXED_BUFFER,
    FIXED_MEMORY,
    SUMMARY_TAG,
    BufferRun,
    BufferSession,
    EchoLLM,
    MemoryRun,
    MemorySession,
    compare_buffer,
    compare_memory,
    policy,
    resync,
    tags,
)
from tailguard.pipeline.model import Event, State, step
from tailguard.pipeline.policy import PolicyError
from tailguard.pipeline.presets import find
from tailguard.pipeline.presets.llamaindex import BUFFER, MEMORY

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "presets"
RUNS = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def turns(tmax: int, count: int = 30) -> st.SearchStrategy[list[list[int]]]:
    message = st.integers(1, max(1, tmax // 4))
    return st.lists(st.lists(message, min_size=1, max_size=4), min_size=1, max_size=count)


# -- Memory ---------------------------------------------------------------------------------

@pytest.mark.parametrize("blocks", [(), ("static",), ("vector",), ("fact-priority",)],
                         ids=["no-blocks", "static", "vector", "fact-priority-1"])
@RUNS
@given(session=turns(40), limit=st.integers(20, 90), ratio=st.sampled_from([0.5, 0.7, 1.0]),
       flush=st.integers(1, 30))
def test_memory_flushes_where_the_truncate_stage_drops(blocks: tuple[str, ...], session: list[list[int]],
                                                       limit: int, ratio: float, flush: int) -> None:
    compare_memory(MemorySession.of(session, limit, ratio, flush, blocks))


@RUNS
@given(session=turns(40), limit=st.integers(20, 90), flush=st.integers(1, 30))
def test_memory_fact_block_is_shown_every_flush(session: list[list[int]], limit: int, flush: int) -> None:
    compare_memory(MemorySession.of(session, limit, 0.7, flush, ("fact",)))


def test_a_flush_can_take_more_than_the_model_drops() -> None:
    """``flush_batches`` is real: with a big ``token_flush_size`` Memory flushes more turns than
    the truncate stage drops, and never fewer."""
    pol = policy("llamaindex.Memory", "token_limit = 40\nchat_history_token_ratio = 0.5\ntoken_flush_size = 15\n",
                 tmax=20)
    real = MemoryRun.build(token_limit=40, ratio=0.5, flush=15)
    state = State()
    extra = False
    for i in range(12):
        events: list[Event] = []
        step(pol, state, 6, events, messages=2)
        real.put(i, [3, 3])
        dropped = [j for e in events if e.kind == "truncate" for j in range(*e.data)]
        assert real.flushed[-1][: len(dropped)] == dropped
        extra |= len(real.flushed[-1]) > len(dropped)
        resync(state, real.active[-1])
    assert extra


# -- ChatSummaryMemoryBuffer ----------------------------------------------------------------

@pytest.mark.parametrize("llm", [False, True], ids=["no-llm", "llm"])
@RUNS
@given(session=turns(40), limit=st.integers(8, 80))
def test_buffer_deletes_summarizes_and_keeps_what_the_model_says(llm: bool, session: list[list[int]],
                                                                 limit: int) -> None:
    compare_buffer(BufferSession(tuple(map(tuple, session)), limit, llm))


def test_the_fixed_sessions_compact() -> None:
    """doctor's fixed session flushes and summarizes on each memory (never vacuous)."""
    assert all(compare_memory(s) for s in FIXED_MEMORY) and all(compare_buffer(s) for s in FIXED_BUFFER)


# -- the verdicts at real sizes, replayed on the real package ---------------------------------

def check(path: Path) -> dict[str, object]:
    out, err = io.StringIO(), io.StringIO()
    main(["check-config", "--format", "json", str(path)], stdout=out, stderr=err)
    result: dict[str, object] = json.loads(out.getvalue())["policies"][0]
    return result


def hole(path: Path) -> dict[str, object]:
    entry = check(path)
    assert entry["verdict"] == "unsafe"
    return next(f for f in entry["findings"] if f["kind"] == "hole")  # type: ignore[attr-defined, union-attr]


def test_memory_defaults_counterexample_reproduces() -> None:
    finding = hole(EXAMPLES / "llamaindex-memory-defaults.toml")
    real = MemoryRun.build(token_limit=30000, ratio=0.7, flush=3000)
    for i, size in enumerate(finding["trace"]):  # type: ignore[arg-type]
        real.put(i, [size])
    context = "\n".join(m.content or "" for m in real.memory.get())
    lost = sorted(t for t in range(len(finding["trace"])) if (t, 0) not in tags(context))  # type: ignore[arg-type]
    assert lost == finding["offsets"]
    assert real.flushed[finding["step"] - 1] == finding["offsets"]  # type: ignore[operator]


def test_buffer_defaults_counterexample_reproduces() -> None:
    finding = hole(EXAMPLES / "llamaindex-chat-summary-defaults.toml")
    real = BufferRun.build(token_limit=2000, llm=False)
    for i, size in enumerate(finding["trace"]):  # type: ignore[arg-type]
        real.put_and_get(i, [size])
    context = "\n".join(m.content or "" for m in real.outputs[-1])
    lost = sorted(t for t in range(len(finding["trace"])) if (t, 0) not in tags(context))  # type: ignore[arg-type]
    assert lost == finding["offsets"]


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(session=st.lists(st.lists(st.integers(1, 2000), min_size=1, max_size=4), min_size=10, max_size=40))
def test_the_safe_examples_lose_nothing_at_real_sizes(session: list[list[int]]) -> None:
    assert check(EXAMPLES / "llamaindex-chat-summary-llm.toml")["verdict"] == "safe"
    assert check(EXAMPLES / "llamaindex-memory-facts.toml")["verdict"] == "safe"
    buf = BufferRun.build(token_limit=96000, llm=True)
    mem = MemoryRun.build(token_limit=30000, ratio=0.7, flush=3000, blocks=["fact"])
    for i, sizes in enumerate(session):
        buf.put_and_get(i, sizes)
        mem.put(i, sizes)
    everything = {(t, m) for t, s in enumerate(session) for m in range(len(s))}
    assert tags("\n".join(m.content or "" for m in buf.outputs[-1])) == everything
    assert tags("\n".join(m.content or "" for m in mem.memory.get())) == everything
    kept = [m for m in buf.outputs[-1] if m.role != "system"]
    assert sum(1 for _ in kept) >= 8 or len(everything) < 8  # the floor of 8 messages


# -- knobs and errors -----------------------------------------------------------------------

def test_defaults_are_the_frameworks() -> None:
    from llama_index.core.memory import ChatSummaryMemoryBuffer, Memory

    mem = Memory.from_defaults()
    assert (mem.token_limit, mem.chat_history_token_ratio, mem.token_flush_size, mem.memory_blocks) == (
        MEMORY.knob("token_limit").default, MEMORY.knob("chat_history_token_ratio").default,
        MEMORY.knob("token_flush_size").default, list(MEMORY.knob("memory_blocks").default))
    buf = ChatSummaryMemoryBuffer.from_defaults()
    assert (buf.token_limit, buf.llm, buf.count_initial_tokens) == (2000, None, False)
    assert find("llama_index.core.memory.Memory") is MEMORY and find("llamaindex.ChatSummaryMemoryBuffer") is BUFFER
    with_llm = policy("llamaindex.ChatSummaryMemoryBuffer", "llm = true\ncontext_window = 128000\n")
    assert with_llm.stages[0].keep == int(128000 * 0.75) == ChatSummaryMemoryBuffer.from_defaults(  # type: ignore[attr-defined]
        llm=EchoLLM()).token_limit


@pytest.mark.parametrize(("knobs", "floor", "tmax", "key", "reason"), [
    ('memory_blocks = [{kind = "graph"}]\n', 0, 40, "framework.memory_blocks", "kind must be one of"),
    ('memory_blocks = [{kind = "fact"}, {kind = "fact"}]\n', 0, 40, "framework.memory_blocks", "unique names"),
    ('memory_blocks = [{kind = "fact"}]\n', 8, 40, "floor", "with a fact block"),
    ("", 0, 30000, "turn_tokens", "can exceed the history budget"),
    ("chat_history_token_ratio = 1.5\n", 0, 40, "framework.chat_history_token_ratio", "in (0, 1]"),
])
def test_memory_knob_errors(knobs: str, floor: int, tmax: int, key: str, reason: str) -> None:
    with pytest.raises(PolicyError) as info:
        policy("llamaindex.Memory", knobs, tmax=tmax, floor=floor)
    assert info.value.key == key and reason in info.value.reason, str(info.value)


def test_buffer_knob_errors() -> None:
    with pytest.raises(PolicyError, match="exceeds token_limit"):
        policy("llamaindex.ChatSummaryMemoryBuffer", "count_initial_tokens = true\ninitial_token_count = 3000\n")
    with pytest.raises(PolicyError, match="expected true or false"):
        policy("llamaindex.ChatSummaryMemoryBuffer", "llm = 1\n")


def test_summary_markers_are_the_llms() -> None:
    """The oracle is live: the echo LLM's summaries carry their own tag and what they were shown."""
    real = BufferRun.build(token_limit=10, llm=True)
    for i in range(4):
        real.put_and_get(i, [4, 4])
    summary = next(m.content or "" for m in real.outputs[-1] if m.role == "system")
    assert SUMMARY_TAG.search(summary) and (0, 0) in tags(summary)
