"""The vocabulary every room shares (brief section 1), defined once.

``UNITS``, ``PROFILES`` and ``CLAUSES`` are the spec's own, read from the generated checker
(which is rendered from ``spec/clauses.toml``), so no room restates them. The clause ids the
runtime names (``WELL_FORMED``, ``NO_HOLE``, ...) are checked against ``CLAUSES`` when this
module is imported: a clause renamed or removed in the spec fails there, loudly, instead of
leaving a comparison with the old id that is silently never true.

Standard library only.
"""

from __future__ import annotations

from typing import Literal

from tailguard._generated.checker import CLAUSES, PROFILES, UNITS

__all__ = [
    "CLAUSES",
    "CLAUSE_IDS",
    "FLOOR_IN_INPUT",
    "FLOOR_IN_TAIL",
    "FLOOR_REACH",
    "NO_HOLE",
    "PROFILES",
    "SEAM_CONTIGUOUS",
    "SUMMARY_HONEST",
    "TAIL_INTACT",
    "TRUNCATION_CLEAR",
    "UNITS",
    "UNITS_AGREE",
    "WELL_FORMED",
    "Pair",
    "Unit",
]

#: A half-open interval ``[lo, hi)`` of offsets, as a ``(lo, hi)`` tuple.
Pair = tuple[int, int]
#: The unit a session counts offsets in.
Unit = Literal["turns", "messages", "tokens"]

#: Every clause id of the spec, each once, in the order the profiles first list them.
CLAUSE_IDS: tuple[str, ...] = tuple(dict.fromkeys(c for ids in CLAUSES.values() for c in ids))


def _clause(name: str) -> str:
    """``name`` if it is a clause id of the spec, else ``AssertionError`` (at import time)."""
    if name not in CLAUSE_IDS:
        raise AssertionError(
            f"{name!r} is not a clause id of the spec (known: {', '.join(CLAUSE_IDS)}); "
            "spec/clauses.toml renamed or removed it: update tailguard/base/vocab.py"
        )
    return name


# the clause ids the runtime names (tests/test_vocab.py: every clause of the spec has one)
WELL_FORMED = _clause("well_formed")
UNITS_AGREE = _clause("units_agree")
FLOOR_REACH = _clause("floor_reach")
TRUNCATION_CLEAR = _clause("truncation_clear")
FLOOR_IN_INPUT = _clause("floor_in_input")
FLOOR_IN_TAIL = _clause("floor_in_tail")
TAIL_INTACT = _clause("tail_intact")
SEAM_CONTIGUOUS = _clause("seam_contiguous")
SUMMARY_HONEST = _clause("summary_honest")
NO_HOLE = _clause("no_hole")
