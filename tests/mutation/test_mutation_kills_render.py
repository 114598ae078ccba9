"""Tests written to kill surviving mutants of the renderer (``tailguard.backends.python_render``,
tools/mutation.sh --subset tests/mutation/render.toml).

The project spec takes only some of the renderer's rules, so a mutant in another rule leaves the
generated checker byte-identical and ``gen --check`` cannot see it. These tests render a spec of
their own: the project spec plus a profile ``zoo`` whose clauses take the other rules (``min``,
``empty`` of an interval and of a set, an interval inside a set, ``any`` over lists and an
interval, comparison chains, placeholders of every type), load the rendered text as a module, and
hold its decisions to the z3 encoding of the same spec on concrete cases (``z3_decide``: clause by
clause, holes offset by offset) and its sentences to the message templates.
"""

from __future__ import annotations

import random
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tailguard.backends.python_render import NoRule, render_python
from tailguard.speclang.load import Spec, load_spec

ROOT = Path(__file__).resolve().parents[2]

ZOO = '''
[[profile]]
id = "zoo"
doc = "Rules of the renderer the project spec does not use."
report = "all"
wellformed = "sane"

[[profile.clause]]
id = "sane"
meaning = "Inputs only."
holds = "min(n, t) >= 0 and min(t, n) <= n and all(r in TR: empty(r & [n, n)))"
message = "not sane ({why})"

[[profile.clause]]
id = "honest_c"
meaning = "Holes that are the difference of the two sides (one scan gives both), not the last clause."
holds = "C subset I"
holes = "C \\\\ I"
message = "C {C} outside I {I}: {holes}"

[[profile.clause]]
id = "cover_empty"
meaning = "An empty pair."
holds = "empty(C) or t > 3"
message = "C is {C}, t is {t}, unit {floor_unit}, witness {witness}, why {why}"

[[profile.clause]]
id = "spill_in_nothing"
meaning = "An empty set."
holds = "empty(union(SP) | union(PC))"
holes = "[0, n) \\\\ (union(SP) | C)"
message = "spills {union(SP)} and coverage {union(PC) | C}, holes {holes}"

[[profile.clause]]
id = "c_spilled"
meaning = "A pair inside a set."
holds = "C subset union(SP)"
message = "C {C} not spilled; gaps {C \\\\ union(SP)}; I minus C {I \\\\ C}"

[[profile.clause]]
id = "some_early"
meaning = "Any over two lists and an interval."
holds = "any(r in TR, SP, I: r.lo < t) and all(r in C: r.lo >= 0)"
message = "none early: first bad {witness}"

[[profile.clause]]
id = "chain"
meaning = "A comparison chain."
holds = "0 <= t < n and known(floor_unit) and not (F > n)"
message = "chain broken: {why}"

[[profile.clause]]
id = "spill_clear"
meaning = "No spill meets the tail (no definition is the union of the spills)."
holds = "all(r in SP: empty(r & T))"
message = "spill {witness} meets the tail"

[[profile.clause]]
id = "vacuous_quant"
meaning = "A quantifier whose body ignores its variable."
holds = "all(r in SP: empty(C & T))"
message = "C {C} meets T {T}"

[[profile.clause]]
id = "nested"
meaning = "Nested quantifiers."
holds = "any(r in TR, SP: all(s in PC: empty(s & r))) or all(r in TR: all(s in TR: empty(s & r) or s.lo == r.lo))"
message = "nested: {witness}"

[[profile.clause]]
id = "holes_union"
meaning = "Holes with the sides of the clause, joined by | (not the difference)."
holds = "C subset I"
holes = "C | I"
message = "C {C} and I {I}: {holes}"

[[profile.clause]]
id = "holes_other"
meaning = "Holes with the right side of the clause but another left side."
holds = "[0, n) subset union(SP) | C"
holes = "T \\\\ (union(SP) | C)"
message = "tail holes {holes}"

[[profile.clause]]
id = "look_lo"
meaning = "Four operands, lo twice: not the bounds pattern."
holds = "all(r in TR: 0 <= r.lo <= r.lo <= n)"
message = "look_lo {witness}"

[[profile.clause]]
id = "look_hi"
meaning = "Four operands, hi twice: not the bounds pattern."
holds = "all(r in SP: 0 <= r.hi <= r.hi <= n)"
message = "look_hi {witness}"

[[profile.clause]]
id = "look_var"
meaning = "The lower bound uses the variable: not the bounds pattern."
holds = "all(r in PC: r.lo <= r.lo <= r.hi <= n)"
message = "look_var {witness}"

[[profile.clause]]
id = "look_other"
meaning = "Fields of another interval: not the bounds pattern."
holds = "all(r in PC: 0 <= C.lo <= C.hi <= n) and all(r in SP: 0 <= C.lo <= r.hi <= n)"
message = "look_other {witness}"

[[profile.clause]]
id = "nested_all"
meaning = "A witness of an all whose body is another all."
holds = "all(r in TR: all(s in PC: empty(s & r)))"
message = "nested_all {witness}"

[[profile.clause]]
id = "spill_floor"
meaning = "A witness over a definition no placeholder names."
holds = "all(r in SP: empty(r & Phi))"
message = "spill {witness} meets the floor"

[[profile]]
id = "zoofirst"
doc = "Report the first failure: holes that are the difference are not taken."
report = "first"
wellformed = ""

[[profile.clause]]
id = "honest_c"
meaning = "Holes that are the difference, under report first."
holds = "C subset I"
holes = "C \\\\ I"
message = "C {C} outside I {I}"

[[profile.clause]]
id = "later"
meaning = "A later clause."
holds = "t <= n"
message = "t {t} past n {n}"

[[profile]]
id = "zoogate"
doc = "A gate that is one quantifier bounding every list: check may hand the lists over unread."
report = "all"
wellformed = "g"

[[profile.clause]]
id = "g"
meaning = "Every interval inside [0, n)."
holds = "all(r in I, C, TR, PC, SP: 0 <= r.lo <= r.hi <= n)"
message = "out of range: {witness}"

[[profile.clause]]
id = "covered"
meaning = "The coverage meets nothing truncated."
holds = "all(r in TR: empty(r & C))"
message = "truncation {witness} meets {C}"

[[profile]]
id = "zoopartial"
doc = "A gate that bounds every list but the spills: check must read the spills."
report = "all"
wellformed = "g"

[[profile.clause]]
id = "g"
meaning = "Every interval but the spills inside [0, n)."
holds = "n >= 0 and all(r in I, C, TR, PC: 0 <= r.lo <= r.hi <= n)"
message = "out of range ({why})"

[[profile.clause]]
id = "spilled"
meaning = "Something spilled."
holds = "not empty(union(SP))"
message = "nothing spilled"

[[profile]]
id = "zoolists"
doc = "A gate bounding exactly the three lists."
report = "all"
wellformed = "g"

[[profile.clause]]
id = "g"
meaning = "Every pair of every list inside [0, n)."
holds = "all(r in TR, PC, SP: 0 <= r.lo <= r.hi <= n)"
message = "out of range: {witness}"

[[profile.clause]]
id = "covered_some"
meaning = "Some prior coverage: a union inside a call's arguments, fused with the gate's bound all the same."
holds = "not empty(union(PC))"
message = "no prior coverage"

[[profile]]
id = "zoofield"
doc = "A gate bounded by a field, not a number or an int input: check must read every list."
report = "all"
wellformed = "g"

[[profile.clause]]
id = "g"
meaning = "Every list inside [0, I.hi]."
holds = "all(r in C, TR, PC, SP: 0 <= r.lo <= r.hi <= I.hi)"
message = "out of range: {witness}"

[[profile]]
id = "zoonested"
doc = "A gate whose list bounds are split over three quantifiers, one inside a nested and."
report = "all"
wellformed = "g"

[[profile.clause]]
id = "g"
meaning = "Every pair of every list inside [0, n), list by list."
holds = "all(r in TR: 0 <= r.lo <= r.hi <= n) and (n >= 0 and all(r in PC: 0 <= r.lo <= r.hi <= n)) \
 and all(r in SP: 0 <= r.lo <= r.hi <= n)"
message = "out of range ({why})"

[[profile.clause]]
id = "something"
meaning = "Something truncated, covered or spilled."
holds = "not empty(union(TR) | union(PC) | union(SP))"
message = "nothing recorded"

[[profile]]
id = "zoonogate"
doc = "No gate: the definitions are rendered before any clause, by the first compiler."
report = "all"
wellformed = ""

[[profile.clause]]
id = "no_gap"
meaning = "Every offset covered."
holds = "n < 0 or [0, n) subset covered"
message = "offsets {holes} uncovered"
holes = "[0, n) \\\\ covered"

[[profile]]
id = "zoowhy"
doc = "A why over a definition no placeholder names, in a profile of its own (zoo's witnesses name it)."
report = "all"
wellformed = ""

[[profile.clause]]
id = "why_floor"
meaning = "A why over a definition no placeholder names."
holds = "n < 0 or empty(Phi)"
message = "floor: {why}"
'''


