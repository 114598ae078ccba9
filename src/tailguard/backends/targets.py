"""Every derived file, and how to render it from the spec: what ``tailguard gen`` writes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tailguard.backends.docs_render import render_clause_reference, splice
from tailguard.backends.dts_render import render_dts
from tailguard.backends.js_render import render_js, render_js_adapter
from tailguard.backends.ledger_vectors import ledger_vector_targets
from tailguard.backends.python_render import render_python
from tailguard.backends.vectors import vector_targets
from tailguard.speclang.load import Spec


@dataclass(frozen=True)
class Target:
    path: str  # relative to the project root
    render: Callable[[Spec, Path], str]  # (spec, root) -> full new content
    what: str


def _spec_md(spec: Spec, root: Path) -> str:
    return splice((root / "spec" / "SPEC.md").read_text(encoding="utf-8"), render_clause_reference(spec))


def targets() -> list[Target]:
    return [
        Target("src/tailguard/_generated/checker.py", lambda s, r: render_python(s), "runtime checker"),
        Target("spec/SPEC.md", _spec_md, "clause reference block of the normative spec"),
        Target("js/tailguard-checker.mjs", lambda s, r: render_js(s), "JavaScript checker (Node.js, no dependencies)"),
        Target("js/tailguard-checker.d.ts", lambda s, r: render_dts(s), "TypeScript declarations of the JS checker"),
        Target("js/conform-adapter.mjs", lambda s, r: render_js_adapter(s),
               "conformance adapter of the JavaScript checker"),
        *(Target(path, render, what) for path, render, what in vector_targets()),
        *(Target(path, render, what) for path, render, what in ledger_vector_targets()),
    ]
