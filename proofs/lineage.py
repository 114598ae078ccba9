"""Summary lineage (brief section 4c; theorem 14): which summaries' coverage a compaction can count.

Spec 1.0 (SPEC.md 9.3) counts the honest part ``(C_j ∩ I_j) \\ TRU_j`` of every earlier
compaction ``j`` as prior coverage forever. Spec 1.1 follows the summaries: compaction ``k``
creates ``S_k`` with effective coverage ``E(S_k) = ((C_k ∩ I_k) \\ TRU_k) ∪ ⋃{E(S_j) : j ∈ saw_k}``,
its case's prior coverage is ``⋃{E(S_j) : j ∈ saw_k ∪ keeps_k}``, and every summary neither seen
nor kept leaves the context. Defaults: ``saw`` = every summary in the context, ``keeps`` = none.

The rule is written once, in the ``[lineage]`` table of spec/clauses.toml; :func:`spec_rule`
encodes its two expressions as written (a break test edits them). The theorems take the rule
as a parameter: a :data:`LineageRule` maps one compaction (:class:`Step`, sets as
offset predicates, summaries named by their ordinals) to its :class:`Effect`. The machinery
around it is fixed: ``E(S_j)`` never changes once ``S_j`` exists (a summary is a block the
truncator never touches), ``S_k`` joins the context, and an earlier summary stays only if it
was in the context and the rule keeps it. Appends, truncations and spills between
compactions change no summary and no context (truncations enter through ``TRU_k``); the one
other event that does, ``evict_summary``, is outside T14 (the defaults' theorem assumes none).

- **T14** under the defaults the rule's prior coverage equals 1.0's at every compaction: by
  induction on the number of compactions, offset by offset, for any sets ``C_k ∩ I_k`` and
  ``TRU_k`` (so any number of intervals) and any number of summaries in the context. A
  replaced rule is first run on concrete sessions of up to :data:`BMC_COMPACTIONS`
  compactions, so that a wrong one gets a concrete session as its counterexample.
- **T14w** a session whose later compaction did not see the earlier summary: 1.0's rule
  allows every compaction, the lineage rule refuses the later one with a hole. Printed as the
  event log (SPEC.md 9 with the 1.1 keys) and the equivalent cases, replayed through the
  generated checker and, the log itself, through the audit (``tailguard.audit.replay.replay``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from proofs._common import project_spec, replayed, setup
from tailguard._generated.checker import Decision
from tailguard.audit import replay as audit_replay
from tailguard.backends.z3_encode import Encoder, FixedList, ZCase, case_from_model, fresh_int
from tailguard.backends.z3_eval import find, prove
from tailguard.runtime import eventlog
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import Result, theorem

SetPred = Callable[[Any], Any]  # offset -> BoolRef
IdPred = Callable[[Any], Any]  # summary ordinal -> BoolRef

#: Compactions per session in the counterexample search that precedes T14's induction.
BMC_COMPACTIONS = 3
#: Offsets in the sessions searched and printed (readable logs).
MAX_OFFSET = 60
#: Intervals per prior_coverage list in T14w's cases.
PC_BOUND = 2


@dataclass(frozen=True)
class Step:
    """Compaction ``k`` as a lineage rule sees it, before it commits.

    ``S_j`` is the summary compaction ``j`` created (``j < k``); ``saw`` and ``keeps`` name
    summaries in the context (the machinery assumes it: naming another is an input error).
    """

    k: Any  # ordinal of the new summary S_k
    honest_raw: SetPred  # C_k ∩ I_k
    truncated: SetPred  # TRU_k: every truncation before compaction k
    in_context: IdPred
    saw: IdPred
    keeps: IdPred
    union_of: Callable[[IdPred], SetPred]  # which -> ⋃{E(S_j) : j < k, which(j)}


@dataclass(frozen=True)
class Effect:
    """What compaction ``k`` does, by the rule."""

    prior_coverage: SetPred  # the prior_coverage of compaction k's case
    coverage: SetPred  # E(S_k)
    stays: IdPred  # earlier summaries (in the context) still in it after k commits


LineageRule = Callable[[Step], Effect]


def spec_rule(spec: Spec) -> LineageRule:
    """The rule of ``spec``'s ``[lineage]`` table (spec/clauses.toml), encoded as written: ``E(S_k)``
    and the prior coverage are its two set expressions over ``C``, ``I`` and ``TRU`` (compaction
    k's; ``C`` is bound to ``C_k ∩ I_k`` and ``I`` to every offset, so the rule is proved for any
    set ``C ∩ I``), ``SEEN`` (the union over ``saw``) and ``KEPT`` (over ``keeps``). What stays in
    the context is ``keeps`` (SPEC.md 10: the structure, not an expression)."""
    lin = spec.lineage
    if lin is None:
        raise ValueError(f"{spec.path} has no [lineage] table: the lineage rule is written there")
    enc = Encoder(spec, ZCase({}))  # every name a lineage expression may use is bound below

    def rule(s: Step) -> Effect:
        local = {"C": s.honest_raw, "I": lambda x: z3.BoolVal(True), "TRU": s.truncated,
                 "SEEN": s.union_of(s.saw), "KEPT": s.union_of(s.keeps)}
        return Effect(prior_coverage=enc.as_set(lin.prior_coverage, local),
                      coverage=enc.as_set(lin.effective_coverage, local), stays=s.keeps)

    return rule


def lineage_rule(s: Step) -> Effect:
    """The project spec's rule (:func:`spec_rule` of spec/clauses.toml)."""
    return spec_rule(project_spec())(s)


