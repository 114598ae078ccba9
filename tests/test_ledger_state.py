"""The ledger's incremental state, checked after every event against a naive model (issue 32, item 3).

The Hypothesis state machine (tests/test_ledger_stateful.py) finds a wrong incremental update
eventually; these find the same ones in seconds, deterministically. A naive model of SPEC.md
sections 9 to 11 (Python sets of offsets, nothing shared with the runtime) follows fixed logs:
hand-written sequences aimed at each incremental path (the one-summary fast path, two summaries in
the context, a summary that departs unseen or is evicted, adoption, spills and truncations on
either side of a departure, sessions long enough to split the interval blocks) and a corpus of
random logs (:func:`tailguard.backends.ledger_vectors.random_log`, a seed of its own). After every
event the core's state must equal the model's: the context, each summary's effective coverage,
``coverage()``, ``R = coverage ∪ SP``, ``lost = TRU \\ R``, the truncations, spills and unverified
offsets (``E(S_k)`` and each prior coverage by the spec's ``[lineage]`` expressions, read from
spec/clauses.toml and evaluated on sets: edit the rule there and these tests fail). Before
every compaction, its decision is asked under every profile and a set of lineage queries
(the log's own, the defaults, none seen, each summary seen or kept alone, all seen and kept)
and must equal the generated checker's on the model's equivalent case. The same logs then
drive the :class:`~tailguard.runtime.ledger.Ledger` through its API (every commit overridden, so
that it records), its own log through ``from_log``, and its snapshot through ``restore``; and
every session of up to five events over at most 3 offsets is resumed both ways (bounded
exhaustive).

docs/verification.md lists the mutants of ledger_core, lineage, ledger and interval_index that
each test here kills.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tailguard._generated.checker import check_case
from tailguard.backends import ledger_vectors as lv
from tailguard.runtime.dispatch import apply_events
from tailguard.runtime.eventlog import Compact, iter_events
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.ledger_core import LedgerCore
from tailguard.speclang import ast
from tailguard.speclang.load import Lineage, load_spec

ROOT = Path(__file__).resolve().parents[1]

PROFILES = ("seed", "strict", "partitioned")


def runs(points: set[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for x in sorted(points):
        if out and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1])
    return [(lo, hi) for lo, hi in out]


def span(p: list[int] | tuple[int, int]) -> set[int]:
    return set(range(p[0], p[1]))


def evaluate(node: ast.Node, env: Mapping[str, set[int]]) -> set[int]:
    """A lineage expression of the spec (names and set operations) on Python sets."""
    match node:
        case ast.Name(name=n):
            return set(env[n])
        case ast.SetOp(op="|", left=a, right=b):
            return evaluate(a, env) | evaluate(b, env)
        case ast.SetOp(op="&", left=a, right=b):
            return evaluate(a, env) & evaluate(b, env)
        case ast.SetOp(op="\\", left=a, right=b):
            return evaluate(a, env) - evaluate(b, env)
    raise TypeError(f"not a lineage expression of this model: {node!r}")


def spec_lineage(path: Path = ROOT / "spec" / "clauses.toml") -> Lineage:
    lin = load_spec(path).lineage
    assert lin is not None
    return lin


class Model:
    """SPEC.md 9 to 11 on sets of offsets: what the state must be after each event. ``E(S_k)``
    and the prior coverage are the spec's ``[lineage]`` expressions, evaluated on sets."""

    lineage = spec_lineage()

    def __init__(self, header: dict[str, Any]) -> None:
        self.header = header
        self.n = 0
        self.truncations: list[list[int]] = []
        self.spills: list[list[int]] = []
        self.context: list[str] = []
        self.E: dict[str, set[int]] = {}
        self.count = 0
        self.unverified: set[int] = set()

    def tru(self) -> set[int]:
        return {x for p in self.truncations for x in span(p)}

    def sp(self) -> set[int]:
        return {x for p in self.spills for x in span(p)}

    def coverage(self, ids: list[str] | None = None) -> set[int]:
        return {x for s in (self.context if ids is None else ids) for x in self.E[s]}

    def apply(self, ev: dict[str, Any]) -> None:
        kind = ev["event"]
        if kind == "append":
            self.n += ev.get("count", 1)
        elif kind == "truncate":
            self.truncations.append(ev["range"])
        elif kind == "spill":
            self.spills.append(ev["range"])
        elif kind == "evict_summary":
            self.context.remove(ev["summary"])
        elif kind == "adopt":
            sid = ev.get("summary") or "adopted"
            hi = ev["range"][1]
            self.n += hi
            self.unverified = set(range(hi))
            self.E[sid] = set(range(hi))
            self.context.append(sid)
        elif kind == "compact":
            saw = self.context if ev.get("saw") is None else ev["saw"]
            keeps = ev.get("keeps") or []
            sid = ev.get("summary") or str(self.count)
            self.E[sid] = evaluate(self.lineage.effective_coverage, self.names(ev, list(saw), keeps))
            self.context = [s for s in self.context if s in keeps] + [sid]
            self.count += 1

    def names(self, ev: dict[str, Any], seen: list[str], keeps: list[str]) -> dict[str, set[int]]:
        return {"C": span(ev["summary_covers"]), "I": span(ev["summary_input"]), "TRU": self.tru(),
                "SEEN": self.coverage(seen), "KEPT": self.coverage(keeps)}

    def case(self, ev: dict[str, Any], saw: list[str] | None, keeps: list[str]) -> dict[str, Any]:
        seen = self.context if saw is None else saw
        pc = evaluate(self.lineage.prior_coverage, self.names(ev, list(seen), keeps))
        return {
            "history_end": self.n, "tail_start": ev["tail_start"], "summary_input": ev["summary_input"],
            "summary_covers": ev["summary_covers"], "recovery_floor_span": self.header["recovery_floor_span"],
            "floor_unit": self.header["floor_unit"], "truncator_unit": self.header["truncator_unit"],
            "prior_truncations": self.truncations,
            "prior_coverage": [list(p) for p in runs(pc)],
            "spills": self.spills,
        }

    def queries(self, ev: dict[str, Any]) -> Iterator[tuple[list[str] | None, list[str]]]:
        """The log's own lineage, then the defaults, none seen, each alone, all seen and kept."""
        yield ev.get("saw"), ev.get("keeps") or []
        yield None, []
        yield [], []
        for s in self.context:
            yield [s], []
            yield [], [s]
        yield list(self.context), list(self.context)


