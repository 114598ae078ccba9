"""The ledger's event methods keep the state its decision assumes (theorem T19, issue 32 item 2).

The decision part of T19 (:mod:`proofs.ledger_decision`) assumes the incremental state's
invariant: ``R = PC ∪ SP`` and ``lost = TRU \\ R``, with ``TRU`` the union of the recorded
truncations, ``SP`` of the spills, ``PC`` the context's coverage, and ``_min_lo``, ``_max_hi``,
``reversed`` the recorded pairs' bounds. This module reads the event methods of
:class:`~tailguard.runtime.ledger_core.LedgerCore` back with :mod:`ast` (``truncate``, ``spill``,
``compact`` with ``honest_part`` and ``_depart``, ``evict``, ``adopt`` with ``_rebuild``, and
``_bounds`` wherever they call it) and proves that each one, run on a state where the
invariant holds, leaves a state where it holds for the new records: ``TRU`` or ``SP`` grown by
exactly the recorded range, the bounds those of the recorded pairs, ``n`` grown by an adoption,
``unverified`` by the adopted range, and a compaction's new summary given the spec's
``[lineage]`` ``E(S_k)`` (read from ``spec/clauses.toml``). With a new core's empty state
(``tests/test_ledger_proof.py`` pins it) that is an induction over any log.

Every statement of these methods acts on the unions offset by offset (an ``add`` or ``remove``
of a range, a loop over ranges that are disjoint, ``gaps``/``pieces``/``uncovered`` of a
range), so the executor follows one free offset ``x``: a union is its membership at ``x``, a
range ``[lo, hi)`` is ``lo <= x < hi``, a loop over disjoint ranges runs its body once under
"x is in the pair it is at". Such a body may only read and add or remove its innermost loop's
own pair, and may not change what it iterates or tests, set a number, a local or a whole union,
call the summaries' context or return (checked: else the code is not in the form). The claims
are then quantifier-free in ``x`` and, ``x`` being free, hold at every offset.

Taken at their documented meaning (not read back here): :class:`IntervalUnion`'s methods
(``tests/test_ledger_index.py`` tests them), and :class:`~tailguard.runtime.lineage.SummaryContext`'s
``commit`` (the new summary's coverage is the honest part and what it saw; the context becomes
the kept summaries and the new one; the summaries neither seen nor kept leave, and they are
returned), ``evict`` (the summary leaves the context and is returned) and ``adopt`` (the
adopted range joins the coverage); ``tests/test_ledger_state.py`` checks those and the whole
state against a model of the spec after every event. What the statements do to diagnostic
state (``origins``, ``lost_coverage``, the seed's staircase, the history lists, the tags) is
not part of the claim and is skipped; ``append`` only adds to ``n``.
"""

from __future__ import annotations

import ast as pyast
import inspect
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import z3

from tailguard.backends.z3_eval import prove
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.speclang import ast as spec_ast
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import Result

Parts = Iterator[tuple[str, Callable[[], Result]]]

#: the methods read back, by name (an edited copy can be handed in instead)
METHODS = ("truncate", "spill", "_bounds", "compact", "honest_part", "_depart", "evict", "adopt", "_rebuild")
#: the unions of the invariant, and the ints and bools of the recorded bounds
SETS = ("truncated", "spilled", "recovered", "lost", "unverified")
SCALARS = ("n", "_min_lo", "_max_hi", "reversed")
#: diagnostic state: statements on it are skipped, tests of it are free booleans
IGNORED = ("_stair", "origins", "lost_coverage", "_hist_tr", "_hist_sp", "_reversed_tag", "_min_lo_tag",
           "_max_hi_tag")


class NotInForm(Exception):
    """An event method is not in the form this reader executes."""


def method_sources() -> dict[str, str]:
    return {m: textwrap.dedent(inspect.getsource(getattr(LedgerCore, m))) for m in METHODS}


@dataclass(frozen=True)
class Ranges:
    """A list of disjoint ranges, as "x lies in one of them"."""

    mem: Any


@dataclass(frozen=True)
class Current:
    """The pair a loop over :class:`Ranges` is at: x lies in it exactly when ``mem``."""

    mem: Any


