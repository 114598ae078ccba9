"""The ledger's decision, read back from the code that runs (theorem T19, issue 32 item 2).

T19 reads ``LedgerCore._contract`` (``src/tailguard/runtime/ledger_core.py``, the O(log k)
decision of profiles ``strict`` and ``partitioned``) back with :mod:`ast` and executes it
symbolically: every ``if`` both ways, every ``failed.append`` with the condition it runs
under, every ``return``. The interval unions it reads (``self.truncated``, and the prior
coverage ``pc``, ``R = rec`` and ``lost`` it starts from) are sets of offsets with the facts of
their normal form (``min_lo`` the least offset, ``[min_lo, first_hi)`` the first run,
``max_hi`` one past the greatest), and each method it calls has its documented meaning
(``intersects``, ``covers``, ``gaps``; ``uncovered_outside`` is ``[0, n) \\ X \\ T``). It proves,
for lists of any length, that on every state with

* ``TRU = union(TR)``, ``SP = union(SP)``, ``PC`` a normal list, ``R = PC ∪ SP`` and
  ``lost = TRU \\ R`` (the incremental state's invariant: assumed by this part, and proved of
  the event methods that keep it by :mod:`proofs.ledger_state`, the other part of T19), and
  ``_min_lo``, ``_max_hi``, ``reversed`` the bounds of the recorded pairs,

the code returns, exactly when the generated checker's spec does, ``well_formed``'s refusal, an
allow, or a refusal naming exactly the clauses that fail (in the spec's order) with exactly the
spec's holes. Not covered: the seed profile (``_seed``, over the staircase), the lineage code that
yields ``pc`` for a given ``saw`` and ``keeps`` (``LedgerCore.prior``, ``SummaryContext``), and
``IntervalUnion``'s methods and normal form (their meaning is taken as documented;
``tests/test_ledger_index.py`` and ``tests/test_ledger_state.py`` test them).

Robustness: ``prove`` runs T19 in a Python process of its own (:func:`_in_a_fresh_process`), and
there every query in a z3 context of its own (``solver_settings(isolate=True)``, the terms
translated there). Given the very same query text, z3's answer depended on what the process had
run before (a part proved in a fresh process ran out of budget after T1, T2, T7, T12, T14, T18 had
run: z3 keeps some state per process, and a new context does not reset it); in a process of its
own the history is always T19's own parts in order. The budget is z3's ``rlimit`` (``--rlimit``,
default 50,000,000 per query; the costliest part uses about 5,000,000). Under ``--solver both`` the
parts of :data:`Z3_ALONE` are decided by z3 alone, and the result says so in its ``note``.
"""

from __future__ import annotations

import ast as pyast
import inspect
import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import z3

from proofs._common import setup
from proofs.ledger_state import event_parts
from tailguard.backends.z3_encode import ArrayList, Encoder, fresh_int, symbolic_case
from tailguard.backends.z3_eval import SETTINGS, check_sat, prove, solver_settings
from tailguard.base import vocab
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.speclang.load import Spec
from tailguard.tooling.project import project_root
from tailguard.tooling.theorems import _CLOCK, Result, charge, theorem

Pred = Callable[[Any], Any]


class NotInForm(Exception):
    """The code is not in the form this reader executes."""


class USet:
    """An :class:`~tailguard.runtime.interval_index.IntervalUnion` as a set of offsets."""

    def __init__(self, name: str) -> None:
        self.fn = z3.Function(f"{name}.mem", z3.IntSort(), z3.BoolSort())
        self.nonempty = z3.Bool(f"{name}.nonempty")
        self.min_lo, self.first_hi, self.max_hi = z3.Ints(f"{name}.min_lo {name}.first_hi {name}.max_hi")

    def mem(self, x: Any) -> Any:
        return self.fn(x)

    def facts(self) -> Any:
        """The normal form: what ``bool()``, ``min_lo``, ``first_hi`` and ``max_hi`` are."""
        x = fresh_int("x")
        return z3.And(
            self.nonempty == z3.Exists([x], self.mem(x)),
            z3.Implies(self.nonempty, z3.And(
                self.mem(self.min_lo), self.min_lo < self.first_hi, z3.Not(self.mem(self.first_hi)),
                self.mem(self.max_hi - 1),
                z3.ForAll([x], z3.Implies(x < self.min_lo, z3.Not(self.mem(x)))),
                z3.ForAll([x], z3.Implies(z3.And(self.min_lo <= x, x < self.first_hi), self.mem(x))),
                z3.ForAll([x], z3.Implies(x >= self.max_hi, z3.Not(self.mem(x)))))),
        )


@dataclass
class Refuse:
    failed: list[tuple[Any, str]]
    holes: Pred


