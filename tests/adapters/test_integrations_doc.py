"""docs/integrations.md, "In production": every snippet runs offline, in order, as printed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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


def test_the_semantic_kernel_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Semantic Kernel section's snippet as printed, then its history fed a chat with a tool
    round on SK's connector over a stub transport: the unseen call and result are spilled."""
    pytest.importorskip("semantic_kernel", reason="install the frameworks extra (CI does)")
    import asyncio

    from tailguard.adapters.semantic_kernel import messages_from_spill
    from tailguard.doctor.drivers import semantic_kernel as sk

    text = DOC.read_text(encoding="utf-8")
    part = text[text.index("## Semantic Kernel chat history reducers"):]
    (code,) = re.findall(r"```python\n(.*?)```", part[: part.index("\n## ", 1)], flags=re.S)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")  # the snippet's service is replaced below
    namespace: dict[str, object] = {"__name__": "docs_integrations"}
    exec(compile(code, f"{DOC.name}:semantic-kernel", "exec"), namespace)  # the doc's own code
    history: Any = namespace["history"]
    history.service = sk.StubEndpoint().service()
    messages = [sk.message(0), *sk.tool_round(1), *(sk.message(i, "assistant" if i % 2 else "user")
                                                    for i in range(3, 30))]

    async def feed() -> None:
        for m in messages:
            await history.add_message_async(m)

    asyncio.run(feed())
    guard: Any = namespace["guard"]
    spills = [h for _, h in guard.session_guard(history.session_id).spills]
    assert {1, 2} <= sk.tags(m for h in spills for m in messages_from_spill(guard.store, h))
    guard.close()
    assert len(list((tmp_path / "logs").iterdir())) == 1
