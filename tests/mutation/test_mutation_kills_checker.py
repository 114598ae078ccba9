"""Tests written to kill surviving mutants of the generated checker (``tailguard._generated.checker``,
tools/mutation.sh --subset tests/mutation/checker.toml), through its public API only (``check``,
``check_case``, ``read_case``, ``explain``, ``CaseError``), so they hold whatever the renderer emits.

The first is the differential comparison of tests/test_equivalence.py at a count a mutation run
can afford per mutant (derandomized, so every mutant meets the same cases): the checker and the
naive per-offset reference agree on the decision, the failed clauses and the holes.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from tailguard._generated.checker import check
from tailguard.oracles.reference import reference
from tests.strategies import any_cases, well_formed_cases

PROFILES = ("seed", "strict", "partitioned")
_FEW = settings(max_examples=150, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def _agree(case: dict[str, Any]) -> None:
    for profile in PROFILES:
        got, ref = check(profile, **case), reference(profile, **case)
        assert (got.decision, tuple(got.failed), tuple(map(tuple, got.holes))) == (
            ref.decision, tuple(ref.failed), tuple(map(tuple, ref.holes))), (profile, case)


@_FEW
@given(any_cases())
def test_checker_and_reference_agree_on_a_few_cases(case: dict[str, Any]) -> None:
    _agree(case)


@_FEW
@given(well_formed_cases())
def test_checker_and_reference_agree_on_a_few_well_formed_cases(case: dict[str, Any]) -> None:
    _agree(case)


# --- unusable input: the exact field and reason, through every entry point -----------------------

import pytest  # noqa: E402

from tailguard._generated.checker import CaseError, check_case, explain, read_case  # noqa: E402

BASE: dict[str, Any] = {
    "history_end": 60, "tail_start": 48, "summary_input": [8, 60], "summary_covers": [8, 48],
    "recovery_floor_span": 12, "floor_unit": "turns", "truncator_unit": "turns",
    "prior_truncations": [[0, 8]], "prior_coverage": [], "spills": []}
HUGE = 10 ** 1000  # 1,001 digits: one past the limit


class _Int(int):
    pass


BAD: list[tuple[str, Any, str, str]] = [
    ("history_end", 1.5, "history_end", "expected an integer, got float 1.5"),
    ("history_end", True, "history_end", "expected an integer, got bool True"),
    ("history_end", "60", "history_end", "expected an integer, got str '60'"),
    ("history_end", HUGE, "history_end", "an integer of more than 1,000 digits (the limit)"),
    ("history_end", -HUGE, "history_end", "an integer of more than 1,000 digits (the limit)"),
    ("history_end", _Int(HUGE), "history_end", "an integer of more than 1,000 digits (the limit)"),
    ("tail_start", None, "tail_start", "expected an integer, got NoneType None"),
    ("tail_start", -HUGE, "tail_start", "an integer of more than 1,000 digits (the limit)"),
    ("recovery_floor_span", -HUGE, "recovery_floor_span", "an integer of more than 1,000 digits (the limit)"),
    ("prior_truncations", [(1.5, 2)], "prior_truncations[0][0]", "expected an integer, got float 1.5"),
    ("summary_input", [10 ** 5000], "summary_input", "expected a pair [lo, hi], got <list object>"),  # repr fails
    ("summary_input", [1], "summary_input", "expected a pair [lo, hi], got [1]"),
    ("summary_input", [1, 2, 3], "summary_input", "expected a pair [lo, hi], got [1, 2, 3]"),
    ("summary_input", "ab", "summary_input", "expected a pair [lo, hi], got 'ab'"),
    ("summary_input", {"a": 1, "b": 2}, "summary_input", "expected a pair [lo, hi], got {'a': 1, 'b': 2}"),
    ("summary_input", [1, "a"], "summary_input[1]", "expected an integer, got str 'a'"),
    ("summary_covers", [2.0, 3], "summary_covers[0]", "expected an integer, got float 2.0"),
    ("summary_covers", [0, HUGE], "summary_covers[1]", "an integer of more than 1,000 digits (the limit)"),
    ("summary_covers", [HUGE, 0], "summary_covers[0]", "an integer of more than 1,000 digits (the limit)"),
    ("floor_unit", 3, "floor_unit", "expected a unit name (string), got int 3"),
    ("truncator_unit", HUGE, "truncator_unit",
     "expected a unit name (string), got int <an integer of more than 1,000 digits>"),
    ("truncator_unit", -HUGE, "truncator_unit",
     "expected a unit name (string), got int <an integer of more than 1,000 digits>"),
    ("floor_unit", b"turns", "floor_unit", "expected a unit name (string), got bytes b'turns'"),
    ("prior_truncations", "x", "prior_truncations", "expected a list of [lo, hi] pairs, got str"),
    ("prior_truncations", b"x", "prior_truncations", "expected a list of [lo, hi] pairs, got bytes"),
    ("prior_truncations", bytearray(b"x"), "prior_truncations", "expected a list of [lo, hi] pairs, got bytearray"),
    ("prior_truncations", {"a": 1}, "prior_truncations", "expected a list of [lo, hi] pairs, got dict"),
    ("spills", 5, "spills", "expected a list of [lo, hi] pairs, got int"),
    ("prior_truncations", [[1, 2], [3]], "prior_truncations[1]", "expected a pair [lo, hi], got [3]"),
    ("prior_coverage", [[1, 2.0]], "prior_coverage[0][1]", "expected an integer, got float 2.0"),
    ("prior_coverage", [(1, 2)] * 40 + [(1, True)], "prior_coverage[40][1]", "expected an integer, got bool True"),
    ("spills", [(1, 2)] * 40 + [[HUGE, 1]], "spills[40][0]", "an integer of more than 1,000 digits (the limit)"),
    ("spills", [(1, 2)] * 40 + [[1, -HUGE]], "spills[40][1]", "an integer of more than 1,000 digits (the limit)"),
    ("spills", [[0, 1], (2, 3), "ab"], "spills[2]", "expected a pair [lo, hi], got 'ab'"),
    ("spills", lambda: iter([(0, 1), (2, 3), (4,)]), "spills[2]", "expected a pair [lo, hi], got (4,)"),
    ("spills", lambda: ([i, 9] for i in [0, 1, None]), "spills[2][0]", "expected an integer, got NoneType None"),
    ("prior_coverage", lambda: map(tuple, [[0, 1], [2, "3"]]), "prior_coverage[1][1]",
     "expected an integer, got str '3'"),
]


def _error(call: Any, *args: Any, **kwargs: Any) -> tuple[str, str, str]:
    with pytest.raises(CaseError) as err:
        call(*args, **kwargs)
    return err.value.field, err.value.reason, str(err.value)


@pytest.mark.parametrize(("key", "value", "field", "reason"), BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_unusable_input_names_the_field_and_the_reason_exactly(key: str, value: Any, field: str, reason: str) -> None:
    """``value`` is the bad value, or a function making a fresh one (an iterator is used up)."""

    def bad() -> Any:
        return value() if callable(value) and not isinstance(value, type) else value

    expected = (field, reason, f"{field}: {reason}")
    assert _error(check_case, {**BASE, key: bad()}) == expected
    assert _error(read_case, {**BASE, key: bad()}) == expected
    good = read_case(BASE)
    for profile in ("strict", "seed", "partitioned"):
        assert _error(check, profile, **{**good, key: bad()}) == expected
    assert _error(explain, "strict", check_case(BASE), **{**good, key: bad()}) == expected


def test_case_level_errors() -> None:
    for value, kind in (([1], "list"), ("x", "str")):
        reason = f"expected a JSON object, got {kind}"
        assert _error(read_case, value) == _error(check_case, value) == ("case", reason, f"case: {reason}")
    for field in BASE:
        assert _error(check_case, {k: v for k, v in BASE.items() if k != field})[2] == f"{field}: missing field"
    assert read_case({**BASE, "extra": [1.5]}) == read_case(BASE)  # extra keys are ignored
    for bad in ("nope", 3, None, HUGE, ["strict"]):
        known = "known: ['partitioned', 'seed', 'strict']"
        shown = "<an integer of more than 1,000 digits>" if bad is HUGE else repr(bad)
        expected = ("profile", f"unknown profile {shown}; {known}", f"profile: unknown profile {shown}; {known}")
        assert _error(check_case, BASE, bad) == expected
        assert _error(check, bad, **read_case(BASE)) == expected
        assert _error(explain, bad, check_case(BASE), **read_case(BASE)) == expected


LIMIT = "more than 100,000 intervals in the case (the limit; prior_truncations, prior_coverage and spills together)"


def test_the_interval_limit_counts_the_three_lists_together() -> None:
    from tailguard._generated.checker import MAX_INTERVALS

    assert MAX_INTERVALS == 100_000
    half = [[0, 1]] * 50_000
    full = {**BASE, "prior_truncations": half, "prior_coverage": half[:49_999], "spills": [[0, 1]]}
    assert [len(read_case(full)[k]) for k in ("prior_truncations", "prior_coverage", "spills")] == [
        50_000, 49_999, 1]  # exactly the limit: read
    lists = ("prior_truncations", "prior_coverage", "spills")
    for field, case in (("prior_truncations", {**BASE, "prior_truncations": [[0, 1]] * 100_001}),
                        ("prior_coverage", {**full, "prior_coverage": [*half, [0, 1]]}),
                        ("spills", {**full, "spills": [[0, 1], [1, 2]]})):
        assert _error(check_case, case)[:2] == (field, LIMIT)
        kwargs = {**read_case(BASE), **{k: [tuple(p) for p in case[k]] for k in lists}}
        assert _error(check, "strict", **kwargs)[:2] == (field, LIMIT)
        assert _error(check, "seed", **{**kwargs, field: iter(kwargs[field])})[:2] == (field, LIMIT)


def test_an_int_subclass_is_read_as_its_plain_value() -> None:
    class Int(int):
        pass

    case = read_case({**BASE, "history_end": Int(60), "summary_input": [Int(8), Int(60)],
                      "prior_truncations": [[Int(0), Int(8)]], "spills": [(Int(1), 2)] * 40})
    assert type(case["history_end"]) is int and case["history_end"] == 60
    assert all(type(v) is int for v in case["summary_input"]) and case["summary_input"] == (8, 60)
    assert case["prior_truncations"] == [(0, 8)] and all(type(v) is int for v in case["prior_truncations"][0])
    assert case["spills"] == [(1, 2)] * 40 and all(type(v) is int for p in case["spills"] for v in p)
    assert all(type(p) is tuple for p in case["spills"])


_MANY = {"history_end": 20, "tail_start": 10, "summary_input": [12, 15], "summary_covers": [2, 18],
         "recovery_floor_span": 15, "floor_unit": "turns", "truncator_unit": "tokens",
         "prior_truncations": [[8, 12], [1, 2]], "prior_coverage": [[0, 1]], "spills": [[19, 20]]}
_SEAM = {**_MANY, "floor_unit": "tokens", "summary_input": [0, 20], "summary_covers": [0, 10],
         "prior_truncations": [[15, 16]], "recovery_floor_span": 3, "tail_start": 12}
_INCONSISTENT = {**BASE, "history_end": -1, "summary_input": [9, 3], "floor_unit": "x", "truncator_unit": "y"}

EXPLAINED: list[tuple[dict[str, Any], str, tuple[Any, ...], list[str]]] = [
    (BASE, "seed", ("allow", (), ()), []),
    (BASE, "strict", ("refuse", ("no_hole",), ((0, 8),)),
     ["no_hole: offsets [0, 8) were evicted and are in no summary, spill or tail"]),
    (_MANY, "seed", ("refuse", ("units_agree",), ()),
     ["units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; guarantee is "
      "unenforceable"]),
    (_MANY, "strict", ("refuse", ("units_agree", "floor_in_input", "floor_in_tail", "tail_intact", "summary_honest",
                                  "no_hole"), ((1, 12),)), [
        "units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; the floor is "
        "unenforceable",
        "floor_in_input: recovery floor [5, 20) is not inside summarizer input [12, 15)",
        "floor_in_tail: recovery floor [5, 20) is not inside retained tail [10, 20)",
        "tail_intact: prior truncation [8, 12) intersects retained tail [10, 20); the tail is not verbatim",
        "summary_honest: summary coverage [2, 18) claims offsets [2, 12), [15, 18) it never saw",
        "no_hole: offsets [1, 12) were evicted and are in no summary, spill or tail"]),
    (_MANY, "partitioned", ("refuse", ("units_agree", "floor_in_tail", "tail_intact", "summary_honest", "no_hole"),
                            ((1, 12),)), [
        "units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; the floor is "
        "unenforceable",
        "floor_in_tail: recovery floor [5, 20) is not inside retained tail [10, 20)",
        "tail_intact: prior truncation [8, 12) intersects retained tail [10, 20); the tail is not verbatim",
        "summary_honest: summary coverage [2, 18) claims offsets [2, 12), [15, 18) it never saw",
        "no_hole: offsets [1, 12) were evicted and are in no summary, spill or tail"]),
    (_SEAM, "seed", ("allow", (), ()), []),
    (_SEAM, "strict", ("refuse", ("tail_intact", "seam_contiguous", "no_hole"), ((10, 12), (15, 16))), [
        "tail_intact: prior truncation [15, 16) intersects retained tail [12, 20); the tail is not verbatim",
        "seam_contiguous: summary coverage ends at 10 but the tail starts at 12; the seam has a gap",
        "no_hole: offsets [10, 12), [15, 16) were evicted and are in no summary, spill or tail"]),
    ({**BASE, "summary_input": [40, 60]}, "seed", ("refuse", ("floor_reach",), ()),
     ["floor_reach: summarizer input starts at 40, but the recovery floor begins at 36; floor is not a subset of "
      "input"]),
    ({**BASE, "prior_truncations": [[30, 40], [20, 45]]}, "seed", ("refuse", ("truncation_clear",), ()),
     ["truncation_clear: prior truncation [30, 40) intersects recovery floor [36, 48); evidence already evicted"]),
    (_INCONSISTENT, "strict", ("refuse", ("well_formed",), ()),
     ["well_formed: the case is inconsistent (n >= 0 is false; 0 <= t <= n is false; all(r in I, C, TR, PC, SP: "
      "0 <= r.lo <= r.hi <= n) is false; known(floor_unit) is false; known(truncator_unit) is false); the guard "
      "fails closed"]),
    ({**BASE, "floor_unit": "Turns", "truncator_unit": "Turns"}, "partitioned", ("refuse", ("well_formed",), ()),
     ["well_formed: the case is inconsistent (known(floor_unit) is false; known(truncator_unit) is false); the "
      "guard fails closed"]),
    (_INCONSISTENT, "seed", ("refuse", ("units_agree",), ()),
     ["units_agree: recovery floor unit 'x' cannot be honored by truncator unit 'y'; guarantee is unenforceable"]),
    (_SEAM, "partitioned", ("refuse", ("tail_intact", "seam_contiguous", "no_hole"), ((10, 12), (15, 16))), [
        "tail_intact: prior truncation [15, 16) intersects retained tail [12, 20); the tail is not verbatim",
        "seam_contiguous: summary coverage ends at 10 but the tail starts at 12; the seam has a gap",
        "no_hole: offsets [10, 12), [15, 16) were evicted and are in no summary, spill or tail"]),
    # F > n: the floor is clipped to [0, n)
    ({**_MANY, "recovery_floor_span": 25}, "partitioned", (
        "refuse", ("units_agree", "floor_in_tail", "tail_intact", "summary_honest", "no_hole"), ((1, 12),)), [
        "units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; the floor is "
        "unenforceable",
        "floor_in_tail: recovery floor [0, 20) is not inside retained tail [10, 20)",
        "tail_intact: prior truncation [8, 12) intersects retained tail [10, 20); the tail is not verbatim",
        "summary_honest: summary coverage [2, 18) claims offsets [2, 12), [15, 18) it never saw",
        "no_hole: offsets [1, 12) were evicted and are in no summary, spill or tail"]),
    ({**_MANY, "recovery_floor_span": 25}, "strict", (
        "refuse", ("units_agree", "floor_in_input", "floor_in_tail", "tail_intact", "summary_honest", "no_hole"),
        ((1, 12),)), [
        "units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; the floor is "
        "unenforceable",
        "floor_in_input: recovery floor [0, 20) is not inside summarizer input [12, 15)",
        "floor_in_tail: recovery floor [0, 20) is not inside retained tail [10, 20)",
        "tail_intact: prior truncation [8, 12) intersects retained tail [10, 20); the tail is not verbatim",
        "summary_honest: summary coverage [2, 18) claims offsets [2, 12), [15, 18) it never saw",
        "no_hole: offsets [1, 12) were evicted and are in no summary, spill or tail"]),
    # a truncation inside the summary's input: the offsets it claims include it
    ({**_MANY, "prior_truncations": [[8, 12], [1, 2], [13, 14]]}, "partitioned", (
        "refuse", ("units_agree", "floor_in_tail", "tail_intact", "summary_honest", "no_hole"), ((1, 12), (13, 14))), [
        "units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; the floor is "
        "unenforceable",
        "floor_in_tail: recovery floor [5, 20) is not inside retained tail [10, 20)",
        "tail_intact: prior truncation [8, 12) intersects retained tail [10, 20); the tail is not verbatim",
        "summary_honest: summary coverage [2, 18) claims offsets [2, 12), [13, 14), [15, 18) it never saw",
        "no_hole: offsets [1, 12), [13, 14) were evicted and are in no summary, spill or tail"]),
    ({**_MANY, "prior_truncations": [[8, 12], [1, 2], [13, 14]]}, "strict", (
        "refuse", ("units_agree", "floor_in_input", "floor_in_tail", "tail_intact", "summary_honest", "no_hole"),
        ((1, 12), (13, 14))), [
        "units_agree: recovery floor unit 'turns' cannot be honored by truncator unit 'tokens'; the floor is "
        "unenforceable",
        "floor_in_input: recovery floor [5, 20) is not inside summarizer input [12, 15)",
        "floor_in_tail: recovery floor [5, 20) is not inside retained tail [10, 20)",
        "tail_intact: prior truncation [8, 12) intersects retained tail [10, 20); the tail is not verbatim",
        "summary_honest: summary coverage [2, 18) claims offsets [2, 12), [13, 14), [15, 18) it never saw",
        "no_hole: offsets [1, 12), [13, 14) were evicted and are in no summary, spill or tail"]),
    # the seed's witness is the first truncation that meets [t - F, t): not one ending at t - F or starting at t
    ({**BASE, "prior_truncations": [[30, 36], [48, 50], [40, 44]]}, "seed", ("refuse", ("truncation_clear",), ()),
     ["truncation_clear: prior truncation [40, 44) intersects recovery floor [36, 48); evidence already evicted"]),
]


@pytest.mark.parametrize(("case", "profile", "decision", "sentences"), EXPLAINED)
def test_the_decision_and_its_explanation_exactly(case: dict[str, Any], profile: str, decision: tuple[Any, ...],
                                                  sentences: list[str]) -> None:
    d = check_case(case, profile)
    assert tuple(d) == decision and d.allowed is (decision[0] == "allow")
    assert d.to_json() == {"decision": decision[0], "failed": list(decision[1]),
                           "holes": [list(h) for h in decision[2]]}
    assert check(profile, **read_case(case)) == d
    assert explain(profile, d, **read_case(case)) == sentences


def test_explain_takes_the_decision_it_is_given() -> None:
    """explain trusts the decision: a clause listed as failed is explained even where the case has
    no witness or no hole (the set then reads "nothing", the witness "an interval")."""
    from tailguard._generated.checker import Decision

    case = read_case(BASE)
    assert explain("strict", Decision("refuse", ("no_hole",), ()), **case) == [
        "no_hole: offsets nothing were evicted and are in no summary, spill or tail"]
    assert explain("seed", Decision("refuse", ("truncation_clear",), ()), **case) == [
        "truncation_clear: prior truncation an interval intersects recovery floor [36, 48); evidence already evicted"]
    assert explain("partitioned", Decision("refuse", ("no_hole", "summary_honest"), ()), **case) == [
        "summary_honest: summary coverage [8, 48) claims offsets nothing it never saw",
        "no_hole: offsets nothing were evicted and are in no summary, spill or tail"]
    assert explain("strict", Decision("allow", (), ((0, 8),)), **case) == []


# --- the long-list reader (32 pairs or more are read column by column) ---------------------------

LONG: list[tuple[str, Any, str, str]] = [
    ("spills", [(1, 2)] * 40 + [(1, 2, 3)], "spills[40]", "expected a pair [lo, hi], got (1, 2, 3)"),
    ("spills", [(1, 2, 3)] * 40, "spills[0]", "expected a pair [lo, hi], got (1, 2, 3)"),
    ("prior_coverage", [[1, 2]] * 40 + [{1: 0, 2: 0}], "prior_coverage[40]",
     "expected a pair [lo, hi], got {1: 0, 2: 0}"),
    ("prior_truncations", [(1, 2)] * 40 + [(-HUGE, 1)], "prior_truncations[40][0]",
     "an integer of more than 1,000 digits (the limit)"),
    ("prior_truncations", [(1, 2)] * 40 + [(1, HUGE)], "prior_truncations[40][1]",
     "an integer of more than 1,000 digits (the limit)"),
]


@pytest.mark.parametrize(("key", "value", "field", "reason"), LONG, ids=[f"{b[0]}-{i}" for i, b in enumerate(LONG)])
def test_a_long_list_names_its_bad_pair(key: str, value: Any, field: str, reason: str) -> None:
    expected = (field, reason, f"{field}: {reason}")
    assert _error(read_case, {**BASE, key: value}) == expected
    good = read_case(BASE)
    for profile in PROFILES:
        assert _error(check, profile, **{**good, key: value}) == expected
    assert _error(explain, "strict", check_case(BASE), **{**good, key: value}) == expected


def test_a_long_list_of_lists_is_read_as_tuples() -> None:
    for pairs in ([[1, 2]] * 40, [(1, 2)] * 40, [(1, 2), [1, 2]] * 20):
        got = read_case({**BASE, "spills": pairs})["spills"]
        assert got == [(1, 2)] * 40 and all(type(p) is tuple for p in got)
    assert read_case({**BASE, "spills": [(-(10 ** 999), 10 ** 999)] * 40})["spills"] == [
        (-(10 ** 999), 10 ** 999)] * 40  # 1,000 digits: the largest allowed


# --- explain reads its arguments like check ------------------------------------------------------

FALSY: list[tuple[str, Any, str, str]] = [
    ("recovery_floor_span", 1.5, "recovery_floor_span", "expected an integer, got float 1.5"),
    ("prior_truncations", None, "prior_truncations", "expected a list of [lo, hi] pairs, got NoneType"),
    ("prior_coverage", 0, "prior_coverage", "expected a list of [lo, hi] pairs, got int"),
    ("spills", "", "spills", "expected a list of [lo, hi] pairs, got str"),
    ("spills", {}, "spills", "expected a list of [lo, hi] pairs, got dict"),
]


@pytest.mark.parametrize(("key", "value", "field", "reason"), FALSY, ids=[f"{b[0]}-{i}" for i, b in enumerate(FALSY)])
def test_a_falsy_value_that_is_not_a_list_is_unusable(key: str, value: Any, field: str, reason: str) -> None:
    """An empty list or tuple is no intervals; None, 0, "" or {} is an input error, everywhere."""
    expected = (field, reason, f"{field}: {reason}")
    assert _error(check_case, {**BASE, key: value}) == expected
    good = read_case(BASE)
    for profile in PROFILES:
        assert _error(check, profile, **{**good, key: value}) == expected
        assert _error(explain, profile, check_case(BASE), **{**good, key: value}) == expected
    for empty in ([], ()):
        assert explain("strict", check_case(BASE), **{**good, "prior_coverage": empty, "spills": empty}) == [
            "no_hole: offsets [0, 8) were evicted and are in no summary, spill or tail"]


def test_explain_counts_the_interval_limit_like_check() -> None:
    half = [(0, 1)] * 50_000
    good = read_case(BASE)
    decision = check_case(BASE)
    for field, lists in (("prior_coverage", (half, [*half, (0, 1)], [])),
                         ("spills", (half, half[:49_999], [(0, 1), (1, 2)])),
                         ("spills", ([], [(0, 1)] * 99_999, [(0, 1), (1, 2)]))):
        kwargs = {**good, **dict(zip(("prior_truncations", "prior_coverage", "spills"), lists))}  # noqa: B905
        assert _error(explain, "strict", decision, **kwargs)[:2] == (field, LIMIT)
    exact = {**good, "prior_truncations": half, "prior_coverage": half[:49_999], "spills": [(0, 1)]}
    assert explain("seed", check("seed", **exact), **exact) == []


# --- the well_formed sentence names exactly the conditions that fail ------------------------------

_UNKNOWN = {"history_end": 10, "tail_start": 5, "recovery_floor_span": 2, "floor_unit": "x",
            "truncator_unit": "turns"}
_BOUNDS = "all(r in I, C, TR, PC, SP: 0 <= r.lo <= r.hi <= n)"
WELL_FORMED: list[tuple[dict[str, Any], bool]] = [
    # every interval at the edges of [0, n]: only the unit is wrong
    ({"summary_input": [0, 10], "summary_covers": [0, 0], "prior_truncations": [[0, 10]],
      "prior_coverage": [[0, 1]], "spills": [[0, 10]]}, False),
    ({"summary_input": [10, 10], "summary_covers": [0, 10], "prior_truncations": [],
      "prior_coverage": [], "spills": []}, False),
    ({"summary_input": [3, 3], "summary_covers": [10, 10], "prior_truncations": [[10, 10]],
      "prior_coverage": [[0, 0]], "spills": [[5, 5]]}, False),
    # one interval out of [0, n] (or inverted)
    ({"summary_input": [5, 3], "summary_covers": [0, 10], "prior_truncations": [],
      "prior_coverage": [], "spills": []}, True),
    ({"summary_input": [0, 10], "summary_covers": [0, 11], "prior_truncations": [],
      "prior_coverage": [], "spills": []}, True),
    ({"summary_input": [0, 10], "summary_covers": [0, 10], "prior_truncations": [[0, 11]],
      "prior_coverage": [], "spills": []}, True),
    ({"summary_input": [0, 10], "summary_covers": [0, 10], "prior_truncations": [],
      "prior_coverage": [[0, 11]], "spills": []}, True),
    ({"summary_input": [0, 10], "summary_covers": [0, 10], "prior_truncations": [],
      "prior_coverage": [], "spills": [[-1, 3]]}, True),
]


@pytest.mark.parametrize(("intervals", "out_of_bounds"), WELL_FORMED)
@pytest.mark.parametrize("profile", ["strict", "partitioned"])
def test_the_well_formed_sentence_lists_exactly_the_false_conditions(
        profile: str, intervals: dict[str, Any], out_of_bounds: bool) -> None:
    case = {**_UNKNOWN, **intervals}
    d = check_case(case, profile)
    assert tuple(d) == ("refuse", ("well_formed",), ())
    false = [_BOUNDS] * out_of_bounds + ["known(floor_unit)"]
    assert explain(profile, d, **read_case(case)) == [
        f"well_formed: the case is inconsistent ({'; '.join(c + ' is false' for c in false)}); "
        "the guard fails closed"]


# --- the tail_intact witness: the first truncation that shares an offset with the tail -----------

WITNESS: list[tuple[list[list[int]], str]] = [
    ([[0, 8], [50, 55]], "[50, 55)"),    # one before the tail is no witness
    ([[40, 48], [50, 55]], "[50, 55)"),  # nor one that ends where the tail starts
    ([[50, 50], [52, 55]], "[52, 55)"),  # nor an empty one inside it
    ([[55, 60], [50, 52]], "[55, 60)"),  # one that ends at n is
]


@pytest.mark.parametrize(("truncations", "witness"), WITNESS)
@pytest.mark.parametrize("profile", ["strict", "partitioned"])
def test_the_tail_intact_witness(profile: str, truncations: list[list[int]], witness: str) -> None:
    case = {**BASE, "prior_truncations": truncations, "summary_input": [0, 60], "summary_covers": [0, 48]}
    d = check_case(case, profile)
    assert "tail_intact" in d.failed
    sentence = f"tail_intact: prior truncation {witness} intersects retained tail [48, 60); the tail is not verbatim"
    assert sentence in explain(profile, d, **read_case(case))


@pytest.mark.parametrize("profile", ["strict", "partitioned"])
def test_the_tail_intact_witness_for_any_values_explain_is_given(profile: str) -> None:
    """explain trusts the decision and the values (see test_explain_takes_the_decision_it_is_given):
    the witness is the first r in TR with r & T nonempty even when the case is inconsistent, and
    "an interval" when there is none."""
    from tailguard._generated.checker import Decision

    told = Decision("refuse", ("tail_intact",), ())

    def witness(t: int, n: int, truncations: list[tuple[int, int]]) -> str:
        case = {**read_case(BASE), "history_end": n, "tail_start": t, "prior_truncations": truncations}
        (sentence,) = explain(profile, told, **case)
        return sentence.removeprefix("tail_intact: prior truncation ").split(" intersects")[0]

    assert witness(48, 60, [(0, 8)]) == "an interval"  # none meets the tail
    assert witness(48, 60, [(60, 70), (50, 55)]) == "[50, 55)"  # past n: no offset of [48, 60)
    assert witness(60, 60, [(50, 70)]) == "an interval"  # an empty tail meets nothing
    assert witness(70, 60, [(50, 80)]) == "an interval"  # nor an inverted one


def test_an_unsorted_list_with_an_empty_pair_in_the_tail() -> None:
    """The empty pair [5, 5) is no truncation: the tail [4, 10) is intact (the unsorted list is
    sorted and merged again, and the empty pair must not land in the union)."""
    case = {"history_end": 10, "tail_start": 4, "summary_input": [0, 4], "summary_covers": [0, 4],
            "recovery_floor_span": 2, "floor_unit": "turns", "truncator_unit": "turns",
            "prior_truncations": [[2, 3], [0, 1], [5, 5]], "prior_coverage": [], "spills": []}
    for profile in ("strict", "partitioned"):
        d = check_case(case, profile)
        assert d.failed[-2:] == ("summary_honest", "no_hole") and "tail_intact" not in d.failed, profile
        assert d.holes == ((0, 1), (2, 3)), profile
        _agree(read_case(case))


_BOUND = HUGE  # the least integer of 1,001 digits: the first one past the limit
_LIMIT = "an integer of more than 1,000 digits (the limit)"


@pytest.mark.parametrize("make", [list, tuple, iter], ids=["list", "tuple", "iterator"])
@pytest.mark.parametrize(("pair", "field"), [
    ((_BOUND, _BOUND), "prior_truncations[0][0]"),
    ((_BOUND, 0), "prior_truncations[0][0]"),
    ((0, _BOUND), "prior_truncations[0][1]"),
    ((0, -_BOUND), "prior_truncations[0][1]"),
    ((-_BOUND, 0), "prior_truncations[0][0]"),
])
def test_the_digit_limit_is_exact_in_short_lists_and_iterators(make: Any, pair: tuple[int, int],
                                                              field: str) -> None:
    """Exactly 10**1000 (1,001 digits) is unusable and 10**1000 - 1 is read, in every path of
    the list reader: short lists and tuples (pair by pair) and iterators (the inline path)."""
    case = dict(BASE, prior_truncations=make([pair]))
    with pytest.raises(CaseError) as err:
        read_case(case)
    assert (err.value.field, err.value.reason) == (field, _LIMIT)
    with pytest.raises(CaseError) as err:
        check("strict", **dict(case, prior_truncations=make([pair])))
    assert (err.value.field, err.value.reason) == (field, _LIMIT)
    inside = tuple(v - 1 if v == _BOUND else v + 1 if v == -_BOUND else v for v in pair)
    assert read_case(dict(BASE, prior_truncations=make([inside])))["prior_truncations"] == [inside]
