"""Theorem registry shared by ``proofs/`` and ``tailguard prove``.

A theorem is a function that returns a :class:`Result`. It is registered with
:func:`theorem`, which records what it states, whether it expects a proof
(unsat of the negation) or a witness (a sat model), and whether it bounds the
number of intervals. Three-valued outcomes: ``unknown`` is never a pass.

This module imports nothing outside the standard library; the proofs import z3.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["theorem", "witness"]
Status = Literal["proved", "counterexample", "witness", "no-witness", "mismatch", "disagreement", "unknown"]

#: z3 resource limit per solver call: reproducible, unlike wall-clock timeouts.
DEFAULT_RLIMIT = 50_000_000

#: Seconds spent in each solver by the theorem running now (see :func:`charge`).
_CLOCK: dict[str, float] = {}


def charge(solver: str, seconds: float) -> None:
    """Record time a solver spent on a query of the running theorem."""
    _CLOCK[solver] = _CLOCK.get(solver, 0.0) + seconds


@dataclass(frozen=True)
class Result:
    """What a theorem function found.

    ``status``: ``proved`` (negation unsat), ``counterexample`` (negation sat:
    ``model`` holds it), ``witness`` (the searched-for case exists: ``model``),
    ``no-witness`` (it provably does not), ``mismatch`` (the witness, replayed through the
    generated checker, did not get the decision the theorem claims), ``disagreement`` (z3 and cvc5
    gave opposite answers to one query), ``unknown`` (budget exhausted; ``detail`` says which budget).
    ``model`` is a JSON-ready dict, normally a case in the ``tailguard check`` format.
    ``replay`` records what the concrete checker said about the model, when replayed.
    ``note``: what a passing result must still say (``tailguard prove`` prints it), such as the
    parts of a theorem that one solver decided alone under ``--solver both``.
    """

    status: Status
    detail: str = ""
    model: dict[str, Any] | None = None
    replay: dict[str, Any] | None = None
    note: str = ""


@dataclass(frozen=True)
class Theorem:
    id: str
    title: str
    statement: str
    kind: Kind
    func: Callable[[], Result]
    module: str
    bound: str | None = None  # e.g. "at most 3 intervals per list"

    def run(self) -> Outcome:
        _CLOCK.clear()
        start = time.perf_counter()
        try:
            result = self.func()
        except Exception as exc:  # a crashing proof is a failure, reported, never a pass
            result = Result("unknown", detail=f"error: {type(exc).__name__}: {exc}")
        return Outcome(self, result, time.perf_counter() - start, dict(sorted(_CLOCK.items())))


@dataclass(frozen=True)
class Outcome:
    theorem: Theorem
    result: Result
    seconds: float
    solver_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        expected: Status = "proved" if self.theorem.kind == "theorem" else "witness"
        return self.result.status == expected

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.theorem.id,
            "title": self.theorem.title,
            "kind": self.theorem.kind,
            "status": self.result.status,
            "passed": self.passed,
            "seconds": round(self.seconds, 4),
            "solver_seconds": {k: round(v, 4) for k, v in self.solver_seconds.items()},
            "bound": self.theorem.bound,
            "detail": self.result.detail,
            "model": self.result.model,
            "replay": self.result.replay,
            "note": self.result.note,
            "module": self.theorem.module,
        }


REGISTRY: dict[str, Theorem] = {}


def theorem(
    id: str, title: str, statement: str, *, kind: Kind = "theorem", bound: str | None = None
) -> Callable[[Callable[[], Result]], Callable[[], Result]]:
    """Register ``func`` as theorem ``id``. Ids are unique; re-registration replaces (reload)."""

    def register(func: Callable[[], Result]) -> Callable[[], Result]:
        REGISTRY[id] = Theorem(id, title, statement, kind, func, func.__module__, bound)
        return func

    return register
