"""Render the runtime checker (one standard-library module) from the spec.

``render_python(spec) -> str`` is pure and deterministic; only ``tailguard gen``
writes files. Expressions compile to calls on the interval primitives of
:mod:`tailguard.intervals`, whose source is inlined, so the output can be vendored.
"""

from __future__ import annotations

import inspect

from tailguard import intervals
from tailguard.jsonstrict import MAX_INT_DIGITS, MAX_INTERVALS
from tailguard.speclang import ast
from tailguard.speclang.ast import Type
from tailguard.speclang.deps import needed_defines
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
        f"    return _CHECKERS[_profile(profile)](*_read({fields}))",
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
        "    if not isinstance(value, (list, tuple)) or len(value) != 2:",
        '        raise CaseError(field, f"expected a pair [lo, hi], got {_show(value)}")',
        '    return (_int(value[0], f"{field}[0]"), _int(value[1], f"{field}[1]"))',
        "",
        "",
        "def _pairs(value: object, field: str, room: int) -> list[tuple[int, int]]:",
        '    """Materialize an iterable of pairs once; at most ``room`` of them."""',
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
    used: list[str] = []
    for i in spec.inputs:
        if i.type == "intervals":
            room = " - ".join(["MAX_INTERVALS", *(f"len(v_{u})" for u in used)])
            lines.append(f"    v_{i.field} = _pairs({i.field}, {i.field!r}, {room})")
            used.append(i.field)
        else:
            reader = {"int": "_int", "interval": "_pair", "unit": "_unit"}[i.type]
            lines.append(f"    v_{i.field} = {reader}({i.field}, {i.field!r})")
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
