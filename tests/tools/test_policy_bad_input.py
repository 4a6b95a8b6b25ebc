"""Bad input against a fully-policied tool: a clear ToolResult error, and the next call works."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent
from hermes.models.base import ToolCall
from hermes.storage.sqlite.idempotency import SQLiteIdempotencyRecords
from hermes.testing import ScriptedModel, calls, say
from hermes.tools import ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import BreakerPolicy, PolicyState, RetryPolicy

FAST = RetryPolicy(max_attempts=2, initial_wait=0.001, max_wait=0.001)


class Ledger:
    def __init__(self) -> None:
        self.entries: list[str] = []

    def registry(self) -> ToolRegistry:
        async def record(entry_id: str, text: str, amount: int = 0) -> str:
            self.entries.append(entry_id)
            return f"recorded {entry_id}"

        guarded = tool(
            name="record",
            idempotency_key=("entry_id",),
            cache_ttl=60,
            circuit_breaker=BreakerPolicy(failures=2),
            retry=FAST,
        )(record)

        def hangs() -> str:
            time.sleep(0.5)
            return "too late"

        slow = tool(name="hangs", timeout=0.02, retry=FAST, circuit_breaker=BreakerPolicy(2))(hangs)
        return ToolRegistry([guarded, slow])


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


async def call(
    registry: ToolRegistry, state: PolicyState, tmp_path: Path, name: str, args: Any
) -> ToolResult:
    records = SQLiteIdempotencyRecords(tmp_path / "idem.db")  # durable, as an agent has them
    executor = ToolExecutor(registry, state=state, idempotency=records)
    return await executor.run(ToolCall("c", name, args), CallContext(call_id="c", user_id="u1"))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ({"entry_id": ["e1"], "text": "x"}, "entry_id: expected string"),
        ({"entry_id": "e1"}, "text: missing required field"),
        ({"entry_id": "e1", "text": "x", "admin": True}, "admin: unknown field"),
        ({"entry_id": "e1", "text": "x", "amount": "lots"}, "amount: expected integer"),
        ("not an object", "expected an object"),
    ],
    ids=["wrong-type", "missing", "extra", "bad-number", "not-an-object"],
)
async def test_bad_arguments_are_refused_before_any_policy(
    ledger: Ledger, tmp_path: Path, args: Any, fragment: str
) -> None:
    state = PolicyState()
    result = await call(ledger.registry(), state, tmp_path, "record", args)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert fragment in result.error.message
    assert (ledger.entries, len(state.cache), state.breakers.peek("record")) == ([], 0, None)
    assert not (tmp_path / "idem.db").exists()


async def test_a_huge_argument_is_keyed_and_stored_like_any_other(
    ledger: Ledger, tmp_path: Path
) -> None:
    state = PolicyState()
    args = {"entry_id": "e" * 200_000, "text": "x" * 1_000_000}
    first = await call(ledger.registry(), state, tmp_path, "record", args)
    again = await call(ledger.registry(), state, tmp_path, "record", args)
    assert (first.ok, again.cached, len(ledger.entries)) == (True, True, 1)
    await state.close()


async def test_a_tool_that_never_returns_times_out_then_its_circuit_opens(
    ledger: Ledger, tmp_path: Path
) -> None:
    state = PolicyState()
    registry = ledger.registry()
    for _ in range(2):
        result = await call(registry, state, tmp_path, "hangs", {})
        assert result.error is not None
        # A sync tool's timed-out thread cannot be stopped: no second attempt beside it.
        assert (result.error.type, result.attempts) == ("timeout", 1)
    refused = await call(registry, state, tmp_path, "hangs", {})
    assert refused.error is not None
    assert refused.error.type == "service_unavailable"
    # Other tools are unaffected: the next call works.
    assert (await call(registry, state, tmp_path, "record", {"entry_id": "e", "text": "t"})).ok
    await state.close()


async def test_concurrent_failures_open_the_breaker_once(tmp_path: Path) -> None:
    async def down() -> None:
        await asyncio.sleep(0)
        raise ConnectionRefusedError("down")

    registry = ToolRegistry([tool(name="down", circuit_breaker=BreakerPolicy(failures=3))(down)])
    state = PolicyState()
    results = await asyncio.gather(*(call(registry, state, tmp_path, "down", {}) for _ in range(8)))
    assert {r.error.type for r in results if r.error} == {"execution_error"}  # all had started
    assert state.breakers.peek("down").state == "open"  # type: ignore[union-attr]
    later = await call(registry, state, tmp_path, "down", {})
    assert later.error is not None
    assert later.error.type == "service_unavailable"


async def test_parallel_calls_of_one_response_with_one_key_run_once(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(idempotency_key=("order_id",))
    async def refund(order_id: str) -> str:
        """Refund an order."""
        ran.append(order_id)
        await asyncio.sleep(0.02)
        return f"refunded {order_id}"

    model = ScriptedModel(
        [
            calls(("refund", {"order_id": "A-1"}), ("refund", {"order_id": "A-1"})),
            say("Refunded once."),
        ]
    )
    agent = Agent(model=model, tools=[refund], store=tmp_path / "hermes.db", workspace=tmp_path)
    result = await agent.run("refund A-1", session_id="session-0001", user_id="u1")
    assert result.reply == "Refunded once."
    assert [c.ok for c in result.tool_calls] == [True, True]
    assert ran == ["A-1"]
    assert (tmp_path / "idempotency.db").is_file()  # the Agent keeps it beside its store
