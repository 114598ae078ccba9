"""Summary lineage (spec 1.1, brief section 4c): targeted cases, in offsets.

The LangChain run from the issue: a first compaction summarizes [0, 8) and keeps [8, 12)
verbatim; later a second compaction summarizes [8, 16), and its summarizer did not see the
first summary (LangChain trims the oldest message, the summary, first). The first summary's
coverage is gone and no truncation was logged: [0, 8) is a hole. Every decision here is
also checked against the naive oracle (:mod:`tests.lineage_oracle`) and, through the log,
against ``tailguard audit``.

Also: 1.0 logs (no lineage fields) audit exactly as 1.0 did, bad calls raise ValueError,
inconsistent compactions are refused with ``well_formed``.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from tailguard._generated.checker import check_case
from tailguard.audit.replay import replay
from tailguard.cli.main import main
from tailguard.runtime.eventlog import iter_events
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tests.lineage_oracle import (
    PROFILES,
    LineageOracle,
    decide_case,
    jsonable,
    needs_lineage,
    runs,
)

HEADER = {"event": "session", "unit": "turns", "recovery_floor_span": 4,
          "floor_unit": "turns", "truncator_unit": "turns"}
FIRST = {"summary_input": (0, 8), "summary_covers": (0, 8), "tail_start": 8}
SECOND = {"summary_input": (8, 16), "summary_covers": (8, 16), "tail_start": 16}
HOLE = ((0, 8),)


def _pair(ledger: Ledger, oracle: LineageOracle, **kw: Any) -> dict[str, Any]:
    """Ledger and oracle decide ``kw`` in every profile, and build the same case."""
    out = {}
    for p in PROFILES:
        got = ledger.decide(profile=p, **kw)
        want = oracle.decide(p, **kw)
        assert tuple(got) == tuple(want), (p, kw, got, want)
        out[p] = got
    assert jsonable(ledger.equivalent_case(**kw)) == jsonable(oracle.case(**kw))
    return out


def langchain(log: io.StringIO | None = None) -> tuple[Ledger, LineageOracle]:
    """n = 12: compaction 0 summarizes [0, 8), tail [8, 12) (F = 4); then n = 20."""
    led = Ledger(4, unit="turns", profile="partitioned", log=log, keep_history=True)
    o = LineageOracle(4, profile="partitioned")
    for x in (led, o):
        x.append(12)
    _pair(led, o, **FIRST)
    assert led.commit(**FIRST).allowed
    o.commit(**FIRST)
    assert led.summaries == ("0",) and led.next_summary_id == "1"
    for x in (led, o):
        x.append(8)
    return led, o


def audit(text: str, tmp_path: Path, profile: str = "partitioned") -> tuple[int, Any, str]:
    path = tmp_path / "trace.jsonl"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    code = main(["audit", "--format", "json", "--profile", profile, str(path)],
                stdout=out, stderr=err)
    return code, json.loads(out.getvalue()) if out.getvalue() else None, err.getvalue()


def log_text(*events: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in (HEADER, *events))


# -- the LangChain run ------------------------------------------------------------------------

@needs_lineage
def test_unseen_summary_is_a_hole() -> None:
    led, o = langchain()
    d = _pair(led, o, **SECOND, saw=[])
    assert tuple(d["partitioned"]) == ("refuse", ("no_hole",), HOLE)
    assert tuple(d["strict"]) == ("refuse", ("floor_in_input", "no_hole"), HOLE)
    assert d["seed"].allowed  # the seed reads no coverage at all
    with pytest.raises(UnrecoverableCompactionError) as info:
        led.commit(**SECOND, saw=[])
    assert (info.value.failed, info.value.holes) == (("no_hole",), HOLE)
    assert led.summaries == ("0",) and led.next_summary_id == "1"  # nothing recorded


@needs_lineage
@pytest.mark.parametrize("lineage", [{}, {"saw": None}, {"saw": ["0"]}, {"saw": [], "keeps": ["0"]},
                                     {"saw": ["0"], "keeps": ["0"]}])
def test_seen_or_kept_summary_covers_it(lineage: dict[str, Any]) -> None:
    led, o = langchain()
    d = _pair(led, o, **SECOND, **lineage)
    assert d["partitioned"].allowed
    assert tuple(d["strict"]) == ("refuse", ("floor_in_input",), ())
    assert led.commit(**SECOND, **lineage).allowed
    o.commit(**SECOND, **lineage)
    kept = "0" in lineage.get("keeps", ())
    assert led.summaries == (("0", "1") if kept else ("1",)) == o.summaries
    # a third compaction that sees nothing: [0, 16) is a hole, or [8, 16) if "0" was kept
    for x in (led, o):
        x.append(8)
    third = {"summary_input": (16, 24), "summary_covers": (16, 24), "tail_start": 24}
    d = _pair(led, o, **third, saw=[], keeps=["0"] if kept else [])
    assert d["partitioned"].holes == (((8, 16),) if kept else ((0, 16),))
    _pair(led, o, **third)  # saw everything: allowed
    assert led.decide(**third).allowed


@needs_lineage
def test_evicted_summary_is_a_hole() -> None:
    led, o = langchain()
    led.evict_summary("0")
    o.evict_summary("0")
    assert led.summaries == ()
    for lineage in ({}, {"saw": None}, {"saw": []}):
        d = _pair(led, o, **SECOND, **lineage)
        assert tuple(d["partitioned"]) == ("refuse", ("no_hole",), HOLE)
    with pytest.raises(ValueError):
        led.decide(**SECOND, saw=["0"])
    with pytest.raises(ValueError):
        led.evict_summary("0")


@needs_lineage
def test_ledger_log_audits_like_the_ledger(tmp_path: Path) -> None:
    log = io.StringIO()
    led, _ = langchain(log)
    d = led.commit(**SECOND, saw=[], override="the summarizer was trimmed; ticket 9")
    assert (d.failed, d.holes) == (("no_hole",), HOLE)
    lines = log.getvalue().splitlines()
    verdicts = [v for v in replay(iter_events(lines), profile="partitioned")
                if hasattr(v, "decision")]
    assert [tuple(v.decision) for v in verdicts] == [("allow", (), ()), ("refuse", ("no_hole",), HOLE)]
    code, report, err = audit(log.getvalue(), tmp_path)
    assert (code, err) == (1, "")
    assert [c["holes"] for c in report["compactions"]] == [[], [[0, 8]]]


# -- hand-written logs (what a framework adapter writes) --------------------------------------

A12 = {"event": "append", "count": 12}
A8 = {"event": "append", "count": 8}
C1 = {"event": "compact", "summary_input": [0, 8], "summary_covers": [0, 8], "tail_start": 8}
C2 = {"event": "compact", "summary_input": [8, 16], "summary_covers": [8, 16], "tail_start": 16}


@needs_lineage
@pytest.mark.parametrize(
    ("second", "between", "holes"),
    [
        ({}, [], []),  # 1.0: saw everything
        ({"saw": ["0"]}, [], []),
        ({"saw": []}, [], [[0, 8]]),
        ({"saw": [], "keeps": ["0"]}, [], []),
        ({}, [{"event": "evict_summary", "summary": "0"}], [[0, 8]]),
    ],
)
def test_audit_of_lineage_fields(
    tmp_path: Path, second: dict[str, Any], between: list[dict[str, Any]], holes: list[list[int]]
) -> None:
    text = log_text(A12, C1, A8, *between, {**C2, **second})
    code, report, err = audit(text, tmp_path)
    assert err == ""
    assert report["compactions"][1]["holes"] == holes
    assert code == (1 if holes else 0)


@needs_lineage
def test_audit_of_explicit_ids(tmp_path: Path) -> None:
    text = log_text(A12, {**C1, "summary": "s-a"}, A8, {**C2, "saw": ["s-a"], "summary": "s-b"},
                    A8, {"event": "compact", "summary_input": [16, 24], "summary_covers": [16, 24],
                         "tail_start": 24, "saw": ["s-b"]})
    code, report, err = audit(text, tmp_path)
    assert (code, err) == (0, ""), report


@needs_lineage
@pytest.mark.parametrize(
    ("events", "line", "field"),
    [
        ([A12, C1, A8, {**C2, "saw": ["1"]}], 5, "saw"),  # no summary "1" yet
        ([A12, C1, A8, {**C2, "keeps": ["nope"]}], 5, "keeps"),
        ([A12, C1, {"event": "evict_summary", "summary": "0"}, A8, {**C2, "saw": ["0"]}], 6, "saw"),
        ([A12, {"event": "evict_summary", "summary": "0"}], 3, "summary"),
        ([A12, {**C1, "summary": "x"}, A8, {**C2, "summary": "x"}], 5, "summary"),  # repeated
        ([A12, C1, A8, {**C2, "saw": "0"}], 5, "saw"),  # not a list
    ],
)
def test_audit_input_errors_name_line_and_field(
    tmp_path: Path, events: list[dict[str, Any]], line: int, field: str
) -> None:
    code, report, err = audit(log_text(*events), tmp_path)
    assert (code, report) == (2, None)
    assert re.search(rf":{line}: {field}(\[\d+\])?: ", err), err


@needs_lineage
def test_refusal_line_is_never_coverage(tmp_path: Path) -> None:
    log = io.StringIO()
    led = Ledger(4, profile="partitioned", log=log)
    led.append(12)
    led.truncate(0, 2)
    with pytest.raises(UnrecoverableCompactionError):
        led.commit(**FIRST)  # [0, 2) truncated before the summarizer saw it: refused
    assert json.loads(log.getvalue().splitlines()[-1])["event"] == "refusal"
    assert led.summaries == () and led.next_summary_id == "0"
    led.append(8)
    # had the refused compaction been recorded, only [0, 2) would be a hole
    d = led.commit(**SECOND, override="x")
    assert (d.failed, d.holes) == (("no_hole",), HOLE)
    lines = log.getvalue().splitlines()
    compacts = [i for i, x in enumerate(lines, 1) if json.loads(x)["event"] == "compact"]
    for p in ("strict", "partitioned"):
        verdicts = [v for v in replay(iter_events(lines), profile=p) if hasattr(v, "decision")]
        assert [v.decision.holes for v in verdicts if v.line in compacts] == [HOLE]
    code, report, err = audit(log.getvalue(), tmp_path)
    assert (code, err) == (1, "")
    assert [c["holes"] for c in report["compactions"] if c["line"] in compacts] == [[[0, 8]]]


# -- ids ------------------------------------------------------------------------------------------

@needs_lineage
def test_ids_are_ordinals_or_given() -> None:
    led = Ledger(0, profile="partitioned", log=io.StringIO())
    led.append(4)
    assert led.next_summary_id == "0"
    led.commit(summary_input=(0, 2), summary_covers=(0, 2), tail_start=2, summary="first")
    assert led.summaries == ("first",) and led.next_summary_id == "1"
    led.append(2)
    with pytest.raises(UnrecoverableCompactionError):  # a refused commit is no compaction
        led.commit(summary_input=(4, 6), summary_covers=(4, 6), tail_start=6, saw=[])
    assert led.next_summary_id == "1"
    led.commit(summary_input=(4, 6), summary_covers=(4, 6), tail_start=6, saw=[],
               override="an overridden compaction still creates its summary")
    assert led.summaries == ("1",) and led.next_summary_id == "2"
    led.commit(summary_input=(6, 6), summary_covers=(6, 6), tail_start=6, keeps=["1"],
               override="x")
    assert led.summaries == ("1", "2")
    for sid in ("first", "1", "2"):  # ids are unique within the session, gone or not
        with pytest.raises(ValueError):
            led.commit(summary_input=(6, 6), summary_covers=(6, 6), tail_start=6, summary=sid,
                       override="x")


@needs_lineage
def test_default_id_colliding_with_an_explicit_one_is_a_repeated_id() -> None:
    """Brief 4c: the default id is the ordinal, ids are unique, a repeated id is an input
    error. So an explicit "1" at ordinal 0 makes the next default-id compaction an error.
    (An interpretation: a ledger could instead refuse explicit ids that look like ordinals.)"""
    led = Ledger(0, profile="partitioned")
    led.append(4)
    try:
        led.commit(summary_input=(0, 2), summary_covers=(0, 2), tail_start=2, summary="1")
    except ValueError:
        return  # refusing ordinal-looking explicit ids up front is the other consistent answer
    assert led.next_summary_id == "1"
    with pytest.raises(ValueError):
        led.commit(summary_input=(2, 4), summary_covers=(2, 4), tail_start=4)
    assert led.summaries == ("1",)


# -- bad calls raise ValueError and record nothing -----------------------------------------------

def _two_summaries() -> tuple[Ledger, io.StringIO]:
    """n = 12; summaries "0" (left the context), "a" and "2" in it."""
    log = io.StringIO()
    led = Ledger(2, profile="partitioned", log=log, keep_history=True)
    led.append(4)
    led.commit(summary_input=(0, 2), summary_covers=(0, 2), tail_start=2)
    led.append(4)
    led.commit(summary_input=(2, 6), summary_covers=(2, 6), tail_start=6, summary="a")
    led.append(4)
    led.commit(summary_input=(6, 10), summary_covers=(6, 10), tail_start=10, keeps=["a"])
    assert led.summaries == ("a", "2")
    return led, log


K = {"summary_input": (10, 10), "summary_covers": (10, 10), "tail_start": 10}  # allowed


@needs_lineage
@pytest.mark.parametrize(
    ("name", "call"),
    [
        ("negative count", lambda led: led.append(-1)),
        ("truncate lo > hi", lambda led: led.truncate(5, 4)),
        ("truncate negative", lambda led: led.truncate(-1, 4)),
        ("truncate past the end", lambda led: led.truncate(10, 13)),
        ("spill lo > hi", lambda led: led.spill(5, 4)),
        ("spill negative", lambda led: led.spill(-2, -1)),
        ("spill past the end", lambda led: led.spill(13, 13)),
        ("decide saw unknown", lambda led: led.decide(**K, saw=["zz"])),
        ("decide saw gone", lambda led: led.decide(**K, saw=["a", "0"])),
        ("decide keeps unknown", lambda led: led.decide(**K, keeps=["zz"])),
        ("case keeps gone", lambda led: led.equivalent_case(**K, keeps=["0"])),
        ("case saw unknown", lambda led: led.equivalent_case(**K, saw=["3"])),
        ("commit saw unknown", lambda led: led.commit(**K, saw=["zz"], override="x")),
        ("commit keeps gone", lambda led: led.commit(**K, keeps=["0"], override="x")),
        ("commit keeps own id", lambda led: led.commit(**K, summary="new", keeps=["new"],
                                                       override="x")),
        ("commit repeated id in context", lambda led: led.commit(**K, summary="a", override="x")),
        ("commit repeated id gone", lambda led: led.commit(**K, summary="0", override="x")),
        ("commit repeated default id", lambda led: led.commit(**K, summary="2", override="x")),
        ("evict unknown", lambda led: led.evict_summary("zz")),
        ("evict gone", lambda led: led.evict_summary("0")),
        # an input error wins over a refusal: the refused compaction names a missing summary
        ("refused and saw unknown", lambda led: led.commit(
            summary_input=(11, 12), summary_covers=(11, 12), tail_start=12, saw=["zz"])),
    ],
)
def test_bad_calls_raise_value_error_and_record_nothing(name: str, call: Any) -> None:
    led, log = _two_summaries()
    assert led.decide(**K).allowed
    assert not led.decide(summary_input=(11, 12), summary_covers=(11, 12), tail_start=12).allowed
    before = (led.history_end, led.summaries, led.next_summary_id, log.getvalue(),
              led.equivalent_case(**K), led.decide(**K))
    with pytest.raises(ValueError):
        call(led)
    after = (led.history_end, led.summaries, led.next_summary_id, log.getvalue(),
             led.equivalent_case(**K), led.decide(**K))
    assert after == before, name


@needs_lineage
@pytest.mark.parametrize(
    "kw",
    [
        {"summary_input": (10, 12), "summary_covers": (10, 12), "tail_start": 13},  # t > n
        {"summary_input": (10, 12), "summary_covers": (10, 12), "tail_start": -1},
        {"summary_input": (12, 10), "summary_covers": (10, 12), "tail_start": 12},  # reversed
        {"summary_input": (10, 14), "summary_covers": (10, 12), "tail_start": 12},  # past n
        {"summary_input": (10, 12), "summary_covers": (-1, 12), "tail_start": 12},
    ],
)
def test_inconsistent_compaction_is_refused_well_formed(kw: dict[str, Any]) -> None:
    led, _ = _two_summaries()
    for p in ("strict", "partitioned"):
        assert tuple(led.decide(profile=p, **kw)) == ("refuse", ("well_formed",), ())
        assert tuple(led.decide(profile=p, saw=[], keeps=["a"], **kw)) == (
            "refuse", ("well_formed",), ())
    case = led.equivalent_case(**kw)
    assert tuple(led.decide(profile="seed", **kw)) == tuple(decide_case(case, "seed"))
    with pytest.raises(UnrecoverableCompactionError) as info:
        led.commit(**kw)
    assert info.value.failed == ("well_formed",)
    assert led.summaries == ("a", "2")
    d = led.commit(**kw, override="recorded as it happened")
    assert d.failed == ("well_formed",) and led.summaries == ("3",)


# -- 1.0 logs audit exactly as before ---------------------------------------------------------------

def _replay_1_0(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SPEC 9.3 of spec 1.0, transcribed: each compact line's case, from the lines before it.

    prior_coverage: every earlier compact line's honest part (C ∩ I) \\ TRU at that time, as
    maximal ranges, concatenated; nothing clipped (a negative count, reversed ranges)."""
    n, tr, sp, pc = 0, [], [], []
    cases = []
    head = events[0]
    for ev in events[1:]:
        kind = ev["event"]
        if kind == "append":
            n += ev.get("count", 1)
        elif kind == "truncate":
            tr.append(ev["range"])
        elif kind == "spill":
            sp.append(ev["range"])
        elif kind == "compact":
            (a, b), (c, d) = ev["summary_input"], ev["summary_covers"]
            cases.append({"history_end": n, "tail_start": ev["tail_start"],
                          "summary_input": [a, b], "summary_covers": [c, d],
                          "recovery_floor_span": head["recovery_floor_span"],
                          "floor_unit": head["floor_unit"], "truncator_unit": head["truncator_unit"],
                          "prior_truncations": list(tr), "prior_coverage": list(pc),
                          "spills": list(sp)})
            gone = {x for lo, hi in tr for x in range(lo, hi)}
            pc.extend(runs(set(range(a, b)) & set(range(c, d)) - gone))
    return cases


