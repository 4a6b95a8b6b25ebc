"""The executor with the memory tiers (seed 000 §2.4, §3.5): every executed call recorded in
L2 + L3, ``cache_ttl`` calls answered L1 → L2 + L3 per user and across restarts, recording in the
background when asked, and the plain path untouched without a ToolMemory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import ToolExecutionError
from hermes.memory.cache import MemoryCache
from hermes.memory.hashing import content_hash
from hermes.memory.step import Background, MemoryStep
from hermes.memory.tiers import ToolMemory, tool_fingerprint
from hermes.models.base import ToolCall
from hermes.tools import ToolRegistry, tool
from hermes.tools.base import Tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import PolicyState
from tests.memory.support import Clock

T0 = 1_800_000_000.0


class Counted:
    """Tools that count their runs."""

    def __init__(self) -> None:
        self.runs: list[str] = []

    def registry(self) -> ToolRegistry:
        runs = self.runs

        @tool(cache_ttl=600)
        def rate(currency: str) -> dict[str, Any]:
            """Exchange rate."""
            runs.append(currency)
            return {"currency": currency, "rate": len(runs), "summary": f"{currency} rate"}

        @tool
        def plain(n: int) -> int:
            """Echo."""
            runs.append(f"plain {n}")
            return n

        @tool
        def broken() -> None:
            """Always fails."""
            raise ToolExecutionError("the service is down")

        return ToolRegistry([rate, plain, broken])


class Process:
    """One 'process' worth of tiers on a shared directory (restart = a new ToolMemory)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.wall = Clock(T0)
        self.mono = Clock(100.0)
        self.opened: list[ToolMemory] = []

    def open(self) -> ToolMemory:
        memory = ToolMemory.open(self.root, cache=MemoryCache(clock=self.mono), clock=self.wall)
        self.opened.append(memory)
        return memory


@pytest.fixture
async def process(tmp_path: Path) -> AsyncIterator[Process]:
    made = Process(tmp_path / "mem")
    try:
        yield made
    finally:
        for memory in made.opened:
            await memory.close()


@dataclass
class Setup:
    """What a call runs with: the tiers (memory's pipeline step), the policy state, a
    background spawner for the recordings, and who calls."""

    memory: ToolMemory | None
    state: PolicyState
    background: Background | None = None
    session_id: str = "s-exec-0001"
    user: str | None = "u1"


def context(
    memory: ToolMemory | None,
    *,
    user: str | None = "u1",
    policy_state: PolicyState | None = None,
    background: Background | None = None,
    session_id: str = "s-exec-0001",
) -> Setup:
    return Setup(memory, policy_state or PolicyState(), background, session_id, user)


async def run(registry: ToolRegistry, setup: Setup, name: str, **arguments: Any) -> Any:
    """One call through a pipeline with memory's step in the cache's place (as an agent with
    a memory builds it), or the default pipeline without a memory."""
    executor = ToolExecutor(registry, state=setup.state)
    if setup.memory is not None:
        executor.replace("cache", MemoryStep(setup.memory, background=setup.background))
    ctx = CallContext(session_id=setup.session_id, user_id=setup.user, call_id="c1")
    return await executor.run(ToolCall("c1", name, arguments), ctx)


async def test_every_executed_call_is_recorded_and_refused_ones_are_not(
    process: Process,
) -> None:
    memory = process.open()
    registry = Counted().registry()
    ctx = context(memory)
    assert (await run(registry, ctx, "plain", n=1)).ok
    assert not (await run(registry, ctx, "broken")).ok
    refused = await run(registry, ctx, "plain", n="not a number")
    assert refused.error is not None
    assert refused.error.type == "invalid_arguments"

    records = (await memory.index.by_session("s-exec-0001", order="oldest")).records
    assert [(r.tool_name, r.status) for r in records] == [("plain", "ok"), ("broken", "error")]
    assert records[0].output_hash is not None  # the output is in L3
    assert await memory.archive.get(records[0].output_hash) == b"1"
    assert records[1].metadata["error_type"] == "execution_error"
    assert records[0].metadata["call_id"] == "c1"


