"""Tests written to kill surviving mutants of ``tailguard.runtime.ledger_core`` (tools/mutation.sh
--subset tests/mutation/ledger.toml): the well_formed diagnostics of recorded ranges, the
messages for ids that left the context, the seed's witness, the exact truncation lines a hole
is owed to, and the state rebuilt after an eviction."""

from __future__ import annotations

import tracemalloc

import pytest

from tailguard._generated.checker import Decision
from tailguard.audit.html.session_data import collect
from tailguard.runtime.ledger_core import LedgerCore, TruncationOrigins
from tailguard.runtime.ledger_explain import explain


def _core(**kw: bool) -> LedgerCore:
    return LedgerCore(2, "turns", "turns", **kw)


def test_bounds_problems_name_each_recorded_range_outside_the_history() -> None:
    core = _core()
    assert core.bounds_problems() == []  # nothing recorded: lowest 0, highest 0, n 0
    core.append(10)
    core.truncate(0, 10, "whole")
    assert core.bounds_problems() == []  # [0, n] exactly is inside
    core.truncate(5, 3, "rev")
    core.truncate(6, 2, "rev again")  # only the first reversed range is named
    core.spill(-2, 1, "neg")
    core.truncate(4, 12, "far")
    assert core.bounds_problems() == [
        ("has lo > hi", "rev"),
        ("starts at -2 < 0", "neg"),
        ("ends at 12, past the history end 10", "far"),
    ]
    assert core.decide("strict", 10, (0, 10), (0, 10)) == Decision("refuse", ("well_formed",), ())


def test_an_id_that_left_the_context_is_named_with_the_line_that_created_it() -> None:
    core = _core()
    core.append(10)
    core.compact((0, 10), (0, 6), 3)
    core.compact((0, 10), (0, 6), None, summary="untagged")
    core.evict("untagged")
    assert core.evict_problem("0") == (
        "summary", "no summary '0' is in the context here (it was created at line 3 and has left the context)")
    assert core.evict_problem("untagged") == (
        "summary", "no summary 'untagged' is in the context here (it has left the context)")
    assert core.evict_problem("never") == ("summary", "no summary 'never' is in the context here")
    assert core.lineage_problem(None, ["never"], (), new=False) == (
        "saw[0]", "no summary 'never' is in the context here")


def test_the_seed_witness_is_the_raw_truncation_with_the_highest_end_below_t() -> None:
    core = _core()
    core.append(20)
    core.truncate(2, 9, "a")
    core.truncate(3, 5, "b")  # dominated by (2, 9)
    core.truncate(12, 14, "c")
    assert core.seed_witness(10) == (2, 9, "a")
    assert core.seed_witness(13) == (12, 14, "c")
    assert core.seed_witness(2) is None
    assert _core(seed=False).seed_witness(10) is None


def test_exact_lines_within_names_each_truncation_a_range_lost_and_nothing_past_it() -> None:
    o = TruncationOrigins()
    assert o.exact_lines_within(0, 10) == []
    o.add_fresh(0, 4, "a", exact=True)
    o.add_fresh(4, 6, "b", exact=True)
    o.add_fresh(8, 9, "c", exact=True)
    o.add_fresh(6, 8, "recovered")  # not exact: never a hole's
    assert o.exact_lines_within(0, 4) == ["a"]
    assert o.exact_lines_within(3, 5) == ["a", "b"]
    assert o.exact_lines_within(4, 8) == ["b"]
    assert o.exact_lines_within(0, 100) == ["a", "b", "c"]
    assert o.within(3, 9) == [("recovered", "recovered"), ("a", "a"), ("b", "b"), ("c", "c")]
    assert o.within(3, 6) == [("a", "a"), ("b", "b")]  # the merged row starting at 6 is not in it
    assert o.within(7, 8) == [("recovered", "recovered")]


def test_an_eviction_rebuilds_what_is_recovered_and_lost_from_the_spills() -> None:
    for origins in (False, True):
        core = _core(track_origins=origins)
        core.append(10)
        core.compact((0, 10), (0, 6), 2)
        core.truncate(0, 4, 3)
        core.spill(0, 2, 4)
        assert list(core.lost) == []
        core.evict("0", 5)
        assert list(core.recovered) == [(0, 2)] and list(core.lost) == [(2, 4)]
        d = core.decide("strict", 8, (6, 10), (6, 8))
        assert d == Decision("refuse", ("no_hole",), ((2, 6),))


