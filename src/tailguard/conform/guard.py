"""Verify someone else's Python guard against the spec (``tailguard verify-guard``).

Guard protocol: the function takes case fields as keyword arguments; it *allows* by returning
normally (``None``, ``True`` or anything but ``False``) and *refuses* by raising any
exception or returning ``False``. Only the decision is compared.

Adapting to the guard's signature: only the parameters the function declares are passed.
A parameter named like a case field gets that field (intervals as ``(lo, hi)`` tuples, lists
as lists of tuples); ``<interval field>_start`` / ``_end`` get its ``lo`` / ``hi`` (the seed's
``summary_input_start`` is ``summary_input[0]``); ``**kwargs`` gets every field. A required
parameter that is none of these makes the guard unverifiable (exit 2). The spec still decides
on the whole case, so a guard that ignores a field it needs shows up as a disagreement.

Phases: (1) every conformance vector with a decision (the unusable-input vectors are JSON
text, which a function taking values never reads: ``tailguard conform`` checks those);
(2) Hypothesis differential testing against the naive reference, shrunk to a smallest case;
(3) ``crosshair diffbehavior`` between the guard and the spec, when the guard takes every
case field (otherwise the two functions cannot share a signature and the phase is reported as
skipped). Hypothesis and CrossHair load only here.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailguard._generated.checker import FIELDS, check
from tailguard.base.errors import GuardError as GuardError
from tailguard.base.vocab import WELL_FORMED

INTERVAL_FIELDS = ("summary_input", "summary_covers")
LIST_FIELDS = ("prior_truncations", "prior_coverage", "spills")
_ANNOTATION = {"history_end": "int", "tail_start": "int", "recovery_floor_span": "int",
               "summary_input": "tuple[int, int]", "summary_covers": "tuple[int, int]",
               "floor_unit": "str", "truncator_unit": "str", "prior_truncations": "list[tuple[int, int]]",
               "prior_coverage": "list[tuple[int, int]]", "spills": "list[tuple[int, int]]"}


def load_guard(spec: str) -> Callable[..., Any]:
    """``MODULE:FUNCTION`` -> the function (the current directory is importable)."""
    if ":" not in spec:
        raise GuardError(
            f"{spec!r}: expected MODULE:FUNCTION, e.g. tailguard.oracles.seed_transcribed:assert_compaction_safe"
        )
    mod_name, _, fn_name = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except Exception as exc:  # any import failure is the user's module's
        raise GuardError(f"cannot import {mod_name!r}: {type(exc).__name__}: {exc}") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise GuardError(f"{mod_name!r} has no function {fn_name!r}")
    return fn  # type: ignore[no-any-return]


def _value_for(name: str, case: dict[str, Any]) -> Any:
    if name in INTERVAL_FIELDS:
        return tuple(case[name])
    if name in LIST_FIELDS:
        return [tuple(p) for p in case[name]]
    if name in case:
        return case[name]
    for f in INTERVAL_FIELDS:
        if name == f"{f}_start":
            return case[f][0]
        if name == f"{f}_end":
            return case[f][1]
    raise KeyError(name)


@dataclass(frozen=True)
class Adapter:
    """How a case becomes the guard's keyword arguments."""

    params: tuple[str, ...]  # the names passed
    takes_all: bool  # every case field reaches the guard
    ignored: tuple[str, ...]  # case fields the guard never sees

    @staticmethod
    def for_function(fn: Callable[..., Any]) -> Adapter:
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise GuardError(f"cannot read the guard's signature: {exc}") from None
        sample = {f: ([0, 0] if f in INTERVAL_FIELDS else [] if f in LIST_FIELDS else 0) for f in FIELDS}
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
            return Adapter(tuple(FIELDS), True, ())
        names: list[str] = []
        for p in sig.parameters.values():
            if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
                if p.default is inspect.Parameter.empty and p.kind is inspect.Parameter.POSITIONAL_ONLY:
                    raise GuardError(f"parameter {p.name!r} is positional-only; the guard takes keyword arguments")
                continue
            try:
                _value_for(p.name, sample)
            except KeyError:
                if p.default is inspect.Parameter.empty:
                    raise GuardError(f"required parameter {p.name!r} is not a case field "
                                     f"(fields: {', '.join(FIELDS)}; or <interval>_start/_end)") from None
                continue
            names.append(p.name)
        seen = {n if n in FIELDS else n.rsplit("_", 1)[0] for n in names}
        exact = {n for n in names if n in FIELDS}
        ignored = tuple(f for f in FIELDS if f not in seen)
        return Adapter(tuple(names), exact == set(FIELDS), ignored)

    def kwargs(self, case: dict[str, Any]) -> dict[str, Any]:
        return {n: _value_for(n, case) for n in self.params}


