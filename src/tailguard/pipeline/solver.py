"""z3 engine: bounded search for the shortest failing session, and an inductive
invariant (found by z3's Spacer, then re-checked with a plain solver) for ``safe``.

A ``safe`` verdict needs a certificate ``Inv`` with: the empty session in ``Inv``;
``Inv`` closed under every clean append; no append from ``Inv`` reaches a finding.
By induction on the number of appends no session of any length reaches a finding.
A bounded search alone never says safe; every budget that runs out says so.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import z3

from tailguard.pipeline.encode import (
    PLAIN,
    AState,
    basic,
    encode_step,
    fresh_state,
    init_state,
    needed_window,
    shape_of,
)
from tailguard.pipeline.falsify import STEPS as FALSIFY_STEPS, falsify
from tailguard.pipeline.houdini import houdini
from tailguard.pipeline.model import (
    DEFAULT_PROFILE,
    Finding,
    Profile,
    Session,
    canonical_session,
    inert,
    replay,
    spill_modes,
    with_static,
)
from tailguard.pipeline.policy import ClipArgs, Compact, Policy, Truncate
from tailguard.pipeline.shrink import shrink

Verdict = Literal["safe", "unsafe", "unknown"]


MILLION = 1_000_000
DEFAULT_BUDGET = 100  # check-config --budget: millions of z3 resource units (rlimit)
FALSIFY_PER_UNIT = FALSIFY_STEPS // DEFAULT_BUDGET  # falsifier model appends per --budget unit
CONFIRM_PER_UNIT = 50_000  # z3 units per --budget unit for a shorter session than the falsifier's
CONFIRM_DEPTHS = 50  # depths the bounded search may go beyond its own to look for one


@dataclass(frozen=True)
class Budget:
    """Solver budgets, every one counted in z3 resource units (``rlimit``), never in
    time, so that a verdict does not depend on the machine's load: ``depth`` appends of
    bounded search; ``rlimit`` per solver query (one depth of the bounded search, one
    certificate obligation, one Houdini round); ``spacer_rlimit`` for the invariant
    search; ``search_rlimit`` for the bounded search beyond ``quick_depth`` before the
    invariant search starts (it ends at the first depth whose cumulative count passes it,
    and resumes after). ``units`` is the ``--budget`` figure the three came from;
    ``falsify_steps`` (600 a unit) the model appends the concrete falsifier may run, and
    as many again for shrinking its session (:mod:`tailguard.pipeline.shrink`), counted in
    work like the rest; ``falsify_depth`` (``--depth`` when given) the longest falsifier
    session reported (``None``: any its steps reach); ``confirm_rlimit`` (50,000 a unit) the
    z3 units the bounded search may spend, below a falsifier session's length, looking for
    a shorter one (each query and in all)."""

    depth: int = 150
    quick_depth: int = 16
    rlimit: int = DEFAULT_BUDGET * MILLION
    spacer_rlimit: int = DEFAULT_BUDGET * MILLION
    search_rlimit: int = DEFAULT_BUDGET * MILLION
    max_window: int = 24
    units: int = DEFAULT_BUDGET
    falsify_steps: int = DEFAULT_BUDGET * FALSIFY_PER_UNIT  # model appends the falsifier may run
    falsify_depth: int | None = None  # --depth given: no longer falsifier session is reported
    confirm_rlimit: int = DEFAULT_BUDGET * CONFIRM_PER_UNIT

    @classmethod
    def of(cls, units: int = DEFAULT_BUDGET, depth: int | None = None) -> Budget:
        """The budget ``check-config --budget units [--depth depth]`` sets: a ``--depth``
        bounds every search, the falsifier's sessions included; without it the bounded search
        goes to 150 appends and the falsifier's sessions are bounded by its steps alone."""
        each = units * MILLION
        return cls(depth=150 if depth is None else depth, rlimit=each, spacer_rlimit=each,
                   search_rlimit=each, units=units, falsify_steps=units * FALSIFY_PER_UNIT,
                   falsify_depth=depth, confirm_rlimit=units * CONFIRM_PER_UNIT)


