"""Run an implementation over the vectors and random cases; compare; report.

Comparison modes (declared, default ``everything``):

- ``decision``: only ``allow``/``refuse`` must agree;
- ``clauses``: the decision and ``failed`` (the clause ids, in spec order);
- ``everything``: the decision, ``failed`` and ``holes``.

A vector whose expected answer is ``{"unusable": [names]}`` agrees with an error answer only,
in every mode; in ``clauses`` and ``everything`` the error must name one of the names (its
text starts with it). A ``declinable`` vector (an integer beyond ±(2^53-1), SPEC.md section
3.4) may also be answered with an error: counted as *declined*, never as a mismatch; a
decision there must still be the exact one.

Exit codes: 0 every answer agrees, 1 any mismatch, 2 the implementation crashed, hung
(per-case timeout) or answered with something that is not a response.
"""

from __future__ import annotations

import json
import random
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tailguard.base.vocab import UNITS
from tailguard.conform import run_parts
from tailguard.conform.protocol import Child, Response, request_line
from tailguard.conform.vectors import Vector

MODES = ("decision", "clauses", "everything")
_KEYS = {"decision": ("decision",), "clauses": ("decision", "failed"), "everything": ("decision", "failed", "holes")}


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def is_error(actual: Response) -> bool:
    return "error" in actual and "decision" not in actual


def names_field(error: str, names: Sequence[str]) -> bool:
    """Whether an error text starts with one of ``names`` (``history_end: ...``, ``spills[0][1]: ...``)."""
    m = _NAME.match(error)
    return m is not None and m.group() in names


def compare(mode: str, expected: dict[str, Any], actual: Response) -> bool:
    """Whether ``actual`` agrees with ``expected`` under ``mode``: an error answer agrees only with an
    expected ``unusable`` (naming one of its names, except in mode ``decision``), a decision only
    with the same decision."""
    if "unusable" in expected:
        return is_error(actual) and (mode == "decision" or names_field(actual["error"], expected["unusable"]))
    if is_error(actual):
        return False
    for key in _KEYS[mode]:
        want = expected[key]
        got = actual.get(key, [] if key != "decision" else None)
        if key == "holes" and isinstance(got, list):
            got = [list(h) for h in got]
        if got != want:
            return False
    return True


@dataclass(frozen=True)
class Check:
    """One question put to the implementation."""

    id: str
    profile: str
    case: dict[str, Any]
    expected: dict[str, Any]
    what: str
    group: str  # for the summary: what kind of thing this check exercises
    text: str = ""  # the case's exact JSON text, as sent
    declinable: str | None = None  # why an error answer is acceptable instead of the decision

    @property
    def case_text(self) -> str:
        return self.text or json.dumps(self.case, separators=(",", ":"))


@dataclass
class Mismatch:
    check: Check
    actual: Response


@dataclass
class Outcome(run_parts.Outcome[Check, Mismatch]):
    declined: int = 0  # declinable checks answered with an error (a declared limit), counted in agreed


def random_case(rng: random.Random) -> dict[str, Any]:
    """A small case around shared endpoints: mostly well formed, sometimes not (stdlib only)."""
    n = rng.randint(0, 16)
    pool = [0, 1, n, n - 1, rng.randint(0, n), rng.randint(0, n), rng.randint(-2, 18)]

    def end() -> int:
        return rng.choice(pool)

    def pair() -> list[int]:
        lo, hi = end(), end()
        return [min(lo, hi), max(lo, hi)] if rng.random() < 0.92 else [lo, hi]

    def pairs() -> list[list[int]]:
        return [pair() for _ in range(rng.choice((0, 0, 1, 1, 2, 3)))]

    unit = rng.choice(UNITS)
    other = rng.choice((unit, unit, unit, *UNITS, "Turns"))
    F = rng.choice((rng.randint(0, 5), n, n + 1, rng.randint(0, n), end()))
    t = rng.choice((n, n - F, max(0, n - F), end(), rng.randint(0, n)))
    return {
        "history_end": n, "tail_start": t, "summary_input": pair(), "summary_covers": pair(),
        "recovery_floor_span": F, "floor_unit": unit, "truncator_unit": other,
        "prior_truncations": pairs(), "prior_coverage": pairs(), "spills": pairs(),
    }


