"""Read the generated checker's decision functions back and prove each clause against the spec.

The profile functions of ``src/tailguard/_generated/checker.py`` (``_check_<profile>``) are
parsed with :mod:`ast`; their shape (the ``well_formed`` gate, the definitions, one ``if`` per
clause in spec order, first-failure or all-failures reporting, the holes) must be the one the
renderer prints, and every clause condition and holes expression is translated to z3 and proved
equal, for lists of any length, to the spec's per-offset formula (:class:`z3_encode.Encoder`).

In the translation each call of an algorithm gets the meaning T18 proves for it
(``proofs/runtime_algorithms.py``): ``_merged``/``_merged_runs`` the union of their pairs, as
a normal list; ``_gaps(lo, hi, S)`` ``[lo, hi) \\ S`` as a normal list, when S is one; ``_meets``
an intersection test (its body is read and proved here from the contract of ``bisect_left``);
``_bounded`` a bound on every pair (the standard library's ``min``/``max``/``all``: its text is
compared with the renderer's; its type tests hold on every list of pairs of integers, which is
what the symbolic case is, and make it refuse anything else, which ``check`` relies on).
A call whose precondition is not met (``_gaps`` of a list that is not normal) is a failure,
not an assumption.

Only the proofs import this module (it needs z3).
"""

from __future__ import annotations

import ast as pyast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from tailguard.backends import scan_ir
from tailguard.backends.z3_encode import Encoder, ZCase, ZList, fresh_int, symbolic_case
from tailguard.backends.z3_eval import prove
from tailguard.base.errors import NotProvable as NotProvable
from tailguard.speclang import ast
from tailguard.speclang.load import Profile, Spec
from tailguard.tooling.theorems import Result

Parts = list[tuple[str, Result]]
Pred = Callable[[Any], Any]

#: helpers whose text must be the renderer's, character for character (after parsing)
WRAPPERS = ("_merged", "_merged_runs", "_merged_bounded", "_gaps_from", "_meets", "_bounded")


@dataclass(frozen=True)
class SetVal:
    """A list of pairs at run time: its members, and whether it is a normal list."""

    pred: Pred
    normal: bool


@dataclass(frozen=True)
class RawList:
    """An input list of pairs (any pairs)."""

    zl: ZList


@dataclass(frozen=True)
class Fused:
    """``_merged_bounded(L, low, high)``: the union of ``L`` (a normal list) when ``ok`` (every
    pair of ``L`` in ``[low, high]``), else None. T18 proves the one pass ``_merge_run_bounded``
    returns a list only when every item is such a pair and the list is then the union; the
    wrapper's text is the renderer's (``_bounded`` and a sort decide when the pass gave up), so
    ``X is not None`` is ``ok``. The value is a set only after a gate that holds only when it is
    not None (:attr:`Translator.gated`)."""

    union: SetVal
    ok: Any


def _wrapper_text(source: str) -> dict[str, str]:
    tree = pyast.parse(source)
    return {n.name: pyast.dump(n) for n in tree.body if isinstance(n, pyast.FunctionDef) and n.name in WRAPPERS}


def wrappers_part(source: str) -> tuple[str, Result]:
    want = _wrapper_text(scan_ir.MERGED_PY)
    got = _wrapper_text(source)
    for name in WRAPPERS:
        if got.get(name) != want[name]:
            return (f"{name} is the renderer's", Result(
                "counterexample", detail=f"{name} in the checker file differs from backends/scan_ir.MERGED_PY"))
    return ("the standard-library wrappers are the renderer's", Result("proved", detail="text compared"))


#: module constants a profile function's return uses, each assigned once at module level to
#: exactly this: the allow decision, and ``tuple.__new__`` (``_new(Decision, (d, f, h))`` is
#: ``Decision(d, f, h)`` without the Python-level ``__new__`` of a NamedTuple)
CONSTANTS = {"_ALLOW": 'Decision("allow", (), ())', "_new": "tuple.__new__"}


