"""Turns for the metrics and span tests: a scripted agent on a real SQLite store, its events
handed to an observer as the HTTP service does (``Service.observers``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes import Agent, tool
from hermes.agent.events import AgentEvent
from hermes.models.base import ModelResponse, Usage
from hermes.testing import FunctionModel, call, say

Observer = Callable[[str, str, AgentEvent], None]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("down")


def _with_usage(response: ModelResponse) -> ModelResponse:
    response.usage = Usage(input_tokens=10, output_tokens=4)
    return response


def script(request: Any) -> Any:
    last = request.messages[-1]
    if last["role"] == "tool":
        return _with_usage(say("done"))
    if "broken" in last["content"]:
        return _with_usage(call("broken", {}))
    return _with_usage(call("add", {"a": 2, "b": 3}))


def make_agent(path: str) -> Agent:
    return Agent(model=FunctionModel(script), tools=[add, broken], store=path)


async def drive(agent: Agent, observer: Observer, text: str, session_id: str) -> Any:
    trace_id = ""
    result: Any = None
    async for event in agent.stream(text, session_id=session_id, user_id="u1"):
        if event.type == "turn_started":
            trace_id = event.trace_id
        observer(trace_id, session_id, event)
        if event.type == "turn_finished":
            result = event.result
    return result
