"""Fix synthesis: for each knob, the nearest value that makes the policy safe.

Each knob is moved alone, in the direction that can help, by doubling steps until a
safe value appears, then by bisection to an adjacent pair: the suggested value is
re-verified safe and the value one step beyond is shown unsafe (both by the full
engine, so the boundary is exact). Bisection finds the boundary nearest the current
value when the verdict is monotone in the knob between them; the checked pair is
reported either way. Unit mismatches (``unenforceable``) are not numeric: the
numeric search judges the session dynamics only, and the unit fix is stated apart.
Under ``--profile strict`` a compact stage with ``input = "candidates"`` and a floor
never shows the floor to its summarizer; ``input = "all"`` is suggested apart, with the
verdict the engine gives the policy once every such stage says it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tailguard.pipeline.model import DEFAULT_PROFILE, Profile
from tailguard.pipeline.policy import Compact, Policy, Spill, Truncate
from tailguard.pipeline.solver import Budget, decide


def _knobs(policy: Policy) -> list[tuple[str, int | None, str, int, int, int]]:
    """(knob, stage, dotted key, current, direction, far bound) for every repair knob."""
    far = 4 * policy.turn_max + 1000
    # the largest occupancy any stage speaks of: a summarizer input limit above it sees everything
    scale = policy.base_tokens + policy.turn_max + max(
        [s.limit if isinstance(s, Truncate) else s.trigger for s in policy.stages
         if not isinstance(s, Spill)], default=0)
    out: list[tuple[str, int | None, str, int, int, int]] = []
    for i, s in enumerate(policy.stages):
        if isinstance(s, Truncate):
            out.append(("limit", i, f"stage.{i}.limit", s.limit, +1, 4 * s.limit + far))
        elif isinstance(s, Compact):
            out.append(("trigger", i, f"stage.{i}.trigger", s.trigger, -1, 0))
            out.append(("keep", i, f"stage.{i}.keep", s.keep, +1, 4 * s.keep + far))
            out.append(("keep", i, f"stage.{i}.keep", s.keep, -1, 0))
            if s.input_limit > 0:
                out.append(("input_limit", i, f"stage.{i}.input_limit", s.input_limit, +1,
                            4 * s.input_limit + 2 * scale + far))
    out.append(("floor", None, "floor", policy.floor, -1, 0))
    out.append(("turn_max", None, "turn_tokens", policy.turn_max, -1, policy.turn_min))
    return out


def suggest(
    policy: Policy,
    budget: Budget | None = None,
    progress: Callable[[str], None] | None = None,
    profile: Profile = DEFAULT_PROFILE,
) -> list[dict[str, Any]]:
    """Suggestions as JSON-ready dicts (``text`` is the human sentence).

    ``progress`` (if given) hears one line per verdict probed: real-size policies can take
    minutes, mostly in probes that end unknown.
    """
    budget = budget or replace(Budget.of(20, depth=40), quick_depth=12)
    cache: dict[tuple[str, int | None, int], str] = {}
    out: list[dict[str, Any]] = []
    if any(isinstance(s, Truncate) and s.unit != policy.floor_unit for s in policy.stages):
        units = {s.unit for s in policy.stages if isinstance(s, Truncate)}
        out.append({"knob": "floor_unit", "line": policy.line_of("floor_unit"),
                    "text": f"floor_unit: use {' or '.join(sorted(units))} (the truncator's unit);"
                            " a floor in another unit cannot be enforced"})
    hidden = [i for i, s in enumerate(policy.stages) if isinstance(s, Compact) and s.input == "candidates"]
    if profile == "strict" and policy.floor > 0 and hidden:
        shown = replace(policy, stages=tuple(
            replace(s, input="all") if isinstance(s, Compact) and i in hidden else s
            for i, s in enumerate(policy.stages)))
        after = decide(shown, budget, ignore_static=True, profile=profile).verdict
        if progress is not None:
            progress(f"suggest: {policy.file}: input = \"all\": {after}")
        for i in hidden:
            key = f"stage.{i}.input"
            out.append({"knob": key, "line": policy.line_of(key), "from": "candidates", "to": "all",
                        "verdict": after,
                        "text": f"{key}: \"candidates\" -> \"all\" (show the summarizer the tail, "
                                f"which holds the floor; with every such stage changed the policy is "
                                f"{after}), or check with --profile partitioned if the tail stays "
                                f"verbatim unsummarized"})
    for knob, stage, key, current, direction, bound in _knobs(policy):

        def verdict(value: int, knob: str = knob, stage: int | None = stage) -> str:
            probe = (knob, stage, value)
            if probe not in cache:
                cache[probe] = decide(policy.with_knob(knob, value, stage), budget,
                                      ignore_static=True, profile=profile).verdict
                if progress is not None:
                    progress(f"suggest: {policy.file}: {knob} = {value}: {cache[probe]}")
            return cache[probe]

        found = _boundary(verdict, current, direction, bound)
        if found is None:
            continue
        safe_value, beyond, beyond_verdict = found
        text = f"{key}: {current} -> {safe_value} (verified safe; {beyond} is {beyond_verdict})"
        out.append({"knob": key, "line": policy.line_of(key), "from": current, "to": safe_value,
                    "beyond": beyond, "beyond_verdict": beyond_verdict, "text": text})
    return out


def _boundary(
    verdict: Callable[[int], str], current: int, direction: int, bound: int
) -> tuple[int, int, str] | None:
    """Adjacent (safe, beyond) pair from ``current`` towards ``bound``, or ``None``."""
    if verdict(current) == "safe":
        return None
    last_bad, step = current, 1
    while True:
        probe = current + direction * step
        if (probe - bound) * direction > 0:
            probe = bound
        if probe < 0 or probe == last_bad:
            return None
        if verdict(probe) == "safe":
            break
        last_bad = probe
        if probe == bound:
            return None
        step *= 2
    good = probe
    while abs(good - last_bad) > 1:
        mid = (good + last_bad) // 2
        if verdict(mid) == "safe":
            good = mid
        else:
            last_bad = mid
    return good, last_bad, verdict(last_bad)
