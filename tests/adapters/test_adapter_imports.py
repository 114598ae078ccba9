"""The base install stays standard-library only; a missing framework names its extra."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

FRAMEWORKS = {"langchain": "langchain", "langmem": "langmem", "openai_agents": "agents", "pydantic_ai": "pydantic_ai",
              "google_adk": "google.adk", "autogen": "autogen_core", "semantic_kernel": "semantic_kernel",
              "llamaindex": "llama_index"}


def test_adapters_package_imports_no_framework() -> None:
    code = ("import sys, tailguard.adapters, tailguard.adapters._guard, tailguard.adapters._offsets, "
            "tailguard.adapters._spill_tool, tailguard.adapters._sessions; "
            "bad = [m for m in ('langchain', 'langchain_core', 'langgraph', 'langmem', 'agents', 'openai', "
            "'pydantic_ai', 'google.adk', 'openhands', 'autogen_core', 'semantic_kernel', 'strands', 'llama_index') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("module", "extra", "blocked"), [
    ("langchain", "langchain", "langchain"),
    ("langmem", "langmem", "langmem"),
    ("openai_agents", "openai-agents", "agents"),
    ("pydantic_ai", "pydantic-ai", "pydantic_ai"),
    ("google_adk", "google-adk", "google.adk"),
    ("autogen", "autogen", "autogen_core"),
    ("semantic_kernel", "semantic-kernel", "semantic_kernel"),
    ("llamaindex", "llamaindex", "llama_index"),
    ("openhands", "openhands", "openhands"),  # its tests run in .venvs/py3.12-openhands (.ci/versions)
    ("strands", "strands", "strands"),  # not in `frameworks` (watchdog: docs/presets/strands.md)
])
def test_missing_framework_names_the_extra(module: str, extra: str, blocked: str) -> None:
    code = (f"import sys; sys.modules[{blocked!r}] = None\n"
            f"try:\n    import tailguard.adapters.{module}\n"
            f"except ImportError as e:\n    print(e); sys.exit(0)\nsys.exit(1)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"pip install 'tailguard[{extra}]'" in done.stdout


def test_ci_runs_every_adapter_test() -> None:
    """CI sets TAILGUARD_REQUIRE_FRAMEWORKS=1: there an adapter test may never be skipped."""
    if os.environ.get("TAILGUARD_REQUIRE_FRAMEWORKS") != "1":
        pytest.skip("only enforced where TAILGUARD_REQUIRE_FRAMEWORKS=1 (CI)")
    missing = [m for m in FRAMEWORKS.values() if importlib.util.find_spec(m) is None]
    assert not missing, f"frameworks missing in CI: {missing}; install '.[dev,frameworks]'"