async def test_a_cache_ttl_call_is_reused_from_l1_then_from_l2_l3_after_a_restart(
    process: Process,
) -> None:
    counted = Counted()
    registry = counted.registry()
    first = await run(registry, context(process.open()), "rate", currency="USD")
    same_process = await run(registry, context(process.opened[-1]), "rate", currency="USD")
    await process.opened[-1].close()
    restarted = await run(registry, context(process.open()), "rate", currency="USD")

    assert counted.runs == ["USD"]
    assert not first.cached
    assert same_process.cached
    assert restarted.cached
    assert restarted.attempts == 0
    assert restarted.output == first.output
    assert restarted.summary == "USD rate"


def tool_of(registry: ToolRegistry, name: str) -> Tool:
    found = registry.get(name)
    assert found is not None
    return found


def fingerprint_of(registry: ToolRegistry, name: str) -> str:
    """What the executor records as the tool's version (name, schemas, function)."""
    found = tool_of(registry, name)
    fn = found.fn
    where = f"{fn.__module__}.{fn.__qualname__}"
    return tool_fingerprint(found.name, found.parameters, [found.output_schema, where])


async def test_the_input_hash_is_of_the_arguments_alone_and_the_tool_version_apart(
    process: Process,
) -> None:
    runs: list[int] = []

    @tool(cache_ttl=600)
    def convert(amount: int, currency: str) -> dict[str, Any]:
        """Convert an amount."""
        runs.append(amount)
        return {"amount": amount, "currency": currency}

    registry = ToolRegistry([convert])
    memory = process.open()
    first = await run(registry, context(memory), "convert", amount=5, currency="USD")
    again = await run(registry, context(memory), "convert", currency="USD", amount=5)
    assert (first.cached, again.cached, runs) == (False, True, [5])

    records = (await memory.index.by_session("s-exec-0001", order="oldest")).records
    expected = content_hash({"amount": 5, "currency": "USD"})
    assert [r.input_hash for r in records] == [expected, expected]
    assert expected == content_hash({"currency": "USD", "amount": 5})
    version = fingerprint_of(registry, "convert")
    assert len(version) == 32
    assert [r.tool_version for r in records] == [version, version]


async def test_another_function_under_the_same_name_and_schema_is_not_reused(
    process: Process,
) -> None:
    counted = Counted()
    memory = process.open()
    await run(counted.registry(), context(memory), "rate", currency="USD")

    @tool(name="rate", cache_ttl=600)
    def rate_elsewhere(currency: str) -> dict[str, Any]:
        """Exchange rate."""
        counted.runs.append(f"elsewhere {currency}")
        return {"currency": currency, "rate": 0}

    other = ToolRegistry([rate_elsewhere])
    assert tool_of(other, "rate").parameters == tool_of(counted.registry(), "rate").parameters
    changed = await run(other, context(memory), "rate", currency="USD")
    await memory.close()
    after_restart = await run(other, context(process.open()), "rate", currency="USD")
    assert (changed.cached, changed.output["rate"]) == (False, 0)
    assert after_restart.cached  # its own result, not the first tool's
    assert after_restart.output == changed.output
    assert counted.runs == ["USD", "elsewhere USD"]


async def test_the_same_tool_rebuilt_after_a_restart_reuses_its_results(
    process: Process,
) -> None:
    counted = Counted()
    before = counted.registry()
    first = await run(before, context(process.open()), "rate", currency="CNY")
    await process.opened[-1].close()
    after = counted.registry()  # new Tool objects, as a new process builds them
    assert tool_of(after, "rate") is not tool_of(before, "rate")
    assert fingerprint_of(after, "rate") == fingerprint_of(before, "rate")
    again = await run(after, context(process.open()), "rate", currency="CNY")
    assert again.cached
    assert again.output == first.output
    assert counted.runs == ["CNY"]