def constants_part(source: str) -> tuple[str, Result]:
    """Every name of :data:`CONSTANTS` is assigned once, at module level, to its text."""
    tree = pyast.parse(source)
    for name, text in CONSTANTS.items():
        want = pyast.dump(pyast.parse(text, mode="eval").body)
        sets = [n for n in pyast.walk(tree) if isinstance(n, (pyast.Assign, pyast.AnnAssign, pyast.AugAssign))
                and any(isinstance(t, pyast.Name) and t.id == name
                        for t in (n.targets if isinstance(n, pyast.Assign) else [n.target]))]
        top = [n for n in tree.body if n in sets]
        if (len(sets) != 1 or len(top) != 1 or not isinstance(top[0], pyast.Assign)
                or pyast.dump(top[0].value) != want):
            return (name, Result("counterexample", detail=f"{name} must be assigned once, at module level, {text}"))
        defs = [n for n in pyast.walk(tree) if isinstance(n, (pyast.FunctionDef, pyast.ClassDef)) and n.name == name]
        if defs:
            return (name, Result("counterexample", detail=f"{name} is also defined by a def or class"))
    return ("the module constants of the decision are the renderer's", Result("proved", detail="text compared"))


def meets_part(source: str) -> tuple[str, Result]:
    """``_meets`` as written in the file, from ``bisect_left``'s contract, is an intersection test."""
    tree = pyast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, pyast.FunctionDef) and n.name == "_meets"), None)
    if fn is None:
        return ("_meets", Result("counterexample", detail="_meets is missing"))
    from tailguard.backends.scan_z3 import Arr
    items = Arr.named("items")
    start, stop, j, x = z3.Int("start"), z3.Int("stop"), z3.Int("bisect"), z3.Int("x")
    body = [s for s in fn.body if not (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant))]
    try:
        assign, ret = body
        if not (isinstance(assign, pyast.Assign) and pyast.unparse(assign.value) == "_bisect_left(items, (stop,)) - 1"
                and pyast.unparse(assign.targets[0]) == "j" and isinstance(ret, pyast.Return)
                and ret.value is not None):
            raise NotProvable(f"line {assign.lineno}: _meets must start with j = _bisect_left(items, (stop,)) - 1")
        env = {"start": start, "stop": stop, "j": j - 1}
        got = _small(ret.value, env, items)
    except (NotProvable, ValueError) as exc:
        return ("_meets", Result("counterexample", detail=f"_meets is not in the proved form: {exc}"))
    i = fresh_int("i")
    # bisect_left(items, (stop,)): the first index whose pair is >= (stop,), i.e. starts at or
    # after stop (a normal list is sorted by start); every pair before it starts before stop
    contract = z3.And(j >= 0, j <= items.length,
                      z3.ForAll([i], z3.Implies(z3.And(i >= 0, i < j), z3.Select(items.lo, i) < stop)),
                      z3.Implies(j < items.length, z3.Select(items.lo, j) >= stop))
    meaning = z3.Exists([x], z3.And(start <= x, x < stop, items.mem(x)))
    return ("_meets (read from the file) is an intersection test",
            prove(got == meaning, assumptions=z3.And(items.normal(), contract))[0])


