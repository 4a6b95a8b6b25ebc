"""Implicit habits: a behaviour seen more than 3 times becomes a habit candidate (off by
default)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory.extract import MemoryCandidate
from hermes.memory.habits import Behaviour, HabitCounter, tool_behaviours

T0 = datetime(2025, 1, 6, 8, 0, tzinfo=UTC)


def behaviour(name: str) -> Behaviour:
    return Behaviour(
        f"intent:{name}", f"用户经常提出「{name}」类请求", f"The user often asks for {name}"
    )


def weather_calls(
    counter: HabitCounter, times: int, city: str = "上海"
) -> list[list[MemoryCandidate]]:
    return [
        list(counter.observe_tool_call("get_weather", {"city": city}, now=T0 + timedelta(days=i)))
        for i in range(times)
    ]


def test_the_fourth_time_is_a_habit_and_it_is_reported_once() -> None:
    counter = HabitCounter("u1")
    results = weather_calls(counter, 6)
    assert results[:3] == [[], [], []]
    (habit,) = results[3]
    assert results[4:] == [[], []]
    assert habit.kind == "habit"
    assert habit.content == "用户经常用 get_weather 查询 city=上海"
    assert habit.confidence >= 0.8
    assert counter.count("tool:get_weather|city=上海") == 6


def test_the_tool_alone_becomes_a_habit_when_its_arguments_vary() -> None:
    counter = HabitCounter("u1")
    found: list[MemoryCandidate] = []
    for city in ["北京", "上海", "广州", "深圳"]:
        found += counter.observe_tool_call("get_weather", {"city": city}, now=T0, lang="en")
    assert [c.content for c in found] == ["The user often uses get_weather"]


def test_free_text_long_and_sensitive_values_are_not_behaviours() -> None:
    keys = [b.key for b in tool_behaviours("t", {
        "query": "weather", "expression": "2+3", "order_id": "ORD1", "note": "x",
        "city": "x" * 100, "phone_no": "13812345678", "amount": 3.5, "tags": ["a"],
        "unit": "celsius", "days": 3, "verbose": True,
    })]  # fmt: skip
    assert keys == ["tool:t", "tool:t|unit=celsius", "tool:t|days=3", "tool:t|verbose=true"]


def test_a_threshold_can_be_configured() -> None:
    counter = HabitCounter("u1", threshold=1)
    assert counter.observe(behaviour("x"), now=T0) is None
    assert counter.observe(behaviour("x"), now=T0) is not None


def test_with_a_window_an_old_count_starts_over() -> None:
    counter = HabitCounter("u1", window_days=7)
    weather = behaviour("weather")
    for day in (0, 1, 2):
        counter.observe(weather, now=T0 + timedelta(days=day))
    assert counter.observe(weather, now=T0 + timedelta(days=30)) is None
    assert counter.count(weather.key) == 1


def test_the_number_of_behaviours_is_bounded() -> None:
    counter = HabitCounter("u1", max_behaviours=10)
    for i in range(25):
        counter.observe(behaviour(f"i{i}"), now=T0 + timedelta(minutes=i))
    assert len(counter) == 10
    assert counter.count("intent:i24") == 1
    assert counter.count("intent:i0") == 0


def test_counts_round_trip_through_json_and_a_reported_habit_stays_reported() -> None:
    counter = HabitCounter("u1")
    weather_calls(counter, 4)
    saved = json.loads(json.dumps(counter.to_dict(), ensure_ascii=False))
    again = HabitCounter.from_dict(saved, user_id="u1")
    assert again.to_dict() == counter.to_dict()
    assert weather_calls(again, 1) == [[]]  # already reported before the restart


def test_saved_counts_of_another_user_are_never_loaded() -> None:
    counter = HabitCounter("alice")
    weather_calls(counter, 3)
    bob = HabitCounter.from_dict(counter.to_dict(), user_id="bob")
    assert len(bob) == 0
    assert bob.user_id == "bob"


@pytest.mark.parametrize(
    "data",
    [None, "x", 3, {"user_id": "u1", "counts": "x"}, {"user_id": "u1", "counts": {"k": [1]}},
     {"user_id": "u1", "threshold": "3",
      "counts": {"k": ["1", 0, 0, False], "j": [2, 0, 0, True]}}],
)  # fmt: skip
def test_damaged_saved_data_is_dropped_not_raised(data: object) -> None:
    counter = HabitCounter.from_dict(data, user_id="u1")
    assert counter.threshold == 3
    assert counter.count("k") == 0


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        HabitCounter("u1", threshold=0)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=10),
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=True)
        | st.text(max_size=50),
        max_size=5,
    )
)
def test_any_arguments_can_be_observed(arguments: dict[str, object]) -> None:
    counter = HabitCounter("u1")
    for _ in range(5):
        counter.observe_tool_call("tool", arguments, now=T0)
    HabitCounter.from_dict(json.loads(json.dumps(counter.to_dict())), user_id="u1")


async def test_a_store_in_memory_keeps_habits_too() -> None:
    # The long-term store keeps the counts (its HabitStore side), so a ":memory:" store
    # counts habits like a file does (the facade's own table once needed a directory).
    from hermes.memory.facade import Memory
    from hermes.storage.sqlite.memories import SQLiteMemoryStore

    memory = Memory(SQLiteMemoryStore(":memory:", embedder=None, lexicon=None), habits=True)
    try:
        for _ in range(4):
            await memory.learn("u1", "", calls=[("get_weather", {"city": "上海"}, True)])
        assert memory.store is not None
        habits = await memory.store.list("u1", kind="habit")
        assert [h.content for h in habits] == ["用户经常用 get_weather 查询 city=上海"]
    finally:
        await memory.aclose()
