"""The interval algorithms of the runtime, in one small form: rendered to Python and JavaScript,
and proved by z3 (``backends/scan_z3.py``, theorem T18) equal to the per-offset definitions.

An algorithm is a :class:`Func`: one pass over a list of pairs (``_merge_run``, ``_gaps``,
``_merge_run_bounded``) with integer parameters, integer and flag state, ``if``, ``break`` and
an output list that only grows (``append``). The same
:class:`Func` value is what :func:`render_py` and :func:`render_js` print and what
``scan_z3`` encodes; :func:`parse_py` reads the printed Python back, so the proof can be run on
the functions of the generated checker file itself (an edit to that file is an edit to what is
proved). :data:`FUNCS` holds the algorithms; :data:`SORTS` the one helper that is not proved
(``sorted``, from the standard library) and how it is used.

Sets at run time are *normal lists*: pairs ``(lo, hi)``, each non-empty, sorted, disjoint and
non-adjacent (the normal form of :mod:`tailguard.base.intervals`).

Imports nothing outside the standard library and the project (no z3).
"""

from __future__ import annotations

import ast as pyast
from dataclasses import dataclass

# --- expressions -------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    """An integer or flag variable (a parameter, a state variable, the loop's ``lo``/``hi``)."""

    name: str


@dataclass(frozen=True)
class Const:
    value: int | bool


@dataclass(frozen=True)
class Cmp:
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Bool:
    op: str  # and | or
    operands: tuple[Expr, ...]


@dataclass(frozen=True)
class Not:
    operand: Expr


Expr = Var | Const | Cmp | Bool | Not

# --- statements --------------------------------------------------------------------------


@dataclass(frozen=True)
class Assign:
    var: str
    value: Expr


@dataclass(frozen=True)
class If:
    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()


@dataclass(frozen=True)
class Emit:
    """``out.append((lo, hi))``."""

    lo: Expr
    hi: Expr


@dataclass(frozen=True)
class Break:
    pass


Stmt = Assign | If | Emit | Break


@dataclass(frozen=True)
class Func:
    """An algorithm. ``ints``: integer parameters; ``items``: the last parameter, the list the
    loop runs over (``for lo, hi in items``, or a typed loop: see ``untyped``).

    ``out`` is the output list, empty at the start; ``state``: variables set before the loop;
    ``body``: the loop body; ``after``: statements after the loop; ``returns``: ``"out"``, or
    ``("out", flag)`` for ``out if flag else None``.
    """

    name: str
    doc: str
    items: str
    ints: tuple[str, ...] = ()
    state: tuple[Assign, ...] = ()
    body: tuple[Stmt, ...] = ()
    after: tuple[Stmt, ...] = ()
    returns: str | tuple[str, str] = "out"
    #: when not empty, the loop is *typed*: ``body`` runs on an item that is a pair of two
    #: integers (a ``tuple`` of two ``int`` in Python), these statements on any other item
    untyped: tuple[Stmt, ...] = ()

    @property
    def params(self) -> tuple[str, ...]:
        return (*self.ints, self.items)


LO, HI = Var("lo"), Var("hi")

#: ``_merge_run``'s step on a non-empty pair ``lo < hi``
_MERGE_STEP: tuple[Stmt, ...] = (
    If(Not(Var("started")), (Assign("started", Const(True)), Assign("run_lo", LO), Assign("run_hi", HI)), (
        If(Cmp("<", LO, Var("run_lo")), (Assign("ordered", Const(False)), Break()), (
            If(Cmp("<=", LO, Var("run_hi")), (
                If(Cmp(">", HI, Var("run_hi")), (Assign("run_hi", HI),)),
            ), (Emit(Var("run_lo"), Var("run_hi")), Assign("run_lo", LO), Assign("run_hi", HI))),
        )),
    )),
)

MERGE_RUN = Func(
    "_merge_run",
    "The union of ``items`` as a normal list, in one pass that holds the current run in "
    "``run_lo``/``run_hi``; None when some non-empty pair starts before the current run (the "
    "pairs are not sorted: sort them and run again).",
    items="items",
    state=(Assign("ordered", Const(True)), Assign("started", Const(False)),
           Assign("run_lo", Const(0)), Assign("run_hi", Const(0))),
    body=(If(Cmp("<", LO, HI), _MERGE_STEP),),
    after=(If(Bool("and", (Var("ordered"), Var("started"))), (Emit(Var("run_lo"), Var("run_hi")),)),),
    returns=("out", "ordered"),
)