def gaps_from_part(source: str) -> tuple[str, Result]:
    """``_gaps_from(start, stop, S)`` (its text is the renderer's: :func:`wrappers_part`) is
    ``_gaps(start, stop, S)`` for a normal list S: from ``bisect_left``'s contract, the suffix it
    scans is normal and has the same members as S at and after ``start``."""
    tree = pyast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, pyast.FunctionDef) and n.name == "_gaps_from"), None)
    if fn is None:
        return ("_gaps_from", Result("counterexample", detail="_gaps_from is missing"))
    body = [s for s in fn.body if not (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant))]
    from tailguard.backends.scan_z3 import Arr
    items = Arr.named("items")
    start, b, x = z3.Int("start"), z3.Int("bisect"), z3.Int("x")
    # bound variables of fixed names (not fresh_int's counter): the solver's search, and so
    # whether a broken _gaps_from is refuted within budget, does not depend on what ran before
    i, i2 = z3.Int("gaps_from.i"), z3.Int("gaps_from.i2")
    try:
        # j = _bisect_left(items, (start,)) <+|-> k;  return _gaps(start, stop, items[E:] if C else items)
        assign, ret = body
        if not (isinstance(assign, pyast.Assign) and pyast.unparse(assign.targets[0]) == "j"
                and isinstance(assign.value, pyast.BinOp)
                and pyast.unparse(assign.value.left) == "_bisect_left(items, (start,))"):
            raise NotProvable(f"line {assign.lineno}: must be j = _bisect_left(items, (start,)) - <k>")
        env: dict[str, Any] = {"b": b}
        shifted = pyast.BinOp(pyast.Name("b"), assign.value.op, assign.value.right, lineno=assign.lineno)
        j = _small(shifted, env, items)
        env = {"j": j}
        call = ret.value if isinstance(ret, pyast.Return) else None
        if not (isinstance(call, pyast.Call) and pyast.unparse(call.func) == "_gaps"
                and [pyast.unparse(a) for a in call.args[:2]] == ["start", "stop"] and len(call.args) == 3
                and isinstance(call.args[2], pyast.IfExp) and pyast.unparse(call.args[2].orelse) == "items"
                and isinstance(call.args[2].body, pyast.Subscript)
                and pyast.unparse(call.args[2].body.value) == "items"
                and isinstance(call.args[2].body.slice, pyast.Slice)
                and call.args[2].body.slice.upper is None and call.args[2].body.slice.step is None
                and call.args[2].body.slice.lower is not None):
            raise NotProvable(f"line {ret.lineno}: must be return _gaps(start, stop, items[<e>:] if <c> else items)")
        first = z3.If(_small(call.args[2].test, env, items), _small(call.args[2].body.slice.lower, env, items), 0)
    except (NotProvable, ValueError) as exc:
        return ("_gaps_from", Result("counterexample", detail=f"_gaps_from is not in the proved form: {exc}"))
    contract = z3.And(b >= 0, b <= items.length,
                      z3.ForAll([i], z3.Implies(z3.And(i >= 0, i < b), z3.Select(items.lo, i) < start)),
                      z3.Implies(b < items.length, z3.Select(items.lo, b) >= start))
    # the suffix items[first:] (a slice from past the end is empty; from before 0 it counts
    # from the end, which a first below 0 would be: a failure, not an assumption)
    suffix_mem = z3.Exists([i], z3.And(i >= first, i < items.length,
                                       z3.Select(items.lo, i) <= x, x < z3.Select(items.hi, i)))
    suffix_normal = z3.And(
        first <= items.length,
        z3.ForAll([i], z3.Implies(z3.And(i >= first, i < items.length),
                                  z3.Select(items.lo, i) < z3.Select(items.hi, i))),
        z3.ForAll([i, i2], z3.Implies(z3.And(i >= first, i < i2, i2 < items.length),
                                      z3.Select(items.hi, i) < z3.Select(items.lo, i2))))
    what = "_gaps_from (read from the file) is _gaps on a suffix with the same members from start"
    # first, a search for a counterexample on lists of at most 3 pairs, the quantifiers written
    # out (quantifier-free: refuted at once, whatever terms the process built before; a
    # counterexample there is one of the claim below)
    for n in range(4):
        def lo_(k: int) -> Any:
            return z3.Select(items.lo, k)

        def hi_(k: int) -> Any:
            return z3.Select(items.hi, k)

        small = z3.And(items.length == n, b >= 0, b <= n,
                       *[z3.Implies(k < b, lo_(k) < start) for k in range(n)],
                       *[z3.Implies(b == k, lo_(k) >= start) for k in range(n)],
                       *[lo_(k) < hi_(k) for k in range(n)],
                       *[hi_(k) < lo_(k2) for k in range(n) for k2 in range(k + 1, n)])
        mem_all = z3.Or([z3.And(lo_(k) <= x, x < hi_(k)) for k in range(n)] or [z3.BoolVal(False)])
        mem_suffix = z3.Or([z3.And(k >= first, lo_(k) <= x, x < hi_(k)) for k in range(n)] or [z3.BoolVal(False)])
        bounded = z3.And(first >= 0, first <= n, z3.Implies(x >= start, mem_suffix == mem_all))
        r = prove(bounded, assumptions=small)[0]
        if r.status == "counterexample":
            return (what, r)
    # each part on its own (smaller queries: a broken one is refuted within budget whatever
    # terms the process built before)
    for claim in (first >= 0, suffix_normal, z3.Implies(x >= start, suffix_mem == items.mem(x))):
        r = prove(claim, assumptions=z3.And(items.normal(), contract))[0]
        if r.status != "proved":
            return (what, r)
    return (what, r)


