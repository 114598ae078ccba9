"""Render the checker as one dependency-free JavaScript module for Node.js (ES module).

``render_js(spec) -> str`` is pure and deterministic, like :func:`render_python`: the same
expressions compile to calls on the same interval primitives, written once below in
JavaScript. ``render_js_adapter(spec)`` is the line-protocol adapter beside it, so that
``tailguard conform -- node js/conform-adapter.mjs`` checks the JavaScript checker.

Numbers are JavaScript numbers: offsets must be safe integers (up to 2**53 - 1), which the
case reader enforces; JSON text is read by ``readJSON`` (rendered from ``_JSON_READER``), which
keeps what ``JSON.parse`` loses (``60.0`` is not an integer, a repeated key is unusable, an
integer beyond 2**53 - 1 is refused as over this checker's declared limit, never rounded).
"""

from __future__ import annotations

import json

from tailguard.backends import scan_ir
from tailguard.backends.python_render import NoRule, _bounds_of, _holes_are_the_difference
from tailguard.base.jsonstrict import MAX_DEPTH, MAX_INT_DIGITS, MAX_INTERVALS
from tailguard.speclang import ast
from tailguard.speclang.ast import Type
from tailguard.speclang.deps import names, needed_defines
from tailguard.speclang.load import Profile, Spec
from tailguard.speclang.pretty import pretty
from tailguard.speclang.typecheck import infer

GENERATOR = "tailguard.backends.js_render"
TARGET = "js/tailguard-checker.mjs"
ADAPTER_TARGET = "js/conform-adapter.mjs"


def stamp(spec: Spec) -> str:
    return (
        f"// GENERATED FILE, do not edit. Source: spec/clauses.toml "
        f"(spec {spec.version}, sha256 {spec.sha256[:16]}); generator: {GENERATOR}.\n"
        f"// Regenerate with `tailguard gen`; `tailguard gen --check` fails when stale."
    )


def _var(name: str) -> str:
    return f"v_{name}"


