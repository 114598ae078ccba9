"""The importer's summed token counts equal LangChain's own ``count_tokens_approximately``.

``tailguard.importers.langchain_tokens`` sums memoized per-message counts where that is provably
the same number and calls LangChain otherwise; checked here against the real function (from the
installed langchain-core) on random message lists: every message type, text and multimodal
content, names, tool calls, usage metadata that makes LangChain scale the count, prefixes and
reorderings, unregistered messages, and counters whose settings make per-message terms
fractional (where it must fall back).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from hypothesis import given, settings, strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from tailguard.importers.langchain_tokens import SummingCounter, summable

COUNTERS: list[Callable[..., int]] = [
    count_tokens_approximately,
    functools.partial(count_tokens_approximately, use_usage_metadata_scaling=True),  # the middleware's
    functools.partial(count_tokens_approximately, use_usage_metadata_scaling=True, chars_per_token=3.3),
    functools.partial(count_tokens_approximately, extra_tokens_per_message=2.5),  # fractional: not summable
    functools.partial(count_tokens_approximately, chars_per_token=3.3, extra_tokens_per_message=0.3),
]

text = st.text(max_size=40)
content = st.one_of(text, st.lists(st.one_of(
    text, st.builds(lambda t: {"type": "text", "text": t}, text),
    st.just({"type": "image_url", "image_url": {"url": "data:,x"}}),
    st.builds(lambda t: {"type": "other", "x": t}, text)), max_size=3))


@st.composite
def message(draw: Any) -> Any:
    kind = draw(st.sampled_from(["human", "ai", "tool", "system"]))
    body, name = draw(content), draw(st.one_of(st.none(), st.text(min_size=1, max_size=5)))
    if kind == "human":
        return HumanMessage(content=body, name=name)
    if kind == "system":
        return SystemMessage(content=body, name=name)
    if kind == "tool":
        return ToolMessage(content=body, tool_call_id=draw(st.text(max_size=8)), name=name)
    calls = draw(st.lists(st.builds(lambda n, i: {"name": n or "f", "args": {"q": n}, "id": i, "type": "tool_call"},
                                    st.text(max_size=5), st.text(max_size=5)), max_size=2))
    usage = draw(st.one_of(st.none(), st.builds(
        lambda a, b: {"input_tokens": a, "output_tokens": b, "total_tokens": a + b},
        st.integers(0, 500), st.integers(0, 500))))
    provider = draw(st.sampled_from([None, "openai", "anthropic"]))
    return AIMessage(content=body, name=name, tool_calls=calls if isinstance(body, str) else [],
                     usage_metadata=usage, response_metadata={"model_provider": provider} if provider else {})


@settings(max_examples=300, deadline=None)
@given(st.lists(message(), max_size=12), st.data())
def test_summed_counts_are_langchains_counts(msgs: list[Any], data: Any) -> None:
    counts = SummingCounter()
    for m in data.draw(st.lists(st.sampled_from(msgs), max_size=len(msgs))) if msgs else []:
        counts.register(m)  # a random part of them: the rest must be counted by LangChain
    wrapped = [(c, counts.wrap(c)) for c in COUNTERS]
    for _ in range(3):
        picked = data.draw(st.lists(st.sampled_from(msgs), max_size=12)) if msgs else []
        for part in (msgs, picked, msgs[: len(msgs) // 2], list(reversed(msgs))):
            for real, mine in wrapped:
                assert mine(part) == real(part), (part, real)


def test_only_whole_term_counters_are_summed() -> None:
    assert [summable(c) for c in COUNTERS] == [True, True, True, False, False]
    assert not summable(len) and not summable(functools.partial(count_tokens_approximately, tools=[]))
    counts = SummingCounter()
    scaling = AIMessage(content="x", usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2})
    counts.register(scaling)
    assert id(scaling) not in counts.known  # it could scale a list's count: always LangChain's own
    plain = HumanMessage(content="hello " * 30)
    counts.register(plain)
    mine = counts.wrap(COUNTERS[1])
    assert mine([plain, plain]) == COUNTERS[1]([plain, plain]) and counts.known[id(plain)][1]  # memoized
