# GENERATED FILE, do not edit. Source: spec/clauses.toml (spec 1.1.0, sha256 6ce9d103823e14f0); generator: tailguard.backends.python_render.
# Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale.
"""tailguard runtime checker, spec 1.1.0.

Standard library only: vendor this one file freely. Runs on Python 3.9 to 3.13.
Decide a compaction with ``check(profile, **case_fields)`` or
``check_case(mapping, profile)``; both return a ``Decision(decision, failed, holes)``.
Bad input raises ``CaseError`` naming the field; the guard never allows what it could
not read. Limits: integers of at most 1,000 digits, at most 100,000
intervals per case.
"""

from __future__ import annotations

import reprlib as _reprlib
from bisect import bisect_left as _bisect_left
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

__all__ = [
    'CLAUSES',
    'FIELDS',
    'MAX_INTERVALS',
    'MAX_INT_DIGITS',
    'PROFILES',
    'SPEC_SHA256',
    'SPEC_VERSION',
    'UNITS',
    'CaseError',
    'Decision',
    'check',
    'check_case',
    'explain',
    'read_case',
]

SPEC_VERSION = '1.1.0'
SPEC_SHA256 = '6ce9d103823e14f02b1a55996a68e476151f05d3d05b6dcc2a800ed6e68bb4eb'
UNITS = ('turns', 'messages', 'tokens')
PROFILES = ('seed', 'strict', 'partitioned')
CLAUSES: dict[str, tuple[str, ...]] = {
    'seed': ('units_agree', 'floor_reach', 'truncation_clear'),
    'strict': ('well_formed', 'units_agree', 'floor_in_input', 'floor_in_tail', 'tail_intact', 'seam_contiguous', 'summary_honest', 'no_hole'),
    'partitioned': ('well_formed', 'units_agree', 'floor_in_tail', 'tail_intact', 'seam_contiguous', 'summary_honest', 'no_hole'),
}
FIELDS = ('history_end', 'tail_start', 'summary_input', 'summary_covers', 'recovery_floor_span', 'floor_unit', 'truncator_unit', 'prior_truncations', 'prior_coverage', 'spills')
MAX_INT_DIGITS = 1000  # digits of one integer (sign not counted)
MAX_INTERVALS = 100000  # intervals in one case, all three lists together
_INT_BOUND = 10 ** MAX_INT_DIGITS
_INT_MIN = -_INT_BOUND


class Decision(NamedTuple):
    """``decision`` is "allow" or "refuse"; ``failed`` lists clause ids in spec order;
    ``holes`` are the maximal evicted ranges ``(lo, hi)`` (strict ``no_hole`` only)."""

    decision: str
    failed: tuple[str, ...]
    holes: tuple[tuple[int, int], ...]

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "failed": list(self.failed),
                "holes": [list(h) for h in self.holes]}


_ALLOW = Decision("allow", (), ())  # every allow (a tuple: immutable, so one is shared)
_new = tuple.__new__  # _new(Decision, (decision, failed, holes)): Decision(...) without its Python call


class CaseError(ValueError):
    """Unusable input: ``field`` names where, ``reason`` says why."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")


def _merge_run(items: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """The union of ``items`` as a normal list, in one pass that holds the current run in ``run_lo``/``run_hi``; None when some non-empty pair starts before the current run (the pairs are not sorted: sort them and run again)."""
    out: list[tuple[int, int]] = []
    ordered = True
    started = False
    run_lo = 0
    run_hi = 0
    for lo, hi in items:
        if lo < hi:
            if not started:
                started = True
                run_lo = lo
                run_hi = hi
            elif lo < run_lo:
                ordered = False
                break
            elif lo <= run_hi:
                if hi > run_hi:
                    run_hi = hi
            else:
                out.append((run_lo, run_hi))
                run_lo = lo
                run_hi = hi
    if ordered and started:
        out.append((run_lo, run_hi))
    return out if ordered else None


def _gaps(start: int, stop: int, items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[start, stop)`` minus the normal list ``items``, as a normal list, in one pass that stops at the first pair starting at or after ``stop``."""
    out: list[tuple[int, int]] = []
    cur = start
    for lo, hi in items:
        if lo >= stop:
            break
        if lo > cur:
            out.append((cur, lo))
        if hi > cur:
            cur = hi
    if cur < stop:
        out.append((cur, stop))
    return out


