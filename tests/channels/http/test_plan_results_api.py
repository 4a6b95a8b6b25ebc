"""``GET /v1/plans/{run_id}`` over results kept by archive hash (DESIGN.md, HTTP, "Plans"; the
``PlanRuns`` contract, "Results by archive hash"): the run object is the one of before, and a
result whose blob is gone is a typed JSON error naming the run and the node, not a crash and
not a ``null`` in its place."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import Agent, tool
from hermes.agent.plans import PlanSetup, configure_plans
from hermes.channels.http.app import create_app
from hermes.config.server import ServerConfig
from hermes.storage.open import PLAN_RESULTS_DIR
from hermes.testing import FunctionModel, say
from hermes.tools.plans.library import PlanLibrary

TEMPLATE = """
nodes:
  - id: find
    tool: find_room
    params: {}
  - id: book
    tool: book
    params: {room: "{{find.result.room_id}}"}
    depends_on: [find]
outputs: {room: "{{find.result.room_id}}"}
"""
#: Larger than what a node's row keeps inline (storage/open.py, PLAN_RESULT_INLINE_MAX).
MAP = "楼层平面图 " * 400


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[Agent]:
    @tool(side_effects=False)
    def find_room() -> dict[str, Any]:
        """A free room."""
        return {"room_id": "A101", "floor": 2, "map": MAP}

    @tool
    def book(room: str) -> str:
        """Book a room."""
        return f"booked {room}"

    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "meeting.yaml").write_text(TEMPLATE, encoding="utf-8")
    made = Agent(
        model=FunctionModel(lambda r: say("ok")),
        tools=[find_room, book],
        store=tmp_path / "hermes.db",
    )
    configure_plans(made, PlanSetup(PlanLibrary(tmp_path / "plans")))
    yield made
    await made.aclose()


def _client(agent: Agent) -> httpx.AsyncClient:
    app = create_app(agent, ServerConfig())
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://hermes.test", timeout=30
    )


async def test_a_run_reads_as_before_and_a_lost_result_is_a_typed_error(
    agent: Agent, tmp_path: Path
) -> None:
    async with _client(agent) as client:
        started = await client.post("/v1/plans", json={"template": "meeting", "params": {}})
        assert started.status_code == 200, started.text
        run_id = started.text.split('"run_id":"', 1)[1].split('"', 1)[0]
        shown = await client.get(f"/v1/plans/{run_id}")
        assert shown.status_code == 200
        body = shown.json()
        assert body["nodes"] == {
            "find": {"status": "succeeded", "result": {"room_id": "A101", "floor": 2, "map": MAP}},
            "book": {"status": "succeeded", "result": "booked A101"},
        }
        assert body["outputs"] == {"room": "A101"}
        blobs = [p for p in (tmp_path / PLAN_RESULTS_DIR).rglob("*") if p.is_file()]
        assert len(blobs) == 1  # find's result (book's is small: kept in its row)
        for blob in blobs:
            blob.unlink()  # a disk lost, a directory deleted by hand
        # A fresh server process: nothing of the first one's cache.
        fresh = Agent(model=FunctionModel(lambda r: say("ok")), store=tmp_path / "hermes.db")
        try:
            async with _client(fresh) as other:
                lost = await other.get(f"/v1/plans/{run_id}")
        finally:
            await fresh.aclose()
    assert lost.status_code == 503
    error = lost.json()["error"]
    assert error["type"] == "plan_result_lost"
    assert run_id in error["message"]
    assert "'find'" in error["message"]
