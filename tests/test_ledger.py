"""The ledger, its interval index and the seed-compatible API."""

from __future__ import annotations

import doctest
import io
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

import tailguard.runtime.eventlog
import tailguard.runtime.interval_index
import tailguard.runtime.ledger
import tailguard.runtime.seed_api
from tailguard._generated.checker import check_case
from tailguard.runtime.interval_index import IntervalUnion, Staircase
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import (
    UnrecoverableCompactionError,
    assert_compaction_safe,
    assert_recoverable,
)

INCIDENT = {"summary_input": (8, 48), "summary_covers": (8, 36), "tail_start": 36}


@pytest.mark.parametrize(
    "module",
    [tailguard.runtime.interval_index, tailguard.runtime.ledger, tailguard.runtime.seed_api,
     tailguard.runtime.eventlog],
)
def test_doctests(module: object) -> None:
    result = doctest.testmod(module)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0


# -- interval index against plain sets -------------------------------------------------

ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove"]), st.integers(-3, 30), st.integers(-3, 30)),
    max_size=30,
)


def _points(pairs: object) -> set[int]:
    return {x for lo, hi in pairs for x in range(lo, hi)}  # type: ignore[attr-defined]


@settings(max_examples=400, deadline=None)
@given(ops, st.integers(-3, 30), st.integers(-3, 30))
def test_interval_union_matches_sets(
    script: list[tuple[str, int, int]], qlo: int, qhi: int
) -> None:
    u, model = IntervalUnion(), set()
    for op, lo, hi in script:
        if op == "add":
            u.add(lo, hi)
            model |= set(range(lo, hi))
        else:
            u.remove(lo, hi)
            model -= set(range(lo, hi))
    pairs = list(u)
    assert _points(pairs) == model
    # normal form: sorted, non-empty, disjoint and non-adjacent
    assert all(lo < hi for lo, hi in pairs)
    assert all(pairs[i][1] < pairs[i + 1][0] for i in range(len(pairs) - 1))
    q = set(range(qlo, qhi))
    assert u.intersects(qlo, qhi) == bool(q & model)
    assert u.covers(qlo, qhi) == (q <= model)
    assert _points(u.gaps(qlo, qhi)) == q - model
    assert _points(u.pieces(qlo, qhi)) == q & model
    for got in (u.gaps(qlo, qhi), u.pieces(qlo, qhi)):
        assert all(got[i][1] < got[i + 1][0] for i in range(len(got) - 1))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 12), st.integers(-3, 12)), max_size=25),
       st.integers(-3, 14), st.integers(-3, 14))
def test_staircase_answers_the_seeds_raw_test(
    pairs: list[tuple[int, int]], t: int, f: int
) -> None:
    s = Staircase()
    for i, (lo, hi) in enumerate(pairs):
        s.add(lo, hi, i)
    want = any(hi > f and lo < t for lo, hi in pairs)
    w = s.max_hi_below(t)
    assert (w is not None and w[1] > f) == want
    if w is not None:
        assert (w[0], w[1]) == pairs[w[2]]  # type: ignore[index]  # the witness is recorded


def test_staircase_keeps_empty_and_reversed_pairs_raw() -> None:
    # the seed refuses on an empty truncation [5, 5) when 5 > t - F and 5 < t
    s = Staircase()
    s.add(5, 5)
    assert s.max_hi_below(6) == (5, 5, None)
    led = Ledger(2)
    led.append(10)
    led.truncate(5, 5)
    d = led.decide(summary_input=(0, 10), summary_covers=(0, 6), tail_start=6, profile="seed")
    assert d.failed == ("truncation_clear",)
    assert led.decide(summary_input=(0, 10), summary_covers=(0, 6), tail_start=6).allowed


# -- ledger against the checker on random sessions --------------------------------------

