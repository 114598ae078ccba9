"""The theorems hold on the spec, and each can fail: breaking the encoding on purpose
makes the right theorem fail (never pass, never unknown-as-pass)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tailguard.speclang.load import Spec, load_spec
from tailguard.theorems import REGISTRY, Result
from tests.cli_helpers import run_cli

pytest.importorskip("z3")

from proofs import profile_seed, profile_strict, profiles_compared

ROOT = Path(__file__).resolve().parents[1]
SPEC_TEXT = (ROOT / "spec" / "clauses.toml").read_text()


def mutated(tmp_path: Path, old: str, new: str) -> Spec:
    assert SPEC_TEXT.count(old) == 1, old
    p = tmp_path / "clauses.toml"
    p.write_text(SPEC_TEXT.replace(old, new))
    return load_spec(p)


def test_prove_cli_all_hold() -> None:
    code, out, err = run_cli("prove", "--format", "json")
    assert code == 0, out + err
    data = json.loads(out)
    assert data["failed"] == 0
    ids = {t["id"] for t in data["theorems"]}
    assert {"T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8", "T8w", "T9"} <= ids
    for t in data["theorems"]:
        assert t["status"] in ("proved", "witness"), t
        if t["kind"] == "witness":
            assert t["model"] is not None and t["replay"] is not None


def test_witness_cases_replay_through_cli(tmp_path: Path) -> None:
    """T3's printed witness, fed back to `tailguard check`, gets the claimed decisions."""
    case = profiles_compared.seed_allows_a_hole().model
    assert case is not None
    p = tmp_path / "w.json"
    p.write_text(json.dumps(case))
    assert run_cli("check", "--profile", "seed", str(p))[0] == 0
    code, out, _ = run_cli("check", "--format", "json", str(p))
    assert code == 1 and json.loads(out)["holes"]


BREAKS: list[tuple[str, str, str, Callable[[Spec], Result]]] = [
    # (what is broken, old text, new text, theorem that must fail)
    ("seam: >= becomes >", 'holds = "t == 0 or d >= t"', 'holds = "t == 0 or d > t"',
     profile_strict.endpoint_equals_per_offset),
    ("floor one unit short", 'expr = "[max(0, n - F), n)"', 'expr = "[max(0, n - F + 1), n)"',
     profile_strict.strict_allow_is_recoverable),
    ("floor one unit short (endpoints)", 'expr = "[max(0, n - F), n)"', 'expr = "[max(0, n - F + 1), n)"',
     profile_strict.endpoint_equals_per_offset),
    ("summary honesty ignores truncations", 'holds = "C subset I \\\\ TRU"', 'holds = "C subset I"',
     profile_strict.endpoint_equals_per_offset),
    ("tail may overlap truncations", 'holds = "all(r in TR: empty(r & T))"', 'holds = "n >= 0"',
     profile_strict.endpoint_equals_per_offset),
    ("summary honesty rewards truncations", 'holds = "C subset I \\\\ TRU"', 'holds = "C subset I | TRU"',
     profile_strict.monotone_in_truncations_and_spills),
    ("seed: > becomes >=", 'holds = "a <= t - F"', 'holds = "a < t - F"', profile_seed.prose_boundary_is_code),
    ("no_hole forgets spills", 'expr = "union(PC) | union(SP) |', 'expr = "union(PC) |',
     profiles_compared.spill_repairs_only_holes),
    ("units compared loosely", 'holds = "floor_unit == truncator_unit"\nmessage = "recovery floor unit {floor_unit} '
     'cannot be honored by truncator unit {truncator_unit}; the floor',
     'holds = "known(floor_unit)"\nmessage = "recovery floor unit {floor_unit} cannot be honored by truncator unit '
     '{truncator_unit}; the floor', profiles_compared.unit_mismatch_refuses),
]


@pytest.mark.parametrize(("what", "old", "new", "thm"), BREAKS, ids=[b[0] for b in BREAKS])
def test_breaking_the_encoding_fails_the_right_theorem(
    tmp_path: Path, what: str, old: str, new: str, thm: Callable[[Spec], Result]
) -> None:
    if old.startswith('expr = "union(PC) |'):
        old, new = 'expr = "union(PC) | union(SP) | ', 'expr = "union(PC) | '
    spec = mutated(tmp_path, old, new)
    result = thm(spec)
    assert result.status == "counterexample", (what, result)


def test_a_broken_witness_search_is_not_a_pass(tmp_path: Path) -> None:
    """If strict also allowed the incident shape, T3 finds no witness: reported, not passed."""
    spec = mutated(tmp_path, 'holds = "[0, n) subset covered"', 'holds = "n >= 0"')
    result = profiles_compared.seed_allows_a_hole(spec)
    assert result.status == "no-witness"


def test_registry_ids_unique_and_documented() -> None:
    for t in REGISTRY.values():
        assert t.statement and t.title and t.kind in ("theorem", "witness")
