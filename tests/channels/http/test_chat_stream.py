"""``POST /v1/chat`` with ``stream: true`` (DESIGN.md, HTTP): SSE over a real uvicorn server on
127.0.0.1 — one event per loop event with rising ids, the trace id first, ``reply`` last."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.config.server import ServerConfig
from hermes.errors import ModelError
from hermes.testing import ScriptedModel
from tests.channels.http.chat_support import (
    assert_consistent,
    items_of,
    live_server,
    make_agent,
    parse_sse,
    read_events,
    until,
)


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    made = make_agent(tmp_path / "hermes.db")
    yield made
    await made.aclose()


async def test_stream_sends_every_event_then_the_reply(agent: Agent) -> None:
    app = create_app(agent, ServerConfig())
    body = {"message": "sleep 0.05", "session_id": "sse-00001", "stream": True}
    async with (
        live_server(app) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as client,
        client.stream("POST", "/v1/chat", json=body) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        trace_header = response.headers["X-Hermes-Trace-Id"]
        events = await read_events(response)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    kinds = [e.event for e in events]
    assert kinds[0] == "turn_started"
    assert events[0].data["trace_id"] == trace_header
    assert {
        "state_changed",
        "model_call_started",
        "tool_call_started",
        "tool_call_finished",
    } <= set(kinds)
    assert kinds[-1] == "reply"
    assert kinds.count("reply") == 1
    reply = events[-1].data
    assert reply["reply"] == "done"
    assert reply["trace_id"] == trace_header
    assert reply["tool_calls"] == [{"name": "slow", "arguments": {"seconds": 0.05}, "ok": True}]
    assert_consistent(await items_of(agent, "sse-00001"))


async def test_a_failed_turn_still_ends_with_its_reply(tmp_path: Path) -> None:
    down = ScriptedModel([ModelError("connection refused", kind="unreachable")])
    failing = Agent(model=down, tools=[], store=tmp_path / "down.db")
    try:
        transport = httpx.ASGITransport(app=create_app(failing, ServerConfig()))
        async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
            response = await client.post("/v1/chat", json={"message": "hi", "stream": True})
        events = parse_sse(response.text)
        assert events[-1].event == "reply"
        assert events[-1].data["error"]["type"] == "model_error"
        assert events[0].data["trace_id"] == events[-1].data["trace_id"]
    finally:
        await failing.aclose()


async def test_a_refused_stream_is_an_http_error(agent: Agent) -> None:
    transport = httpx.ASGITransport(app=create_app(agent, ServerConfig()))
    async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
        response = await client.post(
            "/v1/chat", json={"message": "hi", "session_id": "x", "stream": True}
        )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_id"


async def test_a_client_that_leaves_a_plain_request_loses_nothing(agent: Agent) -> None:
    app = create_app(agent, ServerConfig())
    svc = app.state.hermes
    body = {"message": "sleep 0.4", "session_id": "leave-0001"}
    async with live_server(app) as url, httpx.AsyncClient(base_url=url, timeout=0.15) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post("/v1/chat", json=body)
        await until(lambda: len(svc.running) == 0)
    items = await items_of(agent, "leave-0001")
    assert_consistent(items)
    assert items[-1].content == "done"
