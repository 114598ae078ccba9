"""The conformance vectors: complete, consistent with the manifest, and right by two oracles."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tailguard._generated.checker import CLAUSES, FIELDS, CaseError, check, check_case
from tailguard.conform import reference_impl
from tailguard.conform.harness import names_field
from tailguard.conform.vectors import Vector, VectorError, load_vectors
from tailguard.oracles.reference import reference

ROOT = Path(__file__).resolve().parents[1]
VSET = load_vectors(ROOT / "spec" / "vectors")


def test_manifest_and_groups() -> None:
    manifest = json.loads((ROOT / "spec/vectors/manifest.json").read_text())
    assert manifest["count"] == len(VSET.vectors) > 300
    kinds = Counter(v.exercises["kind"] for v in VSET.vectors)
    assert set(kinds) == {"example", "boundary", "alone", "combination", "malformed", "random", "unusable",
                          "extra_keys", "integers"}, kinds
    assert len({v.id for v in VSET.vectors}) == len(VSET.vectors), "vector ids are unique"
    assert all(f["sha256"] and f["count"] > 0 for f in manifest["files"])
    assert manifest["spec_version"] == VSET.spec_version


def test_an_altered_file_is_rejected(tmp_path: Path) -> None:
    for f in (ROOT / "spec/vectors").iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "random.json").write_text((tmp_path / "random.json").read_text().replace('"allow"', '"refuse"', 1))
    with pytest.raises(VectorError, match="sha256 differs"):
        load_vectors(tmp_path)


def _fields(case: dict[str, Any]) -> dict[str, Any]:
    return {k: (tuple(x) if k in ("summary_input", "summary_covers") else
                [tuple(p) for p in x] if isinstance(x, list) else x) for k, x in case.items() if k in FIELDS}


@pytest.mark.parametrize("profile", ["seed", "strict", "partitioned"])
def test_expected_answers_agree_with_checker_and_reference(profile: str) -> None:
    checked = 0
    for v in VSET.vectors:
        if not v.decides:
            continue
        fields = _fields(v.case)
        want = v.expected[profile]
        assert check(profile, **fields).to_json() == want, v.id
        if v.exercises["kind"] != "integers":  # the per-offset reference walks every offset: small cases only
            assert reference(profile, **fields).to_json() == want, v.id
        checked += 1
    assert checked > 600


def test_every_clause_has_boundaries_on_both_sides() -> None:
    sides: dict[tuple[str, str], set[str]] = {}
    for v in VSET.vectors:
        ex = v.exercises
        if ex["kind"] == "boundary":
            sides.setdefault((ex["profile"], ex["clause"]), set()).add(ex["side"])
    # units_agree compares two names: it has no integer endpoint (its vectors are in "alone")
    want = {(p, c) for p, cs in CLAUSES.items() for c in cs if c != "units_agree"}
    assert set(sides) == want
    assert all(s == {"inside", "outside"} for s in sides.values())


def test_boundary_pairs_are_one_step_apart_and_flip_only_their_clause() -> None:
    by_id = {v.id: v for v in VSET.vectors}
    for vid, v in by_id.items():
        ex = v.exercises
        if ex["kind"] != "boundary" or ex["side"] != "inside":
            continue
        out = by_id[vid.removesuffix("/inside") + "/outside"]
        diffs = [k for k in v.case if v.case[k] != out.case[k]]
        assert len(diffs) == 1, vid
        assert v.expected[ex["profile"]]["decision"] == "allow", vid
        assert out.expected[ex["profile"]]["failed"] == [ex["clause"]], vid


def test_every_clause_fails_alone() -> None:
    alone = {(v.exercises["profile"], v.exercises["clauses"][0]) for v in VSET.vectors
             if v.exercises["kind"] == "alone"}
    want = {(p, c) for p, cs in CLAUSES.items() for c in cs if c != "well_formed"}
    assert alone == want
    for v in VSET.vectors:
        if v.exercises["kind"] in ("alone", "combination") and v.exercises["profile"] == "strict":
            assert v.expected["strict"]["failed"] == v.exercises["clauses"], v.id


def test_malformed_vectors_refuse_with_well_formed_only() -> None:
    bad = [v for v in VSET.vectors if v.exercises["kind"] == "malformed"]
    assert len(bad) >= 15
    for v in bad:
        assert v.expected["strict"] == {"decision": "refuse", "failed": ["well_formed"], "holes": []}, v.id


def test_worked_examples_are_those_of_spec_md() -> None:
    ex = {v.id: v.expected for v in VSET.vectors if v.exercises["kind"] == "example"}
    assert ex["example/seed-incident"]["seed"]["decision"] == "allow"
    assert ex["example/seed-incident"]["strict"] == {"decision": "refuse", "failed": ["no_hole"], "holes": [[0, 8]]}
    assert ex["example/healthy-recursive"]["seed"]["failed"] == ["floor_reach"]
    assert ex["example/healthy-recursive"]["strict"]["decision"] == "allow"
    assert ex["example/spilled-after-truncation"]["seed"]["failed"] == ["truncation_clear"]
    assert ex["example/spilled-after-truncation"]["strict"]["decision"] == "allow"


# ---- the input vectors (issue 16.7): unusable input and wide integers
SAFE = 2**53 - 1
UNUSABLE = [v for v in VSET.vectors if v.exercises["kind"] == "unusable"]
INTEGERS = [v for v in VSET.vectors if v.exercises["kind"] == "integers"]


def test_every_field_of_every_type_has_unusable_vectors() -> None:
    by_field: dict[str, set[str]] = {}
    for v in UNUSABLE:
        by_field.setdefault(v.exercises["field"], set()).add(v.exercises["violates"])
    assert set(FIELDS) <= set(by_field)
    for f in FIELDS:  # every field: wrong JSON types, missing, and (ints) the same value as a float
        assert {"null", "a missing field"} <= by_field[f], (f, by_field[f])
    for f in ("history_end", "tail_start", "recovery_floor_span"):
        assert {"a float of the same value", "a boolean", "a string", "an extra level of nesting"} <= by_field[f]
    assert "case" in by_field and any("repeated" in w for w in by_field["history_end"])


def test_unusable_vectors_get_an_error_naming_their_field_from_the_reference_impl() -> None:
    assert len(UNUSABLE) >= 100
    for v in UNUSABLE:
        for profile, want in v.expected.items():
            assert set(want) == {"unusable"} and want["unusable"], v.id
            line = f'{{"profile": "{profile}", "case": {v.text}}}'
            got = json.loads(reference_impl.answer(line))
            assert "decision" not in got and names_field(got["error"], want["unusable"]), (v.id, got)
            assert v.exercises["field"] in want["unusable"], v.id


def test_float_vectors_have_the_integer_value_a_lenient_reader_would_decide_on() -> None:
    """``60.0`` for the base's 60: JSON.parse reads it as 60 and the base case is allowed, so a lenient
    reader answers allow where the spec says unusable (the JavaScript checker's old bug)."""
    floats = [v for v in UNUSABLE if v.exercises["violates"] == "a float of the same value"]
    assert {v.exercises["field"] for v in floats} == {"history_end", "tail_start", "recovery_floor_span"}
    for v in floats:
        lenient = json.loads(v.text)  # Python json: 60.0 is a float ...
        lenient = {k: int(x) if type(x) is float else x for k, x in lenient.items()}  # ... JSON.parse: 60
        for profile in v.expected:
            assert check_case(lenient, profile).decision == "allow", v.id
            with pytest.raises(CaseError, match=v.exercises["field"]):
                check_case(json.loads(v.text), profile)


def test_extra_keys_are_ignored() -> None:
    extra = [v for v in VSET.vectors if v.exercises["kind"] == "extra_keys"]
    assert len(extra) == 2
    for v in extra:
        assert all(e["decision"] == "allow" for e in v.expected.values()), v.id


def _wrap(x: int, bits: int) -> int:
    return (x + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))


