"""The shared vocabulary (base/vocab.py): every clause id is the spec's and is written once.

The runtime names clauses through the constants of :mod:`tailguard.base.vocab`, which are
checked against the generated checker's ``CLAUSES`` when the module is imported. These tests
hold the rest: every clause of the spec has a constant, and no module outside the generated
checker and the oracles (independent restatements on purpose) writes a clause id as a string.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tailguard._generated.checker import CLAUSES
from tailguard.base import vocab

SRC = Path(vocab.__file__).resolve().parents[1]  # src/tailguard
# where a clause id may be written as a string: the generated checker, the oracles (which
# restate the spec independently), and vocab.py, which names each id once
EXEMPT = ("_generated", "oracles", "base/vocab.py")


def test_every_clause_of_the_spec_has_a_constant() -> None:
    spec = {c for ids in CLAUSES.values() for c in ids}
    assert set(vocab.CLAUSE_IDS) == spec
    assert len(vocab.CLAUSE_IDS) == len(spec)
    for cid in spec:
        assert getattr(vocab, cid.upper()) == cid
        assert cid.upper() in vocab.__all__


def test_an_id_that_is_not_a_clause_fails_loudly() -> None:
    assert vocab._clause("no_hole") == "no_hole"
    with pytest.raises(AssertionError, match=r"'no_gap' is not a clause id of the spec \(known: units_agree, "):
        vocab._clause("no_gap")


def _literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_module_writes_a_clause_id_as_a_string() -> None:
    ids = set(vocab.CLAUSE_IDS)
    found = []
    checked = 0
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(EXEMPT):
            continue
        checked += 1
        found += [f"{rel}:{line}: {value!r}" for line, value in _literals(path) if value in ids]
    assert checked > 50  # the scan saw the package
    assert not found, "use the constants of tailguard.base.vocab:\n" + "\n".join(found)


def test_the_scan_sees_a_literal_id(tmp_path: Path) -> None:
    """The scan above reports a comparison with an id written as a string (not a docstring)."""
    path = tmp_path / "m.py"
    path.write_text('"""Explains no_hole."""\n\n\nif clause == "no_hole":\n    pass\n')
    assert [v for v in _literals(path) if v[1] in vocab.CLAUSE_IDS] == [(4, "no_hole")]