def _spec(tmp: Path, extra: str) -> Spec:
    path = tmp / "clauses.toml"
    path.write_text((ROOT / "spec" / "clauses.toml").read_text(encoding="utf-8") + extra, encoding="utf-8")
    return load_spec(path)


def _module(text: str) -> Any:
    mod = types.ModuleType("tailguard_zoo_checker")
    sys.modules[mod.__name__] = mod  # NamedTuple looks its module up
    try:
        exec(compile(text, "<zoo checker>", "exec"), mod.__dict__)
    finally:
        del sys.modules[mod.__name__]
    return mod


@pytest.fixture(scope="module")
def zoo_spec(tmp_path_factory: pytest.TempPathFactory) -> Spec:
    return _spec(tmp_path_factory.mktemp("zoo"), ZOO)


@pytest.fixture
def zoo(zoo_spec: Spec) -> tuple[Spec, Any]:
    """Rendered afresh for every test (30 ms): each test then reaches the renderer itself, so a
    mutation run gives a renderer mutant every test that can see it."""
    return zoo_spec, _module(render_python(zoo_spec))


def _cases(k: int) -> list[dict[str, Any]]:
    rnd = random.Random(16)

    def pair() -> list[int]:
        return sorted(rnd.randint(-1, 7) for _ in range(2)) if rnd.random() < 0.9 else [5, 2]

    return [{"history_end": rnd.randint(-1, 7), "tail_start": rnd.randint(-1, 7), "summary_input": pair(),
             "summary_covers": pair(), "recovery_floor_span": rnd.randint(-1, 8),
             "floor_unit": rnd.choice(["turns", "tokens", "Turns"]), "truncator_unit": "turns",
             "prior_truncations": [pair() for _ in range(rnd.randint(0, 2))],
             "prior_coverage": [pair() for _ in range(rnd.randint(0, 2))],
             "spills": [pair() for _ in range(rnd.randint(0, 3))]} for _ in range(k)]


