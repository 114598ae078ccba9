"""Syntax tree of the constraint language.

Types: ``int``, ``bool``, ``unit`` (a unit name), ``interval`` (one half-open
pair, also usable as a set), ``intervals`` (a list of pairs), ``set`` (a finite
union of half-open ranges of integers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Type = Literal["int", "bool", "unit", "interval", "intervals", "set"]


@dataclass(frozen=True)
class Node:
    pos: int  # offset of the node in its source text


@dataclass(frozen=True)
class Num(Node):
    value: int


@dataclass(frozen=True)
class Name(Node):
    name: str


@dataclass(frozen=True)
class Field(Node):
    """``r.lo`` / ``r.hi`` of an interval-valued name."""

    base: str
    attr: Literal["lo", "hi"]


@dataclass(frozen=True)
class BinArith(Node):
    op: Literal["+", "-"]
    left: Node
    right: Node


@dataclass(frozen=True)
class Call(Node):
    """``max``, ``min`` (ints); ``union`` (intervals -> set); ``empty`` (set -> bool);
    ``known`` (unit -> bool)."""

    func: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class IntervalLit(Node):
    """``[lo, hi)``: empty when hi <= lo."""

    lo: Node
    hi: Node


@dataclass(frozen=True)
class SetOp(Node):
    op: Literal["|", "&", "\\"]
    left: Node
    right: Node


@dataclass(frozen=True)
class Compare(Node):
    """A chain ``e0 op0 e1 op1 e2 ...`` meaning the conjunction of each adjacent pair."""

    ops: tuple[str, ...]
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Subset(Node):
    left: Node
    right: Node


@dataclass(frozen=True)
class BoolOp(Node):
    op: Literal["and", "or"]
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Not(Node):
    operand: Node


@dataclass(frozen=True)
class Quant(Node):
    """``all(r in L1, L2: body)`` / ``any(...)``: r ranges over every interval of the sources."""

    kind: Literal["all", "any"]
    var: str
    sources: tuple[str, ...]
    body: Node