def test_the_seed_profile_needs_the_seed_state() -> None:
    core = _core(seed=False)
    core.append(10)
    with pytest.raises(ValueError) as info:
        core.decide("seed", 8, (0, 10), (0, 8))
    assert str(info.value) == "this ledger core was built without the seed profile's state"
    with pytest.raises(ValueError) as info:
        core.decide("loose", 8, (0, 10), (0, 8))
    assert str(info.value) == "unknown profile 'loose'; known: seed, strict, partitioned"


def test_uncovered_outside_gives_no_empty_range() -> None:
    core = _core()
    core.append(10)
    assert core.uncovered_outside(6, 0, 4) == [(4, 6)]
    assert core.uncovered_outside(10, 2, 4) == [(0, 2), (4, 10)]
    assert core.uncovered_outside(4, 0, 4) == []
    assert core.uncovered_outside(3, 5, 10) == [(0, 3)]


def test_well_formed_checks_the_prior_coverage_of_several_summaries_too() -> None:
    core = _core()
    core.append(5)
    core.compact((0, 10), (0, 10), 2, summary="wide")  # records accept any integers
    core.compact((0, 5), (0, 1), 3, summary="b", keeps=["wide"])  # two summaries: no cached union
    assert core.decide("strict", 5, (0, 5), (0, 5)) == Decision("refuse", ("well_formed",), ())


def test_equivalent_case_without_history_says_how_to_get_it() -> None:
    with pytest.raises(RuntimeError) as info:
        _core().equivalent_case(0, (0, 0), (0, 0))
    assert str(info.value) == "equivalent_case needs a ledger created with keep_history=True"


def test_a_summary_that_meets_its_input_at_one_offset_has_no_honest_part() -> None:
    """C and I only touch (C & I is empty): the honest part is no range at all, not an empty
    one, in the core and in the HTML report's row of that compaction."""
    core = _core()
    core.append(10)
    assert core.honest_part((0, 5), (5, 8)) == []
    assert core.honest_part((5, 8), (0, 5)) == []
    assert core.honest_part((0, 5), (5, 5)) == []
    assert core.honest_part((0, 5), (4, 8)) == [(4, 5)]
    log = [b'{"event": "session", "unit": "turns", "recovery_floor_span": 2, "floor_unit": "turns", '
           b'"truncator_unit": "turns"}',
           b'{"event": "append", "count": 10}',
           b'{"event": "compact", "summary_input": [0, 5], "summary_covers": [5, 8], "tail_start": 8}',
           b'{"event": "compact", "summary_input": [0, 8], "summary_covers": [2, 6], "tail_start": 8}']
    rows = collect(log, "t.jsonl", "strict").rows
    assert [r.honest for r in rows] == [[], [(2, 6)]]


def test_a_reused_summary_id_is_named_with_the_line_that_used_it_or_without_one() -> None:
    core = _core()
    core.append(10)
    core.compact((0, 10), (0, 4), 3, summary="a")
    core.evict("a", 4)  # left the context: its id is still used
    assert core.lineage_problem("a", None, (), new=True) == (
        "summary", "summary id 'a' was already used at line 3; ids are unique in a session")
    core.compact((0, 10), (0, 4), None, summary="b")  # no tag: in the context, no line to name
    assert core.lineage_problem("b", None, (), new=True) == (
        "summary", "summary id 'b' was already used; ids are unique in a session")
    assert core.lineage_problem("c", None, (), new=True) is None
    assert core.lineage_problem("b", None, (), new=False) is None  # a decision names no new id


def test_recovered_truncations_merge_with_the_rows_they_touch_and_only_those() -> None:
    """Non-exact rows (offsets already recovered when truncated) merge with a row they touch on
    either side, widening its (first, last) lines; a row they do not touch stays apart."""
    o = TruncationOrigins()
    o.add_fresh(0, 2, "a")
    o.add_fresh(2, 4, "b")  # touches the left: [0, 4) from a to b
    assert o.within(0, 10) == [("a", "b")]
    o.add_fresh(4, 6, "c")  # touches a merged row: its first line stays a
    assert o.within(0, 10) == [("a", "c")]
    o.add_fresh(8, 9, "d")  # a gap on the left: apart
    assert o.within(0, 10) == [("a", "c"), ("d", "d")]
    assert o.within(6, 8) == []
    o.add_fresh(12, 14, "e")
    o.add_fresh(10, 11, "f")  # a gap on the right too: apart
    assert o.within(9, 12) == [("f", "f")]
    o.add_fresh(11, 12, "g")  # touches both: one row from f to e
    assert o.within(9, 20) == [("f", "e")]
    assert o.within(0, 20) == [("a", "c"), ("d", "d"), ("f", "e")]