@dataclass
class State:
    vars: dict[str, Any]
    alive: Any
    failed: list[tuple[Any, str]] = field(default_factory=list)


_MARKERS = {"_ALLOW": "allow", "_WELL_FORMED": "well_formed"}


class Executor:
    """Symbolic execution of the straight-line-and-if subset ``_contract`` is written in."""

    def __init__(self, self_attrs: dict[str, Any], n: Any) -> None:
        self.self_attrs, self.n = self_attrs, n
        self.returns: list[tuple[Any, Any]] = []
        self.appends: list[str] = []  # clause ids in the order the code appends them

    # -- expressions -------------------------------------------------------------------------

    def truth(self, v: Any) -> Any:
        if isinstance(v, USet):
            return v.nonempty
        if isinstance(v, bool):
            return z3.BoolVal(v)
        if z3.is_bool(v):
            return v
        raise NotInForm(f"a truth value of {v!r}")

    def expr(self, node: pyast.expr, st: State) -> Any:
        match node:
            case pyast.Constant(value=v) if isinstance(v, (int, bool)):
                return z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)
            case pyast.Constant(value=None):
                return None
            case pyast.Tuple(elts=[]):
                return ()
            case pyast.Name(id=name):
                if name in st.vars:
                    return st.vars[name]
                if name in _MARKERS:
                    return _MARKERS[name]
                if name.isupper() and isinstance(getattr(vocab, name, None), str):
                    return getattr(vocab, name)
                raise NotInForm(f"unknown name {name!r}")
            case pyast.Attribute(value=pyast.Name(id="self"), attr=a):
                if a not in self.self_attrs:
                    raise NotInForm(f"self.{a} is not part of the state read here")
                return self.self_attrs[a]
            case pyast.Attribute(value=base, attr=a) if a in ("min_lo", "first_hi", "max_hi"):
                s = self.expr(base, st)
                if not isinstance(s, USet):
                    raise NotInForm(f".{a} of a non-union")
                return getattr(s, a)
            case pyast.BoolOp(op=op, values=values):
                parts = [self.truth(self.expr(v, st)) for v in values]
                return z3.And(parts) if isinstance(op, pyast.And) else z3.Or(parts)
            case pyast.UnaryOp(op=pyast.Not(), operand=o):
                return z3.Not(self.truth(self.expr(o, st)))
            case pyast.Compare(left=left, ops=ops, comparators=comps):
                vals = [self.expr(left, st), *(self.expr(c, st) for c in comps)]
                out = []
                for cop, x, y in zip(ops, vals, vals[1:], strict=False):
                    out.append(_cmp(cop, x, y))
                return z3.And(out) if len(out) > 1 else out[0]
            case pyast.BinOp(left=left, op=pyast.Add() | pyast.Sub() as op, right=right):
                x, y = self.expr(left, st), self.expr(right, st)
                return x + y if isinstance(op, pyast.Add) else x - y
            case pyast.IfExp(test=test, body=body, orelse=orelse):
                return z3.If(self.truth(self.expr(test, st)), self.expr(body, st), self.expr(orelse, st))
            case pyast.Call(func=pyast.Attribute(value=base, attr=("intersects" | "covers") as m), args=[lo_n, hi_n]):
                s = self.expr(base, st)
                lo, hi = self.expr(lo_n, st), self.expr(hi_n, st)
                x = fresh_int("x")
                if not isinstance(s, USet):
                    raise NotInForm(f"{m} of a non-union")
                if m == "intersects":
                    return z3.Exists([x], z3.And(lo <= x, x < hi, s.mem(x)))
                return z3.ForAll([x], z3.Implies(z3.And(lo <= x, x < hi), s.mem(x)))
            case pyast.Call(func=pyast.Name(id="all"), args=[pyast.GeneratorExp(elt=elt, generators=[gen])]):
                # all(R.covers(lo, hi) for lo, hi in self.uncovered_outside(t, x_lo, x_hi))
                rest = self._outside(gen, st)
                match elt:
                    case pyast.Call(func=pyast.Attribute(value=base, attr="covers"), args=[pyast.Name(id=v1),
                                                                                          pyast.Name(id=v2)]) \
                            if (v1, v2) == _targets(gen):
                        s = self.expr(base, st)
                        x = fresh_int("x")
                        return z3.ForAll([x], z3.Implies(rest(x), s.mem(x)))
                raise NotInForm("all() of something other than covers over uncovered_outside")
            case pyast.ListComp(elt=pyast.Name(id=g), generators=[outer, inner]):
                # [g for lo, hi in self.uncovered_outside(...) for g in R.gaps(lo, hi)]
                rest = self._outside(outer, st)
                match inner:
                    case pyast.comprehension(target=pyast.Name(id=g2), iter=pyast.Call(
                            func=pyast.Attribute(value=base, attr="gaps"), args=[pyast.Name(id=v1), pyast.Name(id=v2)]),
                            ifs=[]) if g2 == g and (v1, v2) == _targets(outer):
                        s = self.expr(base, st)
                        return lambda x: z3.And(rest(x), z3.Not(s.mem(x)))
                raise NotInForm("a list of something other than the gaps of uncovered_outside")
            case pyast.Call(func=pyast.Name(id="tuple"), args=[pyast.Call(func=pyast.Name(id="union"),
                                                                           args=[pyast.Call(func=pyast.Name(id="list"),
                                                                                            args=[a]), b])]):
                sa, sb = self.expr(a, st), self.expr(b, st)
                pa = sa.mem if isinstance(sa, USet) else sa
                pb = sb.mem if isinstance(sb, USet) else sb
                return lambda x: z3.Or(pa(x), pb(x))
            case pyast.Call(func=pyast.Name(id="Decision"), args=[pyast.Constant(value="refuse"),
                                                                  pyast.Call(func=pyast.Name(id="tuple"),
                                                                             args=[pyast.Name(id="failed")]), h]):
                holes = self.expr(h, st)
                return Refuse(list(st.failed), (lambda x: z3.BoolVal(False)) if holes == () else holes)
        raise NotInForm(f"cannot read {pyast.unparse(node)!r}")

    def _outside(self, gen: pyast.comprehension, st: State) -> Pred:
        match gen:
            case pyast.comprehension(target=pyast.Tuple(elts=[pyast.Name(), pyast.Name()]), iter=pyast.Call(
                    func=pyast.Attribute(value=pyast.Name(id="self"), attr="uncovered_outside"),
                    args=[t_n, lo_n, hi_n]),
                    ifs=[]):
                t, lo, hi = (self.expr(a, st) for a in (t_n, lo_n, hi_n))
                n = self.n
                return lambda x: z3.And(x >= 0, x < n, z3.Not(z3.And(lo <= x, x < hi)), z3.Not(z3.And(t <= x, x < n)))
        raise NotInForm("a loop over something other than self.uncovered_outside(t, lo, hi)")

    # -- statements --------------------------------------------------------------------------

    def block(self, stmts: list[pyast.stmt], st: State) -> State:
        for s in stmts:
            st = self.stmt(s, st)
        return st

    def stmt(self, node: pyast.stmt, st: State) -> State:
        match node:
            case pyast.Assign(targets=[pyast.Name(id=name)], value=v):
                return State({**st.vars, name: self.expr(v, st)}, st.alive, st.failed)
            case pyast.AnnAssign(target=pyast.Name(id=name), value=v) if v is not None:
                if isinstance(v, pyast.List) and not v.elts and name == "failed":
                    return State({**st.vars, name: "failed"}, st.alive, [])
                return State({**st.vars, name: self.expr(v, st)}, st.alive, st.failed)
            case pyast.Assign(targets=[pyast.Tuple(elts=[pyast.Name(id=x), pyast.Name(id=y)])], value=v):
                pair = self.expr(v, st)
                if not (isinstance(pair, tuple) and len(pair) == 2):
                    raise NotInForm("a pair unpacked from something else")
                return State({**st.vars, x: pair[0], y: pair[1]}, st.alive, st.failed)
            case pyast.Expr(value=pyast.Call(func=pyast.Attribute(value=pyast.Name(id="failed"), attr="append"),
                                             args=[pyast.Name(id=cid)])):
                clause = self.expr(pyast.Name(id=cid), st)
                self.appends.append(clause)
                return State(st.vars, st.alive, [*st.failed, (st.alive, clause)])
            case pyast.Return(value=v) if v is not None:
                if isinstance(v, pyast.UnaryOp):
                    raise NotInForm("a return of an expression")
                value = self.expr(v, st)
                self.returns.append((st.alive, value))
                return State(st.vars, z3.BoolVal(False), st.failed)
            case pyast.If(test=test, body=body, orelse=orelse):
                if isinstance(test, pyast.UnaryOp) and isinstance(test.operand, pyast.Name) \
                        and test.operand.id == "failed":
                    cond = z3.Not(z3.Or([c for c, _ in st.failed] or [z3.BoolVal(False)]))
                else:
                    cond = self.truth(self.expr(test, st))
                a = self.block(body, State(dict(st.vars), z3.And(st.alive, cond), st.failed))
                b = self.block(orelse, State(dict(st.vars), z3.And(st.alive, z3.Not(cond)), st.failed))
                return self._merge(cond, a, b, st)
        raise NotInForm(f"cannot execute {pyast.unparse(node)!r}")

    def _merge(self, cond: Any, a: State, b: State, before: State) -> State:
        out: dict[str, Any] = {}
        for k in sorted(set(a.vars) | set(b.vars)):  # a fixed order: the same names every run
            va, vb = a.vars.get(k), b.vars.get(k)
            if k in a.vars and k in b.vars:
                if va is vb or (isinstance(va, tuple) and va == vb == ()):
                    out[k] = va
                elif callable(va) or callable(vb):
                    fa = va if callable(va) else (lambda x: z3.BoolVal(False))
                    fb = vb if callable(vb) else (lambda x: z3.BoolVal(False))
                    out[k] = lambda x, fa=fa, fb=fb: z3.If(cond, fa(x), fb(x))
                elif isinstance(va, tuple) or isinstance(vb, tuple):
                    out[k] = va if z3.is_false(z3.simplify(b.alive)) else vb if z3.is_false(z3.simplify(a.alive)) \
                        else _bad(k)
                else:
                    out[k] = z3.If(cond, va, vb)
            else:
                # defined on one side only: usable only where that side ran
                out[k] = va if k in a.vars else vb
        seen = {id(e) for e in before.failed}
        failed = list(before.failed) + [e for e in a.failed if id(e) not in seen] + \
            [e for e in b.failed if id(e) not in seen]
        return State(out, z3.Or(a.alive, b.alive), failed)