def _mapped(value: Any, fn: Any) -> Any:
    if type(value) is int:
        return fn(value)
    if isinstance(value, list):
        return [_mapped(x, fn) for x in value]
    if isinstance(value, dict):
        return {k: _mapped(x, fn) for k, x in value.items()}
    return value


def _decisions(v: Vector, case: Any) -> dict[str, str]:
    return {p: check_case(case, p).decision for p in v.expected}


@pytest.mark.parametrize("bits", [32, 64])
def test_wrapping_integers_changes_some_integer_vectors_decision(bits: int) -> None:
    """An implementation with fixed-width integers decides some integer vector differently."""
    flipped = [v.id for v in INTEGERS
               if _decisions(v, _mapped(v.case, lambda x: _wrap(x, bits))) != _decisions(v, v.case)]
    assert any(f"/2^{bits - 1}" in i or f"/2^{bits}" in i for i in flipped), flipped
    assert len(flipped) >= 3


def test_rounding_to_doubles_changes_some_declinable_vectors_answer() -> None:
    """A JavaScript-style implementation that rounds instead of declining gives a wrong answer."""
    wrong = []
    for v in INTEGERS:
        try:
            rounded = _mapped(v.case, lambda x: int(float(x)))
        except OverflowError:
            continue
        if any(check_case(rounded, p).to_json() != v.expected[p] for p in v.expected):
            wrong.append(v.id)
            assert v.declinable, v.id  # within ±(2^53-1) doubles are exact: nothing there may differ
    assert wrong


def test_declinable_marks_exactly_the_vectors_beyond_safe_integers() -> None:
    def biggest(x: Any) -> int:
        return max((abs(i) for i in _ints(x)), default=0)

    magnitudes = {v.exercises["magnitude"] for v in INTEGERS}
    assert {"2^31", "2^53", "2^53+1", "2^63", "2^64", "10^999"} <= magnitudes
    for v in INTEGERS:
        assert bool(v.declinable) == (max(biggest(v.case), biggest(v.expected)) > SAFE), v.id
    assert not any(v.declinable for v in VSET.vectors if v.exercises["kind"] != "integers")


def _ints(x: Any) -> list[int]:
    if type(x) is int:
        return [x]
    if isinstance(x, dict):
        return [i for y in x.values() for i in _ints(y)]
    if isinstance(x, list):
        return [i for y in x for i in _ints(y)]
    return []
