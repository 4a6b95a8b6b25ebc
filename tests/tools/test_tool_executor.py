"""execute_tool_call: every outcome is a ToolResult."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from hermes.errors import ToolExecutionError
from hermes.models.base import ToolCall
from hermes.tools import ToolContext, ToolRegistry, ToolResult, execute_tool_call, tool


class Shape(BaseModel):
    kind: str
    sides: int


@dataclasses.dataclass
class Reading:
    value: float
    unit: str


class Opaque:
    def __str__(self) -> str:
        return "opaque thing"


class Unprintable:
    def __str__(self) -> str:
        raise ValueError("no text form")


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


@tool
def boom(message: str) -> None:
    raise RuntimeError(message)


@tool
def refuse(reason: str) -> None:
    raise ToolExecutionError(f"cannot do that: {reason}")


@tool
def whoami(ctx: ToolContext, greeting: str = "hi") -> str:
    return f"{greeting} {ctx.user_id} in {ctx.session_id}"


@tool
def which_thread() -> str:
    return threading.current_thread().name


@tool
def passthrough() -> ToolResult:
    return ToolResult(ok=True, output={"kept": True}, summary="as is", duration_ms=1.25)


@tool
def rich(kind: str) -> Any:
    outputs: dict[str, Any] = {
        "model": Shape(kind="square", sides=4),
        "dataclass": Reading(21.5, "C"),
        "set": {3},
        "enum": Level.HIGH,
        "object": Opaque(),
        "broken": Unprintable(),
        "bytes": b"\xff\xfe",
        "nan": float("nan"),
    }
    return outputs[kind]


@tool
def echo_text(size: int) -> str:
    return "x" * size


@tool(summary=lambda out: f"{out['n']} items")
def counted(n: int) -> dict[str, int]:
    return {"n": n}


@tool
def self_summarised() -> dict[str, str]:
    return {"summary": "all good", "detail": "…"}


@tool(summary=lambda out: out["missing"])
def bad_summary() -> dict[str, int]:
    return {"n": 1}


@tool
def socket_timeout() -> None:
    raise TimeoutError("upstream read timed out")


@tool
def level_of(level: Level, shape: Shape | None = None) -> str:
    return f"{level.name}:{shape.sides if shape else '-'}"


@tool(timeout=0.05)
def sleepy_sync() -> str:
    time.sleep(0.5)
    return "late"


@tool(timeout=0.05)
async def hangs() -> str:
    await asyncio.sleep(30)
    return "never"


@pytest.fixture
def registry() -> ToolRegistry:
    return ToolRegistry(
        [
            add,
            slow,
            boom,
            refuse,
            whoami,
            which_thread,
            passthrough,
            rich,
            echo_text,
            counted,
            self_summarised,
            bad_summary,
            socket_timeout,
            level_of,
            sleepy_sync,
            hangs,
        ]
    )


@pytest.fixture
def ctx() -> ToolContext:
    return ToolContext(session_id="session-0001", user_id="u1", trace_id="t1", call_id="c1")


async def run(registry: ToolRegistry, ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    return await execute_tool_call(registry, ToolCall("call-1", name, args), ctx)


async def test_sync_tool_success(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "add", a=2, b=3)
    assert result.ok is True
    assert result.output == 5
    assert result.error is None
    assert result.duration_ms > 0


async def test_sync_tool_runs_in_a_worker_thread(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "which_thread")
    assert result.output != threading.current_thread().name


async def test_async_tool_is_awaited(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "slow", seconds=0)
    assert (result.ok, result.output) == (True, "done")


async def test_arguments_are_coerced_before_the_call(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "add", a="2", b=3.0)
    assert result.output == 5


async def test_unknown_tool_lists_available_names(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "search_web", q="x")
    assert result.ok is False
    assert result.error is not None
    assert result.error.type == "unknown_tool"
    assert result.error.message.startswith("no tool named 'search_web'; available: add, slow, boom")


async def test_unknown_tool_list_is_bounded(ctx: ToolContext) -> None:
    registry = ToolRegistry()
    for index in range(50):
        registry.register(tool(name=f"t{index}")(lambda: None))
    result = await run(registry, ctx, "nope")
    assert result.error is not None
    assert result.error.message.endswith("… (30 more)")


async def test_unparseable_arguments_are_invalid_arguments(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    call = ToolCall("call-1", "add", {}, arguments_error="Expecting value: line 1 column 5")
    result = await execute_tool_call(registry, call, ctx)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert "Expecting value" in result.error.message


async def test_schema_violation_names_the_tool_and_fields(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "add", a="two", c=1)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert result.error.message == (
        "invalid arguments for tool 'add': b: missing required field; "
        "a: expected integer, got 'two'; c: unknown field"
    )


async def test_exception_becomes_execution_error(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "boom", message="disk on fire")
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "execution_error",
        "RuntimeError: disk on fire",
    )


async def test_tool_error_keeps_its_code_and_message(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "refuse", reason="policy")
    assert result.error is not None
    assert (result.error.type, result.error.message) == (
        "execution_error",
        "cannot do that: policy",
    )


async def test_async_timeout(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "hangs")
    assert result.error is not None
    assert result.error.type == "timeout"
    assert result.error.message == "tool 'hangs' did not finish within 0.05 s"


async def test_sync_timeout(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "sleepy_sync")
    assert result.error is not None
    assert result.error.type == "timeout"


async def test_timeout_error_raised_by_the_tool_is_an_execution_error(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "socket_timeout")
    assert result.error is not None
    assert result.error.type == "execution_error"
    assert result.error.message == "TimeoutError: upstream read timed out"


async def test_context_is_passed_to_tools_that_ask(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "whoami")
    assert result.output == "hi u1 in session-0001"


async def test_context_parameter_cannot_be_set_by_the_model(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    call = ToolCall("call-1", "whoami", {"ctx": {"user_id": "admin"}})
    result = await execute_tool_call(registry, call, ctx)
    assert result.error is not None
    assert "ctx: unknown field" in result.error.message


async def test_tool_result_is_passed_through(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "passthrough")
    assert (result.output, result.summary, result.duration_ms) == ({"kept": True}, "as is", 1.25)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("model", {"kind": "square", "sides": 4}),
        ("dataclass", {"value": 21.5, "unit": "C"}),
        ("set", [3]),
        ("enum", "high"),
        ("nan", None),
    ],
)
async def test_outputs_are_made_json_safe(
    registry: ToolRegistry, ctx: ToolContext, kind: str, expected: Any
) -> None:
    result = await run(registry, ctx, "rich", kind=kind)
    assert result.output == expected
    json.loads(result.to_model_text())


async def test_bytes_and_odd_objects_still_serialize(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    assert (await run(registry, ctx, "rich", kind="object")).output == "opaque thing"
    assert isinstance((await run(registry, ctx, "rich", kind="bytes")).output, str)


async def test_unserializable_output_is_an_execution_error(
    registry: ToolRegistry, ctx: ToolContext
) -> None:
    result = await run(registry, ctx, "rich", kind="broken")
    assert result.error is not None
    assert result.error.type == "execution_error"
    assert "not serializable" in result.error.message


async def test_rich_argument_types_are_built(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "level_of", level="high", shape={"kind": "tri", "sides": "3"})
    assert result.output == "HIGH:3"


async def test_long_text_output_is_truncated_with_a_note(ctx: ToolContext) -> None:
    registry = ToolRegistry([echo_text])
    call = ToolCall("call-1", "echo_text", {"size": 50})
    result = await execute_tool_call(registry, call, ctx, max_output_chars=10)
    assert result.output == "x" * 10 + "\n…[truncated: showing 10 of 50 characters]"


async def test_short_text_output_is_untouched(registry: ToolRegistry, ctx: ToolContext) -> None:
    result = await run(registry, ctx, "echo_text", size=20)
    assert result.output == "x" * 20


async def test_summary_from_tool_summary_function(registry: ToolRegistry, ctx: ToolContext) -> None:
    assert (await run(registry, ctx, "counted", n=3)).summary == "3 items"


async def test_summary_from_output_summary_key(registry: ToolRegistry, ctx: ToolContext) -> None:
    assert (await run(registry, ctx, "self_summarised")).summary == "all good"


async def test_broken_summary_function_does_not_fail_the_call(
    registry: ToolRegistry, ctx: ToolContext, tmp_path: Path
) -> None:
    from hermes.observe import configure_logging, reset_logging

    log_file = tmp_path / "hermes.log"
    configure_logging(log_file, "INFO")
    try:
        result = await run(registry, ctx, "bad_summary")
    finally:
        reset_logging()
    assert (result.ok, result.summary) == (True, None)
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert any(
        line["event"] == "tool_summary_failed" and line["tool"] == "bad_summary" for line in lines
    )


async def test_cancellation_propagates(registry: ToolRegistry, ctx: ToolContext) -> None:
    task = asyncio.create_task(run(registry, ctx, "slow", seconds=5))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class Query(BaseModel):
    city: str
    days: int = 1


@tool
async def forecast(query: Query, ctx: ToolContext) -> str:
    return f"{query.city}/{query.days}/{ctx.user_id}"


async def test_single_model_tool_gets_an_instance_and_the_context(ctx: ToolContext) -> None:
    registry = ToolRegistry([forecast])
    result = await execute_tool_call(registry, ToolCall("c", "forecast", {"city": "Rome"}), ctx)
    assert result.output == "Rome/1/u1"


async def test_single_model_tool_reports_bad_fields(ctx: ToolContext) -> None:
    registry = ToolRegistry([forecast])
    call = ToolCall("c", "forecast", {"days": "many"})
    result = await execute_tool_call(registry, call, ctx)
    assert result.error is not None
    assert result.error.message == (
        "invalid arguments for tool 'forecast': city: missing required field; "
        "days: expected integer, got 'many'"
    )
