"""Issue 24: the three adapters look alike.

- They take the guard's options as one immutable ``GuardOptions`` (``options=``), or the
  keywords they always took, never both; the options hold no session's state.
- They define the same named steps (``STEPS``), and each sync/async pair runs one body: the
  same session through either path writes the same log, and a summarizer that raises leaves
  the adapter ready for the next call.
- The versions they state are their preset's ``validated_on``, in the code (``SUPPORTED``),
  in the ``ImportError`` and in docs/integrations.md; no adapter retypes a version.

Driven offline with the installed frameworks and their own fake models.
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import itertools
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")
pytest.importorskip("langmem", reason="install the frameworks extra (CI does)")
pytest.importorskip("agents", reason="install the frameworks extra (CI does)")
pytest.importorskip("deepagents", reason="install the frameworks extra (CI does)")
pytest.importorskip("google.adk", reason="install the frameworks extra (CI does)")
pytest.importorskip("autogen_core", reason="install the frameworks extra (CI does)")
pytest.importorskip("semantic_kernel", reason="install the frameworks extra (CI does)")
pytest.importorskip("llama_index.core", reason="install the frameworks extra (CI does)")

from agents import SQLiteSession
from agents.memory.session_settings import SessionSettings
from deepagents.backends import StateBackend
from langchain_core.messages import AIMessage, HumanMessage

import tailguard.adapters
from tailguard.adapters import (
    GuardOptions,
    autogen as ag_adapter,
    deepagents as da_adapter,
    google_adk as adk_adapter,
    langchain as lc_adapter,
    langmem as lm_adapter,
    llamaindex as li_adapter,
    openai_agents as oa_adapter,
    semantic_kernel as sk_adapter,
)
from tailguard.adapters._guard import STEPS
from tailguard.adapters.autogen import GuardedChatCompletionContext
from tailguard.adapters.deepagents import GuardedDeepAgentsSummarizationMiddleware
from tailguard.adapters.google_adk import GuardedCompaction
from tailguard.adapters.langchain import GuardedSummarizationMiddleware
from tailguard.adapters.langmem import GuardedSummarizer
from tailguard.adapters.llamaindex import GuardedMemory
from tailguard.adapters.openai_agents import GuardedResponsesCompactionSession
from tailguard.adapters.semantic_kernel import GuardedReducer
from tailguard.pipeline.presets import (
    autogen as ag_preset,
    deepagents as da_preset,
    google_adk as adk_preset,
    langchain as lc_preset,
    langmem as lm_preset,
    llamaindex as li_preset,
    openai_agents as oa_preset,
    semantic_kernel as sk_preset,
)
from tailguard.runtime.seed_api import UnrecoverableCompactionError
from tests.adapters.fakes import RecordingChatModel, conversation, recording_model

ROOT = Path(__file__).resolve().parents[2]
# module, its extra, the framework module to block, the preset, the adapter class
ADAPTERS = {
    "langchain": ("langchain", "langchain", lc_preset.PRESET, GuardedSummarizationMiddleware),
    "openai_agents": ("openai-agents", "agents", oa_preset.PRESET, GuardedResponsesCompactionSession),
    "langmem": ("langmem", "langmem", lm_preset.PRESET, GuardedSummarizer),
    "deepagents": ("deepagents", "deepagents", da_preset.PRESET, GuardedDeepAgentsSummarizationMiddleware),
    "google_adk": ("google-adk", "google.adk", adk_preset.PRESET, GuardedCompaction),
    "autogen": ("autogen", "autogen_core", ag_preset.PRESET, GuardedChatCompletionContext),
    "semantic_kernel": ("semantic-kernel", "semantic_kernel", sk_preset.SUMMARIZATION_PRESET, GuardedReducer),
    "llamaindex": ("llamaindex", "llama_index", li_preset.MEMORY, GuardedMemory),
}
MODULES = {"langchain": lc_adapter, "openai_agents": oa_adapter, "langmem": lm_adapter, "deepagents": da_adapter,
           "google_adk": adk_adapter, "autogen": ag_adapter, "semantic_kernel": sk_adapter,
           "llamaindex": li_adapter}


def deep_middleware(**kw: Any) -> GuardedDeepAgentsSummarizationMiddleware:
    return GuardedDeepAgentsSummarizationMiddleware(recording_model(), backend=StateBackend(), trigger=("tokens", 3000),
                                                    keep=("messages", 20), **kw)


def middleware(**kw: Any) -> GuardedSummarizationMiddleware:
    return GuardedSummarizationMiddleware(recording_model(), trigger=("tokens", 3000), keep=("messages", 20), **kw)


def openai_session(**kw: Any) -> GuardedResponsesCompactionSession:
    under = SQLiteSession("s", session_settings=SessionSettings(limit=4))
    return GuardedResponsesCompactionSession("s", under, compaction_mode="input", **kw)


# -- GuardOptions --------------------------------------------------------------------------

def test_options_are_frozen_and_checked_when_built() -> None:
    opts = GuardOptions(recovery_floor_span=4)
    assert (opts.floor_unit, opts.on_refuse, opts.store, opts.log, opts.profile) == (
        "messages", "halt", None, None, "partitioned")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.on_refuse = "defer"  # type: ignore[misc]
    with pytest.raises(TypeError):
        GuardOptions(4)  # type: ignore[misc]  # keywords only
    with pytest.raises(ValueError, match="needs store="):
        dataclasses.replace(opts, on_refuse="spill")  # a changed copy is checked again
    for bad, message in [({"recovery_floor_span": True}, "recovery_floor_span"),
                         ({"on_refuse": "ignore"}, "on_refuse: expected one of"),
                         ({"profile": "lenient"}, "unknown profile")]:
        with pytest.raises(ValueError, match=message):
            GuardOptions(**{"recovery_floor_span": 1, **bad})
    with pytest.raises(TypeError, match="store: expected a SpillStore"):
        GuardOptions(recovery_floor_span=1, store=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="log: expected a path, a directory, a text stream or a function"):
        GuardOptions(recovery_floor_span=1, log=42)  # type: ignore[arg-type]


def test_options_or_keywords_build_the_same_guard(tmp_path: Path) -> None:
    """The same session under options= and under the keywords writes the same log bytes."""
    def session(work: Path, *, use_options: bool) -> bytes:
        knobs: dict[str, Any] = {"recovery_floor_span": 4, "on_refuse": "spill", "store": work / "spills",
                                 "log": work / "log.jsonl"}
        mw = middleware(options=GuardOptions(**knobs)) if use_options else middleware(**knobs)
        mw.before_model({"messages": conversation()}, None)  # type: ignore[arg-type]
        mw.guard.close()
        return (work / "log.jsonl").read_bytes()

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert session(tmp_path / "a", use_options=True) == session(tmp_path / "b", use_options=False)


@pytest.mark.parametrize("build", [
    lambda **kw: middleware(**kw),
    lambda **kw: openai_session(**kw),
    lambda **kw: GuardedSummarizer(**kw),
    lambda **kw: deep_middleware(**kw),
], ids=["langchain", "openai_agents", "langmem", "deepagents"])
def test_every_adapter_takes_options_or_keywords_never_both(build: Any) -> None:
    opts = GuardOptions(recovery_floor_span=0, on_refuse="defer")
    adapter = build(options=opts)
    assert adapter.options is opts and adapter.guard.options is opts
    assert adapter.guard.on_refuse == "defer"
    with pytest.raises(TypeError, match="give options= or on_refuse=, store=, not both"):
        build(options=opts, on_refuse="defer", store=None)
    with pytest.raises(TypeError, match="options: expected a GuardOptions"):
        build(options={"recovery_floor_span": 0})
    built = build(recovery_floor_span=0, on_refuse="defer")
    assert built.options == opts and built.options is not opts


def test_the_floor_is_required_where_it_always_was() -> None:
    for build in (lambda: middleware(), lambda: GuardedSummarizer()):
        with pytest.raises(TypeError, match="recovery_floor_span= is required"):
            build()
    assert openai_session().options == GuardOptions(recovery_floor_span=0)  # its default, as before


def test_an_adapter_refuses_a_unit_its_framework_does_not_count() -> None:
    with pytest.raises(ValueError, match="floor_unit: openai-agents offsets can be 'messages'"):
        openai_session(options=GuardOptions(recovery_floor_span=0, floor_unit="tokens"))
    assert middleware(options=GuardOptions(recovery_floor_span=0, floor_unit="tokens")).guard.unit == "tokens"


def test_one_options_value_configures_many_sessions() -> None:
    """The options hold no session's state: two sessions under one value stay apart."""
    opts = GuardOptions(recovery_floor_span=4, on_refuse="defer")
    before = dataclasses.asdict(opts)
    first, second = GuardedSummarizer(options=opts), GuardedSummarizer(options=opts)
    result = first.summarize_messages(conversation(100), running_summary=None, model=recording_model(),
                                      max_tokens=4000, max_tokens_before_summary=9100)
    assert result.running_summary is None  # deferred
    assert (first.guard.ledger.history_end, first.guard.ledger.refusals) == (100, 1)
    assert (second.guard.ledger.history_end, second.guard.ledger.refusals) == (0, 0)
    assert first.guard.ledger is not second.guard.ledger and first.guard.tracker is not second.guard.tracker
    assert dataclasses.asdict(opts) == before


