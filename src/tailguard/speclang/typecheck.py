"""Static types of constraint-language expressions."""

from __future__ import annotations

from collections.abc import Mapping

from tailguard.base.errors import SpecTypeError as SpecTypeError
from tailguard.speclang import ast
from tailguard.speclang.ast import Type

SETLIKE: frozenset[str] = frozenset({"interval", "set"})


def infer(node: ast.Node, env: Mapping[str, Type]) -> Type:
    """Return the type of ``node`` in ``env``; raise :class:`SpecTypeError` when ill-typed."""

    def want(n: ast.Node, allowed: set[str] | frozenset[str], what: str) -> Type:
        t = infer(n, env)
        if t not in allowed:
            raise SpecTypeError(f"{what} must be {' or '.join(sorted(allowed))}, not {t}", n.pos)
        return t

    match node:
        case ast.Num():
            return "int"
        case ast.Name(name=name):
            if name not in env:
                raise SpecTypeError(f"unknown name {name!r}", node.pos)
            return env[name]
        case ast.Field(base=base):
            if env.get(base) != "interval":
                raise SpecTypeError(f"{base}.lo/.hi needs an interval, {base!r} is not one", node.pos)
            return "int"
        case ast.BinArith(left=left, right=right):
            want(left, {"int"}, "arithmetic operand")
            want(right, {"int"}, "arithmetic operand")
            return "int"
        case ast.Call(func=func, args=args):
            if func in ("max", "min"):
                if len(args) != 2:
                    raise SpecTypeError(f"{func} takes 2 arguments", node.pos)
                for a in args:
                    want(a, {"int"}, f"argument of {func}")
                return "int"
            if len(args) != 1:
                raise SpecTypeError(f"{func} takes 1 argument", node.pos)
            if func == "union":
                want(args[0], {"intervals"}, "argument of union")
                return "set"
            if func == "empty":
                want(args[0], SETLIKE, "argument of empty")
                return "bool"
            if func == "known":
                want(args[0], {"unit"}, "argument of known")
                return "bool"
            raise SpecTypeError(f"unknown function {func!r}", node.pos)
        case ast.IntervalLit(lo=lo, hi=hi):
            want(lo, {"int"}, "interval bound")
            want(hi, {"int"}, "interval bound")
            return "interval"
        case ast.SetOp(left=left, right=right):
            want(left, SETLIKE, "set operand")
            want(right, SETLIKE, "set operand")
            return "set"
        case ast.Compare(ops=ops, operands=operands):
            types = [infer(o, env) for o in operands]
            for op, lt, rt, o in zip(ops, types, types[1:], operands[1:], strict=False):
                if op in ("==", "!=") and lt == rt and lt in ("int", "unit"):
                    continue
                if lt == rt == "int":
                    continue
                raise SpecTypeError(f"cannot compare {lt} {op} {rt}", o.pos)
            return "bool"
        case ast.Subset(left=left, right=right):
            want(left, SETLIKE, "subset operand")
            want(right, SETLIKE, "subset operand")
            return "bool"
        case ast.BoolOp(operands=operands):
            for o in operands:
                want(o, {"bool"}, "logical operand")
            return "bool"
        case ast.Not(operand=operand):
            want(operand, {"bool"}, "operand of not")
            return "bool"
        case ast.Quant(var=var, sources=sources, body=body):
            for s in sources:
                if env.get(s) not in ("interval", "intervals"):
                    raise SpecTypeError(f"{s!r} is not an interval or a list of intervals", node.pos)
            inner = dict(env)
            inner[var] = "interval"
            want_env = infer(body, inner)
            if want_env != "bool":
                raise SpecTypeError("quantifier body must be bool", body.pos)
            return "bool"
    raise SpecTypeError(f"unsupported node {type(node).__name__}", node.pos)
