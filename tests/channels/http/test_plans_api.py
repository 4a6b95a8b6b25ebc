"""``POST /v1/plans`` (SSE of node states ending in ``event: plan``), ``GET /v1/plans/{run_id}``
and ``POST /v1/plans/{run_id}/cancel`` (DESIGN.md, HTTP, "Plans")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import Agent, tool
from hermes.agent.plans import PlanSetup, configure_plans
from hermes.channels.http.app import create_app
from hermes.channels.http.plans import plans_of
from hermes.config.server import ServerConfig
from hermes.testing import FunctionModel, say
from hermes.tools.plans.library import PlanLibrary
from tests.channels.http.serve_fixtures import ALICE_KEY, KEYS, bearer

TEMPLATE = """
params: {room: {type: string}}
nodes:
  - id: book
    tool: book_room
    params: {room: "{{params.room}}"}
    compensate: {tool: cancel_booking, params: {booking: "{{book.result.booking}}"}}
  - id: hold
    tool: hold
    params: {booking: "{{book.result.booking}}"}
    depends_on: [book]
  - id: invite
    tool: invite
    params: {booking: "{{book.result.booking}}"}
    depends_on: [hold]
outputs: {booking: "{{book.result.booking}}"}
"""


class Gate:
    """What the hold tool waits for (opened at once unless a test closes it)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()
        self.open.set()
        self.effects: list[str] = []


@pytest.fixture
async def gate() -> Gate:
    return Gate()


@pytest.fixture
async def agent(tmp_path: Path, gate: Gate) -> AsyncIterator[Agent]:
    @tool
    def book_room(room: str) -> dict[str, Any]:
        """Book a room."""
        gate.effects.append(f"book {room}")
        return {"booking": f"b-{room}"}

    @tool
    def cancel_booking(booking: str) -> str:
        """Cancel a booking."""
        gate.effects.append(f"cancel {booking}")
        return "cancelled"

    @tool(timeout=30)
    async def hold(booking: str) -> str:
        """Wait for the gate."""
        gate.entered.set()
        await gate.open.wait()
        return "held"

    @tool
    def invite(booking: str) -> str:
        """Send the invitation."""
        gate.effects.append(f"invite {booking}")
        return "sent"

    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "meeting.yaml").write_text(TEMPLATE, encoding="utf-8")
    made = Agent(
        model=FunctionModel(lambda r: say("ok")),
        tools=[book_room, cancel_booking, hold, invite],
        store=tmp_path / "hermes.db",
    )
    configure_plans(made, PlanSetup(PlanLibrary(tmp_path / "plans")))
    yield made
    await made.aclose()


def _client(agent: Agent, **settings: Any) -> httpx.AsyncClient:
    app = create_app(agent, ServerConfig(**settings))
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://hermes.test", timeout=30
    )


def _events(text: str) -> list[tuple[str, int, dict[str, Any]]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":")
        )
        events.append((fields["event"], int(fields["id"]), json.loads(fields["data"])))
    return events


async def test_a_template_run_streams_node_states_and_ends_with_the_run(
    agent: Agent, gate: Gate
) -> None:
    async with _client(agent) as client:
        response = await client.post(
            "/v1/plans", json={"template": "meeting", "params": {"room": "R1"}, "user_id": "u1"}
        )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("text/event-stream")
        events = _events(response.text)
        kinds = [kind for kind, _, _ in events]
        assert kinds[0] == "plan_started"
        assert kinds[-1] == "plan"
        assert [number for _, number, _ in events] == list(range(1, len(events) + 1))
        nodes = [(d["node_id"], d["status"]) for kind, _, d in events if kind == "node"]
        assert nodes == [
            ("book", "running"), ("book", "succeeded"), ("hold", "running"),
            ("hold", "succeeded"), ("invite", "running"), ("invite", "succeeded"),
        ]  # fmt: skip
        final = events[-1][2]
        assert set(final) == {"run_id", "status", "nodes"}
        assert final["status"] == "succeeded"
        assert final["nodes"]["book"]["result"] == {"booking": "b-R1"}
        shown = await client.get(f"/v1/plans/{final['run_id']}")
        assert shown.status_code == 200
        assert shown.json()["outputs"] == {"booking": "b-R1"}
        assert shown.json()["plan"] == "meeting"
    assert gate.effects == ["book R1", "invite b-R1"]


async def test_refusals_are_json_errors_before_anything_runs(agent: Agent, gate: Gate) -> None:
    async with _client(agent) as client:
        missing = await client.post("/v1/plans", json={"template": "nope", "params": {}})
        assert missing.status_code == 404
        assert missing.json()["error"]["type"] == "template_not_found"
        bad = await client.post("/v1/plans", json={"template": "meeting", "params": {}})
        assert bad.status_code == 400
        assert bad.json()["error"]["type"] == "invalid_plan"
        freeform = await client.post(
            "/v1/plans", json={"plan": {"nodes": [{"id": "n1", "tool": "invite"}]}}
        )
        assert freeform.status_code == 403
        unknown = await client.get("/v1/plans/plan-000000000000000000000000")
        assert unknown.status_code == 404
        malformed = await client.get("/v1/plans/not-a-run")
        assert malformed.status_code == 400
    assert gate.effects == []


