"""check-config's verdicts on Google ADK's ``EventsCompactionConfig`` replayed through the real
package (brief 6d, issue 26 item 2), as tests/presets/test_trace_replay.py does for LangChain and
langmem.

Every ``examples/presets/google-adk-*.toml`` and a few random policies of each mode: ADK runs as
installed (:mod:`tailguard.doctor.drivers.adk_app`: the real ``Runner``, ``App``,
``LlmEventSummarizer`` on a recording fake model, every raw event tagged ``[e<i>]``).

- **Token threshold** (a turn is an event): the trace's sizes are the events' tokens (a prompt and
  an answer per invocation; an odd trace gets one answer of the smallest size after it).
- **Sliding window** (a turn is an invocation): the trace's messages per turn are the
  invocations' events (a prompt, tool rounds, an answer); sizes move nothing in this mode.

After each turn the oracle reads the session as it stands then (the events up to that turn and
the compactions written after it): a turn with an event that no context, no summary there (with
what it was shown, transitively) holds is lost (a hole, reported at the turn it is first lost),
a floor turn with an event out of the context is a floor loss, and the context's tokens (raw
events' sizes, ``summary_tokens`` a summary) over ``window`` an overflow. The real package loses
nothing before the trace's last turn and there exactly what the findings name; a ``safe``
verdict survives random and adversarial sessions (event sizes from 3 tokens: an event's text
holds its tag, ``[e12]`` rounds up to 2 tokens).
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
    pytest.importorskip("google.adk", reason="install the frameworks extra (CI does)")

from tailguard.doctor.drivers import adk_app as adk
from tailguard.doctor.drivers.google_adk import run_sliding, run_tokens
from tailguard.pipeline.model import floor_turns
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.presets.google_adk import KNOBS
from tailguard.pipeline.solver import Budget
from tests.presets.replay_check import Loss, check_boundary, check_reproduces, counts_of, decided, sessions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("google-adk-*.toml"))
MIN_EVENT = 3


def knobs_of(text: str) -> dict[str, Any]:
    table = dict(tomllib.loads(text)["framework"])
    table.pop("name")
    values = {k.name: k.default for k in KNOBS}
    return {**values, **{k: (None if v is False else v) for k, v in table.items()}}


def losses(policy: Policy, knobs: dict[str, Any], events: list[Any], prompts: list[str], turns: list[list[int]],
           sizes: Sequence[int], counts: Sequence[int]) -> list[Loss]:
    """One :class:`Loss` per turn, each read from the session as it stood after that turn."""
    position = {adk.event_tag(e): p for p, e in enumerate(events) if not (e.actions and e.actions.compaction)}
    out: list[Loss] = []
    gone: set[int] = set()
    for k, tags in enumerate(turns):
        end = position[tags[-1]] + 1
        while end < len(events) and events[end].actions and events[end].actions.compaction:
            end += 1
        prefix = events[:end]
        summaries = sum(1 for e in prefix if e.actions and e.actions.compaction)
        lost = adk.lost(prefix, prompts[:summaries])
        lost_turns = {j for j, ts in enumerate(turns[: k + 1]) if set(ts) & lost}
        raw, held = adk.context(prefix)
        present = {j for j, ts in enumerate(turns[: k + 1]) if set(ts) <= set(raw)}
        loss = Loss(holes=lost_turns - gone, floor=set(floor_turns(policy, list(sizes[: k + 1]),
                                                                   list(counts[: k + 1]))) - present)
        if knobs["window"] is not None:  # token mode: a turn is an event, its tag its index
            tokens = sum(sizes[t] for t in raw) + knobs["summary_tokens"] * len(held)
            loss.overflow = tokens > knobs["window"]
        gone |= lost_turns
        out.append(loss)
    return out


def replay(policy: Policy, knobs: dict[str, Any], sizes: Sequence[int], counts: Sequence[int]) -> list[Loss]:
    """Each turn's loss on ADK for the session ``sizes`` / ``counts``."""
    if knobs["compaction_interval"] is not None:  # sliding window: invocations
        assert all(c >= 2 and c % 2 == 0 for c in counts), counts  # a prompt, tool rounds, an answer
        events, prompts, turns = adk.run(run_sliding([(c - 2) // 2 for c in counts], knobs["compaction_interval"],
                                                     knobs["overlap_size"]))
        return losses(policy, {**knobs, "window": None}, events, prompts, turns, sizes, counts)
    assert min(sizes) >= MIN_EVENT, sizes
    padded = [*sizes, *[MIN_EVENT] * (len(sizes) % 2)]
    events, prompts = adk.run(run_tokens(padded, knobs["token_threshold"], knobs["event_retention_size"],
                                         knobs["summary_tokens"]))
    turns = [[i] for i in range(len(padded))]
    return losses(policy, knobs, events, prompts, turns, padded, [1] * len(padded))[: len(sizes)]


def check(name: str, text: str, seed: int, count: int = 2, length: int = 40, budget: Budget | None = None) -> str:
    policy, got = decided(text, name, budget)
    knobs = knobs_of(text)
    if got.verdict == "unsafe":
        check_reproduces(name, got, replay(policy, knobs, list(got.trace), counts_of(policy, got)))
        check_boundary(name, policy, got, lambda sizes, counts: replay(policy, knobs, sizes, counts),
                       lambda sizes, counts: min(sizes) >= MIN_EVENT and all(c % 2 == 0 for c in counts))
        return "unsafe"
    for sizes, counts in sessions(policy, seed, count, length):
        real = replay(policy, knobs, [max(MIN_EVENT, s) for s in sizes], counts)
        assert not any(real), (name, sizes, counts, [(i, x) for i, x in enumerate(real) if x])
    return "safe"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_adk(path: Path) -> None:
    check(path.name, path.read_text(encoding="utf-8"), seed=len(path.name))


def test_the_examples_are_the_expected_ones() -> None:
    """Not vacuous: the sliding window's floor trace is replayed, the token threshold's sessions run."""
    verdicts = {p.name: decided(p.read_text(encoding="utf-8"), p.name)[1] for p in EXAMPLES}
    assert {n: d.verdict for n, d in verdicts.items()} == {"google-adk-sliding-window.toml": "unsafe",
                                                           "google-adk-token-threshold.toml": "safe"}


def random_policy(seed: int) -> str:
    """Even seeds: token threshold (events of 3 to a few hundred tokens); odd: sliding window
    (chat invocations, a prompt and an answer)."""
    rng = random.Random(seed)
    floor_unit = rng.choice(("messages", "turns"))
    floor = rng.choice((0, rng.randint(1, 8)))
    if seed % 2:
        return (f'name = "random-{seed}"\nturn_tokens = [1, 100]\nmessages_per_turn = [2, 2]\nfloor = {floor}\n'
                f'floor_unit = "{floor_unit}"\n\n[framework]\nname = "google_adk.EventsCompactionConfig"\n'
                f"compaction_interval = {rng.randint(1, 4)}\noverlap_size = {rng.randint(0, 3)}\n")
    hi = rng.randint(20, 400)
    threshold = rng.randint(2 * hi, 8 * hi)
    window = rng.choice(("false", str(rng.randint(threshold, 2 * threshold + 2 * hi))))
    return (f'name = "random-{seed}"\nturn_tokens = [{MIN_EVENT}, {hi}]\nmessages_per_turn = [1, 1]\n'
            f'floor = {floor}\nfloor_unit = "{floor_unit}"\n\n[framework]\nname = "google_adk.EventsCompactionConfig"\n'
            f"token_threshold = {threshold}\nevent_retention_size = {rng.randint(0, 8)}\n"
            f"summary_tokens = {rng.randint(2, hi)}\nwindow = {window}\n")


CI_SEEDS = tuple(range(8))


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_adk(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=1, length=30, budget=Budget.of(20))


def test_the_random_policies_reach_every_kind() -> None:
    """Not vacuous: the CI seeds hold safe and unsafe verdicts of both modes, and floor, hole and
    overflow findings among them."""
    seen: set[tuple[int, str]] = set()
    kinds: set[str] = set()
    for seed in CI_SEEDS:
        _, got = decided(random_policy(seed), f"random-{seed}", Budget.of(20))
        seen.add((seed % 2, got.verdict))
        kinds |= {f.kind for f in got.findings}
    assert seen == {(0, "safe"), (0, "unsafe"), (1, "safe"), (1, "unsafe")} and {"floor", "overflow"} <= kinds, (
        seen, kinds)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8, 60))
def test_random_policies_verdicts_reproduce_on_adk_long(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=3, length=50, budget=Budget.of(20))