def _bad(k: str) -> Any:
    raise NotInForm(f"{k} is a tuple on one side of an if and something else on the other")


def _targets(gen: pyast.comprehension) -> tuple[str, str]:
    t = gen.target
    assert isinstance(t, pyast.Tuple)
    return tuple(e.id for e in t.elts if isinstance(e, pyast.Name))  # type: ignore[return-value]


def _cmp(op: pyast.cmpop, x: Any, y: Any) -> Any:
    match op:
        case pyast.Lt():
            return x < y
        case pyast.LtE():
            return x <= y
        case pyast.Gt():
            return x > y
        case pyast.GtE():
            return x >= y
        case pyast.Eq():
            return x == y
        case pyast.NotEq():
            return x != y
    raise NotInForm(f"comparison {type(op).__name__}")


def contract_source() -> str:
    return textwrap.dedent(inspect.getsource(LedgerCore._contract))


#: The first statement of ``_contract``, pinned as text: it picks the prior coverage ``pc``, ``R``
#: and ``lost`` the rest reads, either the whole context's kept incrementally (the fast path,
#: whose state the event parts of T19 prove kept) or :meth:`LedgerCore.prior`'s, computed.
PICK = """
if saw is None and not keeps:
    ctx = self.summaries
    pc = ctx.coverage() if ctx._cov is None else ctx._cov
    rec, lost = self.recovered, self.lost
else:
    pc, rec, lost = self.prior(saw, keeps)
"""