def _within(holes: tuple[tuple[int, int], ...], n: int) -> tuple[tuple[int, int], ...]:
    """The holes inside [0, n): z3_decide evaluates the holes expression at those offsets only."""
    return tuple((max(lo, 0), min(hi, n)) for lo, hi in holes if max(lo, 0) < min(hi, n))


def test_the_rendered_zoo_profiles_decide_as_the_z3_encoding(zoo: tuple[Spec, Any]) -> None:
    pytest.importorskip("z3")
    from tailguard.backends.z3_eval import z3_decide

    spec, mod = zoo
    seen: set[tuple[str, str]] = set()
    for case in _cases(40):
        for profile in ("zoo", "zoofirst", "zoowhy", "zoogate", "zoolists", "zoopartial", "zoofield",
                        "zoonested", "zoonogate"):
            got = mod.check_case(case, profile)
            want = z3_decide(spec, profile, mod.read_case(case))
            assert (got.decision, got.failed, _within(got.holes, case["history_end"])) == (
                want.decision, want.failed, want.holes), (profile, case)
            seen.update((profile, c) for c in got.failed)
            seen.add((profile, "holes" if got.holes else "no holes"))
    # every clause failed somewhere (nested: in test_the_rendered_zoo_sentences), holes found and not
    want_seen = {(p.id, c.id) for p in spec.profiles if p.id in ("zoo", "zoofirst", "zoowhy") for c in p.clauses}
    want_seen |= {("zoo", "holes"), ("zoo", "no holes"), ("zoofirst", "no holes"), ("zoowhy", "no holes")}
    assert seen >= want_seen - {("zoo", "nested")}, want_seen - seen


