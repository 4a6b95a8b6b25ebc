"""``POST /v1/events[/{route}]`` over real HTTP: an accepted event is one inbound item of its
session followed by the agent's reply; duplicates run nothing; a reused id with another body is
409; a refused delivery is not "seen"; a failed one is processed again; 20 concurrent
deliveries of one id run once (DESIGN.md, "Public contracts", HTTP Events; seed 002 §4.2)."""

from __future__ import annotations

import asyncio

import httpx

from hermes.errors import ModelError
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import say
from tests.channels.http.events_support import body, raw, serve_events

ROUTES = """\
webhooks:
  routes:
    db-alerts: {session_id: ops-db-alerts, user_id: ops}
"""


async def _post(client: httpx.AsyncClient, path: str, data: object) -> httpx.Response:
    return await client.post(path, json=data)


async def test_an_accepted_event_is_one_inbound_item_followed_by_the_reply(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        answer = await _post(client, "/v1/events/db-alerts", body("alert-001"))
        assert answer.status_code == 202, answer.text
        data = answer.json()
        assert data["status"] == "accepted"
        assert data["msg_id"] == "alert-001"
        assert answer.headers["X-Hermes-Trace-Id"] == data["trace_id"]
        done = await served.settled("db-alerts", "alert-001")
        assert (done.status, done.trace_id) == ("done", data["trace_id"])
        items = await served.items("ops-db-alerts")
    texts = [(i.role, i.kind, i.content) for i in items if i.kind == "text"]
    assert texts == [
        ("user", "text", "数据库连接池使用率超过80%"),
        ("assistant", "text", "handled: 数据库连接池使用率超过80%"),
    ]
    assert {i.trace_id for i in items} == {data["trace_id"]}


async def test_the_turn_is_followed_at_the_turn_events_route(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        answer = await _post(client, "/v1/events/db-alerts", body("alert-sse"))
        trace = answer.json()["trace_id"]
        replay = await client.get(f"/v1/turns/{trace}/events")
    assert replay.status_code == 200
    assert "event: reply" in replay.text
    assert "handled: " in replay.text


async def test_a_duplicate_returns_the_first_trace_and_runs_nothing(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        first = (await _post(client, "/v1/events/db-alerts", body("alert-002"))).json()
        await served.settled("db-alerts", "alert-002")
        again = await _post(client, "/v1/events/db-alerts", body("alert-002"))
        assert again.status_code == 202
        assert again.json() == {
            "status": "duplicate", "msg_id": "alert-002", "trace_id": first["trace_id"],
        }  # fmt: skip
        items = await served.items("ops-db-alerts")
    assert [i.role for i in items if i.kind == "text"] == ["user", "assistant"]


async def test_key_order_and_whitespace_do_not_make_another_body(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        await _post(client, "/v1/events/db-alerts", body("alert-003", meta={"a": 1, "b": 2}))
        await served.settled("db-alerts", "alert-003")
        reordered = b'{"meta": {"b": 2, "a": 1},  "content": "\\u6570\\u636e\\u5e93\\u8fde\\u63a5\\u6c60\\u4f7f\\u7528\\u7387\\u8d85\\u8fc780%", "type": "alert", "msg_id": "alert-003"}'  # noqa: E501
        again = await client.post(
            "/v1/events/db-alerts", content=reordered, headers={"Content-Type": "application/json"}
        )
    assert again.json()["status"] == "duplicate"


async def test_the_same_msg_id_with_another_body_is_a_409_conflict(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        await _post(client, "/v1/events/db-alerts", body("alert-004"))
        await served.settled("db-alerts", "alert-004")
        other = await _post(client, "/v1/events/db-alerts", body("alert-004", "another alert"))
        assert other.status_code == 409
        assert other.json()["error"]["type"] == "event_conflict"
        items = await served.items("ops-db-alerts")
    assert "another alert" not in [i.content for i in items]


async def test_the_route_is_part_of_the_key(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        on_route = await _post(client, "/v1/events/db-alerts", body("alert-005"))
        on_default = await _post(client, "/v1/events", body("alert-005", "另一个来源"))
        await served.settled("default", "alert-005")
        default_items = await served.items("events-default")
    assert on_route.json()["status"] == on_default.json()["status"] == "accepted"
    assert [i.content for i in default_items if i.role == "user"] == ["另一个来源"]


async def test_the_bodys_session_id_wins_over_the_routes(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        await _post(client, "/v1/events/db-alerts", body("alert-006", session_id="oncall-room-7"))
        await served.settled("db-alerts", "alert-006")
        assert len(await served.items("oncall-room-7")) == 2
        assert await served.items("ops-db-alerts") == []


async def test_an_unknown_route_is_404_and_nothing_is_seen(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        answer = await _post(client, "/v1/events/nope", body("alert-007"))
        assert answer.status_code == 404
        assert answer.json()["error"]["type"] == "unknown_route"
        assert await served.delivery("nope", "alert-007") is None


async def test_a_malformed_delivery_is_refused_and_not_seen(tmp_path):
    async with serve_events(tmp_path, ROUTES) as served, served.client() as client:
        missing = await _post(client, "/v1/events/db-alerts", {"msg_id": "alert-008"})
        not_json = await client.post(
            "/v1/events/db-alerts", content=b"{nope", headers={"Content-Type": "application/json"}
        )
        bad_session = await _post(client, "/v1/events/db-alerts", body("alert-008", session_id="x"))
        statuses = (missing.status_code, not_json.status_code, bad_session.status_code)
        assert statuses == (422, 400, 400)
        assert await served.delivery("db-alerts", "alert-008") is None
        # The same id, now well formed, is new.
        fixed = await _post(client, "/v1/events/db-alerts", body("alert-008"))
    assert fixed.json()["status"] == "accepted"


async def test_a_delivery_refused_as_busy_is_not_seen_and_its_retry_runs(tmp_path):
    gate = asyncio.Event()

    async def slow(request: ModelRequest) -> ModelResponse:
        if "hold" in str(request.messages[-1].get("content")):
            await gate.wait()
        return say("ok")

    config = ROUTES + "server: {busy: reject}\n"
    async with serve_events(tmp_path, config, model=slow) as served, served.client() as client:
        hold = body("alert-hold", "hold the session")
        holding = await _post(client, "/v1/events/db-alerts", hold)
        assert holding.json()["status"] == "accepted"
        busy = await _post(client, "/v1/events/db-alerts", body("alert-009"))
        assert busy.status_code == 409
        assert busy.json()["error"]["type"] == "session_busy"
        assert await served.delivery("db-alerts", "alert-009") is None
        gate.set()
        await served.settled("db-alerts", "alert-hold")
        retry = await _post(client, "/v1/events/db-alerts", body("alert-009"))
        assert retry.json()["status"] == "accepted"
        assert (await served.settled("db-alerts", "alert-009")).status == "done"


async def test_a_failed_processing_is_recorded_and_processed_again_on_redelivery(tmp_path):
    calls = []

    def flaky(request: ModelRequest) -> ModelResponse:
        calls.append(request)
        if len(calls) == 1:
            raise ModelError("the model server is down", kind="unreachable")
        return say("handled on the second delivery")

    async with serve_events(tmp_path, ROUTES, model=flaky) as served, served.client() as client:
        first = (await _post(client, "/v1/events/db-alerts", body("alert-010"))).json()
        failed = await served.settled("db-alerts", "alert-010")
        assert (failed.status, failed.attempts) == ("failed", 1)
        assert "model_error" in (failed.error or "")
        again = (await _post(client, "/v1/events/db-alerts", body("alert-010"))).json()
        assert again["status"] == "accepted"  # not "duplicate": a failure does not poison it
        assert again["trace_id"] != first["trace_id"]
        done = await served.settled("db-alerts", "alert-010")
        assert (done.status, done.attempts, done.trace_id) == ("done", 2, again["trace_id"])
        third = (await _post(client, "/v1/events/db-alerts", body("alert-010"))).json()
    assert third == {"status": "duplicate", "msg_id": "alert-010", "trace_id": again["trace_id"]}


async def test_twenty_concurrent_deliveries_of_one_id_run_the_handling_once(tmp_path):
    turns = []

    async def counted(request: ModelRequest) -> ModelResponse:
        turns.append(request.trace_id)
        await asyncio.sleep(0.2)  # the handling takes a while: the others arrive meanwhile
        return say("handled once")

    async with serve_events(tmp_path, ROUTES, model=counted) as served, served.client() as client:
        answers = await asyncio.gather(
            *(_post(client, "/v1/events/db-alerts", body("alert-storm")) for _ in range(20))
        )
        await served.settled("db-alerts", "alert-storm")
        items = await served.items("ops-db-alerts")
        metrics = (await client.get("/metrics")).text
    assert [a.status_code for a in answers] == [202] * 20
    statuses = sorted(a.json()["status"] for a in answers)
    assert statuses == ["accepted"] + ["duplicate"] * 19
    assert len({a.json()["trace_id"] for a in answers}) == 1
    assert len(turns) == 1
    assert [i.role for i in items if i.kind == "text"] == ["user", "assistant"]
    assert 'hermes_webhook_events_total{outcome="duplicate",route="db-alerts"} 19.0' in metrics
    assert 'hermes_webhook_processed_total{route="db-alerts",status="done"} 1.0' in metrics


async def test_with_api_keys_an_unsigned_route_needs_a_key(tmp_path):
    config = ROUTES + ("server:\n  api_keys: [{key: ops-key-0123456789abcdef, user: ops}]\n")
    async with serve_events(tmp_path, config) as served, served.client() as client:
        anonymous = await _post(client, "/v1/events/db-alerts", body("alert-011"))
        keyed = await client.post(
            "/v1/events/db-alerts",
            content=raw(body("alert-011")),
            headers={"Authorization": "Bearer ops-key-0123456789abcdef",
                     "Content-Type": "application/json"},
        )  # fmt: skip
        assert anonymous.status_code == 401
        assert keyed.json()["status"] == "accepted"
        await served.settled("db-alerts", "alert-011")
        [user_item, _] = await served.items("ops-db-alerts")
    assert user_item.content == "数据库连接池使用率超过80%"
