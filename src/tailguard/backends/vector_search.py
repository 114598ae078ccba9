"""Find the conformance vectors: z3 searches the spec, Python shrinks, the checker answers.

Run as ``python -m tailguard.backends.vector_search SPEC ROOT``: it prints every vector
group as one JSON document. :mod:`tailguard.backends.vectors` runs it in a fresh
interpreter so that z3 always starts from the same context (its models depend on the
order terms were created in), which keeps ``tailguard gen`` deterministic.

Every vector holds a case, the clause or boundary it exercises, and the expected
decision of both profiles, computed by the checker rendered from the same spec.
Cases found by z3 are replayed through Python predicates compiled from the spec
(the generated checker's own code path) and shrunk greedily toward zero while they
keep exercising what they were found for.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tailguard.backends import vector_inputs
from tailguard.backends.python_render import (
    PythonCompiler,
    _primitives_source,
    _var,
    render_python,
)
from tailguard.speclang import ast
from tailguard.speclang.deps import input_symbols as depends, needed_defines
from tailguard.speclang.load import Profile, Spec, load_spec
from tailguard.speclang.pretty import pretty

Case = dict[str, Any]
Vector = dict[str, Any]
Coord = tuple[str, int, int]  # (field, list index or -1, pair index or -1)

#: Integers in found cases stay in this range (before shrinking).
LOW, HIGH = -3, 24
#: Symbolic lists hold at most this many intervals.
LIST_BOUND = 2
#: The random corpus: fixed seed, number of cases drawn before minimizing.
RANDOM_SEED = 20240606
RANDOM_DRAWS = 4000


# --------------------------------------------------------------------------- spec -> Python
def checker_module(spec: Spec) -> types.ModuleType:
    """The checker rendered from ``spec``, loaded without writing it anywhere."""
    mod = types.ModuleType("tailguard_vectors_checker")
    sys.modules[mod.__name__] = mod  # NamedTuple looks its module up
    exec(compile(render_python(spec), "<rendered checker>", "exec"), mod.__dict__)
    return mod


class Predicates:
    """Python predicates compiled from spec expressions, evaluated on a case in JSON form."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.ns: dict[str, Any] = {}
        exec(compile(_primitives_source() + f"\nUNITS = {tuple(spec.units)!r}\n", "<primitives>", "exec"),
             self.ns)
        self._cache: dict[str, Callable[..., bool]] = {}

    def compile(self, node: ast.Node) -> Callable[..., bool]:
        key = pretty(node)
        if key in self._cache:
            return self._cache[key]
        c = PythonCompiler(self.spec, self.spec.env)
        args = ", ".join(_var(i.symbol) for i in self.spec.inputs)
        lines = [f"def _pred({args}):"]
        for name in needed_defines(self.spec, [node]):
            d = next(d for d in self.spec.defines if d.name == name)
            lines.append(f"    {_var(name)} = {c.expr(d.node)}")
        lines.append(f"    return bool({c.expr(node)})")
        ns = dict(self.ns)
        exec(compile("\n".join(lines) + "\n", "<predicate>", "exec"), ns)
        fn: Callable[..., bool] = ns["_pred"]
        self._cache[key] = fn
        return fn

    def args(self, case: Case) -> list[Any]:
        out: list[Any] = []
        for inp in self.spec.inputs:
            v = case[inp.field]
            if inp.type == "interval":
                v = (v[0], v[1])
            elif inp.type == "intervals":
                v = [(p[0], p[1]) for p in v]
            out.append(v)
        return out

    def holds(self, node: ast.Node, case: Case) -> bool:
        return self.compile(node)(*self.args(case))

    def truth(self, profile: Profile, case: Case) -> tuple[bool, ...]:
        """Whether each clause of ``profile`` holds, all evaluated (no gate, no first-only)."""
        args = self.args(case)
        return tuple(self.compile(cl.holds)(*args) for cl in profile.clauses)


