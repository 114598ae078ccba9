"""Compile spec expressions into z3 constraints over integer offsets (per-offset semantics).

Sets become membership predicates ``x -> BoolRef``; ``A subset B`` becomes
``ForAll x. A(x) -> B(x)``; ``union(L)`` becomes ``Exists i < len(L). lo[i] <= x < hi[i]``.
Lists of intervals are either *unbounded* (z3 arrays with a symbolic length: theorems
for lists of any length) or *bounded* (at most ``k`` symbolic pairs, or concrete
values: evaluation of a concrete case). Units are integer codes: known units are
``0 .. len(units) - 1``; any other code is an unknown unit name.

Only derivation, proofs, config checking and tests import this module (it needs z3).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from tailguard.speclang import ast
from tailguard.speclang.load import Profile, Spec

ZPair = tuple[Any, Any]  # (lo, hi) of z3 ArithRef
SetPred = Callable[[Any], Any]  # ArithRef -> BoolRef

_fresh = itertools.count()


def reset_names() -> None:
    """Restart bound-variable numbering: a query then gets the same names, and so the same
    solver run, whatever was encoded before it in this process (z3's search depends on names)."""
    global _fresh
    _fresh = itertools.count()


def fresh_int(prefix: str) -> Any:
    """A fresh name for a variable that a quantifier binds."""
    return z3.Int(f"{prefix}!{next(_fresh)}")


class ZList:
    """A list of intervals as z3 terms."""

    length: Any

    def forall(self, body: Callable[[ZPair], Any]) -> Any:
        raise NotImplementedError

    def exists(self, body: Callable[[ZPair], Any]) -> Any:
        raise NotImplementedError

    def mem(self, x: Any) -> Any:
        return self.exists(lambda p: z3.And(p[0] <= x, x < p[1]))

    def concrete(self, model: Any) -> list[tuple[int, int]]:
        raise NotImplementedError

    def wf(self) -> Any:
        raise NotImplementedError

    def plus(self, pair: ZPair) -> ZList:
        """This list with one more interval (appended)."""
        return PlusList(self, pair)


class PlusList(ZList):
    """``base`` followed by one more interval."""

    def __init__(self, base: ZList, pair: ZPair) -> None:
        self.base, self.pair = base, pair
        self.length = base.length + 1

    def forall(self, body: Callable[[ZPair], Any]) -> Any:
        return z3.And(self.base.forall(body), body(self.pair))

    def exists(self, body: Callable[[ZPair], Any]) -> Any:
        return z3.Or(self.base.exists(body), body(self.pair))

    def wf(self) -> Any:
        return self.base.wf()

    def concrete(self, model: Any) -> list[tuple[int, int]]:
        return [*self.base.concrete(model), (model.eval(self.pair[0], model_completion=True).as_long(),
                                             model.eval(self.pair[1], model_completion=True).as_long())]


class ArrayList(ZList):
    """Unbounded: ``lo``, ``hi`` arrays and a symbolic ``length >= 0``."""

    def __init__(self, name: str) -> None:
        self.lo = z3.Array(f"{name}.lo", z3.IntSort(), z3.IntSort())
        self.hi = z3.Array(f"{name}.hi", z3.IntSort(), z3.IntSort())
        self.length = z3.Int(f"{name}.len")

    def at(self, i: Any) -> ZPair:
        return (z3.Select(self.lo, i), z3.Select(self.hi, i))

    def forall(self, body: Callable[[ZPair], Any]) -> Any:
        i = fresh_int("i")
        return z3.ForAll([i], z3.Implies(z3.And(i >= 0, i < self.length), body(self.at(i))))

    def exists(self, body: Callable[[ZPair], Any]) -> Any:
        i = fresh_int("i")
        return z3.Exists([i], z3.And(i >= 0, i < self.length, body(self.at(i))))

    def wf(self) -> Any:
        return self.length >= 0

    def concrete(self, model: Any) -> list[tuple[int, int]]:
        k = model.eval(self.length, model_completion=True).as_long()
        return [
            (model.eval(p[0], model_completion=True).as_long(),
             model.eval(p[1], model_completion=True).as_long())
            for p in (self.at(z3.IntVal(i)) for i in range(max(0, k)))
        ]


class FixedList(ZList):
    """Bounded: explicit pairs (symbolic or concrete); the first ``length`` count."""

    def __init__(self, pairs: Sequence[ZPair], length: Any | None = None) -> None:
        self.pairs = list(pairs)
        self.length = z3.IntVal(len(self.pairs)) if length is None else length

    @staticmethod
    def symbolic(name: str, k: int) -> FixedList:
        pairs = [(z3.Int(f"{name}[{i}].lo"), z3.Int(f"{name}[{i}].hi")) for i in range(k)]
        return FixedList(pairs, z3.Int(f"{name}.len"))

    @staticmethod
    def const(pairs: Sequence[tuple[int, int]]) -> FixedList:
        return FixedList([(z3.IntVal(lo), z3.IntVal(hi)) for lo, hi in pairs])

    def _guard(self, i: int) -> Any:
        return z3.IntVal(i) < self.length

    def forall(self, body: Callable[[ZPair], Any]) -> Any:
        return z3.And([z3.Implies(self._guard(i), body(p)) for i, p in enumerate(self.pairs)] or [True])

    def exists(self, body: Callable[[ZPair], Any]) -> Any:
        return z3.Or([z3.And(self._guard(i), body(p)) for i, p in enumerate(self.pairs)] or [False])

    def wf(self) -> Any:
        return z3.And(self.length >= 0, self.length <= len(self.pairs))

    def concrete(self, model: Any) -> list[tuple[int, int]]:
        k = model.eval(self.length, model_completion=True).as_long()
        return [
            (model.eval(lo, model_completion=True).as_long(), model.eval(hi, model_completion=True).as_long())
            for lo, hi in self.pairs[:k]
        ]


@dataclass
class ZCase:
    """The inputs of one case as z3 terms, keyed by spec symbol."""

    values: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def with_value(self, key: str, value: Any) -> ZCase:
        v = dict(self.values)
        v[key] = value
        return ZCase(v)

    def side_conditions(self) -> Any:
        """Constraints every symbolic case carries (list lengths in range)."""
        return z3.And([v.wf() for v in self.values.values() if isinstance(v, ZList)] or [True])


def symbolic_case(spec: Spec, prefix: str = "", *, bound: int | None = None) -> ZCase:
    """Fresh symbols for every input; lists unbounded (arrays) unless ``bound`` is given."""
    values: dict[str, Any] = {}
    for inp in spec.inputs:
        name = f"{prefix}{inp.symbol}"
        if inp.type in ("int", "unit"):
            values[inp.symbol] = z3.Int(name)
        elif inp.type == "interval":
            values[inp.symbol] = (z3.Int(f"{name}.lo"), z3.Int(f"{name}.hi"))
        else:
            values[inp.symbol] = ArrayList(name) if bound is None else FixedList.symbolic(name, bound)
    return ZCase(values)


def unit_code(spec: Spec, name: str, extra: dict[str, int]) -> int:
    """Known units get their index; every other name a distinct code past them."""
    if name in spec.units:
        return spec.units.index(name)
    return extra.setdefault(name, len(spec.units) + len(extra))


def concrete_case(spec: Spec, fields: Mapping[str, Any]) -> ZCase:
    """A case given in the JSON field names, as z3 constants."""
    extra: dict[str, int] = {}
    values: dict[str, Any] = {}
    for inp in spec.inputs:
        v = fields[inp.field]
        if inp.type == "int":
            values[inp.symbol] = z3.IntVal(v)
        elif inp.type == "unit":
            values[inp.symbol] = z3.IntVal(unit_code(spec, v, extra))
        elif inp.type == "interval":
            values[inp.symbol] = (z3.IntVal(v[0]), z3.IntVal(v[1]))
        else:
            values[inp.symbol] = FixedList.const([tuple(p) for p in v])
    return ZCase(values)


def case_from_model(spec: Spec, case: ZCase, model: Any) -> dict[str, Any]:
    """Read a z3 model back as a case in the ``tailguard check`` JSON format."""
    out: dict[str, Any] = {}
    for inp in spec.inputs:
        v = case[inp.symbol]
        if inp.type == "int":
            out[inp.field] = model.eval(v, model_completion=True).as_long()
        elif inp.type == "unit":
            code = model.eval(v, model_completion=True).as_long()
            out[inp.field] = spec.units[code] if 0 <= code < len(spec.units) else f"unknown-unit-{code}"
        elif inp.type == "interval":
            out[inp.field] = [model.eval(x, model_completion=True).as_long() for x in v]
        else:
            out[inp.field] = [list(p) for p in v.concrete(model)]
    return out


class Encoder:
    """Compiles expressions of one spec against one :class:`ZCase`."""

    def __init__(self, spec: Spec, case: ZCase) -> None:
        self.spec, self.case = spec, case
        self._defines: dict[str, Any] = {}
        self._define_nodes = {d.name: d.node for d in spec.defines}

    def value(self, name: str, local: Mapping[str, Any]) -> Any:
        if name in local:
            return local[name]
        if name in self.case.values:
            return self.case[name]
        if name not in self._defines:
            self._defines[name] = self.expr(self._define_nodes[name], {})
        return self._defines[name]

    def as_set(self, node: ast.Node, local: Mapping[str, Any]) -> SetPred:
        v = self.expr(node, local)
        if isinstance(v, tuple):
            lo, hi = v
            return lambda x: z3.And(lo <= x, x < hi)
        if isinstance(v, ZList):
            raise TypeError("a list is not a set; use union()")
        return v  # type: ignore[no-any-return]

    def expr(self, node: ast.Node, local: Mapping[str, Any]) -> Any:
        match node:
            case ast.Num(value=v):
                return z3.IntVal(v)
            case ast.Name(name=n):
                return self.value(n, local)
            case ast.Field(base=b, attr=a):
                pair = self.value(b, local)
                return pair[0] if a == "lo" else pair[1]
            case ast.BinArith(op=op, left=l, right=r):
                x, y = self.expr(l, local), self.expr(r, local)
                return x + y if op == "+" else x - y
            case ast.Call(func="max", args=(p, q)):
                x, y = self.expr(p, local), self.expr(q, local)
                return z3.If(x >= y, x, y)
            case ast.Call(func="min", args=(p, q)):
                x, y = self.expr(p, local), self.expr(q, local)
                return z3.If(x <= y, x, y)
            case ast.Call(func="union", args=(p,)):
                lst = self.expr(p, local)
                return lambda x: lst.mem(x)
            case ast.Call(func="empty", args=(p,)):
                s = self.as_set(p, local)
                x = fresh_int("x")
                return z3.ForAll([x], z3.Not(s(x)))
            case ast.Call(func="known", args=(p,)):
                u = self.expr(p, local)
                return z3.And(u >= 0, u < len(self.spec.units))
            case ast.IntervalLit(lo=lo, hi=hi):
                return (self.expr(lo, local), self.expr(hi, local))
            case ast.SetOp(op=setop, left=l, right=r):
                sa, sb = self.as_set(l, local), self.as_set(r, local)
                if setop == "|":
                    return lambda x: z3.Or(sa(x), sb(x))
                if setop == "&":
                    return lambda x: z3.And(sa(x), sb(x))
                return lambda x: z3.And(sa(x), z3.Not(sb(x)))
            case ast.Compare(ops=ops, operands=operands):
                vals = [self.expr(o, local) for o in operands]
                parts = [_cmp(cop, x, y) for cop, x, y in zip(ops, vals, vals[1:], strict=False)]
                return z3.And(parts) if len(parts) > 1 else parts[0]
            case ast.Subset(left=l, right=r):
                sl, sr = self.as_set(l, local), self.as_set(r, local)
                x = fresh_int("x")
                return z3.ForAll([x], z3.Implies(sl(x), sr(x)))
            case ast.BoolOp(op=bop, operands=operands):
                vals = [self.expr(o, local) for o in operands]
                return z3.And(vals) if bop == "and" else z3.Or(vals)
            case ast.Not(operand=o):
                return z3.Not(self.expr(o, local))
            case ast.Quant(kind=k, var=v, sources=srcs, body=qbody):
                parts = []
                for source_name in srcs:
                    src = self.value(source_name, local)

                    def body(p: ZPair, _v: str = v) -> Any:
                        inner = dict(local)
                        inner[_v] = p
                        return self.expr(qbody, inner)

                    if isinstance(src, tuple):
                        parts.append(body(src))
                    elif k == "all":
                        parts.append(src.forall(body))
                    else:
                        parts.append(src.exists(body))
                return z3.And(parts) if k == "all" else z3.Or(parts)
        raise TypeError(f"cannot encode {type(node).__name__}")

    def clause(self, profile: Profile, cid: str) -> Any:
        """The clause's ``holds`` formula."""
        return self.expr(profile.clause(cid).holds, {})

    def holes(self, profile: Profile, cid: str) -> SetPred:
        node = profile.clause(cid).holes
        if node is None:
            raise KeyError(f"{profile.id}.{cid} has no holes expression")
        return self.as_set(node, {})

    def allows(self, profile: Profile) -> Any:
        """The profile allows: every clause holds (the gate and the rest alike)."""
        return z3.And([self.clause(profile, c.id) for c in profile.clauses])

    def fails_exactly(self, profile: Profile, cids: Sequence[str]) -> Any:
        return z3.And([
            z3.Not(self.clause(profile, c.id)) if c.id in cids else self.clause(profile, c.id)
            for c in profile.clauses
        ])


def _cmp(op: str, x: Any, y: Any) -> Any:
    return {"==": x == y, "!=": x != y, "<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y}[op]
