"""The knobs ``check-config --suggest`` may move, their sane ranges, what is provably
monotone, and the static recipes that move several knobs together.

**Bounds** (docs/check-config.md, "Fix suggestions"):

- a *ceiling* (a truncate ``limit``, a compact ``input_limit``) may rise, never above the
  model's ``window``; without a ``window`` the policy's largest token truncate limit is its
  hard ceiling (the seed's "hard 160k ceiling") and no ceiling rises above that;
- every other numeric knob stays within a factor of 4 of its value: a ``trigger`` may drop
  to a quarter of itself, a ``keep`` move between a quarter and four times its value (a
  tokens ``keep`` never below one maximal turn, so the tail can always hold a turn);
- *sane turn sizes*: ``turn_tokens``' max may drop to a quarter of itself and never below
  1,000 tokens nor ``turn_min`` (a fix that needs 1-token turns is no fix);
- ``floor`` may drop to a quarter of itself, never to 0 (no floor is no guarantee).

**Requirements and knobs.** ``floor``, ``floor_unit`` and ``turn_tokens`` state what the user
needs and what the workload sends; the other keys are the pipeline's. A fix that moves only
pipeline knobs ranks before one that weakens a requirement.

**Monotone knobs** (:data:`MONOTONE`), provable from the executable model
(``pipeline/model.py``): for a fixed session the stages never read ``floor``,
``input_limit`` or ``turn_max``. ``floor`` only selects the floor turns a finding checks
(a smaller floor selects a subset), ``input_limit`` only splits the candidates into seen
and unseen (a larger limit, or 0 for none, sees a superset), and ``turn_max`` only bounds
the sizes a session may draw (a smaller max allows a subset of the sessions). So every
session's states are the same at both values and its findings at the safer value are a
subset: safe at a value implies safe at every safer one. ``tests/test_suggest.py`` checks
this on random policies and sessions. The search uses it twice: one probe at the safest
sane value decides whether the knob can help at all (if not, every value is pruned), and
bisection between that value and the current one finds the exact boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from tailguard.pipeline.model import Profile
from tailguard.pipeline.policy import Compact, Policy, Truncate

# a knob: (stage index or None for a top-level key, field name)
KnobId = tuple[int | None, str]
Value = int | str
Assignment = dict[KnobId, Value]

MIN_SANE_TURN = 1000  # tokens: the smallest turn maximum a fix may ask for
FACTOR = 4  # numeric knobs other than ceilings stay within this factor of their value
REQUIREMENTS = frozenset({"floor", "floor_unit", "turn_max"})
# +1: a larger value is safer (0 meaning unlimited is the largest); -1: a smaller value is
MONOTONE: dict[str, int] = {"floor": -1, "turn_max": -1, "input_limit": +1}


@dataclass(frozen=True)
class Knob:
    """One movable value: ``lo <= value <= hi`` is its sane range; ``direction`` is the way
    that can help (+1 up, -1 down, 0 a choice of strings in ``choices``)."""

    stage: int | None
    field: str
    current: Value
    lo: int = 0
    hi: int = 0
    direction: int = 0
    choices: tuple[str, ...] = ()

    @property
    def id(self) -> KnobId:
        return (self.stage, self.field)

    @property
    def monotone(self) -> bool:
        return self.field in MONOTONE

    @property
    def requirement(self) -> bool:
        return self.field in REQUIREMENTS


def key_of(knob: KnobId) -> str:
    """The policy key a knob is written under: ``stage.1.trigger``, ``floor``, ``turn_tokens``."""
    stage, name = knob
    if stage is None:
        return "turn_tokens" if name == "turn_max" else name
    return f"stage.{stage}.{name}"


def label(knob: KnobId) -> str:
    """``stage 1 trigger`` (progress lines)."""
    stage, name = knob
    return name if stage is None else f"stage {stage} {name}"


def ceiling(policy: Policy) -> int:
    """The highest value a ceiling may take: the window, else the largest token truncate
    limit (0: none known, so no ceiling rises)."""
    if policy.window:
        return policy.window
    return max((s.limit for s in policy.stages if isinstance(s, Truncate) and s.unit == "tokens"),
               default=0)


def sane_turn_floor(policy: Policy) -> int:
    """The smallest turn maximum a fix may ask for."""
    return max(policy.turn_min, min(policy.turn_max, max(MIN_SANE_TURN, -(-policy.turn_max // FACTOR))))


def knobs(policy: Policy, profile: Profile) -> list[Knob]:
    """Every knob of ``policy`` with its sane range, pipeline knobs first."""
    top = ceiling(policy)
    out: list[Knob] = []
    for i, s in enumerate(policy.stages):
        if isinstance(s, Truncate):
            cap = top if s.unit == "tokens" else s.limit * FACTOR
            if cap > s.limit:
                out.append(Knob(i, "limit", s.limit, s.limit, cap, +1))
        elif isinstance(s, Compact):
            if s.trigger > 1 and not s.trigger_any:  # a clause list is not one knob: left as it is
                out.append(Knob(i, "trigger", s.trigger, max(1, s.trigger // FACTOR), s.trigger, -1))
            keep_lo = max(1, s.keep // FACTOR)
            keep_hi = s.keep * FACTOR
            if s.keep_unit == "tokens":
                keep_lo = max(keep_lo, policy.turn_max)
                keep_hi = min(keep_hi, top) if top else keep_hi
            if keep_hi > s.keep:
                out.append(Knob(i, "keep", s.keep, s.keep, keep_hi, +1))
            if keep_lo < s.keep:
                out.append(Knob(i, "keep", s.keep, keep_lo, s.keep, -1))
            if s.input_limit > 0 and (top == 0 or top > s.input_limit):
                out.append(Knob(i, "input_limit", s.input_limit, s.input_limit, top, +1))
            if profile == "strict" and policy.floor > 0 and s.input == "candidates":
                out.append(Knob(i, "input", s.input, choices=("all",)))
    if policy.floor > 1:
        out.append(Knob(None, "floor", policy.floor, max(1, policy.floor // FACTOR), policy.floor, -1))
    units = sorted({s.unit for s in policy.stages if isinstance(s, Truncate)} - {policy.floor_unit})
    if units:
        out.append(Knob(None, "floor_unit", policy.floor_unit, choices=tuple(units)))
    low = sane_turn_floor(policy)
    if low < policy.turn_max:
        out.append(Knob(None, "turn_max", policy.turn_max, low, policy.turn_max, -1))
    return out


def safest(knob: Knob) -> Value:
    """The sane value of a monotone knob most likely to be safe (input_limit: the ceiling,
    or 0, no limit, when there is none)."""
    if knob.field == "input_limit":
        return knob.hi if knob.hi else 0
    return knob.lo if MONOTONE[knob.field] < 0 else knob.hi


def apply(policy: Policy, assignment: Assignment) -> Policy:
    """``policy`` with the assignment's values."""
    stages = list(policy.stages)
    top: dict[str, Value] = {}
    for (stage, name), value in assignment.items():
        if stage is None:
            top[name] = value
        else:
            stages[stage] = replace(stages[stage], **{name: value})  # type: ignore[arg-type]
    return replace(policy, stages=tuple(stages), **top)  # type: ignore[arg-type]