def atoms(node: ast.Node) -> list[ast.Node]:
    """Split a conjunction into its smallest conjuncts: chains into pairs, ``all`` per source."""
    match node:
        case ast.BoolOp(op="and", operands=ops):
            return [a for o in ops for a in atoms(o)]
        case ast.Compare(ops=ops, operands=operands) if len(ops) > 1:
            return [ast.Compare(node.pos, (op,), (x, y))
                    for op, x, y in zip(ops, operands, operands[1:], strict=False)]
        case ast.Quant(kind="all", var=v, sources=srcs, body=body):
            return [ast.Quant(node.pos, "all", v, (s,), b) for s in srcs for b in atoms(body)]
    return [node]


# --------------------------------------------------------------------------- cases
def coordinates(spec: Spec) -> list[Coord]:
    """Every integer of a case that a boundary can move: ints, interval ends, first list element's ends."""
    out: list[Coord] = []
    for inp in spec.inputs:
        if inp.type == "int":
            out.append((inp.field, -1, -1))
        elif inp.type == "interval":
            out += [(inp.field, -1, 0), (inp.field, -1, 1)]
        elif inp.type == "intervals":
            out += [(inp.field, 0, 0), (inp.field, 0, 1)]
    return out


def coord_name(coord: Coord) -> str:
    f, i, j = coord
    return f + (f"[{i}]" if i >= 0 else "") + (f"[{j}]" if j >= 0 else "")


def get(case: Case, coord: Coord) -> int | None:
    f, i, j = coord
    v = case[f]
    if i >= 0:
        if len(v) <= i:
            return None
        v = v[i]
    out: int = v[j] if j >= 0 else v
    return out


def moved(case: Case, coord: Coord, value: int) -> Case:
    f, i, j = coord
    new: Case = json.loads(json.dumps(case))
    if i < 0 and j < 0:
        new[f] = value
    elif i < 0:
        new[f][j] = value
    else:
        new[f][i][j] = value
    return new


def step(case: Case, coord: Coord, delta: int) -> Case | None:
    v = get(case, coord)
    return None if v is None else moved(case, coord, v + delta)


def _shrink_moves(spec: Spec, case: Case) -> Iterator[Case]:
    """Candidate simplifications, in a fixed order: drop list elements, then ints toward 0."""
    units = [i.field for i in spec.inputs if i.type == "unit"]
    if any(case[u] != spec.units[0] for u in units):
        yield {**case, **{u: spec.units[0] for u in units}}
    for inp in spec.inputs:
        if inp.type == "intervals":
            for k in range(len(case[inp.field])):
                new = json.loads(json.dumps(case))
                del new[inp.field][k]
                yield new
        elif inp.type == "unit" and case[inp.field] != spec.units[0]:
            yield {**case, inp.field: spec.units[0]}
    coords = _all_coords(spec, case)
    for coord in coords:
        v = get(case, coord)
        assert v is not None
        if v != 0:
            yield moved(case, coord, 0)
            yield moved(case, coord, v - 1 if v > 0 else v + 1)
    # two values down together: keeps a relation like a == t - F while both shrink
    for c1, c2 in itertools.combinations(coords, 2):
        v1, v2 = get(case, c1), get(case, c2)
        assert v1 is not None and v2 is not None
        if v1 > 0 and v2 > 0:
            yield moved(moved(case, c1, v1 - 1), c2, v2 - 1)


def _all_coords(spec: Spec, case: Case) -> list[Coord]:
    out: list[Coord] = []
    for inp in spec.inputs:
        if inp.type == "int":
            out.append((inp.field, -1, -1))
        elif inp.type == "interval":
            out += [(inp.field, -1, 0), (inp.field, -1, 1)]
        elif inp.type == "intervals":
            out += [(inp.field, k, j) for k in range(len(case[inp.field])) for j in (0, 1)]
    return out