# -- the same named steps; one body for sync and async --------------------------------------

@pytest.mark.parametrize("module", sorted(ADAPTERS))
def test_every_adapter_defines_the_named_steps(module: str) -> None:
    cls = ADAPTERS[module][3]
    assert [s for s in STEPS if s not in vars(cls)] == []


def langchain_log(asynchronous: bool) -> str:
    log = io.StringIO()
    mw = middleware(recovery_floor_span=4, on_refuse="defer", log=log)
    state: list[Any] = conversation(120)
    for rnd in range(2):
        call = mw.abefore_model if asynchronous else mw.before_model
        update = call({"messages": state}, None)  # type: ignore[arg-type]
        update = asyncio.run(update) if asynchronous else update
        state += [HumanMessage(content=f"r{rnd} {i} " + "y" * 400, id=f"r{rnd}-{i}") for i in range(10)]
    mw.trim_tokens_to_summarize = None  # now everything is shown: allowed
    call = mw.abefore_model if asynchronous else mw.before_model
    update = call({"messages": state}, None)  # type: ignore[arg-type]
    assert (asyncio.run(update) if asynchronous else update) is not None
    return log.getvalue()


def langmem_log(asynchronous: bool) -> str:
    log = io.StringIO()
    guard = GuardedSummarizer(recovery_floor_span=4, on_refuse="defer", log=log)
    running = None
    for knobs in ({"max_tokens": 4000}, {"max_tokens": 12000}):
        kw: dict[str, Any] = {"running_summary": running, "model": recording_model(),
                              "max_tokens_before_summary": 9100, **knobs}
        result = (asyncio.run(guard.asummarize_messages(conversation(100), **kw)) if asynchronous
                  else guard.summarize_messages(conversation(100), **kw))
        running = result.running_summary or running
    assert running is not None
    return log.getvalue()


