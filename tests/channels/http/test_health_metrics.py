"""/healthz, /readyz and /metrics (DESIGN.md, HTTP; seed 002 §4.3)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.observe.metrics import UNKNOWN_TOOL, UNMATCHED_ROUTE

from .obs_fixtures import agent, app, client, drive_turn, sample

__all__ = ["agent", "app", "client"]  # fixtures, used by name


async def test_healthz_is_ok(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_is_ready_with_a_working_store_and_the_offline_model(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"ready": True, "checks": {"store": "ok", "model": "ok", "mcp": "ok"}}


async def test_readyz_is_503_naming_the_store_when_it_is_closed(
    client: httpx.AsyncClient, agent: Agent
) -> None:
    await agent.store.close()
    response = await client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["ready"] is False
    assert body["checks"]["store"] == "down"
    assert body["checks"]["model"] == "ok"
    assert body["down"] == ["store"]
    assert "store" in body["detail"]["store"]


async def test_metrics_count_turns_tools_and_models(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await drive_turn(app, "what is 2+3")
    await drive_turn(app, "again 2+3")
    await drive_turn(app, "call flaky")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    names = {f.name for f in text_string_to_metric_families(text)}
    assert all(name.startswith("hermes_") for name in names), names
    assert sample(text, "hermes_turns_total", outcome="ok") == 3
    assert sample(text, "hermes_turn_duration_seconds_count", outcome="ok") == 3
    assert sample(text, "hermes_tool_calls_total", tool="add", outcome="ok") == 2
    assert sample(text, "hermes_tool_call_duration_seconds_count", tool="add") == 2
    failed = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "hermes_tool_calls_total" and s.labels["tool"] == "flaky"
    ]
    assert len(failed) == 1
    assert failed[0].labels["outcome"] != "ok"
    model_calls = sample(text, "hermes_model_call_duration_seconds_count", model="function")
    assert model_calls is not None
    assert model_calls >= 6
    # The breaker of `flaky` opened after its one failure (read at scrape time).
    assert sample(text, "hermes_tool_breaker_state", tool="flaky") == 2.0
    assert sample(text, "hermes_turns_running") == 0
    assert sample(text, "hermes_sessions_active") == 0


async def test_request_metrics_use_route_templates_and_bounded_labels(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    for n in range(20):
        await client.get(f"/no/such/path/{n}")
    await client.get("/healthz")
    await client.get("/healthz")
    await drive_turn(app, "ghost")  # the model invents a tool
    text = (await client.get("/metrics")).text
    assert (
        sample(text, "hermes_http_requests_total", route="/healthz", method="GET", status="200")
        == 2
    )
    unmatched = sample(
        text, "hermes_http_requests_total", route=UNMATCHED_ROUTE, method="GET", status="404"
    )
    assert unmatched == 20
    routes = {
        s.labels["route"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "hermes_http_requests_total"
    }
    assert routes == {"/healthz", UNMATCHED_ROUTE}
    tools = {
        s.labels["tool"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "hermes_tool_calls_total"
    }
    assert tools == {UNKNOWN_TOOL}


async def test_each_app_has_its_own_registry(agent: Agent) -> None:
    first, second = create_app(agent), create_app(agent)
    await drive_turn(first, "what is 2+3")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=second), base_url="http://hermes.test"
    ) as c:
        text = (await c.get("/metrics")).text
    assert sample(text, "hermes_turns_total", outcome="ok") is None


async def test_running_turns_are_read_at_scrape_time(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    svc = app.state.hermes
    gate = asyncio.Event()
    task = asyncio.ensure_future(gate.wait())
    svc.running.add("session-0001", task)
    try:
        text = (await client.get("/metrics")).text
        assert sample(text, "hermes_turns_running") == 1
        assert sample(text, "hermes_sessions_active") == 1
    finally:
        gate.set()
        await task


@pytest.mark.parametrize("status", [502, 200, 401])
async def test_readyz_probes_an_openai_compatible_endpoint(
    status: int, agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.channels.http import obs_model_server

    async with obs_model_server.serving(status) as base_url:
        monkeypatch.setattr(agent, "model", obs_model_server.RemoteLike(base_url))
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(agent)), base_url="http://hermes.test"
        ) as c:
            response = await c.get("/readyz")
    assert response.json()["checks"]["model"] == ("down" if status >= 500 else "ok")
    assert response.status_code == (503 if status >= 500 else 200)


async def test_readyz_says_an_unreachable_model_endpoint_is_down(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.channels.http import obs_model_server

    monkeypatch.setattr(agent, "model", obs_model_server.RemoteLike(obs_model_server.closed_url()))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(agent)), base_url="http://hermes.test"
    ) as c:
        response = await c.get("/readyz")
    assert response.status_code == 503
    assert response.json()["down"] == ["model"]


async def test_the_middleware_does_not_buffer_streams_on_a_real_server(app: FastAPI) -> None:
    """A route that streams (as SSE chat does) reaches the client chunk by chunk through the
    metrics middleware; the request is counted under its template once the stream ends."""
    import uvicorn
    from fastapi.responses import StreamingResponse

    from .obs_fixtures import sample as read

    first_seen = asyncio.Event()

    async def chunks() -> AsyncIterator[bytes]:
        yield b"first\n"
        await asyncio.wait_for(first_seen.wait(), 5)  # only once the client has it
        yield b"second\n"

    async def stream(item_id: str) -> StreamingResponse:
        return StreamingResponse(chunks(), media_type="text/plain")

    app.add_api_route("/test/stream/{item_id}", stream, methods=["GET"])
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    serving = asyncio.ensure_future(server.serve())
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn sets a flag, not an event
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            base = f"http://127.0.0.1:{port}"
            async with httpx.AsyncClient(base_url=base) as c:
                async with c.stream("GET", "/test/stream/abc") as response:
                    lines = response.aiter_lines()
                    assert await anext(lines) == "first"
                    first_seen.set()
                    assert await anext(lines) == "second"
                text = (await c.get("/metrics")).text
    finally:
        server.should_exit = True
        await serving
    route = "/test/stream/{item_id}"
    assert read(text, "hermes_http_requests_total", route=route, method="GET", status="200") == 1


async def test_memory_recalls_are_counted(tmp_path: Path) -> None:
    from hermes.memory.facade import Memory

    memory = Memory.open(tmp_path / "mem", semantic=False, extractor="rules")
    agent = Agent(store=tmp_path / "h.db", memory=memory)
    try:
        app = create_app(agent)
        await memory.remember("u1", "I like americano coffee")
        await drive_turn(app, "what coffee do I like?")
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://hermes.test"
        ) as c:
            text = (await c.get("/metrics")).text
    finally:
        await agent.aclose()
        await memory.aclose()
    assert sample(text, "hermes_memory_recalls_total") == 1
    assert sample(text, "hermes_memory_recall_hits_total") == 1


async def test_readyz_is_503_while_the_service_shuts_down(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    app.state.hermes.stopping = True
    response = await client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["checks"] == {"store": "ok", "model": "ok", "mcp": "ok"}
    assert body["down"] == ["service"]
    assert (await client.get("/healthz")).status_code == 200
