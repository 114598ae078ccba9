"""Every framework ``tailguard doctor`` knows: one :class:`Framework` entry each.

Adding a framework to ``doctor`` is one entry here and one driver module under
:mod:`tailguard.doctor.drivers` (its ``cases``; see that package's docstring). The versions
come from where they are declared already: each preset's ``validated_on`` (exact versions,
``check-config --list-frameworks`` prints them) and the adapter's extra in pyproject.toml (the
ranges tools/adapter_matrix.sh validates), read back from tailguard's own metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FRAMEWORKS", "Framework", "by_name"]


@dataclass(frozen=True)
class Framework:
    """``name``: what ``--framework`` takes; ``package``: the distribution whose presence means
    the framework is installed; ``presets``: the preset names (``[framework] name``) whose
    ``validated_on`` apply; ``extra``: tailguard's extra holding the adapter's validated ranges
    (``None``: no adapter); ``driver``: the module under ``tailguard.doctor.drivers``;
    ``note``: why it may be missing where it is (shown with ``not installed``)."""

    name: str
    package: str
    presets: tuple[str, ...]
    extra: str | None
    driver: str
    note: str = ""


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("langchain", "langchain", ("langchain.SummarizationMiddleware",), "langchain", "langchain"),
    Framework("deepagents", "deepagents", ("deepagents.SummarizationMiddleware",), "deepagents", "deepagents"),
    Framework("langmem", "langmem", ("langmem.summarize_messages",), "langmem", "langmem"),
    Framework("openai-agents", "openai-agents", ("agents.OpenAIResponsesCompactionSession",), "openai-agents",
              "openai_agents"),
    Framework("pydantic-ai", "pydantic-ai-slim", ("pydantic_ai.OpenAICompaction",), "pydantic-ai", "pydantic_ai"),
    Framework("google-adk", "google-adk", ("google_adk.EventsCompactionConfig",), "google-adk", "google_adk"),
    Framework("autogen", "autogen-core", ("autogen",), "autogen", "autogen"),
    Framework("semantic-kernel", "semantic-kernel", ("semantic_kernel.ChatHistoryTruncationReducer",
              "semantic_kernel.ChatHistorySummarizationReducer"), "semantic-kernel", "semantic_kernel"),
    Framework("llamaindex", "llama-index-core", ("llamaindex.Memory", "llamaindex.ChatSummaryMemoryBuffer"),
              "llamaindex", "llamaindex"),
    Framework("openhands", "openhands-sdk", ("openhands.CondenserPipeline",), "openhands", "openhands",
              note="Python >= 3.12 and its own venv (openai < 3): .venvs/py3.12-openhands"),
    Framework("strands", "strands-agents", ("strands.SlidingWindowConversationManager",
              "strands.SummarizingConversationManager"), "strands", "strands",
              note="its own venv (watchdog < 7, google-adk needs >= 7): .venvs/py3.12-strands"),
)


def by_name(name: str) -> Framework | None:
    return next((f for f in FRAMEWORKS if f.name == name), None)