@dataclass(frozen=True)
class Departed:
    """Summaries that left the context: ``mem`` is "x is in the coverage of one of them"."""

    mem: Any


@dataclass(frozen=True)
class PairV:
    """A pair argument (``summary_input``, ``summary_covers``)."""

    lo: Any
    hi: Any


class Opaque:
    """A value the claim does not depend on (ids, tags, messages, diagnostic state)."""


OPAQUE = Opaque()


@dataclass
class Ctx:
    """The context's coverage at x now, and the facts the SummaryContext calls contribute."""

    pc: Any
    facts: list[Any] = field(default_factory=list)


@dataclass
class St:
    vals: dict[str, Any]  # self.<attr> for SETS and SCALARS
    ctx: Ctx
    nonempty: dict[str, Any]  # a union's truth, while it is unchanged
    alive: Any = True
    returns: list[tuple[Any, Any]] = field(default_factory=list)


class Events:
    """Pointwise symbolic execution of the event methods (see the module docstring)."""

    def __init__(self, sources: dict[str, str], x: Any, commit: Callable[[Any, Any, Any], tuple[Any, Any, list[Any]]],
                 evicted: Any) -> None:
        self.x = x
        self.funcs: dict[str, pyast.FunctionDef] = {}
        for name, text in sources.items():
            try:
                tree = pyast.parse(text)
            except SyntaxError as exc:
                raise NotInForm(f"{name}: not Python: {exc}") from None
            fn = tree.body[0] if tree.body else None
            if not isinstance(fn, pyast.FunctionDef) or fn.name != name:
                raise NotInForm(f"{name}: not the method {name}")
            self.funcs[name] = fn
        self.commit = commit  # (pc before, honest at x, alive) -> (pc after, departed at x, facts)
        self.evicted = evicted  # the evicted summary's coverage at x
        self.fresh = 0
        self.writes: list[set[str]] = []  # per loop being executed: the unions its body changes
        self.reads: list[set[str]] = []
        self.loops: list[object] = []  # what each loop being executed is at: a Current, or Departed

    # -- helpers ---------------------------------------------------------------------------

    def _bool(self, what: str) -> Any:
        self.fresh += 1
        return z3.Bool(f"ev.{what}.{self.fresh}")

    def _in(self, lo: Any, hi: Any) -> Any:
        return z3.And(lo <= self.x, self.x < hi)

    def _read(self, name: str) -> None:
        for r in self.reads:
            r.add(name)

    def _write(self, st: St, name: str, cond: Any, value: Any) -> None:
        for w in self.writes:
            w.add(name)
        st.vals[name] = z3.If(z3.And(st.alive, cond), value, st.vals[name])
        st.nonempty.pop(name, None)

    def _truth_of_set(self, st: St, name: str) -> Any:
        self._read(name)
        if name not in st.nonempty:
            # a union is true when it holds an offset: so when it holds x (the fact at x)
            b = self._bool(f"{name}.nonempty")
            st.ctx.facts.append(z3.Or(b, z3.Not(st.vals[name])))
            st.nonempty[name] = b
        return st.nonempty[name]

    # -- expressions -----------------------------------------------------------------------

    def expr(self, node: pyast.expr, env: dict[str, Any], st: St) -> Any:
        match node:
            case pyast.Constant(value=v) if isinstance(v, bool):
                return z3.BoolVal(v)
            case pyast.Constant(value=v) if isinstance(v, int):
                return z3.IntVal(v)
            case pyast.Constant(value=None) | pyast.Constant(value=str()) | pyast.JoinedStr():
                return OPAQUE
            case pyast.Name(id=name):
                if name not in env:
                    raise NotInForm(f"unknown name {name!r}")
                return env[name]
            case pyast.Attribute(value=pyast.Name(id="self"), attr=a):
                if a in IGNORED:
                    return OPAQUE
                if a in SETS or a in SCALARS:
                    return ("self", a)
                if a == "summaries":
                    return ("summaries",)
                raise NotInForm(f"self.{a} is not part of the state read here")
            case pyast.Subscript(value=base, slice=pyast.Constant(value=int() as i)) if i in (0, 1):
                p = self.expr(base, env, st)
                if not isinstance(p, PairV):
                    raise NotInForm(f"{pyast.unparse(node)!r}: an index into something other than a pair argument")
                return p.lo if i == 0 else p.hi
            case pyast.Attribute(value=base, attr="coverage"):
                s = self.expr(base, env, st)
                if isinstance(s, Departed):
                    return Ranges(s.mem)
                raise NotInForm(f"{pyast.unparse(node)!r}: .coverage of something other than a departed summary")
            case pyast.Compare(left=left, ops=[pyast.IsNot() | pyast.Is() as op],
                               comparators=[pyast.Constant(value=None)]):
                if self.expr(left, env, st) is not OPAQUE:
                    raise NotInForm(f"{pyast.unparse(node)!r}: a None test of the state")
                b = self._bool("diag")
                return b if isinstance(op, pyast.IsNot) else z3.Not(b)
            case pyast.Compare(left=left, ops=[op], comparators=[right]):
                return _cmp(op, self.value(left, env, st), self.value(right, env, st))
            case pyast.BoolOp(op=op, values=values):
                parts = [self.truth(v, env, st) for v in values]
                return z3.And(parts) if isinstance(op, pyast.And) else z3.Or(parts)
            case pyast.UnaryOp(op=pyast.Not(), operand=o):
                return z3.Not(self.truth(o, env, st))
            case pyast.UnaryOp(op=pyast.USub(), operand=o):
                return -self.value(o, env, st)
            case pyast.BinOp(left=left, op=pyast.Add() | pyast.Sub() as op, right=right):
                a, b = self.value(left, env, st), self.value(right, env, st)
                return a + b if isinstance(op, pyast.Add) else a - b
            case pyast.Call(func=pyast.Name(id="max" | "min" as f), args=[a, b]):
                va, vb = self.value(a, env, st), self.value(b, env, st)
                return z3.If(va >= vb, va, vb) if f == "max" else z3.If(va <= vb, va, vb)
            case pyast.List(elts=[]):
                return Ranges(z3.BoolVal(False))
            case pyast.List(elts=[pyast.Tuple(elts=[lo, hi])]):
                return Ranges(self.range_at([lo, hi], env, st))
            case pyast.Call(func=pyast.Attribute(value=base, attr=("gaps" | "pieces") as m), args=args):
                s = self.union_at(base, env, st)
                inside = self.range_at(args, env, st)
                return Ranges(z3.And(inside, z3.Not(s) if m == "gaps" else s))
            case pyast.Call(func=pyast.Attribute(value=pyast.Attribute(value=pyast.Name(id="self"), attr="summaries"),
                                                 attr="uncovered"), args=args):
                inside = self.range_at(args, env, st)
                return Ranges(z3.And(inside, z3.Not(st.ctx.pc)))
            case pyast.Call(func=pyast.Attribute(value=pyast.Attribute(value=pyast.Name(id="self"), attr="summaries"),
                                                 attr="coverage"), args=[]):
                return ("pc",)
            case pyast.Call(func=pyast.Name(id="union_of"), args=[pyast.Tuple(elts=parts)]):
                return ("set", z3.Or([self.set_at(u, env, st) for u in parts] or [z3.BoolVal(False)]))
            case pyast.Call(func=pyast.Name(id="_difference"), args=[a, b]):
                return ("set", z3.And(self.set_at(a, env, st), z3.Not(self.set_at(b, env, st))))
            case pyast.Call(func=pyast.Attribute(value=pyast.Name(id="self"), attr=m), args=args) if m in self.funcs:
                return self.call(m, [self.expr(a, env, st) for a in args], st)
        raise NotInForm(f"cannot read {pyast.unparse(node)!r}")

    def value(self, node: pyast.expr, env: dict[str, Any], st: St) -> Any:
        v = self.expr(node, env, st)
        if isinstance(v, tuple) and v[:1] == ("self",) and v[1] in SCALARS:
            self._read(v[1])
            return st.vals[v[1]]
        if isinstance(v, (tuple, Opaque, Ranges, Current, Departed)):
            raise NotInForm(f"{pyast.unparse(node)!r} is not a number or a truth value")
        return v

    def truth(self, node: pyast.expr, env: dict[str, Any], st: St) -> Any:
        v = self.expr(node, env, st)
        if isinstance(v, tuple) and v[:1] == ("self",):
            if v[1] in SETS:
                return self._truth_of_set(st, v[1])
            self._read(v[1])
            return st.vals[v[1]]
        if z3.is_expr(v) and z3.is_bool(v):
            return v
        raise NotInForm(f"{pyast.unparse(node)!r} is not a truth value")

    def union_at(self, node: pyast.expr, env: dict[str, Any], st: St) -> Any:
        v = self.expr(node, env, st)
        if isinstance(v, tuple) and v[:1] == ("self",) and v[1] in SETS:
            self._read(v[1])
            return st.vals[v[1]]
        raise NotInForm(f"{pyast.unparse(node)!r} is not a union of the state")

    def set_at(self, node: pyast.expr, env: dict[str, Any], st: St) -> Any:
        v = self.expr(node, env, st)
        if v == ("pc",):
            return st.ctx.pc
        if isinstance(v, tuple) and v[:1] == ("self",) and v[1] in SETS:
            return st.vals[v[1]]
        raise NotInForm(f"{pyast.unparse(node)!r} is not a union of the state")

    def range_at(self, args: list[pyast.expr], env: dict[str, Any], st: St) -> Any:
        """x in the range the arguments name: two ints, or the pair a loop is at (by its names)."""
        if len(args) != 2:
            raise NotInForm("a range of other than two arguments")
        a, b = (self.expr(e, env, st) for e in args)
        if self.loops and not (a is b and a is self.loops[-1]):
            # in a loop, a range other than the loop's own pair would be read once per pair, not
            # only where the pair is: not offset by offset
            raise NotInForm(f"in a loop, a range other than the innermost loop's pair: "
                            f"{[pyast.unparse(e) for e in args]}")
        if isinstance(a, Current) and a is b:
            return a.mem
        if isinstance(a, (Current, Opaque)) or isinstance(b, (Current, Opaque)):
            raise NotInForm(f"a range mixing a loop's pair with something else: {[pyast.unparse(e) for e in args]}")
        return self._in(self.value(args[0], env, st), self.value(args[1], env, st))

    # -- statements ------------------------------------------------------------------------

    def call(self, name: str, args: list[Any], st: St) -> Any:
        fn = self.funcs[name]
        params = [a.arg for a in fn.args.args][1:]
        if len(args) > len(params):
            raise NotInForm(f"{name}: called with {len(args)} arguments")
        env = dict(zip(params, args, strict=False))
        for rest in params[len(args):]:
            env[rest] = OPAQUE  # defaults: tags and lineage ids, which the claim does not read
        for kw in fn.args.kwonlyargs:
            env[kw.arg] = OPAQUE
        outer_alive, outer_returns = st.alive, st.returns
        st.returns = []
        self.block(_body(fn), env, st)
        returns, st.returns = st.returns, outer_returns
        st.alive = outer_alive
        if all(v is OPAQUE for _, v in returns):
            return OPAQUE
        if all(isinstance(v, Ranges) for _, v in returns):
            return Ranges(z3.Or([z3.And(c, v.mem) for c, v in returns]))
        raise NotInForm(f"{name}: returns something other than ranges")

    def block(self, stmts: list[pyast.stmt], env: dict[str, Any], st: St) -> None:
        for s in stmts:
            self.stmt(s, env, st)

    def stmt(self, node: pyast.stmt, env: dict[str, Any], st: St) -> None:
        match node:
            case pyast.Expr(value=pyast.Call(func=pyast.Attribute(value=base, attr=m), args=args)) \
                    if self._ignored(base, env):
                return
            case pyast.Expr(value=pyast.Call(func=pyast.Attribute(value=base, attr=("add" | "remove") as m),
                                             args=args)):
                s = self.expr(base, env, st)
                if not (isinstance(s, tuple) and s[:1] == ("self",) and s[1] in SETS):
                    raise NotInForm(f"{pyast.unparse(node)!r}: {m} on something other than a union of the state")
                self._write(st, s[1], self.range_at(args, env, st), z3.BoolVal(m == "add"))
                return
            case pyast.Expr(value=pyast.Call(func=pyast.Attribute(
                    value=pyast.Attribute(value=pyast.Name(id="self"), attr="summaries"), attr="adopt"),
                    args=[_, _, lo, hi])) if not self.loops:
                added = self._in(self.value(lo, env, st), self.value(hi, env, st))
                st.ctx.pc = z3.If(st.alive, z3.Or(st.ctx.pc, added), st.ctx.pc)
                return
            case pyast.Expr(value=pyast.Call(func=pyast.Attribute(value=pyast.Name(id="self"), attr=m), args=args)) \
                    if m in self.funcs:
                self.call(m, [self.expr(a, env, st) for a in args], st)
                return
            case pyast.Assign(targets=[pyast.Name(id=name)], value=pyast.Call(func=pyast.Attribute(
                    value=pyast.Attribute(value=pyast.Name(id="self"), attr="summaries"), attr="commit"), args=args)) \
                    if not self.loops:
                if len(args) != 5:
                    raise NotInForm("summaries.commit with other than (sid, tag, honest, saw, keeps)")
                honest = self.expr(args[2], env, st)
                if not isinstance(honest, Ranges):
                    raise NotInForm("summaries.commit of an honest part that is not a list of ranges")
                pc, dep, facts = self.commit(st.ctx.pc, honest.mem, st.alive)
                st.ctx.pc = pc
                st.ctx.facts.extend(facts)
                env[name] = Departed(dep)
                return
            case pyast.Assign(targets=[pyast.Name(id=name)], value=pyast.Call(func=pyast.Attribute(
                    value=pyast.Attribute(value=pyast.Name(id="self"), attr="summaries"), attr="evict"))) \
                    if not self.loops:
                gone = self.evicted
                # the evicted summary was in the context, and leaves it: what it alone covered goes
                rest = self._bool("rest")  # the coverage of the summaries that stay, at x
                st.ctx.facts.append(st.ctx.pc == z3.Or(rest, gone))
                st.ctx.pc = z3.If(st.alive, rest, st.ctx.pc)
                env[name] = Departed(gone)
                return
            case pyast.Assign(targets=[pyast.Name(id=name)], value=v):
                value = self._value_or_opaque(v, env, st)
                if self.loops and value is not OPAQUE:
                    raise NotInForm(f"{pyast.unparse(node)!r}: a local set in a loop (it would carry across pairs)")
                env[name] = value
                return
            case pyast.Assign(targets=[pyast.Tuple(elts=names)], value=pyast.Tuple(elts=values)) \
                    if len(names) == len(values):
                for t, v in zip(names, values, strict=True):
                    self.assign_to(t, self._value_or_opaque(v, env, st), env, st)
                return
            case pyast.Assign(targets=[pyast.Tuple(elts=names)], value=pyast.Call(func=pyast.Attribute(
                    value=pyast.Attribute(value=pyast.Name(id="self"), attr="summaries"), attr="new_id"))):
                for t in names:
                    self.assign_to(t, OPAQUE, env, st)
                return
            case pyast.Assign(targets=[pyast.Attribute(value=pyast.Name(id="self"), attr=a)], value=v):
                self.assign_to(node.targets[0], self._value_or_opaque(v, env, st), env, st)
                return
            case pyast.AugAssign(target=pyast.Attribute(value=pyast.Name(id="self"), attr=a), op=pyast.Add(), value=v) \
                    if a in SCALARS and not self.loops:
                st.vals[a] = z3.If(st.alive, st.vals[a] + self.value(v, env, st), st.vals[a])
                return
            case pyast.If(test=test, body=body, orelse=orelse):
                cond = self.truth(test, env, st)
                self._branches(cond, body, orelse, env, st)
                return
            case pyast.For(target=target, iter=it, body=body, orelse=[]):
                self._loop(target, it, body, env, st)
                return
            case pyast.Return(value=v) if v is not None and not self.loops:
                st.returns.append((st.alive, self.expr(v, env, st)))
                st.alive = z3.BoolVal(False)
                return
            case pyast.Pass():
                return
            case pyast.Delete(targets=targets) if all(isinstance(t, pyast.Name) and t.id in env for t in targets):
                for t in targets:
                    assert isinstance(t, pyast.Name)
                    del env[t.id]
                return
            case pyast.Continue():
                raise NotInForm("continue outside a loop over diagnostic state")
        raise NotInForm(f"cannot execute {pyast.unparse(node)!r}")

    def _value_or_opaque(self, v: pyast.expr, env: dict[str, Any], st: St) -> Any:
        out = self.expr(v, env, st)
        if isinstance(out, tuple) and out[:1] == ("self",) and out[1] in SCALARS:
            return st.vals[out[1]]
        return out

    def assign_to(self, target: pyast.expr, value: Any, env: dict[str, Any], st: St) -> None:
        match target:
            case pyast.Name(id=name):
                env[name] = value
                return
            case pyast.Attribute(value=pyast.Name(id="self"), attr=a) if a in IGNORED:
                return
            case pyast.Attribute(value=pyast.Name(id="self"), attr=a) if a in SCALARS:
                if self.loops:
                    raise NotInForm(f"self.{a} set in a loop")
                if not (z3.is_expr(value)):
                    raise NotInForm(f"self.{a} set to something other than a number or truth value")
                for w in self.writes:
                    w.add(a)
                st.vals[a] = z3.If(st.alive, value, st.vals[a])
                return
            case pyast.Attribute(value=pyast.Name(id="self"), attr=a) if a in SETS:
                if self.loops:
                    raise NotInForm(f"self.{a} set whole in a loop")
                if not (isinstance(value, tuple) and value[:1] == ("set",)):
                    raise NotInForm(f"self.{a} set to something other than a union of the state's unions")
                self._write(st, a, z3.BoolVal(True), value[1])
                return
        raise NotInForm(f"cannot assign to {pyast.unparse(target)!r}")

    def _ignored(self, base: pyast.expr, env: dict[str, Any]) -> bool:
        """A call on diagnostic state (``self.origins...``, or a local bound to it)."""
        match base:
            case pyast.Attribute(value=pyast.Name(id="self"), attr=a):
                return a in IGNORED
            case pyast.Name(id=name):
                return env.get(name) is OPAQUE
        return False

    def _branches(self, cond: Any, body: list[pyast.stmt], orelse: list[pyast.stmt], env: dict[str, Any],
                  st: St) -> None:
        alive = st.alive
        st.alive = z3.And(alive, cond)
        self.block(body, env, st)
        after_body = st.alive
        st.alive = z3.And(alive, z3.Not(cond))
        self.block(orelse, env, st)
        st.alive = z3.Or(after_body, st.alive)

    def _diagnostic_only(self, stmts: list[pyast.stmt], env: dict[str, Any]) -> bool:
        """Statements that touch diagnostic state only (and ``continue``)."""
        for s in stmts:
            match s:
                case pyast.Continue():
                    continue
                case pyast.Expr(value=pyast.Call(func=pyast.Attribute(value=base))) if self._ignored(base, env):
                    continue
                case pyast.If(test=pyast.UnaryOp(op=pyast.Not(), operand=pyast.Attribute(
                        value=pyast.Name(id="self"), attr=a)), body=b, orelse=o) if a in SETS:
                    if self._diagnostic_only(b, env) and self._diagnostic_only(o, env):
                        continue
                case pyast.For(body=b, iter=pyast.Call(func=pyast.Attribute(value=pyast.Attribute(
                        value=pyast.Name(id="self"), attr=a), attr="gaps" | "pieces")), orelse=[]) if a in SETS:
                    if self._diagnostic_only(b, env):
                        continue
            return False
        return True

    def _loop(self, target: pyast.expr, it: pyast.expr, body: list[pyast.stmt], env: dict[str, Any],
              st: St) -> None:
        # a loop whose body touches diagnostic state only: only the iterator's effect counts
        if self._diagnostic_only(body, env):
            match it:
                case pyast.Call(func=pyast.Attribute(value=base, attr="add_gaps"), args=args):
                    s = self.expr(base, env, st)
                    if isinstance(s, tuple) and s[:1] == ("self",) and s[1] in SETS:
                        self._write(st, s[1], self.range_at(args, env, st), z3.BoolVal(True))
                        return
                case pyast.Call(func=pyast.Attribute(attr="gaps" | "pieces")):
                    self.expr(it, env, st)
                    return
        if not isinstance(target, (pyast.Name, pyast.Tuple)):
            raise NotInForm(f"a loop over {pyast.unparse(target)!r}")
        self.reads.append(set())
        self.writes.append(set())
        over = self.expr(it, env, st)
        inner = dict(env)
        at: object = over  # what this loop is at: its pair, or every departed summary at once
        if isinstance(over, Ranges) and isinstance(target, pyast.Tuple) and len(target.elts) == 2 and all(
                isinstance(e, pyast.Name) for e in target.elts):
            cur = Current(over.mem)
            at = cur
            for e in target.elts:
                assert isinstance(e, pyast.Name)
                inner[e.id] = cur
        elif isinstance(over, Departed) and isinstance(target, pyast.Name):
            inner[target.id] = over  # every departed summary at once: the body's effects are constant
        else:
            raise NotInForm(f"a loop over {pyast.unparse(it)!r}, which is not a list of ranges or of summaries")
        alive = st.alive
        st.alive = z3.And(alive, over.mem)
        self.loops.append(at)
        try:
            self.block(body, inner, st)
        finally:
            self.loops.pop()
        st.alive = alive
        reads, writes = self.reads.pop(), self.writes.pop()
        if reads & writes:
            raise NotInForm(f"a loop over {pyast.unparse(it)!r} changes what it reads: {sorted(reads & writes)}")
        for r in self.reads:
            r.update(reads)
        for w in self.writes:
            w.update(writes)


