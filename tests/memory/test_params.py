"""Filling missing required tool arguments from memory (seed 001 §6.1–6.2)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.memory.params import FilledArgument, describe_filled, fill_missing
from hermes.memory.records import MemoryHit, MemoryRecord
from hermes.memory.working import WorkingMemory

NOW = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "城市名称，如北京"},
        "days": {"type": "integer", "description": "预报天数"},
    },
    "required": ["city"],
}
ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "pattern": "^ORD\\d+$"}},
    "required": ["order_id"],
}


def record(content: str, *, id: str = "m1", kind: str = "fact", sensitive: bool = False) -> Any:
    return MemoryRecord(
        id=id, user_id="u1", kind=kind, content=content, confidence=0.9,  # type: ignore[arg-type]
        source_session=None, created_at=0.0, updated_at=0.0, last_recalled_at=None,
        recall_count=0, expires_at=None, superseded_by=None, sensitive=sensitive,
        topic=None, tags=(),
    )  # fmt: skip


def weather_memory(city: str = "北京") -> WorkingMemory:
    memory = WorkingMemory()
    memory.observe_tool_call("get_weather", {"city": city, "days": 3}, ok=True, now=NOW)
    return memory


# -- precedence ----------------------------------------------------------------------------


def test_a_city_the_user_once_gave_fills_a_missing_city() -> None:
    args, filled = fill_missing(WEATHER, {}, recalled=[("用户住在上海。", "fact")])
    assert args == {"city": "上海"}
    assert filled == [FilledArgument("city", "上海", "memory", "用户住在上海。", "城市名称", None)]
    assert filled[0].describe("zh") == "用了你之前告诉我的城市名称：上海"
    assert filled[0].describe("en") == "used your 城市名称 from what you told me before: 上海"


@pytest.mark.parametrize(
    ("content", "city"),
    [
        ("我住在上海", "上海"),
        ("The user lives in Berlin.", "Berlin"),
        ("I live in Paris, near the river", "Paris"),
        ("用户的城市是杭州。", "杭州"),
        ("my city is Lyon", "Lyon"),
        ("The user's home city is Oslo.", "Oslo"),
    ],
)
def test_city_statements_in_both_languages_fill_a_city(content: str, city: str) -> None:
    args, _ = fill_missing(WEATHER, {}, recalled=[(content, "fact")])
    assert args == {"city": city}


def test_working_memory_wins_over_long_term_memory() -> None:
    args, filled = fill_missing(
        WEATHER, {}, working=weather_memory("北京"), recalled=[("用户住在上海。", "fact")],
        tool_name="get_weather",
    )  # fmt: skip
    assert args == {"city": "北京"}
    assert (filled[0].source, filled[0].origin) == ("working_call", "get_weather")
    assert describe_filled(filled) == "沿用了上次 get_weather 的城市名称：北京"


def test_the_same_tools_last_call_wins_over_another_tools() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("get_weather", {"city": "北京"}, ok=True, now=NOW)
    memory.observe_tool_call("get_air_quality", {"city": "广州"}, ok=True, now=NOW)
    args, _filled = fill_missing(WEATHER, {}, working=memory, tool_name="get_weather")
    assert args == {"city": "北京"}
    other, _ = fill_missing(WEATHER, {}, working=memory, tool_name="get_forecast")
    assert other == {"city": "广州"}  # no own call: the most recent call with a city


def test_a_fact_of_the_session_fills_an_argument_of_its_kind() -> None:
    memory = WorkingMemory()
    memory.observe_user("帮我看看订单ORD20250101", now=NOW)
    args, filled = fill_missing(ORDER, {}, working=memory, recalled=[("用户的订单是ORD1", "fact")])
    assert args == {"order_id": "ORD20250101"}
    assert (filled[0].source, filled[0].origin) == ("working_fact", "order_id")
    assert filled[0].describe("zh") == "用了本次对话中提到的order_id：ORD20250101"


def test_long_term_memory_is_used_when_the_session_has_nothing() -> None:
    args, filled = fill_missing(
        WEATHER, {}, working=WorkingMemory(), recalled=[record("用户住在上海。", id="mem-7")]
    )
    assert args == {"city": "上海"}
    assert filled[0].memory_id == "mem-7"


def test_recalled_items_are_tried_in_the_order_given() -> None:
    args, _ = fill_missing(
        WEATHER, {}, recalled=[("用户喜欢喝茶。", "preference"), ("用户住在深圳", "fact"),
                               ("用户住在上海", "fact")],
    )  # fmt: skip
    assert args == {"city": "深圳"}


def test_memory_hits_and_records_are_accepted() -> None:
    hit = MemoryHit(record("The user lives in Rome.", id="r1"), 0.8, 0.8, None)
    args, filled = fill_missing(WEATHER, {}, recalled=[hit])
    assert args == {"city": "Rome"}
    assert filled[0].memory_id == "r1"

    @dataclass
    class Plain:
        content: str
        kind: str

    assert fill_missing(WEATHER, {}, recalled=[Plain("我住在成都", "fact")])[0] == {"city": "成都"}


# -- never override, only fill what is required --------------------------------------------


@pytest.mark.parametrize("given_value", ["广州", "", None, 0])
def test_an_argument_given_explicitly_is_never_replaced(given_value: object) -> None:
    args, filled = fill_missing(
        WEATHER, {"city": given_value}, working=weather_memory(),
        recalled=[("用户住在上海。", "fact")], tool_name="get_weather",
    )  # fmt: skip
    assert args == {"city": given_value}
    assert filled == []


def test_optional_arguments_are_not_filled() -> None:
    args, _ = fill_missing(
        WEATHER, {"city": "广州"}, working=weather_memory(), tool_name="get_weather"
    )
    assert args == {"city": "广州"}  # days (3 last time) is optional: left to the tool's default


def test_the_callers_arguments_are_not_mutated() -> None:
    given: dict[str, Any] = {"days": 2}
    args, _ = fill_missing(WEATHER, given, recalled=[("用户住在上海", "fact")])
    assert given == {"days": 2}
    assert args == {"days": 2, "city": "上海"}


def test_nothing_to_fill_from_leaves_the_argument_missing() -> None:
    assert fill_missing(WEATHER, {}) == ({}, [])
    assert fill_missing(WEATHER, {}, working=WorkingMemory(), recalled=[("用户喜欢猫", "x")]) == (
        {},
        [],
    )


@pytest.mark.parametrize(
    "schema", [{}, {"type": "object"}, {"properties": {"a": {}}}, {"required": "city"}]
)
def test_schemas_without_required_properties_change_nothing(schema: dict[str, Any]) -> None:
    assert fill_missing(schema, {"x": 1}, working=weather_memory()) == ({"x": 1}, [])


def test_arguments_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="mapping"):
        fill_missing(WEATHER, ["city"], working=weather_memory())  # type: ignore[arg-type]


# -- types and safety ----------------------------------------------------------------------


def test_values_are_coerced_to_the_declared_type() -> None:
    schema = {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}
    memory = WorkingMemory()
    memory.observe_tool_call("other", {"days": "5"}, ok=True, now=NOW)
    assert fill_missing(schema, {}, working=memory)[0] == {"days": 5}
    text = {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}
    memory.observe_tool_call("geo", {"zip": 200000}, ok=True, now=NOW)
    assert fill_missing(text, {}, working=memory)[0] == {"zip": "200000"}


def test_values_that_do_not_fit_the_schema_are_skipped() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("a", {"order_id": "X-1"}, ok=True, now=NOW)  # breaks the pattern
    memory.observe_user("订单ORD42", now=NOW)
    args, filled = fill_missing(ORDER, {}, working=memory)
    assert args == {"order_id": "ORD42"}
    assert filled[0].source == "working_fact"
    integer = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    memory.observe_tool_call("b", {"n": "many"}, ok=True, now=NOW)
    assert fill_missing(integer, {}, working=memory) == ({}, [])


def test_enum_values_match_case_insensitively_and_others_are_refused() -> None:
    schema = {
        "type": "object",
        "properties": {"unit": {"type": "string", "enum": ["Celsius", "Fahrenheit"]}},
        "required": ["unit"],
    }
    memory = WorkingMemory()
    memory.observe_tool_call("t", {"unit": "celsius"}, ok=True, now=NOW)
    assert fill_missing(schema, {}, working=memory)[0] == {"unit": "Celsius"}
    other = WorkingMemory()
    other.observe_tool_call("t", {"unit": "kelvin"}, ok=True, now=NOW)
    assert fill_missing(schema, {}, working=other)[0] == {}


def test_formats_are_checked() -> None:
    schema = {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email"}},
        "required": ["email"],
    }
    good = [("The user's email address is bob@example.com.", "fact")]
    bad = [("The user's email is not given.", "fact")]
    assert fill_missing(schema, {}, recalled=good)[0] == {"email": "bob@example.com"}
    assert fill_missing(schema, {}, recalled=bad)[0] == {}


def test_a_failed_calls_arguments_are_not_reused() -> None:
    memory = WorkingMemory()
    memory.observe_tool_call("get_weather", {"city": "Atlantis"}, ok=False, now=NOW)
    assert fill_missing(WEATHER, {}, working=memory, tool_name="get_weather") == ({}, [])


def test_a_date_argument_takes_the_session_date_but_a_range_end_does_not() -> None:
    memory = WorkingMemory()
    memory.observe_user("帮我订明天的会议室", now=NOW)
    one_day = {"type": "object", "properties": {"date": {"type": "string", "format": "date"}},
               "required": ["date"]}  # fmt: skip
    ranged = {"type": "object", "properties": {"start_date": {"type": "string"}},
              "required": ["start_date"]}  # fmt: skip
    assert fill_missing(one_day, {}, working=memory)[0] == {"date": "2025-01-11"}
    assert fill_missing(ranged, {}, working=memory)[0] == {}


def test_a_generic_name_argument_is_not_filled_with_the_users_name() -> None:
    name = {"type": "object",
            "properties": {"name": {"type": "string", "description": "file name"}},
            "required": ["name"]}  # fmt: skip
    user = {"type": "object", "properties": {"user_name": {"type": "string"}},
            "required": ["user_name"]}  # fmt: skip
    memories = [("用户叫小明。", "fact")]
    assert fill_missing(name, {}, recalled=memories) == ({}, [])
    assert fill_missing(user, {}, recalled=memories)[0] == {"user_name": "小明"}


def test_sensitive_memories_never_fill_arguments() -> None:
    schema = {"type": "object", "properties": {"phone": {"type": "string"}}, "required": ["phone"]}
    secret = record("用户的手机号是13812345678。", sensitive=True)
    assert fill_missing(schema, {}, recalled=[secret]) == ({}, [])


def test_structured_values_are_never_filled() -> None:
    schema = {"type": "object", "properties": {"filter": {}}, "required": ["filter"]}
    memory = WorkingMemory()
    memory.observe_tool_call("search", {"filter": {"a": 1}}, ok=True, now=NOW)
    assert fill_missing(schema, {}, working=memory) == ({}, [])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["city", "days", "x"]), st.none() | st.text(max_size=5)),
    st.lists(st.text(max_size=60), max_size=4),
)
def test_given_arguments_always_survive(given: dict[str, Any], contents: list[str]) -> None:
    args, filled = fill_missing(
        WEATHER, given, working=weather_memory(), recalled=[(c, "fact") for c in contents],
        tool_name="get_weather",
    )  # fmt: skip
    assert {k: args[k] for k in given} == given
    assert {f.name for f in filled} <= {"city"} - set(given)


@pytest.mark.parametrize("name", ["sort_order", "update", "profile", "end_date", "date_to"])
def test_arguments_are_not_of_a_kind_by_a_substring_of_their_name(name: str) -> None:
    memory = WorkingMemory()
    memory.observe_user("订单ORD42，文件 a.csv，明天", now=NOW)
    schema = {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}
    assert fill_missing(schema, {}, working=memory) == ({}, [])


@pytest.mark.parametrize(
    ("name", "value"),
    [("orderId", "ORD42"), ("input_file", "a.csv"), ("due_date", "2025-01-11"),
     ("file_path", "a.csv")],
)  # fmt: skip
def test_arguments_are_of_a_kind_by_their_name_or_last_word(name: str, value: str) -> None:
    memory = WorkingMemory()
    memory.observe_user("订单ORD42，文件 a.csv，明天", now=NOW)
    schema = {"type": "object", "properties": {name: {"type": "string"}}, "required": [name]}
    assert fill_missing(schema, {}, working=memory)[0] == {name: value}
