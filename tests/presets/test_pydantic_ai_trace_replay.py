"""check-config's verdicts on Pydantic AI's ``OpenAICompaction`` replayed through the real package
(brief 6d, issue 26 item 2), as tests/presets/test_trace_replay.py does for LangChain and langmem.

Every ``examples/presets/pydantic-ai-*.toml`` and a few random policies of the preset's knobs: an
``unsafe`` trace is replayed as a chat (prompt, answer, prompt, ...: message ``i`` is the trace's
turn ``i``) on the real ``Agent`` with the real ``OpenAICompaction(message_count_threshold=N)``
(:mod:`tailguard.doctor.drivers.pydantic_ai`: an ``OpenAIResponsesModel`` whose client answers
locally, ``/responses/compact`` recording what it was sent). At every model request the oracle
reads what Pydantic AI sends: a message that left the list without reaching ``/compact`` (or
whose compaction item left unshown) is a hole, a floor message not in the list verbatim is a
floor loss, and the request's tokens (the trace's size of every message it holds, plus
``summary_tokens`` for a compaction item) over ``window`` is the overflow (Pydantic AI counts no
tokens: ``window_not_enforced``, the provider's context-length error); at an answer, the
request's tokens and the answer's (the window holds the output too) over ``window`` is. The real
package loses nothing before the trace's last append and there exactly what the findings name;
where the model compacts at an answer, the declared ``checked_before_requests`` applies: Pydantic
AI loses at the next request (one message later), the same holes and overflow, every floor
offset moved one message on. A ``safe`` verdict survives random and adversarial chats.
"""

from __future__ import annotations

import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("pydantic_ai", reason="install the frameworks extra (CI does)")

from tailguard.doctor.drivers.pydantic_ai import real_run, script
from tailguard.pipeline.model import floor_turns
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.solver import Budget
from tests.presets.replay_check import Loss, check_boundary, check_reproduces, decided, named, sessions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("pydantic-ai-*.toml"))


def knobs_of(text: str) -> dict[str, Any]:
    table = tomllib.loads(text)["framework"]
    window = table.get("window", False)
    return {"threshold": int(table["message_count_threshold"]), "window": None if window is False else window,
            "summary_tokens": int(table.get("summary_tokens", 1000))}