GAPS = Func(
    "_gaps",
    "``[start, stop)`` minus the normal list ``items``, as a normal list, in one pass that stops "
    "at the first pair starting at or after ``stop``.",
    ints=("start", "stop"),
    items="items",
    state=(Assign("cur", Var("start")),),
    body=(
        If(Cmp(">=", LO, Var("stop")), (Break(),)),
        If(Cmp(">", LO, Var("cur")), (Emit(Var("cur"), LO),)),
        If(Cmp(">", HI, Var("cur")), (Assign("cur", HI),)),
    ),
    after=(If(Cmp("<", Var("cur"), Var("stop")), (Emit(Var("cur"), Var("stop")),)),),
    returns="out",
)

MERGE_RUN_BOUNDED = Func(
    "_merge_run_bounded",
    "``_merge_run(items)`` in the same one pass that checks every item is a pair of two ``int`` "
    "with ``low <= lo <= hi <= high`` (the gate's bound and the union in one traversal); None "
    "when some item is not, or when the pairs are not sorted (then ``_merged_bounded`` tells the "
    "two apart).",
    ints=("low", "high"),
    items="items",
    state=MERGE_RUN.state,
    body=(If(Bool("or", (Cmp("<", LO, Var("low")), Cmp("<", HI, LO), Cmp(">", HI, Var("high")))),
             (Assign("ordered", Const(False)), Break()),
             (If(Cmp("<", LO, HI), _MERGE_STEP),)),),
    untyped=(Assign("ordered", Const(False)), Break()),
    after=MERGE_RUN.after,
    returns=("out", "ordered"),
)

#: every algorithm of the runtime, in the order the checkers define them
FUNCS: tuple[Func, ...] = (MERGE_RUN, GAPS, MERGE_RUN_BOUNDED)
BY_NAME = {f.name: f for f in FUNCS}

#: Helpers built on the standard library (``sorted``, ``bisect``, ``min``/``max``/``all``/``map``/
#: ``zip``), not on the loop form: T18 checks that the file holds exactly this text and proves
#: each one's use from the contract of the standard library functions it calls (see
#: ``backends/checker_z3.py``). ``_merged(items)``: one pass when the pairs come sorted, else a
#: sort and the same pass; ``_merged_runs(items)``: the terms of a union, each sorted, merged by
#: one sort (linear on sorted runs) and one pass; ``_meets``: whether an interval meets a normal
#: list, by one ``bisect``; ``_bounded``: every pair inside ``[low, high]``, by columns.
#:
#: ``_merged(items)``: the one wrapper around the standard library's sort. It is not an
#: algorithm of the IR: T18 proves that ``_merge_run`` succeeds on any list sorted by start
#: and is right whenever it succeeds; that ``sorted`` sorts is the standard library's.
MERGED_PY = '''\
def _merged(items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of any pairs as a normal list: one pass when they come sorted (as a ledger or
    an adapter writes them), else a sort and the same pass."""
    if not items:  # no pairs: nothing to merge (a case without prior compactions)
        return []
    out = _merge_run(items)
    if out is None:
        out = _merge_run(sorted(items))
        assert out is not None  # a sorted list always merges in one pass (theorem T18)
    return out


def _merged_runs(items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of several lists joined (each usually sorted): one sort, linear on sorted
    runs, and one pass."""
    out = _merge_run(sorted(items))
    assert out is not None  # a sorted list always merges in one pass (theorem T18)
    return out


def _gaps_from(start: int, stop: int, items: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``_gaps(start, stop, items)`` for a normal list ``items``, the scan begun by one bisect
    at the last pair that starts before ``start`` (every pair before that one ends before it)."""
    j = _bisect_left(items, (start,)) - 1
    return _gaps(start, stop, items[j:] if j > 0 else items)


def _meets(start: int, stop: int, items: list[tuple[int, int]]) -> bool:
    """Whether ``[start, stop)`` shares an offset with the normal list ``items``: only the last
    pair that starts before ``stop`` can, and it is found by one bisect."""
    j = _bisect_left(items, (stop,)) - 1
    return start < stop and j >= 0 and items[j][1] > start


def _merged_bounded(items: list[tuple[int, int]], low: int, high: int) -> list[tuple[int, int]] | None:
    """``_merged(items)`` when ``_bounded(items, low, high)``, else None: the bound and the union
    in one pass when the pairs come sorted; else (rare) the bound alone, then a sort and a pass."""
    if not items:  # no pairs: bounded, nothing to merge
        return []
    out = _merge_run_bounded(low, high, items)
    if out is None and _bounded(items, low, high):  # not sorted (or not bounded: then None)
        out = _merge_run(sorted(items))
        assert out is not None  # a sorted list always merges in one pass (theorem T18)
    return out


def _bounded(items: list[tuple[int, int]], low: int, high: int) -> bool:
    """Every item of ``items`` is a pair ``(lo, hi)`` with ``low <= lo <= hi <= high``: a tuple
    of two ``int`` (so ``check`` may hand it a list it has not read: see ``_GATES``). One loop
    with an early exit (on CPython 3.11 faster than passes of builtins at every length)."""
    for item in items:
        if type(item) is tuple and len(item) == 2:
            lo, hi = item
            if type(lo) is int and type(hi) is int and low <= lo <= hi <= high:
                continue
        return False
    return True
'''