def _never(_: Any) -> Any:
    return z3.BoolVal(False)


# --- T14: any number of compactions, by induction -------------------------------------------------

def _symbolic_union(e: Callable[[Any, Any], Any], k: Any) -> Callable[[IdPred], SetPred]:
    def union_of(which: IdPred) -> SetPred:
        def mem(x: Any) -> Any:
            j = fresh_int("j")
            return z3.Exists([j], z3.And(j >= 0, j < k, which(j), e(j, x)))
        return mem
    return union_of


def _invariant(k: Any, ctx: IdPred, e: Callable[[Any, Any], Any], old: SetPred) -> Any:
    """Before compaction ``k``: only earlier summaries are in the context, and the union of
    their effective coverage is, offset by offset, 1.0's prior coverage ``old``."""
    j, x = fresh_int("j"), fresh_int("x")
    return z3.And(
        z3.ForAll([j], z3.Implies(ctx(j), z3.And(j >= 0, j < k))),
        z3.ForAll([x], _symbolic_union(e, k)(ctx)(x) == old(x)),
    )


def _induction(rule: LineageRule) -> Result:
    ints, b = z3.IntSort(), z3.BoolSort()
    k = z3.Int("k")
    e_fn = z3.Function("E", ints, ints, b)  # E(S_j) at offset x, for j < k
    ctx_fn, old_fn = z3.Function("ctx", ints, b), z3.Function("old", ints, b)
    raw_fn, tru_fn = z3.Function("CI", ints, b), z3.Function("TRU", ints, b)

    def e(j: Any, x: Any) -> Any:
        return e_fn(j, x)

    def ctx(j: Any) -> Any:
        return ctx_fn(j)

    def old(x: Any) -> Any:
        return old_fn(x)

    base, _ = prove(_invariant(z3.IntVal(0), _never, e, _never), sanity=False)
    if base.status != "proved":
        return Result(base.status, detail=f"induction base (no compaction yet): {base.detail}")
    eff = rule(Step(k, raw_fn, tru_fn, ctx, ctx, _never, _symbolic_union(e, k)))

    def e_next(j: Any, x: Any) -> Any:
        return z3.If(j == k, eff.coverage(x), e_fn(j, x))

    def ctx_next(j: Any) -> Any:
        return z3.Or(j == k, z3.And(ctx_fn(j), eff.stays(j)))

    def old_next(x: Any) -> Any:  # SPEC.md 9.3: compaction k's honest part joins 1.0's prior coverage
        return z3.Or(old_fn(x), z3.And(raw_fn(x), z3.Not(tru_fn(x))))

    x = z3.Int("x")
    equal_now = z3.ForAll([x], eff.prior_coverage(x) == old_fn(x))
    # The step's assumptions are satisfiable: k = 0 with ctx and old empty satisfies them for
    # every E, which is what the base proved. So no separate non-vacuity query (a satisfiable
    # query over uninterpreted functions that cvc5 needs minutes to model).
    step, _ = prove(z3.And(equal_now, _invariant(k + 1, ctx_next, e_next, old_next)),
                    assumptions=z3.And(k >= 0, _invariant(k, ctx, e, old)), sanity=False)
    if step.status == "counterexample" and step.detail.startswith("vacuous"):
        return step
    if step.status != "proved":
        # a model of the negated step is a state the invariant admits, not necessarily one a
        # session reaches: it refutes this proof, not the theorem
        return Result("unknown", detail=f"induction step (prior coverage of compaction k equal, invariant "
                      f"kept) not proved: {step.detail}")
    return Result("proved", detail="base and step: for any number of compactions")