@pytest.mark.parametrize("session", [langchain_log, langmem_log], ids=["langchain", "langmem"])
def test_sync_and_async_paths_write_the_same_log(session: Any) -> None:
    sync = session(False)
    assert '"event": "refusal"' in sync and '"event": "compact"' in sync
    assert session(True) == sync


class Flaky(RecordingChatModel):
    """LangChain's fake chat model, failing while ``down`` is set (a provider outage)."""

    down: list[bool] = []  # noqa: RUF012 - pydantic field, replaced per instance

    def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        if self.down:
            raise RuntimeError("provider down")
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_failing_summarizer_leaves_the_middleware_ready(asynchronous: bool) -> None:
    model = Flaky(messages=itertools.repeat(AIMessage(content="S")), calls=[], down=[True])
    mw = GuardedSummarizationMiddleware(model, recovery_floor_span=4, trigger=("tokens", 3000),
                                        keep=("messages", 20), trim_tokens_to_summarize=None)

    def call() -> Any:
        got = (mw.abefore_model if asynchronous else mw.before_model)({"messages": conversation()}, None)  # type: ignore[arg-type]
        return asyncio.run(got) if asynchronous else got

    with pytest.raises(RuntimeError, match="provider down"):
        call()
    assert mw.guard.ledger.summaries == ()  # nothing was recorded
    assert lc_adapter._trimmed.get() is None and lc_adapter._overflowed.get() is None  # probe reset
    model.down.clear()
    update = call()  # not "already in progress": the failed call cleaned up
    assert update is not None and mw.guard.ledger.summaries == ("0",)