def _merge_run_bounded(low: int, high: int, items: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """``_merge_run(items)`` in the same one pass that checks every item is a pair of two ``int`` with ``low <= lo <= hi <= high`` (the gate's bound and the union in one traversal); None when some item is not, or when the pairs are not sorted (then ``_merged_bounded`` tells the two apart)."""
    out: list[tuple[int, int]] = []
    ordered = True
    started = False
    run_lo = 0
    run_hi = 0
    type_, tuple_, int_, len_ = type, tuple, int, len  # the type tests' builtins as locals
    for item in items:
        if type_(item) is tuple_ and len_(item) == 2:
            lo, hi = item
            if type_(lo) is int_ and type_(hi) is int_:
                if lo < low or hi < lo or hi > high:
                    ordered = False
                    break
                elif lo < hi:
                    if not started:
                        started = True
                        run_lo = lo
                        run_hi = hi
                    elif lo < run_lo:
                        ordered = False
                        break
                    elif lo <= run_hi:
                        if hi > run_hi:
                            run_hi = hi
                    else:
                        out.append((run_lo, run_hi))
                        run_lo = lo
                        run_hi = hi
                continue
        ordered = False
        break
    if ordered and started:
        out.append((run_lo, run_hi))
    return out if ordered else None


def _merged(items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of any pairs as a normal list: one pass when they come sorted (as a ledger or
    an adapter writes them), else a sort and the same pass."""
    if not items:  # no pairs: nothing to merge (a case without prior compactions)
        return []
    out = _merge_run(items)
    if out is None:
        out = _merge_run(sorted(items))
        assert out is not None  # a sorted list always merges in one pass (theorem T18)
    return out


def _merged_runs(items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of several lists joined (each usually sorted): one sort, linear on sorted
    runs, and one pass."""
    out = _merge_run(sorted(items))
    assert out is not None  # a sorted list always merges in one pass (theorem T18)
    return out


def _gaps_from(start: int, stop: int, items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``_gaps(start, stop, items)`` for a normal list ``items``, the scan begun by one bisect
    at the last pair that starts before ``start`` (every pair before that one ends before it)."""
    j = _bisect_left(items, (start,)) - 1
    return _gaps(start, stop, items[j:] if j > 0 else items)


def _meets(start: int, stop: int, items: list[tuple[int, int]]) -> bool:
    """Whether ``[start, stop)`` shares an offset with the normal list ``items``: only the last
    pair that starts before ``stop`` can, and it is found by one bisect."""
    j = _bisect_left(items, (stop,)) - 1
    return start < stop and j >= 0 and items[j][1] > start


def _merged_bounded(items: list[tuple[int, int]], low: int, high: int) -> list[tuple[int, int]] | None:
    """``_merged(items)`` when ``_bounded(items, low, high)``, else None: the bound and the union
    in one pass when the pairs come sorted; else (rare) the bound alone, then a sort and a pass."""
    if not items:  # no pairs: bounded, nothing to merge
        return []
    out = _merge_run_bounded(low, high, items)
    if out is None and _bounded(items, low, high):  # not sorted (or not bounded: then None)
        out = _merge_run(sorted(items))
        assert out is not None  # a sorted list always merges in one pass (theorem T18)
    return out


def _bounded(items: list[tuple[int, int]], low: int, high: int) -> bool:
    """Every item of ``items`` is a pair ``(lo, hi)`` with ``low <= lo <= hi <= high``: a tuple
    of two ``int`` (so ``check`` may hand it a list it has not read: see ``_GATES``). One loop
    with an early exit (on CPython 3.11 faster than passes of builtins at every length)."""
    for item in items:
        if type(item) is tuple and len(item) == 2:
            lo, hi = item
            if type(lo) is int and type(hi) is int and low <= lo <= hi <= high:
                continue
        return False
    return True


def _fmt_set(s: list[tuple[int, int]]) -> str:
    """Human form: ``[0, 8), [9, 12)``; ``nothing`` when empty."""
    return ", ".join(f"[{lo}, {hi})" for lo, hi in s) if s else "nothing"


def _fmt_pair(pair: tuple[int, int] | None) -> str:
    return "an interval" if pair is None else f"[{pair[0]}, {pair[1]})"



def _check_seed(v_n: int, v_t: int, v_I: tuple[int, int], v_C: tuple[int, int], v_F: int, v_floor_unit: str, v_truncator_unit: str, v_TR: list[tuple[int, int]], v_PC: list[tuple[int, int]], v_SP: list[tuple[int, int]]) -> Decision:
    """Profile 'seed': The seed's assert_compaction_safe, transcribed bit for bit on any integers, quirks included."""
    v_a = v_I[0]  # a = I.lo
    failed: list[str] = []
    holes: tuple[tuple[int, int], ...] = ()
    if not (v_floor_unit == v_truncator_unit):  # units_agree: floor_unit == truncator_unit
        return Decision("refuse", ('units_agree',), ())
    if not (v_a <= (v_t - v_F)):  # floor_reach: a <= t - F
        return Decision("refuse", ('floor_reach',), ())
    if not all((not ((v_r[1] > (v_t - v_F)) and (v_r[0] < v_t))) for v_r in v_TR):  # truncation_clear: all(r in TR: not (r.hi > t - F and r.lo < t))
        return Decision("refuse", ('truncation_clear',), ())
    return _new(Decision, ("refuse", tuple(failed), holes)) if failed else _ALLOW


def _explain_seed(v_n: int, v_t: int, v_I: tuple[int, int], v_C: tuple[int, int], v_F: int, v_floor_unit: str, v_truncator_unit: str, v_TR: list[tuple[int, int]], v_PC: list[tuple[int, int]], v_SP: list[tuple[int, int]], failed: tuple[str, ...], holes: tuple[tuple[int, int], ...]) -> list[str]:
    out: list[str] = []
    v_a = v_I[0]
    if 'units_agree' in failed:
        out.append('units_agree' + ': ' + 'recovery floor unit {p0} cannot be honored by truncator unit {p1}; guarantee is unenforceable'.format(p0=repr(v_floor_unit), p1=repr(v_truncator_unit)))
    if 'floor_reach' in failed:
        out.append('floor_reach' + ': ' + 'summarizer input starts at {p0}, but the recovery floor begins at {p1}; floor is not a subset of input'.format(p0=str(v_a), p1=str((v_t - v_F))))
    if 'truncation_clear' in failed:
        out.append('truncation_clear' + ': ' + 'prior truncation {p0} intersects recovery floor [{p1}, {p2}); evidence already evicted'.format(p0=_fmt_pair(next((v_r for v_r in v_TR if not (not ((v_r[1] > (v_t - v_F)) and (v_r[0] < v_t)))), None)), p1=str((v_t - v_F)), p2=str(v_t)))
    return out


def _check_strict(v_n: int, v_t: int, v_I: tuple[int, int], v_C: tuple[int, int], v_F: int, v_floor_unit: str, v_truncator_unit: str, v_TR: list[tuple[int, int]], v_PC: list[tuple[int, int]], v_SP: list[tuple[int, int]]) -> Decision:
    """Profile 'strict': The recovery contract: allow iff every offset of [0, n) stays recoverable and the floor is in both input and tail."""
    v_TRU = _merged_bounded(v_TR, 0, v_n)  # union(TR), None unless every pair is in [0, n]
    u_PC = _merged_bounded(v_PC, 0, v_n)  # union(PC), None unless every pair is in [0, n]
    u_SP = _merged_bounded(v_SP, 0, v_n)  # union(SP), None unless every pair is in [0, n]
    if not ((v_n >= 0) and (v_F >= 0) and (0 <= v_t <= v_n) and ((0 <= v_I[0] <= v_I[1] <= v_n) and (0 <= v_C[0] <= v_C[1] <= v_n) and (v_TRU is not None) and (u_PC is not None) and (u_SP is not None)) and (v_floor_unit in UNITS) and (v_truncator_unit in UNITS)):
        return Decision("refuse", ('well_formed',), ())
    v_d = v_C[1]  # d = C.hi
    v_T = (v_t, v_n)  # T = [t, n)
    v_Phi = (max(0, (v_n - v_F)), v_n)  # Phi = [max(0, n - F), n)
    v_covered = _merged_runs(u_PC + u_SP + _gaps_from(max(v_C[0], v_I[0]), min(v_C[1], v_I[1]), v_TRU) + _gaps_from(v_T[0], v_T[1], v_TRU))  # covered = union(PC) | union(SP) | ((C & I) \ TRU) | (T \ TRU)
    failed: list[str] = []
    holes: tuple[tuple[int, int], ...] = ()
    if not (v_floor_unit == v_truncator_unit):  # units_agree: floor_unit == truncator_unit
        failed.append('units_agree')
    if not (v_Phi[0] >= v_Phi[1] or (v_I[0] <= v_Phi[0] and v_Phi[1] <= v_I[1])):  # floor_in_input: Phi subset I
        failed.append('floor_in_input')
    if not (v_Phi[0] >= v_Phi[1] or (v_T[0] <= v_Phi[0] and v_Phi[1] <= v_T[1])):  # floor_in_tail: Phi subset T
        failed.append('floor_in_tail')
    if not (not _meets(v_T[0], v_T[1], v_TRU)):  # tail_intact: all(r in TR: empty(r & T))
        failed.append('tail_intact')
    if not ((v_t == 0) or (v_d >= v_t)):  # seam_contiguous: t == 0 or d >= t
        failed.append('seam_contiguous')
    if not (v_C[0] >= v_C[1] or (v_I[0] <= v_C[0] and v_C[1] <= v_I[1] and not _meets(v_C[0], v_C[1], v_TRU))):  # summary_honest: C subset I \ TRU
        failed.append('summary_honest')
    h_no_hole = _gaps(0, v_n, v_covered)  # holes: [0, n) \ covered
    if h_no_hole:  # no_hole: [0, n) subset covered
        failed.append('no_hole')
        holes = tuple(h_no_hole)
    return _new(Decision, ("refuse", tuple(failed), holes)) if failed else _ALLOW


def _explain_strict(v_n: int, v_t: int, v_I: tuple[int, int], v_C: tuple[int, int], v_F: int, v_floor_unit: str, v_truncator_unit: str, v_TR: list[tuple[int, int]], v_PC: list[tuple[int, int]], v_SP: list[tuple[int, int]], failed: tuple[str, ...], holes: tuple[tuple[int, int], ...]) -> list[str]:
    out: list[str] = []
    v_d = v_C[1]
    v_T = (v_t, v_n)
    v_Phi = (max(0, (v_n - v_F)), v_n)
    v_TRU = _merged(v_TR)
    if 'well_formed' in failed:
        out.append('well_formed' + ': ' + 'the case is inconsistent ({p0}); the guard fails closed'.format(p0='; '.join(text + ' is false' for ok, text in (((v_n >= 0), 'n >= 0'), ((v_F >= 0), 'F >= 0'), ((0 <= v_t <= v_n), '0 <= t <= n'), (((0 <= v_I[0] <= v_I[1] <= v_n) and (0 <= v_C[0] <= v_C[1] <= v_n) and (not v_TR or _bounded(v_TR, 0, v_n)) and (not v_PC or _bounded(v_PC, 0, v_n)) and (not v_SP or _bounded(v_SP, 0, v_n))), 'all(r in I, C, TR, PC, SP: 0 <= r.lo <= r.hi <= n)'), ((v_floor_unit in UNITS), 'known(floor_unit)'), ((v_truncator_unit in UNITS), 'known(truncator_unit)'),) if not ok)))
    if 'units_agree' in failed:
        out.append('units_agree' + ': ' + 'recovery floor unit {p0} cannot be honored by truncator unit {p1}; the floor is unenforceable'.format(p0=repr(v_floor_unit), p1=repr(v_truncator_unit)))
    if 'floor_in_input' in failed:
        out.append('floor_in_input' + ': ' + 'recovery floor {p0} is not inside summarizer input {p1}'.format(p0=_fmt_pair(v_Phi), p1=_fmt_pair(v_I)))
    if 'floor_in_tail' in failed:
        out.append('floor_in_tail' + ': ' + 'recovery floor {p0} is not inside retained tail {p1}'.format(p0=_fmt_pair(v_Phi), p1=_fmt_pair(v_T)))
    if 'tail_intact' in failed:
        out.append('tail_intact' + ': ' + 'prior truncation {p0} intersects retained tail {p1}; the tail is not verbatim'.format(p0=_fmt_pair(next((v_r for v_r in v_TR if not (v_r[0] >= v_r[1] or v_T[0] >= v_T[1] or v_r[0] >= v_T[1] or v_T[0] >= v_r[1])), None)), p1=_fmt_pair(v_T)))
    if 'seam_contiguous' in failed:
        out.append('seam_contiguous' + ': ' + 'summary coverage ends at {p0} but the tail starts at {p1}; the seam has a gap'.format(p0=str(v_d), p1=str(v_t)))
    if 'summary_honest' in failed:
        out.append('summary_honest' + ': ' + 'summary coverage {p0} claims offsets {p1} it never saw'.format(p0=_fmt_pair(v_C), p1=_fmt_set(_gaps_from(v_C[0], v_C[1], _gaps_from(v_I[0], v_I[1], v_TRU)))))
    if 'no_hole' in failed:
        out.append('no_hole' + ': ' + 'offsets {p0} were evicted and are in no summary, spill or tail'.format(p0=_fmt_set(list(holes))))
    return out


def _check_partitioned(v_n: int, v_t: int, v_I: tuple[int, int], v_C: tuple[int, int], v_F: int, v_floor_unit: str, v_truncator_unit: str, v_TR: list[tuple[int, int]], v_PC: list[tuple[int, int]], v_SP: list[tuple[int, int]]) -> Decision:
    """Profile 'partitioned': The recovery contract for pipelines that summarize the candidates and keep the tail verbatim: strict without floor_in_input."""
    v_TRU = _merged_bounded(v_TR, 0, v_n)  # union(TR), None unless every pair is in [0, n]
    u_PC = _merged_bounded(v_PC, 0, v_n)  # union(PC), None unless every pair is in [0, n]
    u_SP = _merged_bounded(v_SP, 0, v_n)  # union(SP), None unless every pair is in [0, n]
    if not ((v_n >= 0) and (v_F >= 0) and (0 <= v_t <= v_n) and ((0 <= v_I[0] <= v_I[1] <= v_n) and (0 <= v_C[0] <= v_C[1] <= v_n) and (v_TRU is not None) and (u_PC is not None) and (u_SP is not None)) and (v_floor_unit in UNITS) and (v_truncator_unit in UNITS)):
        return Decision("refuse", ('well_formed',), ())
    v_d = v_C[1]  # d = C.hi
    v_T = (v_t, v_n)  # T = [t, n)
    v_Phi = (max(0, (v_n - v_F)), v_n)  # Phi = [max(0, n - F), n)
    v_covered = _merged_runs(u_PC + u_SP + _gaps_from(max(v_C[0], v_I[0]), min(v_C[1], v_I[1]), v_TRU) + _gaps_from(v_T[0], v_T[1], v_TRU))  # covered = union(PC) | union(SP) | ((C & I) \ TRU) | (T \ TRU)
    failed: list[str] = []
    holes: tuple[tuple[int, int], ...] = ()
    if not (v_floor_unit == v_truncator_unit):  # units_agree: floor_unit == truncator_unit
        failed.append('units_agree')
    if not (v_Phi[0] >= v_Phi[1] or (v_T[0] <= v_Phi[0] and v_Phi[1] <= v_T[1])):  # floor_in_tail: Phi subset T
        failed.append('floor_in_tail')
    if not (not _meets(v_T[0], v_T[1], v_TRU)):  # tail_intact: all(r in TR: empty(r & T))
        failed.append('tail_intact')
    if not ((v_t == 0) or (v_d >= v_t)):  # seam_contiguous: t == 0 or d >= t
        failed.append('seam_contiguous')
    if not (v_C[0] >= v_C[1] or (v_I[0] <= v_C[0] and v_C[1] <= v_I[1] and not _meets(v_C[0], v_C[1], v_TRU))):  # summary_honest: C subset I \ TRU
        failed.append('summary_honest')
    h_no_hole = _gaps(0, v_n, v_covered)  # holes: [0, n) \ covered
    if h_no_hole:  # no_hole: [0, n) subset covered
        failed.append('no_hole')
        holes = tuple(h_no_hole)
    return _new(Decision, ("refuse", tuple(failed), holes)) if failed else _ALLOW


def _explain_partitioned(v_n: int, v_t: int, v_I: tuple[int, int], v_C: tuple[int, int], v_F: int, v_floor_unit: str, v_truncator_unit: str, v_TR: list[tuple[int, int]], v_PC: list[tuple[int, int]], v_SP: list[tuple[int, int]], failed: tuple[str, ...], holes: tuple[tuple[int, int], ...]) -> list[str]:
    out: list[str] = []
    v_d = v_C[1]
    v_T = (v_t, v_n)
    v_Phi = (max(0, (v_n - v_F)), v_n)
    v_TRU = _merged(v_TR)
    if 'well_formed' in failed:
        out.append('well_formed' + ': ' + 'the case is inconsistent ({p0}); the guard fails closed'.format(p0='; '.join(text + ' is false' for ok, text in (((v_n >= 0), 'n >= 0'), ((v_F >= 0), 'F >= 0'), ((0 <= v_t <= v_n), '0 <= t <= n'), (((0 <= v_I[0] <= v_I[1] <= v_n) and (0 <= v_C[0] <= v_C[1] <= v_n) and (not v_TR or _bounded(v_TR, 0, v_n)) and (not v_PC or _bounded(v_PC, 0, v_n)) and (not v_SP or _bounded(v_SP, 0, v_n))), 'all(r in I, C, TR, PC, SP: 0 <= r.lo <= r.hi <= n)'), ((v_floor_unit in UNITS), 'known(floor_unit)'), ((v_truncator_unit in UNITS), 'known(truncator_unit)'),) if not ok)))
    if 'units_agree' in failed:
        out.append('units_agree' + ': ' + 'recovery floor unit {p0} cannot be honored by truncator unit {p1}; the floor is unenforceable'.format(p0=repr(v_floor_unit), p1=repr(v_truncator_unit)))
    if 'floor_in_tail' in failed:
        out.append('floor_in_tail' + ': ' + 'recovery floor {p0} is not inside retained tail {p1}'.format(p0=_fmt_pair(v_Phi), p1=_fmt_pair(v_T)))
    if 'tail_intact' in failed:
        out.append('tail_intact' + ': ' + 'prior truncation {p0} intersects retained tail {p1}; the tail is not verbatim'.format(p0=_fmt_pair(next((v_r for v_r in v_TR if not (v_r[0] >= v_r[1] or v_T[0] >= v_T[1] or v_r[0] >= v_T[1] or v_T[0] >= v_r[1])), None)), p1=_fmt_pair(v_T)))
    if 'seam_contiguous' in failed:
        out.append('seam_contiguous' + ': ' + 'summary coverage ends at {p0} but the tail starts at {p1}; the seam has a gap'.format(p0=str(v_d), p1=str(v_t)))
    if 'summary_honest' in failed:
        out.append('summary_honest' + ': ' + 'summary coverage {p0} claims offsets {p1} it never saw'.format(p0=_fmt_pair(v_C), p1=_fmt_set(_gaps_from(v_C[0], v_C[1], _gaps_from(v_I[0], v_I[1], v_TRU)))))
    if 'no_hole' in failed:
        out.append('no_hole' + ': ' + 'offsets {p0} were evicted and are in no summary, spill or tail'.format(p0=_fmt_set(list(holes))))
    return out


_CHECKERS = {'seed': _check_seed, 'strict': _check_strict, 'partitioned': _check_partitioned}
_EXPLAINERS = {'seed': _explain_seed, 'strict': _explain_strict, 'partitioned': _explain_partitioned}


def _profile(profile: object) -> str:
    if not isinstance(profile, str) or profile not in _CHECKERS:
        raise CaseError("profile", f"unknown profile {_show(profile)}; known: {sorted(_CHECKERS)}")
    return profile


def check(profile: str, *, history_end: int, tail_start: int, summary_input: tuple[int, int], summary_covers: tuple[int, int], recovery_floor_span: int, floor_unit: str, truncator_unit: str, prior_truncations: Iterable[tuple[int, int]] = (), prior_coverage: Iterable[tuple[int, int]] = (), spills: Iterable[tuple[int, int]] = ()) -> Decision:
    """Decide one compaction.

    Every argument is read first, and once: an interval list may be any iterable of
    ``(lo, hi)`` pairs (a list, a tuple, a generator, ``map(tuple, ...)``), consumed exactly
    once; the three lists default to empty. Anything else raises ``CaseError`` naming the
    field: a value that is not an integer (a float, ``inf``, a bool), an interval that is not
    a pair, a unit that is not a string, an integer of more than ``MAX_INT_DIGITS`` digits,
    more than ``MAX_INTERVALS`` intervals in all. Never a silent allow.
    """
    decide = _CHECKERS.get(profile) if type(profile) is str else None  # the common case
    if decide is None:
        decide = _CHECKERS[_profile(profile)]
    v_history_end = history_end if type(history_end) is int and _INT_MIN < history_end < _INT_BOUND else _int(history_end, 'history_end')
    v_tail_start = tail_start if type(tail_start) is int and _INT_MIN < tail_start < _INT_BOUND else _int(tail_start, 'tail_start')
    v_summary_input = _pair(summary_input, 'summary_input')
    v_summary_covers = _pair(summary_covers, 'summary_covers')
    v_recovery_floor_span = recovery_floor_span if type(recovery_floor_span) is int and _INT_MIN < recovery_floor_span < _INT_BOUND else _int(recovery_floor_span, 'recovery_floor_span')
    v_floor_unit = floor_unit if type(floor_unit) is str else _unit(floor_unit, 'floor_unit')
    v_truncator_unit = truncator_unit if type(truncator_unit) is str else _unit(truncator_unit, 'truncator_unit')
    gate = _GATES.get(profile)  # the gate types and bounds every list: see _bounded
    if gate is not None and (type(prior_truncations) is list or type(prior_truncations) is tuple) and (type(prior_coverage) is list or type(prior_coverage) is tuple) and (type(spills) is list or type(spills) is tuple) and len(prior_truncations) + len(prior_coverage) + len(spills) <= MAX_INTERVALS:
        decision = decide(v_history_end, v_tail_start, v_summary_input, v_summary_covers, v_recovery_floor_span, v_floor_unit, v_truncator_unit, prior_truncations, prior_coverage, spills)  # type: ignore[arg-type]
        if decision.failed != (gate,):  # the gate held: every list is pairs of int in range
            return decision
    v_prior_truncations = [] if (type(prior_truncations) is tuple or type(prior_truncations) is list) and not prior_truncations else _pairs(prior_truncations, 'prior_truncations', MAX_INTERVALS)
    v_prior_coverage = [] if (type(prior_coverage) is tuple or type(prior_coverage) is list) and not prior_coverage else _pairs(prior_coverage, 'prior_coverage', MAX_INTERVALS - len(v_prior_truncations))
    v_spills = [] if (type(spills) is tuple or type(spills) is list) and not spills else _pairs(spills, 'spills', MAX_INTERVALS - len(v_prior_truncations) - len(v_prior_coverage))
    return decide(v_history_end, v_tail_start, v_summary_input, v_summary_covers, v_recovery_floor_span, v_floor_unit, v_truncator_unit, v_prior_truncations, v_prior_coverage, v_spills)


def explain(profile: str, decision: Decision, *, history_end: int, tail_start: int, summary_input: tuple[int, int], summary_covers: tuple[int, int], recovery_floor_span: int, floor_unit: str, truncator_unit: str, prior_truncations: Iterable[tuple[int, int]] = (), prior_coverage: Iterable[tuple[int, int]] = (), spills: Iterable[tuple[int, int]] = ()) -> list[str]:
    """One sentence per failed clause, ``"<clause id>: <what is wrong>"``, in spec order.

    Give it the same values as ``check`` (an iterator ``check`` consumed is empty here).
    """
    return _EXPLAINERS[_profile(profile)](*_read(history_end, tail_start, summary_input, summary_covers, recovery_floor_span, floor_unit, truncator_unit, prior_truncations, prior_coverage, spills), decision.failed, decision.holes)


def _show(value: object) -> str:
    """A short, always printable picture of a rejected value."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN < value < _INT_BOUND:
        return f"<an integer of more than {MAX_INT_DIGITS:,} digits>"
    try:
        text = _reprlib.repr(value)
    except Exception:  # a hostile __repr__: name the type only
        text = f"<{type(value).__name__} object>"
    return text


def _int(value: object, field: str) -> int:
    if type(value) is int and _INT_MIN < value < _INT_BOUND:
        return value
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CaseError(field, f"expected an integer, got {type(value).__name__} {_show(value)}")
        value = int(value)  # an int subclass: its plain value
    if not _INT_MIN < value < _INT_BOUND:
        raise CaseError(field, f"an integer of more than {MAX_INT_DIGITS:,} digits (the limit)")
    return value


def _pair(value: object, field: str) -> tuple[int, int]:
    if (type(value) is tuple or type(value) is list) and len(value) == 2:  # the common case
        lo, hi = value
        if type(lo) is int and type(hi) is int and _INT_MIN < lo < _INT_BOUND and _INT_MIN < hi < _INT_BOUND:
            return (lo, hi)
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise CaseError(field, f"expected a pair [lo, hi], got {_show(value)}")
    return (_int(value[0], f"{field}[0]"), _int(value[1], f"{field}[1]"))


def _plain_pairs(items: list[Any] | tuple[Any, ...]) -> list[tuple[int, int]] | None:
    """The items as a list of tuples when every item is a tuple or list of two ``int`` of at
    most ``MAX_INT_DIGITS`` digits, checked column by column by builtins (the common case);
    None otherwise (the item-by-item path then reads them and names the bad one)."""
    kinds = set(map(type, items))
    if not kinds <= _PAIR_TYPES or set(map(len, items)) != {2}:
        return None
    los, his = zip(*items)  # noqa: B905 - pairs, checked above; zip(strict=) needs 3.10
    if not (set(map(type, los)) == _INT_TYPE == set(map(type, his))
            and _INT_MIN < min(los) and max(los) < _INT_BOUND
            and _INT_MIN < min(his) and max(his) < _INT_BOUND):
        return None
    return list(items) if kinds == _TUPLE_TYPE else list(map(tuple, items))


_GATES = {'strict': 'well_formed', 'partitioned': 'well_formed'}  # profile: its gate, when the gate bounds every pair of every list
_PAIR_TYPES = {tuple, list}
_INT_TYPE = {int}
_TUPLE_TYPE = {tuple}
_COLUMNS = 32  # from this many pairs on, checking by columns is faster than pair by pair


def _pairs(value: object, field: str, room: int) -> list[tuple[int, int]]:
    """Materialize an iterable of pairs once; at most ``room`` of them."""
    if type(value) is list or type(value) is tuple:
        if not value:
            return []
        if _COLUMNS <= len(value) <= room:  # the common case, long: read column by column
            plain = _plain_pairs(value)
            if plain is not None:
                return plain
        elif len(value) <= room:  # the common case, short: pair by pair, without the type tests below
            short: list[tuple[int, int]] = []
            for item in value:
                if (type(item) is tuple or type(item) is list) and len(item) == 2:
                    lo, hi = item
                    if (type(lo) is int and type(hi) is int
                            and _INT_MIN < lo < _INT_BOUND and _INT_MIN < hi < _INT_BOUND):
                        short.append((lo, hi))
                        continue
                break  # a bad item: the path below reads the list again and names it
            else:
                return short
    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
        raise CaseError(field, f"expected a list of [lo, hi] pairs, got {type(value).__name__}")
    out: list[tuple[int, int]] = []
    for i, item in enumerate(value):
        if i >= room:
            raise CaseError(field, f"more than {MAX_INTERVALS:,} intervals in the case (the limit; "
                                   "prior_truncations, prior_coverage and spills together)")
        if (type(item) is tuple or type(item) is list) and len(item) == 2:  # the common case, inline
            lo, hi = item
            if (type(lo) is int and type(hi) is int
                    and _INT_MIN < lo < _INT_BOUND and _INT_MIN < hi < _INT_BOUND):
                out.append((lo, hi))
                continue
        out.append(_pair(item, f"{field}[{i}]"))
    return out


def _unit(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise CaseError(field, f"expected a unit name (string), got {type(value).__name__} {_show(value)}")
    return str(value)


def _read(history_end: object, tail_start: object, summary_input: object, summary_covers: object, recovery_floor_span: object, floor_unit: object, truncator_unit: object, prior_truncations: object, prior_coverage: object, spills: object) -> tuple[int, int, tuple[int, int], tuple[int, int], int, str, str, list[tuple[int, int]], list[tuple[int, int]], list[tuple[int, int]]]:
    """Every field read and typed, in ``FIELDS`` order (the first bad one raises)."""
    v_history_end = _int(history_end, 'history_end')
    v_tail_start = _int(tail_start, 'tail_start')
    v_summary_input = _pair(summary_input, 'summary_input')
    v_summary_covers = _pair(summary_covers, 'summary_covers')
    v_recovery_floor_span = _int(recovery_floor_span, 'recovery_floor_span')
    v_floor_unit = _unit(floor_unit, 'floor_unit')
    v_truncator_unit = _unit(truncator_unit, 'truncator_unit')
    v_prior_truncations = [] if (type(prior_truncations) is tuple or type(prior_truncations) is list) and not prior_truncations else _pairs(prior_truncations, 'prior_truncations', MAX_INTERVALS)
    v_prior_coverage = [] if (type(prior_coverage) is tuple or type(prior_coverage) is list) and not prior_coverage else _pairs(prior_coverage, 'prior_coverage', MAX_INTERVALS - len(v_prior_truncations))
    v_spills = [] if (type(spills) is tuple or type(spills) is list) and not spills else _pairs(spills, 'spills', MAX_INTERVALS - len(v_prior_truncations) - len(v_prior_coverage))
    return (v_history_end, v_tail_start, v_summary_input, v_summary_covers, v_recovery_floor_span, v_floor_unit, v_truncator_unit, v_prior_truncations, v_prior_coverage, v_spills)


_READERS: dict[str, Callable[[object, str], object]] = {"int": _int, "interval": _pair, "unit": _unit}
_KINDS = {'history_end': 'int', 'tail_start': 'int', 'summary_input': 'interval', 'summary_covers': 'interval', 'recovery_floor_span': 'int', 'floor_unit': 'unit', 'truncator_unit': 'unit', 'prior_truncations': 'intervals', 'prior_coverage': 'intervals', 'spills': 'intervals'}


def read_case(case: Mapping[str, object]) -> dict[str, Any]:
    """Check the types of every case field; raise ``CaseError`` naming the first bad one.

    Every field is required (the JSON format). Extra keys are ignored. Integers that are
    inconsistent (negative, ``lo > hi``, past the history end) are not input errors: the
    strict profile refuses them (``well_formed``).
    """
    if not isinstance(case, Mapping):
        raise CaseError("case", f"expected a JSON object, got {type(case).__name__}")
    values: list[object] = []
    room = MAX_INTERVALS
    for field in FIELDS:
        if field not in case:
            raise CaseError(field, "missing field")
        kind = _KINDS[field]
        if kind == "intervals":
            pairs = _pairs(case[field], field, room)
            room -= len(pairs)
            values.append(pairs)
        else:
            values.append(_READERS[kind](case[field], field))
    return dict(zip(FIELDS, values))  # noqa: B905 - equal lengths; zip(strict=) needs 3.10


def check_case(case: Mapping[str, object], profile: str = "strict") -> Decision:
    """Read and decide one case given as a mapping of the case fields (the JSON format)."""
    fields = read_case(case)
    return _CHECKERS[_profile(profile)](*fields.values())