async def test_freeform_plans_run_when_the_config_allows_them(
    agent: Agent, gate: Gate, tmp_path: Path
) -> None:
    configure_plans(agent, PlanSetup(PlanLibrary(tmp_path / "plans"), allow_freeform=True))
    plan = {"nodes": [{"id": "n1", "tool": "invite", "params": {"booking": "b-x"}}]}
    async with _client(agent) as client:
        response = await client.post("/v1/plans", json={"plan": plan})
        assert response.status_code == 200, response.text
        assert _events(response.text)[-1][2]["status"] == "succeeded"
        invalid = await client.post(
            "/v1/plans", json={"plan": {"nodes": [{"id": "n1", "tool": "nope"}]}}
        )
        assert invalid.status_code == 400
        assert "n1" in invalid.json()["error"]["message"]
    assert gate.effects == ["invite b-x"]


async def test_cancel_stops_the_run_and_the_saga_undoes_it(agent: Agent, gate: Gate) -> None:
    gate.open.clear()
    app = create_app(agent, ServerConfig())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://hermes.test") as client:
        started = asyncio.create_task(
            client.post("/v1/plans", json={"template": "meeting", "params": {"room": "R9"}})
        )
        await asyncio.wait_for(gate.entered.wait(), timeout=10)
        listed = await client.get("/v1/sessions")  # the service still answers while it runs
        assert listed.status_code == 200
        [summary] = await plans_of(app.state.hermes).list_runs()
        cancelled = await client.post(f"/v1/plans/{summary.run_id}/cancel")
        assert cancelled.status_code == 202
        assert cancelled.json()["cancel_requested"] is True
        gate.open.set()
        response = await asyncio.wait_for(started, timeout=10)
        final = _events(response.text)[-1][2]
    assert final["status"] == "compensated"
    assert final["nodes"]["invite"]["status"] == "skipped"
    assert final["nodes"]["book"]["status"] == "compensated"
    assert gate.effects == ["book R9", "cancel b-R9"]


async def test_a_key_sees_only_its_own_users_runs(agent: Agent) -> None:
    async with _client(agent, api_keys=KEYS) as client:
        refused = await client.post(
            "/v1/plans", json={"template": "meeting", "params": {"room": "R"}, "user_id": "bob"},
            headers=bearer(ALICE_KEY),
        )  # fmt: skip
        assert refused.status_code == 403
        anonymous = await client.post(
            "/v1/plans", json={"template": "meeting", "params": {"room": "R"}}
        )
        assert anonymous.status_code == 401
        own = await client.post(
            "/v1/plans", json={"template": "meeting", "params": {"room": "R"}},
            headers=bearer(ALICE_KEY),
        )  # fmt: skip
        run_id = _events(own.text)[-1][2]["run_id"]
        shown = await client.get(f"/v1/plans/{run_id}", headers=bearer(ALICE_KEY))
        assert shown.status_code == 200
        assert shown.json()["user_id"] == "alice"


async def test_one_idempotency_key_starts_one_run(agent: Agent, gate: Gate) -> None:
    body = {"template": "meeting", "params": {"room": "R5"}}
    headers = {"Idempotency-Key": "book-R5-once"}
    async with _client(agent) as client:
        first = await client.post("/v1/plans", json=body, headers=headers)
        assert first.status_code == 200, first.text
        first_run = _events(first.text)[-1][2]
        again = await client.post("/v1/plans", json=body, headers=headers)
        assert again.status_code == 200, again.text
        assert again.headers["Idempotency-Replayed"] == "true"
        events = _events(again.text)
        assert [kind for kind, _, _ in events] == ["plan_started", "plan"]
        assert events[-1][2] == first_run
        other = await client.post(
            "/v1/plans", json={**body, "params": {"room": "R6"}}, headers=headers
        )
        assert other.status_code == 409
        assert other.json()["error"]["type"] == "idempotency_conflict"
    assert gate.effects == ["book R5", "invite b-R5"]  # the plan ran once


async def test_a_retry_while_the_first_runs_follows_that_run(agent: Agent, gate: Gate) -> None:
    gate.open.clear()
    body = {"template": "meeting", "params": {"room": "R8"}}
    headers = {"Idempotency-Key": "book-R8-once"}
    async with _client(agent) as client:
        first = asyncio.create_task(client.post("/v1/plans", json=body, headers=headers))
        await asyncio.wait_for(gate.entered.wait(), timeout=10)
        retry = asyncio.create_task(client.post("/v1/plans", json=body, headers=headers))
        await asyncio.sleep(0.3)  # the retry is following the run, not starting one
        gate.open.set()
        answers = await asyncio.wait_for(asyncio.gather(first, retry), timeout=20)
    finals = [_events(a.text)[-1][2] for a in answers]
    assert finals[0] == finals[1]
    assert finals[0]["status"] == "succeeded"
    assert gate.effects == ["book R8", "invite b-R8"]
