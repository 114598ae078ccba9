"""Render the runtime checker (one standard-library module) from the spec.

``render_python(spec) -> str`` is pure and deterministic; only ``tailguard gen``
writes files. Expressions compile to calls on the interval primitives of
:mod:`tailguard.base.intervals`, whose source is inlined, so the output can be vendored.
"""

from __future__ import annotations

from tailguard.backends import scan_ir
from tailguard.base.jsonstrict import MAX_INT_DIGITS, MAX_INTERVALS
from tailguard.speclang import ast
from tailguard.speclang.ast import Type
from tailguard.speclang.deps import names, needed_defines
from tailguard.speclang.load import Clause, Profile, Spec
from tailguard.speclang.pretty import pretty

GENERATOR = "tailguard.backends.python_render"
TARGET = "src/tailguard/_generated/checker.py"
#: the Python versions the generated checker runs on (tests parse it with ``feature_version``
#: of the oldest and run it on every interpreter of the range that is installed)
PYTHON_RANGE = ("3.9", "3.13")
#: what ``from checker import *`` gives, and nothing else (no ``Any``, ``Mapping``...)
PUBLIC_NAMES = (
    "CLAUSES", "FIELDS", "MAX_INTERVALS", "MAX_INT_DIGITS", "PROFILES", "SPEC_SHA256", "SPEC_VERSION",
    "UNITS", "CaseError", "Decision", "check", "check_case", "explain", "read_case",
)


def stamp(spec: Spec, comment: str = "#") -> str:
    return (
        f"{comment} GENERATED FILE, do not edit. Source: spec/clauses.toml "
        f"(spec {spec.version}, sha256 {spec.sha256[:16]}); generator: {GENERATOR}.\n"
        f"{comment} Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale."
    )


def _var(name: str) -> str:
    return f"v_{name}"


def _typed_args(spec: Spec) -> str:
    return ", ".join(f"{_var(i.symbol)}: {_PYTYPE[i.type]}" for i in spec.inputs)


class NoRule(ValueError):
    """A spec expression that no rule of the renderer covers (add a rule, and its proof, to
    ``backends/python_render.py`` and ``backends/checker_z3.py``)."""


