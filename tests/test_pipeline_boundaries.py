"""Hand-derived verdicts at real sizes (200k window, turns up to 20k), at the boundary
and one step past it, plus small hand-checked model traces."""

from __future__ import annotations

import pytest

from tailguard.pipeline.model import State, step
from tailguard.pipeline.policy import Compact, Policy, Truncate
from tailguard.pipeline.solver import decide

TMAX = 20_000


def real(limit: int, trigger: int, keep: int, floor: int, base: int = 4000) -> Policy:
    """truncate tokens ``limit`` then compact at ``trigger`` keeping ``keep`` tokens."""
    return Policy("real", 1, TMAX, floor, "tokens",
                  (Truncate("tokens", limit), Compact("tokens", trigger, "tokens", keep, 2000)),
                  base_tokens=base)


@pytest.mark.parametrize(("limit", "expected"), [
    # the largest pre-append occupancy is trigger - 1; one maximal turn must still fit
    (4000 - 4000 + 160_000 - 1 + TMAX, "safe"),
    (160_000 - 1 + TMAX - 1, "unsafe"),
])
def test_hole_boundary_on_limit(limit: int, expected: str) -> None:
    assert decide(real(limit, 160_000, 60_000, 40_001, base=0)).verdict == expected


@pytest.mark.parametrize(("floor", "expected"), [
    # a kept tail stops at a turn that does not fit: it holds > keep - TMAX tokens
    (60_000 - TMAX + 1, "safe"),
    (60_000 - TMAX + 2, "unsafe"),
])
def test_floor_boundary_tokens(floor: int, expected: str) -> None:
    got = decide(real(200_000, 160_000, 60_000, floor))
    assert got.verdict == expected
    if expected == "unsafe":
        assert {f.kind for f in got.findings} == {"floor"}


@pytest.mark.parametrize(("keep", "expected"), [(12, "safe"), (11, "unsafe")])
def test_floor_boundary_turns(keep: int, expected: str) -> None:
    policy = Policy("turns", 1, TMAX, 12, "turns",
                    (Truncate("turns", 200), Compact("turns", 150, "turns", keep, 2000)))
    assert decide(policy).verdict == expected


@pytest.mark.parametrize(("input_limit", "expected"), [(0, "safe"), (159_999, "safe"),
                                                       (159_998, "unsafe")])
def test_input_limit_boundary(input_limit: int, expected: str) -> None:
    policy = Policy("clip", 1, TMAX, 0, "tokens",
                    (Compact("tokens", 160_000, "turns", 1, 2000, input_limit),
                     Truncate("tokens", 400_000)))
    # candidates are the turns before the newest: at most trigger - 1 = 159,999 tokens
    assert decide(policy).verdict == expected


def test_overflow_from_pinned_turns() -> None:
    policy = Policy("pin", 1, 10, 0, "tokens", (Truncate("tokens", 25),), keep_first=3)
    state = State()
    found = [step(policy, state, 10) for _ in range(3)]
    assert found[0] == [] and found[1] == []
    assert [f.kind for f in found[2]] == ["overflow"]
    got = decide(policy)
    assert got.verdict == "unsafe" and len(got.trace) == 3 and sum(got.trace) > 25