@dataclass(frozen=True)
class Decision:
    """What the engine decided, with the replayed trace and how."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    trace: tuple[int, ...] = ()
    method: str = ""
    detail: str = ""
    seconds: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    profile: Profile = DEFAULT_PROFILE
    exhausted: str = ""  # unknown: the budget that ran out, "depth" or "budget" (--depth, --budget)
    notes: tuple[Finding, ...] = ()  # dead_stage notes (brief 6b): not findings
    messages: tuple[int, ...] = ()  # spec 1.1: messages of each append of ``trace`` (empty: the fewest)
    failures: tuple[int, ...] = ()  # spec 1.1: appends (1-based) at which the spill writes fail


def _rlimit_count(solver: Any) -> int:
    """Resource units the solver has spent (deterministic, unlike time)."""
    try:
        return int(solver.statistics().get_key_value("rlimit count"))
    except z3.Z3Exception:  # no check has run yet
        return 0


def _model_int(model: z3.ModelRef, term: Any) -> int:
    return int(model.eval(term, model_completion=True).as_long())


class Bmc:
    """Incremental bounded search over an exact window: shortest failing trace first."""

    def __init__(
        self, policy: Policy, width: int, rlimit: int, profile: Profile = DEFAULT_PROFILE
    ) -> None:
        self.policy = policy
        self.profile = profile
        self.width = width
        self.solver = z3.Solver()
        self.solver.set("rlimit", rlimit)
        self.solver.set("random_seed", 0)
        self.shape = shape_of(policy)
        self.state = init_state(0, self.shape)
        self.xs: list[Any] = []
        self.ys: list[Any] = []
        self.depth = 0
        self.clean = 0  # every session of at most this many appends is known clean
        self.used = 0  # z3 resource units spent so far (cumulative over the solver's checks)

    def deepen(self, check: bool = True) -> Session | Literal["unknown"] | None:
        """Try one more step; a session, ``None`` (no finding at this depth) or unknown.
        A session's spill writes all fail (the encoding's ``proceed`` spill). ``check=False``
        only adds the step, for a depth known clean (:func:`fails_late`). After ``unknown``
        the search cannot go on (the step was not added)."""
        self.depth += 1
        if len(self.state.w) < min(self.width, self.depth):  # d appends: at most d turns
            self.state = self.state.widen()
        x = z3.Int(f"x{self.depth}")
        st = encode_step(self.policy, self.state, x, f"b{self.depth}", self.profile)
        self.solver.add(st.input_ok)
        self.xs.append(x)
        if st.messages is not None:
            self.ys.append(st.messages)
        result: Any = z3.unsat
        self.solver.push()
        self.solver.add(z3.Or(*[b for _, b in st.bad]) if st.bad else z3.BoolVal(False))
        if check:
            result = self.solver.check()
            self.used = _rlimit_count(self.solver)
        trace = None
        if result == z3.sat:
            model = self.solver.model()
            fails = "proceed" in spill_modes(self.policy).values()
            trace = Session(tuple(_model_int(model, v) for v in self.xs),
                            tuple(_model_int(model, v) for v in self.ys),
                            frozenset(range(1, self.depth + 1)) if fails else frozenset())
        self.solver.pop()
        if result == z3.unknown:
            return "unknown"
        if result == z3.unsat:
            self.clean = self.depth
        self.solver.add(st.clean)
        fresh = fresh_state(f"b{self.depth}", len(st.nxt.w), self.shape)  # named, so terms stay small
        self.solver.add(*[a == b for a, b in zip(fresh.flat(), st.nxt.flat(), strict=True)])
        self.state = fresh
        return trace


def find_invariant(
    policy: Policy, width: int, budget: Budget, profile: Profile = DEFAULT_PROFILE
) -> tuple[str, Any]:
    """Run Spacer on the abstraction: ``("safe", Inv)`` with ``Var(i)`` the i-th state
    component, ``("unsafe", None)`` or ``("unknown", reason)``."""
    st = spacer_state(width, policy)
    x = z3.Int("x")
    step = encode_step(policy, st, x, "h", profile)
    sorts = [z3.IntSort()] * len(st.flat())
    inv = z3.Function("Inv", *sorts, z3.BoolSort())
    solver = z3.SolverFor("HORN")
    solver.set("rlimit", budget.spacer_rlimit)
    solver.set("random_seed", 0)
    solver.set("spacer.random_seed", 0)
    bound = st.flat() + step.inputs
    pre = z3.And(inv(*st.flat()), basic(policy, st), step.input_ok)
    solver.add(inv(*init_state(width, shape_of(policy)).flat()))
    solver.add(z3.ForAll(bound, z3.Implies(z3.And(pre, step.clean), inv(*step.nxt.flat()))))
    for _, b in step.bad:
        solver.add(z3.ForAll(bound, z3.Implies(z3.And(pre, b), False)))
    result = solver.check()
    if result == z3.sat:
        interp = solver.model()[inv]
        if isinstance(interp, z3.FuncInterp):
            if interp.num_entries():
                return "unknown", "invariant has point entries"
            return "safe", interp.else_value()
        return "safe", interp
    if result == z3.unsat:
        return "unsafe", None
    return "unknown", solver.reason_unknown()


def spacer_state(width: int, policy: Policy | None = None) -> AState:
    """The state variables Spacer's invariant is expressed over."""
    return fresh_state("s", width, shape_of(policy) if policy is not None else PLAIN)


