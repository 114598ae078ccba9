"""Hand-derived verdicts at real sizes (200k window, turns up to 20k), at the boundary
and one step past it, plus small hand-checked model traces."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tailguard.pipeline.model import State, step
from tailguard.pipeline.policy import Compact, Policy, Truncate
from tailguard.pipeline.solver import Budget, decide

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


def test_unenforceable_only_for_a_truncator_that_can_fire() -> None:
    """Brief 6b: a mismatched truncator that never fires is a ``dead_stage`` note, not a
    finding; both engines agree, and a mismatched truncator that fires stays a finding."""
    from tailguard.pipeline.explorer import explore

    dead = Policy("dead", 1, 2, 2, "turns", (Truncate("tokens", 1000), Compact("turns", 4, "turns", 2, 1)))
    for got in (decide(dead), explore(dead)):
        assert got.verdict == "safe" and got.findings == ()
        assert [(n.kind, n.stage) for n in got.notes] == [("dead_stage", 0)]
    live = Policy("live", 1, 2, 2, "turns", (Truncate("tokens", 5), Compact("turns", 4, "turns", 2, 1)))
    for got in (decide(live), explore(live)):
        assert got.verdict == "unsafe" and got.notes == ()
        kinds = {(f.kind, f.stage, f.detail.rpartition("; ")[2]) for f in got.findings}
        assert ("unenforceable", 0, "it evicts in this session") in kinds
        assert ("hole", 0, "truncated, never summarized") in kinds
    # dynamics unsafe through another stage: the truncator was not proved dead
    other = Policy("other", 1, 2, 2, "turns", (Truncate("tokens", 1000), Compact("turns", 4, "turns", 1, 1)))
    for got in (decide(other), explore(other)):
        assert got.verdict == "unsafe"
        assert ("unenforceable", "not proved dead") in {
            (f.kind, f.detail.rpartition("; ")[2]) for f in got.findings}
    # dynamics unknown: nothing is claimed about the truncator, and the verdict is unknown
    deep = Policy("deep", 1, 1, 0, "turns", (Truncate("tokens", 30), Compact("turns", 40, "turns", 5, 1)))
    got = decide(deep, replace(Budget.of(depth=10), falsify_steps=0))  # the falsifier off
    assert got.verdict == "unknown" and got.findings == () and got.notes == ()


def test_unreachable_compact_stage_is_a_note() -> None:
    """Brief 6b: OpenHands' shape (a 100-turn window before a summarizer at 120 turns): the
    summarizer never fires; both engines note it beside the hole it leads to."""
    from tailguard.pipeline.explorer import explore
    from tailguard.pipeline.model import unreachable_stages

    shape = Policy("oh", 1, 1, 2, "turns", (Truncate("turns", 5), Compact("turns", 7, "turns", 3, 1)))
    for got in (decide(shape), explore(shape)):
        assert got.verdict == "unsafe" and [f.kind for f in got.findings] == ["hole"]
        assert [(n.kind, n.stage, n.offsets) for n in got.notes] == [("unreachable", 1, (0,))]
    assert unreachable_stages(shape)[0].detail == "trigger 7 turns above stage 0's limit 5"
    reachable = (
        (Truncate("turns", 7), Compact("turns", 7, "turns", 3, 1)),  # trigger == limit: fires
        (Truncate("tokens", 5), Compact("turns", 7, "turns", 3, 1)),  # another unit
        (Truncate("turns", 5), Compact("turns", 2, "turns", 1, 9), Compact("turns", 7, "turns", 3, 1)),
        (Compact("turns", 7, "turns", 3, 1), Truncate("turns", 5)),  # truncate after it
    )
    for stages in reachable:  # the third: stage 1 fires, stage 2 follows a compaction
        assert unreachable_stages(Policy("r", 1, 1, 2, "turns", stages)) == (), stages


def test_a_trigger_above_the_window_is_a_note_naming_the_window() -> None:
    """Brief 6b: a compact stage triggering in tokens above the window is noted, by both
    engines, with the window as its stage (``len(stages)``); at the window, in another unit or
    without a window it is not."""
    from tailguard.pipeline.explorer import explore
    from tailguard.pipeline.model import unreachable_stages
    from tailguard.pipeline.report import explain as describe

    over = Policy("w", 2, 2, 1, "turns", (Compact("tokens", 9, "turns", 1, 1),), window=8,
                  lines={"window": 3})
    for got in (decide(over), explore(over)):
        assert [(n.kind, n.stage, n.offsets) for n in got.notes] == [("unreachable", 0, (1,))], got
    note = unreachable_stages(over)[0]
    assert note.detail == "trigger 9 tokens above the window 8"
    assert describe(over, note).endswith(
        "fires only on a context already over the model's window: its trigger is above the window "
        "(8 tokens, line 3)"), describe(over, note)
    for policy in (Policy("w", 2, 2, 1, "turns", (Compact("tokens", 8, "turns", 1, 1),), window=8),
                   Policy("w", 2, 2, 1, "turns", (Compact("turns", 9, "turns", 1, 1),), window=8),
                   Policy("w", 2, 2, 1, "turns", (Compact("tokens", 9, "turns", 1, 1),))):
        assert unreachable_stages(policy) == (), policy


def test_a_trigger_clause_list_is_unreachable_only_when_every_clause_is() -> None:
    """``trigger_any`` (LangChain's trigger lists): the stage is unreachable when each clause
    has a threshold above a ceiling; one clause that can hold makes it reachable."""
    from tailguard.pipeline.explorer import explore
    from tailguard.pipeline.model import unreachable_stages

    def shape(*clauses: tuple[tuple[str, int], ...]) -> Policy:
        first = clauses[0][0]
        compact = Compact(first[0], first[1], "turns", 3, 1, trigger_any=clauses)  # type: ignore[arg-type]
        return Policy("any", 1, 1, 2, "turns", (Truncate("turns", 5), compact))

    blocked = shape((("turns", 7),), (("tokens", 2), ("turns", 6)))
    for got in (decide(blocked), explore(blocked)):
        assert got.verdict == "unsafe" and [f.kind for f in got.findings] == ["hole"]
        assert [(n.kind, n.stage) for n in got.notes] == [("unreachable", 1)]
    assert unreachable_stages(blocked)[0].detail == "trigger 7 turns above stage 0's limit 5"
    open_clause = shape((("turns", 7),), (("tokens", 2), ("turns", 4)))  # the second can fire
    assert unreachable_stages(open_clause) == ()
    for got in (decide(open_clause), explore(open_clause)):
        assert [n for n in got.notes if n.kind == "unreachable"] == [], got
