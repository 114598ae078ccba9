"""The input vectors: unusable cases (answer: an error naming the field) and wide integers.

Both groups are built from the spec's input declarations (``[[input]]`` of spec/clauses.toml:
each field's type says which mutations make it unreadable) and answered by the checker
rendered from the same spec, read the way every tailguard JSON reader reads
(:mod:`tailguard.base.jsonstrict`, then the checker's case reader). Each case is carried as its exact
JSON text (``case_text``): a float ``60.0``, a repeated key or an integer beyond 2^53 is a
property of the text that most JSON parsers lose.

- ``inputs``: for every field, each way its JSON type can be wrong (a float or exponent form
  of the same integer, a boolean, a string, ``null``, a missing or an extra level of nesting, an
  object, a missing field), ``NaN``, an integer over the digit limit, nesting over the depth
  limit, a repeated key, a case that is not an object; each expected answer is
  ``{"unusable": [names]}``: an error whose text starts with one of the names (the field, or
  ``request`` when the limit is one of the text). Two cases with extra keys, which are ignored,
  expect the base decision. Inconsistent integers (negative, ``lo > hi``) are *not* unusable
  (SPEC.md section 3.1): the ``malformed`` group has them.
- ``integers``: five case shapes at magnitudes from 2^31 - 1 to a 1,000-digit integer, each
  chosen so that wrapping at 32 or 64 bits, or rounding to a double, changes the answer.
  Vectors with an integer beyond ±(2^53 - 1) are ``declinable``: an implementation may answer
  with an error there (a declared limit), never with a different decision (SPEC.md section 3.4).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from tailguard.base import jsonstrict
from tailguard.speclang.load import Spec

Vector = dict[str, Any]
#: JSON numbers every implementation must read exactly (RFC 8259 section 6, JavaScript's safe integers).
SAFE = 2**53 - 1
#: Where 32-bit and 64-bit integers wrap and doubles stop being exact, and beyond.
MAGNITUDES: tuple[tuple[str, int], ...] = (
    ("2^31-1", 2**31 - 1), ("2^31", 2**31), ("2^32", 2**32),
    ("2^53-1", 2**53 - 1), ("2^53", 2**53), ("2^53+1", 2**53 + 1),
    ("2^63-1", 2**63 - 1), ("2^63", 2**63), ("2^64", 2**64),
    ("10^999", 10**999),  # 1,000 digits: the largest length every reader accepts
)
#: A case every profile of spec 1.1 allows (tests/test_vectors.py checks it), with one element in
#: each list (so that list items can be broken): a reader that misreads 60.0 as 60 answers allow.
BASE: dict[str, Any] = {
    "history_end": 60, "tail_start": 48, "summary_input": [8, 60], "summary_covers": [8, 48],
    "recovery_floor_span": 12, "floor_unit": "turns", "truncator_unit": "turns",
    "prior_truncations": [[0, 8]], "prior_coverage": [[0, 8]], "spills": [[0, 8]],
}
_MISSING = None


def _mutations(kind: str, v: Any) -> list[tuple[str, str | None]]:
    """(what, raw JSON text of the broken value, or None for a missing field) for a field of ``kind``."""
    if kind == "int":
        return [("a float of the same value", f"{v}.0"), ("an exponent form of the same value", f"{v}e0"),
                ("a string", f'"{v}"'), ("a boolean", "true"), ("null", "null"),
                ("an extra level of nesting", f"[{v}]"),
                ("an object", f'{{"value": {v}}}'), ("a missing field", _MISSING),
                (f"an integer of {jsonstrict.MAX_INT_DIGITS + 1:,} digits (over the limit)",
                 "1" + "0" * jsonstrict.MAX_INT_DIGITS),
                ("NaN (not JSON)", "NaN"), ("Infinity (not JSON)", "Infinity")]
    if kind == "interval":
        lo, hi = v
        return [("a float end", f"[{lo}, {hi}.0]"), ("a boolean end", f"[true, {hi}]"),
                ("a null end", f"[{lo}, null]"), ("one end", f"[{lo}]"), ("three ends", f"[{lo}, {hi}, {hi}]"),
                ("an empty list", "[]"), ("an extra level of nesting", f"[[{lo}, {hi}]]"),
                ("a string", f'"{lo},{hi}"'), ("an object", f'{{"lo": {lo}, "hi": {hi}}}'), ("null", "null"),
                ("a missing field", _MISSING),
                (f"nesting {jsonstrict.MAX_DEPTH + 36} deep (over the limit)",
                 "[" * (jsonstrict.MAX_DEPTH + 35) + f"{lo}, {hi}" + "]" * (jsonstrict.MAX_DEPTH + 35))]
    if kind == "intervals":
        (lo, hi), = v
        return [("a float end", f"[[{lo}, {hi}.0]]"), ("a string end", f'[["{lo}", {hi}]]'),
                ("a boolean end", f"[[false, {hi}]]"), ("a pair instead of a list of pairs", f"[{lo}, {hi}]"),
                ("an extra level of nesting", f"[[[{lo}, {hi}]]]"), ("a pair with one end", f"[[{lo}]]"),
                ("a pair with three ends", f"[[{lo}, {hi}, {hi}]]"), ("an object", f'{{"0": [{lo}, {hi}]}}'),
                ("a string", f'"[[{lo}, {hi}]]"'), ("null", "null"), ("a missing field", _MISSING)]
    if kind == "unit":
        return [("a number", "1"), ("null", "null"), ("a list", f"[{json.dumps(v)}]"), ("a boolean", "true"),
                ("an object", f'{{"unit": {json.dumps(v)}}}'), ("a missing field", _MISSING)]
    raise ValueError(f"no input mutations for type {kind!r}")


def case_text(fields: list[tuple[str, str]]) -> str:
    """A case object from (key, raw JSON value text) pairs, in order (repeats kept)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {raw}" for k, raw in fields) + "}"


