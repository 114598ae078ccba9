"""Dependencies between expressions and the spec's named definitions."""

from __future__ import annotations

from collections.abc import Iterator

from tailguard.speclang import ast
from tailguard.speclang.load import Spec


def names(node: ast.Node) -> Iterator[str]:
    """Every name an expression mentions (bound quantifier variables included)."""
    match node:
        case ast.Name(name=n) | ast.Field(base=n):
            yield n
        case ast.Quant(sources=srcs, body=b):
            yield from srcs
            yield from names(b)
        case _:
            for value in vars(node).values():
                if isinstance(value, ast.Node):
                    yield from names(value)
                elif isinstance(value, tuple):
                    for v in value:
                        if isinstance(v, ast.Node):
                            yield from names(v)


def needed_defines(spec: Spec, roots: list[ast.Node]) -> list[str]:
    """The definitions ``roots`` use, directly or through other definitions, in spec order."""
    by_name = {d.name: d for d in spec.defines}
    need: set[str] = set()
    todo = [n for r in roots for n in names(r)]
    while todo:
        n = todo.pop()
        if n in by_name and n not in need:
            need.add(n)
            todo.extend(names(by_name[n].node))
    return [d.name for d in spec.defines if d.name in need]


def input_symbols(spec: Spec, node: ast.Node) -> set[str]:
    """The input symbols an expression reads, through the definitions it uses."""
    return set(names(node)).union(*(names(spec_node) for spec_node in _define_nodes(spec, node))) & {
        i.symbol for i in spec.inputs}


def _define_nodes(spec: Spec, node: ast.Node) -> list[ast.Node]:
    by_name = {d.name: d.node for d in spec.defines}
    return [by_name[name] for name in needed_defines(spec, [node])]