@pytest.mark.parametrize("profile", ["zoogate", "zoolists", "zoopartial", "zoofield", "zoo", "strict"])
@pytest.mark.parametrize(("field", "bad", "where", "reason"), [
    ("prior_truncations", [(0, 1), (1.5, 2)], "prior_truncations[1][0]", "expected an integer, got float 1.5"),
    ("prior_coverage", [[0, True]], "prior_coverage[0][1]", "expected an integer, got bool True"),
    ("spills", [(0, 1), (2,)], "spills[1]", "expected a pair [lo, hi], got (2,)"),
    ("spills", [(0, 10 ** 1000)], "spills[0][1]", "an integer of more than 1,000 digits (the limit)"),
])
def test_every_rendered_check_reads_a_bad_list_item_whatever_its_gate(
        zoo: tuple[Spec, Any], profile: str, field: str, bad: Any, where: str, reason: str) -> None:
    """A gate that bounds every list lets check skip reading them (the gate's _bounded types them);
    a gate that bounds fewer, or by a bound not read under the digit limit, must not."""
    _, mod = zoo
    case = {**mod.read_case(ZOO_CASE), field: bad}
    with pytest.raises(mod.CaseError) as err:
        mod.check(profile, **case)
    assert (err.value.field, err.value.reason) == (where, reason)


def test_the_rendered_gates_that_bound_every_list(zoo: tuple[Spec, Any]) -> None:
    _, mod = zoo
    # the generated _GATES table: the profiles whose gate bounds every list (zoopartial, zoofield: read in full)
    assert set(mod._GATES) == {"strict", "partitioned", "zoogate", "zoolists"}
    good = mod.read_case({**ZOO_CASE, "summary_covers": [0, 3], "prior_truncations": [[3, 4]]})
    for profile in ("zoogate", "zoolists", "zoopartial", "zoofield"):
        assert mod.check(profile, **good) == mod.check_case({**ZOO_CASE, "summary_covers": [0, 3],
                                                             "prior_truncations": [[3, 4]]}, profile)


def test_a_union_inside_a_call_is_fused_with_the_gate(zoo: tuple[Spec, Any]) -> None:
    """``not empty(union(PC))`` (the union among a call's arguments, a tuple of the AST): the
    gate's bound and the union of PC are one pass, and the clause reads its result."""
    spec, _ = zoo
    text = render_python(spec)
    body = text[text.index("def _check_zoolists("):text.index("def _explain_zoolists(")]
    assert "    u_PC = _merged_bounded(v_PC, 0, v_n)" in body, body
    assert "(u_PC is not None)" in body and "(not u_PC)" in body, body


def test_every_list_bound_of_a_gate_is_found_and_fused(zoo: tuple[Spec, Any]) -> None:
    """A gate that bounds the lists in three quantifiers, one inside a nested ``and``: each bound
    list whose union a clause takes gets its one pass, and none is lost; a gate bounding lists no
    clause unites (zoogate) fuses nothing."""
    spec, _ = zoo
    text = render_python(spec)

    def body(profile: str) -> str:
        return text[text.index(f"def _check_{profile}("):text.index(f"def _explain_{profile}(")]

    nested = body("zoonested")
    for src in ("TR", "PC", "SP"):
        assert nested.count(f"    u_{src} = _merged_bounded(v_{src}, 0, v_n)") == 1, (src, nested)
        assert f"(u_{src} is not None)" in nested, (src, nested)
    assert "_merged_runs(u_TR + u_PC + u_SP)" in nested, nested
    assert "_merged_bounded" not in body("zoogate"), body("zoogate")


def test_the_rendered_zoo_tests_an_interval_for_emptiness_by_its_endpoints(zoo: tuple[Spec, Any]) -> None:
    """What ``tailguard gen`` would write for ``empty(C) or t > 3``: the endpoint comparison, not a scan
    (``not _gaps(lo, hi, [])`` decides the same, one call slower)."""
    spec, _ = zoo
    text = render_python(spec)
    assert "    if not ((v_C[0] >= v_C[1]) or (v_t > 3)):  # cover_empty: empty(C) or t > 3\n" in text


