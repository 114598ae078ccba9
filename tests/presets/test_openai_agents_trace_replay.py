"""Every ``unsafe`` trace of the OpenAI Agents SDK examples, and of random policies, replayed
through the real SDK (brief 6d: the real package is the judge; issue 26 item 2).

A trace is the model's session: turn sizes and message counts. It is replayed as items of an
agent run that the compaction session counts (answers and tool calls with their outputs: the
SDK's default hook counts no user message, the model counts every message, so a user message
would be the declared ``trigger_counts_user_messages`` difference, not the trace). The SDK runs
as installed (a real ``SQLiteSession`` under ``OpenAIResponsesCompactionSession``, its client
answering ``/responses/compact`` locally; :mod:`tailguard.doctor.drivers.openai_agents`), in
lockstep with the preset's model: at every compaction the items the SDK deleted, the items it
sent (shown) and the items it kept must be the model's, else :class:`Mismatch`. The replay then
checks that the SDK compacts exactly where the model does, the last time at the trace's last
append, where the findings name their loss: what it deletes there is what the model deletes, so
the SDK loses exactly the offsets named (a hole: deleted unshown; a floor turn: no longer in the
store verbatim), and nothing before. Token sizes do not move this preset's compaction (its
trigger counts items), so each message is given the driver's smallest size; a finding that
depends on tokens (a window overflow) is not replayed here and is asserted absent.
"""

from __future__ import annotations

import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("agents", reason="install the frameworks extra (CI does)")

from tailguard.doctor.drivers.openai_agents import run
from tailguard.doctor.harness import MIN_MESSAGE, ModelRun, Turn
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.solver import Budget, decide

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("openai-agents-*.toml"))


def driver_knobs(text: str) -> dict[str, Any]:
    table = tomllib.loads(text)["framework"]
    limit = table.get("limit", False)
    return {"limit": None if limit is False else limit, "threshold": table.get("compaction_threshold", 10),
            "summary_tokens": table.get("summary_tokens", 1000), "fresh": bool(table.get("fresh_session_per_turn", 0))}


def session_of(policy: Policy, trace: tuple[int, ...], messages: tuple[int, ...]) -> list[Turn]:
    counts = list(messages) or [policy.messages_per_turn[0]] * len(trace)
    return [Turn("ai", (MIN_MESSAGE,)) if n == 1 else Turn("tools", (MIN_MESSAGE,) * n) for n in counts]


def model_compactions(policy: Policy, session: list[Turn]) -> list[int]:
    """The appends (1-based) at which the model compacts."""
    sim = ModelRun(policy)
    return [i + 1 for i, turn in enumerate(session) if sim.append(turn)[0] is not None]


def replay(text: str, name: str) -> str:
    policy = parse_policy(text, name)
    got = decide(policy, Budget())
    assert got.verdict in ("safe", "unsafe"), (name, got.verdict)
    if got.verdict == "safe":
        return "safe"
    kinds = {f.kind for f in got.findings}
    assert kinds <= {"hole", "floor"}, (name, kinds)  # a compaction's loss, not a token overflow
    session = session_of(policy, got.trace, got.messages)
    at = model_compactions(policy, session)
    assert at and at[-1] == len(session), (name, at, len(session))  # the loss at the last append
    assert all(f.step == len(session) for f in got.findings), name
    compared = run(session, driver_knobs(text))  # raises Mismatch where the SDK differs
    assert compared == len(at), (name, compared, at)  # the SDK compacted at every one of them
    return "unsafe"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_the_examples_unsafe_traces_reproduce_on_the_sdk(path: Path) -> None:
    replay(path.read_text(encoding="utf-8"), path.name)


def test_the_defaults_example_is_replayed() -> None:
    """Not vacuous: the shipped defaults are unsafe, and their trace is what is replayed."""
    assert replay((ROOT / "examples/presets/openai-agents-defaults.toml").read_text(encoding="utf-8"),
                  "openai-agents-defaults.toml") == "unsafe"


def random_policy(seed: int) -> str:
    rng = random.Random(seed)
    limit = rng.choice(["false", rng.randint(3, 20)])
    return (f'name = "random-{seed}"\nturn_tokens = [1, 400]\nmessages_per_turn = [1, {rng.randint(1, 4)}]\n'
            f'floor = {rng.randint(0, 6)}\nfloor_unit = "messages"\n\n[framework]\n'
            f'name = "agents.OpenAIResponsesCompactionSession"\nlimit = {limit}\n'
            f'compaction_threshold = {rng.randint(2, 12)}\nfresh_session_per_turn = {rng.randint(0, 1)}\n'
            f'summary_tokens = {rng.randint(20, 300)}\n')


def test_random_policies_unsafe_traces_reproduce_on_the_sdk() -> None:
    verdicts = [replay(random_policy(seed), f"random-{seed}.toml") for seed in range(12)]
    assert verdicts.count("unsafe") >= 3, verdicts


def test_a_wrong_replay_is_caught() -> None:
    """The check can fail: the trace with its last turn dropped does not compact where it must."""
    text = (ROOT / "examples/presets/openai-agents-defaults.toml").read_text(encoding="utf-8")
    policy = parse_policy(text, "defaults.toml")
    got = decide(policy, Budget())
    session = session_of(policy, got.trace, got.messages)[:-1]
    assert run(session, driver_knobs(text)) != len(model_compactions(policy, session_of(policy, got.trace,
                                                                                        got.messages)))


def test_the_safe_example_survives_adversarial_sessions() -> None:
    """openai-agents-limit.toml is safe: adversarial sessions of its shape (every turn a tool call
    with three outputs, every turn one answer, the two in turn) run on the SDK in lockstep with the
    preset's model at the example's knobs (``run`` raises Mismatch where the SDK deletes, shows or
    keeps anything else), and the model, at the example's sizes (8,000 tokens a turn), finds nothing
    on them: so the SDK loses nothing either."""
    text = (ROOT / "examples/presets/openai-agents-limit.toml").read_text(encoding="utf-8")
    policy = parse_policy(text, "openai-agents-limit.toml")
    assert decide(policy, Budget()).verdict == "safe"
    for counts in ([4] * 60, [1] * 120, [4, 1] * 40):
        session = [Turn("ai", (MIN_MESSAGE,)) if n == 1 else Turn("tools", (MIN_MESSAGE,) * n) for n in counts]
        assert run(session, driver_knobs(text)) >= 1  # the SDK compacted, each compaction compared
        sim = ModelRun(policy)
        found = [kinds for n in counts for _, kinds in [sim.append(Turn("tools", (8000 // n,) * n))] if kinds]
        assert not found, (counts, found[:3])
