"""Differential test of the ``deepagents.SummarizationMiddleware`` preset against deepagents.

deepagents' middleware runs as installed (``wrap_model_call`` with a ``ModelRequest`` carrying
a system message, LangChain's ``GenericFakeChatModel`` as summarizer, the test's token counter)
over a real ``FilesystemBackend`` in a temporary directory whose writes fail on the appends
Hypothesis picks (6b ``spill`` with ``on_failure = "proceed"``: the failure is an input of the
session). The preset's model is stepped on the same turns with the same failures; every
compaction is compared: deleted, shown whole, kept, the earlier summary, and what the offload
wrote to the backend.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import EXAMPLES, REQUIRE, SLOW_EXAMPLES, ModelRun, Turn, covers, preset_policy, turns

if not REQUIRE:
    pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")

from deepagents.backends import FilesystemBackend
from deepagents.backends.protocol import EditResult, WriteResult
from deepagents.middleware.summarization import (
    SUMMARIZATION_EVENT_KEY,
    SUMMARIZATION_SESSION_ID_KEY,
    SummarizationMiddleware,
)
from hypothesis import HealthCheck, given, settings, strategies as st
from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from tests.presets.lc_driver import compare, make_counter, observe, summarizer, turn_messages, turn_of

SYSTEM = SystemMessage(content="You are a careful agent. " * 4)


class FlakyBackend(FilesystemBackend):
    """A real ``FilesystemBackend`` whose writes fail while ``failing`` is set."""

    failing = False

    def write(self, *args: Any, **kwargs: Any) -> Any:
        return WriteResult(error="injected write failure") if self.failing else super().write(*args, **kwargs)

    def edit(self, *args: Any, **kwargs: Any) -> Any:
        return EditResult(error="injected write failure") if self.failing else super().edit(*args, **kwargs)


@st.composite
def knobs(draw: st.DrawFn) -> dict[str, Any]:
    trigger = draw(st.one_of(st.tuples(st.just("tokens"), st.integers(400, 5000)),
                             st.tuples(st.just("messages"), st.integers(3, 40))))
    keep = draw(st.one_of(st.tuples(st.just("messages"), st.integers(1, 20)),
                          st.tuples(st.just("tokens"), st.integers(50, 2500))))
    trim = draw(st.one_of(st.none(), st.integers(100, 3000)))
    failures = draw(st.sets(st.integers(1, 40), max_size=10))
    return {"trigger": trigger, "keep": keep, "trim": trim, "summary_tokens": draw(st.integers(20, 400)),
            "failures": failures}


def toml_knobs(k: dict[str, Any]) -> str:
    trim = "false" if k["trim"] is None else k["trim"]
    return (f'trigger = ["{k["trigger"][0]}", {k["trigger"][1]}]\nkeep = ["{k["keep"][0]}", {k["keep"][1]}]\n'
            f'trim_tokens_to_summarize = {trim}\nsummary_tokens = {k["summary_tokens"]}\n'
            'truncate_args_settings = false\n')  # the class's default (None); the factory's is on


def offloaded(root: Path) -> str:
    return "".join(p.read_text() for p in sorted(root.rglob("*.md")))


def run(session: list[Turn], k: dict[str, Any]) -> int:
    policy = preset_policy("deepagents.SummarizationMiddleware", toml_knobs(k),
                           extra=f"base_tokens = {len(SYSTEM.content)}")
    model = summarizer()
    compared = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        backend = FlakyBackend(root_dir=root, virtual_mode=True)
        mw = SummarizationMiddleware(model, backend=backend, trigger=k["trigger"], keep=k["keep"],
                                     token_counter=make_counter(k["summary_tokens"]),
                                     trim_tokens_to_summarize=k["trim"])
        sim = ModelRun(policy)
        messages: list[BaseMessage] = []
        state: dict[str, Any] = {"messages": messages}
        covered: set[int] = set()  # what the real summary covers
        offloaded_turns: set[int] = set()  # what the real offload holds
        for index, turn in enumerate(session):
            messages = [*messages, *turn_messages(index, turn)]
            state["messages"] = messages
            event = state.get(SUMMARIZATION_EVENT_KEY)
            before = mw._apply_event_to_messages(messages, event)
            fails = index + 1 in k["failures"]
            backend.failing = fails
            calls, written = len(model.calls), offloaded(root)
            request = ModelRequest(model=model, messages=messages, system_message=SYSTEM, tools=[],
                                   state=state, runtime=None)  # type: ignore[arg-type]
            response = mw.wrap_model_call(request, lambda req: ModelResponse(result=[AIMessage(content="ok")]))
            real = None
            command = getattr(response, "command", None)
            if command is not None and SUMMARIZATION_EVENT_KEY in command.update:
                state.update(command.update)
                after = mw._apply_event_to_messages(messages, state[SUMMARIZATION_EVENT_KEY])
                prompt = model.calls[-1] if len(model.calls) > calls else ""
                real = observe(before, after, prompt)
                new = offloaded(root)[len(written):]
                spilled = tuple(sorted({t for m in before if (t := turn_of(m)) is not None and str(m.content) in new}))
                assert not fails or spilled == (), "a failed write offloaded something"
                real.spilled = spilled
                assert state.get(SUMMARIZATION_SESSION_ID_KEY)
            predicted, kinds = sim.append(turn, spill_fails=fails)
            outcome = compare(real, predicted, kinds, index + 1, [t.messages for t in session])
            if real is not None and predicted is not None and outcome == "same":
                assert real.spilled == predicted.spilled, \
                    f"append {index + 1}: offloaded {real.spilled}, the model spilled {predicted.spilled}"
            if real is not None:
                compared += 1
                covered = covers(covered, real)
            if real is not None:
                offloaded_turns |= set(real.spilled)
            if outcome == "diverged" and real is not None:  # tail_rounds_up, as declared
                sim.resync(real.kept, covered, offloaded_turns)
    return compared


SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(session=turns(), k=knobs())
def test_deepagents_agrees_with_the_preset_model(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


@pytest.mark.slow
@settings(SETTINGS, max_examples=SLOW_EXAMPLES)
@given(session=turns(max_turns=80), k=knobs())
def test_deepagents_agrees_with_the_preset_model_long(session: list[Turn], k: dict[str, Any]) -> None:
    run(session, k)


def test_the_harness_compares_offloads_and_failures() -> None:
    session = [Turn("human", (200,)), *[Turn("tools", (100, 150, 150)) for _ in range(14)]]
    k = {"trigger": ("tokens", 2000), "keep": ("messages", 6), "trim": 500, "summary_tokens": 100,
         "failures": {8}}
    assert run(session, k) >= 3