def random_checks(count: int, seed: int, profiles: Sequence[str]) -> Iterator[Check]:
    """``count`` random cases (fixed by ``seed``), expected from the naive per-offset reference."""
    from tailguard._generated.checker import check
    from tailguard.oracles.reference import reference

    rng = random.Random(seed)
    for k in range(count):
        case = random_case(rng)
        for profile in profiles:
            want = reference(profile, **case)
            if check(profile, **case) != want:  # pragma: no cover - the equivalence tests forbid it
                raise AssertionError(f"reference and generated checker disagree on {json.dumps(case)}")
            yield Check(f"random/{seed}/{k}", profile, case, want.to_json(), f"random case {k} of seed {seed}",
                        "random cases (reference)")


def vector_checks(vectors: Sequence[Vector], profiles: Sequence[str]) -> Iterator[Check]:
    for v in vectors:
        for profile in profiles:
            yield Check(v.id, profile, v.case, v.expected[profile], v.describe(), v.group(), v.text, v.declinable)


def run(command: Sequence[str], checks: Iterator[Check], *, mode: str = "everything",
        timeout: float = 5.0) -> Outcome:
    """Ask every check of the implementation; stop at the first protocol failure."""
    out = Outcome()

    def step(child: Child, chk: Check) -> None:
        actual = child.ask(chk.profile, chk.case_text)
        if compare(mode, chk.expected, actual):
            out.agreed += 1
        elif chk.declinable and is_error(actual):
            out.agreed += 1
            out.declined += 1
        else:
            out.mismatches.append(Mismatch(chk, actual))

    run_parts.drive(out, command, checks, timeout, step)
    return out


def reproduce_line(command: Sequence[str], chk: Check) -> str:
    """A shell line that asks the implementation this one question."""
    return f"printf '%s\\n' {shlex.quote(request_line(chk.profile, chk.case_text))} | {shlex.join(command)}"


def _j(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


def _shown_expected(expected: dict[str, Any], mode: str) -> dict[str, Any]:
    if "unusable" in expected:
        return {"error": " | ".join(f"{n}: ..." for n in expected["unusable"])}
    return {k: expected[k] for k in _KEYS[mode]}


def report(out: Outcome, command: Sequence[str], *, mode: str, max_details: int = 10) -> list[str]:
    """The human report: every mismatch (up to ``max_details`` in full), then a summary."""
    lines: list[str] = []
    for m in out.mismatches[:max_details]:
        c = m.check
        shown = {k: m.actual.get(k) for k in ("decision", "failed", "holes", "error") if k in m.actual}
        lines += [
            f"MISMATCH {c.id} (profile {c.profile}): {c.what}",
            f"  case:      {c.case_text if c.text else _j(c.case)}",
            f"  expected:  {_j(_shown_expected(c.expected, mode))}",
            f"  actual:    {_j(shown)}",
            f"  reproduce: {reproduce_line(command, c)}",
        ]
    if len(out.mismatches) > max_details:
        lines.append(f"... and {len(out.mismatches) - max_details} more mismatches")
    lines += run_parts.tail_lines(out, lambda chk: reproduce_line(command, chk))
    verdict = run_parts.VERDICTS[out.exit_code]
    declined = (f" ({out.declined} declined at a declared limit: an error for an integer beyond ±(2^53-1))"
                if out.declined else "")
    lines.append(
        f"{verdict}: {out.agreed}/{out.checks} answers agree{declined}, {len(out.mismatches)} mismatch(es), "
        f"mode {mode}, {out.seconds:.2f} s"
    )
    return lines
