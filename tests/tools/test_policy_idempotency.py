"""The idempotency step: same key → stored result, never a second run. Run on the in-process
records of a bare executor and on the SQLite records an agent gets (what every backend must do
on its own: ``tests/storage/conformance/test_idempotency_records.py``; SQLite's own behaviour:
``tests/storage/sqlite/test_idempotency.py``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import StoreError
from hermes.models.base import ToolCall
from hermes.storage.sqlite.idempotency import SQLiteIdempotencyRecords
from hermes.tools import ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import Call, CallContext, IdempotencyRecords, Next, ToolExecutor
from hermes.tools.policies import LocalIdempotencyRecords, PolicyState


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


Records = Callable[..., IdempotencyRecords]


@pytest.fixture(params=["in-process", "sqlite-file"])
async def make_records(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Records]:
    """Records for the step (``clock=`` for a fake wall clock); each call: new records on the
    same storage, as another process would open it (the in-process ones: the same object)."""
    made: list[SQLiteIdempotencyRecords] = []
    local: dict[str, LocalIdempotencyRecords] = {}

    def make(clock: Callable[[], float] = time.time) -> IdempotencyRecords:
        if request.param == "in-process":
            return local.setdefault("records", LocalIdempotencyRecords(clock=clock))
        records = SQLiteIdempotencyRecords(tmp_path / "state" / "idempotency.db", clock=clock)
        made.append(records)
        return records

    yield make
    for records in made:
        await records.close()


@pytest.fixture
def db(make_records: Records) -> IdempotencyRecords:
    return make_records()


async def refund(
    registry: ToolRegistry,
    state: PolicyState,
    db: IdempotencyRecords,
    *,
    user: str | None = "u1",
    **args: Any,
) -> ToolResult:
    args = {"order_id": "A-1", "amount": 10, **args}
    executor = ToolExecutor(registry, state=state, idempotency=db)
    return await executor.run(ToolCall("c1", "refund", args), CallContext(user_id=user))


async def test_a_repeated_call_returns_the_stored_result_without_running(
    orders: Orders, db: IdempotencyRecords
) -> None:
    registry, state = orders.registry(), PolicyState()
    first = await refund(registry, state, db)
    second = await refund(registry, state, db)
    assert len(orders.refunds) == 1
    assert (first.cached, first.attempts) == (False, 1)
    assert (second.ok, second.cached, second.attempts) == (True, True, 0)
    assert (second.output, second.summary) == (first.output, first.summary)
    await state.close()


async def test_only_the_key_fields_make_the_key(orders: Orders, db: IdempotencyRecords) -> None:
    registry, state = orders.registry(), PolicyState()
    await refund(registry, state, db, note="first try")
    replay = await refund(registry, state, db, note="second try")
    assert replay.cached
    assert len(orders.refunds) == 1
    await state.close()


async def test_a_different_key_runs(orders: Orders, db: IdempotencyRecords) -> None:
    registry, state = orders.registry(), PolicyState()
    await refund(registry, state, db, order_id="A-1")
    other = await refund(registry, state, db, order_id="A-2")
    assert not other.cached
    assert orders.refunds == [("A-1", 10), ("A-2", 10)]
    await state.close()


async def test_idempotent_true_keys_on_all_arguments(
    orders: Orders, db: IdempotencyRecords
) -> None:
    registry, state = orders.registry(idempotency_key=None, idempotent=True), PolicyState()
    await refund(registry, state, db, note="a")
    assert (await refund(registry, state, db, note="a")).cached
    assert not (await refund(registry, state, db, note="b")).cached
    assert len(orders.refunds) == 2
    await state.close()


async def test_keys_are_per_user(orders: Orders, db: IdempotencyRecords) -> None:
    registry, state = orders.registry(), PolicyState()
    await refund(registry, state, db, user="alice")
    other = await refund(registry, state, db, user="bob")
    assert not other.cached
    assert len(orders.refunds) == 2
    await state.close()


async def test_the_stored_result_expires_after_the_ttl(
    orders: Orders, make_records: Records
) -> None:
    clock = WallClock()
    registry, state = orders.registry(idempotency_ttl=60), PolicyState()
    db = make_records(clock)
    await refund(registry, state, db)
    clock.now += 59
    assert (await refund(registry, state, db)).cached
    clock.now += 1
    assert not (await refund(registry, state, db)).cached
    assert len(orders.refunds) == 2
    await state.close()


async def test_a_failed_call_is_not_stored(orders: Orders, db: IdempotencyRecords) -> None:
    registry, state = orders.registry(), PolicyState()
    orders.fail_next = True
    failed = await refund(registry, state, db)
    assert failed.error is not None
    assert failed.error.type == "execution_error"
    retried = await refund(registry, state, db)
    assert (retried.ok, retried.cached) == (True, False)
    assert len(orders.refunds) == 1
    await state.close()


async def test_concurrent_calls_with_one_key_run_once(
    orders: Orders, db: IdempotencyRecords
) -> None:
    registry, state = orders.registry(), PolicyState()
    orders.delay = 0.05
    results = await asyncio.gather(*(refund(registry, state, db) for _ in range(5)))
    assert len(orders.refunds) == 1
    assert sorted(r.cached for r in results) == [False, True, True, True, True]
    assert len({str(r.output) for r in results}) == 1
    assert len(state.key_locks) == 0  # no lock outlives its users
    await state.close()


async def test_a_call_cancelled_while_running_is_never_run_again_blindly(
    orders: Orders, db: IdempotencyRecords
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


async def test_a_call_that_timed_out_is_never_run_again_blindly(
    tmp_path: Path, db: IdempotencyRecords
) -> None:
    from hermes.tools import ToolRegistry, tool

    started: list[str] = []

    @tool(idempotency_key=("order",), timeout=0.2)
    def pay(order: str) -> str:
        """Pays, slowly (sync: its thread cannot be stopped)."""
        started.append(order)
        time.sleep(0.5)
        return "paid"

    registry, state = ToolRegistry([pay]), PolicyState()
    executor = ToolExecutor(registry, state=state, idempotency=db)
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


async def test_a_timeout_before_the_tool_ran_leaves_the_key_free(
    orders: Orders, db: IdempotencyRecords
) -> None:
    # Only a timeout while running makes the outcome unknown: a tool that never ran did nothing.
    state = PolicyState()
    executor = ToolExecutor(orders.registry(), state=state, idempotency=db)
    executor.insert(OutOfTimeOnce())
    call = ToolCall("c1", "refund", {"order_id": "A-1", "amount": 10})
    first = await executor.run(call, CallContext(user_id="u1"))
    second = await executor.run(call, CallContext(user_id="u1"))
    assert first.error is not None
    assert (first.error.type, first.attempts) == ("timeout", 0)
    assert (second.ok, second.cached) == (True, False)
    assert orders.refunds == [("A-1", 10)]
    await state.close()


async def test_a_bare_executor_keeps_its_keys_in_process_and_writes_no_file(
    orders: Orders, tmp_path: Path
) -> None:
    state = PolicyState()
    executor = ToolExecutor(orders.registry(), state=state)
    ctx = CallContext(call_id="c", user_id="u1", workspace=str(tmp_path))
    call = ToolCall("c", "refund", {"order_id": "A-9", "amount": 1})
    first, second = await executor.run(call, ctx), await executor.run(call, ctx)
    assert (first.cached, second.cached, len(orders.refunds)) == (False, True, 1)
    assert len(state.idempotency) == 1
    assert not (tmp_path / ".hermes").exists()
    await state.close()  # the process ends: its in-process records with it
    assert not (await executor.run(call, ctx)).cached


async def test_a_bare_executor_says_once_that_its_keys_do_not_outlive_the_process(
    orders: Orders, tmp_path: Path
) -> None:
    import json

    from hermes.observe import configure_logging, reset_logging

    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, level="INFO")
    try:
        executor = ToolExecutor(orders.registry(), state=PolicyState())
        ctx = CallContext(call_id="c", user_id="u1", workspace=str(tmp_path))
        for order in ("A-1", "A-2", "A-1"):
            await executor.run(ToolCall("c", "refund", {"order_id": order, "amount": 1}), ctx)
    finally:
        reset_logging()
    events = [json.loads(line) for line in log_file.read_text().splitlines()]
    warned = [e for e in events if e["event"] == "idempotency_in_process"]
    assert len(warned) == 1
    assert warned[0]["level"] == "warning"
    assert "idempotency=" in warned[0]["reason"]


class BrokenRecords(LocalIdempotencyRecords):
    """Records whose backend is down."""

    async def claim(self, tool: str, key: str, *, owner: str, lease: float) -> str | None:
        raise StoreError("the idempotency database is unavailable", action="claim")


async def test_an_unusable_store_refuses_the_call_without_running(orders: Orders) -> None:
    state = PolicyState()
    result = await refund(orders.registry(), state, BrokenRecords())
    assert result.error is not None
    assert result.error.type == "store_error"
    assert "idempotency record is unavailable" in result.error.message
    assert (orders.refunds, result.attempts) == ([], 0)


def test_idempotency_key_must_name_arguments() -> None:
    async def pay(order_id: str) -> None: ...

    with pytest.raises(ValueError, match=r"tool 'pay': idempotency_key names unknown arguments"):
        tool(name="pay", idempotency_key=("orderid",))(pay)