def _small(node: pyast.expr, env: dict[str, Any], items: Any) -> Any:
    """The tiny expression language of ``_meets``'s return."""
    if isinstance(node, pyast.BoolOp):
        vals = [_small(v, env, items) for v in node.values]
        return z3.And(vals) if isinstance(node.op, pyast.And) else z3.Or(vals)
    if isinstance(node, pyast.Compare) and len(node.ops) == 1:
        return _cmp(node.ops[0], _small(node.left, env, items), _small(node.comparators[0], env, items))
    if isinstance(node, pyast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, pyast.BinOp) and isinstance(node.op, (pyast.Add, pyast.Sub)):
        a, c = _small(node.left, env, items), _small(node.right, env, items)
        return a + c if isinstance(node.op, pyast.Add) else a - c
    if isinstance(node, pyast.Constant) and type(node.value) is int:
        return z3.IntVal(node.value)
    if (isinstance(node, pyast.Subscript) and isinstance(node.value, pyast.Subscript)
            and pyast.unparse(node.value.value) == "items" and isinstance(node.slice, pyast.Constant)):
        idx = _small(node.value.slice, env, items)
        return z3.Select(items.lo if node.slice.value == 0 else items.hi, idx)
    raise NotProvable(f"line {node.lineno}: {pyast.unparse(node)!r}")


_CMP: dict[type, Callable[[Any, Any], Any]] = {
    pyast.Lt: lambda a, b: a < b, pyast.LtE: lambda a, b: a <= b, pyast.Gt: lambda a, b: a > b,
    pyast.GtE: lambda a, b: a >= b, pyast.Eq: lambda a, b: a == b, pyast.NotEq: lambda a, b: a != b,
}


def _cmp(op: pyast.cmpop, a: Any, b: Any) -> Any:
    if type(op) not in _CMP:
        raise NotProvable(f"comparison {type(op).__name__}")
    return _CMP[type(op)](a, b)