def test_a_summary_that_leaves_unseen_takes_its_coverage_with_it() -> None:
    """A compaction whose summarizer did not see an earlier summary (and does not keep it):
    that summary's coverage leaves the context, so a truncation it covered becomes a hole."""
    for origins in (False, True):
        core = _core(track_origins=origins)
        core.append(10)
        core.compact((0, 10), (0, 6), 2, summary="s1")
        core.truncate(0, 4, 3)
        assert list(core.lost) == []
        core.compact((4, 10), (4, 8), 5, summary="s2", saw=[])
        assert list(core.recovered) == [(4, 8)] and list(core.lost) == [(0, 4)]
        d = core.decide("strict", 8, (4, 10), (4, 8))
        assert d == Decision("refuse", ("no_hole",), ((0, 4),))
        if core.lost_coverage is not None:
            assert core.lost_coverage.within(0, 10) == [
                (0, 4, "summary 's1' (line 2), which left the context unseen by the summarizer at line 5")]


def test_the_lowest_start_and_highest_end_are_named_by_the_first_range_that_reached_them() -> None:
    core = _core()
    core.append(10)
    core.spill(-2, 1, "neg")
    core.truncate(-2, 12, "far")  # the same lowest start, recorded later (and a new highest end)
    core.spill(-2, 3, "neg again")
    core.truncate(13, 12, "rev")  # the same highest end, recorded later
    assert core.bounds_problems() == [
        ("has lo > hi", "rev"),
        ("starts at -2 < 0", "neg"),
        ("ends at 12, past the history end 10", "far"),
    ]


def test_a_negative_history_end_with_nothing_recorded_blames_no_event() -> None:
    core = _core()
    core.append()
    core.append()
    assert core.n == 2  # one offset per append by default
    core.append(-5)
    assert core.bounds_problems() == [("ends at 0, past the history end -3", None)]


def test_a_truncation_splits_into_recovered_and_exact_rows_with_its_own_line() -> None:
    """Offsets spilled before the truncation are recovered rows (merged, first and last line);
    the rest are exact rows, each naming its truncation, for every gap of a truncation."""
    core = _core(track_origins=True)
    core.append(10)
    core.truncate(2, 4, "a")  # nothing recovered yet: exact
    core.truncate(0, 6, "b")  # two gaps, [0, 2) and [4, 6): both exact, both b
    o = core.origins
    assert o is not None
    assert o.exact_lines_within(0, 2) == ["b"] and o.exact_lines_within(4, 6) == ["b"]
    assert o.exact_lines_within(0, 10) == ["b", "a", "b"]
    core.spill(6, 10, "s")
    core.truncate(6, 8, "c")  # spilled first: recovered, never a hole's
    core.truncate(8, 9, "d")  # touches it: one recovered row from c to d
    core.truncate(9, 10, 7)
    assert o.exact_lines_within(6, 10) == []
    assert o.within(6, 10) == [("c", 7)]
    assert list(core.lost) == [(0, 6)]


def test_without_track_origins_the_explanation_names_no_departed_summary() -> None:
    """Only a core built to explain (track_origins) keeps which summary's coverage left the
    context; the audit's plain core says the offsets were truncated, and keeps nothing more."""
    sentences = []
    for origins in (False, True):
        core = _core(track_origins=origins)
        core.append(10)
        core.compact((0, 10), (0, 6), 2, summary="s1")
        core.truncate(0, 4, 3)
        core.compact((4, 10), (4, 8), 5, summary="s2", saw=[])
        d = core.decide("strict", 8, (4, 10), (4, 8))
        sentences.append(explain(core, "strict", d, 8, (4, 10), (4, 8)))
    assert sentences == [
        ["no_hole: offsets [0, 4) were truncated and never summarized or spilled"],
        ["no_hole: offsets [0, 4) were covered only by summary 's1' (line 2), which left the context "
         "unseen by the summarizer at line 5"],
    ]


def test_without_keep_history_the_core_keeps_no_record_per_event() -> None:
    """The ranges recorded are kept as merged unions only: 10,000 truncations and spills of the
    same offsets cost no memory per event unless keep_history asks for the equivalent case."""
    grew = {}
    for keep in (False, True):
        core = _core(keep_history=keep)
        core.append(10)
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(10_000):
                core.truncate(0, 1)
                core.spill(0, 1)
            grew[keep] = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert grew[True] > 800_000  # two lists of 10,000 pairs: the measure sees them
    assert grew[False] < 80_000
