"""What a replayed ``check-config`` verdict must show on the real package (brief 6d, issue 26 item
2), for the trace replays of the frameworks whose drivers live in :mod:`tailguard.doctor.drivers`
(Pydantic AI, Google ADK, AutoGen, Semantic Kernel, LlamaIndex, Strands); LangChain and langmem
have theirs in :mod:`tests.presets.replay_driver`.

Framework-free: a replay turns the real package's run into one :class:`Loss` per append of the
trace (turns deleted unshown or held nowhere: ``holes``; floor turns out of the context:
``floor``; what the model is sent over the window: ``overflow``), and :func:`check_reproduces`
asserts that nothing is lost before the trace's last append and there exactly what the findings
name. :func:`model_losses` steps the preset's model over a session (for boundary checks: the
trace one unit short). :func:`sessions` gives the random and adversarial sessions a ``safe`` verdict must survive.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tailguard.pipeline.model import Finding, State, step
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.solver import Budget, decide


@dataclass
class Loss:
    """What the real package lost at one append."""

    holes: set[int] = field(default_factory=set)
    floor: set[int] = field(default_factory=set)
    overflow: bool = False

    def __bool__(self) -> bool:
        return bool(self.holes or self.floor or self.overflow)


def named(findings: tuple[Finding, ...]) -> Loss:
    """The loss the findings name (``unenforceable``, a static finding, names no append)."""
    out = Loss()
    for f in findings:
        if f.kind == "hole":
            out.holes |= set(f.offsets)
        elif f.kind == "floor":
            out.floor |= set(f.offsets)
        elif f.kind == "overflow":
            out.overflow = True
    return out


def decided(text: str, name: str, budget: Budget | None = None) -> tuple[Policy, Any]:
    policy = parse_policy(text, name)
    got = decide(policy, budget or Budget())
    assert got.verdict in ("safe", "unsafe"), (name, got.verdict, got.detail)
    return policy, got


def counts_of(policy: Policy, got: Any) -> list[int]:
    """The trace's messages per append (the fewest where the finding leaves them out)."""
    return list(got.messages) or [policy.messages_per_turn[0]] * len(got.trace)


def check_reproduces(name: str, got: Any, losses: list[Loss]) -> Loss:
    """``losses`` (one per append of the trace): nothing before the last append, there exactly
    the findings' holes, floor turns and overflow; every dynamic finding at the last append."""
    want = named(got.findings)
    assert all(f.step == len(got.trace) for f in got.findings if f.kind != "unenforceable"), (name, got.findings)
    assert len(losses) == len(got.trace), (name, len(losses), len(got.trace))
    first = next((i for i, loss in enumerate(losses) if loss), None)
    assert first == len(got.trace) - 1, (name, list(got.trace), losses)
    last = losses[-1]
    assert (last.holes, last.floor, last.overflow) == (want.holes, want.floor, want.overflow), (
        name, list(got.trace), last, want)
    return last


def model_losses(policy: Policy, sizes: list[int], counts: list[int]) -> list[Loss]:
    """What the preset's model loses at each append of a session (its findings, by append)."""
    state = State()
    return [named(tuple(step(policy, state, size, messages=count)))
            for size, count in zip(sizes, counts, strict=True)]


def check_boundary(name: str, policy: Policy, got: Any, replay: Callable[[list[int], list[int]], list[Loss]],
                   fits: Callable[[list[int], list[int]], bool] = lambda sizes, counts: True) -> int:
    """The boundary is the real one: the trace one token short at its last append, and one message
    short (within the policy's shape, and that the driver can build: ``fits``), loses on the real
    package (``replay``) exactly what the model loses there, append by append. Returns the
    variants checked."""
    sizes, counts = list(got.trace), counts_of(policy, got)
    variants = []
    if sizes[-1] > policy.turn_min:
        variants.append(([*sizes[:-1], sizes[-1] - 1], counts))
    if counts[-1] > policy.messages_per_turn[0]:
        variants.append((sizes, [*counts[:-1], counts[-1] - 1]))
    variants = [(short, fewer) for short, fewer in variants if fits(short, fewer)]
    for short, fewer in variants:
        want = model_losses(policy, short, fewer)
        assert replay(short, fewer) == want, (name, short, fewer, want)
    return len(variants)


def sessions(policy: Policy, seed: int, count: int, length: int) -> list[tuple[list[int], list[int]]]:
    """Adversarial sessions (every turn the largest with the most messages, and with the fewest;
    the largest turns with a smallest one every few) and ``count`` random ones: sizes and messages
    per turn within the policy's shape."""
    rng = random.Random(seed)
    lo, hi = policy.turn_min, policy.turn_max
    mlo, mhi = policy.messages_per_turn
    out = [([hi] * length, [mhi] * length), ([hi] * length, [mlo] * length),
           ([lo if i % 7 == 6 else hi for i in range(length)], [mlo if i % 3 else mhi for i in range(length)])]
    for _ in range(count):
        sizes = [rng.choice((lo, hi, rng.randint(lo, hi), max(lo, hi - 1))) for _ in range(length)]
        out.append((sizes, [rng.randint(mlo, mhi) for _ in range(length)]))
    return out
