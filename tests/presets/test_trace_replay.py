"""check-config's verdicts replayed through the real packages (brief 6d, issue 26 item 2).

Every shipped preset example of LangChain and langmem, and a few random policies of each:
an ``unsafe`` verdict's printed session, replayed through the real package
(:mod:`tests.presets.replay_driver`), loses nothing before its last append and there exactly
the turns the findings name (holes: deleted unshown; floor: out of the context); a ``safe``
verdict survives random and adversarial sessions. The LangChain boundary the issue names (keep
3,000 tokens, trigger 100,000) is pinned: ``trim_tokens_to_summarize`` 99,998 is unsafe with
a trace the real middleware reproduces, 99,999 is safe and ``--suggest`` gives 99,999.
"""

from __future__ import annotations

import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE

if not REQUIRE:
    pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")
    pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")

from tailguard.pipeline.model import Finding
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.solver import Budget, decide
from tests.presets.replay_driver import Loss, run

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langchain.", "langmem.")
EXAMPLES = sorted(p for p in (ROOT / "examples" / "presets").glob("*.toml")
                  if p.name.startswith(("langchain-", "langmem-")))


def framework_of(text: str) -> tuple[str, dict[str, Any]]:
    table = dict(tomllib.loads(text)["framework"])
    return str(table.pop("name")), table


def named(findings: tuple[Finding, ...]) -> Loss:
    out = Loss()
    for f in findings:
        if f.kind == "hole":
            out.holes |= set(f.offsets)
        elif f.kind == "floor":
            out.floor |= set(f.offsets)
    return out


def check_unsafe(text: str, policy: Policy, got: Any) -> None:
    """The trace loses nothing before its last append, then exactly what the findings name."""
    framework, knobs = framework_of(text)
    counts = list(got.messages) or [policy.messages_per_turn[0]] * len(got.trace)
    losses = run(framework, policy, knobs, got.trace, counts)
    first = next((i for i, loss in enumerate(losses) if loss), None)
    assert first == len(got.trace) - 1, (policy.name, got.trace, counts, losses)
    want = named(got.findings)
    assert (losses[-1].holes, losses[-1].floor) == (want.holes, want.floor), (
        policy.name, got.trace, counts, losses[-1], want)


def sessions(policy: Policy, seed: int, count: int, length: int) -> list[tuple[list[int], list[int]]]:
    """Random sessions and adversarial ones (every turn at the largest size and the most
    messages; the largest turns with a smallest one every few; sizes just under a trigger)."""
    rng = random.Random(seed)
    lo, hi = policy.turn_min, policy.turn_max
    mlo, mhi = policy.messages_per_turn
    out = [([hi] * length, [mhi] * length), ([hi] * length, [mlo] * length),
           ([lo if i % 7 == 6 else hi for i in range(length)], [mlo] * length)]
    for _ in range(count):
        sizes = [rng.choice((lo, hi, rng.randint(lo, hi), max(lo, hi - 1))) for _ in range(length)]
        out.append((sizes, [rng.randint(mlo, mhi) for _ in range(length)]))
    return out


def check_safe(text: str, policy: Policy, seed: int, count: int = 6, length: int = 60) -> int:
    """No loss on any of the sessions; returns the appends run."""
    framework, knobs = framework_of(text)
    appends = 0
    for sizes, counts in sessions(policy, seed, count, length):
        losses = run(framework, policy, knobs, sizes, counts)
        assert not any(losses), (policy.name, sizes, counts, losses)
        appends += len(sizes)
    return appends


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_the_real_package(path: Path) -> None:
    text = path.read_text()
    policy = parse_policy(text, str(path))
    got = decide(policy, Budget())
    assert got.verdict in ("safe", "unsafe"), (path.name, got.detail)
    if got.verdict == "unsafe":
        check_unsafe(text, policy, got)
    else:
        check_safe(text, policy, seed=len(path.name), count=2,
                   length=3 * max(policy.turn_max and 1, 25))


def test_the_example_set_is_not_empty() -> None:
    assert {p.name.split("-")[0] for p in EXAMPLES} == {"langchain", "langmem"}


BOUNDARY = """name = "boundary"
turn_tokens = [1, 8000]
messages_per_turn = [1, 4]
floor = 0
floor_unit = "messages"

[framework]
name = "langchain.SummarizationMiddleware"
window = 200000
trigger = ["tokens", 100000]
keep = ["tokens", 3000]
trim_tokens_to_summarize = {trim}
"""


