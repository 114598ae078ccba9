"""The constraint language: parser, pretty-printer round trip, and spec errors naming where."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailguard.speclang.load import SpecError, load_spec
from tailguard.speclang.parse import SpecSyntaxError, parse
from tailguard.speclang.pretty import pretty

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec" / "clauses.toml"


def test_brief_clause_ids_verbatim() -> None:
    spec = load_spec(SPEC)
    assert [c.id for c in spec.profile("seed").clauses] == ["units_agree", "floor_reach", "truncation_clear"]
    assert [c.id for c in spec.profile("strict").clauses] == [
        "well_formed", "units_agree", "floor_in_input", "floor_in_tail", "tail_intact",
        "seam_contiguous", "summary_honest", "no_hole"]


def test_pretty_round_trips_every_expression() -> None:
    spec = load_spec(SPEC)
    nodes = [d.node for d in spec.defines] + [c.holds for p in spec.profiles for c in p.clauses]
    for node in nodes:
        assert parse(pretty(node)) == parse(pretty(parse(pretty(node))))
        assert pretty(parse(pretty(node))) == pretty(node)


def test_precedence() -> None:
    assert pretty(parse("C subset I \\ TRU")) == "C subset I \\ TRU"
    assert pretty(parse("A | B & C")) == "A | B & C"
    assert pretty(parse("(A | B) & C")) == "(A | B) & C"
    assert pretty(parse("a - (b - c)")) == "a - (b - c)"


@pytest.mark.parametrize("bad", ["a <=", "all(r in TR r.lo)", "[1, 2]", "x.mid", "a $ b"])
def test_syntax_errors_name_the_column(bad: str) -> None:
    with pytest.raises(SpecSyntaxError) as info:
        parse(bad)
    assert "column" in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('holds = "Phi subset I"', 'holds = "Phi subset J"', "unknown name 'J'"),
        ('holds = "Phi subset I"', 'holds = "n subset I"', "subset operand must be interval or set, not int"),
        ('holds = "t == 0 or d >= t"', 'holds = "t == 0 or d >= "', "expected a name"),
        ('holds = "Phi subset T"', 'holds = "n + 1"', "expected bool, got int"),
    ],
)
def test_spec_errors_name_file_line_and_clause(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = SPEC.read_text()
    assert old in text
    bad = tmp_path / "clauses.toml"
    bad.write_text(text.replace(old, new))
    with pytest.raises(SpecError) as info:
        load_spec(bad)
    msg = str(info.value)
    assert message in msg
    line = next(i for i, ln in enumerate(bad.read_text().splitlines(), 1) if new in ln)
    assert f"clauses.toml:{line}: clause strict." in msg


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        ('prior_coverage = "SEEN | KEPT"', 'prior_coverage = "SEEN | covered"', "lineage.prior_coverage",
         "unknown name 'covered'"),
        ('prior_coverage = "SEEN | KEPT"', 'prior_coverage = "SEEN | KEPT | n"', "lineage.prior_coverage",
         "unknown name 'n'"),
        ('effective_coverage = "((C & I) \\\\ TRU) | SEEN"', 'effective_coverage = "[C.lo, C.hi) | SEEN"',
         "lineage.effective_coverage", "C.lo/.hi needs an interval"),
        ('prior_coverage = "SEEN | KEPT"', 'prior_coverage = "SEEN subset KEPT"', "lineage.prior_coverage",
         "expected interval or set, got bool"),
        ('saw_default = "context"', 'saw_default = "all"', "lineage.saw_default", "must be one of ('context',)"),
        ('keeps_default = "none"', 'keeps_default = "all"', "lineage.keeps_default", "must be one of ('none',)"),
    ],
)
def test_lineage_errors_name_file_line_and_key(tmp_path: Path, old: str, new: str, where: str, message: str) -> None:
    """The [lineage] table: set expressions over C, I, TRU, SEEN and KEPT only, the 1.1 defaults."""
    text = SPEC.read_text()
    assert text.count(old) == 1, old
    bad = tmp_path / "clauses.toml"
    bad.write_text(text.replace(old, new))
    with pytest.raises(SpecError) as info:
        load_spec(bad)
    msg = str(info.value)
    assert message in msg and f": {where}: " in msg, msg
    line = next(i for i, ln in enumerate(bad.read_text().splitlines(), 1) if new in ln)
    assert msg.startswith(f"{bad}:{line}: "), msg