# --- concrete sessions: counterexamples to T14, the witness T14w ----------------------------------

@dataclass(frozen=True)
class Session:
    """A symbolic session of ``len(n)`` compactions: before compaction ``k`` the history grows
    to ``n[k]`` and ``tr[k]`` is truncated (``None``: nothing); then ``k`` compacts. ``saw[k]``
    and ``keeps[k]``: one Bool per earlier summary, or None for the default."""

    f: Any
    n: Sequence[Any]
    t: Sequence[Any]
    inputs: Sequence[tuple[Any, Any]]
    covers: Sequence[tuple[Any, Any]]
    tr: Sequence[tuple[Any, Any] | None]
    saw: Sequence[Sequence[Any] | None]
    keeps: Sequence[Sequence[Any] | None]

    @staticmethod
    def symbolic(prefix: str, compactions: int, *, truncations: bool,
                 saw: Sequence[Sequence[Any] | None] | None = None,
                 keeps: Sequence[Sequence[Any] | None] | None = None) -> Session:
        def pair(name: str) -> tuple[Any, Any]:
            return (z3.Int(f"{name}.lo"), z3.Int(f"{name}.hi"))

        ks = range(compactions)
        return Session(
            z3.Int(f"{prefix}F"), [z3.Int(f"{prefix}n{k}") for k in ks], [z3.Int(f"{prefix}t{k}") for k in ks],
            [pair(f"{prefix}I{k}") for k in ks], [pair(f"{prefix}C{k}") for k in ks],
            [pair(f"{prefix}TR{k}") if truncations else None for k in ks],
            list(saw) if saw is not None else [None] * compactions,
            list(keeps) if keeps is not None else [None] * compactions,
        )

    def well_formed(self) -> Any:
        """A session a ledger could write, small enough to read."""
        parts = [self.f >= 0, self.f <= MAX_OFFSET]
        prev: Any = z3.IntVal(0)
        for k, n in enumerate(self.n):
            parts += [n >= prev, n <= MAX_OFFSET, self.t[k] >= 0, self.t[k] <= n]
            pairs = [self.inputs[k], self.covers[k]] + ([p] if (p := self.tr[k]) is not None else [])
            parts += [z3.And(lo >= 0, lo <= hi, hi <= n) for lo, hi in pairs]
            prev = n
        return z3.And(parts)


def _pick(flags: Sequence[Any]) -> IdPred:
    return lambda j: z3.Or([z3.And(j == i, f) for i, f in enumerate(flags)] or [z3.BoolVal(False)])


