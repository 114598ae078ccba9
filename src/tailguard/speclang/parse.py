"""Tokenizer and recursive-descent parser for the constraint language.

Grammar (lowest precedence first)::

    expr    := and ('or' and)*
    and     := not ('and' not)*
    not     := 'not' not | rel
    rel     := setx (('==' | '!=' | '<' | '<=' | '>' | '>=') setx)* | setx 'subset' setx
    setx    := inter (('|' | '\\') inter)*
    inter   := arith ('&' arith)*
    arith   := atom (('+' | '-') atom)*
    atom    := INT | NAME | NAME '.' ('lo'|'hi') | '[' expr ',' expr ')'
             | ('max'|'min'|'union'|'empty'|'known') '(' expr (',' expr)* ')'
             | ('all'|'any') '(' NAME 'in' NAME (',' NAME)* ':' expr ')'
             | '(' expr ')'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tailguard.base.errors import SpecSyntaxError as SpecSyntaxError
from tailguard.speclang import ast

KEYWORDS = {"and", "or", "not", "subset", "in", "all", "any"}
FUNCS = {"max", "min", "union", "empty", "known"}

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)"
    r"|(?P<op>==|!=|<=|>=|<|>|\+|-|\||&|\\|\[|\]|\(|\)|,|:|\.))"
)


@dataclass(frozen=True)
class Token:
    kind: str  # num | name | op | end
    text: str
    pos: int


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(source):
        if source[pos:].strip() == "":
            break
        m = _TOKEN.match(source, pos)
        if m is None or m.end() == pos:
            raise SpecSyntaxError("unexpected character", source, pos + len(source[pos:]) - len(source[pos:].lstrip()))
        kind = m.lastgroup or "op"
        text = m.group(kind)
        tokens.append(Token(kind, text, m.start(kind)))
        pos = m.end()
    tokens.append(Token("end", "", len(source)))
    return tokens


class _Parser:
    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = tokenize(source)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def error(self, msg: str) -> SpecSyntaxError:
        return SpecSyntaxError(msg, self.source, self.tok.pos)

    def accept(self, *texts: str) -> Token | None:
        t = self.tok
        if t.kind in ("op", "name") and t.text in texts:
            self.i += 1
            return t
        return None

    def expect(self, text: str) -> Token:
        t = self.accept(text)
        if t is None:
            found = self.tok.text or "end of expression"
            raise self.error(f"expected {text!r}, found {found!r}")
        return t

    def name(self) -> Token:
        t = self.tok
        if t.kind != "name" or t.text in KEYWORDS:
            raise self.error(f"expected a name, found {t.text or 'end of expression'!r}")
        self.i += 1
        return t

    def parse(self) -> ast.Node:
        node = self.expr()
        if self.tok.kind != "end":
            raise self.error(f"unexpected {self.tok.text!r}")
        return node

    def expr(self) -> ast.Node:
        pos = self.tok.pos
        parts = [self.and_()]
        while self.accept("or"):
            parts.append(self.and_())
        return parts[0] if len(parts) == 1 else ast.BoolOp(pos, "or", tuple(parts))

    def and_(self) -> ast.Node:
        pos = self.tok.pos
        parts = [self.not_()]
        while self.accept("and"):
            parts.append(self.not_())
        return parts[0] if len(parts) == 1 else ast.BoolOp(pos, "and", tuple(parts))

    def not_(self) -> ast.Node:
        t = self.accept("not")
        if t is not None:
            return ast.Not(t.pos, self.not_())
        return self.rel()

    def rel(self) -> ast.Node:
        pos = self.tok.pos
        left = self.setx()
        if self.accept("subset"):
            return ast.Subset(pos, left, self.setx())
        ops: list[str] = []
        operands = [left]
        while (t := self.accept("==", "!=", "<", "<=", ">", ">=")) is not None:
            ops.append(t.text)
            operands.append(self.setx())
        if not ops:
            return left
        return ast.Compare(pos, tuple(ops), tuple(operands))

    def setx(self) -> ast.Node:
        node = self.inter()
        while (t := self.accept("|", "\\")) is not None:
            node = ast.SetOp(t.pos, t.text, node, self.inter())  # type: ignore[arg-type]
        return node

    def inter(self) -> ast.Node:
        node = self.arith()
        while (t := self.accept("&")) is not None:
            node = ast.SetOp(t.pos, "&", node, self.arith())
        return node

    def arith(self) -> ast.Node:
        node = self.atom()
        while (t := self.accept("+", "-")) is not None:
            node = ast.BinArith(t.pos, t.text, node, self.atom())  # type: ignore[arg-type]
        return node

    def atom(self) -> ast.Node:
        t = self.tok
        if t.kind == "num":
            self.i += 1
            return ast.Num(t.pos, int(t.text))
        if self.accept("("):
            node = self.expr()
            self.expect(")")
            return node
        if self.accept("["):
            lo = self.expr()
            self.expect(",")
            hi = self.expr()
            self.expect(")")
            return ast.IntervalLit(t.pos, lo, hi)
        if t.kind == "name" and t.text in ("all", "any"):
            self.i += 1
            self.expect("(")
            var = self.name().text
            self.expect("in")
            sources = [self.name().text]
            while self.accept(","):
                sources.append(self.name().text)
            self.expect(":")
            body = self.expr()
            self.expect(")")
            return ast.Quant(t.pos, t.text, var, tuple(sources), body)  # type: ignore[arg-type]
        if t.kind == "name" and t.text in FUNCS:
            self.i += 1
            self.expect("(")
            args = [self.expr()]
            while self.accept(","):
                args.append(self.expr())
            self.expect(")")
            return ast.Call(t.pos, t.text, tuple(args))
        name = self.name()
        if self.accept("."):
            attr = self.name()
            if attr.text not in ("lo", "hi"):
                raise SpecSyntaxError(f"unknown field .{attr.text} (use .lo or .hi)", self.source, attr.pos)
            return ast.Field(name.pos, name.text, attr.text)  # type: ignore[arg-type]
        return ast.Name(name.pos, name.text)


def parse(source: str) -> ast.Node:
    """Parse one expression; raises :class:`SpecSyntaxError` naming the column."""
    return _Parser(source).parse()
