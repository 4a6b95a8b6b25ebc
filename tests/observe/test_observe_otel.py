"""hermes.observe.otel: GenAI spans built from turn events, checked with the SDK's
InMemorySpanExporter (seed 002 §4.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tests.observe.obs_turns import drive, make_agent

from hermes.observe.otel import SpanObserver, otel_available, span_observer


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def observer(exporter: InMemorySpanExporter) -> SpanObserver:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return SpanObserver(provider)


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    return {span.name: span for span in spans}


async def test_a_turn_is_an_invoke_agent_span_with_chat_and_tool_children(
    tmp_path: Path, observer: SpanObserver, exporter: InMemorySpanExporter
) -> None:
    agent = make_agent(str(tmp_path / "hermes.db"))
    try:
        result = await drive(agent, observer, "2+3", "session-0001")
    finally:
        await agent.aclose()
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat function",
        "chat function",
        "execute_tool add",
        "invoke_agent",
    ]
    named = _by_name(spans)
    turn, tool = named["invoke_agent"], named["execute_tool add"]
    assert turn.attributes is not None
    assert tool.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == "session-0001"
    assert turn.attributes["hermes.trace_id"] == result.trace_id
    assert turn.attributes["gen_ai.usage.input_tokens"] == 20
    assert turn.attributes["gen_ai.usage.output_tokens"] == 8
    assert turn.attributes["gen_ai.request.model"] == "function"
    assert turn.status.status_code is StatusCode.UNSET
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    chat = next(s for s in spans if s.name == "chat function")
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "function"
    for child in spans:
        if child is not turn:
            assert child.parent is not None
            assert child.parent.span_id == turn.context.span_id
            assert child.context.trace_id == turn.context.trace_id
            assert turn.start_time <= child.start_time
            assert child.end_time <= turn.end_time


async def test_a_failed_tool_call_has_an_error_status(
    tmp_path: Path, observer: SpanObserver, exporter: InMemorySpanExporter
) -> None:
    agent = make_agent(str(tmp_path / "hermes.db"))
    try:
        await drive(agent, observer, "call broken", "session-0002")
    finally:
        await agent.aclose()
    tool = _by_name(exporter.get_finished_spans())["execute_tool broken"]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes is not None
    assert tool.attributes["error.type"] == "execution_error"


def test_a_failed_turn_has_an_error_status(
    observer: SpanObserver, exporter: InMemorySpanExporter
) -> None:
    from hermes.agent.events import TurnFinished, TurnStarted
    from hermes.agent.result import RunResult

    observer("t1", "session-0003", TurnStarted("session-0003", "t1", "m1"))
    failed = RunResult(
        reply="sorry",
        session_id="session-0003",
        state="idle",
        trace_id="t1",
        outcome="error",
        error={"type": "model_error", "message": "unreachable"},
    )
    observer("t1", "session-0003", TurnFinished(failed))
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "unreachable"
    assert span.attributes is not None
    assert span.attributes["error.type"] == "model_error"


def test_the_observer_exists_when_opentelemetry_is_installed() -> None:
    assert otel_available()
    assert isinstance(span_observer(), SpanObserver)


async def test_without_opentelemetry_the_app_still_builds_and_no_spans_are_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The extra is optional: when ``opentelemetry`` cannot be found nothing breaks."""
    from hermes import Agent
    from hermes.channels.http.app import create_app
    from hermes.observe import otel

    monkeypatch.setattr(otel, "otel_available", lambda: False)
    assert otel.span_observer() is None
    agent = Agent(store=str(tmp_path / "h.db"))
    try:
        app = create_app(agent)
        assert len(app.state.hermes.observers) == 1  # metrics only
    finally:
        await agent.aclose()
