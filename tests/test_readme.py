"""The README's "Proved properties" list is complete: every theorem listed, none missing."""

from __future__ import annotations

import re
from pathlib import Path

from tailguard.cli.prove import load_theorems
from tailguard.theorems import REGISTRY

ROOT = Path(__file__).resolve().parents[1]


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def test_proved_properties_list_matches_the_registry() -> None:
    load_theorems()
    section = _section((ROOT / "README.md").read_text(), "Proved properties")
    listed = re.findall(r"^- \*\*(\w+)\*\*", section, flags=re.M)
    assert sorted(listed) == sorted(REGISTRY), "README lists theorems that do not exist, or misses some"
    for tid, thm in REGISTRY.items():
        line = next(ln for ln in section.splitlines() if ln.startswith(f"- **{tid}**"))
        module_path = thm.module.replace(".", "/") + ".py"
        assert f"]({module_path}" in line, f"{tid} must link to its proof {module_path}"
        assert (ROOT / module_path).exists()


def test_quick_start_commands_present() -> None:
    text = (ROOT / "README.md").read_text()
    quick = _section(text, "Quick start")
    assert "examples/cases/seed-incident.json" in quick
    assert "bash .ci/test" in quick or "pytest" in quick