def check_certificate(
    policy: Policy, width: int, inv_of: Any, rlimit: int, profile: Profile = DEFAULT_PROFILE
) -> str:
    """Re-check a certificate with a plain solver; returns "" when it holds, else why not.

    ``inv_of(state)`` gives the invariant over a state. Obligations: the empty session
    satisfies it and ``basic``; both are closed under clean appends; no append from
    them reaches a finding; and (non-vacuity) some clean append from them exists.
    """
    st = fresh_state("c", width, shape_of(policy))
    x = z3.Int("x")
    step = encode_step(policy, st, x, "v", profile)

    def cert(s: AState) -> Any:
        return z3.And(inv_of(s), basic(policy, s))

    pre = z3.And(cert(st), step.input_ok)
    obligations = {
        "initiation": z3.Not(cert(init_state(width, shape_of(policy)))),
        "consecution": z3.And(pre, step.clean, z3.Not(cert(step.nxt))),
        "safety": z3.And(pre, z3.Or(*[b for _, b in step.bad], z3.BoolVal(False))),
    }
    for name, query in obligations.items():
        s = z3.Solver()
        s.set("rlimit", rlimit)
        s.set("random_seed", 0)
        s.add(query)
        r = s.check()
        if r != z3.unsat:
            return f"{name} {'fails' if r == z3.sat else 'unknown (rlimit)'}"
    s = z3.Solver()
    s.set("rlimit", rlimit)
    s.set("random_seed", 0)
    s.add(pre, step.clean)
    if s.check() != z3.sat:
        return "vacuous: no clean append from the certificate"
    return ""


@contextmanager
def own_context() -> Iterator[None]:
    """Run in a z3 context of its own: z3py's default context is one process-wide global,
    and the terms, names and resource counts earlier checks left in it change the models
    (the traces) and the rlimit outcomes of later ones. A fresh context makes the same
    policy give the same verdict and trace whatever the process checked before."""
    saved = getattr(z3.z3, "_main_ctx", None)
    z3.z3._main_ctx = z3.Context()  # what z3.main_ctx() returns from now on
    try:
        yield
    finally:
        z3.z3._main_ctx = saved


def fails_late(policy: Policy, depth: int) -> bool:
    """Whether no stage can fire and no window overflow within ``depth`` appends: every
    token threshold (trigger, truncate limit, window) above ``base_tokens`` plus ``depth``
    largest turns, every turn or message threshold above ``depth`` turns of the most
    messages. Then every failing session is longer than ``depth`` (a loss needs a stage to
    fire or the window to overflow) and the bounded search up to ``depth`` could not find
    one; the concrete falsifier goes first (its session need not be the shortest)."""
    per = {"tokens": policy.turn_max, "turns": 1, "messages": policy.messages_per_turn[1]}
    start = {"tokens": policy.base_tokens, "turns": 0, "messages": 0}
    lowest: list[tuple[str, int]] = [("tokens", policy.window + 1)] if policy.window else []
    for s in policy.stages:
        if isinstance(s, Truncate):
            lowest.append((s.unit, s.limit + 1))
        elif isinstance(s, Compact):
            lowest += [pair for clause in s.clauses for pair in clause]
        elif isinstance(s, ClipArgs):
            lowest.append((s.trigger_unit, s.trigger))
    return bool(lowest) and all(t > start[u] + depth * per[u] for u, t in lowest)


