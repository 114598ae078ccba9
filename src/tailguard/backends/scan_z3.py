"""The z3 meaning of the runtime algorithms of :mod:`tailguard.backends.scan_ir`.

A :class:`~tailguard.backends.scan_ir.Func` runs symbolically: its state is a dict of z3 terms
(integer and flag variables; the output list as two arrays and a length ``out.k``), and one
loop iteration is :func:`step` (the body on the element ``items[i]``). Lists of any length
are z3 arrays with a symbolic length, as in :mod:`tailguard.backends.z3_encode`, so a proof by
induction over the loop index (initial state, one step, exit; see ``proofs/runtime_algorithms``)
holds for lists of every length.

Only the proofs import this module (it needs z3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from tailguard.backends import scan_ir as ir
from tailguard.backends.z3_encode import fresh_int

State = dict[str, Any]
BROKE = "!broke"  # the state key of "the body executed break"


@dataclass(frozen=True)
class Arr:
    """A list of pairs as two arrays and a length (the first ``length`` entries count)."""

    lo: Any
    hi: Any
    length: Any
    #: ``ok[j]``: item ``j`` is a pair of two integers (what a typed loop tests; see
    #: ``scan_ir.Func.untyped``); the other items' ``lo``/``hi`` mean nothing
    ok: Any = None

    @staticmethod
    def named(name: str) -> Arr:
        return Arr(z3.Array(f"{name}.lo", z3.IntSort(), z3.IntSort()),
                   z3.Array(f"{name}.hi", z3.IntSort(), z3.IntSort()), z3.Int(f"{name}.len"),
                   z3.Array(f"{name}.ok", z3.IntSort(), z3.BoolSort()))

    def at(self, j: Any) -> tuple[Any, Any]:
        return z3.Select(self.lo, j), z3.Select(self.hi, j)

    def mem_prefix(self, upto: Any, x: Any) -> Any:
        """``x`` is in one of the first ``upto`` pairs."""
        j = fresh_int("j")
        return z3.Exists([j], z3.And(j >= 0, j < upto, z3.Select(self.lo, j) <= x, x < z3.Select(self.hi, j)))

    def mem(self, x: Any) -> Any:
        return self.mem_prefix(self.length, x)

    def normal(self) -> Any:
        """Every pair non-empty, and every pair ends before every later pair starts (so the
        list is sorted, disjoint and non-adjacent: the normal form)."""
        j, j2 = fresh_int("j"), fresh_int("j")
        return z3.And(
            self.length >= 0,
            z3.ForAll([j], z3.Implies(z3.And(j >= 0, j < self.length), z3.Select(self.lo, j) < z3.Select(self.hi, j))),
            z3.ForAll([j, j2], z3.Implies(z3.And(j >= 0, j < j2, j2 < self.length),
                                          z3.Select(self.hi, j) < z3.Select(self.lo, j2))),
        )

    def sorted_by_lo(self) -> Any:
        j, j2 = fresh_int("j"), fresh_int("j")
        return z3.ForAll([j, j2], z3.Implies(z3.And(j >= 0, j < j2, j2 < self.length),
                                             z3.Select(self.lo, j) <= z3.Select(self.lo, j2)))


def out_of(s: State) -> Arr:
    return Arr(s["out.lo"], s["out.hi"], s["out.k"])


def fresh_state(f: ir.Func, prefix: str) -> State:
    """An arbitrary state of ``f``'s loop (the induction hypothesis constrains it)."""
    s: State = {}
    for a in f.state:
        kind = _kind(f, a.var)
        s[a.var] = z3.Bool(f"{prefix}{a.var}") if kind == "bool" else z3.Int(f"{prefix}{a.var}")
    o = Arr.named(f"{prefix}out")
    s["out.lo"], s["out.hi"], s["out.k"] = o.lo, o.hi, o.length
    s[BROKE] = z3.BoolVal(False)
    return s


def _kind(f: ir.Func, var: str) -> str:
    for a in f.state:
        if a.var == var:
            return "bool" if isinstance(a.value, ir.Const) and isinstance(a.value.value, bool) else "int"
    return "int"


def expr(e: ir.Expr, env: dict[str, Any], s: State) -> Any:
    match e:
        case ir.Var(name=n):
            return s[n] if n in s else env[n]
        case ir.Const(value=v):
            return z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)
        case ir.Cmp(op=op, left=l, right=r):
            x, y = expr(l, env, s), expr(r, env, s)
            return {"<": x < y, "<=": x <= y, ">": x > y, ">=": x >= y, "==": x == y, "!=": x != y}[op]
        case ir.Bool(op=op, operands=ops):
            vals = [expr(o, env, s) for o in ops]
            return z3.And(vals) if op == "and" else z3.Or(vals)
        case ir.Not(operand=o):
            return z3.Not(expr(o, env, s))
    raise TypeError(f"not an expression: {e!r}")