def read(source: str) -> tuple[list[pyast.stmt], pyast.If]:
    """The body of ``_contract`` after its first statement, which must be :data:`PICK`."""
    try:
        tree = pyast.parse(source)
    except SyntaxError as exc:
        raise NotInForm(f"not Python: {exc}") from None
    fn = tree.body[0] if tree.body else None
    if not isinstance(fn, pyast.FunctionDef) or fn.name != "_contract":
        raise NotInForm("not the _contract method")
    body = [s for s in fn.body if not (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant))]
    pick = body[0] if body else None
    expected = pyast.parse(textwrap.dedent(PICK)).body[0]
    if not isinstance(pick, pyast.If) or pyast.dump(pick) != pyast.dump(expected):
        raise NotInForm("the first statement is not the pick of the prior coverage T19 reads (PICK)")
    return body[1:], pick


def _prove(claim: Any, **kwargs: Any) -> Result:
    return prove(claim, **kwargs)[0]


def _parts(spec: Spec, source: str) -> Iterator[tuple[str, Callable[[], Result]]]:
    stmts, _ = read(source)
    case = symbolic_case(spec, "L.")
    n, t, F = case["n"], case["t"], case["F"]
    TR, PCL, SP = case["TR"], case["PC"], case["SP"]
    assert isinstance(TR, ArrayList) and isinstance(PCL, ArrayList) and isinstance(SP, ArrayList)
    tru, pc, rec, lost = USet("TRU"), USet("PC"), USet("R"), USet("lost")
    x, i = fresh_int("x"), fresh_int("i")
    lo_i, hi_i = PCL.at(i)
    lo_n, _ = PCL.at(i + 1)

    def sp(y: Any) -> Any:
        return SP.mem(y)
    min_lo, max_hi, reversed_ = z3.Int("L._min_lo"), z3.Int("L._max_hi"), z3.Bool("L.reversed")
    both = (TR, SP)
    units = len(spec.units)
    fu, tu = case["floor_unit"], case["truncator_unit"]
    # the state's facts, in groups: each query assumes only the groups it needs (fewer
    # assumptions prove more, so this is sound, and the solver has less to instantiate)
    facts = {
        "lists": z3.And(TR.wf(), PCL.wf(), SP.wf()),
        "TRU": z3.ForAll([x], tru.mem(x) == TR.mem(x)),
        "TRU.ends": tru.facts(),
        "PC": z3.ForAll([x], pc.mem(x) == PCL.mem(x)),
        "PC.ends": z3.And(
            pc.facts(),
            # the prior coverage list is normal: sorted, disjoint, non-adjacent, non-empty pairs
            z3.ForAll([i], z3.Implies(z3.And(i >= 0, i < PCL.length), lo_i < hi_i)),
            z3.ForAll([i], z3.Implies(z3.And(i >= 0, i + 1 < PCL.length), hi_i < lo_n))),
        "R": z3.ForAll([x], rec.mem(x) == z3.Or(pc.mem(x), sp(x))),
        "R.ends": rec.facts(),
        "lost": z3.ForAll([x], lost.mem(x) == z3.And(tru.mem(x), z3.Not(rec.mem(x)))),
        "lost.ends": lost.facts(),
        "lost.some": lost.nonempty == z3.Exists([x], lost.mem(x)),
        # the recorded pairs' bounds (LedgerCore._bounds): min(0, every lo), max(0, every hi)
        "bounds": z3.And(
            min_lo <= 0, max_hi >= 0,
            *(lst.forall(lambda p: z3.And(p[0] >= min_lo, p[1] <= max_hi)) for lst in both),
            z3.Implies(min_lo < 0, z3.Or([lst.exists(lambda p: p[0] == min_lo) for lst in both])),
            z3.Implies(max_hi > 0, z3.Or([lst.exists(lambda p: p[1] == max_hi) for lst in both])),
            reversed_ == z3.Or([lst.exists(lambda p: p[0] > p[1]) for lst in both])),
    }

    def given(*groups: str) -> Any:
        return z3.And([facts["lists"], *(facts[g] for g in groups)])

    invariant = given(*(g for g in facts if g != "lists"))

    def within(p: Any) -> Any:
        return z3.And(p[0] >= 0, p[0] <= p[1], p[1] <= n)

    # lemmas over the state's facts, proved once and then assumed by the parts below
    lemma_bounds = (z3.And(min_lo >= 0, max_hi <= n, z3.Not(reversed_))
                    == z3.And(TR.forall(within), SP.forall(within)))
    lemma_pc = z3.Or(z3.Not(pc.nonempty), z3.And(pc.min_lo >= 0, pc.max_hi <= n)) == PCL.forall(within)
    tru_in = z3.ForAll([x], z3.Implies(tru.mem(x), z3.And(x >= 0, x < n)))
    rec_in = z3.ForAll([x], z3.Implies(rec.mem(x), z3.And(x >= 0, x < n)))
    lists_in = z3.And(TR.forall(within), PCL.forall(within), SP.forall(within))
    lemma_tru = z3.Implies(TR.forall(within), tru_in)
    lemma_rec = z3.Implies(z3.And(PCL.forall(within), SP.forall(within)), rec_in)
    pc_in = z3.And(pc.min_lo >= 0, pc.max_hi <= n)
    # one model of every fact at once (empty lists; the history [0, 2)), so no part holds vacuously
    # (each part below assumes a subset of these facts, plus a case of the compaction)
    example = z3.And(TR.length == 0, PCL.length == 0, SP.length == 0, n == 2, min_lo == 0, max_hi == 0)

    def satisfiable() -> Result:
        answer, _, detail = check_sat([invariant, example], want_model=False)
        return Result("proved") if answer == "sat" else Result(
            "counterexample" if answer == "unsat" else "unknown", detail=f"the facts: {answer} {detail}")

    yield "the state's facts are satisfiable", satisfiable
    yield "the recorded bounds are the pairs' bounds", partial(_prove, lemma_bounds, assumptions=z3.And(given("bounds"),
                                                                                              n >= 0), sanity=False)
    # for any one pair (a free index: so for every pair, which is PCL.forall(within))
    i0 = z3.Int("L.i0")
    lo0, hi0 = PCL.at(i0)
    ends_in_pc = z3.Implies(z3.And(i0 >= 0, i0 < PCL.length), z3.And(pc.mem(lo0), pc.mem(hi0 - 1)))
    yield "a pair's ends are in pc", partial(_prove, ends_in_pc, assumptions=given("PC", "PC.ends"), sanity=False)
    yield "pc's ends bound its pairs", partial(_prove,
        z3.Implies(z3.And(i0 >= 0, i0 < PCL.length, pc.nonempty, pc_in), within(PCL.at(i0))),
        assumptions=z3.And(facts["lists"], facts["PC.ends"], ends_in_pc, n >= 0), sanity=False)
    yield "pc's pairs bound its ends", partial(_prove, z3.Implies(z3.And(pc.nonempty, PCL.forall(within)), pc_in),
                                             assumptions=z3.And(given("PC", "PC.ends"), n >= 0), sanity=False)
    yield "an empty pc has no pairs", partial(_prove, z3.Implies(z3.Not(pc.nonempty), PCL.forall(within)),
                                            assumptions=z3.And(given("PC", "PC.ends"), n >= 0), sanity=False)
    yield "TRU lies in the history when its pairs do", partial(_prove, lemma_tru, assumptions=given("TRU"),
                                                               sanity=False)
    yield "R lies in the history when its pairs do", partial(_prove, lemma_rec, assumptions=given("PC", "R"),
                                                             sanity=False)

    def prefix_at(v: Any) -> Any:
        """R holds [0, v) exactly when v <= 0 or its first run is [0, y) with y >= v."""
        z = fresh_int("z")
        return (z3.ForAll([z], z3.Implies(z3.And(z >= 0, z < v), rec.mem(z)))
                == z3.Or(v <= 0, z3.And(rec.nonempty, rec.min_lo == 0, rec.first_hi >= v)))

    y0 = z3.Int("L.y0")
    yield "R's first run is its prefix", partial(_prove,   # for a free y0: so at every v
        prefix_at(y0), assumptions=z3.And(given("R.ends"), z3.ForAll([x], z3.Implies(rec.mem(x), x >= 0))),
        sanity=False)
    need = {vocab.TAIL_INTACT: ("TRU", "TRU.ends"), vocab.SUMMARY_HONEST: ("TRU", "TRU.ends"),
            vocab.NO_HOLE: ("TRU", "PC", "R", "lost", "lost.some")}
    a_, b_ = case["I"]
    c_, d_ = case["C"]
    x_lo, x_hi = z3.If(a_ > c_, a_, c_), z3.If(b_ < d_, b_, d_)
    prefix_facts = z3.And(prefix_at(t), prefix_at(x_lo))
    # no_hole by cases of the state and the compaction (a partition, so together they are the whole claim)
    hole_cases = [("lost not empty", lost.nonempty),
                  ("nothing lost, X empty", z3.And(z3.Not(lost.nonempty), x_lo >= x_hi)),
                  ("nothing lost, t in X, X from 0", z3.And(z3.Not(lost.nonempty), x_lo < x_hi, x_lo <= t,
                                                            t <= x_hi, x_lo <= 0)),
                  ("nothing lost, t in X, X later", z3.And(z3.Not(lost.nonempty), x_lo < x_hi, x_lo <= t,
                                                           t <= x_hi, x_lo > 0)),
                  ("nothing lost, t outside X", z3.And(z3.Not(lost.nonempty), x_lo < x_hi,
                                                       z3.Not(z3.And(x_lo <= t, t <= x_hi))))]
    self_attrs = {"n": n, "F": F, "floor_unit": fu, "truncator_unit": tu, "truncated": tru,
                  "_min_lo": min_lo, "_max_hi": max_hi, "reversed": reversed_,
                  "_units_known": z3.And(fu >= 0, fu < units, tu >= 0, tu < units)}
    for pid in ("strict", "partitioned"):
        prof = spec.profile(pid)
        ex = Executor(self_attrs, n)
        st = State({"t": t, "summary_input": case["I"], "summary_covers": case["C"],
                    "floor_in_input": z3.BoolVal(pid == "strict"), "pc": pc, "rec": rec, "lost": lost},
                   z3.BoolVal(True))
        try:
            end = ex.block(stmts, st)
        except NotInForm as exc:
            yield f"{pid}: the code is in the form read here", partial(
                Result, "counterexample", detail=f"LedgerCore._contract is not in the form T19 reads: {exc}")
            return
        enc = Encoder(spec, case)
        wf = enc.clause(prof, prof.wellformed)
        rest = [c for c in prof.clauses if c.id != prof.wellformed]
        ids = [c.id for c in rest]
        order = [c for c in ex.appends if c in ids]
        known = set(ids) | {c.id for p in spec.profiles for c in p.clauses}
        if order != [c for c in ids if c in order] or len(set(ex.appends)) != len(ex.appends) or \
                set(ex.appends) - known:
            yield f"{pid}: clauses appended in the spec's order", partial(Result,
                "counterexample", detail=f"the code appends {ex.appends}, the spec's order is {ids}")
            return
        yield f"{pid}: every path returns", partial(_prove, z3.Not(end.alive), assumptions=invariant, sanity=False)
        by_kind: dict[str, Any] = {"well_formed": [], "allow": [], "refuse": []}
        refusals: list[tuple[Any, Refuse]] = []
        for cond, value in ex.returns:
            if isinstance(value, Refuse):
                by_kind["refuse"].append(cond)
                refusals.append((cond, value))
            elif value in ("allow", "well_formed"):
                by_kind[value].append(cond)
            else:
                yield f"{pid}: returns a decision", partial(Result, "counterexample", detail=f"returns {value!r}")
                return
        fails = {c.id: z3.Not(enc.clause(prof, c.id)) for c in rest}
        gate = z3.Or(by_kind["well_formed"] or [False])
        yield f"{pid}: the well_formed gate", partial(_prove,
            gate == z3.Not(wf), assumptions=z3.And(given(), z3.Implies(n >= 0, z3.And(lemma_bounds, lemma_pc))),
            sanity=False)
        past_gate = z3.And(wf, z3.Not(gate))
        yield f"{pid}: well_formed puts every list in the history", partial(_prove, z3.Implies(wf, lists_in),
                                                                          assumptions=given(), sanity=False)
        # no_hole and its holes assume what well_formed gives them (lists_in, so by the lemmas
        # TRU and R inside [0, n)) and the ledger's gate passed, not the whole clause
        past_gate_sets = z3.And(z3.Not(gate), tru_in, rec_in, prefix_facts)
        if len(refusals) != 1:
            yield f"{pid}: one refusal", partial(Result, "counterexample", detail=f"{len(refusals)} refusal returns")
            return
        cond, r = refusals[0]
        entries = [k for k, _ in r.failed]
        # allow and refuse split the rest on "some clause was appended" (then the parts below say
        # which): a propositional identity over the code's own conditions, so a quick query
        allow = z3.Or(by_kind["allow"] or [False])
        yield f"{pid}: allow exactly when past the gate no clause was appended", partial(_prove,
            allow == z3.And(z3.Not(gate), z3.Not(z3.Or(entries or [False]))), assumptions=given(), sanity=False)
        yield f"{pid}: refuse exactly when past the gate a clause was appended", partial(_prove,
            cond == z3.And(z3.Not(gate), z3.Or(entries or [False])), assumptions=given(), sanity=False)
        for cid in sorted(set(ex.appends) - set(ids)):  # another profile's clause: never appended here
            named = z3.Or([k for k, c in r.failed if c == cid] or [False])
            yield f"{pid}: {cid} (not a clause of {pid}) never appended", partial(_prove,
                z3.Not(named), assumptions=given(), sanity=False)
        for c in rest:
            named = z3.Or([k for k, cid in r.failed if cid == c.id] or [False])
            for case_name, when in (hole_cases if c.id == vocab.NO_HOLE else [("", z3.BoolVal(True))]):
                part = f"{pid}: {c.id} appended exactly when it fails{', ' + case_name if case_name else ''}"
                yield part, partial(_prove,
                    named == fails[c.id], assumptions=z3.And(
                        given(*need.get(c.id, ())), past_gate_sets if c.id == vocab.NO_HOLE else past_gate, when),
                    sanity=False)
        spec_holes = enc.holes(prof, vocab.NO_HOLE)
        y = fresh_int("y")
        named_hole = z3.Or([k for k, cid in r.failed if cid == vocab.NO_HOLE] or [False])
        yield f"{pid}: the holes", partial(_prove, z3.ForAll([y], r.holes(y) == spec_holes(y)),
                                         assumptions=z3.And(given("TRU", "PC", "R", "lost"), past_gate_sets,
                                                            cond, named_hole, fails[vocab.NO_HOLE]), sanity=False)


