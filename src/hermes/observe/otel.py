"""OpenTelemetry spans with the GenAI semantic conventions (seed 002 §4.3), when installed.

The ``otel`` extra (``opentelemetry-api``/``-sdk``) is optional: without it
:func:`span_observer` returns ``None`` and nothing else here is needed. With it,
:class:`SpanObserver` is a ``Service.observers`` callback that turns the agent's events into
spans as they happen — nothing in the turn loop changes:

- ``invoke_agent`` per turn (``gen_ai.operation.name=invoke_agent``, ``gen_ai.conversation.id``
  = the session id, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens/output_tokens``,
  ``hermes.trace_id``), an error status when the turn failed;
- ``chat {model}`` per model call (``gen_ai.operation.name=chat``), a child of the turn's span;
- ``execute_tool {name}`` per tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, an error
  status and ``error.type`` when it failed), a child of the turn's span.

Spans go to the tracer provider given, else the global one (a no-op until the application
configures an SDK provider and exporter).
"""

from __future__ import annotations

import importlib.util
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from hermes.agent.events import AgentEvent

__all__ = ["SpanObserver", "otel_available", "span_observer"]

#: Turns with open spans; beyond this many (turns that raised never finish) the oldest end.
MAX_OPEN_TURNS = 10_000
_SCOPE = "hermes"


def otel_available() -> bool:
    """Whether the OpenTelemetry API is installed."""
    return importlib.util.find_spec("opentelemetry.trace") is not None


def span_observer(provider: TracerProvider | None = None) -> SpanObserver | None:
    """A :class:`SpanObserver`, or None when OpenTelemetry is not installed."""
    return SpanObserver(provider) if otel_available() else None


@dataclass(slots=True)
class _Turn:
    span: Span
    session_id: str
    model: Span | None = None
    tools: dict[str, Span] = field(default_factory=dict)


class SpanObserver:
    """Builds GenAI spans from one service's turn events (see the module docstring)."""

    def __init__(self, provider: TracerProvider | None = None) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer: Tracer = (
            provider.get_tracer(_SCOPE) if provider is not None else trace.get_tracer(_SCOPE)
        )
        self._turns: OrderedDict[str, _Turn] = OrderedDict()

    def __call__(self, trace_id: str, session_id: str, event: AgentEvent) -> None:
        if event.type == "turn_started":
            self._start_turn(trace_id, session_id)
            return
        turn = self._turns.get(trace_id)
        if turn is None:
            return  # a turn whose start this observer did not see
        if event.type == "model_call_started":
            turn.model = self._child(turn, f"chat {event.model}", _chat(turn, event.model))
        elif event.type == "model_call_finished" and turn.model is not None:
            turn.model.end()
            turn.model = None
        elif event.type == "tool_call_started":
            attrs = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": event.name,
                "gen_ai.tool.call.id": event.call_id,
                "gen_ai.conversation.id": turn.session_id,
            }
            turn.tools[event.call_id] = self._child(turn, f"execute_tool {event.name}", attrs)
        elif event.type == "tool_call_finished":
            span = turn.tools.pop(event.call_id, None)
            if span is not None:
                if not event.ok:
                    self._fail(span, event.error_type or "error")
                span.end()
        elif event.type == "turn_finished":
            self._finish_turn(trace_id, turn, event)

    def _start_turn(self, trace_id: str, session_id: str) -> None:
        span = self._tracer.start_span(
            "invoke_agent",
            kind=self._trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "hermes",
                "gen_ai.conversation.id": session_id,
                "hermes.trace_id": trace_id,
            },
        )
        self._turns[trace_id] = _Turn(span, session_id)
        while len(self._turns) > MAX_OPEN_TURNS:
            _, old = self._turns.popitem(last=False)
            old.span.end()

    def _child(self, turn: _Turn, name: str, attributes: dict[str, Any]) -> Span:
        context = self._trace.set_span_in_context(turn.span)
        return self._tracer.start_span(
            name, context=context, kind=self._trace.SpanKind.CLIENT, attributes=attributes
        )

    def _finish_turn(self, trace_id: str, turn: _Turn, event: Any) -> None:
        self._turns.pop(trace_id, None)
        result = event.result
        for open_span in [turn.model, *turn.tools.values()]:
            if open_span is not None:  # interrupted calls end with their turn
                open_span.end()
        span = turn.span
        if result.model:
            span.set_attribute("gen_ai.request.model", result.model)
        usage = result.usage or {}
        for key, attr in (
            ("prompt_tokens", "gen_ai.usage.input_tokens"),
            ("completion_tokens", "gen_ai.usage.output_tokens"),
        ):
            if isinstance(usage.get(key), int):
                span.set_attribute(attr, usage[key])
        span.set_attribute("hermes.outcome", result.outcome)
        if result.error is not None or result.outcome != "ok":
            error = result.error or {}
            self._fail(span, str(error.get("type") or result.outcome), error.get("message"))
        span.end()

    def _fail(self, span: Span, error_type: str, message: str | None = None) -> None:
        span.set_attribute("error.type", error_type)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, message or error_type))


def _chat(turn: _Turn, model: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": turn.session_id,
    }
