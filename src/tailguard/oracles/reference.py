"""Naive per-offset reference for every profile: the definitions, written directly.

Slow on purpose (it walks every offset of [0, n)) and independent of the spec
parser, the renderer and the interval primitives, so that agreement with the
generated checker means something. Used by tests, CrossHair and ``conform``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tailguard._generated.checker import Decision
from tailguard.base.vocab import Pair

KNOWN_UNITS = ("turns", "messages", "tokens")


def _in(x: int, lo: int, hi: int) -> bool:
    return lo <= x < hi


def _in_any(x: int, pairs: Sequence[Pair]) -> bool:
    return any(lo <= x < hi for lo, hi in pairs)


def _runs(points: list[int]) -> tuple[Pair, ...]:
    """Maximal runs of consecutive integers, as half-open pairs."""
    out: list[Pair] = []
    for x in points:
        if out and out[-1][1] == x:
            out[-1] = (out[-1][0], x + 1)
        else:
            out.append((x, x + 1))
    return tuple(out)


def reference_seed(
    history_end: int, tail_start: int, summary_input: Pair, summary_covers: Pair,
    recovery_floor_span: int, floor_unit: str, truncator_unit: str,
    prior_truncations: Sequence[Pair], prior_coverage: Sequence[Pair], spills: Sequence[Pair],
) -> Decision:
    """Brief section 2: the seed's three checks, first failure reported."""
    if floor_unit != truncator_unit:
        return Decision("refuse", ("units_agree",), ())
    floor_start = tail_start - recovery_floor_span
    if summary_input[0] > floor_start:
        return Decision("refuse", ("floor_reach",), ())
    for lo, hi in prior_truncations:
        if hi > floor_start and lo < tail_start:
            return Decision("refuse", ("truncation_clear",), ())
    return Decision("allow", (), ())


def reference_strict(
    history_end: int, tail_start: int, summary_input: Pair, summary_covers: Pair,
    recovery_floor_span: int, floor_unit: str, truncator_unit: str,
    prior_truncations: Sequence[Pair], prior_coverage: Sequence[Pair], spills: Sequence[Pair],
) -> Decision:
    """Brief section 4: every clause of the recovery contract, all reported."""
    return _contract(history_end, tail_start, summary_input, summary_covers, recovery_floor_span, floor_unit,
                     truncator_unit, prior_truncations, prior_coverage, spills, floor_in_input=True)


def reference_partitioned(
    history_end: int, tail_start: int, summary_input: Pair, summary_covers: Pair,
    recovery_floor_span: int, floor_unit: str, truncator_unit: str,
    prior_truncations: Sequence[Pair], prior_coverage: Sequence[Pair], spills: Sequence[Pair],
) -> Decision:
    """Brief section 4b: strict's clauses without floor_in_input (the summarizer never sees the tail)."""
    return _contract(history_end, tail_start, summary_input, summary_covers, recovery_floor_span, floor_unit,
                     truncator_unit, prior_truncations, prior_coverage, spills, floor_in_input=False)


def _contract(
    history_end: int, tail_start: int, summary_input: Pair, summary_covers: Pair,
    recovery_floor_span: int, floor_unit: str, truncator_unit: str,
    prior_truncations: Sequence[Pair], prior_coverage: Sequence[Pair], spills: Sequence[Pair],
    *, floor_in_input: bool,
) -> Decision:
    """Brief section 4, offset by offset."""
    n, t, F = history_end, tail_start, recovery_floor_span
    (a, b), (c, d) = summary_input, summary_covers
    pairs = [summary_input, summary_covers, *prior_truncations, *prior_coverage, *spills]
    if not (
        n >= 0 and F >= 0 and 0 <= t <= n
        and all(0 <= lo <= hi <= n for lo, hi in pairs)
        and floor_unit in KNOWN_UNITS and truncator_unit in KNOWN_UNITS
    ):
        return Decision("refuse", ("well_formed",), ())
    floor = range(max(0, n - F), n)
    tail = range(t, n)

    def truncated(x: int) -> bool:
        return _in_any(x, prior_truncations)

    def recoverable(x: int) -> bool:
        return (
            _in_any(x, prior_coverage) or _in_any(x, spills)
            or (_in(x, c, d) and _in(x, a, b) and not truncated(x))
            or (_in(x, t, n) and not truncated(x))
        )

    failed: list[str] = []
    if floor_unit != truncator_unit:
        failed.append("units_agree")
    if floor_in_input and not all(_in(x, a, b) for x in floor):
        failed.append("floor_in_input")
    if not all(x in tail for x in floor):
        failed.append("floor_in_tail")
    if any(truncated(x) for x in tail):
        failed.append("tail_intact")
    if not (t == 0 or d >= t):
        failed.append("seam_contiguous")
    if not all(_in(x, a, b) and not truncated(x) for x in range(c, d)):
        failed.append("summary_honest")
    holes = _runs([x for x in range(n) if not recoverable(x)])
    if holes:
        failed.append("no_hole")
    return Decision("refuse" if failed else "allow", tuple(failed), holes)


def reference(profile: str, **fields: object) -> Decision:
    fn = {"seed": reference_seed, "strict": reference_strict, "partitioned": reference_partitioned}[profile]
    return fn(**fields)  # type: ignore[arg-type]