_OPS = {"==": "===", "!=": "!==", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _Compiler:
    """Spec expressions to JavaScript by the same rules as ``python_render.PythonCompiler``
    (sets are normal lists; one merge per union; ``_gaps`` scans; ``_meets`` by binary search;
    endpoint forms inline); comparisons only, never subtraction, so the code is the same for
    numbers and BigInts."""

    def __init__(self, spec: Spec, env: dict[str, Type], available: frozenset[str] = frozenset(),
                 scalars: dict[str, tuple[str, str]] | None = None) -> None:
        self.spec, self.env, self.available = spec, env, available
        #: interval defines held as two scalars (``const v_T_lo = ..., v_T_hi = ...``): no array
        self.scalars = scalars if scalars is not None else {}
        #: (low, high) that the fast reader has checked every list against when ``known`` is true
        self.known: tuple[str, str] | None = None

    def union_of(self, source: str) -> str | None:
        for d in self.spec.defines:
            if (d.name in self.available and isinstance(d.node, ast.Call) and d.node.func == "union"
                    and isinstance(d.node.args[0], ast.Name) and d.node.args[0].name == source):
                return d.name
        return None

    def is_pair(self, node: ast.Node) -> bool:
        if infer(node, self.env) == "interval":
            return True
        return (isinstance(node, ast.SetOp) and node.op == "&" and self.is_pair(node.left)
                and self.is_pair(node.right))

    def pair(self, node: ast.Node) -> tuple[str, str]:
        match node:
            case ast.IntervalLit(lo=lo, hi=hi):
                return self.expr(lo), self.expr(hi)
            case ast.SetOp(op="&", left=l, right=r):
                (a, b), (c, d) = self.pair(l), self.pair(r)
                return _max(a, c), _min(b, d)
            case ast.Name(name=n) if n in self.scalars:
                return self.scalars[n]
        code = self.expr(node)
        return f"{code}[0]", f"{code}[1]"

    def pair_code(self, node: ast.Node) -> str:
        if isinstance(node, (ast.Name, ast.Field)) and not (isinstance(node, ast.Name) and node.name in self.scalars):
            return self.expr(node)
        lo, hi = self.pair(node)
        return f"[{lo}, {hi}]"

    def terms(self, node: ast.Node) -> list[str]:
        match node:
            case ast.SetOp(op="|", left=l, right=r):
                return self.terms(l) + self.terms(r)
            case ast.Call(func="union", args=(_,)):
                return [self.as_set(node)]  # each term a normal list (sorted by start)
        if self.is_pair(node):
            return [f"[{self.pair_code(node)}]"]
        return [self.as_set(node)]

    def as_set(self, node: ast.Node) -> str:
        match node:
            case ast.Name(name=n) if self.env.get(n) == "set":
                return _var(n)
            case ast.Call(func="union", args=(x,)):
                return f"_merged({self.expr(x)})"
            case ast.SetOp(op="|"):
                return f"_merged_runs([{', '.join(self.terms(node))}])"
            case ast.SetOp(op="\\", left=l, right=r) if self.is_pair(l):
                lo, hi = self.pair(l)
                return f"_gaps({lo}, {hi}, {self.as_set(r)})"
        if self.is_pair(node):
            lo, hi = self.pair(node)
            return f"_gaps({lo}, {hi}, [])"
        raise NoRule(f"no rule of the fast checker renders the set {pretty(node)!r}")

    def expr(self, node: ast.Node) -> str:
        match node:
            case ast.Num(value=v):
                return str(v)
            case ast.Name(name=n) if n in self.scalars:
                return "[{}, {}]".format(*self.scalars[n])
            case ast.Name(name=n):
                return _var(n)
            case ast.Field(base=b, attr=a) if b in self.scalars:
                return self.scalars[b][0 if a == "lo" else 1]
            case ast.Field(base=b, attr=a):
                return f"{_var(b)}[{0 if a == 'lo' else 1}]"
            case ast.BinArith(op=op, left=l, right=r):
                return f"({self.expr(l)} {op} {self.expr(r)})"
            case ast.Call(func="max" | "min" as f, args=(x, y)):
                return (_max if f == "max" else _min)(self.expr(x), self.expr(y))
            case ast.Call(func="empty", args=(ast.SetOp(op="&", left=l, right=r),)) if (
                self.is_pair(l) and self.is_pair(r)
            ):
                (a0, a1), (b0, b1) = self.pair(l), self.pair(r)
                return f"({a0} >= {a1} || {b0} >= {b1} || {a0} >= {b1} || {b0} >= {a1})"
            case ast.Call(func="empty", args=(x,)) if self.is_pair(x):
                lo, hi = self.pair(x)
                return f"({lo} >= {hi})"
            case ast.Call(func="empty", args=(x,)):
                return f"({self.as_set(x)}.length === 0)"
            case ast.Call(func="known", args=(x,)):
                code = self.expr(x)  # the unit names, compared inline (a name or a field: no side effect)
                return "(" + " || ".join(f"{code} === {json.dumps(u)}" for u in self.spec.units) + ")"
            case ast.IntervalLit():
                return self.pair_code(node)
            case ast.Compare(ops=ops, operands=operands):
                vals = [self.expr(o) for o in operands]
                parts = [f"{x} {_OPS[op]} {y}" for op, x, y in zip(ops, vals, vals[1:], strict=False)]
                return "(" + " && ".join(parts) + ")"
            case ast.Subset(left=l, right=r) if self.is_pair(l) and self.is_pair(r):
                (a0, a1), (b0, b1) = self.pair(l), self.pair(r)
                return f"({a0} >= {a1} || ({b0} <= {a0} && {a1} <= {b1}))"
            case ast.Subset(left=l, right=ast.SetOp(op="\\", left=k, right=m)) if self.is_pair(l) and self.is_pair(k):
                (a0, a1), (b0, b1) = self.pair(l), self.pair(k)
                return f"({a0} >= {a1} || ({b0} <= {a0} && {a1} <= {b1} && !_meets({a0}, {a1}, {self.as_set(m)})))"
            case ast.Subset(left=l, right=r) if self.is_pair(l):
                lo, hi = self.pair(l)
                return f"(_gaps({lo}, {hi}, {self.as_set(r)}).length === 0)"
            case ast.BoolOp(op=op, operands=operands):
                joiner = " && " if op == "and" else " || "
                return "(" + joiner.join(self.expr(o) for o in operands) + ")"
            case ast.Not(operand=o):
                return f"(!{self.expr(o)})"
            case ast.Quant(kind="all", var=v, sources=srcs, body=b) if _bounds_of(b, v) is not None:
                low, high = (self.expr(e) for e in _bounds_of(b, v) or ())
                parts = [f"({low} <= {_var(s)}[0] && {_var(s)}[0] <= {_var(s)}[1] && {_var(s)}[1] <= {high})"
                         if self.env[s] == "interval"
                         else f"(known || _bounded({_var(s)}, {low}, {high}))" if self.known == (low, high)
                         else f"_bounded({_var(s)}, {low}, {high})" for s in srcs]
                return "(" + " && ".join(parts) + ")"
            case ast.Quant(kind="all", var=v, sources=(src,),
                           body=ast.Call(func="empty", args=(ast.SetOp(op="&", left=ast.Name(name=rv), right=j),)),
                           ) if rv == v and self.union_of(src) and self.is_pair(j) and v not in set(names(j)):
                lo, hi = self.pair(j)
                return f"(!_meets({lo}, {hi}, {_var(self.union_of(src) or '')}))"
            case ast.Quant(kind=k, var=v, sources=srcs, body=b):
                inner = dict(self.env)
                inner[v] = "interval"
                body = _Compiler(self.spec, inner, self.available, self.scalars).expr(b)
                method = "every" if k == "all" else "some"
                return f"{self.source_array(srcs)}.{method}(({_var(v)}) => {body})"
            case ast.SetOp() | ast.Call(func="union"):
                return self.as_set(node)
        raise NoRule(f"no rule of the fast checker renders {type(node).__name__} {pretty(node)!r}")

    def source_array(self, srcs: tuple[str, ...]) -> str:
        if len(srcs) == 1 and self.env[srcs[0]] == "intervals":
            return _var(srcs[0])
        parts = [_var(s) if self.env[s] == "interval" else f"...{_var(s)}" for s in srcs]
        return "[" + ", ".join(parts) + "]"


def _max(a: str, b: str) -> str:
    return f"({a} >= {b} ? {a} : {b})"


def _min(a: str, b: str) -> str:
    return f"({a} <= {b} ? {a} : {b})"


_SORTING = """\
// Sorting and joining (not interval algebra: each returns the pairs it was given, in another order
// or as they are; the union is then _merge_run's, which T18 proves right whenever it succeeds and
// successful on any list sorted by start).
const KEY_LIMIT = 2 ** 53;  // a sort key start * span + index is exact below 2^53

function _byStart(x, y) {
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0;
}

// The pairs of items (of integers) sorted by start, as a new array: fewer than 32 by insertion;
// else, when every start is non-negative, by numeric keys start * span + index (span: the power
// of two above the last index; exact below 2^53) in a Uint32Array when they fit, else in a
// Float64Array, so that no comparison function is called; else by comparisons.
function _sortByStart(items) {
  const len = items.length;
  if (len < 32) {  // short: an insertion sort is faster than setting up a typed array
    const out = items.slice();
    for (let i = 1; i < len; i += 1) {
      const item = out[i];
      let j = i;
      for (; j > 0 && out[j - 1][0] > item[0]; j -= 1) out[j] = out[j - 1];
      out[j] = item;
    }
    return out;
  }
  let span = 1;
  while (span < len) span *= 2;
  let top = 0;
  for (let i = 0; i < len; i += 1) {
    const lo = items[i][0];
    if (!(lo >= 0)) return items.slice().sort(_byStart);
    if (lo > top) top = lo;
  }
  const limit = (top + 1) * span;
  if (limit > KEY_LIMIT) return items.slice().sort(_byStart);
  const keys = limit <= 2 ** 32 ? new Uint32Array(len) : new Float64Array(len);
  for (let i = 0; i < len; i += 1) keys[i] = items[i][0] * span + i;
  keys.sort();
  const out = [];
  for (let j = 0; j < len; j += 1) out.push(items[keys[j] % span]);
  return out;
}

// Two lists sorted by start as one list sorted by start (linear; a list is returned as it is when
// the other is empty).
function _mergeByStart(a, b) {
  if (a.length === 0) return b;
  if (b.length === 0) return a;
  const out = new Array(a.length + b.length);  // every slot is filled below
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) {
    if (b[j][0] < a[i][0]) {
      out[k] = b[j];
      j += 1;
    } else {
      out[k] = a[i];
      i += 1;
    }
    k += 1;
  }
  for (; i < a.length; i += 1, k += 1) out[k] = a[i];
  for (; j < b.length; j += 1, k += 1) out[k] = b[j];
  return out;
}

// The union of any pairs as a normal list: one pass when they come sorted, else a sort and the same pass.
function _merged(items) {
  if (items.length === 0) return items;
  let out = _merge_run(items);
  if (out === null) {
    out = _merge_run(_sortByStart(items));
    if (out === null) throw new Error("internal: a sorted list did not merge in one pass (theorem T18)");
  }
  return out;
}

// The union of several normal lists (each sorted by start) as a normal list: they are merged by
// start, the two shortest first, and the result goes through one pass of _merge_run (sorted again
// first if it did not come out sorted).
function _merged_runs(runs) {
  let m = 0;
  for (let i = 0; i < runs.length; i += 1) {  // runs is the caller's own array: compacted in place
    if (runs[i].length !== 0) {
      runs[m] = runs[i];
      m += 1;
    }
  }
  while (m > 1) {
    let a = 0;
    let b = 1;
    if (runs[1].length < runs[0].length) {
      a = 1;
      b = 0;
    }
    for (let i = 2; i < m; i += 1) {
      if (runs[i].length < runs[a].length) {
        b = a;
        a = i;
      } else if (runs[i].length < runs[b].length) {
        b = i;
      }
    }
    runs[a] = _mergeByStart(runs[a], runs[b]);
    runs[b] = runs[m - 1];
    m -= 1;
  }
  return m === 0 ? [] : _merged(runs[0]);
}

// Whether [start, stop) shares an offset with the normal list items: only the last pair that
// starts before stop can; it is found by binary search (the bisect_left of the Python checker).
function _meets(start, stop, items) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid][0] < stop) lo = mid + 1; else hi = mid;
  }
  const j = lo - 1;
  return start < stop && j >= 0 && items[j][1] > start;
}

// Every pair [lo, hi] of items has low <= lo <= hi <= high.
function _bounded(items, low, high) {
  for (const [lo, hi] of items) {
    if (!(low <= lo && lo <= hi && hi <= high)) return false;
  }
  return true;
}
"""

_PRIMITIVES = "\n".join([
    "// Interval algorithms (backends/scan_ir.py, proved in T18 on their Python rendering). A set is an",
    "// array of half-open [lo, hi] pairs, sorted, disjoint, non-adjacent, each non-empty.",
    *(scan_ir.render_js(f) for f in scan_ir.FUNCS),
    _SORTING,
])


_JSON_READER = """\
// Strict JSON reading (SPEC.md sections 3.1 and 3.4). JSON.parse cannot serve: it reads 60.0 and
// 6e1 as the integer 60, keeps the last of two equal keys, and rounds integers beyond 2^53.
/** A JSON number written with a fraction or an exponent (60.0, 6e1): never an integer. */
export class JsonFloat {
  constructor(text) {
    this.text = text;
  }

  toString() {
    return this.text;
  }
}

export const MAX_INT_DIGITS = @MAX_INT_DIGITS@;  // digits of one integer (sign not counted)
export const MAX_DEPTH = @MAX_DEPTH@;  // arrays and objects nested in one JSON text

const NUMBER = /-?(?:0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?/y;
const STRING = /"(?:[^"\\\\\\u0000-\\u001f]|\\\\(?:["\\\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const WORDS = [["true", true], ["false", false], ["null", null]];

/**
 * Read one JSON text exactly: an integer as a number when it is a safe integer, else as a BigInt
 * (which readInt refuses: this checker's documented limit, never a rounded decision); a number with
 * a fraction or an exponent as a JsonFloat; objects without a prototype. A repeated key, NaN, an
 * integer of more than MAX_INT_DIGITS digits, nesting deeper than MAX_DEPTH or text that is not
 * JSON throws CaseError (the repeated key's name, else `what`).
 */
export function readJSON(text, what = "json") {
  let i = 0;
  const fail = (why) => {
    throw new CaseError(what, `${why} (at character ${i + 1})`);
  };
  const space = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\\t" || text[i] === "\\n" || text[i] === "\\r")) i += 1;
  };
  const match = (re) => {
    re.lastIndex = i;
    const m = re.exec(text);
    if (m !== null) i = re.lastIndex;
    return m;
  };
  const value = (depth) => {
    space();
    const c = text[i];
    if (c === "{" || c === "[") {
      if (depth >= MAX_DEPTH) fail(`nested more than ${MAX_DEPTH} deep (the limit)`);
      return c === "{" ? object(depth + 1) : array(depth + 1);
    }
    if (c === '"') {
      const m = match(STRING);
      if (m === null) fail("an invalid string");
      return JSON.parse(m[0]);
    }
    if (c === "-" || (c >= "0" && c <= "9")) {
      const m = match(NUMBER);
      if (m === null) fail("an invalid number");
      if (m[1] !== undefined || m[2] !== undefined) return new JsonFloat(m[0]);
      const digits = m[0].length - (m[0][0] === "-" ? 1 : 0);
      if (digits > MAX_INT_DIGITS) fail(`an integer of ${digits} digits (the limit is ${MAX_INT_DIGITS})`);
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    for (const [word, v] of WORDS) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    return fail(c === undefined ? "unexpected end of the text" : `unexpected ${JSON.stringify(c)}; not JSON`);
  };
  const array = (depth) => {
    i += 1;
    const out = [];
    space();
    if (text[i] === "]") {
      i += 1;
      return out;
    }
    for (;;) {
      out.push(value(depth));
      space();
      if (text[i] === ",") {
        i += 1;
      } else if (text[i] === "]") {
        i += 1;
        return out;
      } else {
        fail("expected ',' or ']'");
      }
    }
  };
  const object = (depth) => {
    i += 1;
    const out = Object.create(null);
    space();
    if (text[i] === "}") {
      i += 1;
      return out;
    }
    for (;;) {
      space();
      if (text[i] !== '"') fail("expected a key");
      const key = JSON.parse(match(STRING)?.[0] ?? fail("an invalid key"));
      if (Object.hasOwn(out, key)) throw new CaseError(key, "key repeated in one object");
      space();
      if (text[i] !== ":") fail("expected ':'");
      i += 1;
      out[key] = value(depth);
      space();
      if (text[i] === ",") {
        i += 1;
      } else if (text[i] === "}") {
        i += 1;
        return out;
      } else {
        fail("expected ',' or '}'");
      }
    }
  };
  if (typeof text !== "string") throw new CaseError(what, `expected JSON text, got ${typeof text}`);
  const result = value(0);
  space();
  if (i < text.length) fail("text after the JSON value");
  return result;
}
""".replace("@MAX_INT_DIGITS@", str(MAX_INT_DIGITS)).replace("@MAX_DEPTH@", str(MAX_DEPTH))


def _render_profile(spec: Spec, prof: Profile, out: list[str]) -> None:
    c = _Compiler(spec, spec.env)
    c.known = _gate_bounds(spec)
    args = ", ".join(_var(i.symbol) for i in spec.inputs) + ", known"
    out.append(f"// Profile {prof.id!r}: {prof.doc}")
    out.append(f"function check_{prof.id}({args}) {{")
    gate = prof.clause(prof.wellformed) if prof.wellformed else None
    rest = [cl for cl in prof.clauses if cl is not gate]
    if gate is not None:
        if needed_defines(spec, [gate.holds]):
            raise ValueError(f"{prof.id}.{gate.id}: the well-formedness gate may use inputs only")
        out.append(f"  if (!{c.expr(gate.holds)}) {{")
        out.append(f'    return decision([{json.dumps(gate.id)}], []);')
        out.append("  }")
    roots: list[ast.Node] = [cl.holds for cl in rest] + [cl.holes for cl in rest if cl.holes]
    computed = needed_defines(spec, roots)
    scalars: dict[str, tuple[str, str]] = {}
    for name in computed:
        d = next(d for d in spec.defines if d.name == name)
        if isinstance(d.node, ast.IntervalLit):  # an interval define: two scalars, no array
            lo, hi = c.pair(d.node)
            scalars[name] = (f"{_var(name)}_lo", f"{_var(name)}_hi")
            out.append(f"  const {_var(name)}_lo = {lo};  // {name} = {d.source}")
            out.append(f"  const {_var(name)}_hi = {hi};")
        else:
            out.append(f"  const {_var(name)} = {c.expr(d.node)};  // {name} = {d.source}")
        c = _Compiler(spec, spec.env, frozenset(), scalars)
    c = _Compiler(spec, spec.env, frozenset(computed), scalars)
    out.append("  const failed = [];")
    out.append("  let holes = [];")
    for cl in rest:
        out.append(f"  // {cl.id}: {pretty(cl.holds)}")
        if cl.holes is not None and prof.report != "first" and _holes_are_the_difference(cl):
            out.append(f"  const h_{cl.id} = {c.as_set(cl.holes)};  // holes: {pretty(cl.holes)}")
            out.append(f"  if (h_{cl.id}.length !== 0) {{")
            out.append(f"    failed.push({json.dumps(cl.id)});")
            out.append(f"    holes = h_{cl.id};")
            out.append("  }")
            continue
        out.append(f"  if (!{c.expr(cl.holds)}) {{")
        if prof.report == "first":
            out.append(f"    return decision([{json.dumps(cl.id)}], []);")
        else:
            out.append(f"    failed.push({json.dumps(cl.id)});")
            if cl.holes is not None:
                out.append(f"    holes = {c.as_set(cl.holes)};")
        out.append("  }")
    out.append("  return decision(failed, holes);")
    out.append("}")
    out.append("")


_FAST_READER = """\
// The fast reader of check: one pass per list that reads and copies every pair of safe integers
// low <= lo <= hi <= high (the bounds of the well-formedness gate); null when anything is unusual
// (not an array, an item that is not such a pair, a pair out of bounds, more pairs than `room`
// left under the limit), and the exact reader (readFields) then reads the fields again, names the
// field and the reason, and the gate checks the bounds.
const OBJECT_PROTOTYPE = Object.prototype;
const ARRAY_VALUES = Array.prototype[Symbol.iterator];

function fastPair(value) {
  if (!Array.isArray(value) || value.length !== 2) return null;
  const lo = value[0];
  const hi = value[1];
  return Number.isSafeInteger(lo) && Number.isSafeInteger(hi) ? [lo, hi] : null;
}

function fastPairs(value, low, high, room) {
  if (!Array.isArray(value) || value[Symbol.iterator] !== ARRAY_VALUES) return null;
  const len = value.length;
  if (len > room) return null;
  const out = new Array(len);  // every slot is filled below (or null is returned)
  for (let i = 0; i < len; i += 1) {
    const item = value[i];
    if (!Array.isArray(item) || item.length !== 2) return null;
    const lo = item[0];
    const hi = item[1];
    if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || !(low <= lo && lo <= hi && hi <= high)) return null;
    out[i] = [lo, hi];
  }
  return out;
}
"""


def _walk(node: object) -> list[ast.Node]:
    out: list[ast.Node] = []
    if isinstance(node, ast.Node):
        out.append(node)
        for value in vars(node).values():
            out += _walk(value)
    elif isinstance(node, (tuple, list)):
        for value in node:
            out += _walk(value)
    return out


def _gate_bounds(spec: Spec) -> tuple[str, str] | None:
    """``(low, high)`` as JavaScript when the well-formedness gate of every profile that has one
    bounds every list input by ``all(r in ...: low <= r.lo <= r.hi <= high)`` with the same ``low``
    and ``high``, expressions of integer inputs read before the lists: the fast reader then
    checks each pair against them as it reads (a pair outside is left to the exact reader and the
    gate), and the gate skips ``_bounded`` when the reader did."""
    lists = {i.symbol for i in spec.inputs if i.type == "intervals"}
    first_list = next(n for n, i in enumerate(spec.inputs) if i.type == "intervals")
    ints = {i.symbol for i in spec.inputs[:first_list] if i.type == "int"}  # read before any list
    found: set[tuple[str, str]] = set()
    for prof in spec.profiles:
        if not prof.wellformed:
            continue
        c = _Compiler(spec, spec.env)
        covered: set[str] = set()
        for node in _walk(prof.clause(prof.wellformed).holds):
            bounds = _bounds_of(node.body, node.var) if isinstance(node, ast.Quant) and node.kind == "all" else None
            if isinstance(node, ast.Quant) and bounds is not None:
                low, high = bounds
                if set(names(low)) | set(names(high)) <= ints:
                    found.add((c.expr(low), c.expr(high)))
                    covered |= set(node.sources) & lists
        if covered != lists:
            return None
    return found.pop() if len(found) == 1 else None


def _fast_check(spec: Spec) -> list[str]:
    """The body of ``check`` after the profile: the fast reader inline, one local per field, in
    the exact reader's order, leaving the block at the first unusual field (so that it reads no
    field the exact reader would not have reached); then the exact reader. It reads an object
    whose prototype is ``Object.prototype`` (none of the field names inherited from it) or null,
    so a property read that is not undefined is the object's own, as the exact reader's
    ``Object.hasOwn`` requires."""
    fields = [i.field for i in spec.inputs]
    low, high = _gate_bounds(spec) or ("-Infinity", "Infinity")
    lines = [
        "  fast: if (fields !== null && typeof fields === \"object\") {",
        "    const proto = Object.getPrototypeOf(fields);",
        "    if (!(proto === null || (proto === OBJECT_PROTOTYPE"
        + "".join(f" && !({json.dumps(f)} in OBJECT_PROTOTYPE)" for f in fields) + "))) break fast;",
        "    let room = MAX_INTERVALS;",
    ]
    for i in spec.inputs:
        v = _var(i.symbol)
        get = f"fields.{i.field}" if i.field.isascii() and i.field.isidentifier() else f"fields[{json.dumps(i.field)}]"
        if i.type == "int":
            lines.append(f"    const {v} = {get};")
            lines.append(f"    if (!Number.isSafeInteger({v})) break fast;")
        elif i.type == "unit":
            lines.append(f"    const {v} = {get};")
            lines.append(f"    if (typeof {v} !== \"string\") break fast;")
        elif i.type == "interval":
            lines.append(f"    const {v} = fastPair({get});")
            lines.append(f"    if ({v} === null) break fast;")
        elif i.type == "intervals":
            lines.append(f"    const {v}_given = {get};")
            lines.append(f"    const {v} = {v}_given === undefined && !({json.dumps(i.field)} in fields) ? [] "
                         f": fastPairs({v}_given, {low}, {high}, room);")
            lines.append(f"    if ({v} === null) break fast;")
            lines.append(f"    room -= {v}.length;")
        else:
            raise NoRule(f"no fast reader for the input type {i.type!r}")
    if lines[-1].startswith("    room -= "):
        lines.pop()  # no list after the last: room is not needed again
    lines.append(f"    return checker({', '.join(_var(i.symbol) for i in spec.inputs)}, true);")
    lines.append("  }")
    return lines


def render_js(spec: Spec) -> str:
    clauses = {p.id: [cl.id for cl in p.clauses] for p in spec.profiles}
    out = [
        stamp(spec),
        f"// tailguard runtime checker for Node.js, spec {spec.version}: one dependency-free ES module.",
        "// checkCase(caseObject, profile) -> {decision, failed, holes}; unusable input throws CaseError.",
        "",
        f"export const SPEC_VERSION = {json.dumps(spec.version)};",
        f"export const SPEC_SHA256 = {json.dumps(spec.sha256)};",
        f"export const UNITS = Object.freeze({json.dumps(list(spec.units))});",
        f"export const PROFILES = Object.freeze({json.dumps([p.id for p in spec.profiles])});",
        f"export const CLAUSES = Object.freeze({json.dumps(clauses)});",
        f"export const FIELDS = Object.freeze({json.dumps([i.field for i in spec.inputs])});",
        f"export const MAX_INTERVALS = {MAX_INTERVALS};  // intervals in one case, all three lists together",
        "",
        "export class CaseError extends Error {",
        "  constructor(field, reason) {",
        "    super(`${field}: ${reason}`);",
        "    this.name = \"CaseError\";",
        "    this.field = field;",
        "    this.reason = reason;",
        "  }",
        "}",
        "",
        "function decision(failed, holes) {",
        '  return { decision: failed.length === 0 ? "allow" : "refuse", failed, holes };',
        "}",
        "",
        _PRIMITIVES,
        _JSON_READER,
    ]
    for prof in spec.profiles:
        _render_profile(spec, prof, out)
    call = ", ".join(f"v[{json.dumps(i.field)}]" for i in spec.inputs)
    kinds = {i.field: i.type for i in spec.inputs}
    out += [
        _FAST_READER,
        "/**",
        " * Decide one compaction. Every field is read first: an interval list may be any iterable of",
        " * [lo, hi] pairs (consumed once) and defaults to []; anything unusable throws CaseError naming",
        f" * the field (a non-integer, a non-pair, more than {MAX_INTERVALS:,} intervals); never a silent allow.",
        " */",
        "export function check(profile, fields = {}) {",
        "  const checker = " + "".join(f"profile === {json.dumps(p.id)} ? check_{p.id} : "
                                      for p in spec.profiles) + "undefined;",
        "  if (checker === undefined) {",
        "    throw new CaseError(\"profile\", `unknown profile ${show(profile)}; known: ${PROFILES.join(\", \")}`);",
        "  }",
        *_fast_check(spec),
        "  const v = readFields(fields, true);",
        f"  return checker({call}, false);",
        "}",
        "",
        "function describe(value) {",
        "  if (value instanceof JsonFloat) return \"number\";",
        "  return value === null ? \"null\" : Array.isArray(value) ? \"list\" : typeof value;",
        "}",
        "",
        "function show(value) {",
        "  let text;",
        "  try {",
        "    text = value instanceof JsonFloat ? value.text : typeof value === \"bigint\" ? `${value}n`",
        "      : typeof value === \"number\" ? String(value)",
        "      : JSON.stringify(value);",
        "  } catch {",
        "    text = undefined;",
        "  }",
        "  if (text === undefined) text = String(value);",
        "  return text.length <= 60 ? text : `${text.slice(0, 57)}...`;",
        "}",
        "",
        "const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);",
        "",
        "function readInt(value, field) {",
        "  if (typeof value === \"number\" && Number.isSafeInteger(value)) return value;",
        "  const wide = typeof value === \"bigint\" ? value > MAX_SAFE || value < -MAX_SAFE",
        "    : typeof value === \"number\" && Number.isInteger(value);",
        "  if (wide) {",
        "    const digits = String(value);",
        "    const shown = digits.length <= 60 ? digits : `${digits.slice(0, 57)}...`;",
        "    throw new CaseError(field, `the integer ${shown} is beyond ±(2^53-1), this checker's limit ` +",
        "      \"(JavaScript numbers are exact only up to there; SPEC.md section 3.4)\");",
        "  }",
        "  throw new CaseError(field, `expected an integer, got ${describe(value)} ${show(value)}`);",
        "}",
        "",
        "function readPair(value, field) {",
        "  if (!Array.isArray(value) || value.length !== 2) {",
        "    throw new CaseError(field, `expected a pair [lo, hi], got ${show(value)}`);",
        "  }",
        "  return [readInt(value[0], `${field}[0]`), readInt(value[1], `${field}[1]`)];",
        "}",
        "",
        "function readPairs(value, field, room) {",
        "  if (value === null || typeof value !== \"object\" || typeof value[Symbol.iterator] !== \"function\") {",
        "    throw new CaseError(field, `expected a list of [lo, hi] pairs, got ${describe(value)}`);",
        "  }",
        "  const out = [];",
        "  for (const item of value) {",
        "    if (out.length >= room) {",
        "      throw new CaseError(field, `more than ${MAX_INTERVALS} intervals in the case (the limit; ` +",
        "        \"prior_truncations, prior_coverage and spills together)\");",
        "    }",
        "    out.push(readPair(item, `${field}[${out.length}]`));",
        "  }",
        "  return out;",
        "}",
        "",
        "function readUnit(value, field) {",
        "  if (typeof value !== \"string\") {",
        "    throw new CaseError(field, `expected a unit name (string), got ${describe(value)} ${show(value)}`);",
        "  }",
        "  return value;",
        "}",
        "",
        f"const KINDS = Object.freeze({json.dumps(kinds)});",
        "const READERS = { int: readInt, interval: readPair, unit: readUnit };",
        "",
        "function readFields(object, defaults) {",
        "  if (object === null || typeof object !== \"object\" || Array.isArray(object)) {",
        "    throw new CaseError(\"case\", `expected a JSON object, got ${describe(object)}`);",
        "  }",
        "  const out = {};",
        "  let room = MAX_INTERVALS;",
        "  for (const [field, kind] of Object.entries(KINDS)) {",
        "    let value = object[field];",
        "    if (!Object.hasOwn(object, field)) {",
        "      if (!(defaults && kind === \"intervals\")) throw new CaseError(field, \"missing field\");",
        "      value = [];",
        "    }",
        "    if (kind === \"intervals\") {",
        "      out[field] = readPairs(value, field, room);",
        "      room -= out[field].length;",
        "    } else {",
        "      out[field] = READERS[kind](value, field);",
        "    }",
        "  }",
        "  return out;",
        "}",
        "",
        "/** Check the type of every case field; throw CaseError naming the first bad one. Extra keys are ignored. */",
        "export function readCase(caseObject) {",
        "  return readFields(caseObject, false);",
        "}",
        "",
        "/** Read and decide one case given in the tailguard check JSON format. */",
        "export function checkCase(caseObject, profile = \"strict\") {",
        "  return check(profile, readCase(caseObject));",
        "}",
        "",
        "/** Read (strictly, readJSON) and decide one case given as JSON text. */",
        "export function checkCaseText(text, profile = \"strict\") {",
        "  return checkCase(readJSON(text, \"case\"), profile);",
        "}",
    ]
    return "\n".join(out).rstrip() + "\n"


def render_js_adapter(spec: Spec) -> str:
    return "\n".join([
        stamp(spec),
        "// The conformance line protocol for the JavaScript checker:",
        "//   tailguard conform -- node js/conform-adapter.mjs",
        "// One request per stdin line, {\"profile\": ..., \"case\": {...}}; one response per stdout line.",
        "import { createInterface } from \"node:readline\";",
        "import { CaseError, checkCase, readJSON } from \"./tailguard-checker.mjs\";",
        "",
        "function answer(line) {",
        "  try {",
        "    const request = readJSON(line, \"request\");  // strictly: 60.0 stays a float, a repeated key is refused",
        "    if (request === null || typeof request !== \"object\" || Array.isArray(request)) {",
        "      throw new CaseError(\"request\", \"expected a JSON object\");",
        "    }",
        "    return checkCase(request.case, request.profile ?? \"strict\");",
        "  } catch (err) {",
        "    if (err instanceof CaseError) return { error: err.message };",
        "    throw err;",
        "  }",
        "}",
        "",
        "const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });",
        "lines.on(\"line\", (line) => {",
        "  if (line.trim() !== \"\") process.stdout.write(JSON.stringify(answer(line)) + \"\\n\");",
        "});",
        "",
    ])