def shrink(spec: Spec, case: Case, keep: Callable[[Case], bool]) -> Case:
    """Greedy, deterministic: apply the first simplification that keeps the property, until none does."""
    assert keep(case), "shrink: the starting case does not have the property"
    progress = True
    while progress:
        progress = False
        for cand in _shrink_moves(spec, case):
            if keep(cand):
                case, progress = cand, True
                break
    return case


# --------------------------------------------------------------------------- z3
class Z3Search:
    """The z3 side: symbolic cases, perturbations and queries (imported only here)."""

    def __init__(self, spec: Spec) -> None:
        import z3

        from tailguard.backends import z3_encode

        self.z3, self.enc_mod, self.spec = z3, z3_encode, spec
        self.case = z3_encode.symbolic_case(spec, "v", bound=LIST_BOUND)
        self.enc = z3_encode.Encoder(spec, self.case)
        self.solver = z3.Solver()
        self.solver.set("rlimit", 20_000_000)
        self.solver.add(self.bounds(self.case))
        self._clauses: dict[tuple[int, str, str], Any] = {}
        self._keep: list[Any] = [self.enc]
        self._perturbed: dict[tuple[Coord, int], tuple[Any, Any]] = {}  # encoders stay alive, so their ids stay unique

    def clause(self, enc: Any, profile: Profile, cid: str) -> Any:
        """A clause's formula, encoded once per encoder."""
        key = (id(enc), profile.id, cid)
        if key not in self._clauses:
            self._clauses[key] = enc.clause(profile, cid)
        return self._clauses[key]

    def fails_exactly(self, enc: Any, profile: Profile, cids: Sequence[str]) -> Any:
        z3 = self.z3
        return z3.And([z3.Not(self.clause(enc, profile, c.id)) if c.id in cids else self.clause(enc, profile, c.id)
                       for c in profile.clauses])

    def allows(self, enc: Any, profile: Profile) -> Any:
        return self.z3.And([self.clause(enc, profile, c.id) for c in profile.clauses])

    def bounds(self, case: Any) -> Any:
        z3 = self.z3
        parts = [case.side_conditions()]
        for inp in self.spec.inputs:
            v = case[inp.symbol]
            if inp.type == "int":
                parts.append(z3.And(v >= LOW, v <= HIGH))
            elif inp.type == "unit":
                parts.append(z3.And(v >= 0, v <= len(self.spec.units)))
            elif inp.type == "interval":
                parts += [z3.And(x >= LOW, x <= HIGH) for x in v]
            else:
                parts += [z3.And(x >= LOW, x <= HIGH) for p in v.pairs for x in p]
        return z3.And(parts)

    def perturbed(self, coord: Coord, delta: int) -> tuple[Any, Any]:
        """The symbolic case with one coordinate moved by ``delta``, and the condition it exists."""
        f, i, j = coord
        inp = next(x for x in self.spec.inputs if x.field == f)
        v = self.case[inp.symbol]
        if inp.type == "int":
            return self.case.with_value(inp.symbol, v + delta), True
        if inp.type == "interval":
            pair = (v[0] + delta, v[1]) if j == 0 else (v[0], v[1] + delta)
            return self.case.with_value(inp.symbol, pair), True
        pairs = list(v.pairs)
        lo, hi = pairs[i]
        pairs[i] = (lo + delta, hi) if j == 0 else (lo, hi + delta)
        return self.case.with_value(inp.symbol, self.enc_mod.FixedList(pairs, v.length)), v.length > i

    def solve(self, *formulas: Any) -> Case | None:
        z3, s = self.z3, self.solver
        s.push()
        try:
            s.add(*formulas)
            r = s.check()
            if r == z3.unknown:
                raise RuntimeError(f"z3 gave up while searching vectors: {s.reason_unknown()}")
            if r == z3.unsat:
                return None
            found: Case = self.enc_mod.case_from_model(self.spec, self.case, s.model())
            return found
        finally:
            s.pop()

    def perturbed_encoder(self, coord: Coord, delta: int) -> tuple[Any, Any]:
        """An encoder of the moved case (made once, kept alive) and the condition it exists."""
        key = (coord, delta)
        if key not in self._perturbed:
            zcase, exists = self.perturbed(coord, delta)
            enc = self.enc_mod.Encoder(self.spec, zcase)
            self._keep.append(enc)
            self._perturbed[key] = (enc, exists)
        return self._perturbed[key]


