"""The deepagents defaults' counterexample replayed through the real ``create_deep_agent``.

``create_deep_agent`` runs as installed (its own ``FilesystemMiddleware`` and ``write_file`` tool
over a real ``FilesystemBackend``, its system prompt), with deepagents' own
``create_summarization_middleware(model, backend, token_counter=..., summarizer=...)`` passed in
``middleware=[...]`` (it replaces the default by name: the defaults of a 200k profile, argument
truncation on). The agent is LangChain's fake chat model: one invocation of two human messages,
then at each call the next turn's ``write_file`` call, whose result the real tool writes. So
turn 0 is the two human messages and every later turn a ``write_file`` call and its result: two
messages a turn, and one model call after each turn, as the preset's model steps.

The policy is the shipped defaults with that shape: ``messages_per_turn = [2, 2]``,
``base_tokens`` the system prompt ``create_deep_agent`` builds (measured by a first run), and
``clippable_turn_tokens`` what this agent's turns need to hold an argument over 2,000
characters (the tool's result and the path take 27 tokens of a turn). The marker oracle: at each
model call, a tag is held when the call's messages (the clipped view, the summary) or the offload
files hold it. The printed trace must lose nothing before its last append and then exactly the
tags of the turns the finding names (turn 0 aside: human messages, nothing a clip can cut).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import create_summarization_middleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from tailguard.pipeline.model import ARGS_CLIPPED, replay
from tailguard.pipeline.policy import parse_policy
from tailguard.pipeline.solver import Budget, decide
from tests.presets.test_deepagents_truncate_args import DEFAULTS, Summarizer, make_counter, tags, text_of

RESULT = len("Updated file /w/t000.txt")  # write_file's result for these paths
PATH_TOKENS = 3  # ceil(len("/w/t000.txt") / 4)
SUMMARY_TOKENS = 1000


class Agent(GenericFakeChatModel):
    """Answers call ``k`` with turn ``k + 1``'s ``write_file`` call (``sizes[k + 1]`` tokens with
    its result), then ``done``. At each call it records the tags then held nowhere."""

    sizes: list[int] = []  # noqa: RUF012 - pydantic fields, replaced per instance
    lost: list[set[str]] = []  # noqa: RUF012
    system: list[int] = []  # noqa: RUF012 - the system prompt's length at each call
    root: str = ""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        call = len(self.lost)
        head = messages[0]
        self.system.append(len(str(head.content)) if isinstance(head, SystemMessage) else 0)
        sent = set().union(*(turn_tags(j, self.sizes) for j in range(call + 1)))
        held = tags(text_of(messages))
        held |= tags("".join(p.read_text() for p in (Path(self.root) / "conversation_history").glob("*.md")))
        self.lost.append(sent - held)
        if call + 1 >= len(self.sizes):
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content="done"))])
        k = call + 1
        args = {"file_path": f"/w/t{k:03d}.txt", "content": argument(k, self.sizes[k])}
        reply = AIMessage(content="", tool_calls=[{"name": "write_file", "args": args, "id": f"c{k}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def argument(k: int, size: int) -> str:
    """The ``content`` argument of turn ``k``: the turn's tokens less its result and path,
    4 characters a token, ending with its tag."""
    tag = f"[t{k}m0]"
    tokens = size - RESULT - PATH_TOKENS
    assert tokens * 4 >= len(tag), size
    return "w" * (4 * tokens - len(tag)) + tag


def first_turn(size: int) -> list[HumanMessage]:
    half = size // 2
    return [HumanMessage(content="[t0m0]".ljust(half, "h")), HumanMessage(content="[t0m1]".ljust(size - half, "h"))]


def turn_tags(k: int, sizes: Sequence[int]) -> set[str]:
    return {"[t0m0]", "[t0m1]"} if k == 0 else {f"[t{k}m0]"}


def run_agent(sizes: list[int]) -> tuple[list[set[str]], int]:
    """Run the agent over ``sizes``; the tags lost at each call, and the system prompt's tokens."""
    with tempfile.TemporaryDirectory() as tmp:
        backend = FilesystemBackend(root_dir=Path(tmp), virtual_mode=True)
        model = Agent(messages=iter(()), sizes=sizes, lost=[], system=[], root=tmp)
        model.profile = {"max_input_tokens": 200000}
        mw = create_summarization_middleware(model, backend, token_counter=make_counter(SUMMARY_TOKENS),
                                             summarizer=Summarizer(messages=iter(())))
        agent = create_deep_agent(model=model, backend=backend, middleware=[mw])
        agent.invoke({"messages": first_turn(sizes[0])}, {"recursion_limit": 4 * len(sizes) + 10})
        assert len(set(model.system)) == 1, model.system
        return model.lost, model.system[0]


def test_the_defaults_trace_replays_through_create_deep_agent() -> None:
    _, base = run_agent([100, 100])  # measure the system prompt create_deep_agent builds
    text = DEFAULTS.read_text().replace("messages_per_turn = [1, 4]", "messages_per_turn = [2, 2]").replace(
        "turn_tokens = [1, 8000]", "turn_tokens = [40, 8000]").replace(
        "base_tokens = 6000", f"base_tokens = {base}") + \
        f"clippable_turn_tokens = {501 + RESULT + PATH_TOKENS}\n"
    policy = parse_policy(text, "agent.toml")
    decision = decide(policy, Budget())
    assert decision.verdict == "unsafe"
    sizes = list(decision.trace)
    found, at = replay(policy, sizes, messages=[2] * len(sizes))
    assert at == len(sizes) and [f.detail for f in found] == [ARGS_CLIPPED]
    lost, measured = run_agent(sizes)
    assert measured == base
    assert len(lost) == len(sizes)
    assert all(not x for x in lost[:-1]), lost
    # turn 0 is the invocation's human messages: no write_file call for a clip to cut, though
    # the model lets any turn of its size hold one; every other turn named is lost, none else
    assert lost[-1] == {f"[t{j}m0]" for j in found[0].offsets if j > 0}, (sorted(lost[-1]), found[0].offsets)
    assert len(found[0].offsets) >= 10