# --- Python ------------------------------------------------------------------------------

_PY_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}


def py_expr(e: Expr) -> str:
    match e:
        case Var(name=n):
            return n
        case Const(value=v):
            return repr(v)
        case Cmp(op=op, left=l, right=r):
            return f"{_py_atom(l)} {_PY_CMP[op]} {_py_atom(r)}"
        case Bool(op=op, operands=ops):
            return f" {op} ".join(_py_paren(o) for o in ops)
        case Not(operand=o):
            return f"not {_py_paren(o)}"
    raise TypeError(f"not an expression: {e!r}")


def _py_atom(e: Expr) -> str:
    return py_expr(e) if isinstance(e, (Var, Const)) else f"({py_expr(e)})"


def _py_paren(e: Expr) -> str:
    return f"({py_expr(e)})" if isinstance(e, (Bool, Not)) else py_expr(e)


def _py_stmts(stmts: tuple[Stmt, ...], indent: str) -> list[str]:
    out: list[str] = []
    for s in stmts:
        match s:
            case Assign(var=v, value=x):
                out.append(f"{indent}{v} = {py_expr(x)}")
            case Emit(lo=lo, hi=hi):
                out.append(f"{indent}out.append(({py_expr(lo)}, {py_expr(hi)}))")
            case Break():
                out.append(f"{indent}break")
            case If(cond=c, then=t, orelse=o):
                out.append(f"{indent}if {py_expr(c)}:")
                out += _py_stmts(t, indent + "    ")
                while len(o) == 1 and isinstance(o[0], If):  # else: if -> elif
                    inner = o[0]
                    out.append(f"{indent}elif {py_expr(inner.cond)}:")
                    out += _py_stmts(inner.then, indent + "    ")
                    o = inner.orelse
                if o:
                    out.append(f"{indent}else:")
                    out += _py_stmts(o, indent + "    ")
    return out


#: the head of a typed loop (``Func.untyped``): the body runs on a tuple of two ``int``
_PY_TYPED = ("        if type_(item) is tuple_ and len_(item) == 2:",
             "            lo, hi = item",
             "            if type_(lo) is int_ and type_(hi) is int_:")
_PY_TYPED_TESTS = ("type_(item) is tuple_ and len_(item) == 2", "type_(lo) is int_ and type_(hi) is int_")
#: the builtins of the type tests as locals, bound before a typed loop (a local is read faster
#: than a builtin in the loop; T18 reads this line as text)
_PY_TYPED_LOCALS = "type_, tuple_, int_, len_ = type, tuple, int, len"


def render_py(f: Func) -> str:
    """The function as Python source (typed, with its docstring)."""
    params = [f"{p}: int" for p in f.ints] + [f"{f.items}: list[tuple[int, int]]"]
    rtype = "list[tuple[int, int]]" if isinstance(f.returns, str) else "list[tuple[int, int]] | None"
    lines = [f"def {f.name}({', '.join(params)}) -> {rtype}:", f'    """{f.doc}"""',
             "    out: list[tuple[int, int]] = []"]
    lines += _py_stmts(f.state, "    ")
    if f.untyped:
        lines += [f"    {_PY_TYPED_LOCALS}  # the type tests' builtins as locals",
                  f"    for item in {f.items}:", *_PY_TYPED]
        lines += _py_stmts(f.body, "                ")
        lines.append("                continue")
        lines += _py_stmts(f.untyped, "        ")
    else:
        lines.append(f"    for lo, hi in {f.items}:")
        lines += _py_stmts(f.body, "        ")
    lines += _py_stmts(f.after, "    ")
    if isinstance(f.returns, str):
        lines.append("    return out")
    else:
        lines.append(f"    return out if {f.returns[1]} else None")
    return "\n".join(lines) + "\n"


