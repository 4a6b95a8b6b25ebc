"""server-everything (the MCP reference server, from npm) driven through Hermes over stdio,
streamable HTTP and SSE: listing, calls, local and remote errors, resources, an agent turn,
and a server killed mid-session that Hermes reconnects to."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from hermes import Agent
from hermes.mcp import McpConnection
from hermes.testing import ScriptedModel, call, say
from tests.mcp.conftest import connected
from tests.mcp.interop.conftest import (
    LIMIT_S,
    EverythingHttpServer,
    HttpTransport,
    ReferenceServers,
    counting,
    run_tool,
    tool_named,
    wait_until,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER_NAME = "mcp-servers/everything"
STATIC_DOC = "demo://resource/static/document/features.md"


@pytest_asyncio.fixture(
    scope="module", loop_scope="module", params=["stdio", "streamable_http", "sse"]
)
async def everything(
    request: pytest.FixtureRequest, servers: ReferenceServers
) -> AsyncIterator[McpConnection]:
    """One connection per transport, shared by the module's tests."""
    if request.param == "stdio":
        config = servers.everything_stdio()
    else:
        http: dict[HttpTransport, EverythingHttpServer] = request.getfixturevalue("everything_http")
        config = http[request.param].config
    async with connected("everything", config) as connection:
        yield connection


def dumped(output: Any) -> str:
    return json.dumps(output, ensure_ascii=False)


# -- listing and calls -------------------------------------------------------------------------


async def test_tools_are_listed_under_the_server_prefix(everything: McpConnection) -> None:
    names = {tool.name for tool in everything.tools()}
    expected = {"echo", "get-sum", "get-structured-content", "get-tiny-image"}
    assert {f"everything__{name}" for name in expected} <= names
    status = everything.status()
    assert status["state"] == "ready"
    assert status["error"] is None
    assert status["skipped"] == []
    assert status["resources"] is True
    assert everything.server_info is not None
    assert everything.server_info.name == SERVER_NAME


async def test_a_call_runs_on_the_server(everything: McpConnection) -> None:
    result = await run_tool(everything.tools(), "everything__get-sum", {"a": 2, "b": 3})
    assert result.ok, result.error
    assert result.output == {"text": "The sum of 2 and 3 is 5."}
    assert result.attempts == 1


async def test_text_round_trips_unchanged(everything: McpConnection) -> None:
    message = 'Hermes 你好 ✓ "quoted" \\ back\nslash'
    result = await run_tool(everything.tools(), "everything__echo", {"message": message})
    assert result.ok, result.error
    assert result.output["text"] == f"Echo: {message}"


async def test_structured_content_is_kept(everything: McpConnection) -> None:
    arguments = {"location": "Chicago"}
    result = await run_tool(everything.tools(), "everything__get-structured-content", arguments)
    assert result.ok, result.error
    expected = {"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    assert result.output["structured"] == expected
    assert json.loads(result.output["text"]) == expected


async def test_an_image_becomes_an_attachment_without_its_bytes(
    everything: McpConnection,
) -> None:
    result = await run_tool(everything.tools(), "everything__get-tiny-image", {})
    assert result.ok, result.error
    images = [a for a in result.output["attachments"] if a["type"] == "image"]
    assert len(images) == 1
    assert images[0]["mime_type"] == "image/png"
    assert images[0]["size_bytes"] > 0
    assert "data" not in images[0]


async def test_an_embedded_resource_becomes_an_attachment(everything: McpConnection) -> None:
    arguments = {"resourceType": "Text", "resourceId": 3}
    result = await run_tool(everything.tools(), "everything__get-resource-reference", arguments)
    assert result.ok, result.error
    (attachment,) = result.output["attachments"]
    assert attachment["type"] == "resource"
    assert attachment["uri"] == "demo://resource/dynamic/text/3"
    assert "demo://resource/dynamic/text/3" in result.output["text"]


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("get-sum", {"a": "two", "b": 3}, "a"),
        ("get-sum", {"a": 2}, "b"),
        ("get-structured-content", {"location": "Paris"}, "location"),
    ],
)
async def test_bad_arguments_are_refused_locally_before_the_wire(
    everything: McpConnection, tool: str, arguments: dict[str, Any], field: str
) -> None:
    adapted, reached = counting(tool_named(everything, f"everything__{tool}"))
    result = await run_tool([adapted], adapted.name, arguments)
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert field in result.error.message
    assert result.attempts == 0
    assert reached == []  # the remote-calling function never ran, so nothing was sent


