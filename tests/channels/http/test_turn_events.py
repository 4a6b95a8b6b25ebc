"""``GET /v1/turns/{trace_id}/events`` (DESIGN.md, HTTP): a stream that broke is picked up with
``Last-Event-ID`` — nothing lost, nothing twice — live while the turn runs; the in-process log
is bounded and forgets a turn ``events_keep_seconds`` after it ended."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.channels.http.turns import MemoryTurnEvents
from hermes.config.server import ServerConfig
from tests.channels.http.chat_support import (
    SseReader,
    assert_consistent,
    items_of,
    live_server,
    make_agent,
    parse_sse,
    read_events,
)


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    made = make_agent(tmp_path / "hermes.db")
    yield made
    await made.aclose()


async def test_disconnect_mid_stream_then_resume_loses_nothing(agent: Agent) -> None:
    app = create_app(agent, ServerConfig())
    body = {"message": "sleep 0.6", "session_id": "resume-001", "stream": True}
    async with live_server(app) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
        async with client.stream("POST", "/v1/chat", json=body) as response:
            first = await read_events(response, count=3)
        # The client is gone; the turn is not.
        trace_id = first[0].data["trace_id"]
        headers = {"Last-Event-ID": str(first[-1].id)}
        async with client.stream("GET", f"/v1/turns/{trace_id}/events", headers=headers) as again:
            assert again.status_code == 200
            rest = await read_events(again)
        # After the end, the whole turn replays from the start, the same events.
        replay = await client.get(f"/v1/turns/{trace_id}/events")
        tail = await client.get(f"/v1/turns/{trace_id}/events?last_event_id={rest[-2].id}")
    events = first + rest
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert rest[0].id == first[-1].id + 1
    assert events[-1].event == "reply"
    assert events[-1].data["reply"] == "done"
    assert parse_sse(replay.text) == events
    assert parse_sse(tail.text) == [events[-1]]
    items = await items_of(agent, "resume-001")
    assert_consistent(items)
    assert items[-1].content == "done"


async def test_a_second_follower_sees_the_turn_live(agent: Agent) -> None:
    app = create_app(agent, ServerConfig())
    body = {"message": "sleep 0.4", "stream": True}
    async with (
        live_server(app) as url,
        httpx.AsyncClient(base_url=url, timeout=20) as client,
        client.stream("POST", "/v1/chat", json=body) as response,
    ):
        reader = SseReader(response)
        head = await reader.read(1)
        trace_id = head[0].data["trace_id"]
        async with client.stream("GET", f"/v1/turns/{trace_id}/events") as follower:
            followed, own = await asyncio.gather(read_events(follower), reader.read())
    assert followed == head + own
    assert followed[-1].event == "reply"


async def test_unknown_trace_is_404_and_bad_last_event_id_400(agent: Agent) -> None:
    transport = httpx.ASGITransport(app=create_app(agent, ServerConfig()))
    async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
        missing = await client.get("/v1/turns/no-such-trace-0001/events")
        done = await client.post("/v1/chat", json={"message": "hi"})
        trace_id = done.json()["trace_id"]
        bad = await client.get(f"/v1/turns/{trace_id}/events", headers={"Last-Event-ID": "x"})
        plain = await client.get(f"/v1/turns/{trace_id}/events")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "not_found"
    assert bad.status_code == 400
    events = parse_sse(plain.text)  # a plain turn's events are replayable too
    assert events[-1].event == "reply"
    assert events[-1].data == done.json()


async def test_events_expire_after_keep_seconds() -> None:
    now = [1000.0]
    log = MemoryTurnEvents(60.0, clock=lambda: now[0])
    assert log.open("t-1", "s-1")
    assert not log.open("t-1", "s-1")  # taken
    assert log.append("t-1", "turn_started", {"trace_id": "t-1"}) == 1
    assert log.finish("t-1", {"reply": "ok"}) == 2
    assert log.append("t-1", "late", {}) == 0  # closed
    now[0] += 59
    assert log.known("t-1")
    now[0] += 2
    assert not log.known("t-1")
    assert [e async for e in log.follow("t-1")] == []


def test_turns_expire_in_the_order_they_finished_and_running_ones_stay() -> None:
    now = [1000.0]
    log = MemoryTurnEvents(60.0, clock=lambda: now[0])
    for trace in ("t-a", "t-b", "t-c", "t-d"):
        assert log.open(trace, "s-1")
    log.finish("t-c", {})  # finished first, opened third
    now[0] += 10
    log.finish("t-a", {})
    now[0] += 10
    log.finish("t-d", {})  # t-b keeps running
    now[0] += 45  # t-c is 65 s old, t-a 55 s, t-d 45 s
    assert log.expire() == 1
    assert [log.known(t) for t in ("t-a", "t-b", "t-c", "t-d")] == [True, True, False, True]
    now[0] += 3600
    assert log.expire() == 2
    assert log.known("t-b")  # a running turn never expires
    assert len(log) == 1


async def test_the_log_is_bounded() -> None:
    log = MemoryTurnEvents(3600.0, max_turns=3, max_events=4)
    for n in range(3):
        log.open(f"t-{n}", "s")
    log.finish("t-0", {"reply": "a"})
    log.open("t-3", "s")  # over the bound: the finished turn goes, running ones stay
    assert not log.known("t-0")
    assert all(log.known(f"t-{n}") for n in (1, 2, 3))
    log.open("t-4", "s")  # every turn running: none loses its events
    assert len(log) == 4
    ids = [log.append("t-1", "text_delta", {"text": str(n)}) for n in range(5)]
    assert ids == [1, 2, 3, 0, 0]  # past the bound deltas are dropped …
    assert log.finish("t-1", {"reply": "b"}) == 6  # … never the reply
    got = [e async for e in log.follow("t-1", 2)]
    assert [e.id for e in got] == [3, 6]


async def test_a_quiet_turn_sends_keepalive_comments(
    agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hermes.channels.http.turns.KEEPALIVE_SECONDS", 0.05)
    transport = httpx.ASGITransport(app=create_app(agent, ServerConfig()))
    async with httpx.AsyncClient(transport=transport, base_url="http://h.test") as client:
        response = await client.post("/v1/chat", json={"message": "sleep 0.3", "stream": True})
    assert ": ping" in response.text
    events = parse_sse(response.text)
    assert [e.id for e in events] == list(range(1, len(events) + 1))
    assert events[-1].event == "reply"


async def test_a_turn_that_ends_while_its_follower_is_busy_still_sends_the_reply() -> None:
    log = MemoryTurnEvents(3600.0)
    log.open("t-1", "s")
    log.append("t-1", "turn_started", {})
    log.append("t-1", "state_changed", {})
    follower = aiter(log.follow("t-1"))
    assert (await anext(follower)).id == 1
    # The follower is suspended at its yield: the turn ends meanwhile.
    log.append("t-1", "state_changed", {})
    log.finish("t-1", {"reply": "stopped"})
    rest = [e async for e in follower]
    assert [(e.id, e.event) for e in rest] == [
        (2, "state_changed"),
        (3, "state_changed"),
        (4, "reply"),
    ]