def decide(
    policy: Policy,
    budget: Budget | None = None,
    *,
    ignore_static: bool = False,
    profile: Profile = DEFAULT_PROFILE,
) -> Decision:
    """The verdict for ``policy`` under ``profile``: safe (certified), unsafe (replayed
    trace) or unknown. A truncate stage whose unit differs from the floor's is
    ``unenforceable`` only when the dynamics are unsafe; when they are safe it never fires
    and is a ``dead_stage`` note (brief 6b, :func:`tailguard.pipeline.model.with_static`).
    ``ignore_static`` leaves the ``unenforceable`` findings out (fix synthesis: the verdict
    is the same). Deterministic: every call runs in a z3 context of its own."""
    with own_context():
        return _decide(policy, budget, ignore_static, profile)


def _decide(policy: Policy, budget: Budget | None, ignore_static: bool, profile: Profile) -> Decision:
    budget = budget or Budget()
    start = time.perf_counter()
    need = needed_window(policy)
    bmc = Bmc(policy, need, budget.rlimit, profile)
    raise_budget = f"raise --budget (now {budget.units})"

    def done(verdict: Verdict, found: tuple[Finding, ...], **kw: Any) -> Decision:
        detail = str(kw.get("detail", ""))
        ran_out = "budget" if detail.startswith("solver budget") else \
            "depth" if detail.startswith("depth budget") else ""
        findings, notes = with_static(policy, verdict, found)
        if ignore_static:
            findings = found
        return Decision(verdict, findings, seconds=time.perf_counter() - start, profile=profile,
                        exhausted=ran_out if verdict == "unknown" else "", notes=notes, **kw)

    def search_found(got: Session) -> Decision | str:
        """The bounded search's session, canonical and replayed."""
        session = canonical_session(policy, got, profile)
        found, at = replay(policy, session.sizes, profile, session.messages, session.failures)
        if at != len(got.sizes):  # the abstraction disagrees with the model: never report
            return f"trace {list(got.sizes)} did not replay (step {at}); please report"
        return done("unsafe", tuple(found), trace=session.sizes, messages=session.messages,
                    failures=tuple(sorted(session.failures)),
                    method=f"bmc depth {len(got.sizes)}")

    def search(limit: int, spend: int | None = None) -> Decision | str | None:
        """Deepen to ``limit``, or (``spend``) until that many more resource units are used."""
        ceiling = None if spend is None else bmc.used + spend
        while bmc.depth < limit and (ceiling is None or bmc.used < ceiling):
            got = bmc.deepen()
            if got == "unknown":
                return (f"solver budget ran out: the bounded search at depth {bmc.depth} needed "
                        f"more than {budget.rlimit // MILLION}M z3 resource units; {raise_budget}")
            if got is not None:
                return search_found(got)
        return None

    if inert(policy):
        return done("safe", (), method="no window and no truncate or compact stage: nothing is "
                                       "ever lost")
    width = need if need <= budget.max_window else 1
    exact = need <= budget.max_window

    def certified(inv_of: Any, how: str) -> Decision | str:
        problem = check_certificate(policy, width, inv_of, budget.rlimit, profile)
        if problem:
            return f"certificate re-check: {problem}"
        return done("safe", (), method=f"{how} (window {width}), re-checked")

    lemma = houdini(policy, width, budget.rlimit, profile=profile)
    if lemma is not None:
        got = certified(lemma, "inductive occupancy bounds")
        if isinstance(got, Decision):
            return got
    far = fails_late(policy, budget.quick_depth)
    quick = None if far else search(budget.quick_depth)  # nothing fails that early
    if isinstance(quick, Decision):
        return quick

    too_long: list[int] = []  # the falsifier's session, shrunk, was longer than --depth
    tried: list[Decision | None] = []

    def concrete() -> Decision | None:
        """The falsifier (:mod:`tailguard.pipeline.falsify`), its session shrunk
        (:mod:`tailguard.pipeline.shrink`), or ``None``; never a verdict without a trace, and
        never a session longer than ``--depth`` (then ``too_long``). Run once."""
        if not tried:
            tried.append(falsified())
        return tried[0]

    def falsified() -> Decision | None:
        got = falsify(policy, profile, budget.falsify_steps)
        if got is None:
            return None
        small = shrink(policy, got.session, profile, budget.falsify_steps)
        session = got.session if small is None else small.session
        found, at = replay(policy, session.sizes, profile, session.messages, session.failures)
        if at != len(session.sizes) or not found:  # falsify replays already: belt and braces
            return None
        n = len(session.sizes)
        if budget.falsify_depth is not None and n > budget.falsify_depth:
            too_long.append(n)
            return None
        shorter = confirm(n)
        if isinstance(shorter, Decision):
            return shorter
        how = ("shortest (no session of fewer appends fails)" if shorter else
               "locally minimal (no single append can be removed or made smaller)"
               if small is not None and small.minimal else "shrunk within its step budget")
        return done("unsafe", tuple(found), trace=session.sizes, messages=session.messages,
                    failures=tuple(sorted(session.failures)),
                    method=f"falsifier: {got.family} ({len(got.session.sizes)} appends), "
                           f"{how}: {n} appends, replayed")

    def confirm(n: int) -> Decision | bool:
        """Whether no session of fewer than ``n`` appends fails: no stage can fire in fewer
        (:func:`fails_late`), or the bounded search up to ``n - 1`` within ``confirm_rlimit``
        (each query and in all) finds none; or a shorter session it found (its own, canonical:
        a shortest). ``False``: the budget ran out first."""
        if bmc.clean >= n - 1 or fails_late(policy, n - 1):
            return True
        if (bmc.depth > bmc.clean or n - 1 > budget.depth or not exact
                or n - 1 - bmc.depth > CONFIRM_DEPTHS):
            return False  # a query ran out; beyond --depth; a window wider than the solver
            # affords; too many steps to encode (their encoding costs more than the queries)
        bmc.solver.set("rlimit", budget.confirm_rlimit)
        ceiling = bmc.used + budget.confirm_rlimit
        while bmc.depth < n - 1 and bmc.used < ceiling:
            got = bmc.deepen(check=not fails_late(policy, bmc.depth + 1))
            if got == "unknown":
                return False
            if got is not None:
                found = search_found(got)
                return found if isinstance(found, Decision) else False
        return bmc.clean >= n - 1

    # ordering only (never turns safe into unsafe or back: it only decides sooner what the
    # bounded search would find, or would run out of budget on): at real sizes (a tail wider
    # than the exact window the solver can afford, or no loss possible within the quick
    # depth) the first loss is usually deep; the concrete falsifier tries the structured
    # families before the bounded search goes deeper
    if (not exact or far) and (early := concrete()) is not None:
        return early
    # search deeper, within a resource budget, before Spacer, which is slow on deep
    # counterexamples
    mid = search(budget.depth, budget.search_rlimit) if quick is None else None
    if isinstance(mid, Decision):
        return mid
    if exact and not far and (late := concrete()) is not None:
        return late
    # a falsifier session longer than --depth: the policy is unsafe, so no invariant exists;
    # the verdict at this depth is the bounded search's
    outcome, inv = ("unsafe", None) if too_long else find_invariant(policy, width, budget, profile)
    if outcome == "safe":
        body = inv
        got = certified(lambda s: z3.substitute_vars(body, *s.flat()), "Spacer invariant")
        if isinstance(got, Decision):
            return got
        outcome, inv = "unknown", got
    if isinstance(quick, str):
        return done("unknown", (), detail=quick)
    deep = mid if isinstance(mid, str) else search(budget.depth)
    if isinstance(deep, Decision):
        return deep
    no_session = f"no failing session within {budget.depth} appends (--depth {budget.depth})"
    if isinstance(deep, str):
        why = deep
    elif too_long:
        why = f"depth budget ran out: a failing session of {too_long[0]} appends exists (the " \
              f"concrete falsifier's, shrunk) but {no_session}; raise --depth to {too_long[0]}"
    elif outcome == "unsafe" and exact:
        why = f"depth budget ran out: a failing session exists (the invariant search refuted " \
              f"every invariant) but {no_session}; raise --depth"
    elif outcome == "unsafe":
        why = f"depth budget ran out: the window abstraction (width {width}) is too coarse to " \
              f"prove safety and {no_session}; raise --depth"
    else:
        why = f"solver budget ran out: the invariant search stopped ({inv}) after " \
              f"{budget.spacer_rlimit // MILLION}M z3 resource units and {no_session}; " \
              f"{raise_budget} to search longer for a proof, or --depth for a longer session"
    return done("unknown", (), detail=why)
