"""The vocabulary every room shares (brief section 1), defined once.

``UNITS``, ``PROFILES`` and ``CLAUSES`` are the spec's own, read from the generated checker
(which is rendered from ``spec/clauses.toml``), so no room restates them.

Standard library only.
"""

from __future__ import annotations

from typing import Literal

from tailguard._generated.checker import CLAUSES, PROFILES, UNITS

__all__ = ["CLAUSES", "PROFILES", "UNITS", "Pair", "Unit"]

#: A half-open interval ``[lo, hi)`` of offsets, as a ``(lo, hi)`` tuple.
Pair = tuple[int, int]
#: The unit a session counts offsets in.
Unit = Literal["turns", "messages", "tokens"]
