"""``POST /v1/chat`` plain and refused (DESIGN.md, HTTP): the ``run --json`` object, its
errors, busy sessions and concurrency, over httpx's ASGI transport on real SQLite files."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.channels.http.shutdown import drain
from hermes.config.server import ServerConfig
from hermes.errors import ModelError, StoreError
from hermes.session.ids import validate_session_id
from hermes.testing import ScriptedModel
from tests.channels.conftest import RUN_JSON_KEYS
from tests.channels.http.chat_support import (
    assert_consistent,
    client_for,
    items_of,
    make_agent,
    until,
)


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    made = make_agent(tmp_path / "hermes.db")
    yield made
    await made.aclose()


async def test_plain_chat_returns_the_run_json_object(agent: Agent) -> None:
    async with client_for(agent) as client:
        response = await client.post("/v1/chat", json={"message": "sleep 0.01", "user_id": "u1"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) >= RUN_JSON_KEYS
    assert body["reply"] == "done"
    assert body["state"] in {"idle", "awaiting_feedback"}
    assert body["tool_calls"] == [{"name": "slow", "arguments": {"seconds": 0.01}, "ok": True}]
    assert validate_session_id(body["session_id"]) == body["session_id"]
    assert response.headers["X-Hermes-Trace-Id"] == body["trace_id"]
    record = await agent.store.load_session(body["session_id"])
    assert record is not None
    assert record.user_id == "u1"


async def test_the_same_keys_as_run_json(agent: Agent) -> None:
    """The object is ``RunResult.to_json_dict()``: what ``hermes run --json`` prints."""
    async with client_for(agent) as client:
        response = await client.post("/v1/chat", json={"message": "hi", "session_id": "chat-0001"})
    body = response.json()
    direct = await agent.run("hi", session_id="chat-0002")
    assert set(body) == set(direct.to_json_dict())
    assert body["session_id"] == "chat-0001"


async def test_trace_id_follows_the_request_headers(agent: Agent) -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    async with client_for(agent) as client:
        traced = await client.post(
            "/v1/chat", json={"message": "a"}, headers={"traceparent": parent}
        )
        requested = await client.post(
            "/v1/chat", json={"message": "b"}, headers={"X-Request-Id": "req-12345678"}
        )
        again = await client.post(
            "/v1/chat", json={"message": "c"}, headers={"X-Request-Id": "req-12345678"}
        )
        junk = await client.post(
            "/v1/chat", json={"message": "d"}, headers={"X-Request-Id": "bad id\twith tab"}
        )
    assert traced.json()["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert requested.json()["trace_id"] == "req-12345678"
    assert again.json()["trace_id"] not in {"req-12345678", ""}  # taken: a new one
    assert len(junk.json()["trace_id"]) == 32


@pytest.mark.parametrize(
    ("content", "status", "kind"),
    [
        (b"{not json", 400, "invalid_json"),
        (b'{"message": "hi", "colour": "red"}', 422, "invalid_request"),
        (b'{"message": "hi", "session_id": "no"}', 400, "invalid_id"),
        (b'{"message": "hi", "session_id": "bad id with spaces"}', 400, "invalid_id"),
        (b'{"message": "hi", "user_id": "bad user!"}', 400, "invalid_id"),
        (b'{"message": "   "}', 400, "invalid_input"),
        (b"{}", 422, "invalid_request"),
    ],
)
async def test_malformed_requests_are_refused(
    agent: Agent, content: bytes, status: int, kind: str
) -> None:
    async with client_for(agent) as client:
        response = await client.post(
            "/v1/chat", content=content, headers={"content-type": "application/json"}
        )
    assert response.status_code == status, response.text
    assert response.json()["error"]["type"] == kind


async def test_an_oversize_message_is_refused(tmp_path: Path) -> None:
    small = make_agent(tmp_path / "small.db", max_message_chars=50)
    try:
        async with client_for(small) as client:
            response = await client.post(
                "/v1/chat", json={"message": "x" * 51, "session_id": "big-00001"}
            )
        assert response.status_code == 400
        assert response.json()["error"]["type"] == "invalid_input"
        assert await small.store.load_session("big-00001") is None
    finally:
        await small.aclose()


async def test_model_down_is_503_with_the_honest_reply_and_error(tmp_path: Path) -> None:
    down = ScriptedModel([ModelError("connection refused", kind="unreachable", retryable=True)])
    failing = Agent(model=down, tools=[], store=tmp_path / "down.db")
    try:
        async with client_for(failing) as client:
            response = await client.post(
                "/v1/chat", json={"message": "hello", "session_id": "down-0001"}
            )
        assert response.status_code == 503  # DESIGN.md, HTTP, "Errors": model down
        body = response.json()
        assert body["error"]["type"] == "model_error"  # the JSON error shape
        assert body["error"]["message"]
        assert body["reply"]
        assert body["state"] == "idle"
    finally:
        await failing.aclose()


async def test_store_down_is_503(agent: Agent, monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("database is locked")

    monkeypatch.setattr(agent.store, "begin_turn", broken)
    monkeypatch.setattr(agent.store, "load_session", broken)
    async with client_for(agent) as client:
        response = await client.post("/v1/chat", json={"message": "hi", "session_id": "store-0001"})
    assert response.status_code == 503, response.text
    assert response.json()["error"]["type"] == "store_error"


async def test_enqueue_runs_both_turns_of_one_session_in_arrival_order(agent: Agent) -> None:
    async with client_for(agent) as client:
        first = asyncio.create_task(
            client.post("/v1/chat", json={"message": "sleep 0.3 first", "session_id": "queue-0001"})
        )
        await asyncio.sleep(0.05)
        second = asyncio.create_task(
            client.post(
                "/v1/chat", json={"message": "sleep 0.01 second", "session_id": "queue-0001"}
            )
        )
        a, b = await asyncio.gather(first, second)
    assert a.status_code == b.status_code == 200
    items = await items_of(agent, "queue-0001")
    assert_consistent(items)
    traces = [i.trace_id for i in items]
    # One turn's items, then the other's: never interleaved, in arrival order.
    assert traces == sorted(traces, key=[a.json()["trace_id"], b.json()["trace_id"]].index)
    users = [i.content for i in items if i.role == "user" and i.kind == "text"]
    assert users == ["sleep 0.3 first", "sleep 0.01 second"]


async def test_reject_refuses_a_busy_session_with_409(agent: Agent) -> None:
    async with client_for(agent, busy="reject") as client:
        first = asyncio.create_task(
            client.post("/v1/chat", json={"message": "sleep 0.4", "session_id": "busy-00001"})
        )
        await asyncio.sleep(0.1)
        refused = await client.post("/v1/chat", json={"message": "hi", "session_id": "busy-00001"})
        ran = await first
    assert ran.status_code == 200
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "session_busy"
    users = [i.content for i in await items_of(agent, "busy-00001") if i.role == "user"]
    assert users == ["sleep 0.4"]  # nothing of the refused one was stored


async def test_different_sessions_run_in_parallel(agent: Agent) -> None:
    async with client_for(agent) as client:
        started = time.perf_counter()
        replies = await asyncio.gather(
            *(
                client.post("/v1/chat", json={"message": "sleep 0.5", "session_id": f"par-000{n}"})
                for n in range(4)
            )
        )
        elapsed = time.perf_counter() - started
    assert [r.status_code for r in replies] == [200] * 4
    assert elapsed < 1.5, f"four 0.5 s turns took {elapsed:.2f} s: not parallel"


async def test_observers_see_every_event(agent: Agent) -> None:
    seen: list[tuple[str, str, str]] = []
    app = create_app(agent, ServerConfig())
    app.state.hermes.observers.append(lambda t, s, e: seen.append((t, s, e.type)))

    def broken(trace_id: str, session_id: str, event: object) -> None:
        raise RuntimeError("observer bug")

    app.state.hermes.observers.append(broken)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
        response = await client.post(
            "/v1/chat", json={"message": "sleep 0.01", "session_id": "obs-00001"}
        )
    assert response.status_code == 200
    body = response.json()
    types = [t for _, _, t in seen]
    assert types[0] == "turn_started"
    assert types[-1] == "turn_finished"
    assert "tool_call_finished" in types
    assert {(t, s) for t, s, _ in seen} == {(body["trace_id"], "obs-00001")}


async def test_shutdown_refuses_new_turns_and_checkpoints_running_ones(agent: Agent) -> None:
    app = create_app(agent, ServerConfig(shutdown_grace_seconds=0.3))
    svc = app.state.hermes
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://h.test", timeout=30
    ) as client:
        long = asyncio.create_task(
            client.post("/v1/chat", json={"message": "sleep 30", "session_id": "stop-00001"})
        )
        quick = asyncio.create_task(
            client.post("/v1/chat", json={"message": "sleep 0.1", "session_id": "stop-00002"})
        )
        await until(lambda: len(svc.running) == 2)
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        cancelled = await drain(svc)
        assert time.perf_counter() - started < 3
        assert cancelled == 1
        refused = await client.post("/v1/chat", json={"message": "hi"})
        long_reply, quick_reply = await long, await quick
    assert refused.status_code == 503
    assert refused.json()["error"]["type"] == "shutting_down"
    assert quick_reply.status_code == 200
    assert long_reply.status_code == 200
    stopped = long_reply.json()
    assert stopped["error"]["type"] == "cancelled"
    assert stopped["state"] == "idle"
    assert stopped["tool_calls"] == [{"name": "slow", "arguments": {"seconds": 30.0}, "ok": False}]
    record = await agent.store.load_session("stop-00001")
    assert record is not None
    assert record.state.fsm_state == "idle"
    items = await items_of(agent, "stop-00001")
    assert_consistent(items)
    assert any(i.kind == "tool_result" for i in items)