#: Parts that ``--solver cvc5`` and ``--solver both`` leave to z3 alone, and why. Every other part
#: is decided by the solver(s) asked for. Under cvc5 these quantify over the unions' normal form
#: (the facts the decision reads: first run, least and greatest offset), and each of cvc5's
#: strategies gives up on them (e-matching: incomplete; enumerative and model-based
#: instantiation: out of budget); the result's detail and the theorem's statement say so.
_NORMAL_FORM = "cvc5 gives up on the quantified facts of the unions' normal form"
Z3_ALONE: dict[str, str] = {
    "the state's facts are satisfiable": "cvc5 finds no model of the quantified facts in its budget",
    "an empty pc has no pairs": _NORMAL_FORM,
    **{f"{pid}: {part}": _NORMAL_FORM for pid in ("strict", "partitioned") for part in (
        f"{vocab.TAIL_INTACT} appended exactly when it fails",
        f"{vocab.SUMMARY_HONEST} appended exactly when it fails",
        *(f"{vocab.NO_HOLE} appended exactly when it fails, {case}" for case in (
            "lost not empty", "nothing lost, X empty", "nothing lost, t in X, X later",
            "nothing lost, t outside X")))},
}


def _decided(name: str, compute: Callable[[], Result]) -> Result:
    """``compute()`` under the configured solver(s), or by z3 alone for a part of :data:`Z3_ALONE`."""
    if name not in Z3_ALONE or SETTINGS.solver == "z3":
        return compute()
    with solver_settings(solver="z3"):
        return compute()


