"""A naive reference for summary lineage (brief section 4c, SPEC.md section 9.3).

Written straight from the definitions, with Python sets of integer offsets and plain lists:
no interval arithmetic, no merging tricks, nothing shared with :mod:`tailguard.runtime.ledger`.

- Every compaction ``k`` creates a summary ``S_k`` whose id is the one given, else ``k``
  (its 0-based ordinal among the session's compactions) as a decimal string. Ids are unique
  within a session.
- ``E(S_k) = ((C_k ∩ I_k) \\ TRU_k) ∪ ⋃ { E(S_j) : j ∈ saw_k }``, ``TRU_k`` the union of
  the truncations recorded before compaction ``k``.
- Compaction ``k``'s case has ``prior_coverage = ⋃ { E(S_j) : j ∈ saw_k ∪ keeps_k }`` (as
  sorted maximal ranges); every other field is 9.3's: the history end, the compaction's own
  fields, the header's floor and units, and every truncation and spill as recorded.
- When compaction ``k`` commits, the context holds ``keeps_k ∪ {S_k}``; every other summary
  leaves it. ``evict_summary`` removes one summary.
- Defaults: ``saw=None`` is every summary in the context, ``keeps`` is none.

A compaction is decided twice, by the generated checker and by the per-offset reference
(:mod:`tailguard.oracles.reference`), on that case; the two must agree. For ``partitioned`` the
reference's own ``reference_partitioned`` is used when it has one; else the profile is
derived here as strict's reference result without ``floor_in_input`` (brief 4b: the same
clauses, in the same order, minus that one).

Also: :func:`require_lineage` / :func:`needs_lineage` make the tests that need the spec 1.1
Ledger API fail (not skip) with one clear message while the ledger does not have it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import pytest

import tailguard.oracles.reference as _reference
from tailguard._generated.checker import Decision, check_case

Pair = tuple[int, int]
PROFILES = ("seed", "strict", "partitioned")

F_ = TypeVar("F_", bound=Callable[..., Any])


# -- the new Ledger API is required ---------------------------------------------------------

NOT_READY = (
    "tailguard.runtime.ledger.Ledger has no summary-lineage API yet (spec 1.1, brief section 4c: "
    "evict_summary, summaries, next_summary_id, saw=/keeps=/summary= on decide, commit and "
    "equivalent_case). This test checks that API; it fails until the ledger has it."
)


def lineage_ready() -> bool:
    from tailguard.runtime.ledger import Ledger

    return hasattr(Ledger, "evict_summary")


def require_lineage() -> None:
    if not lineage_ready():
        pytest.fail(NOT_READY, pytrace=False)


def needs_lineage(fn: F_) -> F_:
    """Decorate a test: it fails at once, with :data:`NOT_READY`, while the API is missing."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        require_lineage()
        return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


# -- sets of offsets ------------------------------------------------------------------------

def offsets(pair: Sequence[int]) -> set[int]:
    """The offsets of the half-open ``[lo, hi)`` (empty when ``hi <= lo``)."""
    return set(range(pair[0], pair[1]))


def union_of(pairs: Iterable[Sequence[int]]) -> set[int]:
    out: set[int] = set()
    for p in pairs:
        out |= offsets(p)
    return out


def runs(points: Iterable[int]) -> list[list[int]]:
    """Sorted maximal runs of consecutive integers, as ``[lo, hi]`` lists."""
    out: list[list[int]] = []
    for x in sorted(points):
        if out and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
    return out


def jsonable(obj: Any) -> Any:
    """Tuples to lists, the way a case reads once written as JSON."""
    return json.loads(json.dumps(obj))


# -- deciding a case twice ------------------------------------------------------------------

def _reference_fields(case: dict[str, Any]) -> dict[str, Any]:
    out = dict(case)
    for key in ("summary_input", "summary_covers"):
        out[key] = tuple(case[key])
    for key in ("prior_truncations", "prior_coverage", "spills"):
        out[key] = [tuple(p) for p in case[key]]
    return out


def reference_decision(case: dict[str, Any], profile: str) -> Decision:
    """:mod:`tailguard.oracles.reference` on ``case``; ``partitioned`` derived from strict's."""
    fields = _reference_fields(case)
    if profile == "partitioned":
        own = getattr(_reference, "reference_partitioned", None)
        if own is not None:
            return own(**fields)  # type: ignore[no-any-return]
        d = _reference.reference_strict(**fields)
        if d.failed == ("well_formed",):
            return d
        failed = tuple(c for c in d.failed if c != "floor_in_input")
        return Decision("refuse" if failed else "allow", failed, d.holes)
    return _reference.reference(profile, **fields)


def decide_case(case: dict[str, Any], profile: str) -> Decision:
    """The generated checker's decision, asserted equal to the per-offset reference's."""
    got = check_case(case, profile)
    ref = reference_decision(case, profile)
    assert tuple(got) == tuple(ref), ("checker and reference disagree", profile, case, got, ref)
    return got


# -- the session ----------------------------------------------------------------------------

class Refused(Exception):
    """The oracle's commit was refused and not overridden: nothing was recorded."""

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision)
        self.decision = decision


