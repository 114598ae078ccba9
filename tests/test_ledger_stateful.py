"""Equivalence: the ledger against a naive reference, side by side (issue 3, item 6).

The reference keeps every recorded range in plain lists and decides each compaction per
offset, straight from the brief's definitions (sections 2 and 4); it shares no code with
the ledger. A Hypothesis state machine drives both through random appends, truncations,
compactions and spills (small offsets, inconsistent ones included) and asserts identical
decisions, clauses and holes at every compaction, in both profiles; the generated checker
on the ledger's equivalent case must agree too. At the end, ``tailguard audit`` of the log
the ledger wrote must reproduce the ledger's own decisions.
"""

from __future__ import annotations

import io
import json
import os
import tempfile

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule

from tailguard._generated.checker import check_case
from tailguard.cli.main import main
from tailguard.ledger import Ledger

UNITS = ("turns", "messages", "tokens")
Pair = tuple[int, int]
Verdict = tuple[str, tuple[str, ...], tuple[Pair, ...]]


def _rng(r: Pair) -> set[int]:
    return set(range(r[0], r[1]))


def _runs(points: set[int]) -> list[Pair]:
    out: list[Pair] = []
    for x in sorted(points):
        if out and out[-1][1] == x:
            out[-1] = (out[-1][0], x + 1)
        else:
            out.append((x, x + 1))
    return out


class NaiveSession:
    """The reference: raw lists, per-offset sets, the seed's loop transcribed."""

    def __init__(self, F: int, floor_unit: str, truncator_unit: str) -> None:
        self.F, self.fu, self.tu = F, floor_unit, truncator_unit
        self.n = 0
        self.TR: list[Pair] = []
        self.SP: list[Pair] = []
        self.PC: list[Pair] = []

    def decide(self, profile: str, t: int, inp: Pair, cov: Pair) -> Verdict:
        if profile == "seed":
            if self.fu != self.tu:
                return ("refuse", ("units_agree",), ())
            floor_start = t - self.F
            if inp[0] > floor_start:
                return ("refuse", ("floor_reach",), ())
            for lo, hi in self.TR:
                if hi > floor_start and lo < t:
                    return ("refuse", ("truncation_clear",), ())
            return ("allow", (), ())
        n, F = self.n, self.F
        ranges = [inp, cov, *self.TR, *self.PC, *self.SP]
        if not (n >= 0 and F >= 0 and 0 <= t <= n and all(0 <= lo <= hi <= n for lo, hi in ranges)
                and self.fu in UNITS and self.tu in UNITS):
            return ("refuse", ("well_formed",), ())
        tru: set[int] = set().union(*(_rng(r) for r in self.TR))
        tail = set(range(t, n))
        phi = set(range(max(0, n - F), n))
        failed = []
        if self.fu != self.tu:
            failed.append("units_agree")
        if not phi <= _rng(inp):
            failed.append("floor_in_input")
        if not phi <= tail:
            failed.append("floor_in_tail")
        if any(_rng(r) & tail for r in self.TR):
            failed.append("tail_intact")
        if not (t == 0 or cov[1] >= t):
            failed.append("seam_contiguous")
        if not _rng(cov) <= _rng(inp) - tru:
            failed.append("summary_honest")
        covered = set().union(*(_rng(r) for r in self.PC + self.SP))
        covered |= (_rng(cov) & _rng(inp)) - tru
        covered |= tail - tru
        holes = set(range(n)) - covered
        if holes:
            failed.append("no_hole")
        return ("refuse" if failed else "allow", tuple(failed), tuple(_runs(holes)))

    def record_compaction(self, inp: Pair, cov: Pair) -> None:
        tru: set[int] = set().union(*(_rng(r) for r in self.TR))
        self.PC.extend(_runs((_rng(cov) & _rng(inp)) - tru))