@theorem(
    "T19", "The ledger's state and decision, read back from its code, are the checker's",
    "LedgerCore._contract, read back from src/tailguard/runtime/ledger_core.py and executed symbolically "
    "(unions as sets of offsets with their normal form's facts, IntervalUnion's methods at their documented "
    "meaning), returns for strict and partitioned exactly the generated checker's spec decision on the "
    "equivalent case (the well_formed refusal, allow, or a refusal naming exactly the failing clauses in the "
    "spec's order with exactly the spec's holes), for lists of any length, on every state where "
    "R = PC ∪ SP and lost = TRU \\ R and the bounds are the recorded pairs'; and the event methods, read "
    "back the same way (truncate, spill, compact with honest_part and _depart, evict, adopt with _rebuild, "
    "_bounds), keep that state: each one, on a state where it holds, leaves one where it holds for the "
    "new records (SummaryContext's commit, evict and adopt taken at their documented meaning, and "
    "the unions' normal form: tested, not proved). Each query in a z3 context of its own; under "
    "--solver both the parts that quantify over the unions' normal form are decided by z3 alone "
    "(prove prints them in a note).",
)
def ledger_decision_is_the_checkers(spec: Spec | None = None, source: str | None = None,
                                    events: dict[str, str] | None = None) -> Result:
    if spec is None:
        return _in_a_fresh_process(source, events)
    return _here(spec, source, events)


