"""The seed's guard, transcribed character for character (``seed/unrecoverable-tail-invariant.md``).

It is the baseline of the benchmarks and a differential oracle for profile ``seed``.
Do not "fix" it: its quirks are the point.
"""

from __future__ import annotations


class UnrecoverableCompactionError(RuntimeError):
    """Raised when auto-compaction would commit with a broken recovery guarantee."""

    pass


def assert_compaction_safe(
    summary_input_start: int,
    tail_start: int,
    recovery_floor_span: int,
    prior_truncations: list[tuple[int, int]],
    floor_unit: str,
    truncator_unit: str,
) -> None:
    if floor_unit != truncator_unit:
        raise UnrecoverableCompactionError(
            f"recovery floor unit {floor_unit!r} cannot be honored by "
            f"truncator unit {truncator_unit!r}; guarantee is unenforceable"
        )

    floor_start = tail_start - recovery_floor_span
    if summary_input_start > floor_start:
        raise UnrecoverableCompactionError(
            f"summarizer input starts at {summary_input_start}, but recovery "
            f"floor begins at {floor_start}; floor is not a subset of input"
        )

    for (lo, hi) in prior_truncations:
        if hi > floor_start and lo < tail_start:
            raise UnrecoverableCompactionError(
                f"prior truncation [{lo}, {hi}) intersects recovery floor "
                f"[{floor_start}, {tail_start}); evidence already evicted"
            )
