"""The theorems hold on the spec, and each can fail: breaking the encoding on purpose
makes the right theorem fail (never pass, never unknown-as-pass)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tailguard.backends.z3_encode import ZCase
from tailguard.speclang.load import Spec, load_spec
from tailguard.tooling.theorems import REGISTRY, Result
from tests.cli_helpers import run_cli

pytest.importorskip("z3")

import z3

from proofs import lineage, profile_partitioned, profile_seed, profile_strict, profiles_compared, spec_pins

ROOT = Path(__file__).resolve().parents[1]
SPEC_TEXT = (ROOT / "spec" / "clauses.toml").read_text()


def mutated(tmp_path: Path, old: str, new: str) -> Spec:
    assert SPEC_TEXT.count(old) == 1, old
    p = tmp_path / "clauses.toml"
    p.write_text(SPEC_TEXT.replace(old, new))
    return load_spec(p)


def test_prove_cli_all_hold() -> None:
    code, out, err = run_cli("prove", "--format", "json")
    assert code == 0, out + err
    data = json.loads(out)
    assert data["failed"] == 0
    ids = {t["id"] for t in data["theorems"]}
    assert {"T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T8w", "T9",
            "T10", "T11", "T12", "T13", "T14", "T14w", "T14k"} <= ids
    for t in data["theorems"]:
        assert t["status"] in ("proved", "witness"), t
        if t["kind"] == "witness":
            assert t["model"] is not None and t["replay"] is not None


def test_witness_cases_replay_through_cli(tmp_path: Path) -> None:
    """T3's printed witness, fed back to `tailguard check`, gets the claimed decisions."""
    case = profiles_compared.seed_allows_a_hole().model
    assert case is not None
    p = tmp_path / "w.json"
    p.write_text(json.dumps(case))
    assert run_cli("check", "--profile", "seed", str(p))[0] == 0
    code, out, _ = run_cli("check", "--format", "json", str(p))
    assert code == 1 and json.loads(out)["holes"]


BREAKS: list[tuple[str, str, str, Callable[[Spec], Result]]] = [
    # (what is broken, old text, new text, theorem that must fail)
    ("seam: >= becomes >", 'holds = "t == 0 or d >= t"', 'holds = "t == 0 or d > t"',
     profile_strict.endpoint_equals_per_offset),
    ("floor one unit short", 'expr = "[max(0, n - F), n)"', 'expr = "[max(0, n - F + 1), n)"',
     profile_strict.strict_allow_is_recoverable),
    ("floor one unit short (endpoints)", 'expr = "[max(0, n - F), n)"', 'expr = "[max(0, n - F + 1), n)"',
     profile_strict.endpoint_equals_per_offset),
    ("summary honesty ignores truncations", 'holds = "C subset I \\\\ TRU"', 'holds = "C subset I"',
     profile_strict.endpoint_equals_per_offset),
    ("tail may overlap truncations", 'holds = "all(r in TR: empty(r & T))"', 'holds = "n >= 0"',
     profile_strict.endpoint_equals_per_offset),
    ("summary honesty rewards truncations", 'holds = "C subset I \\\\ TRU"', 'holds = "C subset I | TRU"',
     profile_strict.monotone_in_truncations_and_spills),
    ("seed: > becomes >=", 'holds = "a <= t - F"', 'holds = "a < t - F"', profile_seed.prose_boundary_is_code),
    ("no_hole forgets spills", 'expr = "union(PC) | union(SP) |', 'expr = "union(PC) |',
     profiles_compared.spill_repairs_only_holes),
    ("units compared loosely", 'holds = "floor_unit == truncator_unit"\nmessage = "recovery floor unit {floor_unit} '
     'cannot be honored by truncator unit {truncator_unit}; the floor',
     'holds = "known(floor_unit)"\nmessage = "recovery floor unit {floor_unit} cannot be honored by truncator unit '
     '{truncator_unit}; the floor', profiles_compared.unit_mismatch_refuses),
]


@pytest.mark.parametrize(("what", "old", "new", "thm"), BREAKS, ids=[b[0] for b in BREAKS])
def test_breaking_the_encoding_fails_the_right_theorem(
    tmp_path: Path, what: str, old: str, new: str, thm: Callable[[Spec], Result]
) -> None:
    if old.startswith('expr = "union(PC) |'):
        old, new = 'expr = "union(PC) | union(SP) | ', 'expr = "union(PC) | '
    spec = mutated(tmp_path, old, new)
    result = thm(spec)
    assert result.status == "counterexample", (what, result)


