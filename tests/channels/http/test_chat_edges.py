"""``POST /v1/chat`` and the routes around it at their edges (DESIGN.md, HTTP): the
``Idempotency-Key`` on plain and streamed requests, the turn events only for their session's
user, another user's session (403), text that is not valid Unicode, forged cursors and trace
ids (400), the default page size — over the real app on real SQLite files."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.channels.http.turns import PART, MemoryTurnEvents
from hermes.config.server import ApiKeyConfig, ServerConfig
from tests.channels.http.chat_support import client_for, items_of, make_agent, parse_sse

ALICE = "alice-key-0123456789abcdef"
BOB = "bob-key-0123456789abcdefgh"
ROOT = "root-key-0123456789abcdefg"
KEYS = (
    ApiKeyConfig(key=ALICE, user="alice"),
    ApiKeyConfig(key=BOB, user="bob"),
    ApiKeyConfig(key=ROOT, user="root", roles=("admin",)),
)


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    made = make_agent(tmp_path / "hermes.db")
    yield made
    await made.aclose()


def key(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


async def _user_texts(agent: Agent, session_id: str) -> list[str]:
    items = await items_of(agent, session_id)
    return [i.content for i in items if i.kind == "text" and i.role == "user"]


# -- Idempotency-Key ---------------------------------------------------------------------------


async def test_a_plain_retry_replays_and_runs_the_turn_once(agent: Agent) -> None:
    body = {"session_id": "idem-plain-01", "message": "hello"}
    async with client_for(agent) as client:
        first = await client.post("/v1/chat", json=body, headers={"Idempotency-Key": "k-1"})
        again = await client.post("/v1/chat", json=body, headers={"Idempotency-Key": "k-1"})
        other = await client.post(
            "/v1/chat", json={**body, "message": "bye"}, headers={"Idempotency-Key": "k-1"}
        )
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotency-Replayed"] == "true"
    assert again.json() == first.json()
    assert again.headers["X-Hermes-Trace-Id"] == first.json()["trace_id"]
    assert other.status_code == 409
    assert other.json()["error"]["type"] == "idempotency_conflict"
    assert await _user_texts(agent, "idem-plain-01") == ["hello"]


async def test_a_streamed_request_with_a_key_streams_and_its_retry_replays_the_events(
    agent: Agent,
) -> None:
    body = {"session_id": "idem-stream-1", "message": "sleep 0.05", "stream": True}
    headers = {"Idempotency-Key": "stream-key-1"}
    async with client_for(agent) as client:
        first = await client.post("/v1/chat", json=body, headers=headers)
        again = await client.post("/v1/chat", json=body, headers=headers)
        plain = await client.post(
            "/v1/chat", json={**body, "stream": False}, headers=headers
        )  # another body under the same key
    events = parse_sse(first.text)
    assert first.status_code == 200
    assert "Idempotency-Replayed" not in first.headers
    assert events[-1].event == "reply"
    assert [e.event for e in events].count("tool_call_finished") == 1
    replayed = parse_sse(again.text)
    assert again.headers["Idempotency-Replayed"] == "true"
    assert replayed == events  # the first turn's events, whole
    assert plain.status_code == 409
    assert await _user_texts(agent, "idem-stream-1") == ["sleep 0.05"]


async def test_a_streamed_retry_after_the_events_expired_gets_the_reply_alone(
    agent: Agent,
) -> None:
    body = {"session_id": "idem-stream-2", "message": "hi", "stream": True}
    headers = {"Idempotency-Key": "stream-key-2"}
    app = create_app(agent, ServerConfig())
    app.state.hermes.parts[PART] = MemoryTurnEvents(0.0)  # finished turns expire at once
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://hermes.test"
    ) as client:
        first = await client.post("/v1/chat", json=body, headers=headers)
        again = await client.post("/v1/chat", json=body, headers=headers)
    reply = parse_sse(first.text)[-1]
    only = parse_sse(again.text)
    assert again.headers["Idempotency-Replayed"] == "true"
    assert [e.event for e in only] == ["reply"]
    assert only[0].data == reply.data


async def test_a_turn_cancelled_mid_way_is_not_kept_so_the_retry_runs_it(agent: Agent) -> None:
    body = {"session_id": "idem-cancel-1", "message": "sleep 30"}
    headers = {"Idempotency-Key": "cancel-key-1"}
    async with client_for(agent) as client:
        first = asyncio.create_task(client.post("/v1/chat", json=body, headers=headers))
        for _ in range(500):
            if await items_of(agent, "idem-cancel-1"):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        await client.post("/v1/sessions/idem-cancel-1/cancel")
        stopped = await first
        assert stopped.json()["error"]["type"] == "cancelled"
        retry = await client.post(
            "/v1/chat", json={**body, "message": "sleep 0.01"}, headers={"Idempotency-Key": "k2"}
        )
        again = await client.post("/v1/chat", json=body, headers=headers)
        assert retry.status_code == 200
        assert "Idempotency-Replayed" not in again.headers  # run again, not replayed
    assert (await _user_texts(agent, "idem-cancel-1")).count("sleep 30") == 2


# -- turn events and sessions of other users ---------------------------------------------------


async def test_turn_events_need_a_key_and_belong_to_the_sessions_user(agent: Agent) -> None:
    async with client_for(agent, api_keys=KEYS) as client:
        made = await client.post(
            "/v1/chat", json={"session_id": "alice-sess-1", "message": "secret"}, headers=key(ALICE)
        )
        trace = made.json()["trace_id"]
        path = f"/v1/turns/{trace}/events"
        anonymous = await client.get(path)
        bob = await client.get(path, headers=key(BOB))
        alice = await client.get(path, headers=key(ALICE))
        root = await client.get(path, headers=key(ROOT))
    assert anonymous.status_code == 401
    assert bob.status_code == 404  # not even said to exist
    assert "secret" not in bob.text
    assert alice.status_code == root.status_code == 200
    assert parse_sse(alice.text)[-1].event == "reply"


@pytest.mark.parametrize("bad", ["bad!id", "short", "x" * 200, "%FF"])
async def test_a_malformed_trace_id_is_400(agent: Agent, bad: str) -> None:
    async with client_for(agent) as client:
        answer = await client.get(f"/v1/turns/{bad}/events")
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_id"


async def test_chat_in_another_users_session_is_403_and_stores_nothing(agent: Agent) -> None:
    async with client_for(agent, api_keys=KEYS) as client:
        await client.post(
            "/v1/chat", json={"session_id": "alice-sess-2", "message": "mine"}, headers=key(ALICE)
        )
        bob = await client.post(
            "/v1/chat", json={"session_id": "alice-sess-2", "message": "hi"}, headers=key(BOB)
        )
        streamed = await client.post(
            "/v1/chat",
            json={"session_id": "alice-sess-2", "message": "hi", "stream": True},
            headers=key(BOB),
        )
    for answer in (bob, streamed):
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["type"] == "session_forbidden"
    assert await _user_texts(agent, "alice-sess-2") == ["mine"]


async def test_anonymous_chat_naming_another_user_of_a_session_is_403(agent: Agent) -> None:
    async with client_for(agent) as client:
        await client.post("/v1/chat", json={"session_id": "page-sess-1", "message": "a",
                                            "user_id": "u1"})  # fmt: skip
        other = await client.post(
            "/v1/chat", json={"session_id": "page-sess-1", "message": "b", "user_id": "u2"}
        )
    assert other.status_code == 403


# -- malformed text, cursors, page sizes -------------------------------------------------------


async def test_a_lone_surrogate_in_the_message_is_400_with_a_trace_id(agent: Agent) -> None:
    raw = b'{"session_id": "surrogate-01", "message": "hi \\ud800"}'
    async with client_for(agent) as client:
        answer = await client.post(
            "/v1/chat", content=raw, headers={"content-type": "application/json"}
        )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["type"] == "invalid_input"
    assert "X-Hermes-Trace-Id" in answer.headers
    assert await agent.store.load_session("surrogate-01") is None


def _cursor(value: Any) -> str:
    raw = json.dumps(value).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize("value", [["i", 2**63], ["i", 99999999999999999999999], ["i", -1]])
async def test_a_forged_item_cursor_is_400(agent: Agent, value: Any) -> None:
    async with client_for(agent) as client:
        await client.post("/v1/chat", json={"session_id": "cursor-sess-1", "message": "hi"})
        answer = await client.get("/v1/sessions/cursor-sess-1", params={"cursor": _cursor(value)})
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_cursor"


async def test_a_session_cursor_with_infinity_is_400(agent: Agent) -> None:
    forged = base64.urlsafe_b64encode(b'["s",[1e400,"x"]]').decode().rstrip("=")
    async with client_for(agent) as client:
        answer = await client.get("/v1/sessions", params={"cursor": forged})
    assert answer.status_code == 400


async def test_the_session_list_pages_100_by_default(agent: Agent) -> None:
    for n in range(101):
        await agent.run("hi", session_id=f"many-sess-{n:03d}")
    async with client_for(agent) as client:
        page = (await client.get("/v1/sessions")).json()
    assert len(page["sessions"]) == 100
    assert page["next_cursor"] is not None


# -- bodies that are not what the route takes --------------------------------------------------


@pytest.mark.parametrize("stream", ["yes", "1", 1, "true", None])
async def test_stream_takes_only_a_json_boolean(agent: Agent, stream: Any) -> None:
    async with client_for(agent) as client:
        answer = await client.post(
            "/v1/chat", json={"session_id": "strict-sess-1", "message": "hi", "stream": stream}
        )
    assert answer.status_code == 422
    assert answer.json()["error"]["type"] == "invalid_request"


async def test_a_form_body_is_415_saying_to_send_json(agent: Agent) -> None:
    async with client_for(agent) as client:
        answer = await client.post("/v1/chat", data={"message": "hi"})
    assert answer.status_code == 415
    assert "application/json" in answer.json()["error"]["message"]


@pytest.mark.parametrize(
    "raw",
    [b'{"message": "\xff\xfe"}', b"[" * 100_000 + b"]" * 100_000, b'{"message": '],
)
async def test_a_body_that_does_not_decode_is_400_invalid_json(agent: Agent, raw: bytes) -> None:
    async with client_for(agent, max_body_bytes=1_000_000) as client:
        answer = await client.post(
            "/v1/chat", content=raw, headers={"content-type": "application/json"}
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_json"


async def test_a_refused_cors_preflight_has_the_json_error_shape(agent: Agent) -> None:
    async with client_for(agent, cors_origins=("https://app.example.com",)) as client:
        refused = await client.options(
            "/v1/chat",
            headers={"Origin": "https://evil.example.com", "Access-Control-Request-Method": "POST"},
        )
        allowed = await client.options(
            "/v1/chat",
            headers={"Origin": "https://app.example.com", "Access-Control-Request-Method": "POST"},
        )
    assert refused.status_code == 400
    assert refused.headers["content-type"].startswith("application/json")
    assert refused.json()["error"]["type"] == "cors_refused"
    assert "origin" in refused.json()["error"]["message"]
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "https://app.example.com"


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
async def test_probes_answer_head(agent: Agent, path: str) -> None:
    async with client_for(agent) as client:
        answer = await client.head(path)
    assert answer.status_code == 200
