"""The shared argument checks (base/args.py): what each accepts, what it returns, what it says.

The ledger's own tests (tests/mutation/test_mutation_kills_ledger_args.py) pin every message a
``Ledger`` call gives; the event log's (tests/test_eventlog.py, tests/mutation/) every field
error of a log line. These hold the checks themselves, including what neither caller reaches
often: an ``int`` subclass is an integer argument and comes back as given, a ``bool`` is not.
"""

from __future__ import annotations

import doctest
import enum
import io
import json

import pytest

import tailguard.base.args
from tailguard.base.args import check_ids, check_int, check_pair, count_problem, ids_problem, is_int
from tailguard.runtime.eventlog import EventLogError, iter_events
from tailguard.runtime.ledger import Ledger


class Size(enum.IntEnum):
    SMALL = 2
    LARGE = 9


def test_doctests() -> None:
    result = doctest.testmod(tailguard.base.args)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(("value", "expected"), [
    (0, True), (-7, True), (10**30, True), (Size.SMALL, True),
    (True, False), (False, False), (1.0, False), ("1", False), (None, False), ([1], False),
])
def test_an_integer_is_an_int_and_not_a_bool(value: object, expected: bool) -> None:
    assert is_int(value) is expected


def test_check_int_returns_the_value_itself_or_names_the_field() -> None:
    assert check_int(5, "x") == 5
    assert check_int(Size.LARGE, "x") is Size.LARGE  # an int subclass passes, as given
    for value, shown in ((True, "bool True"), (2.5, "float 2.5"), ("3", "str '3'"), (None, "NoneType None")):
        with pytest.raises(TypeError) as info:
            check_int(value, "count")
        assert str(info.value) == f"count: expected an integer, got {shown}"


def test_check_pair_returns_a_tuple_of_the_two_integers() -> None:
    assert check_pair((3, 4), "p") == (3, 4)
    assert check_pair([3, 4], "p") == (3, 4) and type(check_pair([3, 4], "p")) is tuple
    got = check_pair((Size.SMALL, 4), "p")
    assert got == (2, 4) and got[0] is Size.SMALL
    for value, message in [
        ((1, 2, 3), "p: expected a pair (lo, hi), got (1, 2, 3)"),
        ({1, 2}, "p: expected a pair (lo, hi), got {1, 2}"),
        ([1], "p: expected a pair (lo, hi), got [1]"),
        ((False, 2), "p[0]: expected an integer, got bool False"),
        ([1, "2"], "p[1]: expected an integer, got str '2'"),
    ]:
        with pytest.raises(TypeError) as info:
            check_pair(value, "p")
        assert str(info.value) == message


def test_check_ids_keeps_the_order_of_a_sequence_and_sorts_a_set() -> None:
    assert check_ids(["b", "a"], "saw") == ("b", "a")
    assert check_ids(("b", "a"), "saw") == ("b", "a")
    assert check_ids({"b", "c", "a"}, "saw") == ("a", "b", "c")
    assert check_ids(frozenset({"b", "a"}), "saw") == ("a", "b")
    assert check_ids([], "saw") == ()
    for value, message in [
        ("ab", "saw: expected a list of summary ids (strings), got 'ab'"),
        (b"ab", "saw: expected a list of summary ids (strings), got b'ab'"),
        ({"a": 1}, "saw: expected a list of summary ids (strings), got {'a': 1}"),
        (["a", 1, None], "saw[1]: expected a summary id (string), got 1"),
        ((None,), "saw[0]: expected a summary id (string), got None"),
    ]:
        with pytest.raises(TypeError) as info:
            check_ids(value, "saw")
        assert str(info.value) == message


def test_the_shared_problems_name_the_field_and_show_the_value_as_told() -> None:
    assert ids_problem([], "keeps", repr) is None
    assert ids_problem(["a", "b"], "keeps", repr) is None
    assert ids_problem(["a", 2, 3], "keeps", lambda v: f"<{v}>") == \
        ("keeps[1]", "expected a summary id (string), got <2>")
    assert count_problem(0) is None and count_problem(5) is None
    assert count_problem(-1) == ("count", "expected a count >= 0, got -1")
    assert count_problem(-3, "amount") == ("amount", "expected a count >= 0, got -3")


def test_the_ledger_and_the_log_reader_say_the_same_of_a_negative_count() -> None:
    led = Ledger(2)
    with pytest.raises(ValueError) as call:
        led.append(-2)
    lines = [json.dumps({"event": "session", "unit": "turns", "recovery_floor_span": 2,
                         "floor_unit": "turns", "truncator_unit": "turns"}),
             json.dumps({"event": "append", "count": -2})]
    with pytest.raises(EventLogError) as log:
        list(iter_events(lines))
    assert str(call.value) == "count: expected a count >= 0, got -2"
    assert (log.value.field, log.value.reason) == ("count", "expected a count >= 0, got -2")
    led.append(Size.SMALL)  # an int subclass is a count
    assert led.history_end == 2


def test_the_log_reader_shows_a_bad_id_as_json() -> None:
    log = io.StringIO()
    led = Ledger(2, log=log)
    led.append(4)
    led.commit(summary_input=(0, 4), summary_covers=(0, 2), tail_start=2)
    lines = log.getvalue().splitlines()
    bad = json.loads(lines[-1]) | {"saw": ["0", True]}
    with pytest.raises(EventLogError) as info:
        list(iter_events([*lines[:-1], json.dumps(bad)]))
    assert (info.value.field, info.value.reason) == ("saw[1]", "expected a summary id (string), got true")