def _in(pair: tuple[Any, Any]) -> SetPred:
    return lambda x: z3.And(pair[0] <= x, x < pair[1])


def _both(p: SetPred, q: SetPred) -> SetPred:
    return lambda x: z3.And(p(x), q(x))


def _minus(p: SetPred, q: SetPred) -> SetPred:
    return lambda x: z3.And(p(x), z3.Not(q(x)))


def _const(flag: Any) -> SetPred:
    return lambda _: flag


def _any(preds: Sequence[SetPred]) -> SetPred:
    frozen = tuple(preds)
    return lambda x: z3.Or([p(x) for p in frozen] or [z3.BoolVal(False)])


@dataclass(frozen=True)
class Run:
    """Per compaction: the rule's prior coverage, 1.0's, and what names must hold (saw and
    keeps name summaries in the context)."""

    lineage: list[SetPred]
    v1: list[SetPred]
    valid: Any


def run(rule: LineageRule, s: Session) -> Run:
    coverage: list[SetPred] = []  # E(S_j)
    ctx: list[Any] = []  # S_j in the context
    honest: list[SetPred] = []  # 1.0: (C_j ∩ I_j) \ TRU_j
    lineage: list[SetPred] = []
    v1: list[SetPred] = []
    valid: list[Any] = []
    for k in range(len(s.n)):
        tru = _any([_in(p) for p in s.tr[: k + 1] if p is not None])
        raw = _both(_in(s.inputs[k]), _in(s.covers[k]))
        in_ctx = _pick(ctx)
        saw_flags, keep_flags = s.saw[k], s.keeps[k]
        saw = in_ctx if saw_flags is None else _pick(saw_flags)
        keeps = _never if keep_flags is None else _pick(keep_flags)
        for flags in (saw_flags, keep_flags):
            if flags is not None:
                valid += [z3.Implies(f, c) for f, c in zip(flags, ctx, strict=True)]
        frozen = tuple(coverage)

        def union_of(which: IdPred, frozen: tuple[SetPred, ...] = frozen) -> SetPred:
            return _any([_both(_const(which(z3.IntVal(j))), e) for j, e in enumerate(frozen)])

        eff = rule(Step(z3.IntVal(k), raw, tru, in_ctx, saw, keeps, union_of))
        lineage.append(eff.prior_coverage)
        v1.append(_any(honest))
        honest.append(_minus(raw, tru))
        ctx = [z3.And(c, eff.stays(z3.IntVal(j))) for j, c in enumerate(ctx)] + [z3.BoolVal(True)]
        coverage.append(eff.coverage)
    return Run(lineage, v1, z3.And(valid) if valid else z3.BoolVal(True))


def _val(model: Any, term: Any) -> int:
    return int(model.eval(term, model_completion=True).as_long())


def _runs(model: Any, pred: SetPred, n: int) -> list[list[int]]:
    out: list[list[int]] = []
    for x in range(max(0, n)):
        if z3.is_true(model.eval(pred(z3.IntVal(x)), model_completion=True)):
            if out and out[-1][1] == x:
                out[-1][1] = x + 1
            else:
                out.append([x, x + 1])
    return out


def event_log(model: Any, s: Session, *, lineage_keys: bool = True) -> list[dict[str, Any]]:
    """The session as SPEC.md section 9 events (with the 1.1 keys ``summary``, ``saw``, ``keeps``
    where they are not the default, when ``lineage_keys``)."""
    events: list[dict[str, Any]] = [{"event": "session", "unit": "turns", "recovery_floor_span": _val(model, s.f),
                                     "floor_unit": "turns", "truncator_unit": "turns"}]
    prev = 0
    for k, n_term in enumerate(s.n):
        n = _val(model, n_term)
        if n > prev:
            events.append({"event": "append", "count": n - prev})
        prev = n
        p = s.tr[k]
        if p is not None and _val(model, p[0]) < _val(model, p[1]):
            events.append({"event": "truncate", "range": [_val(model, p[0]), _val(model, p[1])]})
        ev: dict[str, Any] = {"event": "compact", "summary_input": [_val(model, v) for v in s.inputs[k]],
                              "summary_covers": [_val(model, v) for v in s.covers[k]],
                              "tail_start": _val(model, s.t[k])}
        if lineage_keys:
            ev["summary"] = str(k)
            for key, flags in (("saw", s.saw[k]), ("keeps", s.keeps[k])):
                if flags is not None:
                    ev[key] = [str(j) for j, f in enumerate(flags) if z3.is_true(model.eval(f, model_completion=True))]
        events.append(ev)
    return events


