"""Result cache (``cache_ttl``): reuse a recent identical successful result."""

from __future__ import annotations

from typing import Any

import pytest

from hermes.models.base import ToolCall
from hermes.tools import ToolRegistry, ToolResult, tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import PolicyState, ResultCache


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


class Rates:
    def __init__(self) -> None:
        self.lookups = 0
        self.fail = False

    def registry(self) -> ToolRegistry:
        def rate(base: str, quote: str = "EUR") -> dict[str, Any]:
            self.lookups += 1
            if self.fail:
                raise ConnectionResetError("rates service dropped the connection")
            return {"pair": f"{base}/{quote}", "rate": 1.1, "lookup": self.lookups}

        return ToolRegistry([tool(name="rate", cache_ttl=30, summary="{pair}")(rate)])


@pytest.fixture
def rates() -> Rates:
    return Rates()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def lookup(
    registry: ToolRegistry, state: PolicyState, user: str | None = "u1", **args: Any
) -> ToolResult:
    ctx = CallContext(user_id=user, call_id="c")
    executor = ToolExecutor(registry, state=state)
    return await executor.run(ToolCall("c", "rate", {"base": "USD", **args}), ctx)


async def test_an_identical_call_within_the_ttl_is_a_hit(rates: Rates, clock: FakeClock) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    first = await lookup(registry, state)
    clock.now += 29
    second = await lookup(registry, state)
    assert rates.lookups == 1
    assert (second.ok, second.cached, second.attempts) == (True, True, 0)
    assert (second.output, second.summary) == (first.output, "USD/EUR")


async def test_coerced_arguments_share_one_entry(rates: Rates, clock: FakeClock) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    await lookup(registry, state, quote="EUR")
    assert (await lookup(registry, state)).cached  # the default fills in the same value


async def test_different_arguments_miss(rates: Rates, clock: FakeClock) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    await lookup(registry, state)
    other = await lookup(registry, state, quote="JPY")
    assert (other.cached, rates.lookups) == (False, 2)


async def test_an_entry_expires_after_the_ttl(rates: Rates, clock: FakeClock) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    await lookup(registry, state)
    clock.now += 30
    assert not (await lookup(registry, state)).cached
    assert rates.lookups == 2


async def test_failures_are_not_cached(rates: Rates, clock: FakeClock) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    rates.fail = True
    assert not (await lookup(registry, state)).ok
    rates.fail = False
    result = await lookup(registry, state)
    assert (result.ok, result.cached, rates.lookups) == (True, False, 2)


async def test_users_never_share_entries(rates: Rates, clock: FakeClock) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    await lookup(registry, state, user="alice")
    assert not (await lookup(registry, state, user="bob")).cached


async def test_mutating_a_returned_output_does_not_change_the_cache(
    rates: Rates, clock: FakeClock
) -> None:
    registry, state = rates.registry(), PolicyState(clock=clock)
    (await lookup(registry, state)).output["rate"] = 999
    hit = await lookup(registry, state)
    assert hit.output["rate"] == 1.1
    hit.output["rate"] = 999
    assert (await lookup(registry, state)).output["rate"] == 1.1


def test_the_cache_is_bounded_least_recently_used_first(clock: FakeClock) -> None:
    cache = ResultCache(max_entries=2, clock=clock)
    cache.put(("t", "", "a"), 1, None, ttl=60)
    cache.put(("t", "", "b"), 2, None, ttl=60)
    assert cache.get(("t", "", "a")) is not None  # "a" is now the most recent
    cache.put(("t", "", "c"), 3, None, ttl=60)
    assert cache.get(("t", "", "b")) is None
    assert [cache.get(("t", "", k)).output() for k in "ac"] == [1, 3]  # type: ignore[union-attr]
    assert len(cache) == 2


def test_cache_ttl_must_be_positive() -> None:
    def plain() -> None: ...

    with pytest.raises(ValueError, match="tool 'plain': cache_ttl must be a positive number"):
        tool(name="plain", cache_ttl=0)(plain)