class LedgerVersusReference(RuleBasedStateMachine):
    @initialize(
        messy=st.integers(0, 4).map(lambda k: k == 0),
        F=st.integers(-1, 6),
        floor_unit=st.sampled_from(["turns", "tokens", "pages"]),
        profile=st.sampled_from(["strict", "seed"]),
        history=st.integers(0, 24),
    )
    def start(self, messy: bool, F: int, floor_unit: str, profile: str, history: int) -> None:
        """Most sessions are consistent (else ``well_formed`` would mask every other clause);
        one in five is messy: any F, unit names, negative counts, ranges out of order."""
        self.messy = messy
        if not messy:
            F, floor_unit = abs(F), "turns"
        self.log = io.StringIO()
        self.profile = profile
        self.ledger = Ledger(F, unit="turns", floor_unit=floor_unit, truncator_unit="turns",
                             profile=profile, log=self.log, keep_history=True)
        self.ref = NaiveSession(F, floor_unit, "turns")
        self.decisions: list[tuple[str, list[str], list[list[int]]]] = []
        self.append(history)

    def _off(self, data: st.DataObject) -> int:
        """An offset: often an endpoint already in play (seams, adjacency); in a messy
        session now and then one out of range."""
        n = max(self.ref.n, 0)
        kind = data.draw(st.integers(0, 9))
        if kind == 0 and self.messy:
            return data.draw(st.integers(-1, n + 2))
        if kind < 5:
            points = {0, n, max(0, n - self.ref.F)}
            for lo, hi in self.ref.TR + self.ref.SP + self.ref.PC:
                points.update((lo, hi))
            return data.draw(st.sampled_from(sorted(p for p in points if 0 <= p <= n)))
        return data.draw(st.integers(0, n))

    def _range(self, data: st.DataObject) -> Pair:
        """Mostly ordered ranges; now and then an earlier recorded one (or, messy, reversed)."""
        kind = data.draw(st.integers(0, 19))
        earlier = self.ref.TR + self.ref.SP
        if kind < 3 and earlier:
            return data.draw(st.sampled_from(earlier))
        lo, hi = self._off(data), self._off(data)
        return (lo, hi) if kind == 19 and self.messy else (min(lo, hi), max(lo, hi))

    @rule(count=st.integers(-1, 5))
    def append(self, count: int) -> None:
        if count < 1 and not self.messy:
            count = 1
        self.ledger.append(count)
        self.ref.n += count

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        lo, hi = self._range(data)
        self.ledger.truncate(lo, hi)
        self.ref.TR.append((lo, hi))

    @rule(data=st.data(), handle=st.none() | st.text(max_size=3))
    def spill(self, data: st.DataObject, handle: str | None) -> None:
        lo, hi = self._range(data)
        self.ledger.spill(lo, hi, handle)
        self.ref.SP.append((lo, hi))

    @rule(data=st.data())
    def compact(self, data: st.DataObject) -> None:
        n = max(self.ref.n, 0)
        if data.draw(st.booleans()):  # the shape orchestrators produce
            a, t = sorted((self._off(data), self._off(data)))
            b, c, d = n, a, t
        else:
            t = self._off(data)
            a, b = self._range(data)
            c, d = self._range(data)
        inp, cov = (a, b), (c, d)
        kw = {"summary_input": inp, "summary_covers": cov, "tail_start": t}
        for profile in ("strict", "seed"):
            got = self.ledger.decide(profile=profile, **kw)  # type: ignore[arg-type]
            want = self.ref.decide(profile, t, inp, cov)
            assert tuple(got) == want, (profile, got, want)
            case = self.ledger.equivalent_case(**kw)  # type: ignore[arg-type]
            assert check_case(case, profile) == got
        decision = self.ledger.commit(override="test: record everything", **kw)  # type: ignore[arg-type]
        self.ref.record_compaction(inp, cov)
        self.decisions.append((decision.decision, list(decision.failed),
                               [list(h) for h in decision.holes]))

    def teardown(self) -> None:
        if not getattr(self, "decisions", None):
            return
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(self.log.getvalue())
            out, err = io.StringIO(), io.StringIO()
            code = main(["audit", "--format", "json", "--profile", self.profile, path],
                        stdout=out, stderr=err)
            text, text_err = io.StringIO(), io.StringIO()
            text_code = main(["audit", "--profile", self.profile, path],
                             stdout=text, stderr=text_err)
            assert (text_code, text_err.getvalue()) == (code, "")
            assert text.getvalue().count(": compaction refused (") == sum(
                d[0] == "refuse" for d in self.decisions)
        finally:
            os.unlink(path)
        report = json.loads(out.getvalue())
        got = [(c["decision"], c["failed"], c["holes"]) for c in report["compactions"]]
        assert got == self.decisions
        violations = sum(d[0] == "refuse" for d in self.decisions)
        assert report["violations"] == violations
        assert code == (1 if violations else 0), err.getvalue()


LedgerVersusReference.TestCase.settings = settings(
    max_examples=300, stateful_step_count=30, deadline=None
)
TestLedgerVersusReference = LedgerVersusReference.TestCase
