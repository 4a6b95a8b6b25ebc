"""The end of the pipeline: sandbox, parser, output schema, post_validate, output limits."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import sandbox_targets as targets
from pydantic import BaseModel

from hermes.models.base import ToolCall
from hermes.tools import Tool, ToolContext, ToolRegistry, ToolResult, execute_tool_call, tool
from hermes.tools.decorator import make_tool
from hermes.tools.pipeline import CallContext, ToolExecutor


async def run(registry: ToolRegistry, name: str, max_output_chars: int = 20_000, **args: Any):  # type: ignore[no-untyped-def]
    ctx = ToolContext(call_id="c")
    call = ToolCall("c", name, args)
    result: ToolResult = await execute_tool_call(
        registry, call, ctx, max_output_chars=max_output_chars
    )
    return result


def raw_weather(city: str) -> str:
    return f"{city};21.5;sunny"


def parse_weather(raw: str) -> dict[str, Any]:
    city, temp, sky = raw.split(";")
    return {"city": city, "temp_c": float(temp), "sky": sky}


WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"temp_c": {"type": "number", "minimum": -90, "maximum": 60}},
    "required": ["city", "temp_c"],
}


async def test_the_parser_turns_raw_output_into_structured_output() -> None:
    registry = ToolRegistry([tool(name="weather", parser=parse_weather)(raw_weather)])
    result = await run(registry, "weather", city="Rome")
    assert result.output == {"city": "Rome", "temp_c": 21.5, "sky": "sunny"}


async def test_the_summary_is_made_from_the_parsed_output() -> None:
    weather = tool(name="weather", parser=parse_weather, summary="{city}: {temp_c} °C")(raw_weather)
    result = await run(ToolRegistry([weather]), "weather", city="Rome")
    assert result.summary == "Rome: 21.5 °C"


async def test_a_failing_parser_is_invalid_output() -> None:
    def garbage(city: str) -> str:
        return "<html>upstream error page</html>"

    registry = ToolRegistry([tool(name="weather", parser=parse_weather)(garbage)])
    result = await run(registry, "weather", city="Rome")
    assert result.error is not None
    assert result.error.type == "invalid_output"
    assert result.error.message.startswith("the parser of tool 'weather' failed: ValueError:")
    assert result.attempts == 1


async def test_output_matching_the_schema_passes() -> None:
    weather = tool(name="weather", parser=parse_weather, output_schema=WEATHER_SCHEMA)(raw_weather)
    assert (await run(ToolRegistry([weather]), "weather", city="Rome")).ok


async def test_output_breaking_the_schema_is_invalid_output_naming_the_field() -> None:
    def too_hot(city: str) -> dict[str, Any]:
        return {"city": city, "temp_c": 451}

    registry = ToolRegistry([tool(name="weather", output_schema=WEATHER_SCHEMA)(too_hot)])
    result = await run(registry, "weather", city="Rome")
    assert result.error is not None
    assert result.error.type == "invalid_output"
    assert result.error.message.startswith(
        "output of tool 'weather' does not match its output schema: temp_c:"
    )


class Reading(BaseModel):
    city: str
    temp_c: float


async def test_the_schema_checks_the_json_form_of_rich_outputs() -> None:
    def reading(city: str) -> Reading:
        return Reading(city=city, temp_c=12)

    registry = ToolRegistry([tool(name="weather", output_schema=WEATHER_SCHEMA)(reading)])
    assert (await run(registry, "weather", city="Oslo")).output == {"city": "Oslo", "temp_c": 12.0}


async def test_post_validate_rejecting_the_output_is_invalid_output() -> None:
    def plausible(output: dict[str, Any]) -> None:
        if output["sky"] not in {"sunny", "cloudy", "rain"}:
            raise ValueError(f"unknown sky {output['sky']!r}")

    def odd_sky(city: str) -> str:
        return f"{city};20;purple"

    registry = ToolRegistry(
        [tool(name="weather", parser=parse_weather, post_validate=plausible)(odd_sky)]
    )
    result = await run(registry, "weather", city="Rome")
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "invalid_output",
        "output of tool 'weather' was rejected: ValueError: unknown sky 'purple'",
    )


async def test_post_validate_gets_the_parsed_output() -> None:
    seen: list[Any] = []
    weather = tool(name="weather", parser=parse_weather, post_validate=seen.append)(raw_weather)
    assert (await run(ToolRegistry([weather]), "weather", city="Rome")).ok
    assert seen == [{"city": "Rome", "temp_c": 21.5, "sky": "sunny"}]


async def test_the_tools_own_output_limit_wins_over_the_callers() -> None:
    def long_text(size: int) -> str:
        return "x" * size

    registry = ToolRegistry([tool(name="long_text", max_output_chars=5)(long_text)])
    result = await run(registry, "long_text", max_output_chars=1000, size=20)
    assert result.output == "xxxxx\n…[truncated: showing 5 of 20 characters]"


async def test_a_limit_of_zero_keeps_no_text_only_the_note() -> None:
    def long_text(size: int) -> str:
        return "x" * size

    registry = ToolRegistry([tool(name="long_text")(long_text)])
    result = await run(registry, "long_text", max_output_chars=0, size=20)
    assert result.output == "\n…[truncated: showing 0 of 20 characters]"


def count(n: int) -> dict[str, int]:
    return {"n": n} if n >= 0 else {}


@pytest.fixture
def validator_cache(monkeypatch: pytest.MonkeyPatch) -> dict[int, Any]:
    """The output-validator cache, empty and bounded at 2 schemas for the test."""
    from hermes.tools.pipeline import output

    cache: dict[int, Any] = {}
    monkeypatch.setattr(output, "_output_validators", cache)
    monkeypatch.setattr(output, "_MAX_OUTPUT_VALIDATORS", 2)
    return cache


async def call_tools_with_new_schemas(how_many: int) -> tuple[ToolExecutor, list[Tool]]:
    """``how_many`` tools, each with an output schema of its own (as tools built per call
    have), called once each: their schemas enter the output-validator cache in this order."""
    tools = [
        make_tool(count, name=f"count_{i}", output_schema={"type": "object", "required": ["n"]})
        for i in range(how_many)
    ]
    executor = ToolExecutor(ToolRegistry(tools))
    for i in range(how_many):
        result = await executor.run(ToolCall("c", f"count_{i}", {"n": i}), CallContext(call_id="c"))
        assert result.ok
    return executor, tools


async def test_a_full_output_validator_cache_drops_its_oldest_schema(
    validator_cache: dict[int, Any],
) -> None:
    _, tools = await call_tools_with_new_schemas(3)
    assert list(validator_cache) == [id(tools[1].output_schema), id(tools[2].output_schema)]


async def test_a_schema_dropped_from_the_validator_cache_still_checks_the_output(
    validator_cache: dict[int, Any],
) -> None:
    executor, _ = await call_tools_with_new_schemas(3)
    result = await executor.run(ToolCall("c", "count_0", {"n": -1}), CallContext(call_id="c"))
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "invalid_output",
        "output of tool 'count_0' does not match its output schema: n: missing required field",
    )


async def test_a_schema_is_compiled_once_and_its_validator_reused(
    validator_cache: dict[int, Any],
) -> None:
    executor, (counter,) = await call_tools_with_new_schemas(1)
    (compiled,) = validator_cache.values()
    assert compiled[0] is counter.output_schema
    again = await executor.run(ToolCall("c", "count_0", {"n": 1}), CallContext(call_id="c"))
    assert again.ok
    assert list(validator_cache.values()) == [compiled]
    assert validator_cache[id(counter.output_schema)] is compiled


async def test_output_of_a_common_shape_is_checked_without_jsonschema(
    validator_cache: dict[int, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The compiled fast check (~1 µs) answers for plain shapes; jsonschema (~15 µs) is the
    # fallback, asked only when the fast check cannot say yes.
    from jsonschema import Draft202012Validator

    asked: list[Any] = []
    iter_errors = Draft202012Validator.iter_errors

    def spy(self: Draft202012Validator, instance: Any) -> Any:
        asked.append((self.schema, instance))
        return iter_errors(self, instance)

    monkeypatch.setattr(Draft202012Validator, "iter_errors", spy)
    executor, (counter,) = await call_tools_with_new_schemas(1)  # {"n": 0}: the fast check's
    wrong = await executor.run(ToolCall("c", "count_0", {"n": -1}), CallContext(call_id="c"))
    assert wrong.error is not None
    assert [output for schema, output in asked if schema is counter.output_schema] == [{}]


async def test_a_sandboxed_tool_runs_in_the_sandbox() -> None:
    add = make_tool(targets.add, name="sandboxed_add", sandbox="process", timeout=20)
    result = await run(ToolRegistry([add]), "sandboxed_add", a=2, b=3)
    assert (result.ok, result.output, result.attempts) == (True, 5, 1)


async def test_a_failure_in_the_sandbox_keeps_the_sandbox_code() -> None:
    fail = make_tool(targets.fail, name="sandboxed_fail", sandbox="process", timeout=20)
    result = await run(ToolRegistry([fail]), "sandboxed_fail", message="nope")
    assert result.error is not None
    assert (result.error.type, result.error.message) == ("sandbox_error", "ValueError: nope")
    assert result.attempts == 1


async def test_without_the_sandbox_module_a_sandboxed_tool_never_runs_unsandboxed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "hermes.tools.sandbox", None)  # makes the import fail
    ran: list[int] = []

    def side_effect(a: int) -> int:
        ran.append(a)
        return a

    registry = ToolRegistry([tool(name="isolated", sandbox="process")(side_effect)])
    result = await run(registry, "isolated", a=1)
    assert result.error is not None
    assert result.error.type == "sandbox_error"
    assert "must run in the process sandbox, which is not available" in result.error.message
    assert ran == []