class Translator:
    """Python expressions of a ``_check_<profile>`` function to z3, on one symbolic case."""

    def __init__(self, spec: Spec, zc: ZCase) -> None:
        self.spec, self.zc = spec, zc
        self.names: dict[str, Any] = {f"v_{i.symbol}": self._input(i.symbol, i.type) for i in spec.inputs}
        #: the gate has been passed (read_shape sets it): a :class:`Fused` value may be used as
        #: its union only then, and the gate's proof against the spec shows it holds only when
        #: every list is bounded, so none is None there
        self.gated = False
        self.expecting_fused = False  # reading the operand of `is not None`

    def _input(self, symbol: str, kind: str) -> Any:
        v = self.zc[symbol]
        return RawList(v) if kind == "intervals" else v

    def bind(self, name: str, value: Any) -> None:
        self.names[name] = value

    def value(self, node: pyast.expr) -> Any:
        """A z3 int/bool term, a pair (tuple of terms), a :class:`SetVal` or a :class:`RawList`."""
        match node:
            case pyast.Name(id=n) if n in self.names:
                v = self.names[n]
                if isinstance(v, Fused) and not self.expecting_fused:
                    if not self.gated:
                        raise NotProvable(f"line {node.lineno}: {n} (None unless bounded) used before the gate")
                    return v.union
                return v
            case pyast.Constant(value=v) if type(v) is int:
                return z3.IntVal(v)
            case pyast.Constant(value=v) if type(v) is bool:
                return z3.BoolVal(v)
            case pyast.Subscript(value=base, slice=pyast.Constant(value=i)) if i in (0, 1):
                pair = self.value(base)
                if not isinstance(pair, tuple):
                    raise NotProvable(f"line {node.lineno}: {pyast.unparse(node)!r} indexes a non-pair")
                return pair[0 if i == 0 else 1]
            case pyast.Tuple(elts=[lo, hi]):
                return (self.int(lo), self.int(hi))
            case pyast.BinOp(left=l, op=pyast.Add(), right=r):
                a, b = self.value(l), self.value(r)
                if isinstance(a, (SetVal, RawList)) or isinstance(b, (SetVal, RawList)):
                    pa, pb = self.members(a, node), self.members(b, node)
                    return SetVal(lambda x: z3.Or(pa(x), pb(x)), normal=False)
                return a + b
            case pyast.BinOp(left=l, op=pyast.Sub(), right=r):
                return self.int(l) - self.int(r)
            case pyast.List(elts=elts):
                pairs = [self.value(e) for e in elts]
                if not all(isinstance(p, tuple) for p in pairs):
                    raise NotProvable(f"line {node.lineno}: a list literal of non-pairs")
                return SetVal(lambda x: z3.Or([z3.And(p[0] <= x, x < p[1]) for p in pairs] or [False]),
                              normal=False)
            case pyast.Call(func=pyast.Name(id="max" | "min" as f), args=[a, b]):
                x, y = self.int(a), self.int(b)
                return z3.If(x >= y, x, y) if f == "max" else z3.If(x <= y, x, y)
            case pyast.Call(func=pyast.Name(id="_merged" | "_merged_runs"), args=[arg]):
                return SetVal(self.members(self.value(arg), node), normal=True)
            case pyast.Call(func=pyast.Name(id="_gaps" | "_gaps_from"), args=[lo, hi, s]):
                a, b, sv = self.int(lo), self.int(hi), self.normal_set(s)
                return SetVal(lambda x: z3.And(a <= x, x < b, z3.Not(sv(x))), normal=True)
            case pyast.Call(func=pyast.Name(id="_meets"), args=[lo, hi, s]):
                a, b, sv = self.int(lo), self.int(hi), self.normal_set(s)
                y = fresh_int("y")
                return z3.Exists([y], z3.And(a <= y, y < b, sv(y)))
            case pyast.Call(func=pyast.Name(id="_merged_bounded"), args=[lst, low, high]):
                raw = self.value(lst)
                if not isinstance(raw, RawList):
                    raise NotProvable(f"line {node.lineno}: _merged_bounded of a non-input list")
                lo_b, hi_b = self.int(low), self.int(high)
                return Fused(SetVal(self.members(raw, node), normal=True),
                             raw.zl.forall(lambda p: z3.And(lo_b <= p[0], p[0] <= p[1], p[1] <= hi_b)))
            case pyast.Compare(left=x, ops=[pyast.IsNot()], comparators=[pyast.Constant(value=None)]):
                self.expecting_fused = True
                try:
                    f = self.value(x)
                finally:
                    self.expecting_fused = False
                if not isinstance(f, Fused):
                    raise NotProvable(f"line {node.lineno}: `is not None` of a value that is never None")
                return f.ok
            case pyast.Call(func=pyast.Name(id="_bounded"), args=[lst, low, high]):
                raw = self.value(lst)
                if not isinstance(raw, RawList):
                    raise NotProvable(f"line {node.lineno}: _bounded of a non-input list")
                lo_b, hi_b = self.int(low), self.int(high)
                return raw.zl.forall(lambda p: z3.And(lo_b <= p[0], p[0] <= p[1], p[1] <= hi_b))
            case pyast.Call(func=pyast.Name(id="all" | "any" as q), args=[pyast.GeneratorExp() as g]):
                return self.quant(q, g)
            case pyast.Compare(left=first, ops=ops, comparators=rest):
                if len(ops) == 1 and isinstance(ops[0], pyast.In) and pyast.unparse(rest[0]) == "UNITS":
                    u = self.int(first)
                    return z3.And(u >= 0, u < len(self.spec.units))
                vals = [self.int(first), *(self.int(r) for r in rest)]
                return z3.And([_cmp(op, a, b) for op, a, b in zip(ops, vals, vals[1:], strict=False)])
            case pyast.BoolOp(op=op, values=vals):
                terms = [self.bool(v) for v in vals]
                return z3.And(terms) if isinstance(op, pyast.And) else z3.Or(terms)
            case pyast.UnaryOp(op=pyast.Not(), operand=o):
                v = self.value(o)
                if isinstance(v, RawList):  # `not L` for an input list: it has no pairs
                    return v.zl.length == 0
                if isinstance(v, SetVal):
                    if not v.normal:
                        raise NotProvable(f"line {node.lineno}: emptiness of a list that is not normal")
                    y = fresh_int("y")
                    return z3.ForAll([y], z3.Not(v.pred(y)))
                return z3.Not(v)
        raise NotProvable(f"line {getattr(node, 'lineno', '?')}: {pyast.unparse(node)!r} is not in the proved form")

    def int(self, node: pyast.expr) -> Any:
        v = self.value(node)
        if isinstance(v, (tuple, SetVal, RawList)):
            raise NotProvable(f"line {node.lineno}: {pyast.unparse(node)!r} is not a number")
        return v

    def bool(self, node: pyast.expr) -> Any:
        v = self.value(node)
        if isinstance(v, RawList):  # the truth of an input list: it has a pair
            return v.zl.length > 0
        if isinstance(v, tuple):
            raise NotProvable(f"line {node.lineno}: the truth of a pair")
        if isinstance(v, SetVal):
            if not v.normal:
                raise NotProvable(f"line {node.lineno}: truth of a list that is not normal")
            y = fresh_int("y")
            return z3.Exists([y], v.pred(y))
        return v

    def members(self, v: Any, node: pyast.AST) -> Pred:
        if isinstance(v, SetVal):
            return v.pred
        if isinstance(v, RawList):
            return lambda x: v.zl.mem(x)
        raise NotProvable(f"line {getattr(node, 'lineno', '?')}: not a list of pairs")

    def normal_set(self, node: pyast.expr) -> Pred:
        v = self.value(node)
        if not (isinstance(v, SetVal) and v.normal):
            raise NotProvable(f"line {node.lineno}: {pyast.unparse(node)!r} is not a normal list "
                              "(_gaps and _meets need one)")
        return v.pred

    def quant(self, q: str, g: pyast.GeneratorExp) -> Any:
        if len(g.generators) != 1 or g.generators[0].ifs:
            raise NotProvable(f"line {g.lineno}: one plain generator expected")
        gen = g.generators[0]
        if not isinstance(gen.target, pyast.Name):
            raise NotProvable(f"line {g.lineno}: the generator must bind one name")
        var = gen.target.id
        sources: list[Any] = []
        if isinstance(gen.iter, pyast.Tuple):
            for e in gen.iter.elts:
                sources.append(self.value(e.value) if isinstance(e, pyast.Starred) else self.value(e))
        else:
            sources.append(self.value(gen.iter))
        parts = []
        for src in sources:
            def body(p: Any) -> Any:
                saved = self.names.get(var)
                self.names[var] = p
                try:
                    return self.bool(g.elt)
                finally:
                    if saved is None:
                        self.names.pop(var, None)
                    else:
                        self.names[var] = saved
            if isinstance(src, tuple):
                parts.append(body(src))
            elif isinstance(src, RawList):
                parts.append(src.zl.forall(body) if q == "all" else src.zl.exists(body))
            else:
                raise NotProvable(f"line {g.lineno}: a generator over a computed list")
        return z3.And(parts) if q == "all" else z3.Or(parts)