async def test_reuse_never_crosses_users_or_anonymous_sessions(process: Process) -> None:
    counted = Counted()
    registry = counted.registry()
    memory = process.open()
    await run(registry, context(memory, user="u1"), "rate", currency="USD")
    other_user = await run(registry, context(memory, user="u2"), "rate", currency="USD")
    anonymous = await run(registry, context(memory, user=None), "rate", currency="USD")
    assert counted.runs == ["USD", "USD", "USD"]
    assert not other_user.cached
    assert not anonymous.cached


async def test_a_result_older_than_its_ttl_is_not_reused(process: Process) -> None:
    counted = Counted()
    registry = counted.registry()
    memory = process.open()
    await run(registry, context(memory), "rate", currency="USD")
    process.wall.now += 601
    process.mono.now += 601
    late = await run(registry, context(memory), "rate", currency="USD")
    assert counted.runs == ["USD", "USD"]
    assert not late.cached


class Spawner:
    """The background-work duck type: keeps the coroutines, runs them when told."""

    def __init__(self) -> None:
        self.work: list[tuple[str, Coroutine[Any, Any, Any]]] = []

    def spawn(self, work: Coroutine[Any, Any, Any], *, what: str) -> None:
        self.work.append((what, work))

    async def run_all(self) -> None:
        for _, work in self.work:
            await work
        self.work.clear()


async def test_recording_runs_in_the_background_when_a_spawner_is_given(
    process: Process,
) -> None:
    memory = process.open()
    spawner = Spawner()
    ctx = context(memory, background=spawner)
    result = await run(Counted().registry(), ctx, "plain", n=7)
    assert result.ok
    assert [what for what, _ in spawner.work] == ["tool_record"]
    assert len(await memory.index.by_session("s-exec-0001")) == 0  # not yet written
    await spawner.run_all()
    assert len(await memory.index.by_session("s-exec-0001")) == 1


async def test_a_broken_tool_memory_never_fails_the_call(process: Process) -> None:
    memory = process.open()
    await memory.close()  # the index refuses every read and write now
    counted = Counted()
    registry = counted.registry()
    first = await run(registry, context(memory), "rate", currency="USD")
    second = await run(registry, context(memory), "plain", n=2)
    assert first.ok
    assert second.ok


async def test_without_a_tool_memory_the_process_cache_answers_as_before(
    process: Process,
) -> None:
    counted = Counted()
    registry = counted.registry()
    state = PolicyState()
    ctx = context(None, policy_state=state, session_id="s-exec-0002")
    await run(registry, ctx, "rate", currency="EUR")
    again = await run(registry, ctx, "rate", currency="EUR")
    assert again.cached
    assert counted.runs == ["EUR"]
    assert process.opened == []  # no tiers were involved


async def test_with_a_tool_memory_the_process_cache_is_not_what_answers(
    process: Process,
) -> None:
    """The tiers replace the process-wide result cache (so reuse is per memory, per user)."""
    counted = Counted()
    registry = counted.registry()
    state = PolicyState()
    plain_ctx = context(None, policy_state=state, session_id="s-exec-0003")
    await run(registry, plain_ctx, "rate", currency="JPY")  # cached in the process cache
    with_memory = context(process.open(), policy_state=state)
    fresh = await run(registry, with_memory, "rate", currency="JPY")
    assert not fresh.cached
    assert counted.runs == ["JPY", "JPY"]


async def test_concurrent_identical_calls_are_all_recorded(process: Process) -> None:
    memory = process.open()
    registry = Counted().registry()
    ctx = context(memory)
    results = await asyncio.gather(*(run(registry, ctx, "plain", n=n) for n in range(5)))
    assert all(r.ok for r in results)
    assert len(await memory.index.by_session("s-exec-0001")) == 5