def test_langchain_trim_boundary_is_the_real_one() -> None:
    """Issue 26: keep 3,000 tokens, trigger 100,000. LangChain always keeps the newest
    message, so at most 99,999 tokens are summarized: 99,998 loses (the trace reproduces),
    99,999 does not (random and adversarial sessions), and 107,998 (once reported unsafe)
    is safe."""
    text = BOUNDARY.format(trim=99998)
    policy = parse_policy(text, "boundary.toml")
    got = decide(policy, Budget())
    assert got.verdict == "unsafe"
    check_unsafe(text, policy, got)
    for trim in (99999, 107998):
        text = BOUNDARY.format(trim=trim)
        policy = parse_policy(text, "boundary.toml")
        assert decide(policy, Budget()).verdict == "safe", trim
    check_safe(BOUNDARY.format(trim=99999), parse_policy(BOUNDARY.format(trim=99999), "b.toml"),
               seed=1, count=2, length=40)
    # the adversarial session at the boundary: 99,999 tokens, then a turn over keep
    sizes = [8000] * 12 + [3999, 8000]
    for trim, lost in ((99999, set()), (99998, {0})):
        policy = parse_policy(BOUNDARY.format(trim=trim), "b.toml")
        losses = run("langchain.", policy, {"trigger": ["tokens", 100000], "keep": ["tokens", 3000],
                                            "trim_tokens_to_summarize": trim}, sizes, [1] * 14)
        assert losses[-1].holes == lost and not any(losses[:-1]), (trim, losses)


def random_policy(seed: int) -> str:
    """A small random LangChain or langmem policy (even seeds LangChain)."""
    rng = random.Random(seed)
    hi = rng.randint(40, 400)
    mhi = rng.randint(1, 3)
    floor = rng.choice((0, 0, rng.randint(1, 6)))
    head = (f'name = "random-{seed}"\nturn_tokens = [{rng.randint(1, 20)}, {hi}]\n'
            f'messages_per_turn = [1, {mhi}]\nfloor = {floor}\n'
            f'floor_unit = "{rng.choice(("messages", "turns", "tokens"))}"\n\n[framework]\n')
    if seed % 2 == 0:
        trigger = rng.choice((f'["tokens", {rng.randint(300, 3000)}]', f'["messages", {rng.randint(4, 30)}]'))
        keep = rng.choice((f'["tokens", {rng.randint(30, 600)}]', f'["messages", {rng.randint(1, 10)}]'))
        trim = rng.choice(("false", str(rng.randint(100, 3000))))
        return head + (f'name = "langchain.SummarizationMiddleware"\ntrigger = {trigger}\nkeep = {keep}\n'
                       f'trim_tokens_to_summarize = {trim}\nsummary_tokens = {rng.randint(20, 200)}\n')
    max_tokens = rng.randint(300, 3000)
    before = rng.choice(("false", str(rng.randint(100, max_tokens))))
    return head + (f'name = "langmem.summarize_messages"\nmax_tokens = {max_tokens}\n'
                   f'max_summary_tokens = {rng.randint(20, min(300, max_tokens - 1))}\n'
                   f'max_tokens_before_summary = {before}\n')


def check_random(seed: int) -> str:
    text = random_policy(seed)
    policy = parse_policy(text, f"random-{seed}.toml")
    got = decide(policy, Budget.of(20))
    if got.verdict == "unsafe":
        check_unsafe(text, policy, got)
    elif got.verdict == "safe":
        check_safe(text, policy, seed, count=4, length=60)
    return got.verdict


# 38 and 60: a trim hole followed by tool turns (start_on_human drops them too)
CI_SEEDS = (0, 1, 2, 3, 4, 5, 38, 60)


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_the_real_package(seed: int) -> None:
    check_random(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [s for s in range(8, 108) if s not in CI_SEEDS])
def test_random_policies_verdicts_reproduce_on_the_real_package_long(seed: int) -> None:
    check_random(seed)


@pytest.mark.slow
def test_suggest_gives_langchains_trim_boundary(tmp_path: Path) -> None:
    """``--suggest`` on trim 99,998 moves ``trim_tokens_to_summarize`` to 99,999 exactly (about
    45 s: the search probes every knob); the boundary itself is checked on the real package by
    ``test_langchain_trim_boundary_is_the_real_one``."""
    import io
    import json

    from tailguard.cli.main import main

    path = tmp_path / "boundary.toml"
    path.write_text(BOUNDARY.format(trim=99998))
    out = io.StringIO()
    main(["check-config", "--suggest", "--format", "json", str(path)], stdout=out, stderr=io.StringIO())
    entry = json.loads(out.getvalue())["policies"][0]
    knob = "framework.trim_tokens_to_summarize"
    change = next(f["changes"][0] for f in entry["fixes"] if f["changes"][0]["knob"] == knob)
    assert (change["to"], change["beyond"]) == (99999, 99998)
