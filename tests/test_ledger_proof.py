"""T19 holds on the ledger core that runs, and fails on each edit that changes what it proves.

T19 reads ``LedgerCore._contract`` and the event methods back from
``src/tailguard/runtime/ledger_core.py`` (:mod:`proofs.ledger_decision`,
:mod:`proofs.ledger_state`). Each test here edits the text the reader reads, as the T18 tests
edit the generated checker: an edit that changes a decision, or breaks the state's invariant,
must give a counterexample of the part that covers it; code outside the reader's form must be
rejected as "not in the form T19 reads", never crash or pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("z3")

from proofs import ledger_decision, ledger_state
from proofs._common import setup
from tailguard.backends.z3_eval import solver_settings
from tailguard.speclang.load import load_spec
from tailguard.tooling.theorems import REGISTRY, Result

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ledger_decision.contract_source()
METHODS = ledger_state.method_sources()

Parts = Iterator[tuple[str, Callable[[], Result]]]


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _first_failure(parts: Parts, only: str = "") -> tuple[str, Result] | None:
    """The first part (whose name contains ``only``) that is not proved; isolated, as T19 runs."""
    with solver_settings(isolate=True):
        for name, part in parts:
            if only in name:
                r = part()
                if r.status != "proved":
                    return name, r
    return None


def test_t19_is_registered_and_holds_on_the_code_that_runs() -> None:
    from tailguard.cli.prove import load_theorems

    load_theorems()
    assert "T19" in REGISTRY
    result = ledger_decision.ledger_decision_is_the_checkers()
    assert result.status == "proved", result
    count = int(result.detail.split()[0])
    assert count == 85, result.detail  # every part ran: 42 of the events, 43 of the decision


# -- the decision: edits of _contract -------------------------------------------------------------

#: (what, old text, new text, the part that must fail): each changes a decision on some state,
#: and the part gives a counterexample
CONTRACT_BREAKS: list[tuple[str, str, str, str]] = [
    ("gate: t may not be n", "0 <= t <= n  # and so n >= 0", "0 <= t < n  # and so n >= 0", "well_formed gate"),
    ("gate: a spill may not end at n", "and self._max_hi <= n", "and self._max_hi < n", "well_formed gate"),
    ("units_agree negated", "if self.floor_unit != self.truncator_unit:", "if self.floor_unit == self.truncator_unit:",
     "strict: units_agree"),
    ("floor_in_input one short", "not (a <= phi and n <= b)", "not (a <= phi and n < b)", "strict: floor_in_input"),
    ("floor_in_tail off by one", "if not t <= phi:", "if not t < phi:", "partitioned: floor_in_tail"),
    ("seam_contiguous off by one", "if t != 0 and d < t:", "if t != 0 and d <= t:", "partitioned: seam_contiguous"),
    ("summary_honest: C may end at I's end only inside", "a <= c and d <= b and not", "a <= c and d < b and not",
     "strict: summary_honest"),
    ("holes: R instead of lost", "holes = tuple(union(list(lost), gaps))", "holes = tuple(union(list(rec), gaps))",
     "the holes"),
    ("clauses out of the spec's order",
     "    if tru and t < n and tru.max_hi > t:\n        failed.append(TAIL_INTACT)\n"
     "    if t != 0 and d < t:\n        failed.append(SEAM_CONTIGUOUS)\n",
     "    if t != 0 and d < t:\n        failed.append(SEAM_CONTIGUOUS)\n"
     "    if tru and t < n and tru.max_hi > t:\n        failed.append(TAIL_INTACT)\n",
     "clauses appended in the spec's order"),
]

#: Edits whose counterexample needs a model of the unions' quantified facts (which offsets are
#: lost, R's first run, ...): z3 finds none in budget, so the part is unknown, which fails
#: ``prove`` as surely as a counterexample (unknown is never a pass), only without a case to
#: print. Run under a small budget to keep the tests quick.
UNKNOWN_AT_WORST_BREAKS: list[tuple[str, str, str, str]] = [
    ("tail_intact off by one", "tru.max_hi > t:", "tru.max_hi >= t:", "strict: tail_intact"),
    ("summary_honest: a wrong intersects range", "tru.intersects(c, d)", "tru.intersects(c + 1, d)",
     "strict: summary_honest"),
    ("no_hole: the lost offsets ignored", "    if lost:\n        hole = True",
     "    if lost and x_lo > 0:\n        hole = True", "no_hole appended exactly when it fails, lost not empty"),
    ("no_hole, X empty: the prefix one short",
     "hole = t > 0 and not (rec and rec.min_lo == 0 and rec.first_hi >= t)",
     "hole = t > 0 and not (rec and rec.min_lo == 0 and rec.first_hi > t)", "nothing lost, X empty"),
    ("no_hole, t in X: the prefix one short",
     "hole = x_lo > 0 and not (rec and rec.min_lo == 0 and rec.first_hi >= x_lo)",
     "hole = x_lo > 0 and not (rec and rec.min_lo == 0 and rec.first_hi > x_lo)", "nothing lost, t in X, X later"),
    ("no_hole, t outside X: the summary's input counted",
     "hole = not all(rec.covers(lo, hi) for lo, hi in self.uncovered_outside(t, x_lo, x_hi))",
     "hole = not all(rec.covers(lo, hi) for lo, hi in self.uncovered_outside(t, a, x_hi))",
     "nothing lost, t outside X"),
]


@pytest.mark.parametrize(("what", "old", "new", "part"), CONTRACT_BREAKS, ids=[b[0] for b in CONTRACT_BREAKS])
def test_an_edit_of_contract_that_changes_a_decision_fails_t19(what: str, old: str, new: str, part: str) -> None:
    """Only the parts named ``part``, in a process of their own (as prove runs T19), so that the
    answer does not depend on the tests run before."""
    result = ledger_decision._in_a_fresh_process(source=_edit(CONTRACT, old, new), only=part)
    assert result.status == "counterexample" and part in result.detail, (what, result)


@pytest.mark.parametrize(("what", "old", "new", "part"), UNKNOWN_AT_WORST_BREAKS,
                         ids=[b[0] for b in UNKNOWN_AT_WORST_BREAKS])
def test_an_edit_of_how_contract_reads_the_unions_fails_t19_as_unknown_at_worst(
        what: str, old: str, new: str, part: str) -> None:
    spec = setup(load_spec(ROOT / "spec" / "clauses.toml"))
    with solver_settings(rlimit=1_000_000):
        failed = _first_failure(ledger_decision._parts(spec, _edit(CONTRACT, old, new)), part)
    assert failed is not None, what
    assert failed[1].status in ("counterexample", "unknown"), (what, failed)


def test_t19_as_a_whole_fails_on_an_edited_contract() -> None:
    """The theorem itself, not only a part (in a process of its own, as prove runs it): a
    swapped R and lost in the fast path's pick, the floor one short."""
    edited = _edit(CONTRACT, "rec, lost = self.recovered, self.lost", "rec, lost = self.recovered, self.truncated")
    result = ledger_decision.ledger_decision_is_the_checkers(source=edited)
    assert result.status == "counterexample" and "not in the form T19 reads" in result.detail, result
    edited = _edit(CONTRACT, "not (a <= phi and n <= b)", "not (a <= phi and n < b)")
    result = ledger_decision.ledger_decision_is_the_checkers(source=edited)
    assert result.status == "counterexample" and "floor_in_input" in result.detail, result