@st.composite
def logs_1_0(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A 1.0 log: no lineage field, any integers (1 in 10 of them out of line)."""
    F = draw(st.integers(-1, 5))
    fu = draw(st.sampled_from(["turns", "turns", "turns", "tokens", "pages"]))
    events: list[dict[str, Any]] = [{"event": "session", "unit": "turns", "recovery_floor_span": F,
                                     "floor_unit": fu, "truncator_unit": "turns"}]
    n = 0
    ends = [0]
    for _ in range(draw(st.integers(0, 14))):
        off = st.one_of(st.sampled_from(ends), st.integers(0, max(n, 0)),
                        st.integers(-1, max(n, 0) + 2) if draw(st.integers(0, 9)) == 0
                        else st.integers(0, max(n, 0)))
        ordered = st.tuples(off, off).map(sorted)
        pair = ordered if draw(st.integers(0, 9)) else st.tuples(off, off)
        kind = draw(st.sampled_from(["append", "append", "truncate", "spill", "compact", "compact"]))
        if kind == "append":
            k = draw(st.integers(0, 6))  # a negative count is an input error (SPEC 9.4, issue 17)
            events.append({"event": "append", "count": k})
            n += k
        elif kind in ("truncate", "spill"):
            r = list(draw(pair))
            events.append({"event": kind, "range": r})
            ends.extend(r)
        else:
            a, t = sorted(draw(st.tuples(off, off)))
            if draw(st.booleans()):
                inp, cov = [a, n], [a, t]
            else:
                inp, cov = list(draw(pair)), list(draw(pair))
            ev = {"event": "compact", "summary_input": inp, "summary_covers": cov, "tail_start": t}
            if draw(st.booleans()):
                ev["override"] = "x"
            events.append(ev)
            ends.extend([a, t])
    return events


@needs_lineage
@settings(max_examples=150, deadline=None)
@given(logs_1_0())
def test_1_0_logs_audit_as_before(events: list[dict[str, Any]]) -> None:
    lines = [json.dumps(e) for e in events]
    cases = _replay_1_0(events)
    for p in PROFILES:
        verdicts = [v for v in replay(iter_events(lines), profile=p) if hasattr(v, "decision")]
        assert [tuple(v.decision) for v in verdicts] == [tuple(check_case(c, p)) for c in cases], p


@needs_lineage
@settings(max_examples=100, deadline=None)
@given(logs_1_0())
def test_1_0_calls_decide_as_before(events: list[dict[str, Any]]) -> None:
    """The same sessions through the Ledger with 1.0's calls (no saw, keeps or summary
    arguments): each decision is the checker's on the 1.0 case (theorem 14), and the
    oracle's. Sessions with inconsistent records are left out (the Ledger rejects them)."""
    head = events[0]
    led = Ledger(head["recovery_floor_span"], floor_unit=head["floor_unit"],
                 truncator_unit="turns", keep_history=True)
    o = LineageOracle(head["recovery_floor_span"], head["floor_unit"], "turns")
    cases = iter(_replay_1_0(events))
    for ev in events[1:]:
        kind = ev["event"]
        try:
            if kind == "append":
                o.append(ev["count"])
            elif kind in ("truncate", "spill"):
                getattr(o, kind)(*ev["range"])
        except ValueError:
            return  # an inconsistent record: not a Ledger session
        if kind == "append":
            led.append(ev["count"])
        elif kind in ("truncate", "spill"):
            getattr(led, kind)(*ev["range"])
        elif kind == "compact":
            kw = {"summary_input": tuple(ev["summary_input"]),
                  "summary_covers": tuple(ev["summary_covers"]), "tail_start": ev["tail_start"]}
            case = next(cases)
            for p in PROFILES:
                want = check_case(case, p)
                assert tuple(led.decide(profile=p, **kw)) == tuple(want)
                assert tuple(o.decide(p, **kw)) == tuple(want)
            led.commit(**kw, override="x")
            o.commit(**kw, override="x")