@dataclass
class Shape:
    """What a ``_check_<profile>`` function does, read from its code."""

    gate: tuple[str, pyast.expr] | None
    clauses: list[tuple[str, pyast.expr, pyast.expr | None]]  # (id, condition that holds, holes)
    first: bool  # first-failure reporting


def _decision_call(node: pyast.AST) -> tuple[str, tuple[str, ...]] | None:
    if (isinstance(node, pyast.Return) and isinstance(node.value, pyast.Call)
            and pyast.unparse(node.value.func) == "Decision" and len(node.value.args) == 3):
        verdict, failed, holes = node.value.args
        if (isinstance(verdict, pyast.Constant) and isinstance(failed, pyast.Tuple)
                and all(isinstance(e, pyast.Constant) for e in failed.elts) and pyast.unparse(holes) == "()"):
            return str(verdict.value), tuple(str(e.value) for e in failed.elts if isinstance(e, pyast.Constant))
    return None


def read_shape(fn: pyast.FunctionDef, tr: Translator) -> Shape:
    body = [s for s in fn.body if not (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Constant))]
    gate: tuple[str, pyast.expr] | None = None
    clauses: list[tuple[str, pyast.expr, pyast.expr | None]] = []
    first = False
    pending: dict[str, pyast.expr] = {}
    prelude = True  # no statement yet but fused passes: an early return here is the gate
    for s in body:
        if isinstance(s, pyast.If) and not s.orelse and len(s.body) == 1 and _decision_call(s.body[0]):
            call = _decision_call(s.body[0])
            assert call is not None
            if call[0] != "refuse" or len(call[1]) != 1 or not isinstance(s.test, pyast.UnaryOp):
                raise NotProvable(f"line {s.lineno}: an early return must refuse with one clause, on `not <cond>`")
            early = s.test.operand
            if prelude:
                gate = (call[1][0], early)
                tr.gated, prelude = True, False
            else:
                clauses.append((call[1][0], early, None))
                first = True
        elif isinstance(s, pyast.If) and not s.orelse and s.body:
            prelude = False
            app = s.body[0]
            if not (isinstance(app, pyast.Expr) and isinstance(app.value, pyast.Call)
                    and pyast.unparse(app.value.func) == "failed.append"
                    and isinstance(app.value.args[0], pyast.Constant)):
                raise NotProvable(f"line {s.lineno}: a clause must append its id to failed")
            cid = str(app.value.args[0].value)
            holes: pyast.expr | None = None
            for extra in s.body[1:]:
                if (isinstance(extra, pyast.Assign) and pyast.unparse(extra.targets[0]) == "holes"
                        and isinstance(extra.value, pyast.Call) and pyast.unparse(extra.value.func) == "tuple"):
                    holes = extra.value.args[0]
                else:
                    raise NotProvable(f"line {extra.lineno}: only `holes = tuple(...)` may follow")
            if isinstance(s.test, pyast.UnaryOp) and isinstance(s.test.op, pyast.Not):
                cond: pyast.expr = s.test.operand
            elif isinstance(s.test, pyast.Name) and s.test.id in pending:
                # `h = <holes>; if h:` -- the clause holds iff there is no hole
                cond = pyast.UnaryOp(op=pyast.Not(), operand=s.test, lineno=s.lineno, col_offset=0)
            else:
                raise NotProvable(f"line {s.lineno}: a clause condition must be `not <cond>` or a holes name")
            if holes is not None and isinstance(holes, pyast.Name) and holes.id in pending:
                holes = pending[holes.id]
            if isinstance(s.test, pyast.Name):
                cond = pyast.UnaryOp(op=pyast.Not(), operand=pending[s.test.id], lineno=s.lineno, col_offset=0)
            clauses.append((cid, cond, holes))
        elif isinstance(s, pyast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], pyast.Name):
            name = s.targets[0].id
            if not (isinstance(s.value, pyast.Call) and pyast.unparse(s.value.func) == "_merged_bounded"):
                prelude = False  # only the fused passes may come before the gate
            if name.startswith("h_"):
                pending[name] = s.value
            else:
                tr.bind(name, tr.value(s.value))
        elif isinstance(s, pyast.AnnAssign) and pyast.unparse(s.target) in ("failed", "holes"):
            prelude = False
            continue
        elif isinstance(s, pyast.Return):
            # `_ALLOW` is Decision("allow", (), ()) (allow_part); holes is () when nothing
            # failed, since only a clause that appended its id sets it (checked above)
            want = '_new(Decision, ("refuse", tuple(failed), holes)) if failed else _ALLOW'
            if pyast.unparse(s) != pyast.unparse(pyast.parse(f"return {want}").body[0]):
                raise NotProvable(f"line {s.lineno}: the decision must be {want}")
        else:
            raise NotProvable(f"line {s.lineno}: {pyast.unparse(s)[:60]!r} is not in the proved form")
    return Shape(gate, clauses, first)


