"""Concrete falsifier: the executable model run over structured adversarial session families.

At real sizes (windows of 32k to 1M tokens, chatty turns of a few hundred tokens) the first
loss is often 100 to 2,000 appends deep, where the z3 bounded search needs a window of as
many slots as appends and runs out of budget. Most such losses have a simple shape, which
this module tries first, on the executable model itself (:mod:`tailguard.pipeline.model`):

- a **trunk**: steady turns of one size (``turn_max``, ``turn_min``, or a size just over
  ``keep / k`` that leaves a compaction's token tail as short as it can be) and one message
  count (the fewest or the most), run through several compaction cycles; every trunk alone
  first (a truncator in messages under small turns, a tail too short for the floor);
- **branches** off each trunk, guided by the policy's thresholds: pad the occupancy (in a
  unit some stage reads) to exactly a target (a threshold minus one, or minus the spike:
  a trigger, a truncate limit plus one, the window plus one), append a run of "tail" turns
  (as many as a compaction's keep holds, of the trunk's size or the smallest), then one
  **spike**: the largest or smallest turn, one just too big for a kept token tail, or the
  size or message count that leaves the kept tail as short as it can be (``keep - fill + 1``).

Soundness does not depend on any of this: the falsifier only ever returns a session that
:func:`tailguard.pipeline.model.replay` reproduces (a loss at its last append and none
before), every size within ``turn_tokens``, every message count within
``messages_per_turn``, and spill writes failing either never or at every append (the two
choices the z3 encoding makes). It never says ``safe``; finding nothing says nothing.
Deterministic: a function of the policy and the step budget alone. The session is the first
that fails, not the shortest: the engine shrinks it (:mod:`tailguard.pipeline.shrink`) and asks
the bounded search for a shorter one where that is cheap before reporting it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tailguard.pipeline.model import (
    DEFAULT_PROFILE,
    Finding,
    Profile,
    Session,
    State,
    replay,
    spill_modes,
    step,
)
from tailguard.pipeline.policy import ClipArgs, Compact, Policy, Truncate

STEPS = 60_000  # model appends the falsifier may run in all (0.02 to 0.6 s of CPU here)
CYCLES = 3  # compaction cycles a trunk runs through
TRUNK_APPENDS = 3_000  # appends a trunk runs at most
BRANCHES_PER_TARGET = 2  # branch points per (target, tail, spike) in one cycle
TAIL_TURNS_MAX = 64  # small "tail" turns a branch appends before its spike, at most

Row = tuple[int, int]  # one append: tokens, messages


@dataclass(frozen=True)
class Found:
    """A replayed failing session and its findings (those of its last append)."""

    session: Session
    findings: tuple[Finding, ...]
    family: str  # which family found it, for the report's method line


@dataclass
class _Budget:
    steps: int

    def spend(self, n: int = 1) -> bool:
        self.steps -= n
        return self.steps >= 0


def _units(policy: Policy) -> dict[str, set[int]]:
    """Thresholds per unit: every trigger, truncate limit and the window (tokens)."""
    out: dict[str, set[int]] = {}
    if policy.window:
        out.setdefault("tokens", set()).add(policy.window + 1)  # over the window: > window
    for s in policy.stages:
        if isinstance(s, Truncate):
            out.setdefault(s.unit, set()).add(s.limit + 1)  # truncation fires above the limit
        elif isinstance(s, Compact):
            for clause in s.clauses:
                for unit, threshold in clause:
                    out.setdefault(unit, set()).add(threshold)
        elif isinstance(s, ClipArgs):
            out.setdefault(s.trigger_unit, set()).add(s.trigger)
    return out


def fill_sizes(policy: Policy) -> list[int]:
    """Steady turn sizes: the largest, sizes just over ``keep / k`` for token keeps (the
    tail then holds ``k - 1`` turns: as few tokens as a tail can), and the smallest."""
    lo, hi = policy.turn_min, policy.turn_max
    out = [hi]
    for s in policy.stages:
        if isinstance(s, Compact) and s.keep_unit == "tokens":
            for k in (1, 2, 3, 4, 6, 8, 12, 16, 24, 32):
                size = s.keep // k + 1
                if lo <= size <= hi:
                    out.append(size)
    if policy.floor_unit == "tokens" and lo <= policy.floor <= hi:
        out.append(policy.floor)
    out.append(lo)
    return list(dict.fromkeys(out))


def spike_sizes(policy: Policy, fill: int) -> list[int]:
    """Sizes of the last append: the largest; just too big for a kept token tail; the size
    that, with turns of ``fill`` before it, makes a kept token tail as short as it can be
    (``keep - fill + 1`` tokens: the next ``fill`` does not fit); the smallest."""
    lo, hi = policy.turn_min, policy.turn_max
    out = [hi]
    for s in policy.stages:
        if isinstance(s, Compact) and s.keep_unit == "tokens":
            rest = (s.keep + 1) % fill
            out += [v for v in (s.keep + 1, rest, rest + fill) if lo <= v <= hi]
    out.append(lo)
    return list(dict.fromkeys(out))


def tail_runs(policy: Policy, fill: int) -> list[tuple[int, int]]:
    """(count, tokens): the turns a branch appends between its pad and its spike. None; a
    compaction's kept tail of turns, or one more, of the smallest size; and, for a token
    keep, about as many turns of the trunk's ``fill`` as the keep holds (the tail a
    compaction then keeps is those turns and the spike, cut where the next does not fit)."""
    lo = policy.turn_min
    out = [(0, fill)]
    for s in policy.stages:
        if not isinstance(s, Compact):
            continue
        if s.keep_unit == "turns":
            out += [(s.keep, lo), (s.keep + 1, lo)]
        elif s.keep_unit == "tokens":
            k = s.keep // fill
            out += [(c, fill) for c in (1, 2, k - 1, k, k + 1, k + 2)]
            out += [(s.keep // lo, lo), (s.keep // lo + 1, lo)]
        else:  # messages: as many turns as the keep holds, of the fewest or most messages
            mlo, mhi = policy.messages_per_turn
            out += [(c, fill) for c in (s.keep // mhi - 1, s.keep // mhi, s.keep // mhi + 1)]
            out += [(s.keep // mlo, lo), (s.keep // mlo + 1, lo)]
    return list(dict.fromkeys((c, z) for c, z in out if 0 <= c <= TAIL_TURNS_MAX))


def _split(gap: int, lo: int, hi: int) -> list[int] | None:
    """``gap`` as at most three sizes within ``[lo, hi]`` (``[]`` for 0), else ``None``."""
    if gap == 0:
        return []
    for m in (1, 2, 3):
        if m * lo <= gap <= m * hi:
            base, extra = divmod(gap, m)
            return [base + (1 if i < extra else 0) for i in range(m)]
    return None


def spike_messages(policy: Policy, fill_m: int) -> list[int]:
    """Message counts of the last append besides ``fill_m``: the most, and for a message
    keep the count that, after turns of ``fill_m`` messages, leaves the kept tail as short as
    it can be (as :func:`spike_sizes` does for tokens)."""
    mlo, mhi = policy.messages_per_turn
    out = [mhi]
    for s in policy.stages:
        if isinstance(s, Compact) and s.keep_unit == "messages":
            rest = (s.keep + 1) % fill_m
            out += [v for v in (rest, rest + fill_m) if mlo <= v <= mhi]
    return [m for m in dict.fromkeys(out) if m != fill_m]


Target = tuple[str, int, int, int]  # unit, occupancy before the spike, spike tokens, spike messages


def _targets(policy: Policy, spikes: list[tuple[int, int]]) -> list[Target]:
    """(unit, target occupancy before the spike, spike tokens, spike messages): the spike
    crosses a threshold by exactly one, or the occupancy sits one below it."""
    out: list[Target] = []
    for unit, values in sorted(_units(policy).items()):
        for t in sorted(values):
            for tokens, messages in spikes:
                add = {"tokens": tokens, "turns": 1, "messages": messages}[unit]
                out.append((unit, t - add, tokens, messages))  # the spike lands exactly on the threshold
                out.append((unit, t - 1, tokens, messages))  # one below, the spike well over it
    return list(dict.fromkeys(out))


class _Run:
    """A concrete session being built: the model state and its appends."""

    def __init__(self, policy: Policy, profile: Profile, fails: bool) -> None:
        self.policy, self.profile, self.fails = policy, profile, fails
        self.state = State()
        self.rows: list[Row] = []
        self.compactions = 0

    def copy(self) -> _Run:
        other = _Run.__new__(_Run)
        other.policy, other.profile, other.fails = self.policy, self.profile, self.fails
        other.state, other.rows, other.compactions = self.state.copy(), list(self.rows), self.compactions
        return other

    def append(self, size: int, messages: int) -> list[Finding]:
        had, before = self.state.summary, len(self.state.verbatim)
        found = step(self.policy, self.state, size, profile=self.profile, messages=messages,
                     spill_fails=self.fails)
        self.rows.append((size, messages))
        if self.state.summary and (not had or len(self.state.verbatim) <= before):
            self.compactions += 1
        return found


def _session(run: _Run, policy: Policy) -> Session:
    plain = all(m == policy.messages_per_turn[0] for _, m in run.rows)
    return Session(tuple(r[0] for r in run.rows), () if plain else tuple(r[1] for r in run.rows),
                   frozenset(range(1, len(run.rows) + 1)) if run.fails else frozenset())


def _checked(run: _Run, policy: Policy, profile: Profile, found: list[Finding], family: str) -> Found | None:
    """The session, if replay reproduces it: a loss at its last append, none before."""
    session = _session(run, policy)
    lo, hi = policy.messages_per_turn
    if not all(policy.turn_min <= z <= policy.turn_max and lo <= m <= hi for z, m in run.rows):
        return None  # not a session of the policy's shape (never built so: belt and braces)
    got, at = replay(policy, session.sizes, profile, session.messages, session.failures)
    if at != len(session.sizes) or tuple(got) != tuple(found):
        return None  # never reported (a test breaks the falsifier on purpose to see this)
    return Found(session, tuple(got), family)


def _trunks(policy: Policy) -> Iterator[tuple[int, int, bool]]:
    mlo, mhi = policy.messages_per_turn
    modes = set(spill_modes(policy).values())
    fails = (False, True) if "proceed" in modes else (False,)
    for f in fails:
        for size in fill_sizes(policy):
            for m in dict.fromkeys((mlo, mhi)):
                yield size, m, f


def falsify(policy: Policy, profile: Profile = DEFAULT_PROFILE, steps: int = STEPS) -> Found | None:
    """A replayed failing session from the structured families, or ``None`` within ``steps``
    model appends. The steady trunks alone first (cheap, and often enough), then each trunk
    again with its branches."""
    budget = _Budget(steps)
    trunks = list(_trunks(policy))
    for fill, fill_m, fails in trunks:
        run = _Run(policy, profile, fails)
        while len(run.rows) < TRUNK_APPENDS and run.compactions <= CYCLES and not run.state.halted:
            if not budget.spend():
                return None
            found = run.append(fill, fill_m)
            if found:
                return _checked(run, policy, profile, found, f"steady turns of {fill} tokens")
    for fill, fill_m, fails in trunks:
        tails = tail_runs(policy, fill)
        spikes = [(t, fill_m) for t in spike_sizes(policy, fill)]
        spikes += [(policy.turn_max, m) for m in spike_messages(policy, fill_m)]
        targets = _targets(policy, spikes)
        trunk = _Run(policy, profile, fails)
        used: dict[tuple[int, int, Target, tuple[int, int], int], int] = {}
        while len(trunk.rows) < TRUNK_APPENDS and trunk.compactions <= CYCLES and not trunk.state.halted:
            for target in targets:
                for tail in tails:
                    got = _branch(trunk, target, tail, fill_m, used, budget)
                    if got is not None:
                        return got
                    if budget.steps < 0:
                        return None
            if not budget.spend() or trunk.append(fill, fill_m):
                break  # a steady trunk that fails was reported by the first pass
    return None


def _branch(trunk: _Run, target: Target, tail: tuple[int, int], fill_m: int,
            used: dict[tuple[int, int, Target, tuple[int, int], int], int],
            budget: _Budget) -> Found | None:
    """From the trunk's state: pad ``unit`` to ``goal`` (counting the tail turns), append the
    tail turns, then the spike; the first finding, replayed, or ``None``."""
    policy = trunk.policy
    unit, goal, spike, spike_m = target
    count, size = tail
    lo, hi = policy.turn_min, policy.turn_max
    mlo, mhi = policy.messages_per_turn
    occ = trunk.state.occupancy(policy, unit)
    if unit == "tokens":
        gap = goal - occ - count * size
        pads = _split(gap, lo, hi)
        rows = [(p, fill_m) for p in pads] if pads is not None else None
    elif unit == "turns":
        gap = goal - occ - count
        rows = [(hi, fill_m)] * gap if 0 <= gap <= 3 else None
    else:
        gap = goal - occ - count * fill_m
        ms = _split(gap, mlo, mhi)
        rows = [(hi, m) for m in ms] if ms is not None else None
    if rows is None:
        return None
    key = (trunk.compactions, len(rows), target, tail, fill_m)
    if used.get(key, 0) >= BRANCHES_PER_TARGET:
        return None
    used[key] = used.get(key, 0) + 1
    run = trunk.copy()
    plan = [*rows, *[(size, fill_m)] * count, (spike, spike_m)]
    for tokens, messages in plan:
        if not budget.spend():
            return None
        found = run.append(tokens, messages)
        if found:
            return _checked(run, policy, trunk.profile, found,
                            f"steady turns, then {unit} padded to {goal} and a turn of {spike} tokens"
                            + (f" ({spike_m} messages)" if policy.messages_per_turn[1] > 1 else ""))
        if run.state.halted:
            return None
    return None