def _bmc(rule: LineageRule, compactions: int) -> Result:
    """Sessions of ``compactions`` compactions, defaults, no evictions: the rule's prior
    coverage equals 1.0's at every compaction, at every offset."""
    s = Session.symbolic("s.", compactions, truncations=True)
    r = run(rule, s)
    x = z3.Int("x")
    claim = z3.And([lin(x) == v1(x) for lin, v1 in zip(r.lineage, r.v1, strict=True)])
    result, model = prove(claim, assumptions=z3.And(s.well_formed(), r.valid))
    if result.status != "counterexample" or model is None:
        return result
    k = next(i for i, (lin, v1) in enumerate(zip(r.lineage, r.v1, strict=True))
             if not z3.is_true(model.eval(lin(x) == v1(x), model_completion=True)))
    n = _val(model, s.n[k])
    return Result("counterexample", detail=f"compaction {k} (0-based) of this session, offset {_val(model, x)}",
                  model={"events": event_log(model, s), "compaction": k, "offset": _val(model, x),
                         "lineage_prior_coverage": _runs(model, r.lineage[k], n),
                         "v1_prior_coverage": _runs(model, r.v1[k], n)})


@theorem(
    "T14", "With the default saw and keeps, lineage gives 1.0's prior coverage",
    "With saw = every summary in the context, keeps = none and no evict_summary event, the lineage "
    "rule of spec/clauses.toml ([lineage], encoded as written) gives every compaction 1.0's prior "
    "coverage (the union of every earlier compaction's "
    "honest part (C_j ∩ I_j) \\ TRU_j), for any number of compactions (induction on compactions, "
    "offset by offset, for any sets C_k ∩ I_k and TRU_k and any number of summaries in the context).",
)
def defaults_give_v1_coverage(spec: Spec | None = None, rule: LineageRule | None = None) -> Result:
    spec = setup(spec)
    rule = rule or spec_rule(spec)
    bmc = _bmc(rule, BMC_COMPACTIONS)
    if bmc.status != "proved":
        return Result(bmc.status, detail=f"sessions of {BMC_COMPACTIONS} compactions: {bmc.detail}", model=bmc.model)
    ind = _induction(rule)
    if ind.status != "proved":
        deeper = _bmc(rule, 2 * BMC_COMPACTIONS)  # look for a session that really breaks it
        if deeper.status == "counterexample":
            return Result("counterexample", detail=f"{ind.detail}; sessions of {2 * BMC_COMPACTIONS} "
                          f"compactions: {deeper.detail}", model=deeper.model)
        return Result(ind.status, detail=f"no counterexample in {2 * BMC_COMPACTIONS} compactions, but {ind.detail}")
    return Result("proved", detail=f"no counterexample in {BMC_COMPACTIONS} compactions; {ind.detail}")


# --- T14w ---------------------------------------------------------------------------------------

