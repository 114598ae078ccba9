"""docs/integrations.md, "In production": every snippet runs offline, in order, as printed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")
pytest.importorskip("langgraph.checkpoint.sqlite", reason="install the frameworks extra (CI does)")
pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def production_snippets() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    part = text[text.index("### In production"):]
    part = part[: part.index("\n## ")]
    return re.findall(r"```python\n(.*?)```", part, flags=re.S)


def test_the_in_production_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snippets = production_snippets()
    assert len(snippets) == 6
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_integrations"}
    for k, code in enumerate(snippets):
        exec(compile(code, f"{DOC.name}:in-production-{k}", "exec"), namespace)  # the doc's own code
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert any(name.endswith("-alice.jsonl") for name in logs)
    assert any(name.startswith(tuple("0123456789abcdef")) and "stateless-" in name for name in logs)
    assert any(name.endswith("-dora.jsonl") for name in logs) and any(name.endswith("-emil.jsonl") for name in logs)
    assert any(name.endswith("-frank.jsonl") for name in logs) and any(name.endswith("-gina.jsonl") for name in logs)
