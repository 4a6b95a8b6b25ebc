"""Resources and prompts of a real MCP server as utility tools, called through the executor."""

from __future__ import annotations

import base64
import math
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest
import pytest_asyncio

from hermes.mcp import McpConnection, ToolFilter
from hermes.mcp.utility import utility_tools
from hermes.models.base import ToolCall
from hermes.tools.base import Tool, ToolContext, ToolResult
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry
from tests.mcp.conftest import FAST_RECONNECT, connected, raw_config, stdio_config
from tests.mcp.servers.basic_server import PNG
from tests.mcp.servers.raw_server import PAGE_SIZE, PAGED_RESOURCES

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def connection() -> AsyncIterator[McpConnection]:
    async with connected("docs", stdio_config(timeout=10), reconnect=FAST_RECONNECT) as conn:
        yield conn


async def call(conn: McpConnection, name: str, arguments: dict[str, Any]) -> ToolResult:
    registry = ToolRegistry(conn.tools())
    return await execute_tool_call(registry, ToolCall("call-1", name, arguments), ToolContext())


async def test_utilities_are_offered_under_the_contract_names(connection: McpConnection) -> None:
    names = {tool.name for tool in connection.tools()}
    expected = {"docs__list_resources", "docs__read_resource"}
    expected |= {"docs__list_prompts", "docs__get_prompt"}
    assert expected <= names
    assert connection.tool_for("list_resources") is None  # tool_for is for the server's own
    assert connection.status()["resources"] is True


async def test_list_resources_gives_uri_name_mime_type_and_description(
    connection: McpConnection,
) -> None:
    result = await call(connection, "docs__list_resources", {})
    assert result.ok, result.error
    resources = result.output["structured"]["resources"]
    assert {
        "uri": "test://greeting",
        "name": "greeting",
        "mimeType": "text/plain",
        "description": "A friendly text.",
    } in resources
    assert "test://pixel.png" in {r["uri"] for r in resources}
    templates = result.output["structured"]["templates"]
    assert [t["uriTemplate"] for t in templates] == ["test://notes/{topic}"]
    assert "nextCursor" not in result.output["structured"]


async def test_read_resource_returns_its_text(connection: McpConnection) -> None:
    result = await call(connection, "docs__read_resource", {"uri": "test://greeting"})
    assert result.ok, result.error
    assert result.output["text"] == "hello from the test server"
    assert "attachments" not in result.output


async def test_read_resource_from_a_template(connection: McpConnection) -> None:
    result = await call(connection, "docs__read_resource", {"uri": "test://notes/rain"})
    assert result.ok, result.error
    assert result.output["text"] == "a note about rain"


async def test_binary_resource_is_an_attachment_without_its_base64(
    connection: McpConnection,
) -> None:
    result = await call(connection, "docs__read_resource", {"uri": "test://pixel.png"})
    assert result.ok, result.error
    (attachment,) = result.output["attachments"]
    assert attachment["mime_type"] == "image/png"
    assert attachment["uri"] == "test://pixel.png"
    assert attachment["size_bytes"] == len(PNG)
    assert "not shown" in attachment["note"]
    assert base64.b64encode(PNG).decode() not in result.to_model_text()


async def test_unknown_uri_is_a_failure_naming_the_server(connection: McpConnection) -> None:
    result = await call(connection, "docs__read_resource", {"uri": "test://nowhere"})
    assert result.error is not None
    assert result.error.type == "mcp_error"
    assert "'docs'" in result.error.message
    assert "test://nowhere" in result.error.message


async def test_read_resource_without_uri_is_refused_before_the_server(
    connection: McpConnection,
) -> None:
    result = await call(connection, "docs__read_resource", {})
    assert result.error is not None
    assert result.error.type == "invalid_arguments"
    assert result.attempts == 0


async def test_list_prompts_describes_their_arguments(connection: McpConnection) -> None:
    result = await call(connection, "docs__list_prompts", {})
    assert result.ok, result.error
    (greet,) = [p for p in result.output["structured"]["prompts"] if p["name"] == "greet"]
    assert greet["description"] == "Write a greeting for someone."
    arguments = {a["name"]: a["required"] for a in greet["arguments"]}
    assert arguments == {"name": True, "style": False}


async def test_get_prompt_fills_in_the_arguments(connection: McpConnection) -> None:
    arguments = {"name": "greet", "arguments": {"name": "Ada", "style": "formal"}}
    result = await call(connection, "docs__get_prompt", arguments)
    assert result.ok, result.error
    assert result.output["text"] == "user: Please greet Ada in a formal style."
    (message,) = result.output["structured"]["messages"]
    assert message == {"role": "user", "text": "Please greet Ada in a formal style."}


async def test_get_prompt_with_an_unknown_name_fails_naming_the_server(
    connection: McpConnection,
) -> None:
    result = await call(connection, "docs__get_prompt", {"name": "no_such_prompt"})
    assert result.error is not None
    assert result.error.type == "mcp_error"
    assert "'docs'" in result.error.message


async def test_the_servers_own_tool_wins_over_a_utility_of_the_same_name() -> None:
    async with connected("own", stdio_config("--collide"), reconnect=FAST_RECONNECT) as conn:
        own = conn.tool_for("list_resources")
        assert own is not None
        assert [t for t in conn.tools() if t.name == "own__list_resources"] == [own]
        (skipped,) = [s for s in conn.status()["skipped"] if s["tool"] == "list_resources"]
        assert "own tool" in skipped["reason"]
        result = await call(conn, "own__list_resources", {})
        assert result.ok, result.error
        assert result.output["text"] == "the server's own list_resources"
        assert "own__read_resource" in {t.name for t in conn.tools()}