def _merge(cond: Any, a: State, b: State) -> State:
    return {k: (a[k] if a[k] is b[k] else z3.If(cond, a[k], b[k])) for k in a}


def run(stmts: tuple[ir.Stmt, ...], env: dict[str, Any], s: State) -> State:
    """Execute statements; after a ``break`` nothing further changes the state."""
    for st in stmts:
        done = s[BROKE]
        new = _exec(st, env, s)
        s = new if z3.is_false(done) else _merge(done, s, new)
    return s


def _exec(st: ir.Stmt, env: dict[str, Any], s: State) -> State:
    s = dict(s)
    match st:
        case ir.Assign(var=v, value=x):
            s[v] = expr(x, env, s)
        case ir.Emit(lo=lo, hi=hi):
            k = s["out.k"]
            s["out.lo"] = z3.Store(s["out.lo"], k, expr(lo, env, s))
            s["out.hi"] = z3.Store(s["out.hi"], k, expr(hi, env, s))
            s["out.k"] = k + 1
        case ir.Break():
            s[BROKE] = z3.BoolVal(True)
        case ir.If(cond=c, then=t, orelse=o):
            cond = expr(c, env, s)
            return _merge(cond, run(t, env, s), run(o, env, s))
    return s


def initial(f: ir.Func, env: dict[str, Any]) -> State:
    # the output list: any contents, only the first out.k entries count (no constant arrays:
    # cvc5 needs an option for those)
    s: State = {BROKE: z3.BoolVal(False), "out.lo": z3.Array("init.out.lo", z3.IntSort(), z3.IntSort()),
                "out.hi": z3.Array("init.out.hi", z3.IntSort(), z3.IntSort()), "out.k": z3.IntVal(0)}
    for a in f.state:
        s[a.var] = expr(a.value, env, s)
    return s


_OK = "item.ok"  # the environment name of "the item is a pair of two integers" (typed loops)


def _loop_body(f: ir.Func) -> tuple[ir.Stmt, ...]:
    """The body of one iteration: a typed loop runs ``body`` on a pair of integers, else ``untyped``."""
    return (ir.If(ir.Var(_OK), f.body, f.untyped),) if f.untyped else f.body


def _item_env(env: dict[str, Any], items: Arr, i: Any) -> dict[str, Any]:
    lo, hi = items.at(i)
    out = {**env, "lo": lo, "hi": hi}
    if items.ok is not None:
        out[_OK] = z3.Select(items.ok, i)
    return out


def step(f: ir.Func, env: dict[str, Any], s: State, items: Arr, i: Any) -> State:
    """One iteration on ``items[i]``: the state after the body (``s[BROKE]``: it broke)."""
    return run(_loop_body(f), _item_env(env, items, i), {**s, BROKE: z3.BoolVal(False)})


def finish(f: ir.Func, env: dict[str, Any], s: State) -> State:
    """The statements after the loop."""
    return run(f.after, env, {**s, BROKE: z3.BoolVal(False)})


Invariant = Callable[[Any, State], Any]  # (i, state) -> BoolRef


def paths(stmts: tuple[ir.Stmt, ...], env: dict[str, Any], s: State,
          cond: Any = None) -> list[tuple[Any, State]]:
    """Execute statements path by path: ``(path condition, state)`` for each way through the
    ``if`` statements (smaller queries than one state merged with ``If`` terms)."""
    cond = z3.BoolVal(True) if cond is None else cond
    if not stmts:
        return [(cond, s)]
    first, rest = stmts[0], stmts[1:]
    if z3.is_true(s[BROKE]):
        return [(cond, s)]
    if isinstance(first, ir.If):
        c = expr(first.cond, env, s)
        out: list[tuple[Any, State]] = []
        for guard, branch in ((c, first.then), (z3.Not(c), first.orelse)):
            for pc, st in paths(branch, env, s, z3.And(cond, guard)):
                out += paths(rest, env, st, pc)
        return out
    return paths(rest, env, _exec(first, env, s), cond)


def step_paths(f: ir.Func, env: dict[str, Any], s: State, items: Arr, i: Any) -> list[tuple[Any, State]]:
    return paths(_loop_body(f), _item_env(env, items, i), {**s, BROKE: z3.BoolVal(False)})