def _case(spec: Spec, s: Session, k: int, pc: SetPred, name: str) -> tuple[ZCase, Any]:
    """Compaction k's case with a prior_coverage list (at most PC_BOUND intervals) whose union
    is ``pc``; the session has no truncations and no spills."""
    lst = FixedList.symbolic(f"{name}.PC", PC_BOUND)
    values: dict[str, Any] = {"n": s.n[k], "t": s.t[k], "I": s.inputs[k], "C": s.covers[k], "F": s.f,
                              "floor_unit": z3.IntVal(0), "truncator_unit": z3.IntVal(0),
                              "TR": FixedList([]), "PC": lst, "SP": FixedList([])}
    zc = ZCase({inp.symbol: values[inp.symbol] for inp in spec.inputs})
    x = fresh_int("x")
    used = [z3.IntVal(i) < lst.length for i in range(PC_BOUND)]
    normal = [z3.Implies(used[i], lst.pairs[i][0] < lst.pairs[i][1]) for i in range(PC_BOUND)]
    normal += [z3.Implies(used[i + 1], lst.pairs[i][1] < lst.pairs[i + 1][0]) for i in range(PC_BOUND - 1)]
    return zc, z3.And(lst.wf(), *normal, z3.ForAll([x], lst.mem(x) == pc(x)))


def _v1_prior_coverage(events: list[dict[str, Any]]) -> list[set[int]]:
    """SPEC.md 9.3, on offsets: the 1.0 prior coverage of each compact line of a log."""
    truncated: set[int] = set()
    honest: set[int] = set()
    out = []
    for ev in events:
        if ev["event"] == "truncate":
            truncated |= set(range(*ev["range"]))
        elif ev["event"] == "compact":
            out.append(set(honest))
            honest |= (set(range(*ev["summary_input"])) & set(range(*ev["summary_covers"]))) - truncated
    return out


def _offsets(pairs: list[list[int]]) -> set[int]:
    return {x for lo, hi in pairs for x in range(lo, hi)}


def _audit(events: list[dict[str, Any]], profile: str) -> list[Decision]:
    """Replay the log through the runtime audit (``tailguard.audit.replay.replay``): its decisions."""
    lines = [json.dumps(ev) for ev in events]
    return [v.decision for v in audit_replay.replay(eventlog.iter_events(lines), profile=profile)
            if isinstance(v, audit_replay.Verdict)]