PIN_BREAKS: list[tuple[str, str, str, Callable[[Spec], Result], str]] = [
    # parts of the spec that only T15 to T17 pin (issue 16): (what, old, new, theorem, status)
    ("seed truncation bound loosened", 'holds = "all(r in TR: not (r.hi > t - F and r.lo < t))"',
     'holds = "all(r in TR: not (r.hi >= t - F and r.lo < t))"', profile_seed.seed_profile_is_seed_code,
     "counterexample"),
    ("seed truncation ignores the tail start", 'holds = "all(r in TR: not (r.hi > t - F and r.lo < t))"',
     'holds = "all(r in TR: not (r.hi > t - F))"', profile_seed.seed_profile_is_seed_code, "counterexample"),
    ("seed reports every failure", 'report = "first"   # the seed raises', 'report = "all"   # the seed raises',
     profile_seed.seed_profile_is_seed_code, "counterexample"),
    ("a unit name dropped", 'units = ["turns", "messages", "tokens"]', 'units = ["turns", "tokens"]',
     spec_pins.known_units_are_the_briefs, "counterexample"),
    ("a unit name added", 'units = ["turns", "messages", "tokens"]', 'units = ["turns", "messages", "tokens", "chars"]',
     spec_pins.known_units_are_the_briefs, "counterexample"),
    ("the well_formed gate off", 'wellformed = "well_formed"   # if this clause fails',
     'wellformed = ""   # if this clause fails', spec_pins.ill_formed_refused_by_gate, "no-witness"),
]


@pytest.mark.parametrize(("what", "old", "new", "thm", "status"), PIN_BREAKS, ids=[b[0] for b in PIN_BREAKS])
def test_breaking_a_pinned_part_fails_its_theorem(
    tmp_path: Path, what: str, old: str, new: str, thm: Callable[[Spec], Result], status: str
) -> None:
    result = thm(mutated(tmp_path, old, new))
    assert result.status == status, (what, result)


def test_witnesses_show_the_mechanism_spec_md_cites() -> None:
    """T3: a hole inside a prior truncation; T8w: after the spill the seed refuses by
    truncation_clear (it reads the truncation log, which a spill cannot change)."""
    t3 = profiles_compared.seed_allows_a_hole()
    assert t3.status == "witness" and t3.model is not None and t3.replay is not None
    holes = t3.replay["case"]["strict"]["holes"]
    assert any(max(lo, tlo) < min(hi, thi) for lo, hi in holes for tlo, thi in t3.model["prior_truncations"])
    t8w = profiles_compared.seed_refuses_after_spill()
    assert t8w.status == "witness" and t8w.replay is not None
    assert t8w.replay["after"]["seed"]["failed"] == ["truncation_clear"]


def test_a_broken_witness_search_is_not_a_pass(tmp_path: Path) -> None:
    """If strict also allowed the incident shape, T3 finds no witness: reported, not passed."""
    spec = mutated(tmp_path, 'holds = "[0, n) subset covered"', 'holds = "n >= 0"')
    result = profiles_compared.seed_allows_a_hole(spec)
    assert result.status == "no-witness"


def test_registry_ids_unique_and_documented() -> None:
    for t in REGISTRY.values():
        assert t.statement and t.title and t.kind in ("theorem", "witness")


# --- spec 1.1: profile partitioned (T10 to T13) and summary lineage (T14, T14w) ------------------

PARTITIONED = 'without = ["floor_in_input"]'

PARTITIONED_BREAKS: list[tuple[str, str, str, Callable[[Spec], Result], str]] = [
    # (what is broken, old text, new text, theorem that must fail, the part named in its detail)
    ("partitioned without no_hole", PARTITIONED, 'without = ["floor_in_input", "no_hole"]',
     profile_partitioned.partitioned_allow_is_recoverable, "bound 2"),
    ("partitioned keeps floor_in_input", PARTITIONED, "without = []",
     profile_partitioned.strict_is_partitioned_plus_floor_in_input, "partitioned ⇔ strict's clauses"),
    ("partitioned drops the seam", PARTITIONED, 'without = ["floor_in_input", "seam_contiguous"]',
     profile_partitioned.strict_is_partitioned_plus_floor_in_input, "partitioned ⇔ strict's clauses"),
    # set inclusion written as endpoints: an empty I' inside I can lie outside I's endpoints
    ("honesty by endpoints", 'holds = "C subset I \\\\ TRU"',
     'holds = "c >= a and d <= b and all(r in TR: empty(r & C))"',
     profile_partitioned.monotone_in_input_truncations_and_coverage, "strict/shrinking I"),
    ("floor in input by endpoints", 'holds = "Phi subset I"', 'holds = "a <= max(0, n - F) and n <= b"',
     profile_partitioned.monotone_in_input_truncations_and_coverage, "strict/shrinking I"),
    ("honesty rewards truncations", 'holds = "C subset I \\\\ TRU"', 'holds = "C subset I | TRU"',
     profile_partitioned.monotone_in_input_truncations_and_coverage, "strict/adding a truncation"),
    ("prior coverage must miss the tail", 'holds = "all(r in TR: empty(r & T))"',
     'holds = "all(r in TR, PC: empty(r & T))"',
     profile_partitioned.monotone_in_input_truncations_and_coverage, "strict/dropping prior coverage"),
]