def test_the_rendered_project_profiles_are_the_generated_checker(zoo: tuple[Spec, Any]) -> None:
    from tailguard._generated import checker

    _, mod = zoo
    for case in _cases(60):
        for profile in ("seed", "strict", "partitioned"):
            d = checker.check_case(case, profile)
            assert mod.check_case(case, profile) == d
            fields = checker.read_case(case)
            assert mod.explain(profile, d, **mod.read_case(case)) == checker.explain(profile, d, **fields)


ZOO_CASE = {"history_end": 6, "tail_start": 2, "summary_input": [1, 5], "summary_covers": [-1, 3],
            "recovery_floor_span": 7, "floor_unit": "Turns", "truncator_unit": "turns",
            "prior_truncations": [[3, 4]], "prior_coverage": [[0, 1]], "spills": [[4, 5], [0, 1]]}


def test_the_rendered_zoo_sentences(zoo: tuple[Spec, Any]) -> None:
    _, mod = zoo
    d = mod.check_case(ZOO_CASE, "zoo")
    assert tuple(d) == ("refuse", ("honest_c", "cover_empty", "spill_in_nothing", "c_spilled", "some_early", "chain",
                                   "spill_clear", "vacuous_quant", "holes_union", "holes_other", "look_other",
                                   "spill_floor"),
                        ((3, 4), (5, 6)))  # the holes of the last failing clause that has holes
    assert mod.explain("zoo", d, **mod.read_case(ZOO_CASE)) == [
        "honest_c: C [-1, 3) outside I [1, 5): [3, 4), [5, 6)",
        "cover_empty: C is [-1, 3), t is 2, unit 'Turns', witness an interval, why empty(C) or t > 3 is false",
        "spill_in_nothing: spills [0, 1), [4, 5) and coverage [-1, 3), holes [3, 4), [5, 6)",
        "c_spilled: C [-1, 3) not spilled; gaps [-1, 0), [1, 3); I minus C [3, 5)",
        "some_early: none early: first bad [-1, 3)",
        "chain: chain broken: known(floor_unit) is false; not F > n is false",
        "spill_clear: spill [4, 5) meets the tail",
        "vacuous_quant: C [-1, 3) meets T [2, 6)",
        "holes_union: C [-1, 3) and I [1, 5): [3, 4), [5, 6)",
        "holes_other: tail holes [3, 4), [5, 6)",
        "look_other: look_other [0, 1)",
        "spill_floor: spill [4, 5) meets the floor",
    ]
    d = mod.check_case(ZOO_CASE, "zoowhy")
    assert tuple(d) == ("refuse", ("why_floor",), ())
    assert mod.explain("zoowhy", d, **mod.read_case(ZOO_CASE)) == ["why_floor: floor: n < 0 or empty(Phi) is false"]
    d = mod.check_case({**ZOO_CASE, "tail_start": 9}, "zoofirst")
    assert tuple(d) == ("refuse", ("honest_c",), ())  # the first failure only, and no holes
    assert mod.explain("zoofirst", d, **mod.read_case(ZOO_CASE)) == ["honest_c: C [-1, 3) outside I [1, 5)"]
    insane = {**ZOO_CASE, "history_end": 1, "tail_start": -1}
    d = mod.check_case(insane, "zoo")
    assert tuple(d) == ("refuse", ("sane",), ())
    assert mod.explain("zoo", d, **mod.read_case(insane)) == ["sane: not sane (min(n, t) >= 0 is false)"]
    fine = {**ZOO_CASE, "summary_covers": [4, 4], "floor_unit": "turns", "recovery_floor_span": 0,
            "prior_truncations": [], "prior_coverage": [], "spills": []}
    assert tuple(mod.check_case(fine, "zoo")) == ("refuse", ("holes_other",), ((2, 6),))
    assert mod.check_case(fine, "zoofirst").allowed
    nested = {**fine, "prior_truncations": [[0, 3], [1, 4]], "prior_coverage": [[0, 5]]}
    d = mod.check_case(nested, "zoo")
    assert tuple(d) == ("refuse", ("spill_in_nothing", "nested", "holes_other", "nested_all"), ((2, 6),))
    assert mod.explain("zoo", d, **mod.read_case(nested)) == [
        "spill_in_nothing: spills nothing and coverage [0, 5), holes [2, 6)", "nested: nested: an interval",
        "holes_other: tail holes [2, 6)", "nested_all: nested_all [0, 3)"]
    assert tuple(mod.check_case({**fine, "tail_start": 1}, "zoo")) == ("refuse", ("some_early", "holes_other"),
                                                                         ((1, 6),))