def state_problem(core: LedgerCore, m: Model) -> str | None:
    ctx = core.summaries
    if core.n != m.n:
        return f"n {core.n}, expected {m.n}"
    if list(ctx.ids) != m.context:
        return f"context {list(ctx.ids)}, expected {m.context}"
    for sid in m.context:
        if list(ctx.get(sid).coverage) != runs(m.E[sid]):
            return f"E({sid!r}) {list(ctx.get(sid).coverage)}, expected {runs(m.E[sid])}"
    cov = m.coverage()
    checks = [("coverage()", list(ctx.coverage()), runs(cov)),
              ("R", list(core.recovered), runs(cov | m.sp())),
              ("lost", list(core.lost), runs(m.tru() - cov - m.sp())),
              ("TRU", list(core.truncated), runs(m.tru())), ("SP", list(core.spilled), runs(m.sp())),
              ("unverified", list(core.unverified), runs(m.unverified)),
              ("uncovered(0, n)", ctx.uncovered(0, m.n + 3), runs(set(range(m.n + 3)) - cov))]
    for name, got, want in checks:
        if got != want:
            return f"{name} {got}, expected {want}"
    return None


def follow(log: list[dict[str, Any]], *, queries: bool = True) -> None:
    """Feed ``log`` to a core event by event; check the state after each, the decisions before
    each compaction (AssertionError naming the line)."""
    header = log[0]
    m = Model(header)
    cores = {"seed": LedgerCore(header["recovery_floor_span"], header["floor_unit"], header["truncator_unit"]),
             "contract": LedgerCore(header["recovery_floor_span"], header["floor_unit"], header["truncator_unit"],
                                    seed=False)}
    events = list(iter_events([json.dumps(ev) for ev in log]))[1:]
    for line, (raw, ev) in enumerate(zip(log[1:], events, strict=True), 2):
        for which, core in cores.items():
            for item in apply_events(core, [ev], "<log>"):
                if isinstance(item, Compact):
                    asked = list(m.queries(raw)) if queries else [(raw.get("saw"), raw.get("keeps") or [])]
                    for saw, keeps in asked:
                        for p in (("seed",) if which == "seed" else ("strict", "partitioned")):
                            got = core.decide(p, item.tail_start, item.summary_input, item.summary_covers,
                                              None if saw is None else tuple(saw), tuple(keeps))
                            want = check_case(m.case(raw, saw, keeps), p)
                            assert got == want, (line, p, saw, keeps, got, want, log)
        m.apply(raw)
        for core in cores.values():
            problem = state_problem(core, m)
            assert problem is None, (line, problem, log)


