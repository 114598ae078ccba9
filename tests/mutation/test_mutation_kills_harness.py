"""Tests written to kill surviving mutants of the proof harness (``tailguard.theorems``,
``tailguard.cli.prove``): what a registration records, and the budget argument's checks."""

from __future__ import annotations

import argparse

import pytest

from tailguard import theorems
from tailguard.cli.prove import _positive
from tailguard.theorems import REGISTRY, theorem


def test_a_registration_records_every_field() -> None:
    def proof() -> theorems.Result:
        raise AssertionError("never run here")

    try:
        theorem("TZ-mut", "A title", "A statement", bound="at most 2 intervals")(proof)
        t = REGISTRY["TZ-mut"]
        assert (t.id, t.title, t.statement, t.kind, t.func, t.module, t.bound) == (
            "TZ-mut", "A title", "A statement", "theorem", proof, __name__, "at most 2 intervals")
        theorem("TZ-mut", "Other", "Other statement", kind="witness")(proof)
        assert (REGISTRY["TZ-mut"].kind, REGISTRY["TZ-mut"].bound, REGISTRY["TZ-mut"].title) == (
            "witness", None, "Other")
    finally:
        REGISTRY.pop("TZ-mut", None)


def test_every_registered_theorem_has_its_text_and_module() -> None:
    from tailguard.cli.prove import load_theorems

    load_theorems()
    assert REGISTRY
    for t in REGISTRY.values():
        assert t.title and t.statement and t.kind in ("theorem", "witness"), t.id
        assert t.module == t.func.__module__ and t.module.startswith(("proofs", "tailguard")), t.id


@pytest.mark.parametrize(("text", "message"), [("0", "must be positive: 0"), ("-3", "must be positive: -3"),
                                               ("x1", "not an integer: 'x1'")])
def test_the_budget_must_be_a_positive_integer(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{message}$"):
        _positive(text)
    assert _positive("1") == 1 and _positive("250") == 250