class PythonCompiler:
    """Spec expressions to Python, by the rules of the fast checker (issue 14).

    A value of type ``set`` is a *normal list* (sorted, disjoint, non-adjacent, non-empty pairs).
    The rules: ``union(L)`` merges ``L`` once (``_merged``: one pass, and a sort only when ``L``
    is not sorted); a union of several terms is one merge of all their pairs; ``J \\ S`` for an
    interval ``J`` is one scan (``_gaps``); ``J subset S`` is ``not _gaps(J, S)``; two intervals'
    intersection is a pair of endpoints; ``J subset K`` and ``empty(J & K)`` for intervals are
    the endpoint comparisons of ``_within`` and ``_disjoint``, written inline. Anything else is
    :class:`NoRule`. Theorem T18 reads the rendered clauses back and proves each.
    """

    def __init__(self, spec: Spec, env: dict[str, Type], available: frozenset[str] = frozenset(),
                 fused: dict[str, str] | None = None) -> None:
        self.spec, self.env = spec, env
        #: set-valued definitions already computed where this code runs (``v_<name>``)
        self.available = available
        #: input lists whose union the gate's bound computed in the same pass
        #: (``_merged_bounded``): list symbol -> the variable holding it (None when not bounded)
        self.fused = fused or {}

    def union_of(self, source: str) -> str | None:
        """A computed definition that is ``union(source)``, if any."""
        for d in self.spec.defines:
            if (d.name in self.available and isinstance(d.node, ast.Call) and d.node.func == "union"
                    and isinstance(d.node.args[0], ast.Name) and d.node.args[0].name == source):
                return d.name
        return None

    def type_of(self, node: ast.Node) -> Type:
        from tailguard.speclang.typecheck import infer

        return infer(node, self.env)

    def is_pair(self, node: ast.Node) -> bool:
        """An interval value, or the intersection of two (a pair of endpoints, maybe empty)."""
        if self.type_of(node) == "interval":
            return True
        return (isinstance(node, ast.SetOp) and node.op == "&" and self.is_pair(node.left)
                and self.is_pair(node.right))

    def pair(self, node: ast.Node) -> tuple[str, str]:
        """``(lo, hi)`` code of a pair value."""
        match node:
            case ast.IntervalLit(lo=lo, hi=hi):
                return self.expr(lo), self.expr(hi)
            case ast.SetOp(op="&", left=l, right=r):
                (a, b), (c, d) = self.pair(l), self.pair(r)
                return f"max({a}, {c})", f"min({b}, {d})"
        code = self.expr(node)
        return f"{code}[0]", f"{code}[1]"

    def pair_code(self, node: ast.Node) -> str:
        if isinstance(node, (ast.Name, ast.Field)):
            return self.expr(node)
        lo, hi = self.pair(node)
        return f"({lo}, {hi})"

    def terms(self, node: ast.Node) -> list[str]:
        """Code of lists of pairs whose union is the set ``node`` (not merged)."""
        match node:
            case ast.SetOp(op="|", left=l, right=r):
                return self.terms(l) + self.terms(r)
            case ast.Call(func="union"):
                # each list merged on its own first (one pass when it comes sorted, as a ledger
                # writes it, and usually far fewer pairs): the joined merge then sorts little
                return [self.as_set(node)]
        if self.is_pair(node):
            return [f"[{self.pair_code(node)}]"]
        return [self.as_set(node)]

    def as_set(self, node: ast.Node) -> str:
        """Code of the set ``node`` as a normal list."""
        match node:
            case ast.Name(name=n) if self.env.get(n) == "set":
                return _var(n)
            case ast.Call(func="union", args=(ast.Name(name=n),)) if n in self.fused:
                return self.fused[n]
            case ast.Call(func="union", args=(x,)):
                return f"_merged({self.expr(x)})"
            case ast.SetOp(op="|"):
                return f"_merged_runs({' + '.join(self.terms(node))})"
            case ast.SetOp(op="\\", left=l, right=r) if self.is_pair(l):
                lo, hi = self.pair(l)
                # from the bisect of the start, unless it is 0 (then the scan starts at the front)
                scan = "_gaps" if lo == "0" else "_gaps_from"
                return f"{scan}({lo}, {hi}, {self.as_set(r)})"
        if self.is_pair(node):
            lo, hi = self.pair(node)
            return f"_gaps({lo}, {hi}, [])"
        raise NoRule(f"no rule of the fast checker renders the set {pretty(node)!r}")

    def expr(self, node: ast.Node) -> str:
        match node:
            case ast.Num(value=v):
                return str(v)
            case ast.Name(name=n):
                return _var(n)
            case ast.Field(base=b, attr=a):
                return f"{_var(b)}[{0 if a == 'lo' else 1}]"
            case ast.BinArith(op=op, left=l, right=r):
                return f"({self.expr(l)} {op} {self.expr(r)})"
            case ast.Call(func="max" | "min" as f, args=(x, y)):
                return f"{f}({self.expr(x)}, {self.expr(y)})"
            case ast.Call(func="empty", args=(ast.SetOp(op="&", left=l, right=r),)) if (
                self.is_pair(l) and self.is_pair(r)
            ):
                (a0, a1), (b0, b1) = self.pair(l), self.pair(r)
                return f"({a0} >= {a1} or {b0} >= {b1} or {a0} >= {b1} or {b0} >= {a1})"  # _disjoint
            case ast.Call(func="empty", args=(x,)) if self.is_pair(x):
                lo, hi = self.pair(x)
                return f"({lo} >= {hi})"
            case ast.Call(func="empty", args=(x,)):
                return f"(not {self.as_set(x)})"
            case ast.Call(func="known", args=(x,)):
                return f"({self.expr(x)} in UNITS)"
            case ast.IntervalLit():
                return self.pair_code(node)
            case ast.Compare(ops=ops, operands=operands):
                parts = [self.expr(operands[0])]
                for cop, o in zip(ops, operands[1:], strict=True):
                    parts += [cop, self.expr(o)]
                return f"({' '.join(parts)})"
            case ast.Subset(left=l, right=r) if self.is_pair(l) and self.is_pair(r):
                (a0, a1), (b0, b1) = self.pair(l), self.pair(r)
                return f"({a0} >= {a1} or ({b0} <= {a0} and {a1} <= {b1}))"  # _within
            case ast.Subset(left=l, right=ast.SetOp(op="\\", left=k, right=m)) if self.is_pair(l) and self.is_pair(k):
                # J subset K \ S: J empty, or J within K and J meets no offset of S (one bisect)
                (a0, a1), (b0, b1) = self.pair(l), self.pair(k)
                return f"({a0} >= {a1} or ({b0} <= {a0} and {a1} <= {b1} and not _meets({a0}, {a1}, {self.as_set(m)})))"
            case ast.Subset(left=l, right=r) if self.is_pair(l):
                lo, hi = self.pair(l)
                return f"(not _gaps({lo}, {hi}, {self.as_set(r)}))"
            case ast.BoolOp(op=op, operands=operands):
                return "(" + f" {op} ".join(self.expr(o) for o in operands) + ")"
            case ast.Not(operand=o):
                return f"(not {self.expr(o)})"
            case ast.Quant(kind="all", var=v, sources=srcs, body=b) if _bounds_of(b, v) is not None:
                # all(r in ...: A <= r.lo <= r.hi <= B): each interval by endpoints, each list by columns
                low, high = (self.expr(e) for e in _bounds_of(b, v) or ())
                parts = [f"({low} <= {_var(s)}[0] <= {_var(s)}[1] <= {high})" if self.env[s] == "interval"
                         else f"({self.fused[s]} is not None)" if s in self.fused
                         else f"(not {_var(s)} or _bounded({_var(s)}, {low}, {high}))" for s in srcs]
                return "(" + " and ".join(parts) + ")"
            case ast.Quant(kind="all", var=v, sources=(src,),
                           body=ast.Call(func="empty", args=(ast.SetOp(op="&", left=ast.Name(name=rv), right=j),)),
                           ) if rv == v and self.union_of(src) and self.is_pair(j) and v not in set(names(j)):
                # no pair of L meets J iff union(L) does not (empty pairs meet nothing): one bisect
                lo, hi = self.pair(j)
                return f"(not _meets({lo}, {hi}, {_var(self.union_of(src) or '')}))"
            case ast.Quant(kind=k, var=v, sources=srcs, body=b):
                inner = dict(self.env)
                inner[v] = "interval"
                body = PythonCompiler(self.spec, inner).expr(b)
                return f"{k}({body} for {_var(v)} in {self.source_tuple(srcs)})"
            case ast.SetOp() | ast.Call(func="union"):
                return self.as_set(node)
        raise NoRule(f"no rule of the fast checker renders {type(node).__name__} {pretty(node)!r}")

    def source_tuple(self, srcs: tuple[str, ...]) -> str:
        parts = [_var(s) if self.env[s] == "interval" else f"*{_var(s)}" for s in srcs]
        if len(parts) == 1 and parts[0].startswith("*"):
            return parts[0][1:]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