def sequences() -> dict[str, list[dict[str, Any]]]:
    """Logs aimed at each incremental path."""
    S, a, tr, sp, ev, c, ad = lv.session, lv.append, lv.truncate, lv.spill, lv.evict, lv.compact, lv.adopt
    out = {name: log for name, _, log in lv.scenarios()}
    out.update({
        # two summaries in the context, then a default compaction (the slow path: not the fast one)
        "two-then-default-then-unseen": [S(2), a(10), c((0, 8), (0, 8), 8, summary="s1"), a(8),
                                         c((8, 16), (8, 16), 16, summary="s2", saw=[], keeps=["s1"]), a(6),
                                         c((16, 22), (16, 20), 20, summary="s3"), a(4),
                                         c((20, 26), (20, 24), 24, summary="s4", saw=[]), a(4),
                                         c((24, 30), (24, 28), 28)],
        # a departure whose offsets are partly spilled, partly truncated, partly covered by a kept summary
        "departure-mixed": [S(2), a(12), c((0, 6), (0, 6), 6, summary="k"), a(6),
                            c((6, 12), (4, 12), 12, summary="d", saw=[], keeps=["k"]), sp(8, 10), tr(6, 9),
                            tr(10, 11), a(6), c((12, 18), (12, 16), 16, summary="e", saw=[], keeps=["k"]), a(2),
                            c((16, 20), (16, 18), 18)],
        # a summary departs unseen while the one that covers its offsets is not the oldest in the context
        "departure-covered-by-the-newest": [S(2), a(12), c((0, 8), (0, 8), 8, summary="s1"), a(4),
                                            c((8, 12), (8, 12), 12, summary="d", saw=[], keeps=["s1"]), a(6),
                                            c((8, 18), (8, 16), 16, summary="e", saw=[], keeps=["s1"]), a(2),
                                            c((16, 20), (16, 18), 18)],
        # a summary seen and kept: its coverage is copied, not taken over
        "seen-and-kept-then-evicted": [S(2), a(10), c((0, 8), (0, 8), 8, summary="s1"), a(6),
                                       c((8, 14), (8, 12), 12, summary="s2", keeps=["s1"]), ev("s2"), a(4),
                                       c((12, 18), (12, 16), 16, saw=[]), a(2), c((16, 20), (16, 18), 18)],
        # evict the newest of two, then the older; then compact with nothing in the context
        "evict-both": [S(1), a(10), c((0, 5), (0, 5), 5, summary="x"), a(5),
                       c((5, 10), (5, 10), 10, summary="y", saw=[], keeps=["x"]), tr(0, 3), ev("y"), ev("x"),
                       a(3), c((10, 13), (10, 12), 12), a(2), c((12, 15), (12, 14), 14)],
        # adoption kept beside, then departing; the unverified offsets stay unverified
        "adopt-kept-then-departs": [S(2), ad(6, "old"), a(4), c((6, 10), (6, 10), 10, saw=[], keeps=["old"]),
                                    tr(0, 2), a(4), c((10, 14), (10, 14), 14, saw=["0"]), a(2),
                                    c((14, 16), (14, 16), 16)],
        # truncations while two summaries hold the offsets, then one of them departs
        "truncated-under-two": [S(1), a(8), c((0, 6), (0, 6), 6, summary="p"), a(6),
                                c((0, 12), (0, 12), 12, summary="q", saw=[], keeps=["p"]), tr(0, 10), a(2),
                                c((12, 14), (12, 14), 14, saw=["p"]), a(2), c((14, 16), (14, 16), 16)],
    })
    # long sessions: hundreds of ranges split the interval blocks (LOAD = 64 rows)
    rng = random.Random(7)
    long_log: list[dict[str, Any]] = [S(3), a(2000)]
    for k in range(260):
        lo = rng.randrange(0, 1990)
        long_log.append(rng.choice((tr, sp))(lo, lo + rng.randint(1, 6)))
        if k % 40 == 39:
            t = 2000 - 3
            long_log.append(c((0, 2000), (rng.randint(0, 50), t), t, saw=[] if k % 80 == 39 else None))
    out["long-blocks"] = long_log
    gaps: list[dict[str, Any]] = [S(2), a(3000)]
    for k in range(300):  # disjoint summaries' coverage of many ranges, then departures
        gaps.append(tr(10 * k + 5, 10 * k + 7))
    gaps += [c((0, 2990), (0, 2990), 2990, summary="big"), a(10), c((2990, 3010), (2995, 3000), 3000, saw=[]),
             a(2), c((3000, 3012), (3000, 3010), 3010)]
    out["many-gaps"] = gaps
    return out


