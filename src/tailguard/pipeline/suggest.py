"""Fix synthesis (``check-config --suggest``): the nearest sane knob values that make a
policy safe, one knob or several together, each fix re-checked by the engine on the edited
file before it is reported.

The search, in order (docs/check-config.md, "Fix suggestions"):

1. **Monotone knobs** (``floor``, ``input_limit``, ``turn_tokens``' max; the proof is in
   :mod:`tailguard.pipeline.suggest_knobs`): one probe at the safest sane value; unsafe
   there means unsafe everywhere, so the knob is pruned; safe there, bisection to the exact
   boundary. A floor moved to the truncator's unit is searched the same way.
2. **Recipes** (:func:`tailguard.pipeline.suggest_knobs.recipes`): several knobs moved
   together to satisfy a static sufficient condition ("compact before every ceiling"); a
   recipe the engine proves safe is minimized: each moved knob is put back if the policy
   stays safe without it, and each remaining one bisected back towards its value.
3. **Other knobs alone** (``trigger``, ``keep``, ``limit``): doubling steps within the sane
   range from the current value, then bisection to an adjacent (safe, not safe) pair.

Every probe first replays the failing sessions found so far (each extended by maximal
turns) through the executable model: one that still fails refutes the probe without a
solver call (sound: it is a real failing session). A probe the engine cannot decide within
the probe budget counts as not safe. Probes run with a smaller solver budget than the check
(:func:`probe_budget`); a fix is reported only once the edited file is decided ``safe`` by
:func:`tailguard.pipeline.solver.decide` with the check's own budget, static findings
included. The overall ``--timeout`` and SIGINT/SIGTERM end the search with the fixes
verified so far (:mod:`tailguard.pipeline.suggest_stop`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tailguard.pipeline.model import DEFAULT_PROFILE, Profile, State, step
from tailguard.pipeline.policy import Policy
from tailguard.pipeline.solver import Budget, Decision, decide
from tailguard.pipeline.suggest_knobs import (
    MIN_SANE_TURN,
    Assignment,
    Knob,
    KnobId,
    Value,
    apply,
    current,
    guesses,
    key_of,
    knobs,
    label,
    recipes,
    safest,
)
from tailguard.pipeline.suggest_patch import Replacement, patch
from tailguard.pipeline.suggest_stop import StopFlag, Stopped

MAX_FIXES = 5
EXTEND = 60  # maximal turns appended after a known failing session when replaying it


def probe_budget(budget: Budget, units: int = 20) -> Budget:
    """The budget of one probe: at most ``units`` million resource units and the check's depth.
    Probes that decide whether a knob can help at all (the safest value of a monotone knob, a
    recipe) get 20M; probes that only tighten a fix already found or step towards one
    (bisection, putting a knob back, doubling steps) get 5M (:data:`QUICK`): there an
    ``unknown`` only leaves the fix a little less tight, never wrong."""
    units = min(budget.units, units)
    return replace(Budget.of(units, depth=budget.falsify_depth), depth=budget.depth,
                   quick_depth=min(budget.quick_depth, 16))


QUICK = 5


@dataclass(frozen=True)
class Change:
    """One knob of a fix: ``key`` (``stage.1.trigger``) from ``old`` to ``new``; ``beyond``
    is the next value towards ``old`` and its verdict, when the search probed it."""

    key: str
    line: int
    old: Value
    new: Value
    beyond: Value | None = None
    beyond_verdict: str = ""
    stage_key: str = ""  # a preset's framework knob: the stage knob it translates to

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"knob": self.key, "line": self.line, "from": self.old, "to": self.new}
        if self.beyond is not None:
            out.update(beyond=self.beyond, beyond_verdict=self.beyond_verdict)
        if self.stage_key:
            out["translates_to"] = self.stage_key
        return out


@dataclass(frozen=True)
class Fix:
    """A verified fix: the changes, the verdict of the edited file re-checked by the engine
    (always ``safe``), how it was decided, the file edits (``None`` when the file cannot be
    edited in place) and whether it weakens a requirement (floor or turn sizes)."""

    changes: tuple[Change, ...]
    verdict: str
    method: str
    found_by: str
    requirement: bool
    replacements: tuple[Replacement, ...] | None = None
    note: str = ""

    @property
    def text(self) -> str:
        moved = ", ".join(f"{c.key} {c.old} -> {c.new}" for c in self.changes)
        return f"{moved} (re-checked {self.verdict}: {self.method})"

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "changes": [c.as_json() for c in self.changes], "verdict": self.verdict,
            "method": self.method, "found_by": self.found_by,
            "weakens_requirement": self.requirement, "text": self.text}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Outcome:
    """What the search found: verified fixes (best first) and how the search went."""

    fixes: list[Fix] = field(default_factory=list)
    probes: int = 0
    refuted: int = 0  # probes refuted by replaying a known failing session
    pruned: list[str] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = ""  # "", "timeout", "SIGINT", "SIGTERM"

    def as_json(self) -> dict[str, Any]:
        return {"probes": self.probes, "refuted_by_replay": self.refuted, "pruned": self.pruned,
                "seconds": round(self.seconds, 3), "complete": not self.stopped,
                "stopped": self.stopped or None}


@dataclass(frozen=True)
class Known:
    """A failing session the engine returned, replayed against later probes."""

    sizes: tuple[int, ...]
    messages: tuple[int, ...] = ()
    failures: frozenset[int] = frozenset()


def _rank(fix: Fix) -> tuple[int, int, float]:
    spread = 0.0
    for c in fix.changes:
        if isinstance(c.old, int) and isinstance(c.new, int) and c.old > 0 and c.new > 0:
            spread += abs(math.log(c.new / c.old))
        else:
            spread += 1.0
    return (int(fix.requirement), len(fix.changes), spread)


class Search:
    """One policy's fix search (see the module docstring)."""

    def __init__(
        self, policy: Policy, decision: Decision, budget: Budget, profile: Profile,
        flag: StopFlag, progress: Callable[[str], None] | None,
    ) -> None:
        self.policy, self.budget, self.profile, self.flag = policy, budget, profile, flag
        self.probing = probe_budget(budget)
        self.quick_probing = probe_budget(budget, QUICK)
        self.quick = False  # the tier of the next probes (see probe_budget)
        self.say = progress or (lambda line: None)
        self.table = knobs(policy, profile)
        self.cache: dict[frozenset[tuple[KnobId, Value]], str] = {}
        self.quick_unknown: set[frozenset[tuple[KnobId, Value]]] = set()  # unknown at 5M only
        self.pool: list[Known] = []
        self.remember(decision)
        self.base_verdict = decision.verdict
        self.out = Outcome()
        self.planned = 0
        self.fixes: dict[frozenset[KnobId], Fix] = {}

    # -- probes ---------------------------------------------------------------------------
    def plan(self, more: int) -> None:
        self.planned = max(self.planned, self.out.probes) + more

    def verdict(self, assignment: Assignment) -> str:
        """The probe verdict of the policy with ``assignment`` (cached)."""
        assignment = self.moved(assignment)
        key = frozenset(assignment.items())
        if key in self.cache and (self.quick or key not in self.quick_unknown):
            return self.cache[key]
        if not assignment:
            return self.base_verdict
        self.flag.check()
        candidate = apply(self.policy, assignment)
        start = time.perf_counter()
        self.out.probes += 1
        self.planned = max(self.planned, self.out.probes)
        if self._refuted(candidate):
            verdict, how = "unsafe", "a known failing session replays"
            self.out.refuted += 1
        else:
            budget = self.quick_probing if self.quick else self.probing
            decision = self.decide(candidate, budget, ignore_static=True)
            verdict, how = decision.verdict, decision.exhausted and \
                f"{decision.exhausted} ran out at {budget.units}M"
            self.remember(decision)
            if verdict == "unknown" and self.quick:
                self.quick_unknown.add(key)
            else:
                self.quick_unknown.discard(key)
        self.cache[key] = verdict
        shown = ", ".join(f"{label(k)}={v}" for k, v in sorted(assignment.items(), key=_order))
        extra = f"; {how}" if how else ""
        self.say(f"probe {self.out.probes}/{self.planned}: {shown} -> {verdict} "
                 f"({time.perf_counter() - start:.1f} s{extra})")
        return verdict

    def decide(self, policy: Policy, budget: Budget, ignore_static: bool = False) -> Decision:
        """The engine's decision; :class:`Stopped` if a stop interrupted it (an interrupted
        probe is no verdict, and z3 may raise when interrupted)."""
        try:
            decision = decide(policy, budget, ignore_static=ignore_static, profile=self.profile)
        except Exception:
            if self.flag.is_set():
                raise Stopped from None
            raise
        self.flag.check()
        return decision

    def moved(self, assignment: Assignment) -> Assignment:
        """``assignment`` without the knobs it leaves at their value."""
        return {k: v for k, v in assignment.items() if current(self.policy, k) != v}

    def known(self, assignment: Assignment) -> str:
        """The verdict already probed for ``assignment`` (``""``: none)."""
        moved = self.moved(assignment)
        return self.cache.get(frozenset(moved.items()), "" if moved else self.base_verdict)

    def remember(self, decision: Decision) -> None:
        """Keep a failing session: its sizes, and (spec 1.1 engines) the messages of each
        append and the appends whose spill writes fail."""
        if decision.trace:
            self.pool.append(Known(tuple(decision.trace), tuple(getattr(decision, "messages", ())),
                                   frozenset(getattr(decision, "failures", ()))))

    def _refuted(self, candidate: Policy) -> bool:
        """Whether a failing session found so far (sizes and message counts clamped to the
        candidate's, then maximal turns) also fails ``candidate``: a real counterexample."""
        lo, hi = candidate.turn_min, candidate.turn_max
        mlo, mhi = getattr(candidate, "messages_per_turn", (1, 1))
        for known in self.pool:
            state = State()
            sizes = [min(hi, max(lo, x)) for x in known.sizes] + [hi] * EXTEND
            for n, size in enumerate(sizes):
                extra: dict[str, Any] = {}
                if known.messages:
                    got = known.messages[n] if n < len(known.messages) else mhi
                    extra["messages"] = min(mhi, max(mlo, got))
                if known.failures:
                    extra["spill_fails"] = n + 1 in known.failures
                if step(candidate, state, size, profile=self.profile, **extra):
                    return True
        return False

    def safe(self, assignment: Assignment, quick: bool = False) -> bool:
        """Whether the probe says safe; ``quick``: with the tightening budget."""
        saved, self.quick = self.quick, quick
        try:
            return self.verdict(assignment) == "safe"
        finally:
            self.quick = saved

    # -- boundaries -----------------------------------------------------------------------
    def bisect(self, base: Assignment, knob: KnobId, good: int, bad: int) -> tuple[int, int, str]:
        """Adjacent (safe, not safe) values between ``good`` (safe with ``base``) and ``bad``;
        the static guesses first (:func:`tailguard.pipeline.suggest_knobs.guesses`)."""
        toward = 1 if bad > good else -1
        for g in guesses(apply(self.policy, base), knob):
            if not (min(good, bad) < g < max(good, bad)) and g != good:
                continue
            self.plan(2)
            if g != good and not self.safe({**base, knob: g}, quick=True):
                bad = g
                continue
            good = g
            if abs(good - bad) > 1 and not self.safe({**base, knob: good + toward}, quick=True):
                bad = good + toward
        self.plan(max(1, int(abs(good - bad)).bit_length()))
        while abs(good - bad) > 1:
            mid = (good + bad) // 2
            if self.safe({**base, knob: mid}, quick=True):
                good = mid
            else:
                bad = self.jump(base, knob, good, mid)
        return good, bad, self.known({**base, knob: bad}) or "unsafe"

    def jump(self, base: Assignment, knob: KnobId, good: int, bad: int) -> int:
        """The value nearest ``good`` that a known failing session still refutes, found by
        bisecting between ``bad`` (not safe) and ``good`` (safe) with concrete replays only:
        no solver call, and every value it returns fails on a real session (or is ``bad``)."""
        while abs(good - bad) > 1:
            mid = (good + bad) // 2
            if self._refuted(apply(self.policy, self.moved({**base, knob: mid}))):
                bad = mid
                self.cache.setdefault(frozenset(self.moved({**base, knob: mid}).items()), "unsafe")
            else:
                good = mid
        return bad

    # -- fixes ----------------------------------------------------------------------------
    def record(self, assignment: Assignment, found_by: str,
               beyond: dict[KnobId, tuple[int, str]] | None = None) -> None:
        """Re-check ``assignment`` on the edited file with the check's budget; keep it if safe."""
        ids = frozenset(assignment)
        old = self.fixes.get(ids)
        changes = tuple(
            Change(key_of(k), self.policy.line_of(key_of(k)), current(self.policy, k), v,
                   *((beyond or {}).get(k, (None, ""))))
            for k, v in sorted(assignment.items(), key=_order))
        expected = apply(self.policy, assignment)
        edits = patch(self.policy, expected, [(c.key, c.new) for c in changes])
        target, replacements, note = expected, None, ""
        if isinstance(edits, str):
            note = f"re-checked on the fixed policy, not on an edited file ({edits})"
        else:
            replacements, target = tuple(edits[0]), edits[1]
            framework = {line: key for key, line in self.policy.lines.items()
                         if key.startswith("framework.")}
            if len(replacements) == len(changes):  # a preset: name the framework's knob
                changes = tuple(
                    replace(c, key=framework[r.line], line=r.line, stage_key=c.key)
                    if c.key not in self.policy.lines and not r.insert and r.line in framework else c
                    for c, r in zip(changes, replacements, strict=True))
        self.flag.check()
        self.flag.guarded = True
        try:
            decision = self.decide(target, self.budget)
        finally:
            self.flag.guarded = False
        self.say(f"re-check: {', '.join(f'{c.key}={c.new}' for c in changes)} -> {decision.verdict} "
                 f"({decision.seconds:.1f} s)")
        if decision.verdict != "safe":
            self.out.pruned.append(f"{found_by}: probe said safe, the re-check {decision.verdict}")
            return
        fix = Fix(changes, decision.verdict, decision.method, found_by,
                  any(k[1] in ("floor", "floor_unit", "turn_max") for k in assignment),
                  replacements, note)
        if old is None or _rank(fix) < _rank(old):
            self.fixes[ids] = fix
        kept = [f for ids, f in self.fixes.items() if not any(other < ids for other in self.fixes)]
        self.out.fixes = sorted(kept, key=_rank)[:MAX_FIXES]  # no fix moving more than another

    def minimize(self, assignment: Assignment, found_by: str) -> None:
        """Put back every knob the fix does not need, bisect the rest towards their values,
        then record it."""
        best = dict(assignment)
        for k in sorted(best, key=lambda k: (k[1] not in ("floor", "turn_max", "floor_unit"), _order((k, 0)))):
            if len(best) > 1 and k[1] != "floor_unit":
                trial = {j: v for j, v in best.items() if j != k}
                if (None, "floor_unit") in trial and k == (None, "floor"):
                    continue
                if self.safe(trial, quick=True):
                    best = trial
        beyond: dict[KnobId, tuple[int, str]] = {}
        for k, v in list(best.items()):
            was = current(self.policy, k)
            if not isinstance(v, int) or not isinstance(was, int) or ((None, "floor_unit") in best \
                    and k == (None, "floor")):
                continue
            rest = {j: w for j, w in best.items() if j != k}
            if k[1] == "input_limit" and v == 0:
                continue
            good, bad, how = self.bisect(rest, k, v, was)
            if bad != was or how:
                beyond[k] = (bad, how)
            best[k] = good
        if len(best) < len(assignment):
            found_by += f", minimized from {len(assignment)} knobs to {len(best)}"
        self.record(best, found_by, beyond)

    # -- phases ---------------------------------------------------------------------------
    def monotone(self, k: Knob) -> None:
        target = safest(k)
        self.plan(1)
        if not self.safe({k.id: target}):
            self.out.pruned.append(f"{key_of(k.id)}: not safe even at {target}; monotone, so no "
                                   f"value in range helps")
            return
        if isinstance(target, int) and isinstance(k.current, int):
            if target == 0:  # input_limit 0 (no limit, no window): a numeric bound if one is safe
                top = max([g for g in guesses(self.policy, k.id) if g > k.current], default=0)
                if not top or not self.safe({k.id: top}):
                    self.record({k.id: 0}, "monotone knob (no limit)")
                    return
                target = top
            # a verified fix first (the safest value), so a stop during the bisection that
            # tightens it still has one to print; the tighter value replaces it (_rank)
            self.record({k.id: target}, "monotone knob (its safest sane value)")
            good, bad, how = self.bisect({}, k.id, target, k.current)
            self.record({k.id: good}, "monotone knob, bisected", {k.id: (bad, how)})

    def floor_unit(self, k: Knob) -> None:
        for unit in k.choices:
            low = MIN_SANE_TURN if unit == "tokens" else 1
            base: Assignment = {k.id: unit}
            self.plan(1)
            if not self.safe({**base, (None, "floor"): low}):
                self.out.pruned.append(f"floor_unit = {unit!r}: not safe even with floor {low}; "
                                       f"the floor is monotone, so no floor helps")
                continue
            top = max(low, self._floor_top(unit))
            if self.safe({**base, (None, "floor"): top}):
                self.record({**base, (None, "floor"): top}, "floor in the truncator's unit")
                continue
            good, bad, how = self.bisect(base, (None, "floor"), low, top)
            self.record({**base, (None, "floor"): good}, "floor in the truncator's unit "
                        "(largest safe floor)", {(None, "floor"): (bad, how)})

    def _floor_top(self, unit: str) -> int:
        if unit == "tokens":
            return self.policy.window or max(
                (getattr(s, "limit", 0) for s in self.policy.stages), default=MIN_SANE_TURN)
        return max(1, self.policy.floor)

    def alone(self, k: Knob) -> None:
        """A non-monotone knob alone: doubling steps from its value within its range."""
        assert isinstance(k.current, int)
        if frozenset({k.id}) in self.fixes:  # a recipe, minimized, already moved it alone
            return
        bound = k.hi if k.direction > 0 else k.lo
        last_bad, stride = k.current, 1
        self.plan(int(abs(bound - k.current)).bit_length())
        while True:
            probe = k.current + k.direction * stride
            if (probe - bound) * k.direction > 0:
                probe = bound
            if probe == last_bad:
                return
            if self.safe({k.id: probe}, quick=True):
                break
            last_bad = probe
            if probe == bound:
                self.out.pruned.append(f"{key_of(k.id)} alone: no safe value up to {bound}")
                return
            stride *= 2
        good, bad, how = self.bisect({}, k.id, probe, last_bad)
        self.record({k.id: good}, "one knob", {k.id: (bad, how)})

    def choice(self, k: Knob) -> None:
        for value in k.choices:
            self.plan(1)
            if self.safe({k.id: value}):
                self.record({k.id: value}, "one knob")

    def run(self) -> None:
        started = time.perf_counter()
        try:
            mono = [k for k in self.table if k.monotone]
            self.plan(len(mono))
            for k in self.table:
                if k.monotone:
                    self.monotone(k)
                elif k.choices and k.field == "input":
                    self.choice(k)
            for name, assignment in recipes(self.policy, self.profile):
                if frozenset(assignment) in self.fixes:
                    continue  # the same knobs already give a verified fix
                self.plan(1)
                if self._sane(assignment, name) and self.safe(assignment):
                    self.minimize(assignment, f"several knobs: {name}")
            for k in self.table:
                if k.field == "floor_unit":
                    self.floor_unit(k)
            for k in self.table:
                if not k.monotone and not k.choices:
                    self.alone(k)
        except Stopped:
            self.out.stopped = self.flag.reason or "timeout"
        self.out.seconds = time.perf_counter() - started

    def _sane(self, assignment: Assignment, name: str) -> bool:
        """Whether every value of a recipe is within its knob's sane range (else pruned)."""
        for k, v in assignment.items():
            if isinstance(v, str) or (k == (None, "floor") and (None, "floor_unit") in assignment):
                continue
            ranges = [(j.lo, j.hi) for j in self.table if j.id == k]
            if not any(lo <= v <= (hi or v) for lo, hi in ranges):
                self.out.pruned.append(f"recipe {name}: {key_of(k)} = {v} is outside its sane range")
                return False
        return True


_FIELDS = ("limit", "trigger", "keep", "input_limit", "input", "floor_unit", "floor", "turn_max")


def _order(item: tuple[KnobId, Any]) -> tuple[int, int]:
    (stage, name), _ = item
    return (-1 if stage is None else stage, _FIELDS.index(name) if name in _FIELDS else 99)


def suggest(
    policy: Policy,
    decision: Decision,
    budget: Budget | None = None,
    *,
    profile: Profile = DEFAULT_PROFILE,
    flag: StopFlag | None = None,
    progress: Callable[[str], None] | None = None,
) -> Outcome:
    """Verified fixes for a policy that ``decision`` found not safe (see the module
    docstring). ``flag`` carries the deadline and the stop signals (:func:`run_stoppable`
    runs this in a worker so they can interrupt a probe); the outcome holds whatever was
    verified before a stop."""
    search = Search(policy, decision, budget or Budget(), profile, flag or StopFlag(), progress)
    search.run()
    return search.out
