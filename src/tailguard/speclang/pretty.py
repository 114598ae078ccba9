"""Canonical text of an expression (docs, diagnostics, the ``{why}`` placeholder)."""

from __future__ import annotations

from tailguard.speclang import ast

_PREC = {"or": 1, "and": 2, "not": 3, "rel": 4, "|": 5, "\\": 5, "&": 6, "+": 7, "-": 7, "atom": 9}


def _prec(node: ast.Node) -> int:
    match node:
        case ast.BoolOp(op=op):
            return _PREC[op]
        case ast.Not():
            return _PREC["not"]
        case ast.Compare() | ast.Subset():
            return _PREC["rel"]
        case ast.SetOp(op=op):
            return _PREC[op]
        case ast.BinArith(op=op):
            return _PREC[op]
    return _PREC["atom"]


def pretty(node: ast.Node) -> str:
    def sub(child: ast.Node, min_prec: int) -> str:
        text = pretty(child)
        return f"({text})" if _prec(child) < min_prec else text

    match node:
        case ast.Num(value=v):
            return str(v)
        case ast.Name(name=n):
            return n
        case ast.Field(base=b, attr=a):
            return f"{b}.{a}"
        case ast.BinArith(op=op, left=l, right=r):
            return f"{sub(l, 7)} {op} {sub(r, 8)}"
        case ast.Call(func=f, args=args):
            return f"{f}({', '.join(pretty(a) for a in args)})"
        case ast.IntervalLit(lo=lo, hi=hi):
            return f"[{pretty(lo)}, {pretty(hi)})"
        case ast.SetOp(op=op, left=l, right=r):
            p = _PREC[op]
            return f"{sub(l, p)} {op} {sub(r, p + 1)}"
        case ast.Compare(ops=ops, operands=operands):
            parts = [sub(operands[0], 5)]
            for cop, o in zip(ops, operands[1:], strict=True):
                parts += [cop, sub(o, 5)]
            return " ".join(parts)
        case ast.Subset(left=l, right=r):
            return f"{sub(l, 5)} subset {sub(r, 5)}"
        case ast.BoolOp(op=op, operands=operands):
            p = _PREC[op]
            return f" {op} ".join(sub(o, p + 1) for o in operands)
        case ast.Not(operand=o):
            return f"not {sub(o, 3)}"
        case ast.Quant(kind=k, var=v, sources=s, body=b):
            return f"{k}({v} in {', '.join(s)}: {pretty(b)})"
    raise TypeError(type(node).__name__)