Unit = Literal["turns", "tokens"]


def _tail_min(policy: Policy, s: Compact, keep: int, unit: str) -> int:
    """The fewest ``unit`` units a tail kept by ``s`` with ``keep`` holds once enough history
    exists (turns kept: ``keep`` turns; tokens kept: counting back, every turn fits while the
    sum stays within ``keep``, so at least ``keep // turn_max`` turns and ``keep - turn_max + 1``
    tokens)."""
    if s.keep_unit == "turns":
        return keep if unit == "turns" else keep * policy.turn_min
    return keep // policy.turn_max if unit == "turns" else max(0, keep - policy.turn_max + 1)


def _tail_max_tokens(policy: Policy, s: Compact, keep: int, turn_max: int) -> int:
    return keep * turn_max if s.keep_unit == "turns" else keep


def recipes(policy: Policy, profile: Profile) -> list[tuple[str, Assignment]]:
    """Assignments that satisfy a sufficient condition for safety, derived statically, each
    with a name (they still go through the engine: the condition is the search's guess, not
    its proof). "Compact before every ceiling": for the policy's compact stage triggering in
    tokens and the lowest token ceiling ``C`` (truncate limits and the window),

    - every state that did not trigger holds at most ``trigger - 1`` tokens, so after an
      append at most ``trigger - 1 + turn_max``: ``trigger <= C - turn_max + 1`` keeps every
      truncator silent and the window respected before the compaction;
    - a compaction leaves ``base + pinned + summary + tail`` tokens, the tail at most
      ``keep`` tokens or ``keep * turn_max``: that plus one more turn must stay within ``C``;
    - the tail must hold the floor (:func:`_tail_min`), so a ``keep`` that had to shrink may
      take the floor down with it (a requirement move), or ``turn_max`` shrinks instead;
    - an ``input_limit`` must see every candidate: at least ``trigger - 1 + turn_max - base``;
    - under ``strict`` the summarizer must see the floor: ``input = "all"``.

    Variants: the ceilings as they are, truncate limits raised to the window, ``turn_max``
    lowered to keep ``keep`` and the floor, and the floor moved to the truncator's unit."""
    compacts = [(i, s) for i, s in enumerate(policy.stages)
                if isinstance(s, Compact) and s.trigger_unit == "tokens" and not s.trigger_any]
    if not compacts or any(not isinstance(s, Truncate | Compact) for s in policy.stages):
        return []
    ci, c = compacts[-1]
    out: list[tuple[str, Assignment]] = []
    limits = {i: s.limit for i, s in enumerate(policy.stages)
              if isinstance(s, Truncate) and s.unit == "tokens"}
    raised = {i: policy.window for i, lim in limits.items() if policy.window and lim < policy.window}
    pinned = policy.keep_first
    for ceil_name, new_limits in (("as set", {}), ("truncate limits at the window", raised)):
        if ceil_name != "as set" and not new_limits:
            continue
        caps = [*({**limits, **new_limits}.values()), *([policy.window] if policy.window else [])]
        if not caps:
            continue
        cap = min(caps)
        for shape in ("keep", "turn_max", "floor_unit"):
            tm = policy.turn_max
            keep = c.keep
            fixed: Assignment = {(i, "limit"): v for i, v in new_limits.items()}
            room = cap - policy.base_tokens - pinned * tm - c.summary_tokens
            if shape == "turn_max":  # keep the keep: the turns shrink
                per = (c.keep + 1) if c.keep_unit == "turns" else 1
                spare = room - (0 if c.keep_unit == "turns" else c.keep)
                tm = min(tm, spare // per) if spare > 0 else 0
                if tm < sane_turn_floor(policy) or tm >= policy.turn_max:
                    continue
                fixed[(None, "turn_max")] = tm
            else:
                most = (room - tm) // tm if c.keep_unit == "turns" else room - tm
                keep = min(keep, most)
                if keep < 1:
                    continue
            trigger = min(c.trigger, cap - tm + 1)
            if trigger < 1:
                continue
            fixed[(ci, "trigger")] = trigger
            fixed[(ci, "keep")] = keep
            floor_unit: str = policy.floor_unit
            if shape == "floor_unit":
                units = {s.unit for s in policy.stages if isinstance(s, Truncate)}
                if len(units) != 1 or policy.floor_unit in units:
                    continue
                floor_unit = units.pop()
                floor = _tail_min(replace(policy, turn_max=tm), c, keep, floor_unit)
                if floor < (MIN_SANE_TURN if floor_unit == "tokens" else 1):
                    continue  # e.g. a tail of 6 turns holds 6 tokens for sure: no floor
                fixed[(None, "floor_unit")] = floor_unit
                fixed[(None, "floor")] = floor
            else:
                hold = _tail_min(replace(policy, turn_max=tm), c, keep, policy.floor_unit)
                if hold < policy.floor:
                    if hold < 1:
                        continue
                    fixed[(None, "floor")] = hold
            if c.input_limit > 0:
                fixed[(ci, "input_limit")] = max(c.input_limit, trigger - 1 + tm - policy.base_tokens)
            if profile == "strict" and c.input == "candidates":
                fixed[(ci, "input")] = "all"
            changed = {k: v for k, v in fixed.items() if _current(policy, k) != v}
            if changed:
                out.append((f"compact before every ceiling ({ceil_name}; {shape})", changed))
    return out


def _current(policy: Policy, knob: KnobId) -> Value:
    stage, name = knob
    if stage is None:
        value: Value = getattr(policy, name)
        return value
    value = getattr(policy.stages[stage], name)
    return value


def current(policy: Policy, knob: KnobId) -> Value:
    """The policy's value of ``knob``."""
    return _current(policy, knob)


def in_range(policy: Policy, knob: KnobId, value: Value, table: list[Knob]) -> bool:
    """Whether ``value`` is within the sane range of ``knob`` (its entries in ``table``)."""
    if isinstance(value, str):
        return True
    if knob == (None, "floor") and "floor_unit" in {k.field for k in table}:
        return value >= 1  # a floor in another unit: any positive value (its range is new)
    ranges = [(k.lo, k.hi) for k in table if k.id == knob]
    if knob[1] == "input_limit" and value == 0:
        return any(hi == 0 for _, hi in ranges)
    return any(lo <= value <= (hi if hi else value) for lo, hi in ranges) or value == current(policy, knob)


def guesses(policy: Policy, knob: KnobId) -> list[int]:
    """Static guesses of a knob's boundary, probed (with the value one step beyond) before
    any bisection: right, they settle a boundary in two probes; wrong, they only narrow it.

    - ``input_limit`` of a compact stage triggering in tokens: the most a compaction can
      leave to summarize. The append that crosses the trigger is in the tail, so before it
      at most ``trigger - 1`` tokens were in context, of which ``base_tokens``, the pinned
      turns and (keep in turns) ``keep - 1`` more tail turns of at least ``turn_min`` each
      are not candidates; once the tail alone is over the trigger, each append pushes out at
      most one turn of ``turn_max``.
    - ``floor``: the fewest floor units a compaction's tail holds (:func:`_tail_min`).
    - ``trigger``: the lowest token ceiling minus one maximal turn, plus one.
    """
    stage, name = knob
    s = policy.stages[stage] if stage is not None else None
    out: list[int] = []
    if name == "input_limit" and isinstance(s, Compact) and s.trigger_unit == "tokens" and not s.trigger_any:
        rest = policy.base_tokens + policy.keep_first * policy.turn_min
        if s.keep_unit == "turns":
            rest += max(0, s.keep - 1) * policy.turn_min
        elif str(s.keep_unit) == "messages":  # at least keep // (most messages of a turn) turns
            most = getattr(policy, "messages_per_turn", (1, 1))[1]
            rest += max(0, s.keep // most - 1) * policy.turn_min
        guess = max(policy.turn_max, s.trigger - 1 - rest)
        out.append(guess)
        if getattr(s, "summary", "separate") == "message":  # the earlier summary counts too
            out.append(guess + s.summary_tokens)
    if name == "floor":
        for c in policy.stages:
            if isinstance(c, Compact):
                out.append(_tail_min(policy, c, c.keep, policy.floor_unit))
    if name == "trigger" and isinstance(s, Compact) and s.trigger_unit == "tokens" and not s.trigger_any:
        caps = [t.limit for t in policy.stages if isinstance(t, Truncate) and t.unit == "tokens"]
        caps += [policy.window] if policy.window else []
        if caps:
            out.append(min(caps) - policy.turn_max + 1)
    return [g for g in out if g > 0]
