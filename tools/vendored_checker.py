"""Run the vendorable checker file on this Python against every spec test vector.

    python3.9 tools/vendored_checker.py [CHECKER.py] [VECTORS_DIR]

``src/tailguard/_generated/checker.py`` says it runs on Python 3.9 to 3.13 with the standard
library only; the package itself needs 3.11. This script is the check of that claim: standard
library only, runnable on 3.9, it loads the checker *by file path* (no tailguard package on the
path) and compares its decision, failed clauses and holes (or, for unusable input, the field
its ``CaseError`` names) with every vector in ``spec/vectors/`` under all three profiles.
Exit 0: all agree; 1: a difference (the first ten are printed); 2: unusable arguments.
``.ci/versions`` runs it on every installed Python from 3.9 to 3.13.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Repeated(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Repeated(k)
        out[k] = v
    return out


def load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("vendored_checker", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["vendored_checker"] = mod  # dataclasses and NamedTuple look their module up
    spec.loader.exec_module(mod)
    return mod


def outcome(checker: Any, case: Any, profile: str) -> dict[str, Any]:
    try:
        d = checker.check_case(case, profile)
    except checker.CaseError as exc:
        return {"unusable": [exc.field]}
    return {"decision": "allow" if d.allowed else "refuse", "failed": list(d.failed),
            "holes": [list(h) for h in d.holes]}


def main(argv: list[str]) -> int:
    if len(argv) > 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    checker_path = Path(argv[0]) if argv else ROOT / "src" / "tailguard" / "_generated" / "checker.py"
    vectors_dir = Path(argv[1]) if len(argv) > 1 else ROOT / "spec" / "vectors"
    for p in (checker_path, vectors_dir / "manifest.json"):
        if not p.is_file():
            print(f"{p}: no such file", file=sys.stderr)
            return 2
    checker = load(checker_path)
    manifest = json.loads((vectors_dir / "manifest.json").read_text(encoding="utf-8"))
    total, bad = 0, []
    for entry in manifest["files"]:
        doc = json.loads((vectors_dir / entry["path"]).read_text(encoding="utf-8"))
        for vec in doc["vectors"]:
            for profile, want in vec["expected"].items():
                total += 1
                try:
                    case = vec["case"] if "case" in vec else json.loads(vec["case_text"], object_pairs_hook=_unique)
                except _Repeated as exc:  # reading JSON is the caller's part: a repeated key is unusable
                    got: dict[str, Any] = {"unusable": [exc.key]}
                else:
                    got = outcome(checker, case, profile)
                if "unusable" in want:  # the field named, an index after it allowed (spills[0][1])
                    named = _NAME.match(got["unusable"][0]) if "unusable" in got else None
                    same = named is not None and named.group() in want["unusable"]
                else:
                    same = got == {k: want[k] for k in ("decision", "failed", "holes")}
                if not same:
                    bad.append(f"{vec['id']} [{profile}]: expected {want}, got {got}")
    version = ".".join(map(str, sys.version_info[:3]))
    if bad:
        print(f"Python {version}: {len(bad)} of {total} checks differ")
        for line in bad[:10]:
            print("  " + line)
        return 1
    print(f"Python {version}: the vendored checker agrees with all {total} vector checks "
          f"({manifest['count']} vectors, spec {manifest['spec_version']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