@pytest.mark.parametrize(("what", "old", "new", "thm", "part"), PARTITIONED_BREAKS,
                         ids=[b[0] for b in PARTITIONED_BREAKS])
def test_breaking_partitioned_fails_the_right_theorem(
    tmp_path: Path, what: str, old: str, new: str, thm: Callable[[Spec], Result], part: str
) -> None:
    spec = mutated(tmp_path, old, new)
    result = thm(spec)
    assert result.status == "counterexample", (what, result)
    assert part in result.detail, (what, result.detail)
    assert result.model is not None, "a broken spec gets a concrete case"


def test_t12_counterexample_is_a_real_pair_of_cases(tmp_path: Path) -> None:
    """The endpoint-form honesty clause: the printed cases really go from refuse to allow."""
    spec = mutated(tmp_path, 'holds = "C subset I \\\\ TRU"',
                   'holds = "c >= a and d <= b and all(r in TR: empty(r & C))"')
    result = profile_partitioned.monotone_in_input_truncations_and_coverage(spec)
    assert result.model is not None
    before, after = result.model["before"], result.model["after"]
    assert {k: v for k, v in before.items() if k != "summary_input"} == \
        {k: v for k, v in after.items() if k != "summary_input"}
    from tailguard.backends.z3_eval import z3_decide
    assert not z3_decide(spec, "strict", before).allowed and z3_decide(spec, "strict", after).allowed


def _shrink_any_input(zc: ZCase, prefix: str) -> tuple[ZCase, object]:
    changed, assumption = profile_partitioned.shrink_input(zc, prefix)
    return changed, assumption.arg(0)  # only I' ⊆ I: I itself may be ill-formed


def _drop_from_any_coverage(zc: ZCase, prefix: str) -> tuple[ZCase, object]:
    changed, assumption = profile_partitioned.drop_coverage(zc, prefix)
    return changed, z3.And(assumption.arg(0), assumption.arg(2))  # PC's own pairs may be ill-formed


@pytest.mark.parametrize("change", [_shrink_any_input, _drop_from_any_coverage], ids=["I", "PC"])
def test_t12_well_formedness_assumptions_are_needed(change: profile_partitioned.Change) -> None:
    """Without "I (PC) well-formed" a smaller I' (PC') does turn refuse into allow: an ill-formed
    original refuses with well_formed and the smaller one need not. The fallback prints the pair."""
    spec = load_spec(ROOT / "spec" / "clauses.toml")
    result = profile_partitioned._monotone(spec, spec.profile("partitioned"), change)
    assert result.status == "counterexample" and result.model is not None, result
    from tailguard.backends.z3_eval import z3_decide
    before, after = result.model["before"], result.model["after"]
    assert z3_decide(spec, "partitioned", before).failed == ("well_formed",)
    assert z3_decide(spec, "partitioned", after).allowed


def test_keeping_floor_in_input_leaves_no_langchain_witness(tmp_path: Path) -> None:
    spec = mutated(tmp_path, PARTITIONED, "without = []")
    assert profile_partitioned.langchain_shape_partitioned_only(spec).status == "no-witness"


def test_partitioned_theorems_are_not_vacuous(tmp_path: Path) -> None:
    """A well_formed gate nothing passes: T10's assumptions are unsatisfiable, reported, not passed."""
    spec = mutated(tmp_path, 'holds = "n >= 0 and F >= 0', 'holds = "n < 0 and n >= 0 and F >= 0')
    result = profile_partitioned.partitioned_allow_is_recoverable(spec)
    assert result.status == "counterexample" and "vacuous" in result.detail, result


def test_t13_witness_replays_through_cli(tmp_path: Path) -> None:
    case = profile_partitioned.langchain_shape_partitioned_only().model
    assert case is not None
    p = tmp_path / "w.json"
    p.write_text(json.dumps(case))
    assert run_cli("check", "--profile", "partitioned", str(p))[0] == 0
    code, out, _ = run_cli("check", "--profile", "strict", "--format", "json", str(p))
    assert code == 1 and json.loads(out)["failed"] == ["floor_in_input"]


def test_witnesses_replay_every_profile() -> None:
    result = profile_partitioned.langchain_shape_partitioned_only()
    assert result.replay is not None and set(result.replay["case"]) == {"seed", "strict", "partitioned"}


# Lineage rules broken on purpose. Each is the brief's rule with one thing changed.

def _keeps_unseen(s: lineage.Step) -> lineage.Effect:
    """Summaries neither seen nor kept stay in the context and count (1.0's bug)."""
    unseen: lineage.IdPred = lambda j: z3.And(s.in_context(j), z3.Not(s.saw(j)))  # noqa: E731
    right = lineage.lineage_rule(s)
    return lineage.Effect(s.union_of(lambda j: z3.Or(s.saw(j), s.keeps(j), unseen(j))), right.coverage,
                          lambda j: z3.Or(s.keeps(j), unseen(j)))


