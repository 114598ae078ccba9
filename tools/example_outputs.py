"""Run every command on every file in ``examples/`` and write what each printed, for a diff.

A refactor that must change nothing outside (issue 24) is checked by running this before and
after and diffing the two directories::

    python tools/example_outputs.py /tmp/before      # on the old commit
    python tools/example_outputs.py /tmp/after       # on the new one
    diff -r /tmp/before /tmp/after                   # empty: byte-identical

Each output file holds the command line, its exit code, stdout and stderr. Commands run in a
subprocess from the repository root, so paths in messages are the same on both sides. Times
(``0.19s``, ``"seconds": 0.172``, ``(1.7 s``, ``18.6 s)``) are replaced by ``<time>``: they
are measurements, not output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


_TIMES = [
    (re.compile(r'"seconds": [0-9.]+'), '"seconds": <time>'),
    (re.compile(r"\b[0-9]+(?:\.[0-9]+)? ?s\b"), "<time>"),
]


def normalize(text: str) -> str:
    """``text`` with every measured time replaced by ``<time>``."""
    for pattern, repl in _TIMES:
        text = pattern.sub(repl, text)
    return text


def commands() -> list[list[str]]:
    """Every (documented) command over every example file, in a fixed order."""
    ex = ROOT / "examples"
    out: list[list[str]] = []
    for case in sorted((ex / "cases").glob("*.json")):
        rel = str(case.relative_to(ROOT))
        for profile in ("seed", "strict", "partitioned"):
            for fmt in ("text", "json"):
                out.append(["check", "--profile", profile, "--format", fmt, rel])
    for trace in sorted((ex / "traces").glob("*.jsonl")):
        rel = str(trace.relative_to(ROOT))
        for profile in ("seed", "strict", "partitioned"):
            for fmt in ("text", "json"):
                out.append(["audit", "--profile", profile, "--format", fmt, rel])
            out.append(["audit", "--profile", profile, "--summary", rel])
    for folder in ("policies", "presets"):
        for policy in sorted((ex / folder).glob("*.toml")):
            rel = str(policy.relative_to(ROOT))
            for extra in ([], ["--format", "json"], ["--format", "sarif"], ["--explain"], ["--suggest"]):
                out.append(["check-config", *extra, rel])
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/example_outputs.py OUT_DIR", file=sys.stderr)
        return 2
    dest = Path(argv[0])
    dest.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONHASHSEED="0", COLUMNS="100")
    for i, cmd in enumerate(commands()):
        proc = subprocess.run([sys.executable, "-m", "tailguard", *cmd], cwd=ROOT, env=env,
                              capture_output=True, text=True, check=False)
        name = f"{i:03d}-" + "_".join(c.replace("/", "_").replace("-", "") for c in cmd)[:150] + ".txt"
        (dest / name).write_text(normalize(f"$ tailguard {' '.join(cmd)}\nexit {proc.returncode}\n"
                                           f"--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"),
                                 encoding="utf-8")
    print(f"{len(commands())} command outputs written to {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