async def test_list_resources_pages_on_with_the_servers_cursor() -> None:
    config = raw_config("paged_resources", timeout=10)
    async with connected("paged", config, reconnect=FAST_RECONNECT) as conn:
        pages: list[list[str]] = []
        arguments: dict[str, Any] = {}
        for _ in range(len(PAGED_RESOURCES)):  # bounded, whatever the cursors do
            result = await call(conn, "paged__list_resources", arguments)
            assert result.ok, result.error
            structured = result.output["structured"]
            pages.append([r["uri"] for r in structured["resources"]])
            if "nextCursor" not in structured:
                break
            assert result.output["text"].endswith("; more with cursor=nextCursor")
            arguments = {"cursor": structured["nextCursor"]}
    assert pages[1] != pages[0]
    assert [len(page) for page in pages] == [PAGE_SIZE, PAGE_SIZE, 2]
    assert [uri for page in pages for uri in page] == [r["uri"] for r in PAGED_RESOURCES]


async def _never(action: str, send: Any) -> ToolResult:
    raise AssertionError("no request expected")


async def test_no_utilities_without_the_capabilities() -> None:
    tools, skipped = utility_tools(
        "bare",
        "bare",
        types.ServerCapabilities(tools=types.ToolsCapability()),
        _never,
        taken=(),
        allows=ToolFilter().allows,
        timeout=5,
    )
    assert (tools, skipped) == ([], [])


async def test_prompt_utilities_only_for_a_prompts_server_and_the_filter_applies() -> None:
    capabilities = types.ServerCapabilities(prompts=types.PromptsCapability())
    tools, _ = utility_tools(
        "p", "p", capabilities, _never, taken=(), allows=ToolFilter().allows, timeout=5
    )
    assert [t.name for t in tools] == ["p__list_prompts", "p__get_prompt"]
    hidden = ToolFilter(exclude=("list_*",)).allows
    tools, _ = utility_tools("p", "p", capabilities, _never, taken=(), allows=hidden, timeout=5)
    assert [t.name for t in tools] == ["p__get_prompt"]


class _Deadlines:
    """A fake connection's request: records each request's effective deadline; the first
    (resources/list) takes ``first_takes`` seconds."""

    def __init__(self, first_takes: float = 0.0) -> None:
        self.first_takes = first_takes
        self.seen: list[tuple[str, float]] = []

    async def __call__(self, action: str, send: Any) -> Any:
        self.seen.append((action, anyio.current_effective_deadline()))
        if action == "resources/list":
            await anyio.sleep(self.first_takes)
            return types.ListResourcesResult(resources=[])
        return types.ListResourceTemplatesResult(resource_templates=[])


def _list_resources(request: _Deadlines, budget: float) -> Tool:
    capabilities = types.ServerCapabilities(resources=types.ResourcesCapability())
    tools, _ = utility_tools(
        "r",
        "r",
        capabilities,
        request,
        taken=(),
        allows=ToolFilter().allows,
        timeout=budget + 1,
        request_timeout=budget,
    )
    return {t.name: t for t in tools}["r__list_resources"]


async def test_list_resources_bounds_the_templates_by_what_is_left_of_the_budget() -> None:
    request = _Deadlines()
    tool = _list_resources(request, budget=5)
    start = anyio.current_time()
    result = await tool.fn()
    assert result.ok, result.error
    assert [action for action, _ in request.seen] == ["resources/list", "resources/templates/list"]
    first, second = (deadline for _, deadline in request.seen)
    # The listing is bounded by the connection's request alone (its own timeout message);
    # the templates by the budget, counted from the start of the call.
    assert first == math.inf
    assert start + 5 <= second <= anyio.current_time() + 5


class _SilentSession:
    """A live session whose resources/list sends one malformed message, then nothing."""

    def __init__(self, conn: McpConnection) -> None:
        self._conn = conn

    async def list_resources(self, params: object = None) -> Any:
        self._conn._note.record(ValueError("bad JSON from the server"))
        await anyio.sleep_forever()


async def test_a_listing_timeout_keeps_the_connections_detailed_message() -> None:
    conn = McpConnection("slow", stdio_config(timeout=0.3))
    conn._owner.session = _SilentSession(conn)  # type: ignore[assignment]
    conn.state = "ready"
    capabilities = types.ServerCapabilities(resources=types.ResourcesCapability())
    tools, _ = utility_tools(
        "slow",
        "slow",
        capabilities,
        conn.request,
        taken=(),
        allows=ToolFilter().allows,
        timeout=1.3,
        request_timeout=0.3,
    )
    result = await {t.name: t for t in tools}["slow__list_resources"].fn()
    assert result.error is not None
    assert result.error.type == "timeout"
    message = result.error.message
    assert "MCP server 'slow' did not answer resources/list within 0.3 s" in message
    # What the connection saw meanwhile: the reason a silent server seemed silent.
    assert "it sent malformed JSON-RPC: bad JSON from the server" in message


async def test_list_resources_skips_the_templates_when_little_time_is_left() -> None:
    request = _Deadlines(first_takes=0.4)
    tool = _list_resources(request, budget=0.5)
    result = await tool.fn()
    assert result.ok, result.error
    assert [action for action, _ in request.seen] == ["resources/list"]
    assert "templates" not in result.output["structured"]