def _random_session(rnd: random.Random) -> None:
    F = rnd.choice([0, 1, 3, 5, 12, -1])
    fu = rnd.choice(["turns"] * 6 + ["tokens", "pages"])
    led = Ledger(F, floor_unit=fu, keep_history=True, log=io.StringIO())
    for _ in range(rnd.randint(1, 30)):
        n = max(led.history_end, 0)

        def off(n: int = n) -> int:
            return rnd.randint(-1, n + 2) if rnd.random() < 0.05 else rnd.randint(0, n)

        def rng() -> tuple[int, int]:
            lo, hi = off(), off()
            return (lo, hi) if rnd.random() < 0.05 else (min(lo, hi), max(lo, hi))

        def consistent(lo: int, hi: int) -> bool:
            return 0 <= lo <= hi <= led.history_end

        r = rnd.random()
        probe = {"summary_input": (0, 0), "summary_covers": (0, 0), "tail_start": 0}
        before = led.equivalent_case(**probe)  # type: ignore[arg-type]
        if r < 0.3:
            count = rnd.randint(1, 4) if rnd.random() < 0.97 else -1
            if count >= 0:
                led.append(count)
                continue
            with pytest.raises(ValueError, match="count"):  # a call error: nothing recorded
                led.append(count)
        elif r < 0.6:
            op = led.truncate if r < 0.5 else led.spill
            lo, hi = rng()
            if consistent(lo, hi):
                op(lo, hi)
                continue
            with pytest.raises(ValueError, match="range"):
                op(lo, hi)
        else:
            kw = {"summary_input": rng(), "summary_covers": rng(), "tail_start": off()}
            for profile in ("strict", "partitioned", "seed"):
                got = led.decide(profile=profile, **kw)  # type: ignore[arg-type]
                assert got == check_case(led.equivalent_case(**kw), profile), (profile, kw)  # type: ignore[arg-type]
            led.commit(override="test", **kw)  # type: ignore[arg-type]
            continue
        assert led.equivalent_case(**probe) == before  # type: ignore[arg-type]


def test_ledger_equals_checker_on_random_sessions() -> None:
    rnd = random.Random(20261107)
    for _ in range(1500):
        _random_session(rnd)


# -- the ledger API ------------------------------------------------------------------------

def _incident(**kw: object) -> Ledger:
    led = Ledger(12, unit="turns", **kw)  # type: ignore[arg-type]
    led.append(40)
    led.truncate(0, 8)
    led.append(8)
    return led


def test_the_seeds_incident_is_refused_and_names_the_hole() -> None:
    led = _incident()
    with pytest.raises(UnrecoverableCompactionError) as info:
        led.commit(**INCIDENT)  # type: ignore[arg-type]
    err = info.value
    assert err.failed == ("no_hole",)
    assert err.holes == ((0, 8),)
    assert "no_hole" in str(err) and "[0, 8)" in str(err)
    assert isinstance(err, RuntimeError)
    # nothing was recorded: a later legitimate compaction sees no prior coverage from it
    led.spill(0, 8)
    assert led.commit(**INCIDENT).allowed  # type: ignore[arg-type]


def test_refused_commit_is_not_logged_and_override_is() -> None:
    log = io.StringIO()
    led = _incident(log=log)
    with pytest.raises(UnrecoverableCompactionError):
        led.commit(**INCIDENT)  # type: ignore[arg-type]
    assert '"compact"' not in log.getvalue()
    for bad in ("", "   "):
        with pytest.raises(ValueError, match="override"):
            led.commit(override=bad, **INCIDENT)  # type: ignore[arg-type]
    d = led.commit(override="operator approved: ticket 7", **INCIDENT)  # type: ignore[arg-type]
    assert d.failed == ("no_hole",)
    last = json.loads(log.getvalue().splitlines()[-1])
    assert last == {"event": "compact", "summary_input": [8, 48], "summary_covers": [8, 36],
                    "tail_start": 36, "override": "operator approved: ticket 7"}


def test_allowed_commit_logs_no_override() -> None:
    log = io.StringIO()
    led = _incident(log=log)
    led.spill(0, 8, handle="h")
    led.commit(override="not needed", **INCIDENT)  # type: ignore[arg-type]
    assert "override" not in log.getvalue().splitlines()[-1]


def test_log_header_and_events() -> None:
    log = io.StringIO()
    led = Ledger(3, unit="tokens", floor_unit="tokens", truncator_unit="tokens", log=log)
    led.append()
    led.append(4)
    led.spill(0, 2, handle="sha256:ab")
    led.truncate(0, 2)
    lines = [json.loads(x) for x in log.getvalue().splitlines()]
    assert lines == [
        {"event": "session", "unit": "tokens", "recovery_floor_span": 3,
         "floor_unit": "tokens", "truncator_unit": "tokens"},
        {"event": "append", "count": 1},
        {"event": "append", "count": 4},
        {"event": "spill", "range": [0, 2], "handle": "sha256:ab"},
        {"event": "truncate", "range": [0, 2]},
    ]


