"""Render the runtime checker (one standard-library module) from the spec.

``render_python(spec) -> str`` is pure and deterministic; only ``tailguard gen``
writes files. Expressions compile to calls on the interval primitives of
:mod:`tailguard.intervals`, whose source is inlined, so the output can be vendored.
"""

from __future__ import annotations

import inspect

from tailguard import intervals
from tailguard.speclang import ast
from tailguard.speclang.ast import Type
from tailguard.speclang.deps import needed_defines
from tailguard.speclang.load import Clause, Profile, Spec
from tailguard.speclang.pretty import pretty

GENERATOR = "tailguard.backends.python_render"
TARGET = "src/tailguard/_generated/checker.py"


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


class PythonCompiler:
    def __init__(self, spec: Spec, env: dict[str, Type]) -> None:
        self.spec, self.env = spec, env

    def type_of(self, node: ast.Node) -> Type:
        from tailguard.speclang.typecheck import infer

        return infer(node, self.env)

    def as_set(self, node: ast.Node) -> str:
        code = self.expr(node)
        return f"_interval(*{code})" if self.type_of(node) == "interval" else code

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
            case ast.Call(func="union", args=(x,)):
                return f"_normalize({self.expr(x)})"
            case ast.Call(func="empty", args=(ast.SetOp(op="&", left=l, right=r),)) if (
                self.type_of(l) == self.type_of(r) == "interval"
            ):
                # two intervals are disjoint iff max(lo) >= min(hi) (endpoint form, theorem T2)
                return f"_disjoint({self.expr(l)}, {self.expr(r)})"
            case ast.Call(func="empty", args=(x,)):
                return f"(not {self.as_set(x)})"
            case ast.Call(func="known", args=(x,)):
                return f"({self.expr(x)} in UNITS)"
            case ast.IntervalLit(lo=lo, hi=hi):
                return f"({self.expr(lo)}, {self.expr(hi)})"
            case ast.SetOp(op=op, left=l, right=r):
                fn = {"|": "_union", "&": "_intersect", "\\": "_difference"}[op]
                return f"{fn}({self.as_set(l)}, {self.as_set(r)})"
            case ast.Compare(ops=ops, operands=operands):
                parts = [self.expr(operands[0])]
                for cop, o in zip(ops, operands[1:], strict=True):
                    parts += [cop, self.expr(o)]
                return f"({' '.join(parts)})"
            case ast.Subset(left=l, right=r) if self.type_of(l) == self.type_of(r) == "interval":
                # [l0, l1) within [r0, r1): empty, or r0 <= l0 and l1 <= r1 (endpoint form, theorem T2)
                return f"_within({self.expr(l)}, {self.expr(r)})"
            case ast.Subset(left=l, right=r):
                return f"_is_subset({self.as_set(l)}, {self.as_set(r)})"
            case ast.BoolOp(op=op, operands=operands):
                return "(" + f" {op} ".join(self.expr(o) for o in operands) + ")"
            case ast.Not(operand=o):
                return f"(not {self.expr(o)})"
            case ast.Quant(kind=k, var=v, sources=srcs, body=b):
                inner = dict(self.env)
                inner[v] = "interval"
                body = PythonCompiler(self.spec, inner).expr(b)
                return f"{k}({body} for {_var(v)} in {self.source_tuple(srcs)})"
        raise TypeError(f"cannot compile {type(node).__name__}")

    def source_tuple(self, srcs: tuple[str, ...]) -> str:
        parts = [_var(s) if self.env[s] == "interval" else f"*{_var(s)}" for s in srcs]
        if len(parts) == 1 and parts[0].startswith("*"):
            return parts[0][1:]
        return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _primitives_source() -> str:
    text = inspect.getsource(intervals)
    body = text.split("# --- begin primitives ---\n", 1)[1].split("# --- end primitives ---", 1)[0]
    renames = {
        "def interval(": "def _interval(", "def normalize(": "def _normalize(",
        "def union(": "def _union(", "def intersect(": "def _intersect(",
        "def difference(": "def _difference(", "def is_subset(": "def _is_subset(",
        "def fmt_set(": "def _fmt_set(", "def within(": "def _within(", "def disjoint(": "def _disjoint(",
        "normalize(a + b)": "_normalize(a + b)", "not difference(a, b)": "not _difference(a, b)",
    }
    for old, new in renames.items():
        body = body.replace(old, new)
    body = body.replace("from collections.abc import Iterable\n\n", "")
    # doctests refer to the public names; keep the docstrings but drop their examples
    lines = [ln for ln in body.splitlines() if not ln.lstrip().startswith((">>>", "[(", "([("))]
    return "\n".join(lines).rstrip() + "\n"


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


