"""Guards written by "someone else", for ``tailguard verify-guard`` tests."""

from __future__ import annotations

from typing import Any

from tailguard._generated.checker import check


class Refused(Exception):
    pass


def correct(**case: Any) -> None:
    """A correct strict guard: raises to refuse."""
    if not check("strict", **case).allowed:
        raise Refused("refused")


def seam_off_by_one(**case: Any) -> bool:
    """Accepts a seam gap of exactly one unit: an off-by-one at seam_contiguous."""
    d = check("strict", **case)
    if d.failed == ("seam_contiguous",) and case["summary_covers"][1] == case["tail_start"] - 1:
        return True
    return d.allowed
