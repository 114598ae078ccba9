#!/usr/bin/env python3
"""Run the ledger's semantic mutants (tests/mutation/semantic_ledger.toml) against `prove` and
the fast tests (issue 32; docs/verification.md, "The ledger's semantic mutants").

    python tools/ledger_mutants.py [--only ID ...] [--no-prove] [--theorem T ...] [--no-tests] [--markdown]

For each mutant: copy the checkout's files (tracked and untracked, not ignored) to a scratch
directory, apply the one edit (its ``old`` text must occur exactly once), then run
``python -m tailguard prove`` there and pytest on the mutant's tests (``-x``, a JUnit report
read back for the first failing test and its time). A mutant is killed when either fails.
One mutant at a time, at low priority: the machine is shared. Exit 0 when every mutant is
killed, 1 when one survives, 2 bad input. ``--theorem`` runs only those theorems (``prove
--only``), ``--no-tests`` no pytest: for a quick look at what one theorem kills.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "tests" / "mutation" / "semantic_ledger.toml"


@dataclass
class Result:
    id: str
    what: str
    prove_failed: list[str]
    prove_rc: int
    prove_s: float
    test: str | None
    test_s: float | None
    tests_rc: int


def load(path: Path = LIST) -> tuple[list[str], list[dict[str, object]]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return list(data["default_tests"]), list(data["mutant"])


def copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for rel in files:
        if not rel:
            continue
        src = ROOT / rel
        if not src.is_file():
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)


def apply(dest: Path, m: dict[str, object]) -> None:
    path = dest / str(m["file"])
    text = path.read_text(encoding="utf-8")
    old, new = str(m["old"]), str(m["new"])
    if text.count(old) != 1:
        raise SystemExit(f"ledger_mutants: {m['id']}: its old text occurs {text.count(old)} times in {m['file']}")
    path.write_text(text.replace(old, new), encoding="utf-8")


def run_one(m: dict[str, object], default_tests: list[str], *, prove: bool, theorems: list[str] | None = None,
            tests_too: bool = True) -> Result:
    with tempfile.TemporaryDirectory(prefix="tg-mutant-") as tmp:
        dest = Path(tmp)
        copy_checkout(dest)
        apply(dest, m)
        env = {**os.environ, "PYTHONPATH": str(dest / "src"), "TAILGUARD_ROOT": str(dest),
               "PYTHONDONTWRITEBYTECODE": "1"}
        failed: list[str] = []
        p_rc, p_s = -1, 0.0
        if prove:
            t0 = time.perf_counter()
            only = ["--only", *theorems] if theorems else []
            p = subprocess.run(["nice", "-n", "15", sys.executable, "-m", "tailguard", "prove", *only], cwd=dest,
                               env=env, capture_output=True, text=True, timeout=900)
            p_s = time.perf_counter() - t0
            p_rc = p.returncode
            failed = [ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("FAIL")]
        if not tests_too:
            return Result(str(m["id"]), str(m["what"]), failed, p_rc, p_s, None, None, 0)
        tests = [str(t) for t in m.get("tests", default_tests)]  # type: ignore[attr-defined]
        xml = dest / "junit.xml"
        t = subprocess.run(["nice", "-n", "15", sys.executable, "-m", "pytest", "-x", "-p", "no:cacheprovider",
                            f"--junitxml={xml}", *tests], cwd=dest, env=env, capture_output=True, text=True,
                           timeout=1800)
        first: str | None = None
        first_s: float | None = None
        if xml.is_file():
            for case in ET.parse(xml).getroot().iter("testcase"):
                if case.find("failure") is not None or case.find("error") is not None:
                    first = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
                    first_s = float(case.get("time") or 0.0)
                    break
        return Result(str(m["id"]), str(m["what"]), failed, p_rc, p_s, first, first_s, t.returncode)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="a mutant id (repeatable)")
    ap.add_argument("--no-prove", action="store_true", help="run only the tests")
    ap.add_argument("--theorem", action="append", default=[], help="run only this theorem (repeatable)")
    ap.add_argument("--no-tests", action="store_true", help="run only prove")
    ap.add_argument("--markdown", action="store_true", help="print the docs/verification.md table")
    args = ap.parse_args(argv)
    default_tests, mutants = load()
    known = {str(m["id"]) for m in mutants}
    for name in args.only:
        if name not in known:
            print(f"ledger_mutants: unknown mutant id {name!r}", file=sys.stderr)
            return 2
    chosen = [m for m in mutants if not args.only or m["id"] in args.only]
    survivors = 0
    rows: list[Result] = []
    for m in chosen:
        r = run_one(m, default_tests, prove=not args.no_prove, theorems=args.theorem, tests_too=not args.no_tests)
        rows.append(r)
        killed = r.prove_rc not in (0, -1) or r.tests_rc != 0
        survivors += not killed
        test = f"{r.test} ({r.test_s:.2f} s)" if r.test else ("-" if r.tests_rc == 0 else f"pytest rc {r.tests_rc}")
        prove_txt = "not run" if r.prove_rc == -1 else (
            "passes" if r.prove_rc == 0 else f"fails {' '.join(r.prove_failed) or f'rc {r.prove_rc}'}")
        print(f"{'killed ' if killed else 'SURVIVED'} {r.id}: prove {prove_txt} ({r.prove_s:.1f} s); "
              f"first failing test {test}", flush=True)
    if args.markdown:
        print("\n| mutant | what it breaks | `prove` | first fast test that fails (its time) |")
        print("|---|---|---|---|")
        for r in rows:
            prove_txt = "not run" if r.prove_rc == -1 else (
                "passes" if r.prove_rc == 0 else f"fails: {', '.join(r.prove_failed) or f'rc {r.prove_rc}'}")
            test = f"`{r.test}` ({r.test_s:.2f} s)" if r.test else "none"
            print(f"| `{r.id}` | {r.what} | {prove_txt} | {test} |")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
