"""Equivalence: the ledger against a naive reference, side by side, summary lineage included.

The reference (:mod:`tests.lineage_oracle`) keeps every recorded range in plain lists and
every summary's effective coverage as a Python set of offsets, straight from the brief's
definitions (sections 2, 4, 4b, 4c) and SPEC.md 9.3; it shares no code with the ledger, and
decides each compaction's equivalent case with the generated checker and the per-offset
reference (which must agree). A Hypothesis state machine drives both through random
appends, truncations, spills, compactions (allowed, overridden or refused; ``saw`` omitted,
``None``, empty, all or a random subset of the context; ``keeps`` omitted or a random subset;
default or explicit ids) and summary evictions, and asserts, in all three profiles:

- ``Ledger.decide`` equals the oracle's decision (decision, failed clauses, holes);
- ``Ledger.equivalent_case`` equals the oracle's case;
- ``summaries``, ``next_summary_id`` and ``history_end`` equal the oracle's;
- with 1.0's defaults throughout, the decision equals the checker's on the 1.0 case (theorem 14);
- bad calls (unknown ids, a repeated id, bad ranges, a negative count) raise ValueError and
  change nothing, the log included;
- at the end, the log the ledger wrote, replayed by ``replay(iter_events(...))`` in every
  profile and audited by ``tailguard audit``, gives every ``compact`` line the decision the
  oracle had at that moment.

These tests need the spec 1.1 Ledger API; until the ledger has it they fail with one message.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tailguard._generated.checker import Decision, check_case
from tailguard.audit.replay import replay
from tailguard.base.vocab import Pair
from tailguard.cli.main import main
from tailguard.runtime.eventlog import iter_events
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tests.lineage_oracle import (
    PROFILES,
    LineageOracle,
    Refused,
    jsonable,
    needs_lineage,
    offsets,
    union_of,
)

CANONICAL = re.compile(r"0|[1-9][0-9]*")  # what a default (ordinal) id looks like

# explicit ids never look like an ordinal ("07" does not), so they never collide with one
explicit_ids = st.text(alphabet="ab-07é", min_size=1, max_size=3).filter(
    lambda s: not CANONICAL.fullmatch(s))


def _decision(d: Any) -> tuple[str, tuple[str, ...], tuple[Pair, ...]]:
    return (d.decision, tuple(d.failed), tuple(tuple(h) for h in d.holes))


class LineageMachine(RuleBasedStateMachine):
    """Ledger and oracle, operation by operation."""

    @initialize(
        messy=st.integers(0, 4).map(lambda k: k == 0),
        F=st.integers(-1, 6),
        floor_unit=st.sampled_from(["turns", "tokens", "pages"]),
        profile=st.sampled_from(PROFILES),
        history=st.integers(0, 20),
    )
    def start(self, messy: bool, F: int, floor_unit: str, profile: str, history: int) -> None:
        """Most sessions are consistent (else ``well_formed`` would mask every other clause);
        one in five is messy: any F and floor unit, and inconsistent compactions committed."""
        self.messy = messy
        if not messy:
            F, floor_unit = abs(F), "turns"
        self.profile = profile
        self.log = io.StringIO()
        self.ledger = Ledger(F, unit="turns", floor_unit=floor_unit, truncator_unit="turns",
                             profile=profile, log=self.log, keep_history=True)
        self.oracle = LineageOracle(F, floor_unit, "turns", profile=profile)
        # per committed compaction: the oracle's decision in every profile, and n at that time
        self.committed: list[tuple[dict[str, Decision], int]] = []
        self.tails: set[int] = set()
        self.defaults_only = True  # 1.0's defaults so far: saw omitted, no keeps, no evictions
        self.append(history)

    # -- drawing ----------------------------------------------------------------------------

    def _points(self) -> list[int]:
        o = self.oracle
        n = o.n
        pts = {0, n, max(0, n - o.F), *self.tails}
        for lo, hi in o.truncations + o.spills:
            pts.update((lo, hi))
        for sid in o.context:
            for x in o.effective[sid]:
                if x - 1 not in o.effective[sid] or x + 1 not in o.effective[sid]:
                    pts.update((x, x + 1))
        return sorted(p for p in pts if 0 <= p <= n)

    def _off(self, data: st.DataObject, *, wild: bool = False) -> int:
        """An offset in [0, n]: often an endpoint in play (seams, adjacency); ``wild``, now
        and then one outside it."""
        n = self.oracle.n
        kind = data.draw(st.integers(0, 9))
        if wild and kind == 0:
            return data.draw(st.integers(-2, n + 2))
        if kind < 6:
            return data.draw(st.sampled_from(self._points()))
        return data.draw(st.integers(0, n))

    def _range(self, data: st.DataObject, *, wild: bool = False) -> Pair:
        earlier = self.oracle.truncations + self.oracle.spills
        kind = data.draw(st.integers(0, 19))
        if kind < 3 and earlier:
            return data.draw(st.sampled_from(earlier))
        lo, hi = self._off(data, wild=wild), self._off(data, wild=wild)
        return (lo, hi) if wild and kind == 19 else (min(lo, hi), max(lo, hi))

    def _compaction(self, data: st.DataObject, *, wild: bool) -> dict[str, Any]:
        o = self.oracle
        n = o.n
        shape = data.draw(st.sampled_from(["next", "next", "all", "partitioned", "any"]))
        if shape == "any" or wild:
            t = self._off(data, wild=wild)
            inp, cov = self._range(data, wild=wild), self._range(data, wild=wild)
        elif shape == "next":  # where the last one left off, up to the floor: often allowed
            t = data.draw(st.sampled_from([max(0, n - abs(o.F)), self._off(data)]))
            a = max((x for x in self.tails if x <= t), default=0)
            full = self.profile == "strict" or (self.profile == "seed" and data.draw(st.booleans()))
            inp, cov = ((a, n) if full else (a, t)), (a, t)
        else:
            a, t = sorted((self._off(data), self._off(data)))
            inp = (a, n) if shape == "all" else (a, t)  # seed incident / LangChain
            cov = (a, t)
        return {"summary_input": inp, "summary_covers": cov, "tail_start": t}

    def _lineage(self, data: st.DataObject) -> dict[str, Any]:
        """``saw``/``keeps`` keyword arguments: omitted, None, empty, all or a subset."""
        ctx = list(self.oracle.context)

        def subset() -> list[str]:
            return data.draw(st.lists(st.sampled_from(ctx), unique=True)) if ctx else []

        kw: dict[str, Any] = {}
        saw = data.draw(st.sampled_from(["omit", "omit", "none", "empty", "all", "subset"]))
        if saw == "none":
            kw["saw"] = None
        elif saw == "empty":
            kw["saw"] = []
        elif saw == "all":
            kw["saw"] = list(reversed(ctx))  # a set: order does not matter
        elif saw == "subset":
            kw["saw"] = subset()
        keeps = data.draw(st.sampled_from(["omit", "omit", "empty", "subset"]))
        if keeps == "empty":
            kw["keeps"] = ()
        elif keeps == "subset":
            kw["keeps"] = subset()
        if data.draw(st.booleans()):
            kw = {k: tuple(v) if isinstance(v, list) else v for k, v in kw.items()}
        return kw

    def _fresh_id(self, data: st.DataObject) -> str:
        sid = data.draw(explicit_ids)
        while sid in self.oracle.used_ids:
            sid += "+"
        return sid

    # -- checking ---------------------------------------------------------------------------

    def _check_candidate(self, kw: dict[str, Any], lineage: dict[str, Any]) -> dict[str, Decision]:
        """Every profile's decision and the equivalent case, ledger against oracle."""
        want: dict[str, Decision] = {}
        for p in PROFILES:
            want[p] = self.oracle.decide(p, **kw, **lineage)
            got = self.ledger.decide(profile=p, **kw, **lineage)
            assert _decision(got) == _decision(want[p]), (p, kw, lineage, got, want[p])
        got_default = self.ledger.decide(**kw, **lineage)  # the session's profile
        assert _decision(got_default) == _decision(want[self.profile])
        case = self.ledger.equivalent_case(**kw, **lineage)
        assert jsonable(case) == jsonable(self.oracle.case(**kw, **lineage)), (kw, lineage)
        return want

    def _state(self) -> tuple[Any, ...]:
        led = self.ledger
        return (led.history_end, tuple(led.summaries), led.next_summary_id, self.log.getvalue())

    # -- valid operations -------------------------------------------------------------------

    @rule(count=st.integers(0, 5))
    def append(self, count: int) -> None:
        self.ledger.append(count)
        self.oracle.append(count)

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        lo, hi = self._range(data)
        self.ledger.truncate(lo, hi)
        self.oracle.truncate(lo, hi)

    @rule(data=st.data(), handle=st.none() | st.text(max_size=3))
    def spill(self, data: st.DataObject, handle: str | None) -> None:
        lo, hi = self._range(data)
        self.ledger.spill(lo, hi, handle)
        self.oracle.spill(lo, hi)

    @precondition(lambda self: bool(self.oracle.context))
    @rule(data=st.data())
    def evict_summary(self, data: st.DataObject) -> None:
        sid = data.draw(st.sampled_from(self.oracle.context))
        self.ledger.evict_summary(sid)
        self.oracle.evict_summary(sid)
        self.defaults_only = False

    @rule(data=st.data())
    def probe(self, data: st.DataObject) -> None:
        """Decide a candidate without committing it (inconsistent ones included)."""
        before = self._state()
        self._check_candidate(self._compaction(data, wild=data.draw(st.booleans())),
                              self._lineage(data))
        assert self._state() == before  # deciding records nothing

    @rule(data=st.data())
    def compact(self, data: st.DataObject) -> None:
        """Commit a compaction: allowed, overridden, or refused (and then nothing changes)."""
        self._compact(data)

    @rule(data=st.data())
    def compact_again(self, data: st.DataObject) -> None:
        """(The same rule twice: compactions are what this machine is about.)"""
        self._compact(data)

    def _compact(self, data: st.DataObject) -> None:
        wild = self.messy and data.draw(st.booleans())
        kw = self._compaction(data, wild=wild)
        lineage = self._lineage(data)
        if data.draw(st.booleans()):
            lineage["summary"] = self._fresh_id(data)
        decide_kw = {k: v for k, v in lineage.items() if k != "summary"}
        want = self._check_candidate(kw, decide_kw)
        mine = want[self.profile]
        if not mine.allowed and data.draw(st.integers(0, 3)) == 0:
            before = self._state()
            lines = len(self.log.getvalue().splitlines())
            with pytest.raises(UnrecoverableCompactionError) as info:
                self.ledger.commit(**kw, **lineage)
            with pytest.raises(Refused):
                self.oracle.commit(**kw, **lineage)
            assert (info.value.failed, info.value.holes) == (mine.failed, mine.holes)
            after = self.log.getvalue().splitlines()
            assert before[:3] == self._state()[:3]  # nothing recorded
            assert [json.loads(x)["event"] for x in after[lines:]] == ["refusal"], after[lines:]
            return
        override = None
        if not mine.allowed or data.draw(st.integers(0, 4)) == 0:
            override = "test: commit it anyway"
        sid = lineage.get("summary", self.oracle.next_summary_id)
        got = self.ledger.commit(**kw, **lineage, override=override)
        self.oracle.commit(**kw, **lineage, override=override)
        assert _decision(got) == _decision(mine)
        assert tuple(self.ledger.summaries)[-1] == sid
        self.committed.append((want, self.oracle.n))
        self.tails.add(kw["tail_start"])
        if decide_kw.get("saw") is not None or decide_kw.get("keeps"):
            self.defaults_only = False

    # -- a bad call raises ValueError and changes nothing -----------------------------------

    @rule(data=st.data())
    def bad_call(self, data: st.DataObject) -> None:
        o, led = self.oracle, self.ledger
        n = o.n
        unknown = self._fresh_id(data)  # never created, so in no context
        gone = sorted(o.used_ids - set(o.context))
        ctx = list(o.context)
        kw = self._compaction(data, wild=False)
        kinds = ["count", "reversed", "negative", "past_end", "saw", "keeps", "evict",
                 "case", "commit_saw", "commit_keeps"]
        if o.used_ids:
            kinds += ["repeated"] * 4
        kind = data.draw(st.sampled_from(kinds))
        bad_id = unknown
        if kind in ("saw", "keeps", "evict", "case", "commit_saw", "commit_keeps") and gone \
                and data.draw(st.booleans()):
            bad_id = data.draw(st.sampled_from(gone))  # it existed, but left the context
        ids = data.draw(st.lists(st.sampled_from(ctx), unique=True)) if ctx else []
        ids.insert(data.draw(st.integers(0, len(ids))), bad_id)
        lo = data.draw(st.integers(1, n + 1))
        calls = {
            "count": lambda: led.append(data.draw(st.integers(-3, -1))),
            "reversed": lambda: (led.truncate if data.draw(st.booleans()) else led.spill)(lo, lo - 1),
            "negative": lambda: (led.truncate if data.draw(st.booleans()) else led.spill)(-1, lo - 1),
            "past_end": lambda: (led.truncate if data.draw(st.booleans()) else led.spill)(lo - 1, n + 1),
            "saw": lambda: led.decide(**kw, saw=ids),
            "keeps": lambda: led.decide(**kw, keeps=ids),
            "case": lambda: led.equivalent_case(**kw, keeps=ids),
            "evict": lambda: led.evict_summary(bad_id),
            "commit_saw": lambda: led.commit(**kw, saw=ids, override="x"),
            "commit_keeps": lambda: led.commit(**kw, keeps=ids, override="x"),
            "repeated": lambda: led.commit(
                **kw, summary=data.draw(st.sampled_from(sorted(o.used_ids))), override="x"),
        }
        before = self._state()
        with pytest.raises(ValueError):
            calls[kind]()
        assert self._state() == before, kind

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def same_state(self) -> None:
        if not hasattr(self, "ledger"):
            return
        led, o = self.ledger, self.oracle
        assert led.history_end == o.n
        assert tuple(led.summaries) == o.summaries
        assert led.next_summary_id == o.next_summary_id

    @invariant()
    def same_decision_on_the_next_compaction(self) -> None:
        """The compaction an orchestrator would make now: seeing everything, and seeing
        nothing while keeping all but the oldest summary."""
        if not hasattr(self, "ledger"):
            return
        o = self.oracle
        n = o.n
        t = min(max(0, n - max(o.F, 0)), n)
        a = max((x for x in self.tails if x <= t), default=0)
        if (n + len(self.committed)) % 2:  # LangChain's shape, or the seed incident's
            kw = {"summary_input": (a, t), "summary_covers": (a, t), "tail_start": t}
        else:
            kw = {"summary_input": (0, n), "summary_covers": (0, t), "tail_start": t}
        self._check_candidate(kw, {})
        self._check_candidate(kw, {"saw": [], "keeps": list(o.context)[1:]})
        if self.defaults_only:  # theorem 14: 1.0's prior coverage, 1.0's decision
            assert o.prior_coverage() == union_of(p for part in o.honest_parts for p in part)
            for p in PROFILES:
                got = self.ledger.decide(profile=p, **kw)
                assert _decision(got) == _decision(check_case(o.case_1_0(**kw), p))

    # -- the log ------------------------------------------------------------------------------

    def teardown(self) -> None:
        if not hasattr(self, "ledger"):
            return
        text = self.log.getvalue()
        lines = text.splitlines()
        events = [json.loads(x)["event"] for x in lines]
        compact_lines = [i for i, e in enumerate(events, 1) if e == "compact"]
        assert len(compact_lines) == len(self.committed)
        for p in PROFILES:
            verdicts = {v.line: v for v in replay(iter_events(lines), profile=p)
                        if hasattr(v, "decision")}
            for line, (want, n) in zip(compact_lines, self.committed, strict=True):
                v = verdicts[line]
                assert _decision(v.decision) == _decision(want[p]), (p, line, v, want[p], text)
                assert v.history_end == n
        # the ledger's own profile through the command line, JSON and text
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            out, err = io.StringIO(), io.StringIO()
            code = main(["audit", "--format", "json", "--profile", self.profile, path],
                        stdout=out, stderr=err)
            t_out, t_err = io.StringIO(), io.StringIO()
            t_code = main(["audit", "--profile", self.profile, path], stdout=t_out, stderr=t_err)
        finally:
            os.unlink(path)
        assert err.getvalue() == "" and t_err.getvalue() == "", (err.getvalue(), t_err.getvalue())
        assert t_code == code
        report = json.loads(out.getvalue())
        by_line = {c["line"]: c for c in report["compactions"]}
        refused = 0
        for line, (want, _) in zip(compact_lines, self.committed, strict=True):
            c = by_line[line]
            assert (c["decision"], c["failed"], c["holes"]) == (
                want[self.profile].decision, list(want[self.profile].failed),
                [list(h) for h in want[self.profile].holes])
            refused += not want[self.profile].allowed
        if refused:
            assert code == 1
        elif "refusal" not in events:
            assert (code, report["violations"]) == (0, 0)