class LineageOracle:
    """One session, recorded naively. Mirrors the Ledger's operations and its input errors."""

    def __init__(
        self, recovery_floor_span: int, floor_unit: str = "turns", truncator_unit: str = "turns",
        *, profile: str = "strict",
    ) -> None:
        self.F = recovery_floor_span
        self.floor_unit = floor_unit
        self.truncator_unit = truncator_unit
        self.profile = profile
        self.n = 0
        self.truncations: list[Pair] = []  # as recorded, in order
        self.spills: list[Pair] = []
        self.compactions = 0  # committed (allowed or overridden) compactions
        self.used_ids: set[str] = set()  # every summary id this session has created
        self.context: list[str] = []  # ids of the summaries in the context, oldest first
        self.effective: dict[str, frozenset[int]] = {}  # E(S) of every summary ever created
        self.honest_parts: list[list[list[int]]] = []  # 1.0: each compaction's honest part

    # -- recording (the Ledger's ValueErrors, same conditions) --

    def append(self, count: int = 1) -> None:
        if count < 0:
            raise ValueError(f"count {count} < 0")
        self.n += count

    def _check_range(self, lo: int, hi: int) -> None:
        if not 0 <= lo <= hi <= self.n:
            raise ValueError(f"range [{lo}, {hi}) is not inside [0, {self.n}]")

    def truncate(self, lo: int, hi: int) -> None:
        self._check_range(lo, hi)
        self.truncations.append((lo, hi))

    def spill(self, lo: int, hi: int) -> None:
        self._check_range(lo, hi)
        self.spills.append((lo, hi))

    def evict_summary(self, summary_id: str) -> None:
        if summary_id not in self.context:
            raise ValueError(f"summary {summary_id!r} is not in the context")
        self.context.remove(summary_id)

    # -- lineage --

    @property
    def summaries(self) -> tuple[str, ...]:
        return tuple(self.context)

    @property
    def next_summary_id(self) -> str:
        return str(self.compactions)

    def truncated(self) -> set[int]:
        """``TRU``: the union of every truncation recorded so far."""
        return union_of(self.truncations)

    def resolve(
        self, saw: Iterable[str] | None, keeps: Iterable[str]
    ) -> tuple[list[str], list[str]]:
        """``saw`` and ``keeps`` as id lists, defaults applied; ValueError for an unknown id."""
        saw_ids = list(self.context) if saw is None else list(saw)
        keep_ids = list(keeps)
        for field, ids in (("saw", saw_ids), ("keeps", keep_ids)):
            for sid in ids:
                if sid not in self.context:
                    raise ValueError(f"{field}: summary {sid!r} is not in the context")
        return saw_ids, keep_ids

    def prior_coverage(self, saw: Iterable[str] | None = None, keeps: Iterable[str] = ()) -> set[int]:
        saw_ids, keep_ids = self.resolve(saw, keeps)
        out: set[int] = set()
        for sid in saw_ids + keep_ids:
            out |= self.effective[sid]
        return out

    def effective_coverage(
        self, summary_input: Pair, summary_covers: Pair, saw: Iterable[str] | None = None
    ) -> set[int]:
        """``E`` of a summary made now: its honest part plus the coverage of what it saw."""
        saw_ids, _ = self.resolve(saw, ())
        out = (offsets(summary_covers) & offsets(summary_input)) - self.truncated()
        for sid in saw_ids:
            out |= self.effective[sid]
        return out

    # -- the equivalent case and the decision --

    def case(
        self, *, summary_input: Pair, summary_covers: Pair, tail_start: int,
        saw: Iterable[str] | None = None, keeps: Iterable[str] = (),
    ) -> dict[str, Any]:
        return {
            "history_end": self.n,
            "tail_start": tail_start,
            "summary_input": [summary_input[0], summary_input[1]],
            "summary_covers": [summary_covers[0], summary_covers[1]],
            "recovery_floor_span": self.F,
            "floor_unit": self.floor_unit,
            "truncator_unit": self.truncator_unit,
            "prior_truncations": [list(p) for p in self.truncations],
            "prior_coverage": runs(self.prior_coverage(saw, keeps)),
            "spills": [list(p) for p in self.spills],
        }

    def case_1_0(self, *, summary_input: Pair, summary_covers: Pair, tail_start: int) -> dict[str, Any]:
        """Spec 1.0's equivalent case: every earlier compaction's honest part, no lineage."""
        case = self.case(summary_input=summary_input, summary_covers=summary_covers,
                         tail_start=tail_start, saw=[], keeps=[])
        case["prior_coverage"] = [p for part in self.honest_parts for p in part]
        return case

    def decide(
        self, profile: str | None = None, *, summary_input: Pair, summary_covers: Pair,
        tail_start: int, saw: Iterable[str] | None = None, keeps: Iterable[str] = (),
    ) -> Decision:
        case = self.case(summary_input=summary_input, summary_covers=summary_covers,
                         tail_start=tail_start, saw=saw, keeps=keeps)
        return decide_case(case, profile or self.profile)

    def commit(
        self, *, summary_input: Pair, summary_covers: Pair, tail_start: int,
        summary: str | None = None, saw: Iterable[str] | None = None, keeps: Iterable[str] = (),
        override: str | None = None,
    ) -> Decision:
        """Decide under the session's profile; record unless refused without ``override``.

        ValueError (nothing recorded): an id in ``saw``/``keeps`` not in the context, or a
        summary id this session already created. :class:`Refused`: refused, not overridden.
        """
        saw_ids, keep_ids = self.resolve(saw, keeps)
        sid = self.next_summary_id if summary is None else summary
        if sid in self.used_ids:
            raise ValueError(f"summary: id {sid!r} is already used in this session")
        decision = self.decide(summary_input=summary_input, summary_covers=summary_covers,
                               tail_start=tail_start, saw=saw_ids, keeps=keep_ids)
        if not decision.allowed and override is None:
            raise Refused(decision)
        honest = (offsets(summary_covers) & offsets(summary_input)) - self.truncated()
        self.honest_parts.append(runs(honest))
        self.effective[sid] = frozenset(
            self.effective_coverage(summary_input, summary_covers, saw_ids))
        self.context = [k for k in self.context if k in keep_ids] + [sid]
        self.used_ids.add(sid)
        self.compactions += 1
        return decision