def _in_a_fresh_process(source: str | None = None, events: dict[str, str] | None = None, only: str = "") -> Result:
    """T19 on the project's code (or the given edited text of it), run in a Python process of its own.

    A fresh z3 context per query is not enough to make z3's answer independent of what the
    process ran before: given the very same query text, a part proved in a fresh process ran out
    of budget after T1, T2, T7, T12 ... had run (z3 keeps some state per process). So T19 runs
    where nothing ran before it, under the solver settings of this run; its answer is then the same
    whatever ``prove`` ran first. The child's solver times are charged here.
    """
    root = project_root()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
           "TAILGUARD_ROOT": str(root)}
    settings = {"solver": SETTINGS.solver, "rlimit": SETTINGS.rlimit, "cvc5_rlimit": SETTINGS.cvc5_rlimit}
    proc = subprocess.run([sys.executable, "-c", "import proofs.ledger_decision as m; m._child()"],
                          input=json.dumps({"settings": settings, "source": source, "events": events,
                                            "only": only}),
                          capture_output=True, text=True, cwd=root, env=env,
                          check=False)
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return Result("unknown", detail=f"error: the T19 process ended with code {proc.returncode}: "
                      f"{proc.stderr.strip()[-500:]}")
    for solver, seconds in out["solver_seconds"].items():
        charge(solver, seconds)
    return Result(out["status"], detail=out["detail"], note=out["note"])