def _body(fn: pyast.FunctionDef) -> list[pyast.stmt]:
    return [s for s in fn.body if not (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant))]


def _cmp(op: pyast.cmpop, a: Any, b: Any) -> Any:
    match op:
        case pyast.Lt():
            return a < b
        case pyast.LtE():
            return a <= b
        case pyast.Gt():
            return a > b
        case pyast.GtE():
            return a >= b
        case pyast.Eq():
            return a == b
        case pyast.NotEq():
            return a != b
    raise NotInForm(f"comparison {type(op).__name__}")


# -- the claims ------------------------------------------------------------------------------


def _start(x: Any) -> tuple[St, dict[str, Any]]:
    """A state where the invariant holds at x, and its names."""
    v: dict[str, Any] = {s: z3.Bool(f"st.{s}") for s in SETS}
    v.update({"n": z3.Int("st.n"), "_min_lo": z3.Int("st._min_lo"), "_max_hi": z3.Int("st._max_hi"),
              "reversed": z3.Bool("st.reversed")})
    pc = z3.Bool("st.PC")
    return St(dict(v), Ctx(pc), {}), {**v, "PC": pc}


def invariant(v: dict[str, Any], pc: Any) -> Any:
    """``R = PC ∪ SP`` and ``lost = TRU \\ R``, at x."""
    return z3.And(v["recovered"] == z3.Or(pc, v["spilled"]),
                  v["lost"] == z3.And(v["truncated"], z3.Not(v["recovered"])))


