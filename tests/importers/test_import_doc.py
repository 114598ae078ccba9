"""docs/import.md's post-mortem is what the commands print (slow: the real agent runs 240 turns).

    python -m pytest -m slow tests/importers/test_import_doc.py
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("langchain")

from tailguard.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_walkthrough_prints_what_the_page_shows(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples/import/langchain_postmortem.py"), "checkpoints.sqlite"],
                          cwd=tmp_path, capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    doc = (ROOT / "docs/import.md").read_text(encoding="utf-8")
    knobs = str(ROOT / "examples/import/langchain-postmortem.toml")
    runs = {
        "fleet": ["audit", "--from", "langgraph", "checkpoints.sqlite", "--profile", "partitioned", "--knobs", knobs,
                  "--out", str(tmp_path / "results.jsonl")],
        "thread": ["audit", "--from", "langgraph", "checkpoints.sqlite", "--thread", "support-7", "--profile",
                   "partitioned", "--knobs", knobs, "--html", str(tmp_path / "support-7.html")],
        "bare": ["audit", "--from", "langgraph", "checkpoints.sqlite", "--thread", "support-7"],
    }
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        for name, argv in runs.items():
            out = io.StringIO()
            main(argv, stdout=out, stderr=io.StringIO())
            printed = out.getvalue().replace(str(tmp_path / "results.jsonl"), "results.jsonl")
            quoted = [ln for ln in printed.splitlines() if ln.startswith(("checkpoints.sqlite", "tailguard audit:"))]
            assert quoted, name
            for line in quoted[:6]:
                assert line in doc, f"{name}: docs/import.md does not show {line!r}"
    finally:
        os.chdir(here)
    page = (tmp_path / "support-7.html").read_text(encoding="utf-8")
    assert re.search(r"covered only by summary &#x27;0&#x27; \(line 73\), not seen or kept by line 130", page)