def _render_profile(spec: Spec, prof: Profile, out: list[str]) -> None:
    c = PythonCompiler(spec, spec.env)
    fn = f"_check_{prof.id}"
    out.append(f"def {fn}({_typed_args(spec)}) -> Decision:")
    out.append(f'    """Profile {prof.id!r}: {prof.doc}"""')
    gate = prof.clause(prof.wellformed) if prof.wellformed else None
    rest = [cl for cl in prof.clauses if cl is not gate]
    if gate is not None:
        if needed_defines(spec, [gate.holds]):
            raise ValueError(f"{prof.id}.{gate.id}: the well-formedness gate may use inputs only")
        out.append(f"    if not {c.expr(gate.holds)}:")
        out.append(f'        return Decision("refuse", ({gate.id!r},), ())')
    roots: list[ast.Node] = [cl.holds for cl in rest] + [cl.holes for cl in rest if cl.holes]
    for name in needed_defines(spec, roots):
        d = next(d for d in spec.defines if d.name == name)
        out.append(f"    {_var(name)} = {c.expr(d.node)}  # {name} = {d.source}")
    out.append("    failed: list[str] = []")
    out.append("    holes: tuple[tuple[int, int], ...] = ()")
    for cl in rest:
        out.append(f"    if not {c.expr(cl.holds)}:  # {cl.id}: {pretty(cl.holds)}")
        if prof.report == "first":
            out.append(f'        return Decision("refuse", ({cl.id!r},), ())')
            continue
        out.append(f"        failed.append({cl.id!r})")
        if cl.holes is not None:
            out.append(f"        holes = tuple({c.as_set(cl.holes)})")
    out.append('    return Decision("refuse" if failed else "allow", tuple(failed), holes)')
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
        "Standard library only: vendor this one file freely. Decide a compaction with",
        "``check(profile, **case_fields)`` or ``check_case(mapping, profile)``; both return a",
        "``Decision(decision, failed, holes)``. Bad input raises ``CaseError`` naming the field;",
        "the guard never allows what it could not read.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Iterable, Mapping",
        "from typing import Any, NamedTuple",
        "",
        f"SPEC_VERSION = {spec.version!r}",
        f"SPEC_SHA256 = {spec.sha256!r}",
        f"UNITS = {tuple(spec.units)!r}",
        f"PROFILES = {tuple(p.id for p in spec.profiles)!r}",
        "CLAUSES: dict[str, tuple[str, ...]] = {",
    ]
    out += [f"    {p.id!r}: {tuple(cl.id for cl in p.clauses)!r}," for p in spec.profiles]
    out += ["}", f"FIELDS = {tuple(i.field for i in spec.inputs)!r}", "", ""]
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
        "class CaseError(ValueError):",
        '    """Unusable input: ``field`` names where, ``reason`` says why."""',
        "",
        "    def __init__(self, field: str, reason: str) -> None:",
        "        self.field, self.reason = field, reason",
        '        super().__init__(f"{field}: {reason}")',
        "",
        "",
    ]
    out.append(_primitives_source())
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


