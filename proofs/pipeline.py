"""Proofs behind check-config's unbounded argument (``docs/check-config.md``).

``safe`` rests on a per-policy certificate re-checked by z3 (initiation, consecution,
safety: induction on the number of appends) over the window abstraction of
``tailguard.pipeline.encode``. The abstraction's reductions are proved here for
symbolic parameters: the floor check a compaction needs (P1 turns, P2 tokens, P5
messages), the window that makes keep-in-tokens tails exact (P3), a closed-form
sufficient condition for the repaired seed shape, proved inductive for every parameter
value (P4), and (spec 1.1) that a failed spill write is never better than a successful
one (P6), on which the encoding of ``halt`` and ``proceed`` spills rests.
Each theorem takes the encoding under test as a parameter so a test can break it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from tailguard.backends.z3_eval import check_sat
from tailguard.pipeline.encode import floor_lost, spill_effect
from tailguard.tooling.theorems import Result, theorem

FloorCheck = Callable[[Any, Any, Any, str], Any]


def _prove(negation: Any, hyps: Any, names: list[Any]) -> Result:
    """``proved`` when ``hyps ∧ negation`` is unsat and ``hyps`` alone is sat (by the solver
    ``tailguard prove --solver`` chose)."""
    answer, _, detail = check_sat([hyps], want_model=False)
    if answer == "unsat":
        return Result("counterexample", detail="vacuous: the hypotheses are unsatisfiable")
    if answer != "sat":
        return Result("disagreement" if answer == "disagreement" else "unknown",
                      detail=f"hypotheses undecided: {detail}")
    answer, m, detail = check_sat([hyps, negation])
    if answer == "unsat":
        return Result("proved", detail="negation unsat; hypotheses sat")
    if answer == "sat":
        return Result("counterexample", model={str(v): m.eval(v, model_completion=True).as_long()
                                               for v in names})
    return Result("disagreement" if answer == "disagreement" else "unknown", detail=detail)


def _prove_iff(lost: Callable[[Any], Any], var: Any, witness: Any, check: Any, hyps: Any,
               names: list[Any]) -> Result:
    """``(∃ v. lost(v)) ⟺ check`` without quantifiers: ``lost(v) ⇒ check`` for a free
    ``v``, and ``check ⇒ lost(witness)`` (the newest turn out of the context)."""
    forward = _prove(z3.And(lost(var), z3.Not(check)), hyps, [*names, var])
    if forward.status != "proved":
        return forward
    return _prove(z3.And(check, z3.Not(lost(witness))), hyps, names)


@theorem(id="P1", title="turn floor at a compaction",
         statement="After a clean compaction that summarizes at least one turn, some turn of "
                   "the newest F (not pinned) is out of the context iff the tail holds < F turns.")
def p1_floor_turns(check: FloorCheck = floor_lost) -> Result:
    n, kf, s0, kt, f, j = z3.Ints("n keep_first tail0 tail_turns F j")
    hyps = z3.And(kf >= 0, kf <= s0, s0 < n - kt, kt >= 0, f >= 0)
    window_lo = z3.If(n - f > 0, n - f, 0)

    def lost(v: Any) -> Any:
        return z3.And(window_lo <= v, v < n, v >= kf, v < n - kt)

    return _prove_iff(lost, j, n - kt - 1, check(kt, z3.IntVal(0), f, "turns"), hyps,
                      [n, kf, s0, kt, f])


@theorem(id="P2", title="token floor at a compaction",
         statement="After a clean compaction that summarizes a turn of >= 1 token, a turn "
                   "holding one of the newest F tokens is out of the context iff the tail "
                   "holds < F tokens.")
def p2_floor_tokens(check: FloorCheck = floor_lost) -> Result:
    h, pinned, t, c, f, y = z3.Ints("history pinned tail_tokens newest_candidate F y")
    hyps = z3.And(c >= 1, t >= 0, f >= 0, pinned >= 0, pinned <= h - t - c)

    def lost(v: Any) -> Any:  # out of the context: tokens [pinned, h - t), in turns >= 1 token
        return z3.And(pinned <= v, v < h - t, h - f <= v, v < h)

    return _prove_iff(lost, y, h - t - 1, check(z3.IntVal(0), t, f, "tokens"), hyps,
                      [h, pinned, t, c, f])


@theorem(id="P5", title="message floor at a compaction",
         statement="After a clean compaction that leaves out of the context a turn of >= 1 "
                   "message just older than the tail, a turn holding one of the newest F "
                   "messages is out of the context iff the tail holds < F messages (a turn is "
                   "atomic: every turn holds >= 1 message; the earlier summary alone being "
                   "compacted, that turn left at an earlier compaction).")
def p5_floor_messages(check: FloorCheck = floor_lost) -> Result:
    h, pinned, t, c, f, y = z3.Ints("history pinned tail_messages newest_out F y")
    hyps = z3.And(c >= 1, t >= 0, f >= 0, pinned >= 0, pinned <= h - t - c)

    def lost(v: Any) -> Any:  # out of the context: messages [pinned, h - t), turns >= 1 message
        return z3.And(pinned <= v, v < h - t, h - f <= v, v < h)

    return _prove_iff(lost, y, h - t - 1, check(z3.IntVal(0), t, f, "messages"), hyps,
                      [h, pinned, t, c, f])


SpillEffect = Callable[[bool, Any, Any, Any, Any], tuple[Any, Any]]


@theorem(id="P6", title="a failed spill write is never better",
         statement="For every compaction (candidates unseen or not, earlier summary dropped or "
                   "not, turns summarized or not) and unspilled flags U <= U2: what it loses "
                   "and the next flag with the write succeeded (from U) are at most what it "
                   "loses and the next flag with the write failed (from U2), and a larger flag "
                   "never loses less; so by induction on the appends a session whose writes "
                   "all fail reaches every loss a session with some successful writes reaches.")
def p6_spill_monotone(effect: SpillEffect = spill_effect) -> Result:
    unseen, dropped, summarized = z3.Bools("unseen dropped summarized")
    u, u2 = z3.Ints("U U2")
    hyps = z3.And(z3.Or(u == 0, u == 1), z3.Or(u2 == 0, u2 == 1), u <= u2)
    ok_lost, ok_next = effect(True, unseen, dropped, summarized, u)
    bad_lost, bad_next = effect(False, unseen, dropped, summarized, u2)
    same_lost, same_next = effect(False, unseen, dropped, summarized, u)
    claim = z3.And(z3.Implies(ok_lost, bad_lost), ok_next <= bad_next,
                   z3.Implies(same_lost, bad_lost), same_next <= bad_next)
    as_int = [unseen, dropped, summarized]
    return _prove(z3.Not(claim), hyps, [u, u2, *[z3.If(b, 1, 0) for b in as_int]])


@theorem(id="P3", title="keep-in-tokens window is exact",
         statement="If W * turn_min > keep, every W newest turns hold > keep tokens, so the "
                   "tail counted back from the newest ends inside a W-turn window "
                   "(induction: base and step proved).")
def p3_window(width_ok: Callable[[Any, Any, Any], Any] | None = None) -> Result:
    i, p, a, lo, w, k = z3.Ints("i prefix a turn_min W keep")
    ok = width_ok or (lambda w_, lo_, k_: w_ * lo_ > k_)
    step = z3.Implies(z3.And(i >= 0, p >= i * lo, a >= lo), p + a >= (i + 1) * lo)
    base = z3.IntVal(0) >= 0 * lo
    end = z3.Implies(z3.And(ok(w, lo, k), w >= 0, p >= w * lo), p > k)
    hyps = z3.And(lo >= 1, k >= 0)
    return _prove(z3.Not(z3.And(step, base, end)), hyps, [i, p, a, lo, w, k])


@theorem(id="P4", title="closed form: truncate-then-compact in tokens is safe",
         statement="For every base b, summary s, limit L, trigger G, keep K tokens, floor F "
                   "tokens and turns in [tmin, tmax] with b + G - 1 + tmax <= L, "
                   "b + s + K < G, K >= tmax and F <= K - tmax + 1, the occupancy bound "
                   "b + summary + S < G is inductive and no append from it loses a turn.")
def p4_closed_form(check: FloorCheck = floor_lost) -> Result:
    b, s, lim, g, k, f, lo, hi = z3.Ints("base summary limit trigger keep floor tmin tmax")
    sc, total, x, tail = z3.Ints("sc S x T")
    params = z3.And(b >= 0, s >= 0, lo >= 1, hi >= lo, k >= hi, f >= 0,
                    b + g - 1 + hi <= lim, b + s + k < g, f <= k - hi + 1)
    inv = z3.And(z3.Or(sc == 0, sc == s), total >= 0, b + sc + total < g)
    grown = total + x
    occupancy = b + sc + grown
    # the tail, as every real tail: <= K tokens, <= S; when a turn is left out of it,
    # that turn (<= tmax tokens) did not fit, so the tail holds > K - tmax tokens
    candidates = grown > k
    tail_ok = z3.And(tail >= 0, tail <= k, tail <= grown,
                     z3.Implies(candidates, tail >= k - hi + 1),
                     z3.Implies(z3.Not(candidates), tail == grown))
    fire = z3.And(occupancy >= g, candidates)
    finding = z3.Or(occupancy > lim, z3.And(fire, check(z3.IntVal(1), tail, f, "tokens")))
    after = z3.If(fire, b + s + tail, occupancy)
    hyps = z3.And(params, inv, x >= lo, x <= hi, tail_ok)
    negation = z3.Or(finding, after >= g)
    return _prove(negation, hyps, [b, s, lim, g, k, f, lo, hi, sc, total, x, tail])