_FMT_SET = '''\
def _fmt_set(s: list[tuple[int, int]]) -> str:
    """Human form: ``[0, 8), [9, 12)``; ``nothing`` when empty."""
    return ", ".join(f"[{lo}, {hi})" for lo, hi in s) if s else "nothing"
'''


def _algorithms_source() -> str:
    """The algorithms of :mod:`tailguard.backends.scan_ir`, as the checker runs them."""
    return "\n\n".join([*(scan_ir.render_py(f) for f in scan_ir.FUNCS), scan_ir.MERGED_PY, _FMT_SET]) + "\n"


def _quant_witness(c: PythonCompiler, node: ast.Node) -> str | None:
    """Code for the first element violating the clause's top-level ``all``, if any."""
    if isinstance(node, ast.Quant) and node.kind == "all":
        inner = dict(c.env)
        inner[node.var] = "interval"
        body = PythonCompiler(c.spec, inner).expr(node.body)
        v = _var(node.var)
        return f"next(({v} for {v} in {c.source_tuple(node.sources)} if not {body}), None)"
    if isinstance(node, ast.BoolOp) and node.op == "and":
        for o in node.operands:
            w = _quant_witness(c, o)
            if w is not None:
                return w
    return None


def _bounds_of(body: ast.Node, var: str) -> tuple[ast.Node, ast.Node] | None:
    """``(A, B)`` when ``body`` is ``A <= var.lo <= var.hi <= B`` with A, B free of ``var``."""
    if (isinstance(body, ast.Compare) and body.ops == ("<=", "<=", "<=") and len(body.operands) == 4):
        low, first, second, high = body.operands
        if (isinstance(first, ast.Field) and first.base == var and first.attr == "lo"
                and isinstance(second, ast.Field) and second.base == var and second.attr == "hi"
                and var not in set(names(low)) and var not in set(names(high))):
            return low, high
    return None


def _is_union_of(node: ast.Node, src: str) -> bool:
    return (isinstance(node, ast.Call) and node.func == "union" and len(node.args) == 1
            and isinstance(node.args[0], ast.Name) and node.args[0].name == src)


def _unions_of_inputs(spec: Spec, roots: list[ast.Node]) -> set[str]:
    """The input lists ``L`` of which ``union(L)`` occurs in ``roots``."""
    lists = {i.symbol for i in spec.inputs if i.type == "intervals"}
    found: set[str] = set()

    def walk(n: object) -> None:
        if isinstance(n, ast.Call) and n.func == "union" and len(n.args) == 1 and isinstance(n.args[0], ast.Name) \
                and n.args[0].name in lists:
            found.add(n.args[0].name)
        if isinstance(n, tuple):
            for x in n:
                walk(x)
        elif hasattr(n, "__dataclass_fields__"):
            for f in n.__dataclass_fields__:
                walk(getattr(n, f))

    for r in roots:
        walk(r)
    return found


def _gate_list_bounds(spec: Spec, holds: ast.Node) -> list[tuple[str, ast.Node, ast.Node]]:
    """``(L, A, B)`` for each input list ``L`` of a conjunct ``all(r in ..., L, ...: A <= r.lo <=
    r.hi <= B)`` of the gate (top-level ``and`` only: a fused pass is evaluated unconditionally)."""
    lists = {i.symbol for i in spec.inputs if i.type == "intervals"}
    out: list[tuple[str, ast.Node, ast.Node]] = []
    operands = holds.operands if isinstance(holds, ast.BoolOp) and holds.op == "and" else (holds,)
    for o in operands:
        if isinstance(o, ast.BoolOp) and o.op == "and":
            out += _gate_list_bounds(spec, o)
        elif isinstance(o, ast.Quant) and o.kind == "all":
            bounds = _bounds_of(o.body, o.var)
            if bounds is not None:
                out += [(s, *bounds) for s in o.sources if s in lists]
    return out


