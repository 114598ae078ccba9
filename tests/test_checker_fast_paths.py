"""The fast paths of the generated checker's ``check`` decide exactly as the full reading does.

``check`` reads the lists of a profile whose gate bounds every pair (``_GATES``) without the
digit test, and reads them again in full only when the gate refuses (issue 14). These tests pin
the cases where that matters: an integer past the digit limit anywhere in a short or a long
list is still a ``CaseError`` naming it, in field order, for every profile; a bad item in a
later list does not hide a huge integer in an earlier one.
"""

from __future__ import annotations

from typing import Any

import pytest

from tailguard._generated import checker
from tailguard._generated.checker import CaseError, check

BIG = 10**checker.MAX_INT_DIGITS
BASE: dict[str, Any] = {
    "history_end": 100, "tail_start": 50, "summary_input": (0, 100), "summary_covers": (0, 50),
    "recovery_floor_span": 20, "floor_unit": "turns", "truncator_unit": "turns",
}
FIELDS = ("prior_truncations", "prior_coverage", "spills")


def _full(profile: str, case: dict[str, Any]) -> Any:
    """The decision by the full reading (``read_case`` then the profile function)."""
    return checker.check_case({**{f: [] for f in FIELDS}, **case}, profile)


@pytest.mark.parametrize("profile", checker.PROFILES)
@pytest.mark.parametrize("length", [1, 5, 31, 32, 40, 200])
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [BIG, -BIG, BIG * 10, -(BIG * 10)])
def test_an_integer_past_the_limit_is_a_case_error_in_any_list(profile: str, length: int, field: str,
                                                               value: int) -> None:
    pairs = [(i, i + 1) for i in range(length)]
    at = length // 2
    for side in (0, 1):
        bad = list(pairs)
        bad[at] = (value, 1) if side == 0 else (0, value)
        with pytest.raises(CaseError, match=rf"^{field}\[{at}\]\[{side}\]: an integer of more than 1,000 digits"):
            check(profile, **BASE, **{field: bad})


@pytest.mark.parametrize("profile", checker.PROFILES)
def test_the_first_bad_field_is_named_even_after_a_huge_integer(profile: str) -> None:
    long_ok = [(i, i + 1) for i in range(40)]
    huge = [*long_ok[:3], (0, BIG), *long_ok[3:]]
    with pytest.raises(CaseError, match=r"^prior_truncations\[3\]\[1\]: an integer of more"):
        check(profile, **BASE, prior_truncations=huge, spills=[(0, 1.5)])
    with pytest.raises(CaseError, match=r"^prior_truncations\[3\]\[1\]: an integer of more"):
        check(profile, **BASE, prior_truncations=huge, prior_coverage=iter([(0, 1)]))
    with pytest.raises(CaseError, match=r"^spills\[0\]\[1\]: expected an integer"):
        check(profile, **BASE, prior_truncations=long_ok, spills=[(0, 1.5)])


@pytest.mark.parametrize("profile", checker.PROFILES)
@pytest.mark.parametrize("length", [0, 1, 31, 32, 300])
def test_the_fast_reading_decides_as_the_full_one(profile: str, length: int) -> None:
    import random

    rng = random.Random(length)
    for _ in range(30):
        n = rng.randint(0, 60)
        lists = {f: [(a, a + rng.randint(-1, 6)) for a in (rng.randint(-2, n + 2) for _ in range(length))]
                 for f in FIELDS}
        kinds = rng.choice([list, tuple])
        case = {**BASE, "history_end": n, "tail_start": rng.randint(0, n),
                **{f: kinds(v if rng.random() < 0.5 else [list(p) for p in v]) for f, v in lists.items()}}
        assert check(profile, **case) == _full(profile, case)


def test_lists_and_tuples_of_int_subclasses_or_bools_take_the_full_reading() -> None:
    class Int(int):
        pass

    case = {**BASE, "prior_truncations": [(Int(0), Int(3))] * 40}
    assert check("strict", **case) == _full("strict", {**BASE, "prior_truncations": [(0, 3)] * 40})
    with pytest.raises(CaseError, match=r"^prior_coverage\[33\]\[0\]: expected an integer, got bool"):
        check("strict", **BASE, prior_coverage=[(0, 1)] * 33 + [(True, 2)])


class _Pair(tuple):  # type: ignore[type-arg]
    """A tuple subclass (a namedtuple is one): read as its plain pair."""


class _Int(int):
    """An int subclass: read as its plain value."""


def _odd_items() -> list[tuple[str, Any]]:
    return [("float", (0, 1.5)), ("bool", (True, 2)), ("str item", "01"), ("list item", [0, 1]),
            ("three", (0, 1, 2)), ("one", (0,)), ("None", None), ("dict", {0: 1, 2: 3}),
            ("tuple subclass", _Pair((0, 1))), ("int subclass", (_Int(0), 1)),
            ("str pair", ("0", "1")), ("nan", (0, float("nan")))]


@pytest.mark.parametrize("profile", checker.PROFILES)
@pytest.mark.parametrize("length", [1, 2, 31, 32, 33, 100])
@pytest.mark.parametrize(("what", "odd"), _odd_items(), ids=[w for w, _ in _odd_items()])
def test_any_item_decides_or_fails_as_the_full_reading(profile: str, length: int, what: str, odd: Any) -> None:
    """``check`` hands lists and tuples to the decision unread: whatever an item is, the outcome
    (a decision, or the CaseError with its field and reason) is the full reading's."""
    for field in FIELDS:
        for at in {0, length // 2, length - 1}:
            for kind in (list, tuple):
                items = [(i, i + 1) for i in range(length)]
                items[at] = odd
                case = {**BASE, field: kind(items)}
                try:
                    want: Any = _full(profile, case)
                except CaseError as exc:
                    want = ("CaseError", exc.field, exc.reason)
                try:
                    got: Any = check(profile, **case)
                except CaseError as exc:
                    got = ("CaseError", exc.field, exc.reason)
                assert got == want, (what, field, at, kind)