SEQUENCES = sequences()


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_state_after_every_event_of_a_targeted_log(name: str) -> None:
    follow(SEQUENCES[name], queries=not name.startswith(("long", "many")))


def random_logs(count: int, seed: int) -> list[list[dict[str, Any]]]:
    rng = random.Random(seed)
    return [lv.random_log(rng) for _ in range(count)]


@pytest.mark.parametrize("chunk", range(4))
def test_state_after_every_event_of_random_logs(chunk: int) -> None:
    for log in random_logs(150, 1000 + chunk):
        follow(log)


# -- the Ledger API, from_log and restore ------------------------------------------------------------

def drive(log: list[dict[str, Any]], *, queries: bool = True) -> tuple[Ledger, io.StringIO, Model]:
    """Play ``log`` through the Ledger's API (ranges outside the history skipped, every commit
    overridden so that it records); each commit's decision must be the model's."""
    h = log[0]
    out = io.StringIO()
    led = Ledger(h["recovery_floor_span"], floor_unit=h["floor_unit"], truncator_unit=h["truncator_unit"],
                 profile="partitioned", log=out)
    m = Model(h)
    for raw in log[1:]:
        kind = raw["event"]
        if kind in ("truncate", "spill") and not 0 <= raw["range"][0] <= raw["range"][1] <= m.n:
            continue
        if kind == "append":
            led.append(raw.get("count", 1))
        elif kind == "truncate":
            led.truncate(*raw["range"])
        elif kind == "spill":
            led.spill(*raw["range"])
        elif kind == "evict_summary":
            led.evict_summary(raw["summary"])
        elif kind == "adopt":
            led.adopt(raw["range"][1], reason=raw["reason"], summary=raw.get("summary"))
        elif kind == "refusal":
            continue
        elif kind == "compact":
            saw, keeps = raw.get("saw"), raw.get("keeps") or []
            kw = {"summary_input": tuple(raw["summary_input"]), "summary_covers": tuple(raw["summary_covers"]),
                  "tail_start": raw["tail_start"]}
            for s, k in (m.queries(raw) if queries else ()):
                want = check_case(m.case(raw, s, k), "partitioned")
                assert led.decide(**kw, saw=s, keeps=k) == want, (raw, s, k)
            got = led.commit(**kw, summary=raw.get("summary"), saw=saw, keeps=keeps, override="test")
            assert got == check_case(m.case(raw, saw, keeps), "partitioned"), raw
        m.apply(raw)
        assert state_problem(led._core, m) is None, (raw, state_problem(led._core, m))
    return led, out, m