@pytest.mark.parametrize(("what", "old", "new"), [
    ("a loop", "    failed: list[str] = []\n",
     "    failed: list[str] = []\n    for _ in range(n):\n        pass\n"),
    ("a call the reader does not know", "tru.intersects(c, d)", "tru.overlaps(c, d)"),
    ("not Python", "    failed: list[str] = []\n", "    failed: list[str] = [\n"),
])
def test_contract_outside_the_form_is_rejected_not_a_crash(what: str, old: str, new: str) -> None:
    result = ledger_decision.ledger_decision_is_the_checkers(source=_edit(CONTRACT, old, new))
    assert result.status == "counterexample", (what, result)
    assert "not in the form T19 reads" in result.detail, (what, result)


# -- the state: edits of the event methods --------------------------------------------------------

#: (what, method, old text, new text, the part that must fail)
EVENT_BREAKS: list[tuple[str, str, str, str, str]] = [
    ("truncate: lost grows by what R holds", "truncate", "self.recovered.gaps(lo, hi)",
     "self.recovered.pieces(lo, hi)", "truncate: keeps"),
    ("truncate: TRU one too long", "truncate", "            self.truncated.add(lo, hi)",
     "            self.truncated.add(lo, hi + 1)", "truncate: truncated"),
    ("truncate: the upper bound not taken in", "truncate", "if lo > hi or lo < self._min_lo or hi > self._max_hi:",
     "if lo > hi or lo < self._min_lo:", "truncate: _max_hi"),
    ("_bounds: an empty range read as reversed", "_bounds", "if lo > hi and not self.reversed:",
     "if lo >= hi and not self.reversed:", "spill: reversed"),
    ("spill: R one short", "spill", "self.recovered.add(lo, hi)", "self.recovered.add(lo + 1, hi)", "spill: keeps"),
    ("spill: lost kept", "spill", "self.lost.remove(lo, hi)", "self.lost.remove(lo, hi - 1)", "spill: keeps"),
    ("compact: the honest part not added to R", "compact", "self.recovered.add(lo, hi)  # lost",
     "self.unverified.add(lo, hi)  # lost", "compact: keeps"),
    ("honest_part: C ∩ I one too long", "honest_part", "hi = min(summary_input[1], summary_covers[1])",
     "hi = max(summary_input[1], summary_covers[1])", "compact: the new summary's coverage"),
    ("honest_part: the truncations not taken out", "honest_part", "return self.truncated.gaps(lo, hi)",
     "return [(lo, hi)]", "compact: the new summary's coverage"),
    ("_depart: the spilled offsets leave R", "_depart", "spilled.gaps(g_lo, g_hi)", "spilled.pieces(g_lo, g_hi)",
     "compact: keeps"),
    ("_depart: untruncated offsets become lost", "_depart", "truncated.pieces(p_lo, p_hi)",
     "truncated.gaps(p_lo, p_hi)", "evict: keeps"),
    ("_rebuild: lost from the spills alone", "_rebuild", "_difference(self.truncated, self.recovered)",
     "_difference(self.truncated, self.spilled)", "adopt: keeps"),
    ("adopt: the history one too long", "adopt", "self.n += hi", "self.n += hi + 1", "adopt: n"),
]


