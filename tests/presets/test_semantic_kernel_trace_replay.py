"""check-config's verdicts on Semantic Kernel's chat history reducers replayed through the real
package (brief 6d, issue 26 item 2), as tests/presets/test_trace_replay.py does for LangChain and
langmem.

Every ``examples/presets/semantic-kernel-*.toml`` and a few random policies of both reducers: the
trace is a chat of user messages (turn ``i`` is message ``[m<i>]``; with ``system_message = 1``
turn 0 is the system message) appended with ``auto_reduce`` to the real
``ChatHistoryTruncationReducer`` or ``ChatHistorySummarizationReducer``, whose summarizer is SK's
``OpenAIChatCompletion`` on a stub transport echoing every marker it was shown
(:mod:`tailguard.doctor.drivers.semantic_kernel`). User messages put SK's cut where the model puts
it (the declared ``threshold_window``: SK cuts back to the newest user message in the threshold
window; at ``total - target_count`` when that one is a user's). After each append: a message SK
deleted without showing it to the summarizer is a hole; after a reduction, a floor message not
in the history verbatim (and not a hole) is a floor loss; the markers neither the final history
nor a summary there holds are exactly the holes. The real reducer loses nothing before the
trace's last append and there exactly what the findings name, but for the truncation reducer
with ``threshold_count > 0``, where the declared ``threshold_window`` applies as declared: SK cuts
to ``target_count`` in one go, the stage one message at a time, so the first loss is at the
same append and SK's holes hold the named ones. A ``safe`` verdict survives random chats (random
roles) and adversarial ones (every message a user's) of several lengths.
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
    pytest.importorskip("semantic_kernel", reason="install the frameworks extra (CI does)")

from semantic_kernel.contents import ChatHistorySummarizationReducer, ChatHistoryTruncationReducer

from tailguard.doctor.drivers import semantic_kernel as sk
from tailguard.pipeline.model import floor_turns
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.presets.semantic_kernel import SUMMARIZATION, SUMMARIZATION_KNOBS, TRUNCATION
from tailguard.pipeline.solver import Budget
from tests.presets.replay_check import Loss, check_boundary, check_reproduces, decided, named

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("semantic-kernel-*.toml"))


def knobs_of(text: str) -> dict[str, Any]:
    table = dict(tomllib.loads(text)["framework"])
    framework = table.pop("name")
    return {"framework": framework, **{k.name: k.default for k in SUMMARIZATION_KNOBS}, **table}


def replay(policy: Policy, knobs: dict[str, Any], sizes: Sequence[int],
           roles: Sequence[str] | None = None) -> list[Loss]:
    """Each append's loss on SK: the chat ``roles`` (user messages by default), one a turn."""
    system = bool(knobs["system_message"])
    chat = list(roles or ["user"] * len(sizes))
    if system:
        chat[0] = "system"
    endpoint = sk.StubEndpoint()
    reducer: Any
    if knobs["framework"] == TRUNCATION:
        reducer = ChatHistoryTruncationReducer(target_count=knobs["target_count"],
                                               threshold_count=knobs["threshold_count"], auto_reduce=True)
    else:
        reducer = ChatHistorySummarizationReducer(service=endpoint.service(), target_count=knobs["target_count"],
                                                  threshold_count=knobs["threshold_count"], auto_reduce=True,
                                                  use_single_summary=knobs["use_single_summary"])
    real = sk.run(sk.run_sk(reducer, chat, endpoint))
    out: list[Loss] = []
    lost: set[int] = set()
    for i, got in enumerate(real):
        loss = Loss(holes=set(got["deleted"]) - set(got["shown"]))
        if got["deleted"]:
            floor = set(floor_turns(policy, list(sizes[: i + 1]), [1] * (i + 1)))
            loss.floor = floor - set(got["kept"]) - loss.holes - lost
        lost |= loss.holes
        out.append(loss)
    held = sk.tags(reducer.messages)  # the marker oracle: what no history message nor summary holds
    assert set(range(len(chat))) - held == lost, (sorted(set(range(len(chat))) - held), sorted(lost))
    return out


