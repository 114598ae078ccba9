"""The seed-compatible surface, and the recommended strict one beside it.

Code written against the seed's ``assert_compaction_safe`` runs unchanged: same name,
same signature, same decisions (profile ``seed`` of the generated checker, quirks
included), same exception type. The strict entry point :func:`assert_recoverable`
decides by the recovery contract (profile ``strict``); for a running session prefer
:class:`tailguard.runtime.ledger.Ledger`, which assembles the case itself in O(log k).

Standard library only: this module is on the runtime path.
"""

from __future__ import annotations

from collections.abc import Iterable

from tailguard._generated.checker import Decision, check, explain
from tailguard.base.errors import UnrecoverableCompactionError as UnrecoverableCompactionError
from tailguard.base.vocab import Pair

__all__ = ["UnrecoverableCompactionError", "assert_compaction_safe", "assert_recoverable"]


def assert_compaction_safe(
    summary_input_start: int,
    tail_start: int,
    recovery_floor_span: int,
    prior_truncations: list[Pair],
    floor_unit: str,
    truncator_unit: str,
) -> None:
    """The seed's guard, bit for bit (profile ``seed``): raise at the first failing check.

    Kept for compatibility; it allows the seed's own incident (see the README). Prefer
    :func:`assert_recoverable` or the :class:`~tailguard.runtime.ledger.Ledger`.

    >>> assert_compaction_safe(8, 36, 12, [(0, 8)], "turns", "turns")  # the incident passes
    >>> assert_compaction_safe(8, 36, 12, [(0, 30)], "turns", "turns")
    Traceback (most recent call last):
    ...
    tailguard.UnrecoverableCompactionError: compaction refused (truncation_clear): \
truncation_clear: prior truncation [0, 30) intersects recovery floor [24, 36); evidence \
already evicted
    """
    truncations = [(lo, hi) for (lo, hi) in prior_truncations]  # the seed's unpacking
    fields = {
        "history_end": 0,  # the seed reads none of the fields below its signature
        "tail_start": tail_start,
        "summary_input": (summary_input_start, summary_input_start),
        "summary_covers": (0, 0),
        "recovery_floor_span": recovery_floor_span,
        "floor_unit": floor_unit,
        "truncator_unit": truncator_unit,
        "prior_truncations": truncations,
        "prior_coverage": [],
        "spills": [],
    }
    decision = check("seed", **fields)  # type: ignore[arg-type]
    if not decision.allowed:
        sentences = explain("seed", decision, **fields)  # type: ignore[arg-type]
        raise UnrecoverableCompactionError.from_decision(decision, sentences)


def assert_recoverable(
    *,
    history_end: int,
    tail_start: int,
    summary_input: Pair,
    summary_covers: Pair,
    recovery_floor_span: int,
    floor_unit: str,
    truncator_unit: str,
    prior_truncations: Iterable[Pair] = (),
    prior_coverage: Iterable[Pair] = (),
    spills: Iterable[Pair] = (),
) -> Decision:
    """Decide one compaction by the recovery contract (profile ``strict``).

    Returns the allowing :class:`Decision`; raises :class:`UnrecoverableCompactionError`
    naming every failed clause and carrying the holes otherwise.

    >>> assert_recoverable(history_end=48, tail_start=36, summary_input=(8, 48),
    ...     summary_covers=(8, 36), recovery_floor_span=12, floor_unit="turns",
    ...     truncator_unit="turns", prior_truncations=[(0, 8)]).holes
    Traceback (most recent call last):
    ...
    tailguard.UnrecoverableCompactionError: compaction refused (no_hole); evicted \
offsets [0, 8) are unrecoverable: no_hole: offsets [0, 8) were evicted and are in no summary, \
spill or tail
    """
    fields = {
        "history_end": history_end,
        "tail_start": tail_start,
        "summary_input": (summary_input[0], summary_input[1]),
        "summary_covers": (summary_covers[0], summary_covers[1]),
        "recovery_floor_span": recovery_floor_span,
        "floor_unit": floor_unit,
        "truncator_unit": truncator_unit,
        "prior_truncations": [(lo, hi) for lo, hi in prior_truncations],
        "prior_coverage": [(lo, hi) for lo, hi in prior_coverage],
        "spills": [(lo, hi) for lo, hi in spills],
    }
    decision = check("strict", **fields)  # type: ignore[arg-type]
    if not decision.allowed:
        sentences = explain("strict", decision, **fields)  # type: ignore[arg-type]
        raise UnrecoverableCompactionError.from_decision(decision, sentences)
    return decision
