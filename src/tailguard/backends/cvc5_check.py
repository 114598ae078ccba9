"""Re-decide a z3 query with cvc5, through SMT-LIB 2.

The theorems build their queries as z3 terms. :func:`smtlib` exports the assertions of a
query as an SMT-LIB 2.6 script (z3's own printer, with the symbols that SMT-LIB requires
quoted), and :func:`decide` runs cvc5 on that text. cvc5 is a separate implementation of
the same theories (integers, arrays, quantifiers), so a query both solvers decide the same
way does not rest on one solver's bugs.

Quantified queries need instantiation strategies: cvc5's default (e-matching) settles most;
enumerative instantiation (``enum-inst``) refutes most of the rest and gives up at once
("incomplete") on a satisfiable query; model-based instantiation (``mbqi``) then finds the
models of satisfiable quantified assumptions (on an unsatisfiable query it can search for a
long time, so it goes last). :func:`decide` tries them in that order, each under a resource
budget (``rlimit-per``, cvc5's own reproducible units) and a wall-clock safety net
(``tlimit-per``: mbqi does not count all its work as resources), and returns the first
definite answer. Every definite answer of cvc5 is sound whichever strategy gave it; when
none is definite the answer is ``unknown``, which never passes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import z3

from tailguard.base.errors import Cvc5Missing as Cvc5Missing

#: cvc5 resource units per strategy and query; reproducible, unlike a time limit. The
#: slowest query of the theorems (T12, enumerative instantiation) needs about a tenth of it.
DEFAULT_CVC5_RLIMIT = 200_000_000
#: Milliseconds per strategy and query: a safety net only (see the module doc).
DEFAULT_CVC5_TLIMIT_MS = 120_000

#: (name, options) tried in order; the first definite answer wins.
STRATEGIES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("e-matching", ()),
    ("enum-inst", (("enum-inst", "true"),)),
    ("mbqi", (("mbqi", "true"),)),
)

# A simple symbol of SMT-LIB is letters, digits and ~!@$%^&*_-+=<>.?/ ; z3 prints names such as
# I'.lo (the proofs' "changed case" prefix) bare, which cvc5 rightly rejects: quote them.
_NEEDS_QUOTES = re.compile(r"(?<![|\w.'])([A-Za-z_][\w.]*'[\w.']*)")


@dataclass(frozen=True)
class Cvc5Answer:
    status: str  # "sat", "unsat" or "unknown"
    strategy: str  # which strategy answered, or all of them tried for "unknown"
    reason: str = ""


def available() -> bool:
    try:
        import cvc5  # noqa: F401
    except ImportError:
        return False
    return True


def smtlib(assertions: Sequence[Any]) -> str:
    """The query as an SMT-LIB 2.6 script: declarations, assertions, ``(check-sat)``."""
    s = z3.Solver(ctx=next((a.ctx for a in assertions if z3.is_expr(a)), None))
    s.add(*assertions)
    return _NEEDS_QUOTES.sub(r"|\1|", s.to_smt2())


def _run(script: str, options: tuple[tuple[str, str], ...], rlimit: int, tlimit_ms: int) -> tuple[str, str]:
    import cvc5

    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setLogic("ALL")
    solver.setOption("rlimit-per", str(rlimit))
    solver.setOption("tlimit-per", str(tlimit_ms))
    for key, value in options:
        solver.setOption(key, value)
    parser = cvc5.InputParser(solver)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, script, "query")
    symbols = parser.getSymbolManager()
    answer = None
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        printed = command.invoke(solver, symbols)
        if command.getCommandName() == "check-sat":
            answer = printed.strip()
    if answer is None:
        raise ValueError("the exported query has no (check-sat)")
    status, _, reason = answer.partition(" ")
    return status, reason.strip("()")


def decide(assertions: Sequence[Any], *, rlimit: int = DEFAULT_CVC5_RLIMIT,
           tlimit_ms: int = DEFAULT_CVC5_TLIMIT_MS) -> Cvc5Answer:
    """Satisfiability of the conjunction of ``assertions`` according to cvc5."""
    if not available():
        raise Cvc5Missing("cvc5 is not installed: pip install cvc5 (or the 'prove' extra)")
    script = smtlib(assertions)
    reasons = []
    for name, options in STRATEGIES:
        status, reason = _run(script, options, rlimit, tlimit_ms)
        if status in ("sat", "unsat"):
            return Cvc5Answer(status, name)
        reasons.append(f"{name}: {reason or status}")
    return Cvc5Answer("unknown", "+".join(n for n, _ in STRATEGIES),
                      reason=f"{'; '.join(reasons)} (rlimit-per {rlimit}, tlimit-per {tlimit_ms} ms each)")