@pytest.mark.parametrize("chunk", range(2))
def test_the_ledger_api_from_log_and_restore_keep_the_state(chunk: int) -> None:
    logs = [*(SEQUENCES[k] for k in sorted(SEQUENCES) if not k.startswith(("long", "many")))] if chunk == 0 \
        else random_logs(150, 2000)
    for log in logs:
        led, out, m = drive(log)
        again = Ledger.from_log(io.StringIO(out.getvalue()), profile="partitioned")
        assert state_problem(again._core, m) is None, ("from_log", state_problem(again._core, m), log)
        restored = Ledger.restore(led.snapshot())
        assert state_problem(restored._core, m) is None, ("restore", state_problem(restored._core, m), log)
        # and they decide the next compaction alike, under every lineage query
        nxt = {"event": "compact", "summary_input": [0, m.n], "summary_covers": [max(0, m.n - 5), m.n],
               "tail_start": m.n}
        for s, k in m.queries(nxt):
            want = check_case(m.case(nxt, s, k), "partitioned")
            for which in (led, again, restored):
                assert which.decide(summary_input=(0, m.n), summary_covers=(max(0, m.n - 5), m.n),
                                    tail_start=m.n, saw=s, keeps=k) == want, (s, k, log)


# -- the interval structures under the state, across blocks ---------------------------------------

def _points(u: Any) -> set[int]:
    return {x for lo, hi in u for x in range(lo, hi)}


@pytest.mark.parametrize("reach", ["to-the-end", "into-the-last-block", "past-the-end"])
def test_a_range_added_across_blocks_keeps_every_query_right(reach: str) -> None:
    """An add whose merge spans from one block through a later one (here, often the last)
    splices several blocks at once: every block left must be non-empty with current tops, and
    every later query and update must still match a set of offsets."""
    from tailguard.runtime.interval_index import LOAD, IntervalUnion

    u = IntervalUnion()
    model: set[int] = set()
    rows = 5 * LOAD  # several blocks
    for k in range(rows):
        u.add(10 * k, 10 * k + 3)
        model |= set(range(10 * k, 10 * k + 3))
    end = {"to-the-end": 10 * (rows - 1) + 2, "into-the-last-block": 10 * (rows - 3),
           "past-the-end": 10 * rows + 50}[reach]
    u.add(15, end)
    model |= set(range(15, end))
    u.check()
    assert _points(u) == model
    rng = random.Random(reach)
    for _ in range(400):
        lo = rng.randrange(-5, 10 * rows + 80)
        hi = lo + rng.randint(0, 40)
        op = rng.choice(("add", "remove", "query"))
        if op == "add":
            u.add(lo, hi)
            model |= set(range(lo, hi))
        elif op == "remove":
            u.remove(lo, hi)
            model -= set(range(lo, hi))
        want_gaps = runs(set(range(lo, hi)) - model)
        assert u.gaps(lo, hi) == want_gaps, (op, lo, hi)
        assert u.covers(lo, hi) == (not want_gaps)
        assert u.intersects(lo, hi) == bool(set(range(lo, hi)) & model)
        assert u.pieces(lo, hi) == runs(set(range(lo, hi)) & model)
        if model:
            assert (u.min_lo, u.max_hi) == (min(model), max(model) + 1)
    u.check()
    assert _points(u) == model


# -- the model is the spec's lineage rule: edit the rule and the runtime no longer agrees -----------