def test_a_refusal_in_the_async_path_leaves_the_middleware_ready() -> None:
    mw = middleware(recovery_floor_span=4)
    for _ in range(2):
        with pytest.raises(UnrecoverableCompactionError):
            asyncio.run(mw.abefore_model({"messages": conversation()}, None))  # type: ignore[arg-type]


# -- supported versions come from the presets -----------------------------------------------

@pytest.mark.parametrize("module", sorted(ADAPTERS))
def test_stated_versions_are_the_presets(module: str) -> None:
    preset = ADAPTERS[module][2]
    assert preset.validated_on == MODULES[module].SUPPORTED
    source = (ROOT / "src/tailguard/adapters" / f"{module}.py").read_text()
    assert re.findall(r"\d+\.\d+", source) == []  # no version retyped in a docstring or a constant


@pytest.mark.parametrize("module", sorted(ADAPTERS))
def test_the_import_error_names_the_extra_and_the_presets_versions(module: str) -> None:
    extra, blocked, preset, _ = ADAPTERS[module]
    code = (f"import sys; sys.modules[{blocked!r}] = None\n"
            f"try:\n    import tailguard.adapters.{module}\n"
            f"except ImportError as e:\n    print(e); sys.exit(0)\nsys.exit(1)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"pip install 'tailguard[{extra}]'" in done.stdout
    assert f"(validated with {', '.join(preset.validated_on)})" in done.stdout


def test_the_docs_state_the_presets_versions() -> None:
    """docs/integrations.md's version table: the validated column is each adapter's SUPPORTED."""
    text = (ROOT / "docs/integrations.md").read_text()
    rows = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([\w-]+)` \|[^|]*\|([^|]*)\|", text, re.M)}
    for module, (extra, _, _, _) in ADAPTERS.items():
        assert rows.get(extra) == ", ".join(MODULES[module].SUPPORTED), extra


def test_the_package_face_exports_the_options() -> None:
    assert tailguard.adapters.GuardOptions is GuardOptions
    assert set(tailguard.adapters.__all__) == {"GuardOptions", "OnRefuse"}


def test_the_docs_state_the_openhands_versions() -> None:
    """The OpenHands SDK adapter runs only in its own 3.12 venv (tests/adapters/test_openhands_adapter.py
    checks its SUPPORTED and ImportError there); its docs row is its preset's validated_on."""
    from tailguard.pipeline.presets import openhands as oh_preset

    text = (ROOT / "docs/integrations.md").read_text()
    rows = {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| `([\w-]+)` \|[^|]*\|([^|]*)\|", text, re.M)}
    assert rows.get("openhands") == ", ".join(oh_preset.PRESET.validated_on)