async def test_a_server_side_error_is_a_failed_result(everything: McpConnection) -> None:
    # Valid for the schema (a number), refused by the server's own check.
    adapted, reached = counting(tool_named(everything, "everything__get-resource-reference"))
    arguments = {"resourceType": "Text", "resourceId": 0}
    result = await run_tool([adapted], adapted.name, arguments)
    assert result.error is not None
    assert result.error.type == "mcp_tool_error"
    assert "Invalid resourceId: 0" in result.error.message
    assert reached == [arguments]
    # The session survives a failed call.
    after = await run_tool(everything.tools(), "everything__get-sum", {"a": 1, "b": 1})
    assert after.ok, after.error


async def test_an_unknown_remote_tool_is_refused_by_the_server(
    everything: McpConnection,
) -> None:
    result = await everything.call_tool("no-such-tool", {})
    assert not result.ok
    assert result.error is not None
    assert "no-such-tool" in result.error.message


# -- resources (utility tools) -----------------------------------------------------------------


async def test_resources_are_listed_through_the_utility_tool(everything: McpConnection) -> None:
    result = await run_tool(everything.tools(), "everything__list_resources", {})
    assert result.ok, result.error
    assert STATIC_DOC in dumped(result.output)


async def test_a_resource_is_read_through_the_utility_tool(everything: McpConnection) -> None:
    result = await run_tool(everything.tools(), "everything__read_resource", {"uri": STATIC_DOC})
    assert result.ok, result.error
    assert "Everything Server - Features" in dumped(result.output)


async def test_a_templated_resource_is_read(everything: McpConnection) -> None:
    uri = "demo://resource/dynamic/text/7"
    result = await run_tool(everything.tools(), "everything__read_resource", {"uri": uri})
    assert result.ok, result.error
    assert "Resource 7: This is a plaintext resource" in dumped(result.output)


async def test_reading_an_unknown_resource_is_a_failed_result(everything: McpConnection) -> None:
    adapted, reached = counting(tool_named(everything, "everything__read_resource"))
    arguments = {"uri": "demo://resource/no-such-resource"}
    result = await run_tool([adapted], adapted.name, arguments)
    assert not result.ok
    assert result.error is not None
    assert reached == [arguments]  # valid for our schema: the server refused it
    assert result.error.type == "mcp_error"
    assert "'everything'" in result.error.message
    assert "demo://resource/no-such-resource" in result.error.message


async def test_read_resource_without_a_uri_is_refused_locally(everything: McpConnection) -> None:
    adapted, reached = counting(tool_named(everything, "everything__read_resource"))
    result = await run_tool([adapted], adapted.name, {})
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert "uri" in result.error.message
    assert reached == []


async def test_long_resource_and_prompt_texts_are_clipped_to_max_text_chars(
    servers: ReferenceServers,
) -> None:
    limit = 100
    async with connected("everything", servers.everything_stdio(), max_text_chars=limit) as conn:
        read = await run_tool(conn.tools(), "everything__read_resource", {"uri": STATIC_DOC})
        city = "Llanfairpwllgwyngyll" * 20
        arguments = {"name": "args-prompt", "arguments": {"city": city}}
        prompt = await run_tool(conn.tools(), "everything__get_prompt", arguments)
    assert read.ok, read.error
    text = read.output["text"]
    assert text.startswith("# Everything Server - Features")
    clipped, note = text.split("\n…[truncated: ", 1)
    assert len(clipped) == limit
    assert note.startswith(f"showing {limit} of ")
    assert prompt.ok, prompt.error
    (message,) = prompt.output["structured"]["messages"]
    assert message["text"].startswith("What's weather in Llanfair")
    assert f"[truncated: showing {limit} of " in message["text"]
    assert city not in prompt.to_model_text()


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"name": True}, "name"),
        ({"name": ["args-prompt"]}, "name"),
        ({"name": ""}, "name"),
        ({"name": "args-prompt", "arguments": {"city": False}}, "city"),
        ({"name": "args-prompt", "arguments": "city=Oslo"}, "arguments"),
    ],
)
async def test_get_prompt_with_wrongly_typed_arguments_is_refused_before_the_wire(
    everything: McpConnection, arguments: dict[str, Any], field: str
) -> None:
    # Types that no safe coercion fixes: a number would be sent as its text (see below).
    adapted, reached = counting(tool_named(everything, "everything__get_prompt"))
    result = await run_tool([adapted], adapted.name, arguments)
    assert not result.ok
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert field in result.error.message
    assert result.attempts == 0
    assert reached == []