def _profile_parts(spec: Spec, prof: Profile, fn: pyast.FunctionDef) -> Parts:
    zc = symbolic_case(spec)
    enc = Encoder(spec, zc)
    tr = Translator(spec, zc)
    where = f"_check_{prof.id}"
    try:
        shape = read_shape(fn, tr)
        want_gate = prof.wellformed or None
        got_gate = shape.gate[0] if shape.gate else None
        if got_gate != want_gate:
            raise NotProvable(f"the gate is {got_gate!r}, the spec's is {want_gate!r}")
        ids = [c[0] for c in shape.clauses]
        want_ids = [c.id for c in prof.clauses if c.id != prof.wellformed]
        if ids != want_ids:
            raise NotProvable(f"clauses {ids}, the spec's are {want_ids} (order matters)")
        if shape.first != (prof.report == "first"):
            raise NotProvable(f"reports {'the first failure' if shape.first else 'every failure'}, "
                              f"the spec says {prof.report!r}")
        gate_holds: Any = z3.BoolVal(True)
        parts: Parts = []
        conds: list[tuple[str, pyast.expr, pyast.expr | None]] = []
        if shape.gate is not None:
            g = tr.bool(shape.gate[1])
            parts.append((f"{where}: gate {shape.gate[0]}", prove(
                g == enc.clause(prof, shape.gate[0]), assumptions=zc.side_conditions())[0]))
            gate_holds = g
            for name, v in tr.names.items():
                if isinstance(v, Fused):  # used as its union after the gate: never None there
                    parts.append((f"{where}: the gate holds only when {name} is not None", prove(
                        z3.Implies(g, v.ok), assumptions=zc.side_conditions())[0]))
        for cid, cond, holes in shape.clauses:
            conds.append((cid, cond, holes))
        for cid, cond, holes in conds:
            cl = prof.clause(cid)
            assume = z3.And(zc.side_conditions(), gate_holds)
            empty = _emptiness(tr, cond)
            if empty is not None and isinstance(cl.holds, ast.Subset):
                # `not S` for a normal list S, against `L subset R`: offset by offset, S is L \ R
                # (quantifier-free in x, which both solvers settle; the list is normal, so it is
                # empty exactly when it has no member)
                x = z3.Int("x")
                left, right = enc.as_set(cl.holds.left, {}), enc.as_set(cl.holds.right, {})
                r = prove(empty(x) == z3.And(left(x), z3.Not(right(x))), assumptions=assume)[0]
            else:
                r = prove(tr.bool(cond) == enc.clause(prof, cid), assumptions=assume)[0]
            parts.append((f"{where}: clause {cid}", r))
            if (cl.holes is None) != (holes is None):
                parts.append((f"{where}: holes of {cid}", Result(
                    "counterexample", detail="holes reported where the spec has none, or missing")))
            elif holes is not None:
                hv = tr.value(holes)
                if not (isinstance(hv, SetVal) and hv.normal):
                    raise NotProvable(f"holes of {cid} are not a normal list")
                x = z3.Int("x")
                parts.append((f"{where}: holes of {cid}", prove(
                    hv.pred(x) == enc.holes(prof, cid)(x), assumptions=z3.And(zc.side_conditions(), gate_holds))[0]))
        return parts
    except NotProvable as exc:
        return [(where, Result("counterexample", detail=f"not in the proved form: {exc}"))]


def _emptiness(tr: Translator, cond: pyast.expr) -> Pred | None:
    """The members of S when ``cond`` is ``not S`` for a normal list S, else None."""
    if isinstance(cond, pyast.UnaryOp) and isinstance(cond.op, pyast.Not):
        v = tr.value(cond.operand)
        if isinstance(v, SetVal) and v.normal:
            return v.pred
    return None


def decision_parts(spec: Spec, source: str) -> Parts:
    """Every profile function of the checker source, clause by clause, against the spec."""
    tree = pyast.parse(source)
    fns = {n.name: n for n in tree.body if isinstance(n, pyast.FunctionDef)}
    parts: Parts = [wrappers_part(source), constants_part(source), meets_part(source), gaps_from_part(source)]
    for prof in spec.profiles:
        fn = fns.get(f"_check_{prof.id}")
        if fn is None:
            parts.append((f"_check_{prof.id}", Result("counterexample", detail="missing (stale: run tailguard gen)")))
            continue
        parts += _profile_parts(spec, prof, fn)
    _ = ast  # the spec's AST types are what Encoder compiles
    return parts
