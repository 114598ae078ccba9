"""Tests written to kill surviving mutants of the algorithms' form (``tailguard.backends.scan_ir``,
tools/mutation.sh --subset tests/mutation/render.toml --only 'tailguard.backends.scan_ir.*').

``parse_py`` reads the generated checker back into the form T18 proves, so everything it rejects
is what keeps an edit of that file from being proved as something else. These tests pin each
rejection by its exact message (the line it names included), on the committed checker text with
one edit or on a small function written here; that what is read is the IR value itself (the
docstring, the integer parameters and the list, the returned flag); and that a function using
every shape of the form renders to Python and JavaScript exactly as written here, and reads back
to the same value.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tailguard.backends import scan_ir as ir
from tailguard.backends.scan_ir import (
    Assign,
    Bool,
    Break,
    Cmp,
    Const,
    Emit,
    Func,
    If,
    Not,
    NotInForm,
    Var,
    parse_py,
    render_js,
    render_py,
)

ROOT = Path(__file__).resolve().parents[2]
CHECKER = (ROOT / "src" / "tailguard" / "_generated" / "checker.py").read_text(encoding="utf-8")
OUT = "out: list[tuple[int, int]] = []"
LOCALS = "type_, tuple_, int_, len_ = type, tuple, int, len"
TYPED_TEST = "type_(item) is tuple_ and len_(item) == 2"
INT_TEST = "type_(lo) is int_ and type_(hi) is int_"
LOOP = "the loop must run over the last parameter, with no else"
TARGET = "the loop must be `for lo, hi in <list>:` or `for item in <list>:`"
RETURN = "the return must be `return out` or `return out if <flag> else None`"


def _edited(old: str, new: str) -> str:
    """The committed checker with one edit (``old`` occurs once)."""
    assert CHECKER.count(old) == 1, old
    return CHECKER.replace(old, new)


def _line(source: str, text: str, after: str = "") -> int:
    """The number of the line of ``source`` that holds ``text``: the only one, or the first after
    the line that holds ``after``."""
    skip = source[:source.index(after)].count("\n") if after else 0
    found = [n for n, ln in enumerate(source.splitlines(), 1) if n > skip and text in ln]
    assert found and (after or len(found) == 1), (text, found)
    return found[0]


def _rejects(source: str, name: str, message: str) -> None:
    with pytest.raises(NotInForm) as exc:
        parse_py(source, name)
    assert str(exc.value) == message


def _fn(*lines: str, head: str = "def f(a, items):") -> str:
    """A small function: ``head`` and the body lines (each indented by four spaces)."""
    return "\n".join([head, *(f"    {ln}" for ln in lines)]) + "\n"


# a function that parses, to edit one line at a time
PLAIN = ("out: list[tuple[int, int]] = []", "n = a", "for lo, hi in items:", "    if lo > n:",
         "        out.append((n, lo))", "    n = hi", "return out")
PLAIN_FUNC = Func("f", "", items="items", ints=("a",), state=(Assign("n", Var("a")),),
                  body=(If(Cmp(">", Var("lo"), Var("n")), (Emit(Var("n"), Var("lo")),)), Assign("n", Var("hi"))))


def _plain(old: str, new: str, *, head: str = "def f(a, items):") -> str:
    assert PLAIN.count(old) == 1, old
    return _fn(*(new if ln == old else ln for ln in PLAIN), head=head)


# --- what is read is the IR value ---------------------------------------------------------


@pytest.mark.parametrize("f", ir.FUNCS, ids=[f.name for f in ir.FUNCS])
def test_the_checker_reads_back_as_the_ir_value(f: Func) -> None:
    assert parse_py(CHECKER, f.name) == f
    assert parse_py(render_py(f), f.name) == f


def test_a_function_without_a_docstring_reads_an_empty_doc() -> None:
    assert parse_py(_fn(*PLAIN), "f") == PLAIN_FUNC
    got = parse_py(_fn('"""Some text."""', *PLAIN), "f")
    assert got.doc == "Some text." and got == Func(**{**PLAIN_FUNC.__dict__, "doc": "Some text."})


def test_the_parameters_are_read_by_position_not_annotation() -> None:
    """The last parameter is the list, every other one an integer (annotations are not read)."""
    got = parse_py(_plain("for lo, hi in items:", "for lo, hi in xs:", head="def f(a: str, b, c, xs: int):"), "f")
    assert (got.ints, got.items, got.params) == (("a", "b", "c"), "xs", ("a", "b", "c", "xs"))
    got = parse_py(_plain("n = a", "n = 0", head="def f(items):"), "f")
    assert (got.ints, got.items, got.state) == ((), "items", (Assign("n", Const(0)),))


def test_the_returned_flag_is_read() -> None:
    got = parse_py(_plain("return out", "return out if n else None"), "f")
    assert got.returns == ("out", "n")
    assert parse_py(CHECKER, "_merge_run").returns == ("out", "ordered")
    assert parse_py(CHECKER, "_gaps").returns == "out"


def test_bool_and_int_constants_are_read() -> None:
    got = parse_py(_plain("n = a", "n = True"), "f").state
    assert got == (Assign("n", Const(True)),) and type(got[0].value).__name__ == "Const"
    assert type(got[0].value.value) is bool  # type: ignore[union-attr]
    got = parse_py(_plain("n = a", "n = 12"), "f").state
    assert got == (Assign("n", Const(12)),) and type(got[0].value.value) is int  # type: ignore[union-attr]


# --- every shape of the form, rendered and read back -------------------------------------

_lo, _hi, _a, _b, _n, _ok, _seen = (Var(v) for v in ("lo", "hi", "a", "b", "n", "ok", "seen"))
SHAPES = Func(
    "f", "Every shape of the form.", items="xs", ints=("a", "b"),
    state=(Assign("ok", Const(True)), Assign("seen", Const(False)), Assign("n", Const(3))),
    body=(
        If(Bool("or", (Cmp("==", _lo, _hi), Bool("and", (Cmp("!=", _hi, _a), Not(Cmp("<", _lo, _b)))))),
           (Assign("ok", Const(False)), Break()),
           (If(Cmp("==", Cmp("<=", _lo, _n), _seen), (Emit(_lo, Const(7)),),
               (If(Not(Bool("and", (_ok, _seen))), (Assign("n", _hi),)),)),)),
        If(Bool("and", (Not(_seen), Cmp(">=", _hi, _a))), (Assign("seen", Const(True)),),
           (If(Cmp(">", _lo, _n), (Break(),)), Assign("n", _lo))),
    ),
    after=(If(Bool("or", (Bool("and", (_ok, _seen)), Not(_ok))), (Emit(_n, _b),)),),
    returns=("out", "ok"))

SHAPES_PY = '''\
def f(a: int, b: int, xs: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """Every shape of the form."""
    out: list[tuple[int, int]] = []
    ok = True
    seen = False
    n = 3
    for lo, hi in xs:
        if lo == hi or (hi != a and (not lo < b)):
            ok = False
            break
        elif (lo <= n) == seen:
            out.append((lo, 7))
        elif not (ok and seen):
            n = hi
        if (not seen) and hi >= a:
            seen = True
        else:
            if lo > n:
                break
            n = lo
    if (ok and seen) or (not ok):
        out.append((n, b))
    return out if ok else None
'''

SHAPES_JS = '''\
// Every shape of the form.
function f(a, b, xs) {
  const out = [];
  let ok = true;
  let seen = false;
  let n = 3;
  for (const [lo, hi] of xs) {
    if (lo === hi || (hi !== a && (!(lo < b)))) {
      ok = false;
      break;
    } else if ((lo <= n) === seen) {
      out.push([lo, 7]);
    } else if (!(ok && seen)) {
      n = hi;
    }
    if ((!(seen)) && hi >= a) {
      seen = true;
    } else {
      if (lo > n) {
        break;
      }
      n = lo;
    }
  }
  if ((ok && seen) || (!(ok))) {
    out.push([n, b]);
  }
  return ok ? out : null;
}
'''


def test_every_shape_renders_as_written_and_reads_back() -> None:
    assert render_py(SHAPES) == SHAPES_PY
    assert render_js(SHAPES) == SHAPES_JS
    assert parse_py(SHAPES_PY, "f") == SHAPES


def test_the_rendered_python_runs_as_the_form_means() -> None:
    """The rendering is the program: run on a few lists, it does what the IR says."""
    env: dict[str, object] = {}
    exec(SHAPES_PY, env)
    f = env["f"]
    assert callable(f)
    assert f(0, 9, [(1, 2), (5, 6)]) == [(2, 9)]
    assert f(0, 9, [(4, 5)]) == [(4, 7), (3, 9)]
    assert f(0, 9, [(1, 1)]) is None
    assert f(0, 9, []) == []


def test_an_expression_outside_the_form_is_named_by_render() -> None:
    with pytest.raises(TypeError, match="not an expression: 'x'"):
        ir.py_expr("x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not an expression: 'x'"):
        ir.js_expr("x")  # type: ignore[arg-type]


# --- rejections: the function as a whole ---------------------------------------------------


def test_a_function_defined_twice_or_missing() -> None:
    _rejects(CHECKER + "\n\n" + render_py(ir.GAPS), "_gaps", "_gaps: defined 2 times, expected once")
    _rejects(CHECKER, "_no_such", "_no_such: defined 0 times, expected once")
    # a method or a nested function of that name is not the module's function
    _rejects("class C:\n    def f(self, items):\n        pass\n", "f", "f: defined 0 times, expected once")


@pytest.mark.parametrize(("what", "old", "new"), [
    ("out starts with a pair", OUT, "out: list[tuple[int, int]] = [(0, 1)]"),
    ("out is not a list", OUT, "out: list[tuple[int, int]] = ()"),
    ("out is not annotated", OUT, "out = []"),
    ("the list is another name", OUT, "res: list[tuple[int, int]] = []"),
    ("the list is not first", OUT, "n = 0"),
])
def test_out_must_start_empty(what: str, old: str, new: str) -> None:
    source = _plain(old, new)
    _rejects(source, "f", f"line 2: out must start empty: `{OUT}`")


def test_out_must_start_empty_in_the_checker() -> None:
    source = _edited(f"    {OUT}\n    cur = start\n", "    cur = start\n")
    _rejects(source, "_gaps", f"line {_line(source, '    cur = start')}: out must start empty: `{OUT}`")
    source = _edited(f"    {OUT}\n    cur = start\n",
                     "    out: list[tuple[int, int]] = [(start, start)]\n    cur = start\n")
    _rejects(source, "_gaps", f"line {_line(source, '[(start, start)]')}: out must start empty: `{OUT}`")


def test_a_function_with_a_docstring_only_or_an_expression_first() -> None:
    _rejects('\n\ndef f(items):\n    """Only this."""\n', "f", f"line 3: out must start empty: `{OUT}`")
    _rejects(_fn("print(items)", *PLAIN), "f", f"line 2: out must start empty: `{OUT}`")
    _rejects(_fn("1", *PLAIN), "f", f"line 2: out must start empty: `{OUT}`")  # a number is no docstring


@pytest.mark.parametrize(("what", "source"), [
    ("no return", _plain("return out", "n = 0")),
    ("a bare return", _plain("return out", "return")),
    ("nothing after out", _fn(OUT)),
])
def test_the_function_must_end_with_a_return(what: str, source: str) -> None:
    _rejects(source, "f", "f: must end with a return")


def test_the_checker_must_end_with_a_return() -> None:
    source = _edited("        out.append((cur, stop))\n    return out\n", "        out.append((cur, stop))\n")
    _rejects(source, "_gaps", "_gaps: must end with a return")


@pytest.mark.parametrize(("what", "new", "message"), [
    ("out itself is not the flag form", "return out if n else out", RETURN),
    ("None in the other branch", "return None if n else out", RETURN),
    ("a constant other than None", "return out if n else 0", RETURN),
    ("the flag is an expression", "return out if not n else None", RETURN),
    ("another list", "return items", RETURN),
    ("an expression", "return n > 0", RETURN),
])
def test_the_return_shapes(what: str, new: str, message: str) -> None:
    source = _plain("return out", new)
    _rejects(source, "f", f"line {_line(source, 'return')}: {message}")


def test_the_flag_return_in_the_checker() -> None:
    source = _edited("    return out if ordered else None\n\n\ndef _gaps",
                     "    return out if ordered else []\n\n\ndef _gaps")
    _rejects(source, "_merge_run", f"line {_line(source, 'return out if ordered else []')}: {RETURN}")


def test_one_loop_exactly() -> None:
    source = _edited("        out.append((cur, stop))\n    return out\n",
                     "        out.append((cur, stop))\n    for lo, hi in items:\n        break\n    return out\n")
    _rejects(source, "_gaps", "_gaps: 2 loops, expected one")
    _rejects(_fn(OUT, "n = a", "return out"), "f", "f: 0 loops, expected one")


# --- rejections: the loop ----------------------------------------------------------------


_GAPS_LOOP = "    for lo, hi in items:\n        if lo >= stop:"


@pytest.mark.parametrize(("what", "old", "new"), [
    ("over a call", _GAPS_LOOP, "    for lo, hi in reversed(items):\n        if lo >= stop:"),
    ("over another parameter", _GAPS_LOOP, "    for lo, hi in start:\n        if lo >= stop:"),
    ("with else", "            cur = hi\n    if cur < stop:",
     "            cur = hi\n    else:\n        cur = stop\n    if cur < stop:"),
])
def test_the_loop_runs_over_the_last_parameter_with_no_else(what: str, old: str, new: str) -> None:
    source = _edited(old, new)
    line = next(n for n, ln in enumerate(source.splitlines(), 1)
                if ln.startswith("    for lo, hi in") and n > _line(source, "def _gaps("))
    _rejects(source, "_gaps", f"line {line}: {LOOP}")


def test_a_loop_in_a_function_without_parameters() -> None:
    _rejects(_plain("n = a", "n = 0", head="def f():"), "f", f"line 4: {LOOP}")


@pytest.mark.parametrize("target", ["hi, lo", "lo, hi, x", "lo", "x", "[lo, hi]", "(lo, hi), x"])
def test_a_bad_loop_target(target: str) -> None:
    _rejects(_plain("for lo, hi in items:", f"for {target} in items:"), "f", f"line 4: {TARGET}")


def test_the_loop_target_in_the_checker() -> None:
    source = _edited(_GAPS_LOOP, "    for hi, lo in items:\n        if lo >= stop:")
    _rejects(source, "_gaps", f"line {_line(source, 'for hi, lo in items:')}: {TARGET}")


# --- rejections: the typed loop ------------------------------------------------------------

_APPEND = "            out.append((lo, hi))"
TYPED = (OUT, "ok = True", LOCALS, "for item in items:", f"    if {TYPED_TEST}:", "        lo, hi = item",
         f"        if {INT_TEST}:", "            out.append((lo, hi))", "            continue",
         "    ok = False", "return out if ok else None")
TYPED_FUNC = Func("f", "", items="items", ints=("a",), state=(Assign("ok", Const(True)),),
                  body=(Emit(Var("lo"), Var("hi")),), untyped=(Assign("ok", Const(False)),), returns=("out", "ok"))


def _typed(old: str, *new: str) -> str:
    assert TYPED.count(old) == 1, old
    i = TYPED.index(old)
    return _fn(*TYPED[:i], *new, *TYPED[i + 1:])


def test_a_typed_loop_reads_its_body_and_the_untyped_statements() -> None:
    assert parse_py(_fn(*TYPED), "f") == TYPED_FUNC
    got = parse_py(_typed(_APPEND, _APPEND, "            ok = True"), "f")
    assert got.body == (Emit(Var("lo"), Var("hi")), Assign("ok", Const(True)))
    # the locals line is not a state variable, and nothing else precedes the loop here
    bare = [ln for ln in TYPED if ln != "ok = True"]
    bare[bare.index("    ok = False")], bare[-1] = "    break", "return out"
    assert parse_py(_fn(*bare), "f").state == ()


@pytest.mark.parametrize(("what", "lines", "line"), [
    ("no locals line", _typed(LOCALS), 4),
    ("another local", _typed(LOCALS, "type_, tuple_, int_, len_ = type, tuple, float, len"), 5),
    ("the locals after the loop", _fn(OUT, *TYPED[3:10], LOCALS, TYPED[10]), 3),
    ("a state line between", _typed(LOCALS, LOCALS, "ok = True"), 6),
])
def test_a_typed_loop_must_follow_its_locals_line(what: str, lines: str, line: int) -> None:
    _rejects(lines, "f", f"line {line}: a typed loop must follow `{LOCALS}`")


@pytest.mark.parametrize(("what", "lines"), [
    ("in the loop", _typed(_APPEND, _APPEND, "            int_ = float")),
    ("before the loop", _typed(LOCALS, "len_ = len", LOCALS)),
    ("after the loop", _typed("    ok = False", "    ok = False", "    type_ = len")),
])
def test_the_type_tests_locals_assigned_again(what: str, lines: str) -> None:
    line = _line(lines, "for item in items:")
    _rejects(lines, "f", f"line {line}: the type tests' locals are assigned again")


_HEAD = f"a typed loop must test `{TYPED_TEST}` and unpack `lo, hi = item`"
_INNER = f"a typed loop must test `{INT_TEST}` and end its body with continue"


@pytest.mark.parametrize(("what", "lines", "message"), [
    ("the pair test loosened", _typed(f"    if {TYPED_TEST}:", "    if len_(item) == 2:"), f"line 5: {_HEAD}"),
    ("the head not an if", _typed(f"    if {TYPED_TEST}:", "    ok = True", f"    if {TYPED_TEST}:"),
     f"line 5: {_HEAD}"),
    ("the head with an else", _typed("    ok = False", "    else:", "        ok = False", "    ok = False"),
     f"line 5: {_HEAD}"),
    ("another unpacking", _typed("        lo, hi = item", "        hi, lo = item"), f"line 5: {_HEAD}"),
    ("a third statement", _typed("            continue", "            continue", "        ok = False"),
     f"line 5: {_HEAD}"),
    ("one statement only", _fn(*TYPED[:5], "        lo, hi = item", *TYPED[9:]), f"line 5: {_HEAD}"),
    ("the int test loosened", _typed(f"        if {INT_TEST}:", "        if type_(lo) is int_:"), f"line 6: {_INNER}"),
    ("the inner not an if", _fn(*TYPED[:6], "        ok = True", *TYPED[9:]), f"line 6: {_INNER}"),
    ("the inner with an else",
     _typed("            continue", "            continue", "        else:", "            break"),
     f"line 6: {_INNER}"),
    ("no continue", _typed("            continue"), f"line 6: {_INNER}"),
    ("break in place of continue", _typed("            continue", "            break"), f"line 6: {_INNER}"),
    ("continue inside the body", _typed(_APPEND, "            if lo < hi:", "                continue", _APPEND),
     "line 8: continue inside the body of a typed loop"),
    ("continue first", _typed(_APPEND, "            continue", _APPEND),
     "line 8: continue inside the body of a typed loop"),
    ("continue second", _typed(_APPEND, _APPEND, "            if lo < hi:", "                continue"),
     "line 8: continue inside the body of a typed loop"),
])
def test_a_typed_loop_outside_the_form(what: str, lines: str, message: str) -> None:
    _rejects(lines, "f", message)


TYPED_SHAPES = Func(
    "g", "A typed loop.", items="items", ints=("low",), state=(Assign("ok", Const(True)),),
    body=(If(Cmp("<", _lo, Var("low")), (Break(),)), Emit(_lo, _hi)), untyped=(Assign("ok", Const(False)), Break()),
    after=(Emit(Var("low"), Var("low")),), returns=("out", "ok"))

TYPED_SHAPES_PY = '''\
def g(low: int, items: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
    """A typed loop."""
    out: list[tuple[int, int]] = []
    ok = True
    type_, tuple_, int_, len_ = type, tuple, int, len  # the type tests' builtins as locals
    for item in items:
        if type_(item) is tuple_ and len_(item) == 2:
            lo, hi = item
            if type_(lo) is int_ and type_(hi) is int_:
                if lo < low:
                    break
                out.append((lo, hi))
                continue
        ok = False
        break
    out.append((low, low))
    return out if ok else None
'''

TYPED_SHAPES_JS = '''\
// A typed loop.
function g(low, items) {
  const out = [];
  let ok = true;
  for (const item of items) {
    if (Array.isArray(item) && item.length === 2) {
      const lo = item[0];
      const hi = item[1];
      if (Number.isSafeInteger(lo) && Number.isSafeInteger(hi)) {
        if (lo < low) {
          break;
        }
        out.push([lo, hi]);
        continue;
      }
    }
    ok = false;
    break;
  }
  out.push([low, low]);
  return ok ? out : null;
}
'''


def test_a_typed_loop_renders_as_written_and_reads_back() -> None:
    """Whole texts (the checker's own algorithms are only looked for inside the JS checker)."""
    assert render_py(TYPED_SHAPES) == TYPED_SHAPES_PY
    assert render_js(TYPED_SHAPES) == TYPED_SHAPES_JS
    assert parse_py(TYPED_SHAPES_PY, "g") == TYPED_SHAPES


def test_the_typed_loop_in_the_checker() -> None:
    source = _edited("    for item in items:\n        if type_(item) is tuple_ and len_(item) == 2:",
                     "    for item in items:\n        if type_(item) is tuple_:")
    loop = _line(source, "for item in items:", "_merge_run_bounded(")
    _rejects(source, "_merge_run_bounded", f"line {loop}: {_HEAD}")
    source = _edited("                continue\n        ordered = False\n", "        ordered = False\n")
    _rejects(source, "_merge_run_bounded",
             f"line {_line(source, 'if type_(item) is tuple_ and len_(item) == 2:', '_merge_run_bounded(')}: {_INNER}")
    source = _edited(f"    {LOCALS}  # the type tests' builtins as locals\n", "")
    loop = _line(source, "for item in items:", "_merge_run_bounded(")
    _rejects(source, "_merge_run_bounded", f"line {loop}: a typed loop must follow `{LOCALS}`")


# --- rejections: statements and expressions -----------------------------------------------


@pytest.mark.parametrize("statement", [
    "n += hi", "n: int = hi", "n = m = hi", "out[-1] = (n, hi)", "out.append(n)", "out.append((n, lo, hi))",
    "out.append((n, lo), (n, hi))", "out.append((n, lo), key=n)", "out.extend((n, lo))", "print((n, lo))",
    "pass", "continue",
])
def test_a_statement_outside_the_form(statement: str) -> None:
    source = _plain("    n = hi", f"    {statement}")
    _rejects(source, "f", f"line 7: {statement!r} is not a statement of the form")


@pytest.mark.parametrize(("expression", "shown"), [
    ("hi - 1", "hi - 1"), ("hi + a", "hi + a"), ("-hi", "-hi"), ("1.5", "1.5"), ("'a'", "'a'"), ("None", "None"),
    ("lo < hi < a", "lo < hi < a"), ("lo in items", "lo in items"), ("lo is hi", "lo is hi"),
    ("out[-1][1]", "out[-1][1]"), ("items[0]", "items[0]"), ("f(hi)", "f(hi)"), ("hi if lo else a", "hi if lo else a"),
])
def test_an_expression_outside_the_form(expression: str, shown: str) -> None:
    source = _plain("    n = hi", f"    n = {expression}")
    _rejects(source, "f", f"line 7: {shown!r} is not an expression of the form")


@pytest.mark.parametrize(("old", "new", "shown"), [
    ("if lo > n:", "if lo > n - 1:", "n - 1"),
    ("if lo > n:", "if not -lo:", "-lo"),
    ("if lo > n:", "if lo and n.real:", "n.real"),
    ("if lo > n:", "if lo > n > a:", "lo > n > a"),
    ("out.append((n, lo))", "out.append((n, lo + 1))", "lo + 1"),
    ("out.append((n, lo))", "out.append((n + 1, lo))", "n + 1"),
])
def test_an_expression_outside_the_form_inside_a_statement(old: str, new: str, shown: str) -> None:
    source = _plain(f"    {old}" if old.startswith("if") else f"        {old}",
                    f"    {new}" if new.startswith("if") else f"        {new}")
    _rejects(source, "f", f"line {_line(source, new)}: {shown!r} is not an expression of the form")


def test_arithmetic_is_not_in_the_form_of_the_checker() -> None:
    """``stop - 1`` (once an expression of the form) is now read as outside it."""
    source = _edited("    if cur < stop:\n        out.append((cur, stop))",
                     "    if cur < stop - 1:\n        out.append((cur, stop))")
    line = _line(source, "if cur < stop - 1:")
    _rejects(source, "_gaps", f"line {line}: 'stop - 1' is not an expression of the form")
    tail = "\n    return out if ordered else None\n\n\ndef _gaps"
    source = _edited(f"    if ordered and started:\n        out.append((run_lo, run_hi)){tail}",
                     f"    if ordered and started:\n        out[-1] = (out[-1][0], run_hi){tail}")
    _rejects(source, "_merge_run", f"line {_line(source, 'out[-1] = (out[-1][0], run_hi)')}: "
             "'out[-1] = (out[-1][0], run_hi)' is not a statement of the form")


@pytest.mark.parametrize(("what", "new"), [
    ("an if", ("if a > 0:", "    n = a")),
    ("an append", ("out.append((a, a))", "n = a")),
    ("a break", ("n = a", "break")),
])
def test_assignments_only_before_the_loop(what: str, new: tuple[str, ...]) -> None:
    source = _fn(*(ln for old in PLAIN for ln in (new if old == "n = a" else (old,))))
    _rejects(source, "f", "f: only assignments before the loop")


def test_assignments_only_before_the_loop_in_the_checker() -> None:
    source = _edited("    cur = start\n    for lo, hi in items:",
                     "    cur = start\n    if start > stop:\n        cur = stop\n    for lo, hi in items:")
    _rejects(source, "_gaps", "_gaps: only assignments before the loop")


# --- T18 reports the rejection ---------------------------------------------------------------


def test_t18_reports_the_line_outside_the_form() -> None:
    pytest.importorskip("z3")
    from proofs import runtime_algorithms
    source = _edited(_GAPS_LOOP, "    for lo, hi in items:\n        if lo >= stop - 1:")
    with pytest.raises(NotInForm) as exc:
        runtime_algorithms.read_algorithms(source)
    want = f"line {_line(source, 'if lo >= stop - 1:')}: 'stop - 1' is not an expression of the form"
    assert str(exc.value) == want
    result = runtime_algorithms.runtime_algorithms_are_the_spec(source=source)
    assert result.status == "counterexample"
    assert result.detail == f"the generated checker is not in the proved form: {want}"
    assert runtime_algorithms.read_algorithms(CHECKER) == ir.BY_NAME


# --- names: every variable read is set where it is read -------------------------------------


def _lines(old: str, *new: str) -> str:
    """PLAIN with the line ``old`` replaced by the lines ``new``."""
    i = PLAIN.index(old)
    return _fn(*PLAIN[:i], *new, *PLAIN[i + 1:])



@pytest.mark.parametrize(("source", "message"), [
    (_plain("n = a", "n = b"), "f: `b` is read before the loop but not set there"),
    (_plain("n = a", "lo = a"), "f: `lo = ...` before the loop assigns a parameter or a name the form reserves"),
    (_plain("n = a", "a = 1"), "f: `a = ...` before the loop assigns a parameter or a name the form reserves"),
    (_plain("    n = hi", "    m = hi"), "f: `m = ...` in the loop assigns what is not a variable set before the loop"),
    (_plain("    n = hi", "    a = hi"), "f: `a = ...` in the loop assigns what is not a variable set before the loop"),
    (_plain("    n = hi", "    lo = hi"),
     "f: `lo = ...` in the loop assigns what is not a variable set before the loop"),
    (_plain("    n = hi", "    n = zz"), "f: `zz` is read in the loop but not set there"),
    (_plain("    if lo > n:", "    if lo > zz:"), "f: `zz` is read in the loop but not set there"),
    (_plain("        out.append((n, lo))", "        out.append((n, zz))"),
     "f: `zz` is read in the loop but not set there"),
    (_plain("        out.append((n, lo))", "        out.append((zz, lo))"),
     "f: `zz` is read in the loop but not set there"),
    (_lines("    n = hi", "    if lo > n:", "        n = hi", "    else:", "        n = zz"),
     "f: `zz` is read in the loop but not set there"),
    (_plain("    if lo > n:", "    if not (lo > n or zz):"), "f: `zz` is read in the loop but not set there"),
    (_lines("return out", "if lo > n:", "    out.append((n, n))", "return out"),
     "f: `lo` is read after the loop but not set there"),
    (_lines("return out", "if n > a:", "    n = zz", "return out"), "f: `zz` is read after the loop but not set there"),
    (_lines("return out", "if n > a:", "    q = a", "return out"),
     "f: `q = ...` after the loop assigns what is not a variable set before the loop"),
    (_plain("return out", "return out if a else None"),
     "f: the returned flag `a` is not a variable set before the loop"),
    (_plain("n = a", "n = a", head="def f(lo, items):").replace("n = a", "n = lo"),
     "f: the parameter `lo` takes a name the form reserves"),
    (_plain("n = a", "n = a", head="def f(a, out):").replace("in items", "in out"),
     "f: the parameter `out` takes a name the form reserves"),
    (_typed("    ok = False", "    ok = lo"),
     "f: `lo` is read for an item that is not a pair of integers but not set there"),
    (_typed("    ok = False", "    zz = False"),
     "f: `zz = ...` for an item that is not a pair of integers assigns what is not a variable set before the loop"),
])
def test_a_name_read_where_it_is_not_set_is_not_in_the_form(source: str, message: str) -> None:
    """An edit that reads a variable nothing set there (or assigns a parameter, ``lo``/``hi``, or
    a variable the form does not know) is rejected by name, not left to crash the proof."""
    with pytest.raises(NotInForm) as info:
        parse_py(source, "f")
    assert str(info.value) == message


def test_a_name_the_form_reads_where_it_is_set_is_accepted() -> None:
    """A parameter and a state variable are read everywhere; ``lo``/``hi`` in the loop; the flag."""
    text = _lines("return out", "if n > a:", "    n = a", "    out.append((a, n))", "return out")
    got = parse_py(text, "f")
    assert got.after == (If(Cmp(">", Var("n"), Var("a")), (Assign("n", Var("a")), Emit(Var("a"), Var("n")))),)
    assert parse_py(_fn(*TYPED), "f").returns == ("out", "ok")


def test_t18_reports_an_unset_name_as_not_in_the_form() -> None:
    """The theorem on an edited checker whose _gaps reads a name it never sets: a counterexample
    naming it, not a KeyError."""
    from proofs import runtime_algorithms

    bad = _edited("        if hi > cur:\n            cur = hi\n", "        if hi > cur:\n            cur = zz\n")
    result = runtime_algorithms.runtime_algorithms_are_the_spec(source=bad)
    assert result.status == "counterexample", result
    assert "_gaps: `zz` is read in the loop but not set there" in result.detail, result.detail
