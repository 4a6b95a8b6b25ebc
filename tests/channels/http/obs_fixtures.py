"""Fixtures of the health / metrics tests: an app over a real SQLite agent, turns driven
through ``agent.stream`` with the service's observers attached (what the chat route does)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from hermes import Agent, tool
from hermes.channels.http.app import create_app
from hermes.channels.http.state import Service
from hermes.testing import FunctionModel, call, say
from hermes.tools.policies import BreakerPolicy


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="flaky", circuit_breaker=BreakerPolicy(failures=1, reset_after=60))
def flaky() -> str:
    """Always fails."""
    raise RuntimeError("down")


def script(request: Any) -> Any:
    last = request.messages[-1]
    if last["role"] == "tool":
        return say("done")
    text = last["content"]
    if "flaky" in text:
        return call("flaky", {})
    if "ghost" in text:
        return call("no_such_tool", {})
    return call("add", {"a": 2, "b": 3})


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    built = Agent(
        model=FunctionModel(script), tools=[add, flaky], store=str(tmp_path / "hermes.db")
    )
    try:
        yield built
    finally:
        await built.aclose()


@pytest.fixture
def app(agent: Agent) -> FastAPI:
    return create_app(agent)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hermes.test") as c:
        yield c


async def drive_turn(app: FastAPI, text: str, session_id: str = "session-0001") -> Any:
    """One turn through ``agent.stream``, every event handed to the service's observers."""
    svc: Service = app.state.hermes
    trace_id = ""
    last: Any = None
    async for event in svc.agent.stream(text, session_id=session_id, user_id="u1"):
        if event.type == "turn_started":
            trace_id = event.trace_id
        for observer in svc.observers:
            observer(trace_id, session_id, event)
        last = event
    return last.result


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of sample ``name`` with exactly ``labels`` in a Prometheus exposition."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None
