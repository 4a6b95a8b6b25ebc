"""Real MCP servers over stdio and streamable HTTP, called through the executor pipeline."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from hermes.mcp import McpConnection, ServerConfig
from hermes.models.base import ToolCall
from hermes.tools.base import ToolContext, ToolResult
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry
from tests.mcp.conftest import stdio_config

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXPECTED_TOOLS = {
    "add",
    "echo",
    "fail",
    "structured",
    "image",
    "environment",
    "slow",
    "register_tool",
    "crash",
    "huge",
}
#: The server has resources and prompts, so it gets the four utility tools too.
UTILITIES = {"list_resources", "read_resource", "list_prompts", "get_prompt"}


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["stdio", "http"])
async def connection(
    request: pytest.FixtureRequest, http_server_url: str
) -> AsyncIterator[McpConnection]:
    if request.param == "stdio":
        config = stdio_config(env={"HERMES_TEST_GIVEN": "yes"}, timeout=2)
    else:
        config = ServerConfig(url=http_server_url, timeout=2)
    conn = McpConnection("test", config)
    os.environ["HERMES_MCP_OUTER_SECRET"] = "must-not-leak"  # present while the child starts
    try:
        conn.start()
        assert await conn.wait_ready(), conn.status()
    finally:
        del os.environ["HERMES_MCP_OUTER_SECRET"]
    yield conn
    await conn.aclose()


async def call(conn: McpConnection, name: str, arguments: dict[str, Any]) -> ToolResult:
    registry = ToolRegistry(conn.tools())
    return await execute_tool_call(registry, ToolCall("call-1", name, arguments), ToolContext())


async def test_tools_are_listed_under_the_server_prefix(connection: McpConnection) -> None:
    names = {tool.name for tool in connection.tools()}
    assert names == {f"test__{name}" for name in EXPECTED_TOOLS | UTILITIES}
    status = connection.status()
    assert status["state"] == "ready"
    assert status["error"] is None


async def test_a_call_returns_text_and_structured_output(connection: McpConnection) -> None:
    result = await call(connection, "test__add", {"a": 2, "b": 3})
    assert result.ok, result.error
    assert result.output["text"] == "5"


async def test_bad_arguments_fail_validation_locally(connection: McpConnection) -> None:
    result = await call(connection, "test__add", {"a": "two", "b": 3})
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert result.attempts == 0  # refused before the tool (and the server) ran


async def test_structured_content_is_kept(connection: McpConnection) -> None:
    result = await call(connection, "test__structured", {})
    assert result.ok
    assert result.output["structured"] == {"cities": ["Paris", "Lyon"], "count": 2}
    assert result.output["text"] == "two cities"


async def test_is_error_gives_a_failed_result(connection: McpConnection) -> None:
    result = await call(connection, "test__fail", {})
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "mcp_tool_error"
    assert "disk is on fire" in result.error.message


async def test_image_is_an_attachment_with_a_note(connection: McpConnection) -> None:
    result = await call(connection, "test__image", {})
    assert result.ok
    assert result.output["text"] == "a pixel"
    (attachment,) = result.output["attachments"]
    assert attachment["type"] == "image"
    assert attachment["mime_type"] == "image/png"
    assert "note" in attachment
    assert "data" not in attachment


async def test_a_slow_call_times_out_with_the_server_named(connection: McpConnection) -> None:
    result = await connection.call_tool("slow", {"seconds": 30})
    assert result.error is not None
    assert result.error.type == "timeout"
    assert "'test'" in result.error.message


async def test_unknown_remote_tool_is_a_failed_result(connection: McpConnection) -> None:
    result = await connection.call_tool("no_such_tool", {})
    assert not result.ok


async def test_stdio_child_gets_only_its_env_plus_path_home_lang(
    connection: McpConnection,
) -> None:
    if connection.config.transport != "stdio":
        pytest.skip("the environment rule concerns stdio servers")
    result = await connection.call_tool("environment", {})
    names = set(result.output["structured"]["names"])
    # LC_CTYPE: Python itself sets it when it coerces a C locale (PEP 538).
    assert names - {"LC_CTYPE"} <= {"HERMES_TEST_GIVEN", "PATH", "HOME", "LANG"}
    assert "HERMES_TEST_GIVEN" in names
    assert "HERMES_MCP_OUTER_SECRET" not in names


async def test_the_adapted_tool_is_found_by_its_remote_name(connection: McpConnection) -> None:
    tool = connection.tool_for("echo")
    assert tool is not None
    assert tool.name == "test__echo"
    assert connection.tool_for("no_such_tool") is None
