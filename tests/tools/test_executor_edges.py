"""execute_tool_call at its edges: the exact messages and bounds a model reads back (the
pipeline's refusals are what the model corrects itself from, seed 001 §3.2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.models.base import ToolCall
from hermes.tools import ToolContext, ToolRegistry, execute_tool_call, tool


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s-edges", user_id="u1", workspace=str(tmp_path))


def _registry(count: int) -> ToolRegistry:
    registry = ToolRegistry()
    for index in range(count):
        registry.register(tool(name=f"t{index:02d}")(lambda: None))
    return registry


async def _unknown(registry: ToolRegistry, ctx: ToolContext) -> str:
    result = await execute_tool_call(registry, ToolCall("c1", "nope", {}), ctx)
    assert result.error is not None
    assert result.error.type == "unknown_tool"
    assert result.attempts == 0
    return result.error.message


async def test_an_empty_registry_says_none_is_available(ctx: ToolContext) -> None:
    assert await _unknown(ToolRegistry(), ctx) == "no tool named 'nope'; available: (none)"


async def test_twenty_tools_are_all_listed(ctx: ToolContext) -> None:
    names = ", ".join(f"t{n:02d}" for n in range(20))
    assert await _unknown(_registry(20), ctx) == f"no tool named 'nope'; available: {names}"


async def test_past_twenty_the_rest_is_counted(ctx: ToolContext) -> None:
    names = ", ".join(f"t{n:02d}" for n in range(20))
    message = await _unknown(_registry(21), ctx)
    assert message == f"no tool named 'nope'; available: {names}, … (1 more)"


async def test_an_output_schema_checks_formats_and_names_every_problem(ctx: ToolContext) -> None:
    schema = {
        "type": "object",
        "properties": {"email": {"type": "string", "format": "email"}, "n": {"type": "integer"}},
        "required": ["email", "n"],
    }

    @tool(name="contact", output_schema=schema)
    def contact(kind: str) -> dict[str, object]:
        """Return a contact."""
        return {"email": "ada@example.org", "n": 1} if kind == "good" else {"email": "nope"}

    registry = ToolRegistry()
    registry.register(contact)
    good = await execute_tool_call(registry, ToolCall("c1", "contact", {"kind": "good"}), ctx)
    assert good.ok, good.error
    bad = await execute_tool_call(registry, ToolCall("c2", "contact", {"kind": "bad"}), ctx)
    assert bad.error is not None
    assert bad.error.type == "invalid_output"
    assert bad.error.message == (
        "output of tool 'contact' does not match its output schema: n: missing required field; "
        "email: must be a valid email; got 'nope'"
    )