def _prove(claim: Any, **kwargs: Any) -> Result:
    return prove(claim, **kwargs)[0]


def lineage_at(node: spec_ast.Node, names: dict[str, Any]) -> Any:
    """A ``[lineage]`` expression of the spec (names and set operations) at the offset x."""
    match node:
        case spec_ast.Name(name=n):
            return names[n]
        case spec_ast.SetOp(op="|", left=a, right=b):
            return z3.Or(lineage_at(a, names), lineage_at(b, names))
        case spec_ast.SetOp(op="&", left=a, right=b):
            return z3.And(lineage_at(a, names), lineage_at(b, names))
        case spec_ast.SetOp(op="\\", left=a, right=b):
            return z3.And(lineage_at(a, names), z3.Not(lineage_at(b, names)))
    raise NotInForm(f"a lineage expression of the spec this proof does not read: {node!r}")


def event_parts(sources: dict[str, str] | None = None, spec: Spec | None = None) -> Parts:
    from proofs._common import project_spec

    src = sources if sources is not None else method_sources()
    lineage = (spec or project_spec()).lineage
    if lineage is None:
        raise NotInForm("the spec has no [lineage] table: no E(S_k) to compare the ledger's with")
    x = z3.Int("x")
    lo, hi = z3.Ints("ev.lo ev.hi")
    saw_cov, kept_cov, dep_cov = z3.Bools("lin.SEEN lin.KEPT lin.DEP")
    honest_parts: list[Any] = []

    def commit(pc: Any, honest: Any, alive: Any) -> tuple[Any, Any, list[Any]]:
        # SummaryContext.commit's meaning: the context was the seen, the kept and the departed
        # summaries; now it is the kept ones and the new one, E = honest ∪ SEEN
        honest_parts.append(honest)
        new_pc = z3.Or(honest, saw_cov, kept_cov)
        return z3.If(alive, new_pc, pc), dep_cov, [pc == z3.Or(saw_cov, kept_cov, dep_cov)]

    def run(event: str, args: list[Any]) -> tuple[St, dict[str, Any]]:
        st, names = _start(x)
        Events(src, x, commit, z3.Bool("lin.EVICTED")).call(event, args, st)
        return st, names

    def recorded(kind: str) -> dict[str, Callable[[dict[str, Any]], Any]]:
        """A truncation or spill of ``[lo, hi)``: its union grows by it, the bounds take it in."""
        return {kind: lambda b: z3.Or(b[kind], z3.And(lo <= x, x < hi)),
                "_min_lo": lambda b: z3.If(lo < b["_min_lo"], lo, b["_min_lo"]),
                "_max_hi": lambda b: z3.If(hi > b["_max_hi"], hi, b["_max_hi"]),
                "reversed": lambda b: z3.Or(b["reversed"], lo > hi)}

    def history_grows(b: dict[str, Any]) -> Any:
        return b["n"] + hi

    def adopted(b: dict[str, Any]) -> Any:  # spec 1.2: [0, hi) predates the guard
        return z3.Or(b["unverified"], z3.And(x >= 0, x < hi))

    inp, cov = PairV(z3.Int("ev.a"), z3.Int("ev.b")), PairV(z3.Int("ev.c"), z3.Int("ev.d"))
    events: list[tuple[str, list[Any], dict[str, Callable[[dict[str, Any]], Any]]]] = [
        ("truncate", [lo, hi], recorded("truncated")),
        ("spill", [lo, hi], recorded("spilled")),
        ("compact", [inp, cov], {}),
        ("evict", [OPAQUE], {}),
        ("adopt", [hi, OPAQUE], {"n": history_grows, "unverified": adopted}),
    ]
    for name, args, changes in events:
        try:
            st, before = run(name, args)
        except NotInForm as exc:
            yield f"{name}: the code is in the form read here", partial(
                Result, "counterexample", detail=f"LedgerCore.{name} is not in the form T19 reads: {exc}")
            return
        assumptions = z3.And(invariant(before, before["PC"]), *st.ctx.facts)
        # the facts are satisfiable (so no part holds vacuously)
        yield f"{name}: keeps R = PC ∪ SP and lost = TRU \\ R", partial(_prove,
            invariant(st.vals, st.ctx.pc), assumptions=assumptions)
        for k in ("truncated", "spilled", "unverified", *SCALARS):
            want = changes[k](before) if k in changes else before[k]
            yield f"{name}: {k} is {'updated' if k in changes else 'unchanged'}", partial(_prove,
                st.vals[k] == want, assumptions=assumptions)
        if name == "compact":  # what compact hands to commit makes the spec's E(S_k) of it
            spec_e = lineage_at(lineage.effective_coverage, {
                "C": z3.And(cov.lo <= x, x < cov.hi), "I": z3.And(inp.lo <= x, x < inp.hi),
                "TRU": before["truncated"], "SEEN": saw_cov, "KEPT": kept_cov})
            if len(honest_parts) != 1:
                yield "compact: commits once", partial(Result, "counterexample", detail=(
                    f"LedgerCore.compact is not in the form T19 reads: {len(honest_parts)} commits"))
                return
            yield "compact: the new summary's coverage (honest part ∪ SEEN) is the spec's E(S_k)", partial(
                _prove, z3.Or(honest_parts[0], saw_cov) == spec_e, assumptions=assumptions)
        if name == "adopt":  # the adopted range joins the context's coverage
            yield "adopt: PC grows by [0, hi)", partial(_prove,
                st.ctx.pc == z3.Or(before["PC"], z3.And(x >= 0, x < hi)), assumptions=assumptions)