def _holes_are_the_difference(cl: Clause) -> bool:
    h, k = cl.holes, cl.holds
    return (isinstance(k, ast.Subset) and isinstance(h, ast.SetOp) and h.op == "\\"
            and pretty(h.left) == pretty(k.left) and pretty(h.right) == pretty(k.right))


def _render_profile(spec: Spec, prof: Profile, out: list[str]) -> None:
    c = PythonCompiler(spec, spec.env)
    fn = f"_check_{prof.id}"
    out.append(f"def {fn}({_typed_args(spec)}) -> Decision:")
    out.append(f'    """Profile {prof.id!r}: {prof.doc}"""')
    gate = prof.clause(prof.wellformed) if prof.wellformed else None
    rest = [cl for cl in prof.clauses if cl is not gate]
    roots: list[ast.Node] = [cl.holds for cl in rest] + [cl.holes for cl in rest if cl.holes]
    computed = needed_defines(spec, roots)
    fused: dict[str, str] = {}
    if gate is not None:
        if needed_defines(spec, [gate.holds]):
            raise ValueError(f"{prof.id}.{gate.id}: the well-formedness gate may use inputs only")
        # a list the gate bounds and the clauses unite: both in one pass, before the gate
        unions = _unions_of_inputs(spec, [*roots, *(d.node for d in spec.defines if d.name in computed)])
        for src, low, high in _gate_list_bounds(spec, gate.holds):
            if src not in unions or src in fused:
                continue
            define = next((d.name for d in spec.defines if d.name in computed and _is_union_of(d.node, src)), None)
            fused[src] = _var(define) if define else f"u_{src}"
            out.append(f"    {fused[src]} = _merged_bounded({_var(src)}, {c.expr(low)}, {c.expr(high)})"
                       f"  # union({src}), None unless every pair is in [{pretty(low)}, {pretty(high)}]")
        c = PythonCompiler(spec, spec.env, fused=fused)
        out.append(f"    if not {c.expr(gate.holds)}:")
        out.append(f'        return Decision("refuse", ({gate.id!r},), ())')
    done = {d.name for d in spec.defines if _var(d.name) in fused.values()}
    for name in computed:
        if name in done:
            continue
        d = next(d for d in spec.defines if d.name == name)
        out.append(f"    {_var(name)} = {c.expr(d.node)}  # {name} = {d.source}")
    c = PythonCompiler(spec, spec.env, frozenset(computed), fused=fused)
    out.append("    failed: list[str] = []")
    out.append("    holes: tuple[tuple[int, int], ...] = ()")
    for cl in rest:
        if cl.holes is not None and prof.report != "first" and _holes_are_the_difference(cl):
            # `L subset R` with holes `L \ R`: one scan gives both (the clause holds iff no hole)
            out.append(f"    h_{cl.id} = {c.as_set(cl.holes)}  # holes: {pretty(cl.holes)}")
            out.append(f"    if h_{cl.id}:  # {cl.id}: {pretty(cl.holds)}")
            out.append(f"        failed.append({cl.id!r})")
            out.append(f"        holes = tuple(h_{cl.id})")
            continue
        out.append(f"    if not {c.expr(cl.holds)}:  # {cl.id}: {pretty(cl.holds)}")
        if prof.report == "first":
            out.append(f'        return Decision("refuse", ({cl.id!r},), ())')
            continue
        out.append(f"        failed.append({cl.id!r})")
        if cl.holes is not None:
            out.append(f"        holes = tuple({c.as_set(cl.holes)})")
    out.append('    return _new(Decision, ("refuse", tuple(failed), holes)) if failed else _ALLOW')
    out.append("")
    out.append("")


def _fmt_value(c: PythonCompiler, node: ast.Node) -> str:
    t = c.type_of(node)
    code = c.expr(node)
    if t == "interval":
        return f"_fmt_pair({code})"
    if t == "set":
        return f"_fmt_set({code})"
    if t == "unit":
        return f"repr({code})"
    return f"str({code})"


def _render_explain(spec: Spec, prof: Profile, out: list[str]) -> None:
    c = PythonCompiler(spec, spec.env)
    out.append(
        f"def _explain_{prof.id}({_typed_args(spec)}, failed: tuple[str, ...],"
        " holes: tuple[tuple[int, int], ...]) -> list[str]:"
    )
    out.append("    out: list[str] = []")
    roots = [p.node for cl in prof.clauses for p in cl.placeholders if p.node]
    roots += [cl.holds for cl in prof.clauses if any(p.source in ("witness", "why") for p in cl.placeholders)]
    for name in needed_defines(spec, roots):
        d = next(d for d in spec.defines if d.name == name)
        out.append(f"    {_var(name)} = {c.expr(d.node)}")
    for cl in prof.clauses:
        out.append(f"    if {cl.id!r} in failed:")
        out.extend(f"        {line}" for line in _message_lines(c, cl))
    out.append("    return out")
    out.append("")
    out.append("")


