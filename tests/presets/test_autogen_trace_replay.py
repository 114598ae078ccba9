"""check-config's verdicts on AutoGen's model contexts replayed through the real package (brief 6d,
issue 26 item 2), as tests/presets/test_trace_replay.py does for LangChain and langmem.

Every ``examples/presets/autogen-*.toml`` and a few random policies of each context: the trace is
fed to the real context (:mod:`tailguard.doctor.drivers.autogen`), turn ``i`` as its messages (one:
a prompt or an answer; more: a prompt and answers, the turn's tokens in its first message, one
word each in the others), every message ``size`` words with its marker, and after each turn the
oracle reads the view (``get_messages()``, what the model is sent): a turn with a stored message
out of the view is lost (AutoGen never summarizes; reported at the turn it is first out), and
the view's words over ``window`` are an overflow (``ReplayChatCompletionClient`` counts words).
No floor loss: a floor finding is a compaction's (brief 6), and a floor turn truncated is a hole.
A turn of fewer tokens than messages (the model allows it) holds a word a message. The real
context loses nothing before the trace's last turn and there exactly what the findings name (and
one token or one message short there, what the model loses: the boundary is the real one), but
for the declared ``middle_out`` (``TokenLimitedChatCompletionContext``: the first loss at the
same turn, middle turns instead of the oldest; asserted as declared). A ``safe`` verdict survives
random and adversarial sessions.
"""

from __future__ import annotations

import random
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.presets.harness import REQUIRE, Turn

if not REQUIRE:
    pytest.importorskip("autogen_core", reason="install the frameworks extra (CI does)")
    pytest.importorskip("autogen_ext.models.replay", reason="install the frameworks extra (CI does)")

from tailguard.doctor.drivers import autogen as ag
from tailguard.doctor.drivers.autogen import BUFFERED, HEAD_AND_TAIL, TOKEN_LIMITED, UNBOUNDED
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.solver import Budget
from tests.presets.replay_check import Loss, check_boundary, check_reproduces, counts_of, decided, named, sessions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("autogen-*.toml"))
OWN = ("buffer_size", "head_size", "tail_size", "token_limit")


def context_of(text: str) -> tuple[str, dict[str, int], int | None]:
    table = tomllib.loads(text)["framework"]
    knobs = {k: int(table[k]) for k in OWN if table.get(k) not in (None, False)}
    window = table.get("window", False)
    return str(table.get("model_context", UNBOUNDED)), knobs, None if window is False else int(window)


def session_of(sizes: Sequence[int], counts: Sequence[int]) -> list[Turn]:
    """A turn of ``count`` messages holding ``size`` words (the first message the rest of them)."""
    out = []
    for i, (size, count) in enumerate(zip(sizes, counts, strict=True)):
        if count == 1:
            out.append(Turn("human" if i % 2 == 0 else "ai", (size,)))
        else:
            out.append(Turn("chat", (max(1, size - (count - 1)), *(1,) * (count - 1))))
    return out


def replay(text: str, sizes: Sequence[int], counts: Sequence[int]) -> list[Loss]:
    kind, knobs, window = context_of(text)
    views = ag.run(ag.make(kind, **knobs), session_of(sizes, counts))
    out: list[Loss] = []
    gone: set[int] = set()
    for view in views:
        out_of_view = {view.owner[j] for j in range(len(view.owner)) if j not in view.held}
        loss = Loss(holes=out_of_view - gone, overflow=window is not None and view.tokens > window)
        gone |= out_of_view
        out.append(loss)
    return out


