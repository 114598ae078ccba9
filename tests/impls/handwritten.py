"""A conforming implementation written by hand from SPEC.md, with optional injected bugs.

Independent of tailguard (standard library only): endpoint arithmetic on sorted interval
lists, the way another team would write it. ``--off-by-one CLAUSE`` moves one boundary of
that one clause by one unit, which ``tailguard conform`` must catch and name.

    python tests/impls/handwritten.py [--off-by-one CLAUSE]
"""

from __future__ import annotations

import json
import sys

UNITS = ("turns", "messages", "tokens")
BUG = sys.argv[sys.argv.index("--off-by-one") + 1] if "--off-by-one" in sys.argv else ""


def off(clause: str) -> int:
    return 1 if clause == BUG else 0


def merged(pairs):
    out = []
    for lo, hi in sorted((lo, hi) for lo, hi in pairs if lo < hi):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def minus(a, b):
    """a \\ b for merged lists."""
    out = []
    for lo, hi in a:
        cur = lo
        for blo, bhi in b:
            if bhi <= cur or blo >= hi:
                continue
            if blo > cur:
                out.append([cur, blo])
            cur = max(cur, bhi)
        if cur < hi:
            out.append([cur, hi])
    return out


def seed(c):
    if c["floor_unit"] != c["truncator_unit"]:
        return ["units_agree"]
    floor_start = c["tail_start"] - c["recovery_floor_span"]
    if c["summary_input"][0] > floor_start - off("floor_reach"):
        return ["floor_reach"]
    for lo, hi in c["prior_truncations"]:
        if hi > floor_start - off("truncation_clear") and lo < c["tail_start"]:
            return ["truncation_clear"]
    return []


def strict(c):
    n, t, F = c["history_end"], c["tail_start"], c["recovery_floor_span"]
    (a, b), (cc, d) = c["summary_input"], c["summary_covers"]
    TR, PC, SP = c["prior_truncations"], c["prior_coverage"], c["spills"]
    pairs = [c["summary_input"], c["summary_covers"], *TR, *PC, *SP]
    if not (n >= 0 and F >= 0 and 0 <= t <= n and c["floor_unit"] in UNITS and c["truncator_unit"] in UNITS
            and all(0 <= lo <= hi <= n + off("well_formed") for lo, hi in pairs)):
        return ["well_formed"], []
    failed = []
    if c["floor_unit"] != c["truncator_unit"]:
        failed.append("units_agree")
    phi_lo = max(0, n - F)
    if phi_lo < n and not (a <= phi_lo + off("floor_in_input") and n <= b):
        failed.append("floor_in_input")
    if phi_lo < n and not t <= phi_lo + off("floor_in_tail"):
        failed.append("floor_in_tail")
    tru = merged(TR)
    if any(lo < n and hi > t + off("tail_intact") and lo < hi for lo, hi in tru) and t < n:
        failed.append("tail_intact")
    if not (t == 0 or d >= t - off("seam_contiguous")):
        failed.append("seam_contiguous")
    seen = minus(merged([[a - off("summary_honest"), b]]), tru)
    if minus(merged([[cc, d]]), seen):
        failed.append("summary_honest")
    honest = minus(merged([[max(a, cc), min(b, d)]]), tru)
    tail = minus(merged([[t - off("no_hole"), n]]), tru)
    covered = merged([*PC, *SP, *honest, *tail])
    holes = minus([[0, n]] if n > 0 else [], covered)
    if holes:
        failed.append("no_hole")
    return failed, holes


class Unusable(Exception):
    """SPEC.md section 3.1: the case cannot be read; the answer names the field."""


class _Float(float):
    """A number written with a fraction or exponent: never an integer."""


def _pairs_hook(pairs):
    keys = [k for k, _ in pairs]
    for k in keys:
        if keys.count(k) > 1:
            raise Unusable(f"{k}: key repeated in one object")
    return dict(pairs)


def _not_json(name):
    raise Unusable(f"request: {name} is not JSON")


def _int(v, field):
    if type(v) is not int:
        raise Unusable(f"{field}: expected an integer, got {type(v).__name__}")
    if abs(v) >= 10 ** 1000:
        raise Unusable(f"{field}: more than 1000 digits")
    return v


def _pair(v, field):
    if type(v) is not list or len(v) != 2:
        raise Unusable(f"{field}: expected a pair [lo, hi]")
    return [_int(v[0], field), _int(v[1], field)]


def read(line):
    """The request's profile and its case, typed; Unusable naming the field otherwise."""
    try:
        req = json.loads(line, object_pairs_hook=_pairs_hook, parse_float=_Float, parse_constant=_not_json)
    except (ValueError, RecursionError) as exc:
        raise Unusable(f"request: not JSON ({exc})") from None
    c = req.get("case") if type(req) is dict else None
    if type(c) is not dict:
        raise Unusable("case: expected a JSON object")
    for field in ("history_end", "tail_start", "summary_input", "summary_covers", "recovery_floor_span",
                  "floor_unit", "truncator_unit", "prior_truncations", "prior_coverage", "spills"):
        if field not in c:
            raise Unusable(f"{field}: missing field")
        v = c[field]
        if field in ("history_end", "tail_start", "recovery_floor_span"):
            _int(v, field)
        elif field in ("summary_input", "summary_covers"):
            _pair(v, field)
        elif field in ("floor_unit", "truncator_unit"):
            if type(v) is not str:
                raise Unusable(f"{field}: expected a unit name")
        elif type(v) is not list:
            raise Unusable(f"{field}: expected a list of pairs")
        else:
            for item in v:
                _pair(item, field)
    return req["profile"], c


def main():
    for line in sys.stdin:
        try:
            profile, case = read(line)
        except Unusable as exc:
            print(json.dumps({"error": str(exc)}), flush=True)
            continue
        req = {"profile": profile, "case": case}
        if req["profile"] == "seed":
            failed, holes = seed(req["case"]), []
        elif req["profile"] == "partitioned":  # SPEC.md: strict without floor_in_input
            failed, holes = strict(req["case"])
            failed = [f for f in failed if f != "floor_in_input"]
        else:
            failed, holes = strict(req["case"])
        print(json.dumps({"decision": "refuse" if failed else "allow", "failed": failed, "holes": holes}),
              flush=True)


if __name__ == "__main__":
    main()