def _every_earlier_summary(s: lineage.Step) -> lineage.Effect:
    """1.0's rule itself: every earlier honest part counts, seen or not, in the context or not."""
    return lineage.Effect(s.union_of(lambda j: z3.BoolVal(True)),
                          lambda x: z3.And(s.honest_raw(x), z3.Not(s.truncated(x))), s.keeps)


def _without_truncations(s: lineage.Step) -> lineage.Effect:
    """E(S_k) without the \\ TRU_k."""
    right = lineage.lineage_rule(s)
    return lineage.Effect(right.prior_coverage, lambda x: z3.Or(s.honest_raw(x), s.union_of(s.saw)(x)),
                          right.stays)


def _forgets_saw(s: lineage.Step) -> lineage.Effect:
    """E(S_k) without the coverage of the summaries it saw."""
    right = lineage.lineage_rule(s)
    return lineage.Effect(right.prior_coverage, lambda x: z3.And(s.honest_raw(x), z3.Not(s.truncated(x))),
                          right.stays)


def _forgets_saw_late(s: lineage.Step) -> lineage.Effect:
    """Right for the first compactions, forgets saw's coverage from the fourth on: past the
    counterexample search, so only the induction can notice."""
    right, wrong = lineage.lineage_rule(s), _forgets_saw(s)
    return lineage.Effect(right.prior_coverage, lambda x: z3.If(s.k >= lineage.BMC_COMPACTIONS,
                                                                wrong.coverage(x), right.coverage(x)), right.stays)


@pytest.mark.parametrize("rule", [_without_truncations, _forgets_saw], ids=["without TRU_k", "forgets saw"])
def test_a_wrong_lineage_rule_breaks_the_equality(rule: lineage.LineageRule) -> None:
    result = lineage.defaults_give_v1_coverage(rule=rule)
    assert result.status == "counterexample", result
    assert result.model is not None
    events, k = result.model["events"], result.model["compaction"]
    assert result.model["lineage_prior_coverage"] != result.model["v1_prior_coverage"]
    # the printed 1.0 side is SPEC.md 9.3's prior coverage of that compaction of that log
    v1 = lineage._v1_prior_coverage(events)[k]
    assert lineage._offsets(result.model["v1_prior_coverage"]) == v1


def test_the_induction_is_live() -> None:
    """A rule wrong only past the bounded search: the induction step fails (unknown, never a pass),
    and the deeper search then finds the session."""
    assert lineage._induction(_forgets_saw_late).status == "unknown"
    assert lineage._bmc(_forgets_saw_late, lineage.BMC_COMPACTIONS).status == "proved"
    result = lineage.defaults_give_v1_coverage(rule=_forgets_saw_late)
    assert result.status == "counterexample" and result.model is not None
    assert result.model["compaction"] > lineage.BMC_COMPACTIONS


@pytest.mark.parametrize("rule", [_keeps_unseen, _every_earlier_summary], ids=["keeps unseen", "1.0's rule"])
def test_counting_unseen_summaries_has_no_witness(rule: lineage.LineageRule) -> None:
    """Counting what was not seen (1.0's bug) changes nothing under the defaults (saw is every
    summary), so the equality still holds for the first: it is the witness that must fail."""
    assert lineage.unseen_summary_is_a_hole(rule=rule).status == "no-witness"
    if rule is _keeps_unseen:
        assert lineage.defaults_give_v1_coverage(rule=rule).status == "proved"


def test_t14w_event_log_and_cases() -> None:
    result = lineage.unseen_summary_is_a_hole()
    assert result.status == "witness", result
    assert result.model is not None and result.replay is not None
    events, cases = result.model["events"], result.model["cases"]
    compacts = [e for e in events if e["event"] == "compact"]
    assert len(compacts) == 3 and compacts[1]["saw"] == [] and compacts[1]["keeps"] == []
    assert "saw" not in compacts[2] and "keeps" not in compacts[2]  # the third sees the default: the context
    assert not any(e["event"] == "truncate" for e in events)
    for k in ("second", "third"):
        assert cases[f"{k}_1.0"]["prior_coverage"] != cases[f"{k}_lineage"]["prior_coverage"]
    assert not cases["second_lineage"]["prior_coverage"] and cases["third_lineage"]["prior_coverage"]
    for p in ("strict", "partitioned"):
        for k in ("first", "second_1.0", "third_1.0"):
            assert result.replay[k][p]["decision"] == "allow"
        for k in ("second_lineage", "third_lineage"):
            lin = result.replay[k][p]
            assert lin["decision"] == "refuse" and "no_hole" in lin["failed"] and lin["holes"]
    assert "through the audit" in result.detail and "all three compactions" in result.detail
    audit = lineage._audit(events, "strict")
    assert [list(h) for h in audit[2].holes] == result.replay["third_lineage"]["strict"]["holes"]