def _message_lines(c: PythonCompiler, cl: Clause) -> list[str]:
    lines: list[str] = []
    fmt_args: list[str] = []
    template = cl.message
    for i, ph in enumerate(cl.placeholders):
        key = f"p{i}"
        template = template.replace("{" + ph.source + "}", "{" + key + "}", 1)
        if ph.source == "holes":
            value = "_fmt_set(list(holes))"
        elif ph.source == "witness":
            w = _quant_witness(c, cl.holds)
            value = f"_fmt_pair({w})" if w else "'an interval'"
        elif ph.source == "why":
            value = _why(c, cl)
        else:
            assert ph.node is not None
            value = _fmt_value(c, ph.node)
        fmt_args.append(f"{key}={value}")
    joined = ", ".join(fmt_args)
    lines.append(f"out.append({cl.id!r} + ': ' + {template!r}.format({joined}))")
    return lines


def _why(c: PythonCompiler, cl: Clause) -> str:
    parts = cl.holds.operands if isinstance(cl.holds, ast.BoolOp) and cl.holds.op == "and" else (cl.holds,)
    items = ", ".join(f"({c.expr(p)}, {pretty(p)!r})" for p in parts)
    return f"'; '.join(text + ' is false' for ok, text in ({items},) if not ok)"


def render_python(spec: Spec) -> str:
    out: list[str] = [stamp(spec), f'"""tailguard runtime checker, spec {spec.version}.', ""]
    out += [
        "Standard library only: vendor this one file freely. Runs on Python "
        f"{PYTHON_RANGE[0]} to {PYTHON_RANGE[1]}.",
        "Decide a compaction with ``check(profile, **case_fields)`` or",
        "``check_case(mapping, profile)``; both return a ``Decision(decision, failed, holes)``.",
        "Bad input raises ``CaseError`` naming the field; the guard never allows what it could",
        f"not read. Limits: integers of at most {MAX_INT_DIGITS:,} digits, at most {MAX_INTERVALS:,}",
        "intervals per case.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import reprlib as _reprlib",
        "from bisect import bisect_left as _bisect_left",
        "from collections.abc import Callable, Iterable, Mapping",
        "from typing import Any, NamedTuple",
        "",
        "__all__ = [",
        *(f"    {name!r}," for name in PUBLIC_NAMES),
        "]",
        "",
        f"SPEC_VERSION = {spec.version!r}",
        f"SPEC_SHA256 = {spec.sha256!r}",
        f"UNITS = {tuple(spec.units)!r}",
        f"PROFILES = {tuple(p.id for p in spec.profiles)!r}",
        "CLAUSES: dict[str, tuple[str, ...]] = {",
    ]
    out += [f"    {p.id!r}: {tuple(cl.id for cl in p.clauses)!r}," for p in spec.profiles]
    out += ["}", f"FIELDS = {tuple(i.field for i in spec.inputs)!r}"]
    out += [
        f"MAX_INT_DIGITS = {MAX_INT_DIGITS}  # digits of one integer (sign not counted)",
        f"MAX_INTERVALS = {MAX_INTERVALS}  # intervals in one case, all three lists together",
        "_INT_BOUND = 10 ** MAX_INT_DIGITS",
        "_INT_MIN = -_INT_BOUND",
        "",
        "",
    ]
    out += [
        "class Decision(NamedTuple):",
        '    """``decision`` is "allow" or "refuse"; ``failed`` lists clause ids in spec order;',
        '    ``holes`` are the maximal evicted ranges ``(lo, hi)`` (strict ``no_hole`` only)."""',
        "",
        "    decision: str",
        "    failed: tuple[str, ...]",
        "    holes: tuple[tuple[int, int], ...]",
        "",
        "    @property",
        "    def allowed(self) -> bool:",
        '        return self.decision == "allow"',
        "",
        "    def to_json(self) -> dict[str, Any]:",
        '        return {"decision": self.decision, "failed": list(self.failed),',
        '                "holes": [list(h) for h in self.holes]}',
        "",
        "",
        "_ALLOW = Decision(\"allow\", (), ())  # every allow (a tuple: immutable, so one is shared)",
        "_new = tuple.__new__  # _new(Decision, (decision, failed, holes)): Decision(...) without its Python call",
        "",
        "",
        "class CaseError(ValueError):",
        '    """Unusable input: ``field`` names where, ``reason`` says why."""',
        "",
        "    def __init__(self, field: str, reason: str) -> None:",
        "        self.field, self.reason = field, reason",
        '        super().__init__(f"{field}: {reason}")',
        "",
        "",
    ]
    out.append(_algorithms_source())
    out += [
        "def _fmt_pair(pair: tuple[int, int] | None) -> str:",
        '    return "an interval" if pair is None else f"[{pair[0]}, {pair[1]})"',
        "",
        "",
    ]
    out.append("")
    for prof in spec.profiles:
        _render_profile(spec, prof, out)
        _render_explain(spec, prof, out)
    out += _render_api(spec)
    return "\n".join(out).rstrip() + "\n"


