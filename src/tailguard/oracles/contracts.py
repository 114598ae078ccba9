"""PEP 316 contracts on the generated checker and the naive reference.

Each public ``checker_*`` / ``reference_*`` function is a thin wrapper with flat,
CrossHair-friendly arguments (ints, ``list[tuple[int, int]]``, str) whose docstring
states the definitions of brief sections 2 and 4 in **endpoint arithmetic** (never a
loop over offsets, so that a symbolic executor can reach a counterexample that needs a
large interval). ``crosshair check`` searches for inputs that break them
(``tools/crosshair_check.sh``); ``crosshair diffbehavior`` compares the uncontracted
``*_flat`` wrappers (``tools/crosshair_diff.sh``).

Argument names: ``n`` history end, ``t`` tail start, ``I = [a, b)`` summarizer input,
``C = [c, d)`` summary coverage, ``F`` floor span, ``TR`` prior truncations, ``PC`` prior
coverage, ``SP`` spills. The floor is ``[max(0, n - F), n)``.

Holes are characterised completely by endpoints: they are sorted, disjoint,
non-adjacent and inside ``[0, n)``; their first and last offsets are not covered;
each is maximal (the offsets just outside are covered or out of range); every offset
where an uncovered run can start (0 or the end of a covering piece) is in a hole when
uncovered; and no offset where a covered run can start (the start of a covering piece)
lies in a hole. Together these say: the holes are exactly the maximal uncovered runs.

Standard library only: this module imports neither crosshair nor z3.
"""

from __future__ import annotations

from tailguard._generated import checker as _checker
from tailguard._generated.checker import Decision
from tailguard.base.vocab import UNITS, Pair
from tailguard.oracles.reference import reference_seed, reference_strict

Pairs = list[Pair]

STRICT_ORDER = ("well_formed", "units_agree", "floor_in_input", "floor_in_tail",
                "tail_intact", "seam_contiguous", "summary_honest", "no_hole")
SEED_ORDER = ("units_agree", "floor_reach", "truncation_clear")


# ---------------------------------------------------------------------------
# Endpoint helpers used by the conditions (loops over intervals, never over offsets).

def _ok_pair(lo: int, hi: int, n: int) -> bool:
    return 0 <= lo <= hi <= n


def _wf(n: int, t: int, a: int, b: int, c: int, d: int, F: int, fu: str, tu: str,
        TR: Pairs, PC: Pairs, SP: Pairs) -> bool:
    """Strict ``well_formed``."""
    return (n >= 0 and F >= 0 and 0 <= t <= n
            and _ok_pair(a, b, n) and _ok_pair(c, d, n)
            and all(_ok_pair(lo, hi, n) for lo, hi in TR)
            and all(_ok_pair(lo, hi, n) for lo, hi in PC)
            and all(_ok_pair(lo, hi, n) for lo, hi in SP)
            and fu in UNITS and tu in UNITS)


def _meets(lo: int, hi: int, TR: Pairs) -> bool:
    """Some pair of ``TR`` intersects ``[lo, hi)``."""
    return any(max(lo, rlo) < min(hi, rhi) for rlo, rhi in TR)


def _in_any(x: int, pairs: Pairs) -> bool:
    return any(lo <= x < hi for lo, hi in pairs)


def _cov(x: int, n: int, t: int, a: int, b: int, c: int, d: int,
         TR: Pairs, PC: Pairs, SP: Pairs) -> bool:
    """Offset ``x`` is recoverable: in PC, SP, (C & I) minus TRU, or the tail minus TRU."""
    return (_in_any(x, PC) or _in_any(x, SP)
            or (not _in_any(x, TR) and (max(a, c) <= x < min(b, d) or t <= x < n)))


def _in_holes(x: int, holes: tuple[Pair, ...]) -> bool:
    return any(lo <= x < hi for lo, hi in holes)


def _shaped(holes: tuple[Pair, ...], n: int) -> bool:
    """Sorted, disjoint, non-adjacent, non-empty, inside ``[0, n)``."""
    return (all(0 <= lo < hi <= n for lo, hi in holes)
            and all(holes[i][1] < holes[i + 1][0] for i in range(len(holes) - 1)))


def _ends_uncovered(holes: tuple[Pair, ...], n: int, t: int, a: int, b: int, c: int, d: int,
                    TR: Pairs, PC: Pairs, SP: Pairs) -> bool:
    return all(not _cov(lo, n, t, a, b, c, d, TR, PC, SP)
               and not _cov(hi - 1, n, t, a, b, c, d, TR, PC, SP) for lo, hi in holes)


