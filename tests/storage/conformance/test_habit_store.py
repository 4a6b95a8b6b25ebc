"""The HabitStore contract (``hermes.memory.habits.HabitStore``): each user's habit counts as
one JSON document. Every backend (``tests.storage.backends.MEMORY_BACKENDS``) must pass every
test here."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from hermes.errors import InvalidIdError
from hermes.memory.habits import HabitCounter, HabitStore
from hermes.memory.store import MemoryStore
from tests.storage.backends import MemoryBackend

NOW = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)


def test_the_memory_store_is_a_habit_store(memory_store: MemoryStore) -> None:
    assert isinstance(memory_store, HabitStore)


async def test_a_user_without_habits_loads_none(memory_store: MemoryStore) -> None:
    assert await memory_store.load_habits("u1") is None


async def test_saved_counts_load_as_saved(memory_store: MemoryStore) -> None:
    data = {"version": 1, "counts": {"get_weather|city=上海": 3}, "emitted": []}
    await memory_store.save_habits("u1", data)
    assert await memory_store.load_habits("u1") == data


async def test_a_save_replaces_the_document(memory_store: MemoryStore) -> None:
    await memory_store.save_habits("u1", {"counts": {"a": 1, "b": 2}})
    await memory_store.save_habits("u1", {"counts": {"a": 2}})
    assert await memory_store.load_habits("u1") == {"counts": {"a": 2}}


async def test_users_are_kept_apart(memory_store: MemoryStore) -> None:
    await memory_store.save_habits("u1", {"counts": {"a": 4}})
    await memory_store.save_habits("u2", {"counts": {"b": 1}})
    assert await memory_store.load_habits("u1") == {"counts": {"a": 4}}
    assert await memory_store.load_habits("u2") == {"counts": {"b": 1}}
    assert await memory_store.delete_habits("u1") == 1
    assert await memory_store.load_habits("u2") == {"counts": {"b": 1}}


async def test_delete_says_whether_there_was_a_document(memory_store: MemoryStore) -> None:
    assert await memory_store.delete_habits("u1") == 0
    await memory_store.save_habits("u1", {"counts": {}})
    assert await memory_store.delete_habits("u1") == 1
    assert await memory_store.load_habits("u1") is None
    assert await memory_store.delete_habits("u1") == 0


async def test_a_counter_round_trips(memory_store: MemoryStore) -> None:
    counter = HabitCounter(user_id="u1")
    for _ in range(3):
        assert counter.observe_tool_call("get_weather", {"city": "上海"}, now=NOW) == []
    await memory_store.save_habits("u1", counter.to_dict())
    again = HabitCounter.from_dict(await memory_store.load_habits("u1"), user_id="u1")
    assert [
        c.content for c in again.observe_tool_call("get_weather", {"city": "上海"}, now=NOW)
    ] == ["用户经常用 get_weather 查询 city=上海"]


async def test_concurrent_saves_of_different_users_all_land(memory_store: MemoryStore) -> None:
    users = [f"u{i}" for i in range(20)]
    await asyncio.gather(*(memory_store.save_habits(u, {"n": i}) for i, u in enumerate(users)))
    assert [await memory_store.load_habits(u) for u in users] == [{"n": i} for i in range(20)]


@pytest.mark.parametrize("user_id", ["", "a b", "x" * 1000])
async def test_an_invalid_user_id_is_refused(memory_store: MemoryStore, user_id: str) -> None:
    with pytest.raises(InvalidIdError):
        await memory_store.save_habits(user_id, {})
    with pytest.raises(InvalidIdError):
        await memory_store.load_habits(user_id)


async def test_counts_survive_a_reopen(memory_backend: MemoryBackend) -> None:
    if not memory_backend.durable:
        pytest.skip(f"{memory_backend.name} keeps nothing once closed")
    first = memory_backend.open()
    await first.save_habits("u1", {"counts": {"a": 4}})
    await first.close()
    again = memory_backend.open()
    try:
        assert await again.load_habits("u1") == {"counts": {"a": 4}}
    finally:
        await again.close()