#: a scalar field read inline when it is plainly of its type (``check``: no call), else by
#: its reader, which takes every other value (``{v}``: the argument, ``{r}``: the reader call)
_INLINE = {
    "int": "{v} if type({v}) is int and _INT_MIN < {v} < _INT_BOUND else {r}",
    "unit": "{v} if type({v}) is str else {r}",
}


def _reading_lines(spec: Spec, inline: bool = False) -> list[str]:
    """The body of ``_read``: every field read and typed, in ``FIELDS`` order (``check`` has the
    same lines inline, and with ``inline`` the common case of a scalar without a call)."""
    lines: list[str] = []
    used: list[str] = []
    for i in spec.inputs:
        if i.type == "intervals":
            room = " - ".join(["MAX_INTERVALS", *(f"len(v_{u})" for u in used)])
            # an empty list or tuple (the default) is read without a call: the k = 0 case
            lines.append(f"    v_{i.field} = [] if (type({i.field}) is tuple or type({i.field}) is list) "
                         f"and not {i.field} else _pairs({i.field}, {i.field!r}, {room})")
            used.append(i.field)
        else:
            reader = {"int": "_int", "interval": "_pair", "unit": "_unit"}[i.type]
            call = f"{reader}({i.field}, {i.field!r})"
            if inline and i.type in _INLINE:
                call = _INLINE[i.type].format(v=i.field, r=call)
            lines.append(f"    v_{i.field} = {call}")
    return lines


def _gate_bounds_every_list(spec: Spec, prof: Profile) -> bool:
    """Whether the profile's gate holds only when every pair of every list lies in ``[A, B]``
    for integers ``A``, ``B`` that are read within the digit limit (a number of the spec or an
    ``int`` input), each list tested by ``_bounded`` (which also types its items): then a case
    the gate lets through has lists of pairs of ``int`` within the limit, and ``check`` may skip
    reading them (see :func:`_fast_lines`)."""
    if not prof.wellformed:
        return False
    holds = prof.clause(prof.wellformed).holds
    operands = holds.operands if isinstance(holds, ast.BoolOp) and holds.op == "and" else (holds,)
    ints = {i.symbol for i in spec.inputs if i.type == "int"}
    lists = {i.symbol for i in spec.inputs if i.type == "intervals"}

    def read_in_limit(e: ast.Node) -> bool:
        return isinstance(e, ast.Num) or (isinstance(e, ast.Name) and e.name in ints)

    for o in operands:
        if isinstance(o, ast.Quant) and o.kind == "all":
            bounds = _bounds_of(o.body, o.var)
            if bounds is not None and all(map(read_in_limit, bounds)) and lists <= set(o.sources):
                return True
    return False


def _fast_lines(spec: Spec) -> list[str]:
    """``check``'s fast path for the profiles whose gate bounds every list (``_GATES``): lists
    and tuples go to the decision unread, since its gate's ``_bounded`` refuses unless every item
    is a tuple of two ``int`` within bounds read under the digit limit; when the gate refuses,
    the full reading below runs (it raises ``CaseError`` on a bad item or an integer past the
    limit, else the decision is made again on what it read; a list or tuple reads the same
    twice)."""
    lists = [i.field for i in spec.inputs if i.type == "intervals"]
    kinds = " and ".join(f"(type({f}) is list or type({f}) is tuple)" for f in lists)
    total = " + ".join(f"len({f})" for f in lists)
    return [
        "    gate = _GATES.get(profile)  # the gate types and bounds every list: see _bounded",
        f"    if gate is not None and {kinds} and {total} <= MAX_INTERVALS:",
        "        decision = decide(" + ", ".join(
            i.field if i.type == "intervals" else f"v_{i.field}" for i in spec.inputs) + ")  # type: ignore[arg-type]",
        "        if decision.failed != (gate,):  # the gate held: every list is pairs of int in range",
        "            return decision",
    ]


def _is_scalar_line(spec: Spec, line: str) -> bool:
    return not any(line.startswith(f"    v_{i.field} = ") for i in spec.inputs if i.type == "intervals")


