"""Theorems that pin parts of the spec no behavioural theorem reaches (issue 16): the known
unit names, and the ``well_formed`` gate of the contract profiles.

Without them, dropping a unit name from ``spec/clauses.toml`` or turning the gate off left
every other theorem holding (only pytest noticed).
"""

from __future__ import annotations

from typing import Any

import z3

from proofs._common import replayed, setup
from tailguard._generated.checker import Decision
from tailguard.backends.z3_encode import Encoder, case_from_model, symbolic_case, unit_code
from tailguard.backends.z3_eval import find, prove
from tailguard.speclang import parse
from tailguard.speclang.load import Spec
from tailguard.tooling.theorems import Result, theorem

#: Brief section 1, restated here on purpose: the spec must agree with it.
BRIEF_UNITS = ("turns", "messages", "tokens")

#: Names a session may not use: near misses of the known ones.
NEAR_MISSES = ("Turns", "turn", "token", "message", "tokens ", "")

CONTRACT_PROFILES = ("strict", "partitioned")


@theorem(
    "T16", "The known unit names are exactly the brief's turns, messages and tokens",
    "known(u) holds exactly for the codes of turns, messages and tokens, for every integer code u; "
    "and the generated checker accepts a healthy case in each of them and refuses near misses "
    "(Turns, turn, token, message, 'tokens ', '') with well_formed in strict and partitioned.",
)
def known_units_are_the_briefs(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    zc = symbolic_case(spec)
    known_fu = Encoder(spec, zc).expr(parse.parse("known(floor_unit)"), {})
    extra: dict[str, int] = {}
    u = zc["floor_unit"]
    r, model = prove(known_fu == z3.Or([u == unit_code(spec, name, extra) for name in BRIEF_UNITS]))
    if r.status != "proved":
        code = model.eval(u, model_completion=True).as_long() if model is not None else None
        return Result(r.status, detail=f"known() and the brief's units differ (unit code {code}; the spec "
                      f"lists {list(spec.units)})")
    cases = {f"{kind}:{name!r}": _healthy(name) for kind, names in (("known", BRIEF_UNITS), ("near", NEAR_MISSES))
             for name in names}

    def expect(_: Any, d: dict[str, dict[str, Decision]]) -> str | None:
        for label, by_profile in d.items():
            for pid in CONTRACT_PROFILES:
                got = by_profile[pid]
                ok = got.allowed if label.startswith("known:") else got.failed == ("well_formed",)
                if not ok:
                    return f"{label} under {pid}: {got}"
        return None

    replay = replayed(spec, cases, expect, model={"units": list(BRIEF_UNITS), "near_misses": list(NEAR_MISSES)})
    if replay.status != "witness":
        return replay
    return Result("proved", detail="known() is the brief's three codes; the checker agrees on each name and "
                  "near miss", model=replay.model, replay=replay.replay)


def _healthy(unit: str) -> dict[str, Any]:
    """A case strict allows whatever the unit, when the unit is known."""
    return {"history_end": 4, "tail_start": 2, "summary_input": [0, 4], "summary_covers": [0, 2],
            "recovery_floor_span": 2, "floor_unit": unit, "truncator_unit": unit,
            "prior_truncations": [], "prior_coverage": [], "spills": []}


@theorem(
    "T17", "An ill-formed case is refused by the gate alone",
    "Strict and partitioned declare well_formed as their gate and evaluate it first; witness: a "
    "case that fails well_formed and also, read literally, no_hole, which the generated checker "
    "refuses reporting well_formed alone and no holes (an ill-formed case gets no other verdict).",
    kind="witness",
)
def ill_formed_refused_by_gate(spec: Spec | None = None) -> Result:
    spec = setup(spec)
    for pid in CONTRACT_PROFILES:
        p = spec.profile(pid)
        if p.wellformed != "well_formed" or p.clauses[0].id != "well_formed":
            return Result("no-witness", detail=f"{pid}: gate {p.wellformed!r}, first clause {p.clauses[0].id!r}: "
                          "the gate must be well_formed, evaluated first")
    strict = spec.profile("strict")
    zc = symbolic_case(spec, bound=1)
    enc = Encoder(spec, zc)
    n, t = zc["n"], zc["t"]
    # ill-formed in a way a careless reader would still evaluate: the tail starts past the end
    formula = z3.And(zc.side_conditions(), n >= 0, n <= 20, t > n, zc["F"] >= 0,
                     zc["floor_unit"] == 0, zc["truncator_unit"] == 0,
                     z3.Not(enc.clause(strict, "well_formed")), z3.Not(enc.clause(strict, "no_hole")))
    result, model = find(formula)
    if result.status != "witness":
        return result
    case = case_from_model(spec, zc, model)

    def expect(_: Any, d: dict[str, dict[str, Decision]]) -> str | None:
        for pid in CONTRACT_PROFILES:
            got = d["case"][pid]
            if got.failed != ("well_formed",) or got.holes:
                return f"{pid}: {got} (the gate must stop evaluation)"
        return None

    return replayed(spec, {"case": case}, expect)