def _child() -> None:
    """The fresh process of :func:`_in_a_fresh_process`: settings (and edited text) on stdin, the
    result on stdout."""
    given = json.loads(sys.stdin.read())
    _CLOCK.clear()
    with solver_settings(**given["settings"]):
        r = _here(None, given["source"], given["events"], given["only"])
    print(json.dumps({"status": r.status, "detail": r.detail, "note": r.note, "solver_seconds": dict(_CLOCK)}))


def _here(spec: Spec | None, source: str | None, events: dict[str, str] | None, only: str = "") -> Result:
    """T19 in this process; ``only``: just the parts whose name contains it (the break tests)."""
    spec = setup(spec)
    text = source if source is not None else contract_source()
    count, alone = 0, 0
    # every query in a z3 context of its own: its answer does not depend on what this process
    # built before it (in a shared context, a part proved in a fresh process ran out of budget
    # after other theorems had run)
    with solver_settings(isolate=True):
        try:
            for name, part in itertools.chain(event_parts(events, spec), _parts(spec, text)):
                if only not in name:
                    continue
                r = _decided(name, part)
                if r.status != "proved":
                    return Result(r.status, detail=f"{name}: {r.detail}", model=None)
                count += 1
                alone += name in Z3_ALONE
        except NotInForm as exc:
            return Result("counterexample", detail=f"LedgerCore._contract is not in the form T19 reads: {exc}")
    if SETTINGS.solver != "z3" and alone:
        note = (f"{alone} of {count} parts decided by z3 alone, not by cvc5 (it gives up on the "
                f"quantified facts of the unions' normal form): {'; '.join(Z3_ALONE)}")
        return Result("proved", detail=f"{count} parts proved; {note}", note=note)
    return Result("proved", detail=f"{count} parts proved")
