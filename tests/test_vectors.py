"""The conformance vectors: complete, consistent with the manifest, and right by two oracles."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tailguard._generated.checker import CLAUSES, check
from tailguard.conform.vectors import VectorError, load_vectors
from tailguard.reference import reference

ROOT = Path(__file__).resolve().parents[1]
VSET = load_vectors(ROOT / "spec" / "vectors")


def test_manifest_and_groups() -> None:
    manifest = json.loads((ROOT / "spec/vectors/manifest.json").read_text())
    assert manifest["count"] == len(VSET.vectors) > 300
    kinds = Counter(v.exercises["kind"] for v in VSET.vectors)
    assert set(kinds) == {"example", "boundary", "alone", "combination", "malformed", "random"}, kinds
    assert len({v.id for v in VSET.vectors}) == len(VSET.vectors), "vector ids are unique"
    assert all(f["sha256"] and f["count"] > 0 for f in manifest["files"])
    assert manifest["spec_version"] == VSET.spec_version


def test_an_altered_file_is_rejected(tmp_path: Path) -> None:
    for f in (ROOT / "spec/vectors").iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "random.json").write_text((tmp_path / "random.json").read_text().replace('"allow"', '"refuse"', 1))
    with pytest.raises(VectorError, match="sha256 differs"):
        load_vectors(tmp_path)


@pytest.mark.parametrize("profile", ["seed", "strict"])
def test_expected_answers_agree_with_checker_and_reference(profile: str) -> None:
    for v in VSET.vectors:
        fields = {k: (tuple(x) if k in ("summary_input", "summary_covers") else
                      [tuple(p) for p in x] if isinstance(x, list) else x) for k, x in v.case.items()}
        want = v.expected[profile]
        assert check(profile, **fields).to_json() == want, v.id
        assert reference(profile, **fields).to_json() == want, v.id


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