def check_unsafe(name: str, text: str, policy: Policy, got: Any) -> None:
    counts = counts_of(policy, got)
    losses = replay(text, got.trace, counts)
    if context_of(text)[0] != TOKEN_LIMITED:
        check_reproduces(name, got, losses)
        check_boundary(name, policy, got, lambda sizes, counts: replay(text, sizes, counts))
        return
    # middle_out (declared): the first loss at the same turn, middle turns instead of the oldest;
    # the overflow (a token_limit above the window) exactly
    want, last = named(got.findings), losses[-1]
    assert not any(losses[:-1]) and bool(last.holes) == bool(want.holes), (name, got.trace, losses, want)
    assert last.overflow == want.overflow and not want.floor, (name, got.trace, last, want)


def check(name: str, text: str, seed: int, count: int = 3, length: int = 60, budget: Budget | None = None) -> str:
    policy, got = decided(text, name, budget)
    if got.verdict == "unsafe":
        check_unsafe(name, text, policy, got)
        return "unsafe"
    for sizes, counts in sessions(policy, seed, count, length):
        sizes = [max(s, c) for s, c in zip(sizes, counts, strict=True)]
        real = replay(text, sizes, counts)
        assert not any(real), (name, sizes, counts, [(i, x) for i, x in enumerate(real) if x])
    return "safe"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_verdict_reproduces_on_autogen(path: Path) -> None:
    check(path.name, path.read_text(encoding="utf-8"), seed=len(path.name))


def test_the_defaults_overflow_is_replayed() -> None:
    """Not vacuous: the unbounded default's overflow (17 turns of 8,000 words in 128k) is the real
    view's, at its 17th turn and not before."""
    text = (ROOT / "examples/presets/autogen-defaults.toml").read_text(encoding="utf-8")
    policy, got = decided(text, "autogen-defaults.toml")
    assert [f.kind for f in got.findings] == ["overflow"] and len(got.trace) == 17
    losses = replay(text, got.trace, counts_of(policy, got))
    assert [x.overflow for x in losses] == [False] * 16 + [True]


def random_policy(seed: int) -> str:
    rng = random.Random(seed)
    kind = (BUFFERED, HEAD_AND_TAIL, TOKEN_LIMITED, UNBOUNDED)[seed % 4]
    hi = rng.randint(10, 200)
    mpt = rng.randint(1, 4) if kind in (BUFFERED, UNBOUNDED) else 1
    own = {BUFFERED: f"buffer_size = {rng.randint(1, 12)}\n",
           HEAD_AND_TAIL: f"head_size = {rng.randint(1, 4)}\ntail_size = {rng.randint(1, 10)}\n",
           TOKEN_LIMITED: f"token_limit = {rng.randint(hi, 10 * hi)}\n", UNBOUNDED: ""}[kind]
    window = rng.choice(("false", str(rng.randint(hi, 20 * hi))))
    return (f'name = "random-{seed}"\nturn_tokens = [{mpt}, {hi}]\nmessages_per_turn = [1, {mpt}]\n'
            f'floor = {rng.choice((0, rng.randint(1, 8)))}\nfloor_unit = "{rng.choice(("messages", "turns"))}"\n\n'
            f'[framework]\nname = "autogen"\nmodel_context = "{kind}"\n{own}window = {window}\n')


CI_SEEDS = tuple(range(12))


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_random_policies_verdicts_reproduce_on_autogen(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=2, length=40, budget=Budget.of(20))


def test_the_random_policies_reach_every_kind() -> None:
    """Not vacuous: the CI seeds hold safe and unsafe verdicts, and hole and overflow findings."""
    verdicts: set[str] = set()
    kinds: set[str] = set()
    for seed in CI_SEEDS:
        _, got = decided(random_policy(seed), f"random-{seed}", Budget.of(20))
        verdicts.add(got.verdict)
        kinds |= {f.kind for f in got.findings}
    assert verdicts == {"safe", "unsafe"} and {"hole", "overflow"} <= kinds, (verdicts, kinds)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12, 100))
def test_random_policies_verdicts_reproduce_on_autogen_long(seed: int) -> None:
    check(f"random-{seed}", random_policy(seed), seed, count=4, length=60, budget=Budget.of(20))