# --------------------------------------------------------------------------- the groups
class Builder:
    def __init__(self, spec: Spec, root: Path) -> None:
        self.spec, self.root = spec, root
        self.checker = checker_module(spec)
        self.pred = Predicates(spec)
        self.strict = spec.profile("strict")
        self.wf_node = self.strict.clause(self.strict.wellformed).holds if self.strict.wellformed else None
        self._z3: Z3Search | None = None
        self.symbol = {i.field: i.symbol for i in spec.inputs}
        self.impossible_malformed: list[str] = []

    @property
    def z(self) -> Z3Search:
        if self._z3 is None:
            self._z3 = Z3Search(self.spec)
        return self._z3

    def expected(self, case: Case) -> dict[str, Any]:
        return {p.id: self.checker.check_case(case, p.id).to_json() for p in self.spec.profiles}

    def vector(self, vid: str, exercises: dict[str, Any], case: Case) -> Vector:
        return {"id": vid, "exercises": exercises, "case": case, "expected": self.expected(case)}

    def well_formed(self, case: Case) -> bool:
        return self.wf_node is None or self.pred.holds(self.wf_node, case)

    # ---- boundaries
    def boundaries(self) -> list[Vector]:
        out: list[Vector] = []
        for prof in self.spec.profiles:
            for idx, cl in enumerate(prof.clauses):
                deps = depends(self.spec, cl.holds)
                for coord in coordinates(self.spec):
                    if self.symbol[coord[0]] not in deps:
                        continue  # moving a value the clause never reads cannot cross its boundary
                    for delta in (1, -1):
                        pair = self._boundary(prof, idx, coord, delta)
                        if pair is None:
                            continue
                        inside, outside = pair
                        base = {"kind": "boundary", "profile": prof.id, "clause": cl.id,
                                "coordinate": coord_name(coord), "step": delta}
                        tag = f"boundary/{prof.id}/{cl.id}/{coord_name(coord)}{delta:+d}"
                        out.append(self.vector(f"{tag}/inside", {**base, "side": "inside"}, inside))
                        out.append(self.vector(f"{tag}/outside", {**base, "side": "outside"}, outside))
        return out

    def _boundary(self, prof: Profile, idx: int, coord: Coord, delta: int) -> tuple[Case, Case] | None:
        """Inside: every clause of ``prof`` holds. Outside: the same case with ``coord`` moved by
        ``delta``, failing only clause ``idx``. Prefer cases that are strictly well formed."""
        z3 = self.z3_module
        cid = prof.clauses[idx].id
        zs = self.z
        enc_in, enc_out, exists = zs.enc, *zs.perturbed_encoder(coord, delta)
        want_out = tuple(i != idx for i in range(len(prof.clauses)))
        attempts = [zs.fails_exactly(enc_out, prof, [cid])]
        if cid == prof.wellformed:
            attempts.append(z3.Not(zs.clause(enc_out, prof, cid)))
        found: Case | None = None
        for target in attempts:
            tries = []
            if self.strict is not prof and self.wf_node is not None:
                tries.append(z3.And(zs.clause(enc_in, self.strict, self.strict.wellformed),
                                    zs.clause(enc_out, self.strict, self.strict.wellformed)))
            tries.append(True)
            for extra in tries:
                found = zs.solve(exists, zs.allows(enc_in, prof), target, extra)
                if found is not None:
                    break
            if found is not None:
                exact = target is attempts[0]
                break
        if found is None:
            return None
        prefer_wf = self.well_formed(found) and self.well_formed(step(found, coord, delta) or found)

        def keep(c: Case) -> bool:
            o = step(c, coord, delta)
            if o is None:
                return False
            if prefer_wf and not (self.well_formed(c) and self.well_formed(o)):
                return False
            if not all(self.pred.truth(prof, c)):
                return False
            t = self.pred.truth(prof, o)
            return t == want_out if exact else not t[idx]

        if not keep(found):
            raise RuntimeError(f"z3 and the rendered predicates disagree on {prof.id}.{cid} at "
                               f"{coord_name(coord)}{delta:+d}: {json.dumps(found)}")
        small = shrink(self.spec, found, keep)
        out = step(small, coord, delta)
        assert out is not None
        return small, out

    @property
    def z3_module(self) -> Any:
        return self.z.z3

    # ---- combinations
    def combinations(self) -> list[Vector]:
        out: list[Vector] = []
        for prof in self.spec.profiles:
            ids = [cl.id for cl in prof.clauses if cl.id != prof.wellformed]
            for size in range(1, len(ids) + 1):
                for subset in itertools.combinations(ids, size):
                    want = tuple(cl.id not in subset for cl in prof.clauses)
                    extra = []
                    if self.strict is not prof and self.wf_node is not None:
                        extra.append(self.z.clause(self.z.enc, self.strict, self.strict.wellformed))
                    found = self.z.solve(self.z.fails_exactly(self.z.enc, prof, list(subset)), *extra)
                    kind = "alone" if size == 1 else "combination"
                    ex = {"kind": kind, "profile": prof.id, "clauses": list(subset)}
                    vid = f"{kind}/{prof.id}/{'+'.join(subset)}"
                    if found is None:
                        found = self.z.solve(self.z.fails_exactly(self.z.enc, prof, list(subset)))
                    if found is None:
                        continue
                    wf = self.well_formed(found)

                    def keep(c: Case, _want: tuple[bool, ...] = want, _p: Profile = prof, _wf: bool = wf) -> bool:
                        return (not _wf or self.well_formed(c)) and self.pred.truth(_p, c) == _want

                    if not keep(found):
                        raise RuntimeError(f"z3 and the rendered predicates disagree on {vid}: {json.dumps(found)}")
                    out.append(self.vector(vid, ex, shrink(self.spec, found, keep)))
        return out

    def impossible_combinations(self, found: list[Vector]) -> list[dict[str, Any]]:
        have = {(v["exercises"]["profile"], tuple(v["exercises"]["clauses"])) for v in found}
        out = []
        for prof in self.spec.profiles:
            ids = [cl.id for cl in prof.clauses if cl.id != prof.wellformed]
            for size in range(1, len(ids) + 1):
                for subset in itertools.combinations(ids, size):
                    if (prof.id, subset) not in have:
                        out.append({"profile": prof.id, "clauses": list(subset)})
        return out

    # ---- malformed
    def malformed(self) -> list[Vector]:
        if self.wf_node is None:
            return []
        z3 = self.z3_module
        parts = atoms(self.wf_node)
        out: list[Vector] = []
        enc = self.z.enc
        for k, part in enumerate(parts):
            others = [p for i, p in enumerate(parts) if i != k]
            rest = [self.z.clause(enc, self.strict, cl.id)
                    for cl in self.strict.clauses if cl.id != self.strict.wellformed]
            base = [z3.Not(enc.expr(part, {})), *(enc.expr(p, {}) for p in others)]
            found = self.z.solve(*base, *rest) or self.z.solve(*base)
            if found is None:
                self.impossible_malformed.append(pretty(part))
                continue

            def keep(c: Case, _part: ast.Node = part, _others: list[ast.Node] = others) -> bool:
                return (not self.pred.holds(_part, c)) and all(self.pred.holds(p, c) for p in _others)

            if not keep(found):
                raise RuntimeError(f"z3 and the rendered predicates disagree on {pretty(part)}: {json.dumps(found)}")
            text = pretty(part)
            out.append(self.vector(f"malformed/{k:02d}", {"kind": "malformed", "profile": self.strict.id,
                                                        "clause": self.strict.wellformed, "violates": text},
                                   shrink(self.spec, found, keep)))
        return out

    # ---- worked examples
    def examples(self) -> list[Vector]:
        out: list[Vector] = []
        for path in sorted((self.root / "examples" / "cases").glob("*.json")):
            raw = json.loads(path.read_text(encoding="utf-8"))
            case = {i.field: raw[i.field] for i in self.spec.inputs}
            ex = {"kind": "example", "source": f"examples/cases/{path.name}"}
            if "_comment" in raw:
                ex["note"] = raw["_comment"]
            out.append(self.vector(f"example/{path.stem}", ex, case))
        return out

    # ---- random corpus
    def random_corpus(self) -> list[Vector]:
        rng = random.Random(RANDOM_SEED)
        seen: dict[tuple[Any, ...], Case] = {}
        for _ in range(RANDOM_DRAWS):
            case = random_case(self.spec, rng)
            sig = self.signature(case)
            if sig not in seen:
                seen[sig] = case
        out: list[Vector] = []
        for k, (sig, case) in enumerate(seen.items()):

            def keep(c: Case, _sig: tuple[Any, ...] = sig) -> bool:
                return self.signature(c) == _sig

            small = shrink(self.spec, case, keep)
            out.append(self.vector(f"random/{k:03d}", {"kind": "random", "seed": RANDOM_SEED,
                                                       "signature": _sig_text(sig)}, small))
        return out

    def signature(self, case: Case) -> tuple[Any, ...]:
        """What a random case is kept for: each profile's failed clauses and its number of holes."""
        parts: list[Any] = []
        for p in self.spec.profiles:
            d = self.checker.check_case(case, p.id)
            parts.append((p.id, d.failed, len(d.holes)))
        return tuple(parts)


