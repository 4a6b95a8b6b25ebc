"""Idempotency keys: same key → stored result, never a second run; durable across restarts."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from hermes.models.base import ToolCall
from hermes.tools import ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import Call, CallContext, Next, ToolExecutor
from hermes.tools.policies import IdempotencyStore, PolicyState


class WallClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Orders:
    """A side-effecting backend: counts refunds so a second run is visible."""

    def __init__(self) -> None:
        self.refunds: list[tuple[str, float]] = []
        self.fail_next = False
        self.delay = 0.0
        #: Set when a refund starts running (past the key's claim): tests wait for it, not a clock.
        self.started = asyncio.Event()

    def registry(self, **options: Any) -> ToolRegistry:
        async def refund(order_id: str, amount: float, note: str = "") -> dict[str, Any]:
            self.started.set()
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.fail_next:
                self.fail_next = False
                raise ConnectionResetError("payment gateway dropped the connection")
            self.refunds.append((order_id, amount))
            return {"refund_id": f"R{len(self.refunds)}", "order_id": order_id, "amount": amount}

        options.setdefault("idempotency_key", ("order_id",))
        return ToolRegistry([tool(name="refund", summary="refunded {order_id}", **options)(refund)])


@pytest.fixture
def orders() -> Orders:
    return Orders()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "idempotency.db"


async def refund(
    registry: ToolRegistry,
    state: PolicyState,
    db: Path,
    *,
    user: str | None = "u1",
    **args: Any,
) -> ToolResult:
    args = {"order_id": "A-1", "amount": 10, **args}
    executor = ToolExecutor(registry, state=state, idempotency_path=str(db))
    return await executor.run(ToolCall("c1", "refund", args), CallContext(user_id=user))


async def test_a_repeated_call_returns_the_stored_result_without_running(
    orders: Orders, db: Path
) -> None:
    registry, state = orders.registry(), PolicyState()
    first = await refund(registry, state, db)
    second = await refund(registry, state, db)
    assert len(orders.refunds) == 1
    assert (first.cached, first.attempts) == (False, 1)
    assert (second.ok, second.cached, second.attempts) == (True, True, 0)
    assert (second.output, second.summary) == (first.output, first.summary)
    await state.close()


async def test_only_the_key_fields_make_the_key(orders: Orders, db: Path) -> None:
    registry, state = orders.registry(), PolicyState()
    await refund(registry, state, db, note="first try")
    replay = await refund(registry, state, db, note="second try")
    assert replay.cached
    assert len(orders.refunds) == 1
    await state.close()


async def test_a_different_key_runs(orders: Orders, db: Path) -> None:
    registry, state = orders.registry(), PolicyState()
    await refund(registry, state, db, order_id="A-1")
    other = await refund(registry, state, db, order_id="A-2")
    assert not other.cached
    assert orders.refunds == [("A-1", 10), ("A-2", 10)]
    await state.close()


async def test_idempotent_true_keys_on_all_arguments(orders: Orders, db: Path) -> None:
    registry, state = orders.registry(idempotency_key=None, idempotent=True), PolicyState()
    await refund(registry, state, db, note="a")
    assert (await refund(registry, state, db, note="a")).cached
    assert not (await refund(registry, state, db, note="b")).cached
    assert len(orders.refunds) == 2
    await state.close()


async def test_keys_are_per_user(orders: Orders, db: Path) -> None:
    registry, state = orders.registry(), PolicyState()
    await refund(registry, state, db, user="alice")
    other = await refund(registry, state, db, user="bob")
    assert not other.cached
    assert len(orders.refunds) == 2
    await state.close()


async def test_the_stored_result_expires_after_the_ttl(orders: Orders, db: Path) -> None:
    clock = WallClock()
    registry, state = orders.registry(idempotency_ttl=60), PolicyState(wall_clock=clock)
    await refund(registry, state, db)
    clock.now += 59
    assert (await refund(registry, state, db)).cached
    clock.now += 1
    assert not (await refund(registry, state, db)).cached
    assert len(orders.refunds) == 2
    await state.close()


async def test_the_stored_result_survives_a_restart(orders: Orders, db: Path) -> None:
    before = PolicyState()
    first = await refund(orders.registry(), before, db)
    await before.close()  # the process ends

    after_orders = Orders()  # a new process: new registry, new tool object, new state
    after = PolicyState()
    replay = await refund(after_orders.registry(), after, db)
    assert (replay.cached, replay.output) == (True, first.output)
    assert after_orders.refunds == []
    await after.close()


async def test_a_failed_call_is_not_stored(orders: Orders, db: Path) -> None:
    registry, state = orders.registry(), PolicyState()
    orders.fail_next = True
    failed = await refund(registry, state, db)
    assert failed.error is not None
    assert failed.error.type == "execution_error"
    retried = await refund(registry, state, db)
    assert (retried.ok, retried.cached) == (True, False)
    assert len(orders.refunds) == 1
    await state.close()


async def test_concurrent_calls_with_one_key_run_once(orders: Orders, db: Path) -> None:
    registry, state = orders.registry(), PolicyState()
    orders.delay = 0.05
    results = await asyncio.gather(*(refund(registry, state, db) for _ in range(5)))
    assert len(orders.refunds) == 1
    assert sorted(r.cached for r in results) == [False, True, True, True, True]
    assert len({str(r.output) for r in results}) == 1
    assert len(state.key_locks) == 0  # no lock outlives its users
    await state.close()


async def test_two_processes_sharing_the_file_run_once(orders: Orders, db: Path) -> None:
    # Two states = two connections and two lock tables, as in two worker processes; only
    # the claim row in the shared file keeps them from both running.
    registry = orders.registry()
    one, two = PolicyState(), PolicyState()
    orders.delay = 0.1
    results = await asyncio.gather(refund(registry, one, db), refund(registry, two, db))
    assert len(orders.refunds) == 1
    assert sorted(r.cached for r in results) == [False, True]
    await one.close()
    await two.close()


async def test_two_processes_creating_the_file_at_once_both_succeed(tmp_path: Path) -> None:
    # SQLite answers a concurrent switch of a new file to WAL with SQLITE_BUSY at once,
    # without waiting; the store must wait for it itself.
    for attempt in range(20):
        path = tmp_path / f"fresh-{attempt}.db"
        one, two = IdempotencyStore(path), IdempotencyStore(path)
        claims = await asyncio.gather(
            one.claim("t", "a", owner="one", lease=30), two.claim("t", "b", owner="two", lease=30)
        )
        assert list(claims) == [None, None]
        await one.close()
        await two.close()


async def test_a_call_cancelled_while_running_is_never_run_again_blindly(
    orders: Orders, db: Path
) -> None:
    """Cancelled mid-run, the refund may or may not have happened: the key must not run again
    (it could pay twice); later calls say the outcome is unknown."""
    registry, state = orders.registry(), PolicyState()
    orders.delay = 5
    task = asyncio.create_task(refund(registry, state, db))
    # Running, not just scheduled: a task cancelled before its claim never ran at all, and its
    # key is rightly free (what a fixed 50 ms sleep produced on a loaded machine).
    await asyncio.wait_for(orders.started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    orders.delay = 0
    await asyncio.sleep(0.05)  # the "unknown" record lands on the store's worker
    result = await refund(registry, state, db)
    assert result.ok is False
    assert result.error is not None
    assert result.error.type == "outcome_unknown"
    assert orders.refunds == []  # the second call did not run the refund
    await state.close()


async def test_a_call_that_timed_out_is_never_run_again_blindly(tmp_path: Path) -> None:
    from hermes.tools import ToolRegistry, tool

    started: list[str] = []

    @tool(idempotency_key=("order",), timeout=0.2)
    def pay(order: str) -> str:
        """Pays, slowly (sync: its thread cannot be stopped)."""
        started.append(order)
        time.sleep(0.5)
        return "paid"

    registry, state = ToolRegistry([pay]), PolicyState()
    executor = ToolExecutor(registry, state=state, idempotency_path=str(tmp_path / "i.db"))
    ctx = CallContext(workspace=str(tmp_path))
    first = await executor.run(ToolCall("c1", "pay", {"order": "o1"}), ctx)
    second = await executor.run(ToolCall("c2", "pay", {"order": "o1"}), ctx)
    assert first.error is not None
    assert first.error.type == "timeout"
    assert second.error is not None
    assert second.error.type == "outcome_unknown"
    assert started == ["o1"]
    await state.close()


class OutOfTimeOnce:
    """A step of one's own, placed just before the run: refuses the first call as a timeout
    before the tool runs (a deadline already spent), then lets calls through."""

    name = "deadline"

    def __init__(self) -> None:
        self.refused = False

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        if not self.refused:
            self.refused = True
            return ToolResult.failure("timeout", "no time was left for this call", attempts=0)
        return await next(call)


async def test_a_timeout_before_the_tool_ran_leaves_the_key_free(orders: Orders, db: Path) -> None:
    # Only a timeout while running makes the outcome unknown: a tool that never ran did nothing.
    state = PolicyState()
    executor = ToolExecutor(orders.registry(), state=state, idempotency_path=str(db))
    executor.insert(OutOfTimeOnce())
    call = ToolCall("c1", "refund", {"order_id": "A-1", "amount": 10})
    first = await executor.run(call, CallContext(user_id="u1"))
    second = await executor.run(call, CallContext(user_id="u1"))
    assert first.error is not None
    assert (first.error.type, first.attempts) == ("timeout", 0)
    assert (second.ok, second.cached) == (True, False)
    assert orders.refunds == [("A-1", 10)]
    await state.close()


async def test_the_default_file_is_under_the_workspace(orders: Orders, tmp_path: Path) -> None:
    state = PolicyState()
    ctx = CallContext(call_id="c", workspace=str(tmp_path))
    call = ToolCall("c", "refund", {"order_id": "A-9", "amount": 1})
    await ToolExecutor(orders.registry(), state=state).run(call, ctx)
    assert (tmp_path / ".hermes" / "idempotency.db").is_file()
    await state.close()


async def test_an_unusable_store_refuses_the_call_without_running(
    orders: Orders, tmp_path: Path
) -> None:
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not a database file" * 100)
    state = PolicyState()
    result = await refund(orders.registry(), state, not_a_db)
    assert result.error is not None
    assert result.error.type == "store_error"
    assert "idempotency record is unavailable" in result.error.message
    assert (orders.refunds, result.attempts) == ([], 0)
    await state.close()


async def test_a_claim_left_by_a_dead_process_expires_with_its_lease(db: Path) -> None:
    clock = WallClock()
    store = IdempotencyStore(db, clock=clock)
    assert await store.claim("refund", "k", owner="dead", lease=30) is None
    clock.now += 31  # the owner died and never completed
    assert await store.claim("refund", "k", owner="alive", lease=30) is None
    assert await store.complete("refund", "k", owner="alive", result_json='{"output": 1}', ttl=60)
    assert not await store.complete("refund", "k", owner="dead", result_json="{}", ttl=60)
    assert await store.claim("refund", "k", owner="third", lease=30) == '{"output": 1}'
    await store.close()


async def test_results_are_stored_in_a_plain_table(orders: Orders, db: Path) -> None:
    state = PolicyState()
    await refund(orders.registry(), state, db)
    await state.close()
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT tool, state FROM tool_idempotency").fetchall()
    assert rows == [("refund", "done")]


def test_idempotency_key_must_name_arguments() -> None:
    async def pay(order_id: str) -> None: ...

    with pytest.raises(ValueError, match=r"tool 'pay': idempotency_key names unknown arguments"):
        tool(name="pay", idempotency_key=("orderid",))(pay)