def check_unsafe(name: str, text: str, policy: Policy, got: Any) -> None:
    knobs = knobs_of(text)
    losses = replay(policy, knobs, got.trace)
    if knobs["framework"] != TRUNCATION or knobs["threshold_count"] == 0:
        check_reproduces(name, got, losses)
        check_boundary(name, policy, got, lambda sizes, _: replay(policy, knobs, sizes))
        return
    # threshold_window (declared): the first loss at the same append, SK's holes hold the named ones
    want, last = named(got.findings), losses[-1]
    assert not any(losses[:-1]) and want.holes and want.holes <= last.holes, (name, got.trace, losses, want)
    assert (last.floor, last.overflow, want.floor, want.overflow) == (set(), False, set(), False), (name, last, want)


def chats(policy: Policy, seed: int, count: int, lengths: Sequence[int]) -> list[list[str]]:
    """Adversarial chats (every message a user's) and random roles, of each length."""
    rng = random.Random(seed)
    out = [["user"] * n for n in lengths]
    out += [[rng.choice(("user", "assistant")) for _ in range(rng.choice(lengths))] for _ in range(count)]
    return out


def check(name: str, text: str, seed: int, count: int = 3, budget: Budget | None = None) -> str:
    policy, got = decided(text, name, budget)
    if got.verdict == "unsafe":
        check_unsafe(name, text, policy, got)
        return "unsafe"
    knobs = knobs_of(text)
    span = knobs["target_count"] + knobs["threshold_count"]
    for roles in chats(policy, seed, count, (3 * span + 1, 4 * span + 3)):
        real = replay(policy, knobs, [policy.turn_max] * len(roles), roles)
        assert not any(real), (name, roles, [(i, x) for i, x in enumerate(real) if x])
    return "safe"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_sk(path: Path) -> None:
    check(path.name, path.read_text(encoding="utf-8"), seed=len(path.name))


def test_the_examples_are_the_expected_ones() -> None:
    """Not vacuous: the truncation example's hole is replayed (threshold 10: as declared), the
    summarization example's chats run."""
    verdicts = {p.name: decided(p.read_text(encoding="utf-8"), p.name)[1].verdict for p in EXAMPLES}
    assert verdicts == {"semantic-kernel-summarization.toml": "safe", "semantic-kernel-truncation.toml": "unsafe"}


def random_policy(seed: int) -> str:
    """Even seeds: the summarization reducer; odd: truncation."""
    rng = random.Random(seed)
    framework = SUMMARIZATION if seed % 2 == 0 else TRUNCATION
    target = rng.randint(2, 8)
    threshold = rng.choice((0, 0, rng.randint(1, 4)))
    extra = f"use_single_summary = {rng.choice(('true', 'false'))}\n" if framework == SUMMARIZATION else ""
    return (f'name = "random-{seed}"\nturn_tokens = [1, 100]\nmessages_per_turn = [1, 1]\n'
            f'floor = {rng.randint(0, target + 3)}\nfloor_unit = "{rng.choice(("messages", "turns"))}"'
            f'\n\n[framework]\nname = "{framework}"\ntarget_count = {target}\nthreshold_count = {threshold}\n'
            f"system_message = {rng.randint(0, 1)}\n{extra}")


CI_SEEDS = tuple(range(11))  # 10: a summarization floor finding


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_sk(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=2, budget=Budget.of(20))


def test_the_random_policies_reach_every_kind() -> None:
    """Not vacuous: the CI seeds hold safe and unsafe verdicts of both reducers, holes and floor
    findings, and a threshold on each reducer."""
    seen: set[tuple[int, str]] = set()
    kinds: set[str] = set()
    for seed in CI_SEEDS:
        _, got = decided(random_policy(seed), f"random-{seed}", Budget.of(20))
        seen.add((seed % 2, got.verdict))
        kinds |= {f.kind for f in got.findings}
    assert seen == {(0, "safe"), (0, "unsafe"), (1, "unsafe")} | ({(1, "safe")} & seen), seen
    assert {"hole", "floor"} <= kinds, kinds


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(11, 80))
def test_random_policies_verdicts_reproduce_on_sk_long(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=4, budget=Budget.of(20))
