"""check-config's verdicts on Strands Agents' conversation managers replayed through the real package
(brief 6d, issue 26 item 2), as tests/presets/test_trace_replay.py does for LangChain and langmem.
Runs where strands-agents is installed: its own venv, ``.venvs/py3.12-strands`` (.ci/versions).

Every ``examples/presets/strands-*.toml`` and a few random policies of the sliding window, on the
real ``Agent`` and manager with the scripted ``Model`` of :mod:`tailguard.doctor.drivers.strands`
(every message tagged ``[m<i>]``; the summarizer writes ``[s<k>]`` and the oracle follows what it
was shown).

- **Sliding window** (a turn is an invocation): the trace's messages per turn are an invocation's
  messages (a prompt, tool rounds, an answer; an odd count ends on a tool that cancels the
  invocation). After each invocation a turn with a message no context or summary holds is lost (a
  hole, at the invocation it is first lost). The real manager loses nothing before the trace's
  last invocation and there exactly the named turns; one message short there, what the model
  loses (the boundary is the real one).
- **Summarizing** (safe examples): random and adversarial sessions (turns of the largest size,
  tool rounds) at real sizes: no marker lost, and after every summary the floor messages verbatim.
"""

from __future__ import annotations

import os
import random
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("TAILGUARD_REQUIRE_STRANDS") != "1":  # its own venv (watchdog 6): see test_strands_preset.py
    pytest.importorskip("strands", reason="install the strands extra (its own venv: watchdog, see docs)")

from strands.agent.conversation_manager import SlidingWindowConversationManager, SummarizingConversationManager

from tailguard.doctor.drivers import strands as sd
from tailguard.pipeline.model import floor_turns
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.presets.strands import SLIDING, SUMMARIZING
from tailguard.pipeline.solver import Budget
from tests.presets.replay_check import Loss, check_boundary, check_reproduces, counts_of, decided, sessions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("strands-*.toml"))


def knobs_of(text: str) -> tuple[str, dict[str, Any]]:
    table = dict(tomllib.loads(text)["framework"])
    name = str(table.pop("name"))
    preset = SLIDING if name == SLIDING.name else SUMMARIZING
    return name, {**{k.name: k.default for k in preset.knobs}, **table}


def turns_lost(invocations: Sequence[Sequence[int]], gone_tags: set[int], upto: int) -> set[int]:
    return {j for j, tags in enumerate(invocations[: upto + 1]) if set(tags) & gone_tags}


def replay_sliding(knobs: dict[str, Any], counts: Sequence[int]) -> list[Loss]:
    """Each invocation's loss on the real ``SlidingWindowConversationManager``."""
    sess = sd.build(SlidingWindowConversationManager(window_size=knobs["window_size"], per_turn=knobs["per_turn"]))
    out: list[Loss] = []
    gone: set[int] = set()
    for k, count in enumerate(counts):
        sess.invoke(12, sd.of_messages(count))
        lost = turns_lost(sess.invocations, sd.lost(sess.sent, sess.agent.messages, sess.model.prompts), k)
        out.append(Loss(holes=lost - gone))  # a truncated floor turn is a hole: no floor loss here
        gone |= lost
    return out