def _fields(case: dict[str, Any]) -> list[tuple[str, str]]:
    return [(k, json.dumps(v)) for k, v in case.items()]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_answer(checker: Any, profile: str, text: str) -> dict[str, Any]:
    """What tailguard answers for a request with case ``text``: a decision, or ``{"error": ...}``."""
    request = f'{{"profile": {json.dumps(profile)}, "case": {text}}}'
    try:
        value = jsonstrict.loads(request)
    except jsonstrict.DuplicateKeyError as exc:
        return {"error": f"{exc.key}: key repeated in one object"}
    except jsonstrict.JSONInputError as exc:
        return {"error": f"request: {exc}"}
    try:
        decision = checker.check_case(value["case"], profile)
    except checker.CaseError as exc:
        return {"error": str(exc)}
    out: dict[str, Any] = decision.to_json()
    return out


def error_name(answer: dict[str, Any]) -> str:
    m = _NAME.match(answer["error"])
    assert m is not None, answer
    return m.group()


class InputVectors:
    """Builds the ``inputs`` and ``integers`` groups for ``spec`` with the rendered ``checker``."""

    def __init__(self, spec: Spec, checker: Any) -> None:
        self.spec, self.checker = spec, checker
        self.profiles = [p.id for p in spec.profiles]
        if [i.field for i in spec.inputs] != list(BASE):
            raise ValueError(f"vector_inputs.BASE has fields {list(BASE)}, the spec {[i.field for i in spec.inputs]}")
        for p in self.profiles:
            checker.check_case(BASE, p)  # readable (a CaseError here is a bug in BASE); allowed under spec 1.1

    def _answers(self, text: str) -> dict[str, dict[str, Any]]:
        return {p: read_answer(self.checker, p, text) for p in self.profiles}

    def _unusable(self, vid: str, exercises: dict[str, Any], text: str, field: str) -> Vector:
        answers = self._answers(text)
        expected: dict[str, Any] = {}
        for p, a in answers.items():
            if "error" not in a:
                raise ValueError(f"{vid}: meant to be unusable, yet profile {p} decides {a} on {text[:200]}")
            names = [error_name(a)]
            if field not in names:
                names.append(field)  # a limit of the text may be reported for the request or for the field
            expected[p] = {"unusable": names}
        return {"id": vid, "exercises": exercises, "case_text": text, "expected": expected}

    def inputs(self) -> list[Vector]:
        out: list[Vector] = []
        for inp in self.spec.inputs:
            for k, (what, raw) in enumerate(_mutations(inp.type, BASE[inp.field])):
                fields = [(f, json.dumps(v) if f != inp.field else (raw or "")) for f, v in BASE.items()
                          if f != inp.field or raw is not None]
                ex = {"kind": "unusable", "field": inp.field, "type": inp.type, "violates": what}
                out.append(self._unusable(f"unusable/{inp.field}/{k:02d}", ex, case_text(fields), inp.field))
        for k, (what, text) in enumerate([("a list", "[]"), ("null", "null"), ("a string", '"case"'),
                                          ("a number", "60")]):
            ex = {"kind": "unusable", "field": "case", "type": "object", "violates": f"the case is {what}"}
            out.append(self._unusable(f"unusable/case/{k:02d}", ex, text, "case"))
        repeats = [("prior_truncations", "[]"), ("history_end", json.dumps(BASE["history_end"]))]
        for k, (key, again) in enumerate(repeats):
            text = case_text([*_fields(BASE), (key, again)])
            ex = {"kind": "unusable", "field": key, "type": "object",
                  "violates": f"key {key!r} repeated (a lenient reader keeps the last)"}
            out.append(self._unusable(f"unusable/repeated/{k:02d}", ex, text, key))
        extras = [("an unknown key", [("note", '"ignored"')]),
                  ("unknown keys holding unusable values", [("history_end_v2", "60.5"), ("x", '{"y": [null]}')])]
        for k, (what, more) in enumerate(extras):
            text = case_text([*_fields(BASE), *more])
            answers = self._answers(text)
            if any("error" in a for a in answers.values()):
                raise ValueError(f"extra keys must be ignored, yet {answers}")
            out.append({"id": f"extra-keys/{k:02d}", "exercises": {"kind": "extra_keys", "violates": what},
                        "case_text": text, "expected": answers})
        return out

    def integers(self) -> list[Vector]:
        out: list[Vector] = []
        for label, m in MAGNITUDES:
            for shape, what, case in _wide_shapes(m):
                text = case_text(_fields(case))
                answers = self._answers(text)
                if any("error" in a for a in answers.values()):
                    raise ValueError(f"integers/{label}/{shape}: an integer within the limits is unusable: {answers}")
                wide = max(_magnitudes(case), default=0) > SAFE or max(_magnitudes(answers), default=0) > SAFE
                v: Vector = {"id": f"integers/{label}/{shape}",
                             "exercises": {"kind": "integers", "magnitude": label, "shape": shape, "what": what},
                             "case_text": text, "expected": answers}
                if wide:
                    v["declinable"] = "an integer beyond ±(2^53-1)"
                out.append(v)
        return out