def guard_allows(fn: Callable[..., Any], adapter: Adapter, case: dict[str, Any]) -> bool:
    try:
        result = fn(**adapter.kwargs(case))
    except Exception:  # refusing by raising is the protocol
        return False
    return result is not False


def spec_allows(profile: str, case: dict[str, Any]) -> bool:
    return check(profile, **{f: _value_for(f, case) for f in FIELDS}).allowed


def _malformed(case: dict[str, Any]) -> bool:
    return check("strict", **{f: _value_for(f, case) for f in FIELDS}).failed == (WELL_FORMED,)


def size(case: dict[str, Any]) -> tuple[int, int]:
    """Smaller is simpler: number of intervals, then the sum of absolute values."""
    ints = [case["history_end"], case["tail_start"], case["recovery_floor_span"],
            *case["summary_input"], *case["summary_covers"]]
    pairs = [p for f in LIST_FIELDS for p in case[f]]
    return len(pairs), sum(abs(x) for x in ints) + sum(abs(x) for p in pairs for x in p)


@dataclass
class Disagreement:
    phase: str
    case: dict[str, Any]
    guard: str
    spec: str
    source: str = ""


@dataclass
class Verdict:
    profile: str
    adapter: Adapter
    phases: list[str] = field(default_factory=list)  # one line per phase
    disagreements: list[Disagreement] = field(default_factory=list)
    unknown: bool = False

    def smallest(self, guard: str | None = None) -> Disagreement | None:
        """The simplest disagreement (where the guard said ``guard``, if given)."""
        found = [d for d in self.disagreements if "crosshair" not in d.case and guard in (None, d.guard)]
        # a consistent case says more about the guard's logic than one it merely fails to validate
        return min(found, key=lambda d: (_malformed(d.case), size(d.case)), default=None)

    @property
    def exit_code(self) -> int:
        return 1 if self.disagreements else 0


def _word(allow: bool) -> str:
    return "allow" if allow else "refuse"


def phase_vectors(fn: Callable[..., Any], adapter: Adapter, profile: str, vectors: Iterable[Any],
                  verdict: Verdict) -> None:
    n = bad = 0
    for v in vectors:
        if not v.decides or not isinstance(v.case, dict):
            continue  # unusable input: a Python guard takes values, not JSON text (`tailguard conform` reads text)
        n += 1
        want = v.expected[profile]["decision"] == "allow"
        got = guard_allows(fn, adapter, v.case)
        if got != want:
            bad += 1
            verdict.disagreements.append(Disagreement("vectors", v.case, _word(got), _word(want), v.id))
    verdict.phases.append(f"vectors: {n - bad}/{n} agree")


def phase_hypothesis(fn: Callable[..., Any], adapter: Adapter, profile: str, examples: int,
                     verdict: Verdict) -> None:
    from hypothesis import HealthCheck, find as hfind, settings, strategies as st
    from hypothesis.errors import NoSuchExample

    from tailguard.oracles.reference import reference

    small = st.integers(-1, 14)
    pair = st.tuples(small, small).map(lambda p: [min(p), max(p)]) | st.tuples(small, small).map(list)
    pairs = st.lists(pair, max_size=3)
    unit = st.sampled_from(("turns", "turns", "messages", "tokens", "Turns"))
    cases = st.fixed_dictionaries({
        "history_end": st.integers(0, 14) | small, "tail_start": small, "summary_input": pair,
        "summary_covers": pair, "recovery_floor_span": st.integers(0, 14) | small,
        "floor_unit": st.just("turns") | unit, "truncator_unit": st.just("turns") | unit,
        "prior_truncations": pairs, "prior_coverage": pairs, "spills": pairs,
    })

    def disagrees(case: dict[str, Any]) -> bool:
        return guard_allows(fn, adapter, case) != reference(profile, **{
            f: _value_for(f, case) for f in FIELDS}).allowed

    cfg = settings(max_examples=examples, database=None, derandomize=True, deadline=None,
                   suppress_health_check=list(HealthCheck))
    try:
        case = hfind(cases, disagrees, settings=cfg)
    except NoSuchExample:
        verdict.phases.append(f"hypothesis: no disagreement in {examples} examples (derandomized)")
        return
    want = spec_allows(profile, case)
    verdict.disagreements.append(Disagreement("hypothesis", case, _word(not want), _word(want), "shrunk by Hypothesis"))
    verdict.phases.append("hypothesis: found a disagreement (shrunk)")