def _maximal(holes: tuple[Pair, ...], n: int, t: int, a: int, b: int, c: int, d: int,
             TR: Pairs, PC: Pairs, SP: Pairs) -> bool:
    return all((lo == 0 or _cov(lo - 1, n, t, a, b, c, d, TR, PC, SP))
               and (hi == n or _cov(hi, n, t, a, b, c, d, TR, PC, SP)) for lo, hi in holes)


def _run_starts(n: int, b: int, d: int, TR: Pairs, PC: Pairs, SP: Pairs) -> list[int]:
    """Offsets where an uncovered run can start: 0 or the end of a covering piece."""
    return [0, b, d, *(lo for lo, _ in TR), *(hi for _, hi in PC), *(hi for _, hi in SP)]


def _piece_starts(t: int, a: int, c: int, TR: Pairs, PC: Pairs, SP: Pairs) -> list[int]:
    """Offsets where a covered run can start: the start of a covering piece."""
    return [t, a, c, *(hi for _, hi in TR), *(lo for lo, _ in PC), *(lo for lo, _ in SP)]


def _complete(holes: tuple[Pair, ...], n: int, t: int, a: int, b: int, c: int, d: int,
              TR: Pairs, PC: Pairs, SP: Pairs) -> bool:
    """Every uncovered run start is in a hole."""
    return all(_in_holes(x, holes) for x in _run_starts(n, b, d, TR, PC, SP)
               if 0 <= x < n and not _cov(x, n, t, a, b, c, d, TR, PC, SP))


def _solid(holes: tuple[Pair, ...], n: int, t: int, a: int, b: int, c: int, d: int,
           TR: Pairs, PC: Pairs, SP: Pairs) -> bool:
    """No covered piece start lies inside a hole (so every hole is uncovered throughout)."""
    return not any(_in_holes(x, holes) for x in _piece_starts(t, a, c, TR, PC, SP)
                   if 0 <= x < n and _cov(x, n, t, a, b, c, d, TR, PC, SP))


def _in_order(failed: tuple[str, ...], order: tuple[str, ...]) -> bool:
    """Known clause ids, no repeats, in spec order."""
    return failed == tuple(cid for cid in order if cid in failed)


# ---------------------------------------------------------------------------
# Uncontracted flat wrappers (targets of ``crosshair diffbehavior``).