# --- JavaScript --------------------------------------------------------------------------

_JS_CMP = {"<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "===", "!=": "!=="}


def js_expr(e: Expr) -> str:
    match e:
        case Var(name=n):
            return n
        case Const(value=v):
            return ("true" if v else "false") if isinstance(v, bool) else str(v)
        case Cmp(op=op, left=l, right=r):
            return f"{_js_atom(l)} {_JS_CMP[op]} {_js_atom(r)}"
        case Bool(op=op, operands=ops):
            return (" && " if op == "and" else " || ").join(_js_paren(o) for o in ops)
        case Not(operand=o):
            return f"!({js_expr(o)})"
    raise TypeError(f"not an expression: {e!r}")


def _js_atom(e: Expr) -> str:
    return js_expr(e) if isinstance(e, (Var, Const)) else f"({js_expr(e)})"


def _js_paren(e: Expr) -> str:
    return f"({js_expr(e)})" if isinstance(e, (Bool, Not)) else js_expr(e)


def _js_stmts(stmts: tuple[Stmt, ...], indent: str) -> list[str]:
    out: list[str] = []
    for s in stmts:
        match s:
            case Assign(var=v, value=x):
                out.append(f"{indent}{v} = {js_expr(x)};")
            case Emit(lo=lo, hi=hi):
                out.append(f"{indent}out.push([{js_expr(lo)}, {js_expr(hi)}]);")
            case Break():
                out.append(f"{indent}break;")
            case If(cond=c, then=t, orelse=o):
                out.append(f"{indent}if ({js_expr(c)}) {{")
                out += _js_stmts(t, indent + "  ")
                while len(o) == 1 and isinstance(o[0], If):
                    inner = o[0]
                    out.append(f"{indent}}} else if ({js_expr(inner.cond)}) {{")
                    out += _js_stmts(inner.then, indent + "  ")
                    o = inner.orelse
                if o:
                    out.append(f"{indent}}} else {{")
                    out += _js_stmts(o, indent + "  ")
                out.append(f"{indent}}}")
    return out


def render_js(f: Func) -> str:
    """The function as JavaScript (the state variables declared with ``let``)."""
    lines = [f"// {f.doc}", f"function {f.name}({', '.join(f.params)}) {{", "  const out = [];"]
    lines += [f"  let {s.var} = {js_expr(s.value)};" for s in f.state]
    if f.untyped:
        lines += [f"  for (const item of {f.items}) {{",
                  "    if (Array.isArray(item) && item.length === 2) {",
                  "      const lo = item[0];",
                  "      const hi = item[1];",
                  "      if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi)) {"]
        lines += _js_stmts(f.body, "        ")
        lines += ["        continue;", "      }", "    }"]
        lines += _js_stmts(f.untyped, "    ")
        lines.append("  }")
    else:
        lines.append(f"  for (const [lo, hi] of {f.items}) {{")
        lines += _js_stmts(f.body, "    ")
        lines.append("  }")
    lines += _js_stmts(f.after, "  ")
    if isinstance(f.returns, str):
        lines.append("  return out;")
    else:
        lines.append(f"  return {f.returns[1]} ? out : null;")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- reading the generated Python back ---------------------------------------------------


class NotInForm(ValueError):
    """Source that is not a rendering of this form (what T18 reports for an edited file)."""


_CMP_OPS = {pyast.Lt: "<", pyast.LtE: "<=", pyast.Gt: ">", pyast.GtE: ">=", pyast.Eq: "==", pyast.NotEq: "!="}


def _expr(node: pyast.expr) -> Expr:
    if isinstance(node, pyast.Name):
        return Var(node.id)
    if isinstance(node, pyast.Constant) and isinstance(node.value, int):
        return Const(node.value)
    if isinstance(node, pyast.UnaryOp) and isinstance(node.op, pyast.Not):
        return Not(_expr(node.operand))
    if isinstance(node, pyast.BoolOp):
        return Bool("and" if isinstance(node.op, pyast.And) else "or", tuple(_expr(v) for v in node.values))
    if isinstance(node, pyast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_OPS:
        return Cmp(_CMP_OPS[type(node.ops[0])], _expr(node.left), _expr(node.comparators[0]))
    raise NotInForm(f"line {node.lineno}: {pyast.unparse(node)!r} is not an expression of the form")


def _stmts(nodes: list[pyast.stmt]) -> tuple[Stmt, ...]:
    out: list[Stmt] = []
    for s in nodes:
        if isinstance(s, pyast.Break):
            out.append(Break())
        elif isinstance(s, pyast.If):
            out.append(If(_expr(s.test), _stmts(s.body), _stmts(s.orelse)))
        elif (isinstance(s, pyast.Expr) and isinstance(s.value, pyast.Call)
              and pyast.unparse(s.value.func) == "out.append" and len(s.value.args) == 1 and not s.value.keywords
              and isinstance(s.value.args[0], pyast.Tuple) and len(s.value.args[0].elts) == 2):
            lo, hi = s.value.args[0].elts
            out.append(Emit(_expr(lo), _expr(hi)))
        elif isinstance(s, pyast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], pyast.Name):
            out.append(Assign(s.targets[0].id, _expr(s.value)))
        else:
            raise NotInForm(f"line {s.lineno}: {pyast.unparse(s)!r} is not a statement of the form")
    return tuple(out)


def parse_py(source: str, name: str) -> Func:
    """Read function ``name`` of ``source`` (a module) back into a :class:`Func`.

    Accepts exactly the shapes :func:`render_py` prints; anything else raises
    :class:`NotInForm` naming the line. The annotations are not read: the last parameter is the
    list the loop runs over, the others are integers.
    """
    tree = pyast.parse(source)
    defs = [n for n in tree.body if isinstance(n, pyast.FunctionDef) and n.name == name]
    if len(defs) != 1:
        raise NotInForm(f"{name}: defined {len(defs)} times, expected once")
    fn = defs[0]
    body = list(fn.body)
    doc = ""
    if (body and isinstance(body[0], pyast.Expr) and isinstance(body[0].value, pyast.Constant)
            and isinstance(body[0].value.value, str)):
        doc = body[0].value.value
        body = body[1:]
    first = body[0] if body else fn
    if not (isinstance(first, pyast.AnnAssign) and pyast.unparse(first.target) == "out"
            and isinstance(first.value, pyast.List) and not first.value.elts):
        raise NotInForm(f"line {first.lineno}: out must start empty: `out: list[tuple[int, int]] = []`")
    body = body[1:]
    if not body or not isinstance(body[-1], pyast.Return) or body[-1].value is None:
        raise NotInForm(f"{name}: must end with a return")
    ret_node = body[-1].value
    body = body[:-1]
    loops = [i for i, s in enumerate(body) if isinstance(s, pyast.For)]
    if len(loops) != 1:
        raise NotInForm(f"{name}: {len(loops)} loops, expected one")
    i = loops[0]
    loop = body[i]
    assert isinstance(loop, pyast.For)
    params = [a.arg for a in fn.args.args]
    if not (isinstance(loop.iter, pyast.Name) and params and loop.iter.id == params[-1]) or loop.orelse:
        raise NotInForm(f"line {loop.lineno}: the loop must run over the last parameter, with no else")
    untyped: tuple[Stmt, ...] = ()
    if isinstance(loop.target, pyast.Name) and loop.target.id == "item":
        loop_body, untyped = _typed_loop(loop)
        if i == 0 or pyast.dump(body[i - 1]) != pyast.dump(pyast.parse(_PY_TYPED_LOCALS).body[0]):
            raise NotInForm(f"line {loop.lineno}: a typed loop must follow `{_PY_TYPED_LOCALS}`")
        stores = [n for n in pyast.walk(fn) if isinstance(n, pyast.Name) and isinstance(n.ctx, pyast.Store)
                  and n.id in ("type_", "tuple_", "int_", "len_")]
        if len(stores) != 4:
            raise NotInForm(f"line {loop.lineno}: the type tests' locals are assigned again")
        state = _stmts(body[:i - 1])
    elif pyast.unparse(loop.target) == "(lo, hi)":
        loop_body, state = _stmts(loop.body), _stmts(body[:i])
    else:
        raise NotInForm(f"line {loop.lineno}: the loop must be `for lo, hi in <list>:` or `for item in <list>:`")
    after = _stmts(body[i + 1:])
    assigns = tuple(s for s in state if isinstance(s, Assign))
    if len(assigns) != len(state):
        raise NotInForm(f"{name}: only assignments before the loop")
    returns: str | tuple[str, str]
    if isinstance(ret_node, pyast.Name) and ret_node.id == "out":
        returns = "out"
    elif (isinstance(ret_node, pyast.IfExp) and isinstance(ret_node.body, pyast.Name) and ret_node.body.id == "out"
          and isinstance(ret_node.test, pyast.Name) and isinstance(ret_node.orelse, pyast.Constant)
          and ret_node.orelse.value is None):
        returns = ("out", ret_node.test.id)
    else:
        raise NotInForm(f"line {ret_node.lineno}: the return must be `return out` or `return out if <flag> else None`")
    f = Func(name, doc, items=params[-1], ints=tuple(params[:-1]), state=assigns, body=loop_body, after=after,
             returns=returns, untyped=untyped)
    _check_names(f)
    return f


#: names the form gives a meaning of its own: no parameter or variable may take them
_RESERVED = ("lo", "hi", "out", "item", "type_", "tuple_", "int_", "len_")


def _reads(e: Expr) -> list[str]:
    """The variables an expression reads."""
    match e:
        case Var(name=n):
            return [n]
        case Cmp(left=l, right=r):
            return _reads(l) + _reads(r)
        case Bool(operands=ops):
            return [n for o in ops for n in _reads(o)]
        case Not(operand=o):
            return _reads(o)
    return []


def _check_names(f: Func) -> None:
    """Every variable read is set where it is read, and only the variables set before the loop
    are assigned later: a parameter, a variable set before the loop, and ``lo``/``hi`` in the
    body of the loop (not in a typed loop's statements for another item)."""
    def fail(why: str) -> NotInForm:
        return NotInForm(f"{f.name}: {why}")

    for p in f.params:
        if p in _RESERVED:
            raise fail(f"the parameter `{p}` takes a name the form reserves")
    known = set(f.ints)
    for a in f.state:
        if a.var in _RESERVED or a.var in f.params:
            raise fail(f"`{a.var} = ...` before the loop assigns a parameter or a name the form reserves")
        unset = [n for n in _reads(a.value) if n not in known]
        if unset:
            raise fail(f"`{unset[0]}` is read before the loop but not set there")
        known.add(a.var)
    variables = {a.var for a in f.state}

    def walk(stmts: tuple[Stmt, ...], scope: set[str], where: str) -> None:
        for st in stmts:
            match st:
                case Assign(var=v, value=x):
                    if v not in variables:
                        raise fail(f"`{v} = ...` {where} assigns what is not a variable set before the loop")
                    reads = _reads(x)
                case If(cond=c, then=t, orelse=o):
                    reads = _reads(c)
                    walk(t, scope, where)
                    walk(o, scope, where)
                case Emit(lo=lo, hi=hi):
                    reads = _reads(lo) + _reads(hi)
                case _:
                    reads = []
            unset = [n for n in reads if n not in scope]
            if unset:
                raise fail(f"`{unset[0]}` is read {where} but not set there")

    walk(f.body, known | {"lo", "hi"}, "in the loop")
    walk(f.untyped, known, "for an item that is not a pair of integers")
    walk(f.after, known, "after the loop")
    if isinstance(f.returns, tuple) and f.returns[1] not in variables:
        raise fail(f"the returned flag `{f.returns[1]}` is not a variable set before the loop")


def _typed_loop(loop: pyast.For) -> tuple[tuple[Stmt, ...], tuple[Stmt, ...]]:
    """The body and the ``untyped`` statements of a typed loop, exactly as :func:`render_py`
    prints it (the type tests, the unpacking and the ``continue`` are compared as text)."""
    head = loop.body[0]
    if not (isinstance(head, pyast.If) and not head.orelse and pyast.unparse(head.test) == _PY_TYPED_TESTS[0]
            and len(head.body) == 2 and pyast.unparse(head.body[0]) == "lo, hi = item"):
        raise NotInForm(f"line {loop.lineno}: a typed loop must test `{_PY_TYPED_TESTS[0]}` and unpack `lo, hi = item`")
    inner = head.body[1]
    if not (isinstance(inner, pyast.If) and not inner.orelse and pyast.unparse(inner.test) == _PY_TYPED_TESTS[1]
            and isinstance(inner.body[-1], pyast.Continue)):
        raise NotInForm(f"line {head.lineno}: a typed loop must test `{_PY_TYPED_TESTS[1]}` "
                        "and end its body with continue")
    if any(isinstance(n, pyast.Continue) for st in inner.body[:-1] for n in pyast.walk(st)):
        raise NotInForm(f"line {inner.lineno}: continue inside the body of a typed loop")
    return _stmts(inner.body[:-1]), _stmts(loop.body[1:])