def summarizing_session(sizes: Sequence[int], counts: Sequence[int]) -> list[sd.Invocation]:
    """The turns as invocations: a one-message turn opens an invocation (its prompt) or closes it
    (its answer), a two-message turn is a tool round inside one; an open one gets a short answer.
    Sizes in characters, at least room for a message's tag (a call: its JSON and tag)."""
    out: list[sd.Invocation] = []
    current: sd.Invocation | None = None
    for size, count in zip(sizes, counts, strict=True):
        if count == 2:
            if current is None:
                current = sd.Invocation(12, [], 0)
            call = max(sd.CALL_OVERHEAD + 12, size // 2)
            current.rounds.append((call, max(12, size - call)))
        elif current is None:
            current = sd.Invocation(max(12, size), [], 0)
        else:
            current.answer = max(12, size)
            out.append(current)
            current = None
    if current is not None:
        current.answer = 12
        out.append(current)
    return out


def check_summarizing_safe(name: str, policy: Policy, knobs: dict[str, Any], sizes: Sequence[int],
                           counts: Sequence[int]) -> int:
    """One session on the real ``SummarizingConversationManager``: nothing lost, the floor verbatim
    after every summary; returns the summaries made."""
    manager = SummarizingConversationManager(summary_ratio=knobs["summary_ratio"],
                                             preserve_recent_messages=knobs["preserve_recent_messages"],
                                             summarization_system_prompt=sd.SUMMARY_SYSTEM)
    sess = sd.build(manager, window=knobs["window"], summary_tokens=knobs["summary_tokens"])
    message_sizes: list[int] = []
    message_counts: list[int] = []
    for inv in summarizing_session(sizes, counts):
        summaries = len(sess.model.prompts)
        sess.invoke(inv.prompt, inv.steps())
        for turn in inv.turns():
            message_sizes.append(turn.tokens)
            message_counts.append(turn.messages)
        gone = sd.lost(sess.sent, sess.agent.messages, sess.model.prompts)
        assert not gone, (name, list(sizes), list(counts), sorted(gone))
        assert "[truncated:" not in str(sess.agent.messages), name  # a cut inside a message: a loss
        if len(sess.model.prompts) > summaries:
            raw, _ = sd.context_tags(sess.agent.messages)
            starts = [sum(message_counts[:j]) for j in range(len(message_counts))]
            floor = floor_turns(policy, message_sizes, message_counts)
            missing = [j for j in floor if not set(range(starts[j], starts[j] + message_counts[j])) <= set(raw)]
            assert not missing, (name, list(sizes), list(counts), missing)
    return len(sess.model.prompts)


def check(name: str, text: str, seed: int, count: int = 2, length: int = 40, budget: Budget | None = None) -> str:
    policy, got = decided(text, name, budget)
    framework, knobs = knobs_of(text)
    if got.verdict == "unsafe":
        assert framework == SLIDING.name, (name, got.findings)  # summarizing: no unsafe policy replayed here
        counts = counts_of(policy, got)
        assert max(counts) <= knobs["window_size"], (name, counts)  # not the declared tool_pair_fallback
        check_reproduces(name, got, replay_sliding(knobs, counts))
        check_boundary(name, policy, got, lambda _, fewer: replay_sliding(knobs, fewer))
        return "unsafe"
    for sizes, counts in sessions(policy, seed, count, length):
        if framework == SLIDING.name:
            real = replay_sliding(knobs, counts)
            assert not any(real), (name, counts, [(i, x) for i, x in enumerate(real) if x])
        else:
            check_summarizing_safe(name, policy, knobs, sizes, counts)
    return "safe"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_strands(path: Path) -> None:
    check(path.name, path.read_text(encoding="utf-8"), seed=len(path.name))


def test_the_examples_are_the_expected_ones() -> None:
    """Not vacuous: the sliding default's hole is replayed; the summarizing example's adversarial
    session (every turn the largest) summarizes on Strands, and keeps the floor there."""
    verdicts = {p.name: decided(p.read_text(encoding="utf-8"), p.name)[1].verdict for p in EXAMPLES}
    assert verdicts == {"strands-defaults.toml": "unsafe", "strands-summarizing.toml": "safe"}
    text = (ROOT / "examples/presets/strands-summarizing.toml").read_text(encoding="utf-8")
    policy, _ = decided(text, "strands-summarizing.toml")
    sizes, counts = sessions(policy, 0, 0, 60)[0]
    assert check_summarizing_safe("strands-summarizing.toml", policy, knobs_of(text)[1], sizes, counts) >= 2


def random_policy(seed: int) -> str:
    rng = random.Random(seed)
    window_size = rng.randint(4, 24)
    per_turn = rng.choice(("false", "true", str(rng.randint(1, 3))))
    return (f'name = "random-{seed}"\nturn_tokens = [1, 100]\n'
            f'messages_per_turn = [2, {rng.randint(2, min(8, window_size))}]\n'
            f'floor = {rng.randint(0, 6)}\nfloor_unit = "messages"\n\n[framework]\nname = "{SLIDING.name}"\n'
            f"window_size = {window_size}\nper_turn = {per_turn}\n")


CI_SEEDS = tuple(range(6))


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_strands(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=1, length=20, budget=Budget.of(20))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 50))
def test_random_policies_verdicts_reproduce_on_strands_long(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=3, length=40, budget=Budget.of(20))