def _decide(profile: str, n: int, t: int, a: int, b: int, c: int, d: int, F: int,
            floor_unit: str, truncator_unit: str, TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The generated decision function of ``profile``, called as ``check`` calls it once it has
    read its arguments. The reading (types, limits, iterators) is pinned by
    ``tests/test_fail_closed.py`` and the reader fuzzers; keeping it out of the contracts keeps
    CrossHair's budget on the clauses (with it, the injected off-by-one went unfound at 2 s)."""
    return _checker._CHECKERS[profile](n, t, (a, b), (c, d), F, floor_unit, truncator_unit, TR, PC, SP)


def checker_strict_flat(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                        floor_unit: str, truncator_unit: str,
                        TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The generated checker, profile strict."""
    return _decide("strict", n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def reference_strict_flat(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                          floor_unit: str, truncator_unit: str,
                          TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The naive per-offset reference, profile strict."""
    return reference_strict(n, t, (a, b), (c, d), F, floor_unit, truncator_unit, TR, PC, SP)


def checker_seed_flat(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                      floor_unit: str, truncator_unit: str,
                      TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The generated checker, profile seed."""
    return _decide("seed", n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def reference_seed_flat(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                        floor_unit: str, truncator_unit: str,
                        TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The naive reference, profile seed."""
    return reference_seed(n, t, (a, b), (c, d), F, floor_unit, truncator_unit, TR, PC, SP)


# ---------------------------------------------------------------------------
# Contracted wrappers: the generated checker.

def checker_strict_gate(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                        floor_unit: str, truncator_unit: str,
                        TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Strict on any integers: ``well_formed`` gates every other clause.

    post: ("well_formed" in __return__.failed) == (not _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP))
    post: ("well_formed" not in __return__.failed) or __return__ == ("refuse", ("well_formed",), ())
    post: (__return__.decision == "allow") == (__return__.failed == ())
    post: _in_order(__return__.failed, STRICT_ORDER)
    """
    return checker_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def checker_strict_clauses(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                           floor_unit: str, truncator_unit: str,
                           TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Strict on well-formed cases: each clause against its endpoint definition.

    pre: _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    post: ("units_agree" in __return__.failed) == (floor_unit != truncator_unit)
    post: ("floor_in_input" in __return__.failed) == (max(0, n - F) < n and not (a <= max(0, n - F) and n <= b))
    post: ("floor_in_tail" in __return__.failed) == (max(0, n - F) < n and max(0, n - F) < t)
    post: ("tail_intact" in __return__.failed) == _meets(t, n, TR)
    post: ("seam_contiguous" in __return__.failed) == (t != 0 and d < t)
    post: ("summary_honest" in __return__.failed) == (c < d and (c < a or b < d or _meets(c, d, TR)))
    post: ("no_hole" in __return__.failed) == (__return__.holes != ())
    """
    return checker_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def _floor_out(n: int, t: int, F: int) -> bool:
    """The floor [max(0, n - F), n) is non-empty and starts before the tail [t, n)."""
    return max(0, n - F) < min(n, t)


def checker_partitioned_clauses(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                                floor_unit: str, truncator_unit: str,
                                TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Partitioned: strict without floor_in_input, the same gate, clauses and holes.

    post: ("well_formed" in __return__.failed) == (not _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP))
    post: "floor_in_input" not in __return__.failed
    post: (__return__.decision == "allow") == (__return__.failed == ())
    post: _in_order(__return__.failed, STRICT_ORDER)
    post: ("floor_in_tail" in __return__.failed) == ("well_formed" not in __return__.failed and _floor_out(n, t, F))
    post: __return__.holes == checker_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP).holes
    """
    return _decide("partitioned", n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def checker_strict_holes(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                         floor_unit: str, truncator_unit: str,
                         TR: Pairs, PC: Pairs, SP: Pairs) -> tuple[Pair, ...]:
    """Strict holes on well-formed cases: exactly the maximal uncovered runs of [0, n).

    pre: _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    post: _shaped(__return__, n)
    post: _ends_uncovered(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _maximal(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _complete(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _solid(__return__, n, t, a, b, c, d, TR, PC, SP)
    """
    dec = checker_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    return tuple(dec.holes)


def checker_seed(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                 floor_unit: str, truncator_unit: str,
                 TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Seed on any integers: the first failing check of brief section 2, never holes.

    post: __return__.holes == ()
    post: (__return__.failed == ("units_agree",)) == (floor_unit != truncator_unit)
    post: (__return__.failed == ("floor_reach",)) == (floor_unit == truncator_unit and a > t - F)
    post: (__return__.failed == ("truncation_clear",)) == (floor_unit == truncator_unit and a <= t - F and any(hi > t - F and lo < t for lo, hi in TR))
    post: len(__return__.failed) <= 1 and (__return__.decision == "allow") == (not __return__.failed)
    """  # noqa: E501
    return checker_seed_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


# ---------------------------------------------------------------------------
# Contracted wrappers: the naive per-offset reference (same conditions).

def reference_strict_gate(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                          floor_unit: str, truncator_unit: str,
                          TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Reference strict on any integers: ``well_formed`` gates every other clause.

    post: ("well_formed" in __return__.failed) == (not _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP))
    post: ("well_formed" not in __return__.failed) or __return__ == ("refuse", ("well_formed",), ())
    post: (__return__.decision == "allow") == (__return__.failed == ())
    post: _in_order(__return__.failed, STRICT_ORDER)
    """
    return reference_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def reference_strict_clauses(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                             floor_unit: str, truncator_unit: str,
                             TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Reference strict on well-formed cases: each clause against its endpoint definition.

    pre: _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    post: ("units_agree" in __return__.failed) == (floor_unit != truncator_unit)
    post: ("floor_in_input" in __return__.failed) == (max(0, n - F) < n and not (a <= max(0, n - F) and n <= b))
    post: ("floor_in_tail" in __return__.failed) == (max(0, n - F) < n and max(0, n - F) < t)
    post: ("tail_intact" in __return__.failed) == _meets(t, n, TR)
    post: ("seam_contiguous" in __return__.failed) == (t != 0 and d < t)
    post: ("summary_honest" in __return__.failed) == (c < d and (c < a or b < d or _meets(c, d, TR)))
    post: ("no_hole" in __return__.failed) == (__return__.holes != ())
    """
    return reference_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def reference_strict_holes(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                           floor_unit: str, truncator_unit: str,
                           TR: Pairs, PC: Pairs, SP: Pairs) -> tuple[Pair, ...]:
    """Reference strict holes on well-formed cases: exactly the maximal uncovered runs.

    pre: _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    post: _shaped(__return__, n)
    post: _ends_uncovered(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _maximal(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _complete(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _solid(__return__, n, t, a, b, c, d, TR, PC, SP)
    """
    dec = reference_strict_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    return tuple(dec.holes)


def reference_seed_decision(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                            floor_unit: str, truncator_unit: str,
                            TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """Reference seed on any integers: the first failing check, never holes.

    post: __return__.holes == ()
    post: (__return__.failed == ("units_agree",)) == (floor_unit != truncator_unit)
    post: (__return__.failed == ("floor_reach",)) == (floor_unit == truncator_unit and a > t - F)
    post: (__return__.failed == ("truncation_clear",)) == (floor_unit == truncator_unit and a <= t - F and any(hi > t - F and lo < t for lo, hi in TR))
    post: len(__return__.failed) <= 1 and (__return__.decision == "allow") == (not __return__.failed)
    """  # noqa: E501
    return reference_seed_flat(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


# ---------------------------------------------------------------------------
# Contracted wrappers: the ledger's decision over its merged sets (issue 16, item 7).
# The ledger is built by events from the flat case: one compaction per prior coverage pair
# (before any truncation, so each is whole), then the truncations, then the spills; its
# decision on the final compaction must meet the same endpoint definitions as the checker's.

def ledger_flat(profile: str, n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                floor_unit: str, truncator_unit: str, TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The ledger core's decision after recording the case as events (uncontracted)."""
    from tailguard.runtime.ledger_core import LedgerCore

    core = LedgerCore(F, floor_unit, truncator_unit)
    core.append(n)
    for lo, hi in PC:
        core.compact((lo, hi), (lo, hi))
    for lo, hi in TR:
        core.truncate(lo, hi)
    for lo, hi in SP:
        core.spill(lo, hi)
    return core.decide(profile, t, (a, b), (c, d))


def ledger_strict_clauses(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                          floor_unit: str, truncator_unit: str,
                          TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The ledger, strict, on well-formed cases: each clause against its endpoint definition.

    pre: _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    post: (__return__.decision == "allow") == (__return__.failed == ())
    post: ("units_agree" in __return__.failed) == (floor_unit != truncator_unit)
    post: ("floor_in_input" in __return__.failed) == (max(0, n - F) < n and not (a <= max(0, n - F) and n <= b))
    post: ("floor_in_tail" in __return__.failed) == (max(0, n - F) < n and max(0, n - F) < t)
    post: ("tail_intact" in __return__.failed) == _meets(t, n, TR)
    post: ("seam_contiguous" in __return__.failed) == (t != 0 and d < t)
    post: ("summary_honest" in __return__.failed) == (c < d and (c < a or b < d or _meets(c, d, TR)))
    post: ("no_hole" in __return__.failed) == (__return__.holes != ())
    """
    return ledger_flat("strict", n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)


def ledger_strict_holes(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                        floor_unit: str, truncator_unit: str,
                        TR: Pairs, PC: Pairs, SP: Pairs) -> tuple[Pair, ...]:
    """The ledger's strict holes on well-formed cases: exactly the maximal uncovered runs.

    pre: _wf(n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
    post: _shaped(__return__, n)
    post: _ends_uncovered(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _maximal(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _complete(__return__, n, t, a, b, c, d, TR, PC, SP)
    post: _solid(__return__, n, t, a, b, c, d, TR, PC, SP)
    """
    return tuple(ledger_flat("strict", n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP).holes)


def ledger_seed(n: int, t: int, a: int, b: int, c: int, d: int, F: int,
                floor_unit: str, truncator_unit: str,
                TR: Pairs, PC: Pairs, SP: Pairs) -> Decision:
    """The ledger, seed, on any integers: the first failing check of brief section 2.

    pre: n >= 0
    post: __return__.holes == ()
    post: (__return__.failed == ("units_agree",)) == (floor_unit != truncator_unit)
    post: (__return__.failed == ("floor_reach",)) == (floor_unit == truncator_unit and a > t - F)
    post: (__return__.failed == ("truncation_clear",)) == (floor_unit == truncator_unit and a <= t - F and any(hi > t - F and lo < t for lo, hi in TR))
    post: len(__return__.failed) <= 1 and (__return__.decision == "allow") == (not __return__.failed)
    """  # noqa: E501
    return ledger_flat("seed", n, t, a, b, c, d, F, floor_unit, truncator_unit, TR, PC, SP)