@pytest.mark.parametrize(("what", "method", "old", "new", "part"), EVENT_BREAKS, ids=[b[0] for b in EVENT_BREAKS])
def test_an_edit_of_an_event_method_that_breaks_the_state_fails_t19(
        what: str, method: str, old: str, new: str, part: str) -> None:
    assert _first_failure(ledger_state.event_parts(METHODS), part) is None, "holds before the edit"
    edited = {**METHODS, method: _edit(METHODS[method], old, new)}
    failed = _first_failure(ledger_state.event_parts(edited), part)
    assert failed is not None, what
    assert failed[1].status == "counterexample", (what, failed)
    # and so does the theorem
    result = ledger_decision.ledger_decision_is_the_checkers(events=edited)
    assert result.status == "counterexample", (what, result)


@pytest.mark.parametrize(("what", "method", "old", "new"), [
    ("a constant range added once per pair", "truncate", "self.lost.add(g_lo, g_hi)", "self.lost.add(lo, hi)"),
    ("a loop that changes what it tests", "_depart", "self.recovered.remove(p_lo, p_hi)",
     "self.spilled.remove(p_lo, p_hi)"),
    ("an inner loop over the outer loop's pair", "_depart", "spilled.gaps(g_lo, g_hi)", "spilled.gaps(lo, hi)"),
    ("a number carried across a loop's pairs", "truncate", "                self.lost.add(g_lo, g_hi)",
     "                self.lost.add(g_lo, g_hi)\n                lo = hi"),
    ("a statement the reader does not know", "spill", "        self.spilled.add(lo, hi)\n",
     "        self.spilled.add(lo, hi)\n        del lo\n"),
    ("not Python", "evict", "s = self.summaries.evict(summary)", "s = = self.summaries.evict(summary)"),
])
def test_an_event_method_outside_the_form_is_rejected_not_a_crash(what: str, method: str, old: str, new: str) -> None:
    edited = {**METHODS, method: _edit(METHODS[method], old, new)}
    result = ledger_decision.ledger_decision_is_the_checkers(events=edited)
    assert result.status == "counterexample", (what, result)
    assert "not in the form T19 reads" in result.detail, (what, result)


def test_the_event_parts_are_not_vacuous(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each event part checks that its assumptions are satisfiable (prove's sanity check): with a
    contradictory fact added, every part is a counterexample ("vacuous"), never proved."""
    import z3

    class Contradiction(ledger_state.Events):
        def call(self, name: str, args: list[object], st: ledger_state.St) -> object:  # type: ignore[override]
            st.ctx.facts.append(z3.BoolVal(False))
            return super().call(name, args, st)

    monkeypatch.setattr(ledger_state, "Events", Contradiction)
    failed = _first_failure(ledger_state.event_parts(METHODS))
    assert failed is not None and "vacuous" in failed[1].detail, failed


def test_a_fresh_core_starts_in_the_invariant() -> None:
    """The state T19's event parts start from: a new core's unions are empty, its bounds (0, 0,
    not reversed) are those of no recorded pair (``__init__`` is not read back: this pins it)."""
    from tailguard.runtime.ledger_core import LedgerCore

    core = LedgerCore(3, "turns", "turns")
    for union in (core.truncated, core.spilled, core.recovered, core.lost, core.summaries.coverage()):
        assert list(union) == []
    assert (core.n, core._min_lo, core._max_hi, core.reversed) == (0, 0, 0, False)


def test_t19_runs_in_a_process_of_its_own_under_this_runs_budget() -> None:
    """``prove`` runs T19 in a fresh process (so no earlier theorem changes z3's answer): that
    process gets the run's settings, and an exhausted budget there is unknown, a failure."""
    from tests.cli_helpers import run_cli

    code, out, _ = run_cli("prove", "--only", "T19", "--rlimit", "1", "--format", "json")
    t = json.loads(out)["theorems"][0]
    assert code == 1 and t["status"] == "unknown" and "rlimit 1" in t["detail"], t
