"""Circuit breaker: closed → open → half-open → closed/open, with a fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.models.base import ToolCall
from hermes.tools import ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import BreakerBoard, BreakerPolicy, CircuitBreaker, PolicyState


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def breaker(clock: FakeClock) -> CircuitBreaker:
    return CircuitBreaker("weather", BreakerPolicy(failures=3, reset_after=30), clock)


def fail(breaker: CircuitBreaker, times: int = 1) -> None:
    for _ in range(times):
        ticket = breaker.allow()
        assert ticket is not None
        breaker.record(ticket, failed=True)


def test_a_new_breaker_is_closed(breaker: CircuitBreaker) -> None:
    assert breaker.state == "closed"
    assert breaker.allow() == "run"


def test_opens_after_the_configured_consecutive_failures(breaker: CircuitBreaker) -> None:
    fail(breaker, 2)
    after_two = breaker.state
    fail(breaker)
    assert (after_two, breaker.state) == ("closed", "open")
    assert breaker.allow() is None


def test_a_success_resets_the_failure_count(breaker: CircuitBreaker) -> None:
    fail(breaker, 2)
    breaker.record("run", failed=False)
    fail(breaker, 2)
    assert (breaker.state, breaker.consecutive_failures) == ("closed", 2)


def test_open_turns_half_open_after_reset_after(breaker: CircuitBreaker, clock: FakeClock) -> None:
    fail(breaker, 3)
    clock.advance(29.9)
    assert breaker.allow() is None
    assert breaker.retry_in() == pytest.approx(0.1)
    clock.advance(0.1)
    assert breaker.state == "half_open"


def test_half_open_lets_exactly_one_probe_through(
    breaker: CircuitBreaker, clock: FakeClock
) -> None:
    fail(breaker, 3)
    clock.advance(30)
    assert breaker.allow() == "probe"
    assert breaker.allow() is None


def test_a_successful_probe_closes_the_circuit(breaker: CircuitBreaker, clock: FakeClock) -> None:
    fail(breaker, 3)
    clock.advance(30)
    breaker.record("probe", failed=False)
    assert (breaker.state, breaker.consecutive_failures) == ("closed", 0)
    assert breaker.allow() == "run"


def test_a_failed_probe_reopens_for_a_full_wait(breaker: CircuitBreaker, clock: FakeClock) -> None:
    fail(breaker, 3)
    clock.advance(30)
    assert breaker.allow() == "probe"
    breaker.record("probe", failed=True)
    assert breaker.state == "open"
    clock.advance(29)
    assert breaker.allow() is None
    clock.advance(1)
    assert breaker.allow() == "probe"


def test_a_probe_without_verdict_frees_the_slot(breaker: CircuitBreaker, clock: FakeClock) -> None:
    fail(breaker, 3)
    clock.advance(30)
    assert breaker.allow() == "probe"
    breaker.release("probe")
    assert breaker.state == "half_open"
    assert breaker.allow() == "probe"


def test_stragglers_from_before_the_opening_change_nothing(
    breaker: CircuitBreaker, clock: FakeClock
) -> None:
    late = breaker.allow()
    assert late == "run"
    fail(breaker, 3)
    breaker.record(late, failed=False)  # started while closed, ended after the opening
    assert breaker.state == "open"


def test_board_keys_breakers_by_tool_name(clock: FakeClock) -> None:
    board = BreakerBoard(clock)
    policy = BreakerPolicy()
    assert board.get("a", policy) is board.get("a", policy)
    assert board.get("a", policy) is not board.get("b", policy)
    assert board.get("a", BreakerPolicy(failures=2)).policy.failures == 2


def test_breaker_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="failures"):
        BreakerPolicy(failures=0)
    with pytest.raises(ValueError, match="reset_after"):
        BreakerPolicy(reset_after=0)
    with pytest.raises(TypeError, match="failures"):
        BreakerPolicy(failures=True)


# -- through the executor ------------------------------------------------------------------


class Upstream:
    def __init__(self) -> None:
        self.healthy = False
        self.runs = 0

    async def __call__(self) -> str:
        self.runs += 1
        if not self.healthy:
            raise ConnectionRefusedError("upstream down")
        return "fine"


@pytest.fixture
def upstream() -> Upstream:
    return Upstream()


@pytest.fixture
def registry(upstream: Upstream) -> ToolRegistry:
    async def probe_upstream() -> str:
        return await upstream()

    policy = BreakerPolicy(failures=2, reset_after=10)
    return ToolRegistry([tool(name="upstream", circuit_breaker=policy)(probe_upstream)])


async def call(registry: ToolRegistry, state: PolicyState, name: str = "upstream") -> ToolResult:
    executor = ToolExecutor(registry, state=state)
    return await executor.run(ToolCall("c1", name, {}), CallContext(call_id="c1"))


async def test_open_circuit_refuses_at_once_without_running(
    registry: ToolRegistry, upstream: Upstream, clock: FakeClock
) -> None:
    state = PolicyState(clock=clock)
    for _ in range(2):
        assert (await call(registry, state)).error.type == "execution_error"  # type: ignore[union-attr]
    refused = await call(registry, state)
    assert refused.error is not None
    assert refused.error.type == "service_unavailable"
    assert refused.error.message == (
        "tool 'upstream' is temporarily unavailable after repeated failures (circuit open); "
        "try again in 10 s"
    )
    assert (upstream.runs, refused.attempts) == (2, 0)


async def test_after_reset_a_probe_runs_and_success_closes(
    registry: ToolRegistry, upstream: Upstream, clock: FakeClock
) -> None:
    state = PolicyState(clock=clock)
    for _ in range(2):
        await call(registry, state)
    clock.advance(10)
    upstream.healthy = True
    assert (await call(registry, state)).ok
    assert state.breakers.peek("upstream").state == "closed"  # type: ignore[union-attr]
    assert (await call(registry, state)).ok
    assert upstream.runs == 4


async def test_after_reset_a_failed_probe_reopens(
    registry: ToolRegistry, upstream: Upstream, clock: FakeClock
) -> None:
    state = PolicyState(clock=clock)
    for _ in range(2):
        await call(registry, state)
    clock.advance(10)
    assert (await call(registry, state)).error.type == "execution_error"  # type: ignore[union-attr]
    assert (await call(registry, state)).error.type == "service_unavailable"  # type: ignore[union-attr]
    assert upstream.runs == 3


async def test_concurrent_calls_in_half_open_send_one_probe(clock: FakeClock) -> None:
    runs = 0
    gate = asyncio.Event()

    async def slow_probe() -> str:
        nonlocal runs
        runs += 1
        if runs <= 1:
            raise ConnectionResetError("down")
        await gate.wait()
        return "up"

    registry = ToolRegistry(
        [tool(name="slow", circuit_breaker=BreakerPolicy(failures=1, reset_after=5))(slow_probe)]
    )
    state = PolicyState(clock=clock)
    await call(registry, state, "slow")
    clock.advance(5)
    probe = asyncio.create_task(call(registry, state, "slow"))
    await asyncio.sleep(0)
    others = [await call(registry, state, "slow") for _ in range(3)]
    gate.set()
    assert (await probe).ok
    assert {r.error.type for r in others if r.error} == {"service_unavailable"}
    assert runs == 2


async def test_caller_errors_do_not_trip_the_breaker(clock: FakeClock) -> None:
    async def picky(city: str) -> str:
        raise ToolArgumentError([FieldProblem("city", f"unknown city {city!r}")])

    registry = ToolRegistry([tool(name="picky", circuit_breaker=BreakerPolicy(failures=1))(picky)])
    state = PolicyState(clock=clock)
    executor = ToolExecutor(registry, state=state)
    for _ in range(3):
        result = await executor.run(ToolCall("c", "picky", {"city": "X"}), CallContext(call_id="c"))
        assert result.error is not None
        assert result.error.type == "invalid_arguments"
    assert state.breakers.peek("picky").state == "closed"  # type: ignore[union-attr]


async def test_invalid_arguments_never_reach_the_breaker(
    registry: ToolRegistry, clock: FakeClock
) -> None:
    state = PolicyState(clock=clock)
    executor = ToolExecutor(registry, state=state)
    result = await executor.run(ToolCall("c", "upstream", {"x": 1}), CallContext(call_id="c"))
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert state.breakers.peek("upstream") is None


async def test_breakers_are_shared_by_tool_name_across_registries(
    upstream: Upstream, clock: FakeClock
) -> None:
    async def upstream_call() -> str:
        return await upstream()

    def build() -> ToolRegistry:
        options: dict[str, Any] = {"circuit_breaker": BreakerPolicy(failures=1)}
        return ToolRegistry([tool(name="shared", **options)(upstream_call)])

    state = PolicyState(clock=clock)
    await call(build(), state, "shared")
    result = await call(build(), state, "shared")
    assert result.error is not None
    assert result.error.type == "service_unavailable"


async def test_circuit_breaker_true_means_the_default_policy() -> None:
    @tool(circuit_breaker=True)
    def guarded() -> None: ...

    assert guarded.__hermes_tool__.circuit_breaker == BreakerPolicy(failures=5, reset_after=30)  # type: ignore[attr-defined]


async def test_with_under_a_second_left_the_refusal_says_1_s(
    registry: ToolRegistry, clock: FakeClock
) -> None:
    state = PolicyState(clock=clock)
    for _ in range(2):
        await call(registry, state)
    clock.advance(9.5)
    refused = await call(registry, state)
    assert refused.error is not None
    assert refused.error.message.endswith("(circuit open); try again in 1 s")


class Probe:
    """An upstream tool whose next run is scripted: ``down``, ``wrong_city`` (the caller's
    error: no verdict on the upstream's health), ``hang`` (until cancelled) or ``up``."""

    def __init__(self) -> None:
        self.next = "down"
        self.runs = 0
        self.hanging = asyncio.Event()

    def registry(self) -> ToolRegistry:
        async def forecast() -> str:
            self.runs += 1
            if self.next == "down":
                raise ConnectionRefusedError("upstream down")
            if self.next == "wrong_city":
                raise ToolArgumentError([FieldProblem("city", "unknown city")])
            if self.next == "hang":
                self.hanging.set()
                await asyncio.sleep(30)
            return "sunny"

        policy = BreakerPolicy(failures=1, reset_after=10)
        return ToolRegistry([tool(name="forecast", circuit_breaker=policy)(forecast)])


async def test_a_probe_without_a_verdict_lets_the_next_call_probe(clock: FakeClock) -> None:
    probe, state = Probe(), PolicyState(clock=clock)
    registry = probe.registry()
    await call(registry, state, "forecast")  # opens the circuit
    clock.advance(10)
    probe.next = "wrong_city"
    assert (await call(registry, state, "forecast")).error.type == "invalid_arguments"  # type: ignore[union-attr]
    probe.next = "up"
    assert (await call(registry, state, "forecast")).ok
    assert probe.runs == 3


async def test_a_cancelled_probe_lets_the_next_call_probe(clock: FakeClock) -> None:
    probe, state = Probe(), PolicyState(clock=clock)
    registry = probe.registry()
    await call(registry, state, "forecast")  # opens the circuit
    clock.advance(10)
    probe.next = "hang"
    hanging = asyncio.create_task(call(registry, state, "forecast"))
    await probe.hanging.wait()
    hanging.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hanging
    probe.next = "up"
    assert (await call(registry, state, "forecast")).ok
    assert probe.runs == 3