def phase_crosshair(guard_spec: str, adapter: Adapter, profile: str, timeout: int, verdict: Verdict) -> None:
    if not adapter.takes_all:
        missing = ", ".join(f for f in FIELDS if f not in adapter.params)
        verdict.phases.append(f"crosshair: skipped (applies only to a guard taking every case field; "
                              f"this one does not take {missing})")
        return
    mod_name, _, fn_name = guard_spec.partition(":")
    sig = ", ".join(f"{f}: {_ANNOTATION[f]}" for f in FIELDS)
    call = ", ".join(f"{f}={f}" for f in FIELDS)
    source = textwrap.dedent(f"""\
        import {mod_name} as _guard_module
        from tailguard._generated.checker import check


        def guard_outcome({sig}) -> bool:
            try:
                return _guard_module.{fn_name}({call}) is not False
            except Exception:
                return False


        def spec_outcome({sig}) -> bool:
            return check({profile!r}, {call}).allowed
        """)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "tailguard_diff_target.py").write_text(source, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, os.getcwd(), os.environ.get("PYTHONPATH", "")])}
        exe = Path(sys.executable).with_name("crosshair")
        cmd = [str(exe) if exe.exists() else "crosshair", "diffbehavior",
               "tailguard_diff_target.guard_outcome", "tailguard_diff_target.spec_outcome",
               f"--per_condition_timeout={timeout}"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout * 4 + 30,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            verdict.phases.append(f"crosshair: could not run ({exc})")
            verdict.unknown = True
            return
    if proc.returncode == 0:
        verdict.phases.append(f"crosshair: no difference found in {timeout} s (not a proof)")
    elif proc.returncode == 1:
        text = proc.stdout.strip().splitlines()
        verdict.phases.append("crosshair: found a difference: " + " | ".join(text[:4]))
        verdict.disagreements.append(Disagreement("crosshair", {"crosshair": "\n".join(text)}, "?", "?", ""))
    else:
        verdict.phases.append(f"crosshair: error (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
        verdict.unknown = True


def verify(guard_spec: str, *, profile: str = "strict", vectors: Iterable[Any] = (), examples: int = 500,
           crosshair: bool = True, crosshair_timeout: int = 10) -> Verdict:
    fn = load_guard(guard_spec)
    adapter = Adapter.for_function(fn)
    verdict = Verdict(profile, adapter)
    phase_vectors(fn, adapter, profile, vectors, verdict)
    if examples > 0:
        phase_hypothesis(fn, adapter, profile, examples, verdict)
    if crosshair:
        phase_crosshair(guard_spec, adapter, profile, crosshair_timeout, verdict)
    return verdict


def render(verdict: Verdict, guard_spec: str) -> list[str]:
    a = verdict.adapter
    lines = [f"verify-guard {guard_spec} against profile {verdict.profile}",
             f"  passes: {', '.join(a.params)}" + (f"; never sees: {', '.join(a.ignored)}" if a.ignored else "")]
    lines += [f"  {p}" for p in verdict.phases]
    if not verdict.disagreements:
        lines.append("AGREES on every case tried" + (" (some phase could not decide)" if verdict.unknown else ""))
        return lines
    bad_input = sum(1 for d in verdict.disagreements if d.guard == "allow" and "crosshair" not in d.case
                    and _malformed(d.case))
    lines.append(f"DISAGREES on {len(verdict.disagreements)} case(s)"
                 + (f", {bad_input} of them inconsistent input the guard allows (strict well_formed)" if bad_input
                    else ""))
    labels = {"allow": f"smallest case the guard ALLOWS but profile {verdict.profile} refuses (unsafe)",
              "refuse": f"smallest case the guard refuses but profile {verdict.profile} allows (needless refusal)"}
    for said, label in labels.items():
        d = verdict.smallest(said)
        if d is None:
            continue
        case = json.dumps(d.case)
        failed = check(verdict.profile, **{f: _value_for(f, d.case) for f in FIELDS}).failed
        lines.append(f"  {label}; found by {d.phase}" + (f" ({d.source})" if d.source else "")
                     + (f"; spec fails {', '.join(failed)}" if failed else ""))
        lines.append(f"    case: {case}")
        lines.append(f"    reproduce: echo '{case}' | tailguard check --profile {verdict.profile} -")
    for d in verdict.disagreements:
        if "crosshair" in d.case:
            lines.append("  crosshair: " + d.case["crosshair"].replace("\n", "\n    "))
    return lines
