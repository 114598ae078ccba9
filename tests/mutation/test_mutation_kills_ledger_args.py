"""Tests written to kill surviving mutants of ``tailguard.runtime.ledger`` (tools/mutation.sh --subset
tests/mutation/ledger.toml): every argument error of ``Ledger`` names its argument and says why;
the hot path of ``decide`` lets through only what the slow path would; the lineage a caller
gives reaches the decision, the refusal's sentences and the log; a spill takes a log line."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest

from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError

SHAPE: dict[str, Any] = {"summary_input": (6, 10), "summary_covers": (6, 8), "tail_start": 8}


def _lines(log: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in log.getvalue().splitlines()]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"unit": 3}, "unit: expected a unit name (string), got 3"),
    ({"floor_unit": b"turns"}, "floor_unit: expected a unit name (string), got b'turns'"),
    ({"truncator_unit": None, "unit": 1}, "unit: expected a unit name (string), got 1"),
    ({"truncator_unit": ["turns"]}, "truncator_unit: expected a unit name (string), got ['turns']"),
])
def test_a_unit_that_is_not_a_string_is_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError) as info:
        Ledger(2, **kwargs)
    assert str(info.value) == message


def test_an_unknown_profile_lists_the_known_ones() -> None:
    with pytest.raises(ValueError) as info:
        Ledger(2, profile="lenient")
    assert str(info.value) == "profile: unknown profile 'lenient'; known: seed, strict, partitioned"


def test_an_empty_append_is_recorded_and_a_negative_one_refused() -> None:
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(0)
    assert led.history_end == 0 and _lines(log)[-1] == {"event": "append", "count": 0}
    with pytest.raises(ValueError, match=re.escape("count: expected a count >= 0, got -1")):
        led.append(-1)


def test_a_spill_takes_a_log_line_so_later_lines_are_named_right() -> None:
    """The ledger numbers its lines as the log does: after a spill (line 3) a truncation is line 4."""
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(10)
    led.spill(0, 2)
    led.truncate(2, 4)
    with pytest.raises(UnrecoverableCompactionError) as info:
        led.commit(**SHAPE)
    assert _lines(log)[3] == {"event": "truncate", "range": [2, 4]}
    assert "truncated at line 4 " in str(info.value), str(info.value)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("summary_input", (0.5, 10), "summary_input[0]: expected an integer, got float 0.5"),
    ("summary_input", (6, 10.0), "summary_input[1]: expected an integer, got float 10.0"),
    ("summary_input", (0, 6, 10), "summary_input: expected a pair (lo, hi), got (0, 6, 10)"),
    ("summary_input", None, "summary_input: expected a pair (lo, hi), got None"),
    ("summary_covers", (6.0, 8), "summary_covers[0]: expected an integer, got float 6.0"),
    ("summary_covers", (6, True), "summary_covers[1]: expected an integer, got bool True"),
    ("summary_covers", "68", "summary_covers: expected a pair (lo, hi), got '68'"),
    ("tail_start", 8.0, "tail_start: expected an integer, got float 8.0"),
])
@pytest.mark.parametrize("call", ["decide", "commit"])
def test_a_bad_compaction_argument_is_named(call: str, field: str, value: object, message: str) -> None:
    led = Ledger(2)
    led.append(10)
    with pytest.raises(TypeError) as info:
        getattr(led, call)(**{**SHAPE, field: value})
    assert str(info.value) == message


def test_pairs_given_as_lists_decide_as_tuples_do() -> None:
    """The slow path of the argument check (a list, not a tuple) reads the same values."""
    led = Ledger(2)
    led.append(10)
    led.truncate(0, 2)
    as_tuples = led.decide(**SHAPE)
    as_lists = led.decide(summary_input=[6, 10], summary_covers=[6, 8], tail_start=8)  # type: ignore[arg-type]
    assert as_lists == as_tuples and as_tuples.failed == ("no_hole",)


def test_an_override_needs_a_reason() -> None:
    led = Ledger(2)
    led.append(10)
    with pytest.raises(ValueError) as info:
        led.commit(**SHAPE, override="  ")
    assert str(info.value) == "override: give a non-empty reason to commit a refused compaction"


@pytest.mark.parametrize(("kwargs", "exc", "message"), [
    ({"summary": 7}, TypeError, "summary: expected a summary id (string) or None, got 7"),
    ({"saw": "0"}, TypeError, "saw: expected a list of summary ids (strings), got '0'"),
    ({"keeps": ["0", 1]}, TypeError, "keeps[1]: expected a summary id (string), got 1"),
])
def test_a_bad_lineage_argument_is_named(kwargs: dict[str, Any], exc: type[Exception], message: str) -> None:
    led = _one_summary()
    with pytest.raises(exc) as info:
        led.commit(**_NEXT, **kwargs)
    assert str(info.value) == message


def _one_summary(log: io.StringIO | None = None) -> Ledger:
    """Summary '0' covers [0, 6) (line 3); then 10 more turns: n = 20."""
    led = Ledger(2, log=log)
    led.append(10)
    led.commit(summary_input=(0, 10), summary_covers=(0, 6), tail_start=6)
    led.append(10)
    return led


_NEXT: dict[str, Any] = {"summary_input": (6, 20), "summary_covers": (6, 14), "tail_start": 14}


def test_a_summary_the_summarizer_did_not_see_is_lost_on_commit() -> None:
    """``saw=[]``: summary '0' leaves unseen and unkept, so [0, 6) is a hole (with ``saw`` left
    out, the summarizer saw it and the compaction is allowed)."""
    assert _one_summary().commit(**_NEXT).allowed
    with pytest.raises(UnrecoverableCompactionError) as info:
        _one_summary().commit(**_NEXT, saw=[])
    assert info.value.holes == ((0, 6),)
    assert "covered only by summary '0' (line 3), which this compaction's summarizer did not see" \
        in str(info.value), str(info.value)


def test_a_kept_summary_is_named_in_the_log_and_keeps_its_coverage() -> None:
    log = io.StringIO()
    led = _one_summary(log)
    assert led.commit(**_NEXT, saw=[], keeps=["0"]).allowed
    assert _lines(log)[-1] == {"event": "compact", "summary_input": [6, 20], "summary_covers": [6, 14],
                               "tail_start": 14, "saw": [], "keeps": ["0"]}


def test_saw_and_keeps_keep_their_order_and_a_set_is_sorted() -> None:
    log = io.StringIO()
    led = _one_summary(log)
    led.commit(summary_input=(6, 20), summary_covers=(6, 14), tail_start=14, summary="b", keeps=["0"])
    led.append(4)
    led.commit(summary_input=(14, 24), summary_covers=(14, 18), tail_start=18, saw=["b", "0"],
               keeps=["b", "0"])
    assert _lines(log)[-1]["saw"] == ["b", "0"] and _lines(log)[-1]["keeps"] == ["b", "0"]
    led.append(4)
    led.commit(summary_input=(18, 28), summary_covers=(18, 22), tail_start=22,
               saw={"b", "0", "2"})  # type: ignore[arg-type]
    assert _lines(log)[-1]["saw"] == ["0", "2", "b"]


def test_decide_checks_a_saw_list_given_alone() -> None:
    led = _one_summary()
    with pytest.raises(ValueError, match=re.escape("saw[0]: no summary 'x' is in the context here")):
        led.decide(**_NEXT, saw=["x"])


@pytest.mark.parametrize("call", ["decide", "equivalent_case"])
def test_deciding_does_not_claim_the_next_summary_id(call: str) -> None:
    """``decide`` and ``equivalent_case`` record nothing: the next ordinal id may be taken
    already (here by a summary named '1') without an error; only ``commit`` claims an id."""
    led = Ledger(2, keep_history=True)
    led.append(10)
    led.commit(summary_input=(0, 10), summary_covers=(0, 6), tail_start=6, summary="1")
    led.append(10)
    assert led.next_summary_id == "1"
    getattr(led, call)(**_NEXT, keeps=["1"])
    with pytest.raises(ValueError, match="summary id '1'"):
        led.commit(**_NEXT, keeps=["1"])
