"""The semantic ledger mutants (tests/mutation/semantic_ledger.toml) still mutate the code: every
``old`` text occurs exactly once in its file, ids are unique, and applying one changes the file.
tools/ledger_mutants.py runs them (docs/verification.md, "The ledger's semantic mutants")."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _runner():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("ledger_mutants", ROOT / "tools" / "ledger_mutants.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ledger_mutants"] = mod
    spec.loader.exec_module(mod)
    return mod


RUNNER = _runner()
DEFAULT_TESTS, MUTANTS = RUNNER.load()


def test_the_list_is_well_formed() -> None:
    ids = [m["id"] for m in MUTANTS]
    assert len(ids) == len(set(ids)) and len(ids) >= 32
    for t in DEFAULT_TESTS:
        assert (ROOT / t).is_file(), t
    covered = {Path(str(m["file"])).name for m in MUTANTS}
    assert {"ledger_core.py", "lineage.py", "ledger.py", "interval_index.py"} <= covered


@pytest.mark.parametrize("m", MUTANTS, ids=[str(m["id"]) for m in MUTANTS])
def test_each_mutant_still_applies(m: dict[str, object], tmp_path: Path) -> None:
    text = (ROOT / str(m["file"])).read_text(encoding="utf-8")
    assert text.count(str(m["old"])) == 1, m["id"]
    assert str(m["old"]) != str(m["new"])
    dest = tmp_path / str(m["file"])
    dest.parent.mkdir(parents=True)
    dest.write_text(text, encoding="utf-8")
    RUNNER.apply(tmp_path, m)
    assert dest.read_text(encoding="utf-8") != text