def _render_api(spec: Spec) -> list[str]:
    sig = ", ".join(f"{i.field}: {_PYTYPE[i.type]}" for i in spec.inputs)
    call = ", ".join(i.field for i in spec.inputs)
    lines = [
        "_CHECKERS = {" + ", ".join(f"{p.id!r}: _check_{p.id}" for p in spec.profiles) + "}",
        "_EXPLAINERS = {" + ", ".join(f"{p.id!r}: _explain_{p.id}" for p in spec.profiles) + "}",
        "",
        "",
        f"def check(profile: str, *, {sig}) -> Decision:",
        '    """Decide one compaction. Values must already have the right types (see ``check_case``)."""',
        "    try:",
        "        checker = _CHECKERS[profile]",
        "    except KeyError:",
        '        raise CaseError("profile", f"unknown profile {profile!r}; known: {sorted(_CHECKERS)}") from None',
        f"    return checker({call})",
        "",
        "",
        f"def explain(profile: str, decision: Decision, *, {sig}) -> list[str]:",
        '    """One sentence per failed clause, ``"<clause id>: <what is wrong>"``, in spec order."""',
        f"    return _EXPLAINERS[profile]({call}, decision.failed, decision.holes)",
        "",
        "",
        "def _int(value: object, field: str) -> int:",
        "    if isinstance(value, bool) or not isinstance(value, int):",
        '        raise CaseError(field, f"expected an integer, got {type(value).__name__} {value!r}")',
        "    return value",
        "",
        "",
        "def _pair(value: object, field: str) -> tuple[int, int]:",
        "    if not isinstance(value, (list, tuple)) or len(value) != 2:",
        '        raise CaseError(field, f"expected a pair [lo, hi], got {value!r}")',
        '    return (_int(value[0], f"{field}[0]"), _int(value[1], f"{field}[1]"))',
        "",
        "",
        "def _pairs(value: object, field: str) -> list[tuple[int, int]]:",
        "    if not isinstance(value, (list, tuple)):",
        '        raise CaseError(field, f"expected a list of [lo, hi] pairs, got {type(value).__name__}")',
        '    return [_pair(v, f"{field}[{i}]") for i, v in enumerate(value)]',
        "",
        "",
        "def _unit(value: object, field: str) -> str:",
        "    if not isinstance(value, str):",
        '        raise CaseError(field, f"expected a unit name (string), got {type(value).__name__} {value!r}")',
        "    return value",
        "",
        "",
        "def read_case(case: Mapping[str, object]) -> dict[str, Any]:",
        '    """Check the types of every case field; raise ``CaseError`` naming the first bad one.',
        "",
        "    Extra keys are ignored. Integers that are inconsistent (negative, ``lo > hi``, past",
        "    the history end) are not input errors: the strict profile refuses them (``well_formed``).",
        '    """',
        "    if not isinstance(case, Mapping):",
        '        raise CaseError("case", f"expected a JSON object, got {type(case).__name__}")',
        "    out: dict[str, Any] = {}",
    ]
    readers = {"int": "_int", "interval": "_pair", "intervals": "_pairs", "unit": "_unit"}
    lines.append("    readers = {" + ", ".join(f"{i.field!r}: {readers[i.type]}" for i in spec.inputs) + "}")
    lines += [
        "    for field, reader in readers.items():",
        "        if field not in case:",
        '            raise CaseError(field, "missing field")',
        "        out[field] = reader(case[field], field)",
        "    return out",
        "",
        "",
        'def check_case(case: Mapping[str, object], profile: str = "strict") -> Decision:',
        '    """Read and decide one case given as a mapping of the case fields (the JSON format)."""',
        "    return check(profile, **read_case(case))",
    ]
    return lines


_PYTYPE = {
    "int": "int",
    "interval": "tuple[int, int]",
    "intervals": "list[tuple[int, int]]",
    "unit": "str",
}