@theorem(
    "T14w", "A summary the later summarizer never saw: 1.0 allows, lineage refuses with a hole",
    "Witness: a session of three compactions without truncations whose second compaction did not see "
    "(nor keep) the first one's summary and whose third saw every summary in the context (the default); "
    "1.0's prior coverage lets strict and partitioned allow all three, the lineage rule's makes both "
    "refuse the second and the third with no_hole and a hole. The third's verdict depends on the second "
    "summary's coverage: counted as if the second summarizer had seen the first summary, it is allowed. "
    "Printed as the event log and the equivalent cases, replayed through the generated checker and the audit.",
    kind="witness",
)
def unseen_summary_is_a_hole(spec: Spec | None = None, rule: LineageRule | None = None) -> Result:
    spec = setup(spec)
    rule = rule or spec_rule(spec)
    seen, kept = z3.Bool("saw1.0"), z3.Bool("keeps1.0")
    s = Session.symbolic("w.", 3, truncations=False, saw=[None, [seen], None], keeps=[None, [kept], None])
    r = run(rule, s)
    contract = [spec.profile(p) for p in ("strict", "partitioned")]
    # 1.0's cases (every earlier honest part), and the rule's; at the third compaction with no
    # truncation, 1.0's prior coverage is also what a second summary that counted the first one's
    # coverage (saw read as the whole context) would give: the wrong new-summary coverage
    names = [("first", 0, r.v1[0]), ("second_v1", 1, r.v1[1]), ("third_v1", 2, r.v1[2]),
             ("first_lineage", 0, r.lineage[0]), ("second_lineage", 1, r.lineage[1]),
             ("third_lineage", 2, r.lineage[2])]
    built = {name: _case(spec, s, k, pc, name) for name, k, pc in names}
    encs = {name: Encoder(spec, zc) for name, (zc, _) in built.items()}
    # the story of brief 4c: the history grows between the compactions, each summary ends where
    # its tail starts, and each later summarizer's input starts at the previous tail: the first
    # summary is all that held [c0, t0), the second summarizer never saw it, the third saw only
    # the second summary (the first had left the context)
    story = z3.And(s.f > 0, *[s.n[k] < s.n[k + 1] for k in (0, 1)],
                   *[z3.And(s.inputs[k][0] == s.t[k - 1], s.covers[k][0] == s.t[k - 1]) for k in (1, 2)],
                   *[z3.And(s.covers[k][0] < s.covers[k][1], s.covers[k][1] == s.t[k], s.t[k] < s.n[k])
                     for k in (0, 1, 2)])
    refuses_with_hole = [z3.And(encs[c].clause(p, p.wellformed), z3.Not(encs[c].clause(p, "no_hole")))
                         for c in ("second_lineage", "third_lineage") for p in contract]
    formula = z3.And(
        s.well_formed(), r.valid, z3.Not(seen), story, *[pc for _, pc in built.values()],
        *[encs[c].allows(p) for c in ("first", "second_v1", "third_v1", "first_lineage") for p in contract],
        *refuses_with_hole,
    )
    result, model = find(formula)
    if result.status != "witness":
        return result
    events = event_log(model, s)
    shown = {"first": "first", "second_v1": "second_1.0", "third_v1": "third_1.0",
             "second_lineage": "second_lineage", "third_lineage": "third_lineage"}
    cases = {label: case_from_model(spec, built[name][0], model) for name, label in shown.items()}
    v1_expected = _v1_prior_coverage(events)

    def expect(c: dict[str, dict[str, Any]], d: dict[str, dict[str, Decision]]) -> str | None:
        for name, k in (("first", 0), ("second_1.0", 1), ("third_1.0", 2)):
            if _offsets(c[name]["prior_coverage"]) != v1_expected[k]:
                return f"{name}: prior_coverage {c[name]['prior_coverage']} is not SPEC.md 9.3's"
        for p in ("strict", "partitioned"):
            if not all(d[name][p].allowed for name in ("first", "second_1.0", "third_1.0")):
                return f"{p}: 1.0's cases {d['first'][p]}, {d['second_1.0'][p]}, {d['third_1.0'][p]}"
            for name in ("second_lineage", "third_lineage"):
                lin = d[name][p]
                if lin.allowed or "no_hole" not in lin.failed or not lin.holes:
                    return f"{p}: {name} case {lin}"
        for p in ("strict", "partitioned"):
            with_lineage = _audit(events, p)
            as_v1 = _audit(event_log(model, s, lineage_keys=False), p)
            if not all(v.allowed for v in as_v1):
                return f"audit {p} of the log without saw/keeps (1.0's meaning): {as_v1}"
            want = [d["first"][p], d["second_lineage"][p], d["third_lineage"][p]]
            if with_lineage != want:
                return f"audit {p} of the log: {with_lineage}, checker: {want}"
        return None

    result = replayed(spec, cases, expect, model={"events": events, "cases": cases})
    if result.status == "witness":
        result = dataclasses.replace(result, detail=f"{result.detail}, and the log through the audit "
                                     "(strict, partitioned): agrees at all three compactions")
    return result


# --- T14k: a kept summary counts ----------------------------------------------------------------

