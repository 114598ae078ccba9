"""A replayed or restored ledger keeps the lineage the live one recorded (issue 32, item 3).

Targeted, fast: each scenario has a decision that an evicted summary, a kept summary or an
explicit empty ``saw`` changes, and the same decision is asked of the live ledger, of
``Ledger.from_log`` over its log and of ``Ledger.restore`` over its snapshot, and the audit
judges the log alike. A replay that skips ``evict_summary`` or drops ``keeps`` (mutants that
survived every test, issue 32) gives another answer here.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tailguard.cli.main import main
from tailguard.runtime.ledger import Ledger

Query = dict[str, Any]


def _answers(led: Ledger, queries: list[Query]) -> list[object]:
    out: list[object] = []
    for q in queries:
        try:
            d = led.decide(**q)
            out.append((d.allowed, d.failed, d.holes))
        except ValueError as exc:  # a summary the ledger does not hold in the context
            out.append(("ValueError", str(exc).split(":")[0]))
    return out


def _evicted(led: Ledger) -> list[Query]:
    """s1 covers [0, 9), a budget stage evicts it: a compaction from 9 on has a hole [0, 9)."""
    led.append(12)
    led.commit(summary_input=(0, 9), summary_covers=(0, 9), tail_start=9, summary="s1")
    led.append(6)
    led.evict_summary("s1")
    return [{"summary_input": (9, 15), "summary_covers": (9, 15), "tail_start": 15},
            {"summary_input": (9, 15), "summary_covers": (9, 15), "tail_start": 15, "saw": []}]


def _kept(led: Ledger) -> list[Query]:
    """s2 saw nothing of s1 (an explicit ``saw=[]``: it covers [6, 9) only) and keeps s1 beside
    it: a later compaction that drops s1 unseen loses [0, 6). Read as "saw everything", or with
    the keeps dropped, the first query would be allowed or name an unknown summary."""
    led.append(12)
    led.commit(summary_input=(0, 6), summary_covers=(0, 6), tail_start=6, summary="s1")
    led.commit(summary_input=(6, 9), summary_covers=(6, 9), tail_start=9, summary="s2", saw=[], keeps=["s1"])
    led.append(6)
    return [{"summary_input": (9, 15), "summary_covers": (9, 15), "tail_start": 15, "saw": ["s2"]},
            {"summary_input": (9, 15), "summary_covers": (9, 15), "tail_start": 15, "saw": ["s1", "s2"]},
            {"summary_input": (9, 15), "summary_covers": (9, 15), "tail_start": 15, "saw": ["s2"],
             "keeps": ["s1"]}]


SCENARIOS: dict[str, Callable[[Ledger], list[Query]]] = {
    "evicted": _evicted, "kept": _kept}
EXPECTED = {  # what the live ledger decides: the scenario is built so that lineage matters
    "evicted": [False, False],
    "kept": [False, True, True],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_replay_and_restore_decide_as_the_live_ledger(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.jsonl"
    with open(path, "w") as f:
        live = Ledger(0, unit="messages", profile="partitioned", log=f)
        queries = SCENARIOS[name](live)
        snap = live.snapshot()
        want = _answers(live, queries)
    assert [a[0] for a in want] == EXPECTED[name]
    replayed = Ledger.from_log(path, profile="partitioned", append=False)
    assert _answers(replayed, queries) == want
    restored = Ledger.restore(json.loads(json.dumps(snap)))
    assert _answers(restored, queries) == want


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_audit_judges_the_next_compaction_as_the_live_ledger(name: str, tmp_path: Path) -> None:
    """Commit the first query's compaction with an override where refused; the audit of the log
    must call it a violation exactly when the live ledger refused it."""
    path = tmp_path / f"{name}.jsonl"
    with open(path, "w") as f:
        live = Ledger(0, unit="messages", profile="partitioned", log=f)
        first = SCENARIOS[name](live)[0]
        allowed = live.decide(**first).allowed
        live.commit(**first, override=None if allowed else "test: recorded anyway")
    out = io.StringIO()
    code = main(["audit", "--profile", "partitioned", "--format", "json", str(path)], stdout=out,
                stderr=io.StringIO())
    report = json.loads(out.getvalue())
    assert (code, report["violations"]) == ((0, 0) if allowed else (1, 1))
