"""What the stateless kit (:mod:`.harness`) and the ledger kit (:mod:`.ledger`) share.

A run asks the implementation one check after another through one :class:`Child` and stops at
the first protocol failure; its outcome counts what agreed and keeps the mismatches; its report
ends with a tally of the mismatches by what they exercise and the failure, if any.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from tailguard.conform.protocol import Child, ProtocolFailure


class CheckLike(Protocol):
    """What a report needs of a check."""

    @property
    def id(self) -> str: ...
    @property
    def profile(self) -> str: ...
    @property
    def group(self) -> str: ...


class MismatchLike(Protocol):
    @property
    def check(self) -> CheckLike: ...


C = TypeVar("C", bound=CheckLike)
M = TypeVar("M", bound=MismatchLike)


@dataclass
class Outcome(Generic[C, M]):
    """What a run found: checks asked, agreed, the mismatches and a protocol failure, if any."""

    checks: int = 0
    agreed: int = 0
    mismatches: list[M] = field(default_factory=list)
    failure: ProtocolFailure | None = None
    failure_check: C | None = None
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.failure is not None:
            return 2
        return 1 if self.mismatches else 0


def drive(out: Outcome[C, M], command: Sequence[str], checks: Iterator[C], timeout: float,
          step: Callable[[Child, C], None]) -> None:
    """Start the implementation, ``step`` through every check; stop at the first protocol failure."""
    start = time.monotonic()
    child: Child | None = None
    try:
        child = Child(command, timeout=timeout)
        for chk in checks:
            out.checks += 1
            try:
                step(child, chk)
            except ProtocolFailure as exc:
                out.failure, out.failure_check = exc, chk
                break
    except ProtocolFailure as exc:
        out.failure = exc
    finally:
        if child is not None:
            child.close()
        out.seconds = time.monotonic() - start


def tail_lines(out: Outcome[C, M], reproduce: Callable[[C], str], *, kinds: int = 15) -> list[str]:
    """The mismatches counted by what they exercise (the ``kinds`` commonest), then the failure."""
    lines: list[str] = []
    if out.mismatches:
        by: dict[str, int] = {}
        for m in out.mismatches:
            key = f"profile {m.check.profile}: {m.check.group}"
            by[key] = by.get(key, 0) + 1
        lines.append("mismatches by what they exercise:")
        ranked = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))
        lines += [f"  {n:4d}  {k}" for k, n in ranked[:kinds]]
        if len(ranked) > kinds:
            lines.append(f"  ... {len(ranked) - kinds} more kinds")
    if out.failure is not None:
        fc = out.failure_check
        where = f" on {fc.id} (profile {fc.profile})" if fc is not None else ""
        lines.append(f"IMPLEMENTATION FAILURE ({out.failure.kind}){where}: {out.failure.detail}")
        if fc is not None:
            lines.append(f"  reproduce: {reproduce(fc)}")
    return lines


VERDICTS = {0: "CONFORMS", 1: "DOES NOT CONFORM", 2: "UNUSABLE"}