@pytest.mark.parametrize(("what", "old", "new", "log"), [
    ("prior coverage without KEPT", 'prior_coverage = "SEEN | KEPT"', 'prior_coverage = "SEEN"', "keeps-seen-and-kept"),
    ("E without what it saw", 'effective_coverage = "((C & I) \\\\ TRU) | SEEN"',
     'effective_coverage = "(C & I) \\\\ TRU"', "two-then-default-then-unseen"),
    ("E without \\ TRU", 'effective_coverage = "((C & I) \\\\ TRU) | SEEN"', 'effective_coverage = "(C & I) | SEEN"',
     "long-blocks"),
])
def test_the_runtime_follows_the_specs_lineage_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str, old: str, new: str, log: str
) -> None:
    """The logs above pass with the spec's rule; with the rule edited in the spec, the model
    (which reads it) and the runtime part ways: the test ties the runtime to the spec's text."""
    quick = not log.startswith("long")
    follow(SEQUENCES[log], queries=quick)
    text = (ROOT / "spec" / "clauses.toml").read_text()
    assert text.count(old) == 1, old
    edited = tmp_path / "clauses.toml"
    edited.write_text(text.replace(old, new))
    monkeypatch.setattr(Model, "lineage", spec_lineage(edited))
    with pytest.raises(AssertionError):
        follow(SEQUENCES[log], queries=quick)


# -- every small session resumes exactly (bounded exhaustive) ---------------------------------------

def _small_actions(m: Model) -> list[dict[str, Any]]:
    """What may happen next in a session of at most 3 offsets: an append, a truncation or a spill
    at either end, a compaction under each lineage (defaults, none seen, each summary seen or kept
    alone), an eviction of each summary in the context."""
    a, tr, sp, ev, c = lv.append, lv.truncate, lv.spill, lv.evict, lv.compact
    n = m.n
    out: list[dict[str, Any]] = [a(1)] if n < 3 else []
    if n:
        out += [tr(0, 1), tr(n - 1, n), sp(n - 1, n), sp(0, n)]
        lineages: list[tuple[list[str] | None, list[str]]] = [(None, []), ([], [])]
        lineages += [([s], []) for s in m.context] + [([], [s]) for s in m.context]
        out += [c((0, n), (0, n - 1), n - 1, saw=saw, keeps=keeps) for saw, keeps in lineages]
        out += [ev(s) for s in m.context]
    return out


def _probe(led: Ledger | None, m: Model) -> list[Any]:
    """Decisions of next compactions (tail at n and one before) under every lineage query,
    strict and partitioned: the ledger's, or (``led`` None) the generated checker's on the
    model's equivalent case."""
    n = m.n
    out = []
    for t in sorted({n, max(0, n - 1)}):
        i, c = (0, n), (max(0, t - 2), t)
        nxt = {"event": "compact", "summary_input": list(i), "summary_covers": list(c), "tail_start": t}
        for s, k in m.queries(nxt):
            for p in ("strict", "partitioned"):
                out.append(check_case(m.case(nxt, s, k), p) if led is None else
                           led._core.decide(p, t, i, c, None if s is None else tuple(s), tuple(k)))
    return out


def test_every_small_session_resumes_exactly() -> None:
    """Every session of up to five events over at most 3 offsets (4,900 of them): the ledger
    that wrote it, ``from_log`` of its log and ``restore`` of its snapshot hold the same state
    (the model's, evictions and keeps included) and decide every next compaction alike, as the
    generated checker decides the equivalent case."""
    from tailguard.runtime.snapshot import _decisive

    header = lv.session(1)
    checked = 0

    def visit(path: list[dict[str, Any]]) -> None:
        nonlocal checked
        led, out, m = drive([header, *path], queries=False)
        again = Ledger.from_log(io.StringIO(out.getvalue()), profile="partitioned")
        restored = Ledger.restore(led.snapshot())
        want = (_decisive(led._core), list(led._core.recovered), list(led._core.lost), _probe(led, m))
        assert want[3] == _probe(None, m), ("the writer decides as the checker", path)
        for name, other in (("from_log", again), ("restore", restored)):
            assert state_problem(other._core, m) is None, (name, state_problem(other._core, m), path)
            got = (_decisive(other._core), list(other._core.recovered), list(other._core.lost), _probe(other, m))
            assert got == want, (name, path)
        checked += 1
        if len(path) < 5:
            for nxt in _small_actions(m):
                visit([*path, nxt])

    visit([])
    assert checked > 3000, checked
