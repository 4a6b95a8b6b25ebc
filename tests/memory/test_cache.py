"""L1: an in-process cache with namespaces, TTL and LRU eviction (seed 000 §2.4)."""

from __future__ import annotations

import math
import threading

import pytest

from hermes.memory.cache import (
    DEFAULT_TTL_S,
    SESSION_STATE,
    TOOL_RESULTS,
    WORKING_MEMORY,
    MemoryCache,
)
from tests.memory.support import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def cache(clock: Clock) -> MemoryCache:
    return MemoryCache(3, clock=clock)


def test_a_stored_value_is_returned_until_its_ttl_ends(cache: MemoryCache, clock: Clock) -> None:
    cache.put(WORKING_MEMORY, "order", "A-1", ttl=10)
    clock.now += 9.999
    assert cache.get(WORKING_MEMORY, "order") == "A-1"
    clock.now += 0.001
    assert cache.get(WORKING_MEMORY, "order") is None
    assert len(cache) == 0  # the expired entry was dropped when met


def test_the_default_ttl_is_ten_minutes(clock: Clock) -> None:
    cache = MemoryCache(clock=clock)
    assert cache.default_ttl == DEFAULT_TTL_S == 600
    cache.put(SESSION_STATE, "s1", {"state": "idle"})
    clock.now += 599
    assert cache.get(SESSION_STATE, "s1") == {"state": "idle"}
    clock.now += 1
    assert cache.get(SESSION_STATE, "s1", "gone") == "gone"


def test_namespaces_keep_equal_keys_apart(cache: MemoryCache) -> None:
    cache.put(SESSION_STATE, "k", "state")
    cache.put(WORKING_MEMORY, "k", "fact")
    assert cache.get(SESSION_STATE, "k") == "state"
    assert cache.get(WORKING_MEMORY, "k") == "fact"
    assert cache.get(TOOL_RESULTS, "k") is None


def test_when_full_the_least_recently_used_entry_goes_first(cache: MemoryCache) -> None:
    cache.put("ns", "a", 1)
    cache.put("ns", "b", 2)
    cache.put("ns", "c", 3)
    assert cache.get("ns", "a") == 1  # a is now the most recently used; b the least
    cache.put("ns", "d", 4)
    assert cache.get("ns", "b") is None
    assert [cache.get("ns", k) for k in "acd"] == [1, 3, 4]
    assert cache.stats().evicted == 1


def test_putting_an_existing_key_replaces_it_without_evicting(cache: MemoryCache) -> None:
    for key in "abc":
        cache.put("ns", key, key)
    cache.put("ns", "a", "A")
    assert len(cache) == 3
    assert cache.get("ns", "a") == "A"
    assert cache.stats().evicted == 0


def test_an_update_gets_a_fresh_ttl(cache: MemoryCache, clock: Clock) -> None:
    cache.put("ns", "k", 1, ttl=10)
    clock.now += 8
    cache.put("ns", "k", 2, ttl=10)
    clock.now += 8
    assert cache.get("ns", "k") == 2


def test_pop_removes_and_returns_only_live_values(cache: MemoryCache, clock: Clock) -> None:
    cache.put("ns", "live", 1)
    cache.put("ns", "old", 2, ttl=1)
    clock.now += 2
    assert cache.pop("ns", "live") == 1
    assert cache.pop("ns", "live") is None
    assert cache.pop("ns", "old", "expired") == "expired"


def test_items_lists_the_live_entries_of_one_namespace(cache: MemoryCache, clock: Clock) -> None:
    cache.put(WORKING_MEMORY, "a", 1)
    cache.put(WORKING_MEMORY, "b", 2, ttl=1)
    cache.put(SESSION_STATE, "c", 3)
    clock.now += 2
    assert cache.items(WORKING_MEMORY) == [("a", 1)]


def test_clear_empties_one_namespace_or_everything(cache: MemoryCache) -> None:
    cache.put(WORKING_MEMORY, "a", 1)
    cache.put(WORKING_MEMORY, "b", 2)
    cache.put(SESSION_STATE, "c", 3)
    assert cache.clear(WORKING_MEMORY) == 2
    assert cache.get(SESSION_STATE, "c") == 3
    assert cache.clear() == 1
    assert len(cache) == 0
    assert cache.stats().hits == 0


def test_discard_where_drops_matching_keys_of_one_namespace(cache: MemoryCache) -> None:
    cache.put(TOOL_RESULTS, ("tool", "u1", "h1"), 1)
    cache.put(TOOL_RESULTS, ("tool", "u2", "h1"), 2)
    cache.put(WORKING_MEMORY, ("tool", "u1", "h1"), 3)
    dropped = cache.discard_where(TOOL_RESULTS, lambda key: key[1] == "u1")  # type: ignore[index]
    assert dropped == 1
    assert cache.get(TOOL_RESULTS, ("tool", "u2", "h1")) == 2
    assert cache.get(WORKING_MEMORY, ("tool", "u1", "h1")) == 3


def test_purge_expired_drops_every_expired_entry(cache: MemoryCache, clock: Clock) -> None:
    cache.put("ns", "short", 1, ttl=1)
    cache.put("ns", "long", 2, ttl=100)
    clock.now += 5
    assert cache.purge_expired() == 1
    assert list(cache) == [("ns", "long")]


def test_stats_count_hits_misses_and_expiries(cache: MemoryCache, clock: Clock) -> None:
    cache.put("ns", "k", 1, ttl=1)
    cache.get("ns", "k")
    cache.get("ns", "missing")
    clock.now += 2
    cache.get("ns", "k")
    stats = cache.stats()
    assert (stats.hits, stats.misses, stats.expired, stats.entries) == (1, 2, 1, 0)


@pytest.mark.parametrize("ttl", [0, -1, math.nan])
def test_a_ttl_that_is_not_positive_is_refused(cache: MemoryCache, ttl: float) -> None:
    with pytest.raises(ValueError, match="positive"):
        cache.put("ns", "k", 1, ttl=ttl)
    with pytest.raises(ValueError, match="positive"):
        MemoryCache(default_ttl=ttl)


def test_a_cache_must_hold_at_least_one_entry() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        MemoryCache(0)


def test_concurrent_threads_never_exceed_the_bound_or_corrupt_the_order() -> None:
    cache = MemoryCache(100)
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(2000):
                cache.put("ns", (worker, i % 150), i)
                cache.get("ns", (worker, (i * 7) % 150))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert len(cache) == 100
    stats = cache.stats()
    assert stats.hits + stats.misses == 4 * 2000  # every get counted once
    assert stats.evicted > 0
