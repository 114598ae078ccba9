"""OpenTelemetry: every decision the guard records, on the span that is current when it decides.

``pip install 'tailguard[otel]'``, then once at start-up::

    from tailguard.adapters import otel
    otel.enable()              # span events on the current span (the default)
    otel.enable(mode="span")   # or a child span per decision

From then on every ledger (so every adapter: LangChain, langmem, deepagents, the OpenAI Agents
SDK) reports each recorded decision to the tracing backend a team already watches (Langfuse,
Phoenix, Datadog, Honeycomb: anything fed by the OpenTelemetry SDK):

====================  =====================================================================
event                 when
====================  =====================================================================
tailguard.compaction  a compaction the ledger recorded (``tailguard.decision`` ``allow``, or
                      ``refuse`` with ``tailguard.override`` giving the override's reason)
tailguard.refusal     a refused compaction (logged as a ``refusal`` line)
tailguard.spill       a range written to the spill store before it left
tailguard.adopt       history that predates the guard, adopted as unverified
====================  =====================================================================

Attributes (all under ``tailguard.*``): ``decision``, ``failed`` (clause ids), ``holes`` and
``unverified`` (ranges as ``"[lo, hi)"`` strings), ``summary_input``, ``summary_covers``,
``tail_start``, ``summary``, ``spill.handle``, ``spill.range``, ``adopt.reason``, ``unit``,
``profile``, ``history_end`` and ``session_id``. The session id is also set as
``gen_ai.conversation.id``, the OpenTelemetry GenAI semantic conventions' name for it, so the
events join the conversation's other spans.

It is off unless :func:`enable` is called, and costs nothing measurable when off (one truth test
per recorded event: ``tailguard.runtime.telemetry``). When no span is recording (no tracer
provider configured, or a sampled-out trace), events are dropped by OpenTelemetry itself.
Tracing never changes a decision: a failing exporter is reported once as a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tailguard.runtime import telemetry

try:
    from opentelemetry import trace
except ModuleNotFoundError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("tailguard.adapters.otel needs opentelemetry-api: pip install 'tailguard[otel]'") from exc

__all__ = ["disable", "enable", "enabled"]

Mode = Literal["event", "span"]
_TRACER_NAME = "tailguard"
_installed: telemetry.Sink | None = None


def _attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in attrs.items() if v is not None}


def enable(mode: Mode = "event", *, tracer_provider: Any = None) -> None:
    """Report every decision the guard records: ``mode="event"`` adds a span event to the
    current span; ``mode="span"`` starts a child span per decision (named as the event), with
    the same attributes. ``tracer_provider`` defaults to the global one. Calling it again
    replaces the previous setting."""
    global _installed
    if mode not in ("event", "span"):
        raise ValueError(f"mode: expected 'event' or 'span', got {mode!r}")
    tracer = trace.get_tracer(_TRACER_NAME, tracer_provider=tracer_provider)

    def as_event(name: str, attrs: Mapping[str, Any]) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.add_event(name, attributes=_attributes(attrs))

    def as_span(name: str, attrs: Mapping[str, Any]) -> None:
        with tracer.start_as_current_span(name, attributes=_attributes(attrs)) as span:
            if attrs.get("tailguard.decision") == "refuse":
                span.set_status(trace.Status(trace.StatusCode.ERROR, "compaction refused"))

    disable()
    _installed = as_event if mode == "event" else as_span
    telemetry.install(_installed)


def disable() -> None:
    """Stop reporting (a no-op when not enabled)."""
    global _installed
    if _installed is not None:
        telemetry.uninstall(_installed)
        _installed = None


def enabled() -> bool:
    """Whether :func:`enable` is in effect."""
    return _installed is not None