def _sig_text(sig: tuple[Any, ...]) -> str:
    return "; ".join(f"{pid}: {'+'.join(failed) or 'allow'}" + (f" ({nh} holes)" if nh else "")
                     for pid, failed, nh in sig)


def random_case(spec: Spec, rng: random.Random) -> Case:
    """Small integers around shared endpoints, mostly well formed, some not."""
    n = rng.randint(0, 12)
    pool = [0, n, n - 1, 1, rng.randint(0, n), rng.randint(0, n), rng.randint(-2, 14)]

    def end() -> int:
        return rng.choice(pool)

    def pair() -> list[int]:
        lo, hi = end(), end()
        return [min(lo, hi), max(lo, hi)] if rng.random() < 0.9 else [lo, hi]

    case: Case = {}
    for inp in spec.inputs:
        if inp.type == "int":
            case[inp.field] = rng.choice([n, rng.randint(0, n), rng.randint(0, 5), end()])
        elif inp.type == "interval":
            case[inp.field] = pair()
        elif inp.type == "intervals":
            case[inp.field] = [pair() for _ in range(rng.choice([0, 0, 1, 1, 2, 3]))]
        else:
            case[inp.field] = rng.choice([*spec.units[:1] * 6, *spec.units, "Turns"])
    first = spec.inputs[0].field
    case[first] = n
    return case


def build(spec: Spec, root: Path) -> dict[str, Any]:
    """Every group of vectors, in a fixed order."""
    b = Builder(spec, root)
    combos = b.combinations()
    out: dict[str, Any] = {
        "examples": b.examples(),
        "boundaries": b.boundaries(),
        "combinations": combos,
        "malformed": b.malformed(),
        "random": b.random_corpus(),
        **{group: make() for group, make in vector_inputs.builders(spec, b.checker).items()},
        "_impossible": b.impossible_combinations(combos),
    }
    out["_impossible_malformed"] = b.impossible_malformed
    return out


def main(argv: Sequence[str]) -> int:
    spec = load_spec(argv[0])
    print(json.dumps(build(spec, Path(argv[1]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