async def test_a_number_for_the_prompt_name_is_sent_as_its_text(
    everything: McpConnection,
) -> None:
    # The executor's documented coercion (hermes.tools._coercion: a number → its text for a
    # string field); the server then refuses the unknown prompt "3".
    adapted, reached = counting(tool_named(everything, "everything__get_prompt"))
    result = await run_tool([adapted], adapted.name, {"name": 3})
    assert reached == [{"name": "3"}]
    assert result.error is not None
    assert result.error.type == "mcp_error"
    assert "'3'" in result.error.message


# -- an agent turn -----------------------------------------------------------------------------


async def test_an_agent_turn_calls_a_remote_tool(everything: McpConnection, tmp_path: Path) -> None:
    model = ScriptedModel([call("everything__get-sum", {"a": 2, "b": 3}), say("2 + 3 = 5")])
    agent = Agent(model=model, tools=everything.tools(), store=tmp_path / "hermes.db")
    try:
        result = await agent.run("what is 2+3?", session_id="interop-0001", user_id="u1")
    finally:
        await agent.aclose()
    assert result.outcome == "ok", result.error
    assert result.reply == "2 + 3 = 5"
    assert [(c.name, c.ok) for c in result.tool_calls] == [("everything__get-sum", True)]
    model.assert_complete()
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool"
    assert "The sum of 2 and 3 is 5." in tool_message["content"]


# -- a server killed mid-session ---------------------------------------------------------------


async def test_a_killed_stdio_server_is_restarted_in_the_background(
    servers: ReferenceServers,
) -> None:
    async with connected("everything", servers.everything_stdio()) as connection:
        tools = connection.tools()  # what an agent holds from the turn's start
        first = await run_tool(tools, "everything__get-sum", {"a": 1, "b": 2})
        assert first.ok, first.error
        pid = connection.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)

        failed = await run_tool(tools, "everything__get-sum", {"a": 1, "b": 2})
        assert failed.error is not None
        assert failed.error.type == "service_unavailable"
        assert "'everything'" in failed.error.message
        await wait_until(lambda: connection.state != "ready", "the connection to leave ready")
        assert connection.state == "reconnecting"

        assert await connection.wait_ready(LIMIT_S), connection.status()
        assert connection.pid not in (None, pid)
        again = await run_tool(connection.tools(), "everything__get-sum", {"a": 1, "b": 2})
        assert again.ok, again.error
        assert again.output["text"] == "The sum of 1 and 2 is 3."


@pytest.mark.parametrize("transport", ["streamable_http", "sse"])
async def test_a_killed_http_server_is_reconnected_once_it_is_back(
    servers: ReferenceServers, tmp_path: Path, transport: HttpTransport
) -> None:
    server = EverythingHttpServer(servers, transport, tmp_path / "server.log")
    try:
        server.start()
        async with connected("everything", server.config) as connection:
            tools = connection.tools()  # what an agent holds from the turn's start
            first = await run_tool(tools, "everything__get-sum", {"a": 1, "b": 2})
            assert first.ok, first.error

            server.kill()
            failed = await run_tool(tools, "everything__get-sum", {"a": 1, "b": 2})
            assert failed.error is not None
            assert failed.error.type == "service_unavailable"
            await wait_until(lambda: connection.state != "ready", "the connection to leave ready")
            assert connection.state == "reconnecting"

            await asyncio.to_thread(server.start)  # a new process on the same port
            assert await connection.wait_ready(LIMIT_S), connection.status()
            again = await run_tool(connection.tools(), "everything__get-sum", {"a": 1, "b": 2})
            assert again.ok, again.error
    finally:
        server.stop()