def replay(policy: Policy, knobs: dict[str, Any], sizes: list[int]) -> dict[int, Loss]:
    """The loss at each model request of the chat ``sizes`` (message ``i`` of ``sizes[i]`` tokens),
    by the index of the message it runs after; the chat ends with an answer, so one message
    past ``sizes`` may be run (it gets the smallest size)."""
    kinds = script([0] * (len(sizes) // 2 + 1))
    sizes = [*sizes, *[policy.turn_min] * (len(kinds) - len(sizes))]
    before, after, compacts, at = real_run(kinds, knobs["threshold"])
    out: dict[int, Loss] = {}
    covered: set[int] = set()
    used = 0
    for j, i in enumerate(at):
        (pre, had), (post, compaction) = before[j], after[j]
        loss = Loss()
        if pre != post:
            shown, earlier_shown = compacts[used]
            used += 1
            if had and not earlier_shown:  # the earlier compaction item left unshown
                loss.holes |= covered
                covered = set()
            loss.holes |= (pre - post) - shown
            covered |= (pre - post) & shown
        loss.floor = set(floor_turns(policy, sizes[: i + 1], [1] * (i + 1))) - post
        tokens = sum(sizes[t] for t in post) + (knobs["summary_tokens"] if compaction else 0)
        loss.overflow = knobs["window"] is not None and tokens > knobs["window"]
        out[i] = loss
        if i + 1 < len(sizes):  # the answer: nothing compacts, the window holds the request and it
            out[i + 1] = Loss(overflow=knobs["window"] is not None and tokens + sizes[i + 1] > knobs["window"])
    assert used == len(compacts), (used, len(compacts))
    return out


def check_unsafe(name: str, text: str, policy: Policy, got: Any) -> None:
    sizes = list(got.trace)
    real = replay(policy, knobs_of(text), sizes)
    last = len(sizes) - 1
    want = named(got.findings)
    if last % 2 == 0 or not (want.holes or want.floor):  # a prompt's request, or an overflow at an answer
        check_reproduces(name, got, [real[i] for i in range(len(sizes))])
        check_boundary(name, policy, got, lambda short, _: [
            x for i, x in sorted(replay(policy, knobs_of(text), short).items()) if i < len(short)])
        return
    # checked_before_requests: the model compacts at an answer; Pydantic AI at the next request
    assert not any(real[i] for i in real if i < last), (name, sizes, real)
    got_loss = real[last + 1]
    assert policy.floor_unit in ("messages", "turns"), name  # one message is one unit: the shift is one
    assert (got_loss.holes, got_loss.floor, got_loss.overflow) == (
        want.holes, {o + 1 for o in want.floor}, want.overflow), (name, sizes, got_loss, want)


def check_safe(name: str, text: str, policy: Policy, seed: int, count: int, length: int) -> int:
    knobs, runs = knobs_of(text), 0
    for sizes, _ in sessions(policy, seed, count, length):
        real = replay(policy, knobs, sizes)
        assert not any(real.values()), (name, sizes, {i: v for i, v in real.items() if v})
        runs += len(real)
    return runs


def check(name: str, text: str, seed: int, count: int = 3, length: int = 60, budget: Budget | None = None) -> str:
    policy, got = decided(text, name, budget)
    if got.verdict == "unsafe":
        check_unsafe(name, text, policy, got)
    else:
        check_safe(name, text, policy, seed, count, length)
    return str(got.verdict)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_pydantic_ai(path: Path) -> None:
    check(path.name, path.read_text(encoding="utf-8"), seed=len(path.name), count=1, length=50)


def test_the_examples_are_the_expected_ones() -> None:
    """Not vacuous: the threshold example's overflow is replayed, the repaired one's sessions run."""
    verdicts = {p.name: decided(p.read_text(encoding="utf-8"), p.name)[1] for p in EXAMPLES}
    assert {n: d.verdict for n, d in verdicts.items()} == {"pydantic-ai-repaired.toml": "safe",
                                                           "pydantic-ai-threshold.toml": "unsafe"}
    assert {f.kind for f in verdicts["pydantic-ai-threshold.toml"].findings} == {"overflow"}


def random_policy(seed: int) -> str:
    rng = random.Random(seed)
    lo, hi = rng.randint(1, 50), rng.randint(60, 2000)
    window = rng.choice(("false", str(rng.randint(4 * hi, 30 * hi))))
    return (f'name = "random-{seed}"\nturn_tokens = [{lo}, {hi}]\nmessages_per_turn = [1, 1]\n'
            f'floor = {rng.choice((0, 1, rng.randint(1, 6)))}\nfloor_unit = "{rng.choice(("messages", "turns"))}"\n\n'
            f'[framework]\nname = "pydantic_ai.OpenAICompaction"\n'
            f"message_count_threshold = {rng.randint(2, 14)}\nwindow = {window}\n"
            f"summary_tokens = {rng.randint(20, 3 * hi)}\n")


CI_SEEDS = tuple(range(8))


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_pydantic_ai(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=2, length=40, budget=Budget.of(20))


def test_the_random_policies_reach_every_kind() -> None:
    """Not vacuous: the CI seeds hold safe and unsafe verdicts, floor and overflow findings, and a
    finding at an answer (``checked_before_requests``)."""
    kinds: set[str] = set()
    verdicts, at_answer = set(), False
    for seed in CI_SEEDS:
        _, got = decided(random_policy(seed), f"random-{seed}", Budget.of(20))
        verdicts.add(got.verdict)
        kinds |= {f.kind for f in got.findings}
        at_answer |= got.verdict == "unsafe" and len(got.trace) % 2 == 0
    assert verdicts == {"safe", "unsafe"} and {"floor", "overflow"} <= kinds and at_answer, (verdicts, kinds)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 60))
def test_random_policies_verdicts_reproduce_on_pydantic_ai_long(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=4, length=60, budget=Budget.of(20))
