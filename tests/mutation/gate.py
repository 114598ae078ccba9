"""The mutation gate: every surviving mutant is killed or listed as equivalent, with its reason.

``python tests/mutation/gate.py [--equivalent FILE] [--run-modules MOD ...]`` runs in the
directory where ``mutmut run`` ran (it reads ``mutmut results`` and ``mutmut show``). mutmut
exits 0 even when mutants survive, so this is the gate (``tools/mutation.sh`` calls it):

- a survivor (or a mutant no test reaches, or a suspicious one) that ``equivalent.toml`` does
  not list fails the gate, printed with its diff and a ready-to-paste entry;
- the equivalent lists are ``tests/mutation/equivalent*.toml`` (one file per module group, so
  work on different modules never edits the same file); ``--equivalent FILE`` (repeatable)
  reads only the files given;
- an entry is keyed by the function (``tailguard.runtime.escalate.Outcome.commit``) and the mutation
  (the source line before and after, whitespace-trimmed), never by line number or by mutmut's
  mutant number, so it survives edits elsewhere in the file;
- an entry that matches no survivor of a module that was run is reported as stale (a test now
  kills it: delete the entry); stale entries fail the gate only with ``--strict-stale``.

Exit 0 pass, 1 unexplained survivors (or stale entries under ``--strict-stale``), 2 bad input.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAILING = ("survived", "no tests", "suspicious", "segfault")
_NAME = re.compile(r"^\s*(?P<name>[\w.ǁ]+__mutmut_\d+): (?P<status>.+?)\s*$")


@dataclass(frozen=True)
class Key:
    function: str
    original: str
    mutated: str


def function_of(mutant: str) -> str:
    """``tailguard.runtime.escalate.xǁOutcomeǁcommit__mutmut_5`` -> ``tailguard.runtime.escalate.Outcome.commit``."""
    base = re.sub(r"__mutmut_\d+$", "", mutant)
    module, _, func = base.rpartition(".")
    if func.startswith("xǁ"):
        func = ".".join(part for part in func[2:].split("ǁ") if part)
    elif func.startswith("x_"):
        func = func[2:]
    return f"{module}.{func}"


def mutation_of(diff: str) -> tuple[str, str]:
    """The removed and added source lines of a mutant's diff (joined, trimmed)."""
    removed = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    added = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(removed), " / ".join(added)


def equivalent_files() -> list[Path]:
    """The committed equivalent lists: ``equivalent.toml`` and ``equivalent_<group>.toml``."""
    return sorted(HERE.glob("equivalent*.toml"))


def load_all(paths: list[Path]) -> dict[Key, str]:
    """Every entry of every file; the same mutant listed twice is an error."""
    out: dict[Key, str] = {}
    for path in paths:
        for key, reason in load_equivalent(path).items():
            if key in out:
                raise SystemExit(f"gate: {path}: {key.function}: {key.original!r} is listed twice")
            out[key] = reason
    return out


def load_equivalent(path: Path) -> dict[Key, str]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SystemExit(f"gate: {path}: {exc}") from None
    out: dict[Key, str] = {}
    for i, entry in enumerate(data.get("mutant", [])):
        try:
            key = Key(entry["function"], entry["original"], entry["mutated"])
            reason = entry["reason"]
        except KeyError as exc:
            raise SystemExit(f"gate: {path}: mutant entry {i + 1} has no {exc.args[0]!r}") from None
        if not isinstance(reason, str) or len(reason.strip()) < 10:
            raise SystemExit(f"gate: {path}: mutant entry {i + 1} ({key.function}) needs a reason")
        out[key] = reason
    return out


def _mutmut(*args: str) -> str:
    proc = subprocess.run(["mutmut", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"gate: mutmut {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def _toml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--equivalent", type=Path, action="append", default=None,
                    help="an equivalent list (repeatable; default: every tests/mutation/equivalent*.toml)")
    ap.add_argument("--run-modules", nargs="*", default=None,
                    help="the modules that were mutated (stale entries are reported for these only)")
    ap.add_argument("--strict-stale", action="store_true")
    args = ap.parse_args(argv)
    equivalent = load_all(args.equivalent or equivalent_files())
    counts: dict[str, int] = {}
    unexplained: list[tuple[str, str, Key, str]] = []
    matched: set[Key] = set()
    for line in _mutmut("results", "--all", "true").splitlines():
        m = _NAME.match(line)
        if m is None:
            continue
        name, status = m["name"], m["status"]
        counts[status] = counts.get(status, 0) + 1
        if status not in FAILING:
            continue
        diff = _mutmut("show", name)
        original, mutated = mutation_of(diff)
        key = Key(function_of(name), original, mutated)
        if status == "survived" and key in equivalent:
            matched.add(key)
            continue
        unexplained.append((name, status, key, diff))
    total = sum(counts.values())
    print("mutants: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + f" ({total} in all)")
    if total == 0:
        print("gate: no mutant results (did mutmut run?)", file=sys.stderr)
        return 2
    for name, status, key, diff in unexplained:
        print(f"\nUNEXPLAINED {status.upper()}: {name}\n{diff.rstrip()}")
        print("  kill it with a test, or if it is equivalent add to tests/mutation/equivalent*.toml:")
        print(f"  [[mutant]]\n  function = {_toml(key.function)}\n  original = {_toml(key.original)}\n"
              f"  mutated = {_toml(key.mutated)}\n  reason = \"...\"")
    modules = args.run_modules
    stale = [k for k in equivalent if k not in matched
             and (modules is None or any(k.function.startswith(mod + ".") for mod in modules))]
    for k in stale:
        print(f"STALE equivalent entry (no such survivor now): {k.function}: {k.original!r} -> {k.mutated!r}")
    print(f"gate: {len(matched)} survivor(s) listed as equivalent, {len(unexplained)} unexplained, "
          f"{len(stale)} stale entr{'y' if len(stale) == 1 else 'ies'}")
    if unexplained or (stale and args.strict_stale):
        print("MUTATION GATE FAILED")
        return 1
    print("MUTATION GATE PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