def test_inconsistent_ranges_raise_at_the_call_site() -> None:
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(10)
    for lo, hi, why in ((7, 3, r"\[7, 3\) is not an interval"), (-1, 3, "inside the history"),
                        (0, 11, r"inside the history \[0, 10\)")):
        for op in (led.truncate, led.spill):
            with pytest.raises(ValueError, match=why):
                op(lo, hi)
    with pytest.raises(ValueError, match="count"):
        led.append(-8)
    assert len(log.getvalue().splitlines()) == 2  # nothing logged, nothing recorded
    assert led.history_end == 10
    # an inconsistent compaction is not a call error: it is refused, fail-closed
    kw = {"summary_input": (0, 10), "summary_covers": (0, 8), "tail_start": 11}
    d = led.decide(**kw)  # type: ignore[arg-type]
    assert d.failed == ("well_formed",)
    assert "tail start 11 is outside [0, 10]" in led.explain(d, **kw)[0]  # type: ignore[arg-type]
    with pytest.raises(UnrecoverableCompactionError, match="well_formed"):
        led.commit(**kw)  # type: ignore[arg-type]


def test_type_errors_at_record_time() -> None:
    led = Ledger(2)
    with pytest.raises(TypeError, match="count"):
        led.append(1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"range\[0\]"):
        led.truncate(True, 3)
    led.append(1)
    with pytest.raises(TypeError, match="handle"):
        led.spill(0, 1, handle=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="summary_input"):
        led.decide(summary_input=(0,), summary_covers=(0, 0), tail_start=0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="recovery_floor_span"):
        Ledger("12")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="profile"):
        Ledger(2, profile="lenient")


def test_equivalent_case_needs_history() -> None:
    with pytest.raises(RuntimeError, match="keep_history"):
        _incident().equivalent_case(**INCIDENT)  # type: ignore[arg-type]
    case = _incident(keep_history=True).equivalent_case(**INCIDENT)  # type: ignore[arg-type]
    assert case["prior_truncations"] == [[0, 8]] and case["history_end"] == 48
    assert check_case(case).holes == ((0, 8),)


def test_prior_coverage_is_the_honest_part_at_the_time() -> None:
    led = Ledger(2, keep_history=True)
    led.append(20)
    led.truncate(4, 6)
    # claims [0, 12) but saw only [2, 12), and [4, 6) was truncated before it
    led.commit(summary_input=(2, 20), summary_covers=(0, 12), tail_start=12, override="x")
    led.truncate(8, 10)  # a later truncation does not shrink what the summary holds
    case = led.equivalent_case(summary_input=(12, 20), summary_covers=(12, 18), tail_start=18)
    assert case["prior_coverage"] == [[2, 4], [6, 12]]


# -- seed API --------------------------------------------------------------------------------

def test_seed_api_allows_the_incident_like_the_seed() -> None:
    assert assert_compaction_safe(8, 36, 12, [(0, 8)], "turns", "turns") is None


@pytest.mark.parametrize(
    ("args", "clause"),
    [
        ((8, 36, 12, [], "turns", "tokens"), "units_agree"),
        ((30, 36, 12, [], "turns", "turns"), "floor_reach"),
        ((8, 36, 12, [(0, 8), (20, 30)], "turns", "turns"), "truncation_clear"),
        ((8, 36, 12, [(25, 25)], "turns", "turns"), "truncation_clear"),  # empty range
    ],
)
def test_seed_api_refuses_like_the_seed(args: tuple[object, ...], clause: str) -> None:
    with pytest.raises(UnrecoverableCompactionError) as info:
        assert_compaction_safe(*args)  # type: ignore[arg-type]
    assert info.value.failed == (clause,) and info.value.holes == ()
    assert clause in str(info.value)


def test_seed_api_keyword_call_and_seed_style_exception() -> None:
    assert_compaction_safe(
        summary_input_start=0, tail_start=20, recovery_floor_span=5,
        prior_truncations=[], floor_unit="turns", truncator_unit="turns",
    )
    err = UnrecoverableCompactionError("seed message")
    assert str(err) == "seed message" and err.failed == () and err.holes == ()


def test_strict_api_returns_the_decision_or_raises() -> None:
    kw = {"history_end": 48, "tail_start": 36, "summary_input": (8, 48),
          "summary_covers": (8, 36), "recovery_floor_span": 12, "floor_unit": "turns",
          "truncator_unit": "turns"}
    with pytest.raises(UnrecoverableCompactionError) as info:
        assert_recoverable(prior_truncations=[(0, 8)], **kw)  # type: ignore[arg-type]
    assert info.value.holes == ((0, 8),)
    d = assert_recoverable(prior_truncations=[(0, 8)], spills=[(0, 8)], **kw)  # type: ignore[arg-type]
    assert d.allowed


def test_runtime_modules_import_no_solver() -> None:
    import subprocess
    import sys

    code = (
        "import sys, tailguard.runtime.ledger, tailguard.runtime.seed_api, tailguard.runtime.eventlog, "
        "tailguard.runtime.interval_index, tailguard.cli.audit; "
        "bad = [m for m in ('z3', 'crosshair', 'hypothesis') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