def _wide_shapes(m: int) -> Iterator[tuple[str, str, dict[str, Any]]]:
    def case(**kw: Any) -> dict[str, Any]:
        return {**BASE, "prior_truncations": [], "prior_coverage": [], "spills": [], **kw}

    yield ("healthy", "a healthy compaction whose history ends at M",
           case(history_end=m, tail_start=m - 12, summary_input=[m - 20, m], summary_covers=[m - 20, m - 12],
                prior_coverage=[[0, m - 20]]))
    yield ("tail-past-end", "the base case with its tail starting M units past the end (wraps to the base)",
           {**BASE, "tail_start": BASE["tail_start"] + m})
    yield ("hole", "a truncation [0, M) never summarized: the hole must be named exactly",
           case(history_end=m + 8, tail_start=m, summary_input=[m, m + 8], summary_covers=[m, m],
                recovery_floor_span=8, prior_truncations=[[0, m]]))
    yield ("seed-floor-below", "the seed's t - F at -2M (wraps at 2^64 to 0)",
           case(history_end=0, tail_start=-m, summary_input=[0, 0], summary_covers=[0, 0], recovery_floor_span=m))
    yield ("floor-span", "a recovery floor span of M units over a 60-unit history",
           {**BASE, "recovery_floor_span": m})


def _magnitudes(value: Any) -> Iterator[int]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield abs(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _magnitudes(v)
    elif isinstance(value, list):
        for v in value:
            yield from _magnitudes(v)


def builders(spec: Spec, checker: Any) -> dict[str, Callable[[], list[Vector]]]:
    iv = InputVectors(spec, checker)
    return {"inputs": iv.inputs, "integers": iv.integers}