def _render_api(spec: Spec) -> list[str]:
    gates = {p.id: p.wellformed for p in spec.profiles if _gate_bounds_every_list(spec, p)}
    sig = ", ".join(
        f"{i.field}: {_ARGTYPE[i.type]}" + (" = ()" if i.type == "intervals" else "") for i in spec.inputs
    )
    fields = ", ".join(i.field for i in spec.inputs)
    typed = ", ".join(_PYTYPE[i.type] for i in spec.inputs)
    lines = [
        "_CHECKERS = {" + ", ".join(f"{p.id!r}: _check_{p.id}" for p in spec.profiles) + "}",
        "_EXPLAINERS = {" + ", ".join(f"{p.id!r}: _explain_{p.id}" for p in spec.profiles) + "}",
        "",
        "",
        "def _profile(profile: object) -> str:",
        "    if not isinstance(profile, str) or profile not in _CHECKERS:",
        '        raise CaseError("profile", f"unknown profile {_show(profile)}; known: {sorted(_CHECKERS)}")',
        "    return profile",
        "",
        "",
        f"def check(profile: str, *, {sig}) -> Decision:",
        '    """Decide one compaction.',
        "",
        "    Every argument is read first, and once: an interval list may be any iterable of",
        "    ``(lo, hi)`` pairs (a list, a tuple, a generator, ``map(tuple, ...)``), consumed exactly",
        "    once; the three lists default to empty. Anything else raises ``CaseError`` naming the",
        "    field: a value that is not an integer (a float, ``inf``, a bool), an interval that is not",
        "    a pair, a unit that is not a string, an integer of more than ``MAX_INT_DIGITS`` digits,",
        "    more than ``MAX_INTERVALS`` intervals in all. Never a silent allow.",
        '    """',
        "    decide = _CHECKERS.get(profile) if type(profile) is str else None  # the common case",
        "    if decide is None:",
        "        decide = _CHECKERS[_profile(profile)]",
        *[line for line in _reading_lines(spec, inline=True) if _is_scalar_line(spec, line)],
        *_fast_lines(spec),
        *[line for line in _reading_lines(spec) if not _is_scalar_line(spec, line)],
        "    return decide(" + ", ".join(f"v_{i.field}" for i in spec.inputs) + ")",
        "",
        "",
        f"def explain(profile: str, decision: Decision, *, {sig}) -> list[str]:",
        '    """One sentence per failed clause, ``"<clause id>: <what is wrong>"``, in spec order.',
        "",
        "    Give it the same values as ``check`` (an iterator ``check`` consumed is empty here).",
        '    """',
        f"    return _EXPLAINERS[_profile(profile)](*_read({fields}), decision.failed, decision.holes)",
        "",
        "",
        "def _show(value: object) -> str:",
        '    """A short, always printable picture of a rejected value."""',
        "    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN < value < _INT_BOUND:",
        '        return f"<an integer of more than {MAX_INT_DIGITS:,} digits>"',
        "    try:",
        "        text = _reprlib.repr(value)",
        "    except Exception:  # a hostile __repr__: name the type only",
        '        text = f"<{type(value).__name__} object>"',
        "    return text",
        "",
        "",
        "def _int(value: object, field: str) -> int:",
        "    if type(value) is int and _INT_MIN < value < _INT_BOUND:",
        "        return value",
        "    if type(value) is not int:",
        "        if isinstance(value, bool) or not isinstance(value, int):",
        '            raise CaseError(field, f"expected an integer, got {type(value).__name__} {_show(value)}")',
        "        value = int(value)  # an int subclass: its plain value",
        "    if not _INT_MIN < value < _INT_BOUND:",
        '        raise CaseError(field, f"an integer of more than {MAX_INT_DIGITS:,} digits (the limit)")',
        "    return value",
        "",
        "",
        "def _pair(value: object, field: str) -> tuple[int, int]:",
        "    if (type(value) is tuple or type(value) is list) and len(value) == 2:  # the common case",
        "        lo, hi = value",
        "        if type(lo) is int and type(hi) is int and _INT_MIN < lo < _INT_BOUND and _INT_MIN < hi < _INT_BOUND:",
        "            return (lo, hi)",
        "    if not isinstance(value, (list, tuple)) or len(value) != 2:",
        '        raise CaseError(field, f"expected a pair [lo, hi], got {_show(value)}")',
        '    return (_int(value[0], f"{field}[0]"), _int(value[1], f"{field}[1]"))',
        "",
        "",
        "def _plain_pairs(items: list[Any] | tuple[Any, ...]) -> list[tuple[int, int]] | None:",
        '    """The items as a list of tuples when every item is a tuple or list of two ``int`` of at',
        '    most ``MAX_INT_DIGITS`` digits, checked column by column by builtins (the common case);',
        '    None otherwise (the item-by-item path then reads them and names the bad one)."""',
        "    kinds = set(map(type, items))",
        "    if not kinds <= _PAIR_TYPES or set(map(len, items)) != {2}:",
        "        return None",
        "    los, his = zip(*items)  # noqa: B905 - pairs, checked above; zip(strict=) needs 3.10",
        "    if not (set(map(type, los)) == _INT_TYPE == set(map(type, his))",
        "            and _INT_MIN < min(los) and max(los) < _INT_BOUND",
        "            and _INT_MIN < min(his) and max(his) < _INT_BOUND):",
        "        return None",
        "    return list(items) if kinds == _TUPLE_TYPE else list(map(tuple, items))",
        "",
        "",
        "_GATES = {" + ", ".join(f"{p!r}: {g!r}" for p, g in gates.items()) + "}"
        "  # profile: its gate, when the gate bounds every pair of every list",
        "_PAIR_TYPES = {tuple, list}",
        "_INT_TYPE = {int}",
        "_TUPLE_TYPE = {tuple}",
        "_COLUMNS = 32  # from this many pairs on, checking by columns is faster than pair by pair",
        "",
        "",
        "def _pairs(value: object, field: str, room: int) -> list[tuple[int, int]]:",
        '    """Materialize an iterable of pairs once; at most ``room`` of them."""',
        "    if type(value) is list or type(value) is tuple:",
        "        if not value:",
        "            return []",
        "        if _COLUMNS <= len(value) <= room:  # the common case, long: read column by column",
        "            plain = _plain_pairs(value)",
        "            if plain is not None:",
        "                return plain",
        "        elif len(value) <= room:  # the common case, short: pair by pair, without the type tests below",
        "            short: list[tuple[int, int]] = []",
        "            for item in value:",
        "                if (type(item) is tuple or type(item) is list) and len(item) == 2:",
        "                    lo, hi = item",
        "                    if (type(lo) is int and type(hi) is int",
        "                            and _INT_MIN < lo < _INT_BOUND and _INT_MIN < hi < _INT_BOUND):",
        "                        short.append((lo, hi))",
        "                        continue",
        "                break  # a bad item: the path below reads the list again and names it",
        "            else:",
        "                return short",
        "    if isinstance(value, (str, bytes, bytearray, Mapping)) or not isinstance(value, Iterable):",
        '        raise CaseError(field, f"expected a list of [lo, hi] pairs, got {type(value).__name__}")',
        "    out: list[tuple[int, int]] = []",
        "    for i, item in enumerate(value):",
        "        if i >= room:",
        '            raise CaseError(field, f"more than {MAX_INTERVALS:,} intervals in the case (the limit; "',
        '                                   "prior_truncations, prior_coverage and spills together)")',
        "        if (type(item) is tuple or type(item) is list) and len(item) == 2:  # the common case, inline",
        "            lo, hi = item",
        "            if (type(lo) is int and type(hi) is int",
        "                    and _INT_MIN < lo < _INT_BOUND and _INT_MIN < hi < _INT_BOUND):",
        "                out.append((lo, hi))",
        "                continue",
        '        out.append(_pair(item, f"{field}[{i}]"))',
        "    return out",
        "",
        "",
        "def _unit(value: object, field: str) -> str:",
        "    if not isinstance(value, str):",
        '        raise CaseError(field, f"expected a unit name (string), got {type(value).__name__} {_show(value)}")',
        "    return str(value)",
        "",
        "",
        f"def _read({', '.join(f'{i.field}: object' for i in spec.inputs)}) -> tuple[{typed}]:",
        '    """Every field read and typed, in ``FIELDS`` order (the first bad one raises)."""',
    ]
    lines += _reading_lines(spec)
    lines.append("    return (" + ", ".join(f"v_{i.field}" for i in spec.inputs) + ")")
    lines += [
        "",
        "",
        "_READERS: dict[str, Callable[[object, str], object]] = {\"int\": _int, \"interval\": _pair, \"unit\": _unit}",
        "_KINDS = {" + ", ".join(f"{i.field!r}: {i.type!r}" for i in spec.inputs) + "}",
        "",
        "",
        "def read_case(case: Mapping[str, object]) -> dict[str, Any]:",
        '    """Check the types of every case field; raise ``CaseError`` naming the first bad one.',
        "",
        "    Every field is required (the JSON format). Extra keys are ignored. Integers that are",
        "    inconsistent (negative, ``lo > hi``, past the history end) are not input errors: the",
        "    strict profile refuses them (``well_formed``).",
        '    """',
        "    if not isinstance(case, Mapping):",
        '        raise CaseError("case", f"expected a JSON object, got {type(case).__name__}")',
        "    values: list[object] = []",
        "    room = MAX_INTERVALS",
        "    for field in FIELDS:",
        "        if field not in case:",
        '            raise CaseError(field, "missing field")',
        "        kind = _KINDS[field]",
        '        if kind == "intervals":',
        "            pairs = _pairs(case[field], field, room)",
        "            room -= len(pairs)",
        "            values.append(pairs)",
        "        else:",
        "            values.append(_READERS[kind](case[field], field))",
        "    return dict(zip(FIELDS, values))  # noqa: B905 - equal lengths; zip(strict=) needs 3.10",
        "",
        "",
        'def check_case(case: Mapping[str, object], profile: str = "strict") -> Decision:',
        '    """Read and decide one case given as a mapping of the case fields (the JSON format)."""',
        "    fields = read_case(case)",
        "    return _CHECKERS[_profile(profile)](*fields.values())",
    ]
    return lines


_ARGTYPE = {
    "int": "int",
    "interval": "tuple[int, int]",
    "intervals": "Iterable[tuple[int, int]]",
    "unit": "str",
}

_PYTYPE = {
    "int": "int",
    "interval": "tuple[int, int]",
    "intervals": "list[tuple[int, int]]",
    "unit": "str",
}


def _primitives_source() -> str:
    """The helper code clause predicates run with, imports included (the vector search)."""
    return ("from bisect import bisect_left as _bisect_left\n\n\n"
            + _algorithms_source())