def _run(**kw: Any) -> None:
    run_state_machine_as_test(LineageMachine, settings=settings(
        deadline=None, suppress_health_check=[HealthCheck.too_slow], **kw))


@needs_lineage
def test_ledger_matches_the_lineage_oracle() -> None:
    _run(max_examples=75, stateful_step_count=25)


@pytest.mark.slow
@needs_lineage
def test_ledger_matches_the_lineage_oracle_long() -> None:
    _run(max_examples=800, stateful_step_count=50)


# -- the oracle itself: effective coverage, from the definition -------------------------------

def test_oracle_effective_coverage_follows_the_definition() -> None:
    """E(S_k) = ((C_k ∩ I_k) \\ TRU_k) ∪ E(seen); truncations after S_k do not shrink it."""
    o = LineageOracle(2, profile="partitioned")
    o.append(10)
    o.truncate(2, 3)
    o.commit(summary_input=(0, 6), summary_covers=(0, 8), tail_start=6, override="x")
    assert o.effective["0"] == offsets((0, 6)) - {2}
    o.truncate(4, 5)
    o.append(4)
    o.commit(summary_input=(6, 12), summary_covers=(6, 12), tail_start=12, saw=["0"], override="x")
    assert o.effective["1"] == (offsets((0, 12)) - {2})
    assert o.summaries == ("1",)
    o.commit(summary_input=(12, 12), summary_covers=(12, 12), tail_start=12, saw=[],
             summary="c", override="x")
    assert o.effective["c"] == set() and o.summaries == ("c",)
    assert o.case(summary_input=(0, 0), summary_covers=(0, 0), tail_start=12)["prior_coverage"] == []
