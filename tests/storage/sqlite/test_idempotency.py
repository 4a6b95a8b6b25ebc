"""The SQLite idempotency records (``hermes.storage.sqlite.idempotency``): what is SQLite's own —
the file and its table, a concurrent first open, a damaged file, and where an agent's records
live. The contract itself: ``tests/storage/conformance/test_idempotency_records.py``."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from hermes import Agent, tool
from hermes.agent.compose import idempotency_records
from hermes.models.base import ToolCall
from hermes.storage.open import IDEMPOTENCY_FILES
from hermes.storage.sqlite.idempotency import IdempotencyFiles, SQLiteIdempotencyRecords
from hermes.testing import FunctionModel, call, say
from hermes.tools import ToolRegistry, ToolResult
from hermes.tools.pipeline import CallContext, RecordsPerWorkspace, ToolExecutor
from hermes.tools.policies import PolicyState


class Orders:
    def __init__(self) -> None:
        self.refunds: list[str] = []
        self.delay = 0.0

    def registry(self) -> ToolRegistry:
        @tool(idempotency_key=("order_id",))
        async def refund(order_id: str) -> dict[str, Any]:
            """Refund an order."""
            if self.delay:
                await asyncio.sleep(self.delay)
            self.refunds.append(order_id)
            return {"refund_id": f"R{len(self.refunds)}"}

        return ToolRegistry([refund])


async def refund(registry: ToolRegistry, records: SQLiteIdempotencyRecords) -> ToolResult:
    executor = ToolExecutor(registry, state=PolicyState(), idempotency=records)
    call_ = ToolCall("c1", "refund", {"order_id": "A-1"})
    return await executor.run(call_, CallContext(user_id="u1"))


async def test_the_stored_result_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "idempotency.db"
    before = SQLiteIdempotencyRecords(db)
    first = await refund(Orders().registry(), before)
    await before.close()  # the process ends

    after_orders = Orders()  # a new process: new registry, new tool object, new records
    after = SQLiteIdempotencyRecords(db)
    replay = await refund(after_orders.registry(), after)
    assert (replay.cached, replay.output) == (True, first.output)
    assert after_orders.refunds == []
    await after.close()


async def test_two_connections_sharing_the_file_run_once(tmp_path: Path) -> None:
    # Two records objects and two policy states = two connections and two lock tables, as in
    # two worker processes; only the claim row in the shared file keeps them from both running.
    orders = Orders()
    registry, orders.delay = orders.registry(), 0.1
    one, two = (
        SQLiteIdempotencyRecords(tmp_path / "i.db"),
        SQLiteIdempotencyRecords(tmp_path / "i.db"),
    )
    results = await asyncio.gather(refund(registry, one), refund(registry, two))
    assert len(orders.refunds) == 1
    assert sorted(r.cached for r in results) == [False, True]
    await one.close()
    await two.close()


async def test_two_processes_creating_the_file_at_once_both_succeed(tmp_path: Path) -> None:
    # SQLite answers a concurrent switch of a new file to WAL with SQLITE_BUSY at once,
    # without waiting; the records must wait for it themselves.
    for attempt in range(20):
        path = tmp_path / f"fresh-{attempt}.db"
        one, two = SQLiteIdempotencyRecords(path), SQLiteIdempotencyRecords(path)
        claims = await asyncio.gather(
            one.claim("t", "a", owner="one", lease=30), two.claim("t", "b", owner="two", lease=30)
        )
        assert list(claims) == [None, None]
        await one.close()
        await two.close()


async def test_a_damaged_file_refuses_the_call_without_running(tmp_path: Path) -> None:
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not a database file" * 100)
    orders = Orders()
    records = SQLiteIdempotencyRecords(not_a_db)
    result = await refund(orders.registry(), records)
    assert result.error is not None
    assert result.error.type == "store_error"
    assert "idempotency record is unavailable" in result.error.message
    assert (orders.refunds, result.attempts) == ([], 0)
    await records.close()


async def test_results_are_stored_in_a_plain_table(tmp_path: Path) -> None:
    records = SQLiteIdempotencyRecords(tmp_path / "i.db")
    await refund(Orders().registry(), records)
    await records.close()
    with sqlite3.connect(tmp_path / "i.db") as conn:
        rows = conn.execute("SELECT tool, state FROM tool_idempotency").fetchall()
    assert rows == [("refund", "done")]


def test_one_records_object_per_file_and_per_workspace(tmp_path: Path) -> None:
    files = IdempotencyFiles()
    assert files.at(tmp_path / "a.db") is files.at(str(tmp_path / "a.db"))
    assert files.at(tmp_path / "a.db") is not files.at(tmp_path / "b.db")
    assert files.for_workspace(str(tmp_path)) is files.at(tmp_path / ".hermes" / "idempotency.db")
    files.close_sync()


def test_an_agents_records_are_beside_its_store_file_or_per_workspace(tmp_path: Path) -> None:
    on_file = Agent(store=tmp_path / "data" / "hermes.db")
    in_memory = Agent(store=":memory:")
    try:
        beside = idempotency_records(on_file.store)
        assert beside is IDEMPOTENCY_FILES.at(str(tmp_path / "data" / "idempotency.db"))
        per_workspace = idempotency_records(in_memory.store)
        assert isinstance(per_workspace, RecordsPerWorkspace)
        records = per_workspace.open(str(tmp_path))
        assert records is IDEMPOTENCY_FILES.at(str(tmp_path / ".hermes" / "idempotency.db"))
    finally:
        on_file.store.close_sync()  # type: ignore[attr-defined]
        in_memory.store.close_sync()  # type: ignore[attr-defined]


async def test_an_agent_on_memory_keeps_its_keys_in_the_workspace(tmp_path: Path) -> None:
    orders = Orders()

    def script(request: Any) -> Any:
        if request.messages[-1]["role"] == "tool":
            return say("done")
        return call("refund", {"order_id": "A-9"})

    refund_tool = orders.registry().get("refund")
    assert refund_tool is not None
    agent = Agent(
        model=FunctionModel(script), tools=[refund_tool], store=":memory:", workspace=tmp_path
    )
    try:
        await agent.run("refund A-9", session_id="session-0001", user_id="u1")
        await agent.run("refund A-9 again", session_id="session-0001", user_id="u1")
    finally:
        await agent.aclose()
    assert orders.refunds == ["A-9"]
    assert (tmp_path / ".hermes" / "idempotency.db").is_file()