def _coverage_counts_the_context(s: lineage.Step) -> lineage.Effect:
    """E(S_k) counts every summary in the context, not the ones it saw (an explicit "saw": []
    read as "saw everything" for the new summary's coverage); its own prior coverage is right."""
    right = lineage.lineage_rule(s)
    return lineage.Effect(right.prior_coverage, lambda x: z3.Or(z3.And(s.honest_raw(x), z3.Not(s.truncated(x))),
                                                                s.union_of(s.in_context)(x)), right.stays)


def test_a_wrong_new_summary_coverage_has_no_t14w_witness() -> None:
    """Under the defaults saw is the context, so T14 cannot tell; T14w's third compaction can."""
    assert lineage.defaults_give_v1_coverage(rule=_coverage_counts_the_context).status == "proved"
    assert lineage.unseen_summary_is_a_hole(rule=_coverage_counts_the_context).status == "no-witness"


def test_t14w_fails_when_the_runtime_reads_an_empty_saw_as_every_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bug in the ledger that runs (SummaryContext.commit): the witness's log, replayed
    through the audit, is allowed at the third compaction, which the checker refuses."""
    from tailguard.runtime.lineage import SummaryContext

    original = SummaryContext.commit

    def commit(self: SummaryContext, sid: str, tag: object, honest: Any, saw: Any, keeps: Any) -> Any:
        return original(self, sid, tag, honest, saw or None, keeps)

    monkeypatch.setattr(SummaryContext, "commit", commit)
    result = lineage.unseen_summary_is_a_hole()
    assert result.status == "mismatch", result
    assert "audit strict of the log" in result.detail


# --- T18: the generated checker as written, read back and proved (issue 16, item 1) -------------

from proofs import runtime_algorithms  # noqa: E402
from tailguard.backends import checker_z3  # noqa: E402
from tailguard.backends.z3_eval import solver_settings  # noqa: E402

CHECKER_TEXT = runtime_algorithms.checker_path().read_text(encoding="utf-8")

#: bugs edited into the generated checker file: (what, old text, new text, which proof must fail)
CHECKER_BREAKS: list[tuple[str, str, str, str]] = [
    ("_gaps: a gap starts one early", "        if lo > cur:\n            out.append((cur, lo))",
     "        if lo >= cur:\n            out.append((cur, lo))", "_gaps"),
    ("_gaps: stops one late", "        if lo >= stop:\n            break",
     "        if lo > stop:\n            break", "_gaps"),
    ("_gaps: an empty last gap", "    if cur < stop:\n        out.append((cur, stop))",
     "    if cur <= stop:\n        out.append((cur, stop))", "_gaps"),
    ("_merge_run: adjacent runs not joined", "            elif lo <= run_hi:", "            elif lo < run_hi:",
     "_merge_run"),
    ("_merge_run: gives up on equal starts", "            elif lo < run_lo:", "            elif lo <= run_lo:",
     "_merge_run"),
    ("_merge_run: forgets the last run", "    if ordered and started:\n        out.append((run_lo, run_hi))",
     "    if ordered and started and run_lo > 0:\n        out.append((run_lo, run_hi))", "_merge_run"),
    ("within endpoint form: <= becomes <", "(v_I[0] <= v_Phi[0] and v_Phi[1] <= v_I[1])",
     "(v_I[0] < v_Phi[0] and v_Phi[1] <= v_I[1])", "decision"),
    ("seed: > becomes >=", "(v_r[1] > (v_t - v_F)) and (v_r[0] < v_t)", "(v_r[1] >= (v_t - v_F)) and (v_r[0] < v_t)",
     "decision"),
    ("tail_intact: _meets on the wrong range", "not _meets(v_T[0], v_T[1], v_TRU)",
     "not _meets(v_T[0] + 1, v_T[1], v_TRU)", "decision"),
    ("floor_in_tail: the floor one unit short", "(v_T[0] <= v_Phi[0] and v_Phi[1] <= v_T[1])",
     "(v_T[0] <= v_Phi[0] + 1 and v_Phi[1] <= v_T[1])", "decision"),
    ("no_hole: holes from 1", "h_no_hole = _gaps(0, v_n, v_covered)", "h_no_hole = _gaps(1, v_n, v_covered)",
     "decision"),
    ("covered forgets spills", "_merged_runs(u_PC + u_SP + ", "_merged_runs(u_PC + ", "decision"),
    ("covered takes the truncations for the spills", "u_PC + u_SP + ", "u_PC + v_TRU + ", "decision"),
    ("_ALLOW is a refusal", '_ALLOW = Decision("allow", (), ())', '_ALLOW = Decision("refuse", (), ())', "decision"),
    ("_ALLOW reassigned", '_ALLOW = Decision("allow", (), ())  #',
     '_ALLOW = Decision("allow", (), ())\n_ALLOW = Decision("refuse", (), ())  #', "decision"),
    ("allow whatever failed", 'return _new(Decision, ("refuse", tuple(failed), holes)) if failed else _ALLOW',
     "return _ALLOW", "decision"),
    ("refuse without the failed clauses", 'return _new(Decision, ("refuse", tuple(failed), holes)) if failed',
     'return _new(Decision, ("refuse", (), holes)) if failed', "decision"),
    ("_new is not tuple.__new__", "_new = tuple.__new__", "_new = lambda cls, t: _ALLOW", "decision"),
    ("_bounded lets a float through", "            if type(lo) is int and type(hi) is int and low <= lo <= hi <= high:",
     "            if type(lo) is int and low <= lo <= hi <= high:", "decision"),
    ("_bounded lets a list through", "        if type(item) is tuple and len(item) == 2:",
     "        if len(item) == 2:", "decision"),
    ("_bounded: the end not bounded", "and low <= lo <= hi <= high:\n", "and low <= lo <= hi:\n", "decision"),
    ("T \\ TRU scanned from the wrong start", "_gaps_from(v_T[0], v_T[1], v_TRU)",
     "_gaps_from(v_T[0] + 1, v_T[1], v_TRU)", "decision"),
    ("the gate skips a non-empty list", "(u_SP is not None)", "(u_SP is not None or v_SP)", "decision"),
    ("the gate skips the spills", "(u_SP is not None)", "(u_PC is not None)", "decision"),
    ("the gate forgets the truncations", "(v_TRU is not None) and ", "", "decision"),
    ("the fused bound one past n", "u_SP = _merged_bounded(v_SP, 0, v_n)", "u_SP = _merged_bounded(v_SP, 0, v_n + 1)",
     "decision"),
    ("the fused pass on the wrong list", "u_SP = _merged_bounded(v_SP, 0, v_n)", "u_SP = _merged_bounded(v_PC, 0, v_n)",
     "decision"),
    ("_merged_bounded: the sort without the bound", "    if out is None and _bounded(items, low, high):",
     "    if out is None:", "decision"),
    ("a plain merge in place of the fused pass", "u_SP = _merged_bounded(v_SP, 0, v_n)", "u_SP = _merged(v_SP)",
     "decision"),
    ("_merge_run_bounded: the end not bounded", "                if lo < low or hi < lo or hi > high:",
     "                if lo < low or hi < lo:", "_merge_run_bounded"),
    ("_merge_run_bounded: an inverted pair let through", "                if lo < low or hi < lo or hi > high:",
     "                if lo < low or hi > high:", "_merge_run_bounded"),
    ("_merge_run_bounded: adjacent runs not joined", "                    elif lo <= run_hi:",
     "                    elif lo < run_hi:", "_merge_run_bounded"),
    # a give-up is no wrong decision (the sort follows), only a silent slowdown: T18 proves there is none
    ("_merge_run_bounded: gives up on a pair ending at high", "                if lo < low or hi < lo or hi > high:",
     "                if lo < low or hi < lo or hi >= high:", "_merge_run_bounded"),
    ("_merge_run_bounded: gives up on equal starts", "                    elif lo < run_lo:",
     "                    elif lo <= run_lo:", "_merge_run_bounded"),
    ("_merge_run_bounded: a bad item skipped", "                continue\n        ordered = False\n        break\n",
     "                continue\n        break\n", "_merge_run_bounded"),
    ("_meets: last pair missed", "    j = _bisect_left(items, (stop,)) - 1\n",
     "    j = _bisect_left(items, (stop,)) - 2\n", "decision"),
    ("clauses reordered", "    if not ((v_t == 0) or (v_d >= v_t)):  # seam_contiguous",
     "    if not ((v_t == 0) or (v_d >= v_t)) and True:  # seam_contiguous", "decision"),
]


#: bugs edited into ``_gaps_from``: its own proof (from bisect's contract) must fail, not only
#: the comparison of its text with the renderer's
GAPS_FROM_BREAKS = [
    ("the pair that may hold start is skipped", "    j = _bisect_left(items, (start,)) - 1\n    return _gaps(",
     "    j = _bisect_left(items, (start,)) - 0\n    return _gaps("),
    ("one pair too many skipped", "items[j:] if j > 0 else items", "items[j + 1:] if j > 0 else items"),
    ("a slice from the end", "items[j:] if j > 0 else items", "items[j:] if j > -2 else items"),
]


@pytest.mark.parametrize(("what", "old", "new"), GAPS_FROM_BREAKS, ids=[b[0] for b in GAPS_FROM_BREAKS])
def test_a_bug_in_gaps_from_fails_its_proof(what: str, old: str, new: str) -> None:
    assert checker_z3.gaps_from_part(CHECKER_TEXT)[1].status == "proved"
    name, result = checker_z3.gaps_from_part(_edited(old, new))
    assert result.status == "counterexample", (what, name, result)
    wrappers = checker_z3.wrappers_part(_edited(old, new))[1]
    assert wrappers.status == "counterexample"  # and its text is not the renderer's


def _edited(old: str, new: str, count: int | None = None) -> str:
    n = CHECKER_TEXT.count(old)
    assert n >= 1, old
    return CHECKER_TEXT.replace(old, new) if count is None else CHECKER_TEXT.replace(old, new, count)


@pytest.mark.parametrize(("what", "old", "new", "where"), CHECKER_BREAKS, ids=[b[0] for b in CHECKER_BREAKS])
def test_a_bug_in_the_generated_checker_fails_t18(what: str, old: str, new: str, where: str) -> None:
    source = _edited(old, new)
    spec = load_spec(ROOT / "spec" / "clauses.toml")
    if where == "decision":
        parts = checker_z3.decision_parts(spec, source)
    else:
        funcs = runtime_algorithms.read_algorithms(source)
        parts = (runtime_algorithms.merge_run_parts(funcs[where]) if where == "_merge_run"
                 else runtime_algorithms.merge_run_bounded_parts(funcs[where]) if where == "_merge_run_bounded"
                 else runtime_algorithms.gaps_parts(funcs[where]))
    with solver_settings(rlimit=5_000_000):  # a broken invariant step can only run out of budget
        failed = next(((name, r) for name, r in parts if r.status != "proved"), None)
    assert failed is not None, what
    assert failed[1].status in ("counterexample", "unknown"), failed


def test_t18_fails_on_an_edited_file_as_a_whole() -> None:
    """The theorem itself, not only its parts: an edit outside the proved form is a counterexample."""
    source = _edited("    for lo, hi in items:\n        if lo >= stop:",
                     "    for lo, hi in reversed(items):\n        if lo >= stop:")
    result = runtime_algorithms.runtime_algorithms_are_the_spec(source=source)
    assert result.status == "counterexample" and "not in the proved form" in result.detail, result


@pytest.mark.parametrize(("what", "old", "new"), [
    ("a list item let through", "        if type_(item) is tuple_ and len_(item) == 2:\n            lo, hi = item\n",
     "        if len_(item) == 2:\n            lo, hi = item\n"),
    ("a float let through", "            if type_(lo) is int_ and type_(hi) is int_:\n                if lo < low",
     "            if type_(lo) is int_:\n                if lo < low"),
    ("the int test's local is float", "    type_, tuple_, int_, len_ = type, tuple, int, len",
     "    type_, tuple_, int_, len_ = type, tuple, float, len"),
    ("the int test's local rebound in the loop", "            lo, hi = item\n            if type_(lo)",
     "            lo, hi = item\n            int_ = float\n            if type_(lo)"),
    ("the bad item falls into the body", "                continue\n        ordered = False\n",
     "        ordered = False\n"),
])
def test_t18_fails_when_the_fused_pass_loses_a_type_test(what: str, old: str, new: str) -> None:
    """The type tests of the typed loop are read as text: without one the file is not in the form."""
    result = runtime_algorithms.runtime_algorithms_are_the_spec(source=_edited(old, new))
    assert result.status == "counterexample" and "not in the proved form" in result.detail, (what, result)


def test_t18_holds_on_the_committed_checker_and_reads_every_function() -> None:
    funcs = runtime_algorithms.read_algorithms(CHECKER_TEXT)
    from tailguard.backends import scan_ir
    assert funcs == scan_ir.BY_NAME  # the file holds exactly the proved form
    spec = load_spec(ROOT / "spec" / "clauses.toml")
    names = [name for name, _ in checker_z3.decision_parts(spec, CHECKER_TEXT)]
    for p in spec.profiles:
        assert any(n.startswith(f"_check_{p.id}: clause ") for n in names), p.id


def test_t18_step_assumptions_are_checked_for_vacuity() -> None:
    """An invariant nothing satisfies would make every step hold: the satisfiability part fails."""
    from tailguard.backends import scan_z3
    f = runtime_algorithms.read_algorithms(CHECKER_TEXT)["_gaps"]
    items = scan_z3.Arr.named("items")
    parts = runtime_algorithms._induction(
        f, {"start": z3.Int("start"), "stop": z3.Int("stop"), "items": items}, items, items.normal(),
        lambda i, s: z3.BoolVal(False), lambda s: z3.BoolVal(True), what="vacuous",
        example_items=z3.BoolVal(True))
    status = dict(parts)["vacuous: the assumptions of an iteration are satisfiable"].status
    assert status == "counterexample"


def test_js_checker_holds_the_proved_algorithms_text_for_text() -> None:
    """The JavaScript checker's algorithms are the renderings of the form T18 proves (read back
    from the Python file), and its decision functions are what the renderer prints."""
    from tailguard.backends import js_render, scan_ir
    js = (ROOT / "js" / "tailguard-checker.mjs").read_text(encoding="utf-8")
    for f in runtime_algorithms.read_algorithms(CHECKER_TEXT).values():
        assert scan_ir.render_js(f) in js, f.name
    assert js == js_render.render_js(load_spec(ROOT / "spec" / "clauses.toml"))


# --- the lineage rule is the spec's ([lineage] in spec/clauses.toml, issue 32 item 1) -------------

LINEAGE_E = 'effective_coverage = "((C & I) \\\\ TRU) | SEEN"'
LINEAGE_PC = 'prior_coverage = "SEEN | KEPT"'

#: the spec's lineage rule edited: (what, old, new, theorem, status it must get)
LINEAGE_BREAKS: list[tuple[str, str, str, Callable[..., Result], str]] = [
    ("E without \\ TRU", LINEAGE_E, 'effective_coverage = "(C & I) | SEEN"', lineage.defaults_give_v1_coverage,
     "counterexample"),
    ("E forgets what it saw", LINEAGE_E, 'effective_coverage = "(C & I) \\\\ TRU"', lineage.defaults_give_v1_coverage,
     "counterexample"),
    ("E forgets its honest part", LINEAGE_E, 'effective_coverage = "SEEN"', lineage.defaults_give_v1_coverage,
     "counterexample"),
    ("prior coverage without KEPT", LINEAGE_PC, 'prior_coverage = "SEEN"', lineage.kept_summary_counts, "no-witness"),
    ("prior coverage without SEEN", LINEAGE_PC, 'prior_coverage = "KEPT"', lineage.defaults_give_v1_coverage,
     "counterexample"),
    ("prior coverage counts the honest part", LINEAGE_PC, 'prior_coverage = "SEEN | KEPT | (C & I)"',
     lineage.defaults_give_v1_coverage, "counterexample"),
]


def test_the_lineage_rule_is_read_from_the_spec() -> None:
    spec = load_spec(ROOT / "spec" / "clauses.toml")
    assert spec.lineage is not None
    assert spec.lineage.effective_coverage_source == "((C & I) \\ TRU) | SEEN"
    assert spec.lineage.prior_coverage_source == "SEEN | KEPT"
    assert (spec.lineage.saw_default, spec.lineage.keeps_default) == ("context", "none")


@pytest.mark.parametrize(("what", "old", "new", "thm", "status"), LINEAGE_BREAKS, ids=[b[0] for b in LINEAGE_BREAKS])
def test_editing_the_specs_lineage_rule_fails_a_lineage_theorem(
    tmp_path: Path, what: str, old: str, new: str, thm: Callable[..., Result], status: str
) -> None:
    spec = mutated(tmp_path, old, new)
    assert thm(spec).status == status, what
    assert thm().status in ("proved", "witness")  # the committed spec's rule: the theorem holds


def test_t14k_event_log_and_cases() -> None:
    result = lineage.kept_summary_counts()
    assert result.status == "witness", result
    assert result.model is not None and result.replay is not None
    compacts = [e for e in result.model["events"] if e["event"] == "compact"]
    assert len(compacts) == 3 and compacts[1]["saw"] == [] and compacts[1]["keeps"] == [compacts[0]["summary"]]
    for p in ("strict", "partitioned"):
        assert all(result.replay[k][p]["decision"] == "allow" for k in ("first", "second", "third"))
        for k in ("second_keeps_ignored", "third_keeps_ignored"):
            got = result.replay[k][p]
            assert got["decision"] == "refuse" and "no_hole" in got["failed"] and got["holes"]
    assert "with and without its keeps" in result.detail


@pytest.mark.parametrize("where", ["replay", "core"])
def test_t14k_fails_when_the_runtime_drops_keeps(monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """The bug in the code that runs: the audit's replay (dispatch) or the ledger core (the
    context) ignores keeps; the witness's log then disagrees with the checker."""
    from tailguard.runtime.ledger_core import LedgerCore
    from tailguard.runtime.lineage import SummaryContext

    if where == "core":
        original = SummaryContext.commit

        def commit(self: SummaryContext, sid: str, tag: object, honest: Any, saw: Any, keeps: Any) -> Any:
            return original(self, sid, tag, honest, saw, ())

        monkeypatch.setattr(SummaryContext, "commit", commit)
    else:
        compact = LedgerCore.compact

        def core_compact(self: LedgerCore, i: Any, c: Any, tag: object = None, **kw: Any) -> str:
            kw["keeps"] = ()
            return compact(self, i, c, tag, **kw)

        monkeypatch.setattr(LedgerCore, "compact", core_compact)
    result = lineage.kept_summary_counts()
    assert result.status == "mismatch", result
    assert "audit strict of the log" in result.detail