def _without_keeps(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The log with every ``keeps`` key removed (a ledger that ignores keeps reads it so)."""
    return [{k: v for k, v in ev.items() if k != "keeps"} for ev in events]


@theorem(
    "T14k", "A summary kept beside the new one still counts; dropped, it is a hole",
    "Witness: a session of three compactions without truncations whose second compaction saw no summary "
    "but kept the first one in the context, and whose third saw every summary in the context (the "
    "default). By the spec's lineage rule (spec/clauses.toml [lineage]) strict and partitioned allow all "
    "three; with the keeps ignored (prior coverage without KEPT, the kept summary leaving the context) "
    "both refuse the second and the third with no_hole and a hole. Printed as the event log and the "
    "equivalent cases, replayed through the generated checker, and the log (with and without its keeps) "
    "through the audit.",
    kind="witness",
)
def kept_summary_counts(spec: Spec | None = None, rule: LineageRule | None = None) -> Result:
    spec = setup(spec)
    rule = rule or spec_rule(spec)
    seen, kept = z3.Bool("saw1.0"), z3.Bool("keeps1.0")
    s = Session.symbolic("k.", 3, truncations=False, saw=[None, [seen], None], keeps=[None, [kept], None])
    r = run(rule, s)
    dropped = run(rule, dataclasses.replace(s, keeps=[None, [z3.BoolVal(False)], None]))
    contract = [spec.profile(p) for p in ("strict", "partitioned")]
    names = [("first", 0, r.lineage[0]), ("second", 1, r.lineage[1]), ("third", 2, r.lineage[2]),
             ("second_keeps_ignored", 1, dropped.lineage[1]), ("third_keeps_ignored", 2, dropped.lineage[2])]
    built = {name: _case(spec, s, k, pc, name) for name, k, pc in names}
    encs = {name: Encoder(spec, zc) for name, (zc, _) in built.items()}
    # as in T14w's story: each later summarizer's input starts at the previous tail, so the second
    # never saw what the first summary holds; here it keeps that summary in the context instead
    story = z3.And(s.f > 0, *[s.n[k] < s.n[k + 1] for k in (0, 1)],
                   *[z3.And(s.inputs[k][0] == s.t[k - 1], s.covers[k][0] == s.t[k - 1]) for k in (1, 2)],
                   *[z3.And(s.covers[k][0] < s.covers[k][1], s.covers[k][1] == s.t[k], s.t[k] < s.n[k])
                     for k in (0, 1, 2)])
    refuses_with_hole = [z3.And(encs[c].clause(p, p.wellformed), z3.Not(encs[c].clause(p, "no_hole")))
                         for c in ("second_keeps_ignored", "third_keeps_ignored") for p in contract]
    formula = z3.And(
        s.well_formed(), r.valid, z3.Not(seen), kept, story, *[pc for _, pc in built.values()],
        *[encs[c].allows(p) for c in ("first", "second", "third") for p in contract],
        *refuses_with_hole,
    )
    result, model = find(formula)
    if result.status != "witness":
        return result
    events = event_log(model, s)
    cases = {name: case_from_model(spec, built[name][0], model) for name, _, _ in names}

    def expect(c: dict[str, dict[str, Any]], d: dict[str, dict[str, Decision]]) -> str | None:
        for p in ("strict", "partitioned"):
            if not all(d[name][p].allowed for name in ("first", "second", "third")):
                return f"{p}: the lineage cases {d['first'][p]}, {d['second'][p]}, {d['third'][p]}"
            for name in ("second_keeps_ignored", "third_keeps_ignored"):
                got = d[name][p]
                if got.allowed or "no_hole" not in got.failed or not got.holes:
                    return f"{p}: {name} case {got}"
            with_keeps = _audit(events, p)
            want = [d["first"][p], d["second"][p], d["third"][p]]
            if with_keeps != want:
                return f"audit {p} of the log: {with_keeps}, checker: {want}"
            without = _audit(_without_keeps(events), p)
            want = [d["first"][p], d["second_keeps_ignored"][p], d["third_keeps_ignored"][p]]
            if without != want:
                return f"audit {p} of the log without its keeps: {without}, checker: {want}"
        return None

    result = replayed(spec, cases, expect, model={"events": events, "cases": cases})
    if result.status == "witness":
        result = dataclasses.replace(result, detail=f"{result.detail}, and the log through the audit "
                                     "(strict, partitioned), with and without its keeps: agrees at all three "
                                     "compactions")
    return result