@pytest.mark.parametrize(("holds", "message"), [
    ("union(TR) subset union(SP)", "no rule of the fast checker renders Subset 'union(TR) subset union(SP)'"),
    ("empty(union(SP) \\\\ union(PC))", "no rule of the fast checker renders the set 'union(SP) \\\\ union(PC)'"),
    ("all(r in TR: empty(r & union(PC)))", "no rule of the fast checker renders the set 'r & union(PC)'"),
    ("union(SP) subset I \\\\ TRU", "no rule of the fast checker renders Subset 'union(SP) subset I \\\\ TRU'"),
    ("C subset union(SP) \\\\ TRU", "no rule of the fast checker renders the set 'union(SP) \\\\ TRU'"),
])
def test_an_expression_no_rule_covers_is_refused_naming_it(tmp_path: Path, holds: str, message: str) -> None:
    extra = f'''
[[profile]]
id = "norule"
doc = "An expression the fast checker has no rule for."
report = "all"
wellformed = ""

[[profile.clause]]
id = "bad"
meaning = "No rule."
holds = "{holds}"
message = "bad"
'''
    with pytest.raises(NoRule) as err:
        render_python(_spec(tmp_path, extra))
    assert str(err.value) == message  # the expression as its repr


def test_a_gate_that_uses_a_definition_is_refused(tmp_path: Path) -> None:
    extra = '''
[[profile]]
id = "gated"
doc = "A gate over a definition."
report = "all"
wellformed = "g"

[[profile.clause]]
id = "g"
meaning = "Uses T."
holds = "empty(T)"
message = "g"
'''
    with pytest.raises(ValueError, match=r"^gated\.g: the well-formedness gate may use inputs only$"):
        render_python(_spec(tmp_path, extra))


def test_the_vector_search_primitives_run() -> None:
    from tailguard.backends.vector_search import Predicates
    from tailguard.speclang.parse import parse
    from tailguard.tooling.project import spec_path

    p = Predicates(load_spec(spec_path()))
    case = {"history_end": 6, "tail_start": 2, "summary_input": [1, 5], "summary_covers": [2, 3],
            "recovery_floor_span": 2, "floor_unit": "turns", "truncator_unit": "turns",
            "prior_truncations": [[3, 4]], "prior_coverage": [], "spills": [[0, 1], [4, 6]]}
    assert p.holds(parse("C subset I \\ TRU"), case)
    assert not p.holds(parse("[0, n) subset covered"), case)
    assert p.holds(parse("all(r in TR: r.lo < t) or known(floor_unit)"), case)


def test_a_placeholder_written_with_spaces_renders(tmp_path: Path) -> None:
    """``{ t }`` is accepted by the loader as ``{t}``; the rendered explain once raised KeyError."""
    extra = '''
[[profile]]
id = "spaced"
doc = "A message whose placeholders are written with spaces."
report = "all"
wellformed = ""

[[profile.clause]]
id = "spaced_seam"
meaning = "The seam, with spaced placeholders."
holds = "t == 0 or d >= t"
message = "coverage ends at { d } but the tail starts at {t }"
'''
    spec = _spec(tmp_path, extra)
    mod = _module(render_python(spec))
    case = {"history_end": 10, "tail_start": 6, "summary_input": [0, 10], "summary_covers": [0, 4],
            "recovery_floor_span": 2, "floor_unit": "turns", "truncator_unit": "turns"}
    decision = mod.check("spaced", **case)
    assert decision.failed == ("spaced_seam",)
    assert mod.explain("spaced", decision, **case) == [
        "spaced_seam: coverage ends at 4 but the tail starts at 6"]
