"""OpenTelemetry (issue 31 point 3): each recorded decision as a span event (or a child span) on
the current span, through a real LangChain agent run, exported by the SDK's in-memory exporter."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="install the dev extra (CI does)")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tailguard.adapters import otel
from tailguard.base.vocab import NO_HOLE
from tailguard.runtime import telemetry
from tailguard.runtime.ledger import Ledger
from tailguard.runtime.seed_api import UnrecoverableCompactionError


@pytest.fixture
def traced() -> Iterator[tuple[Any, InMemorySpanExporter, TracerProvider]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("test"), exporter, provider
    otel.disable()
    assert telemetry.SINKS == ()


def events_of(exporter: InMemorySpanExporter, span: str) -> list[tuple[str, dict[str, Any]]]:
    (s,) = [s for s in exporter.get_finished_spans() if s.name == span]
    return [(e.name, dict(e.attributes or {})) for e in s.events]


def test_off_by_default_and_builds_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert telemetry.SINKS == () and not otel.enabled()

    def boom(*a: Any) -> Any:
        raise AssertionError("attributes built with tracing off")

    monkeypatch.setattr(Ledger, "_trace_decision", boom)
    monkeypatch.setattr(Ledger, "_trace_base", boom)
    led = Ledger(0, session_id="s")
    led.append(10)
    led.spill(0, 2, handle="h")
    led.commit(summary_input=(0, 8), summary_covers=(0, 8), tail_start=8)
    with pytest.raises(UnrecoverableCompactionError):
        led.commit(summary_input=(9, 9), summary_covers=(9, 9), tail_start=10)


def test_each_recorded_decision_is_an_event_on_the_current_span(traced: Any) -> None:
    tracer, exporter, provider = traced
    otel.enable(tracer_provider=provider)
    led = Ledger(0, session_id="conv-1")
    with tracer.start_as_current_span("turn"):
        led.adopt(3, reason="compacted before the guard")
        led.append(20)
        led.spill(3, 5, handle="spill-1")
        led.commit(summary_input=(0, 12), summary_covers=(0, 12), tail_start=12, summary="s1")
        with pytest.raises(UnrecoverableCompactionError):
            led.commit(summary_input=(16, 20), summary_covers=(16, 20), tail_start=20)
    events = events_of(exporter, "turn")
    assert [n for n, _ in events] == ["tailguard.adopt", "tailguard.spill", "tailguard.compaction",
                                      "tailguard.refusal"]
    adopt, spill, compaction, refusal = (a for _, a in events)
    assert adopt["tailguard.unverified"] == ("[0, 3)",) and adopt["gen_ai.conversation.id"] == "conv-1"
    assert (spill["tailguard.spill.handle"], spill["tailguard.spill.range"]) == ("spill-1", "[3, 5)")
    assert (compaction["tailguard.decision"], compaction["tailguard.summary"]) == ("allow", "s1")
    assert refusal["tailguard.decision"] == "refuse" and NO_HOLE in refusal["tailguard.failed"]
    assert refusal["tailguard.holes"] == ("[12, 16)",) and refusal["tailguard.session_id"] == "conv-1"
    assert refusal["tailguard.unit"] == "turns" and refusal["tailguard.history_end"] == 23


def test_span_mode_and_disable(traced: Any) -> None:
    tracer, exporter, provider = traced
    otel.enable("span", tracer_provider=provider)
    led = Ledger(0)
    led.append(4)
    with tracer.start_as_current_span("turn"), pytest.raises(UnrecoverableCompactionError):
        led.commit(summary_input=(2, 2), summary_covers=(2, 2), tail_start=4)
    (child,) = [s for s in exporter.get_finished_spans() if s.name == "tailguard.refusal"]
    (parent,) = [s for s in exporter.get_finished_spans() if s.name == "turn"]
    assert child.parent is not None and child.parent.span_id == parent.context.span_id
    assert child.attributes is not None and child.attributes["tailguard.holes"] == ("[0, 4)",)
    assert child.status.status_code.name == "ERROR" and "gen_ai.conversation.id" not in child.attributes
    otel.disable()
    exporter.clear()
    with tracer.start_as_current_span("quiet"):
        led.append(1)
        led.spill(0, 1)
    assert events_of(exporter, "quiet") == [] and len(exporter.get_finished_spans()) == 1
    with pytest.raises(ValueError, match="mode: expected 'event' or 'span'"):
        otel.enable("log")  # type: ignore[arg-type]


def test_a_failing_sink_never_changes_a_decision() -> None:
    def broken(name: str, attrs: Any) -> None:
        raise RuntimeError("exporter down")

    telemetry.install(broken)
    try:
        led = Ledger(0)
        led.append(4)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert led.commit(summary_input=(0, 2), summary_covers=(0, 2), tail_start=2).allowed
            led.spill(2, 3)
        assert [str(w.message).count("exporter down") for w in caught] == [1]  # once per sink
    finally:
        telemetry.uninstall(broken)


def test_a_langchain_agent_run_exports_its_refusal(traced: Any, tmp_path: Path) -> None:
    """The Done-when: a real ``create_agent`` run with the guard, under a span the application
    opened, exports the refusal (and the compactions it allowed) to the in-memory exporter."""
    pytest.importorskip("langchain", reason="install the frameworks extra (CI does)")
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from tailguard.adapters.langchain import GuardedSummarizationMiddleware
    from tests.adapters.fakes import echo_model, human, marker_summarizer

    tracer, exporter, provider = traced
    otel.enable(tracer_provider=provider)
    mw = GuardedSummarizationMiddleware(marker_summarizer(), recovery_floor_span=3, on_refuse="defer",
                                        log=f"{tmp_path}/logs/", trigger=("messages", 10), keep=("messages", 4),
                                        trim_tokens_to_summarize=250)
    agent = create_agent(echo_model(), tools=[], middleware=[mw], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "alice"}}
    for i in range(8):
        with tracer.start_as_current_span(f"turn-{i}"):
            agent.invoke({"messages": [human("alice", i, chars=200)]}, config)
    refusals = [(s.name, a) for s in exporter.get_finished_spans()
                for n, a in ((e.name, dict(e.attributes or {})) for e in s.events) if n == "tailguard.refusal"]
    assert refusals, [s.name for s in exporter.get_finished_spans()]
    first_turn, attrs = refusals[0]
    assert first_turn.startswith("turn-") and attrs["gen_ai.conversation.id"] == "alice"
    assert NO_HOLE in attrs["tailguard.failed"] and attrs["tailguard.holes"]
    (path,) = (tmp_path / "logs").iterdir()
    log = path.read_text(encoding="utf-8")
    assert log.count('"event": "refusal"') == len(refusals)
