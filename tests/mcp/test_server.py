"""The Hermes MCP server, driven by the official SDK's clients: in memory, over a real stdio
subprocess, over real streamable HTTP on 127.0.0.1, and by an agent whose only tools are ours."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from collections.abc import AsyncIterator
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from hermes import Agent
from hermes.errors import ConfigError
from hermes.mcp import McpConnection, ServerConfig
from hermes.mcp.server import MCP_SESSION_ID, HermesMcpServer, McpServeError
from hermes.mcp.server_http import GRACEFUL_SHUTDOWN_S, check_http_binding, is_loopback
from hermes.models.base import ToolCall
from hermes.testing import ScriptedModel, call, say
from hermes.tools import ToolContext, ToolRegistry, ToolResult, execute_tool_call, tool
from tests.mcp.servers.hermes_server import FORECAST_SCHEMA, build_authorizer, build_registry

SCRIPT = Path(__file__).parent / "servers" / "hermes_server.py"
#: Every test finishes well within this many seconds (a hang fails instead of blocking CI).
LIMIT_S = 20.0
LOCAL_TOOLS = {
    "calculator",
    "current_time",
    "add",
    "forecast",
    "echo",
    "chatty",
    "profile",
    "explode",
    "refuse",
    "nap",
    "salary",
    "flood",
    "flood_typed",
    "refund",
}


@contextlib.asynccontextmanager
async def connected(server: HermesMcpServer, mode: str = "legacy") -> AsyncIterator[Client]:
    """An SDK client talking to ``server`` in memory (``legacy``: JSON-RPC over memory
    streams with the initialize handshake; ``auto``: the 2026 protocol, direct dispatch)."""
    async with asyncio.timeout(LIMIT_S), Client(server.sdk_server, mode=mode) as client:
        yield client


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def listed(client: Client) -> dict[str, types.Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


# -- tools/list --------------------------------------------------------------------------------


async def test_the_list_offers_every_local_tool_with_its_input_schema() -> None:
    registry = build_registry()
    async with connected(HermesMcpServer(registry)) as client:
        tools = await listed(client)
    assert set(tools) == LOCAL_TOOLS  # not the approval tool, not the other server's tool
    add = registry.get("add")
    assert add is not None
    assert tools["add"].input_schema == add.parameters
    assert tools["add"].description == "Add two integers."
    assert tools["forecast"].input_schema["required"] == ["city"]


async def test_an_object_output_schema_is_offered_as_is() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        tools = await listed(client)
    assert tools["forecast"].output_schema == FORECAST_SCHEMA
    assert tools["echo"].output_schema is None


async def test_a_non_object_output_schema_is_wrapped_under_result() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        tools = await listed(client)
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }


async def test_a_wrapped_schema_keeps_its_definitions_at_the_root() -> None:
    schema = {
        "$defs": {"Item": {"type": "string"}},
        "type": "array",
        "items": {"$ref": "#/$defs/Item"},
    }

    @tool(output_schema=schema)
    def items() -> list[str]:
        """Two items."""
        return ["a", "b"]

    async with connected(HermesMcpServer(build_registry_with(items))) as client:
        offered = (await listed(client))["items"].output_schema
        result = await client.call_tool("items", {})  # the SDK client validates against it
    assert offered is not None
    assert offered["$defs"] == {"Item": {"type": "string"}}
    assert offered["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Item"}}
    assert result.structured_content == {"result": ["a", "b"]}


async def test_only_idempotent_tools_carry_an_annotation() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        tools = await listed(client)
    annotations = tools["refund"].annotations
    assert annotations is not None
    assert annotations.idempotent_hint is True
    assert annotations.read_only_hint is None  # nothing Hermes knows says so
    assert tools["add"].annotations is None


async def test_tools_registered_later_are_offered_at_the_next_listing() -> None:
    registry = build_registry()
    server = HermesMcpServer(registry)

    @tool
    def late() -> str:
        """Registered after the server was built."""
        return "here"

    async with connected(server) as client:
        assert "late" not in await listed(client)
        registry.register(late)
        assert "late" in await listed(client)
        assert text_of(await client.call_tool("late", {})) == "here"


# -- tools/call: results -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_call_returns_text_and_structured_content(mode: str) -> None:
    async with connected(HermesMcpServer(build_registry()), mode) as client:
        added = await client.call_tool("add", {"a": 2, "b": 3})
        weather = await client.call_tool("forecast", {"city": "Paris", "days": 2})
    assert not added.is_error
    assert text_of(added) == "5"
    assert added.structured_content == {"result": 5}
    assert not weather.is_error
    assert weather.structured_content == {"city": "Paris", "high_c": 23.5}
    assert text_of(weather) == '{"city": "Paris", "high_c": 23.5}'


async def test_an_object_output_without_schema_is_still_structured() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("profile", {"name": "Li"})
    assert result.structured_content == {"name": "Li", "tags": ["a", "b"]}


async def test_a_string_output_is_plain_text_without_structured_content() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("echo", {"text": "héllo 你好"})
    assert text_of(result) == "héllo 你好"
    assert result.structured_content is None


async def test_arguments_are_coerced_by_the_executor_before_the_call() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("add", {"a": "2", "b": 3})
    assert result.structured_content == {"result": 5}


async def test_each_call_gets_a_fresh_trace_id() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        first = await client.call_tool("echo", {"text": "a"})
        second = await client.call_tool("echo", {"text": "b"})
    ids = [(r.meta or {}).get("hermes/trace_id") for r in (first, second)]
    assert all(isinstance(i, str) and len(i) == 32 for i in ids)
    assert ids[0] != ids[1]


async def test_the_tool_context_carries_the_servers_settings(tmp_path: Path) -> None:
    @tool
    def whoami(ctx: ToolContext) -> dict[str, Any]:
        """Who is calling."""
        return {
            "session": ctx.session_id,
            "user": ctx.user_id,
            "workspace": str(ctx.workspace),
            "region": ctx.extras.get("region"),
            "approved": sorted(ctx.extras.get("approved_call_ids", ())),
            "trace": ctx.trace_id,
        }

    server = HermesMcpServer(
        build_registry_with(whoami),
        user_id="u-7",
        workspace=tmp_path,
        extras={"region": "eu", "approved_call_ids": {"forged"}},
    )
    async with connected(server) as client:
        result = await client.call_tool("whoami", {})
    seen = result.structured_content
    assert seen is not None
    assert seen["session"] == MCP_SESSION_ID
    assert (seen["user"], seen["workspace"], seen["region"]) == ("u-7", str(tmp_path), "eu")
    assert seen["approved"] == []  # extras cannot pre-approve calls
    assert seen["trace"] == (result.meta or {})["hermes/trace_id"]


# -- tools/call: failures ----------------------------------------------------------------------


async def test_invalid_arguments_name_every_offending_field() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("add", {"a": "two"})
    assert result.is_error
    text = text_of(result)
    assert text.startswith("invalid_arguments: ")
    assert "a: expected integer" in text
    assert "b: missing required field" in text
    assert (result.meta or {})["hermes/error_type"] == "invalid_arguments"


async def test_a_raising_tool_gives_an_error_result_without_a_traceback() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("explode", {})
    assert result.is_error
    assert text_of(result) == "execution_error: RuntimeError: the flux capacitor broke"


async def test_a_tool_error_keeps_its_own_code() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("refuse", {})
    assert text_of(result) == "quota_exceeded: the daily quota is used up"


async def test_a_slow_tool_times_out_as_an_error_result() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        result = await client.call_tool("nap", {"seconds": 30})
    assert result.is_error
    assert text_of(result) == "timeout: tool 'nap' did not finish within 0.3 s"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_unknown_tool_is_a_protocol_error(mode: str) -> None:
    async with connected(HermesMcpServer(build_registry()), mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
    assert caught.value.code == types.INVALID_PARAMS
    assert caught.value.message == "Unknown tool: no_such_tool"


async def test_another_servers_tools_are_offered_only_when_asked() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        assert "other__thing" not in await listed(client)
        with pytest.raises(MCPError):
            await client.call_tool("other__thing", {})
    async with connected(HermesMcpServer(build_registry(), include_remote=True)) as client:
        assert "other__thing" in await listed(client)
        assert text_of(await client.call_tool("other__thing", {})) == "remote"


async def test_a_tool_returning_output_that_breaks_its_schema_is_refused() -> None:
    @tool(output_schema={"type": "object", "required": ["n"]})
    def liar() -> ToolResult:
        """Shapes its own result, which skips the executor's output check."""
        return ToolResult(ok=True, output={"m": 1})

    async with connected(HermesMcpServer(build_registry_with(liar))) as client:
        result = await client.call_tool("liar", {})
    assert result.is_error
    assert text_of(result).startswith("invalid_output: output of tool 'liar' does not match")


# -- approvals and permissions -----------------------------------------------------------------


async def test_an_approval_tool_is_hidden_and_refused_by_default() -> None:
    async with connected(HermesMcpServer(build_registry())) as client:
        assert "wipe" not in await listed(client)
        result = await client.call_tool("wipe", {"target": "disk"})
    assert result.is_error
    assert text_of(result) == (
        "approval_required: tool 'wipe' requires human approval and is not available over MCP"
    )


async def test_an_approval_tool_runs_when_the_server_allows_it() -> None:
    async with connected(HermesMcpServer(build_registry(), allow_approval=True)) as client:
        assert "wipe" in await listed(client)
        result = await client.call_tool("wipe", {"target": "disk"})
    assert not result.is_error
    assert text_of(result) == "wiped disk"


async def test_the_authorizer_hides_and_refuses_tools_the_user_may_not_use() -> None:
    server = HermesMcpServer(build_registry(), authorizer=build_authorizer(), user_id="bob")
    async with connected(server) as client:
        tools = await listed(client)
        result = await client.call_tool("salary", {"employee": "ann"})
    assert "salary" not in tools
    assert "add" in tools  # open tools stay open
    assert result.is_error
    assert text_of(result).startswith("permission_denied: permission denied for tool 'salary'")
    assert "hr:salary:read" in text_of(result)


async def test_the_authorizer_lets_a_user_with_the_scope_call() -> None:
    server = HermesMcpServer(build_registry(), authorizer=build_authorizer(), user_id="hr")
    async with connected(server) as client:
        assert "salary" in await listed(client)
        result = await client.call_tool("salary", {"employee": "ann"})
    assert result.structured_content == {"employee": "ann", "monthly": 12_000}


# -- output bounds -----------------------------------------------------------------------------


async def test_huge_json_output_is_clipped_and_loses_its_structured_form() -> None:
    async with connected(HermesMcpServer(build_registry(), max_output_chars=5_000)) as client:
        result = await client.call_tool("flood", {"count": 500})
    assert not result.is_error
    text = text_of(result)
    assert len(text) < 5_100
    assert text.endswith("[truncated: showing 5000 of 52000 characters]")
    assert result.structured_content is None


async def test_huge_output_of_a_tool_with_an_output_schema_is_refused() -> None:
    async with connected(HermesMcpServer(build_registry(), max_output_chars=5_000)) as client:
        result = await client.call_tool("flood_typed", {"count": 500})
    assert result.is_error
    assert text_of(result).startswith("output_too_large: the output of tool 'flood_typed' is 52000")


async def test_a_long_string_is_clipped() -> None:
    async with connected(HermesMcpServer(build_registry(), max_output_chars=1_000)) as client:
        result = await client.call_tool("echo", {"text": "y" * 3_000})
    text = text_of(result)
    assert text.startswith("y" * 1_000)
    assert text.endswith("[truncated: showing 1000 of 3000 characters]")


def test_a_non_positive_output_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_output_chars"):
        HermesMcpServer(build_registry(), max_output_chars=0)


# -- stdio: a real subprocess ------------------------------------------------------------------


def script_params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(SCRIPT), *args])


async def test_a_stdio_subprocess_serves_the_sdk_client() -> None:
    async with (
        asyncio.timeout(LIMIT_S),
        stdio_client(script_params()) as (read, write),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        added = await session.call_tool("add", {"a": 20, "b": 22})
        bad = await session.call_tool("add", {"a": 1})
        calc = await session.call_tool("calculator", {"expression": "6*7"})
        # The tool prints to stdout; were that on the wire, the next exchange would break.
        chatty = await session.call_tool("chatty", {})
        after = await session.call_tool("echo", {"text": "still in sync"})
    assert init.server_info.name == "hermes-test"
    assert set(tools) == LOCAL_TOOLS
    assert added.structured_content == {"result": 42}
    assert bad.is_error
    assert "b: missing required field" in text_of(bad)
    assert not calc.is_error
    assert "42" in text_of(calc)
    assert text_of(chatty) == "said"
    assert text_of(after) == "still in sync"


async def test_a_stdio_subprocess_applies_permissions_and_approvals() -> None:
    params = script_params("--rbac", "--user", "bob", "--allow-approval")
    async with (
        asyncio.timeout(LIMIT_S),
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        denied = await session.call_tool("salary", {"employee": "ann"})
        wiped = await session.call_tool("wipe", {"target": "tmp"})
    assert "salary" not in names
    assert "wipe" in names
    assert text_of(denied).startswith("permission_denied: ")
    assert text_of(wiped) == "wiped tmp"


async def test_stdout_carries_nothing_but_protocol_messages() -> None:
    """Read the raw wire: every stdout line is JSON-RPC, and a tool's print went to stderr."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chatty"}},
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SCRIPT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    lines: list[dict[str, Any]] = []
    try:
        async with asyncio.timeout(LIMIT_S):
            process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            await process.stdin.drain()
            while not any(line.get("id") == 2 for line in lines):
                raw = await process.stdout.readline()
                assert raw, "the server closed stdout before answering"
                lines.append(json.loads(raw))  # a stray line fails here
            process.stdin.close()
            rest, errors = await process.communicate()
            assert process.returncode == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    assert rest == b""
    [answer] = [line for line in lines if line.get("id") == 2]
    assert answer["result"]["content"] == [{"type": "text", "text": "said"}]
    assert b"stray output from a tool" in errors


# -- streamable HTTP on 127.0.0.1 --------------------------------------------------------------


@contextlib.asynccontextmanager
async def http_serving(server: HermesMcpServer, **options: Any) -> AsyncIterator[str]:
    """``server`` on 127.0.0.1 with an ephemeral port; yields its URL, stops it after."""
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(server.serve_http(port=0, on_ready=port.set_result, **options))
    try:
        async with asyncio.timeout(LIMIT_S):
            first: set[asyncio.Future[Any]] = {port, serving}
            done, _ = await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if serving in done:
                serving.result()  # raises why it did not start
            yield f"http://127.0.0.1:{port.result()}/mcp"
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(serving, LIMIT_S)


@contextlib.asynccontextmanager
async def http_session(url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        asyncio.timeout(LIMIT_S),
        httpx2.AsyncClient(headers=headers, timeout=10) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def port_is_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


async def test_http_serves_the_sdk_client_and_stops_cleanly_when_cancelled() -> None:
    server = HermesMcpServer(build_registry())
    async with http_serving(server) as url:
        port = int(url.split(":")[2].split("/")[0])
        async with http_session(url) as session:
            names = {t.name for t in (await session.list_tools()).tools}
            weather = await session.call_tool("forecast", {"city": "Lyon"})
            bad = await session.call_tool("forecast", {"city": 3, "days": "soon"})
        assert port_is_open(port)
    assert not port_is_open(port)  # the socket is closed once the cancelled task returns
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("mcp-http")]
    assert names == LOCAL_TOOLS
    assert weather.structured_content == {"city": "Lyon", "high_c": 22.5}
    assert bad.is_error
    assert "days: expected integer" in text_of(bad)


async def test_http_with_a_token_refuses_requests_without_it() -> None:
    server = HermesMcpServer(build_registry())
    async with http_serving(server, bearer_token="s3cret-token") as url:
        async with httpx2.AsyncClient(timeout=10) as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            accept = {"Accept": "application/json, text/event-stream"}
            missing = await http.post(url, json=body, headers=accept)
            wrong = await http.post(
                url, json=body, headers={**accept, "Authorization": "Bearer s3cret-tokeN"}
            )
            other_scheme = await http.post(
                url, json=body, headers={**accept, "Authorization": "Basic s3cret-token"}
            )
        async with http_session(url, token="s3cret-token") as session:
            result = await session.call_tool("add", {"a": 1, "b": 1})
    for response in (missing, wrong, other_scheme):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"] == "unauthorized"
    assert result.structured_content == {"result": 2}


async def test_http_stops_promptly_while_a_client_is_still_connected() -> None:
    server = HermesMcpServer(build_registry())
    port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.create_task(server.serve_http(port=0, on_ready=port.set_result))
    try:
        async with http_session(f"http://127.0.0.1:{await port}/mcp") as session:
            await session.list_tools()
            serving.cancel()
            # Stateless HTTP keeps no idle stream open, so nothing waits for the grace period.
            done, _ = await asyncio.wait({serving}, timeout=GRACEFUL_SHUTDOWN_S)
            assert done == {serving}
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(serving, LIMIT_S)
    assert serving.cancelled()


async def test_http_on_loopback_refuses_a_foreign_host_header() -> None:
    async with (
        http_serving(HermesMcpServer(build_registry())) as url,
        httpx2.AsyncClient(timeout=10) as http,
    ):
        response = await http.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", "Host": "evil.example"},
        )
    assert response.status_code == 421  # DNS-rebinding protection


async def test_the_hermes_client_calls_the_hermes_server_over_http_with_a_token() -> None:
    server = HermesMcpServer(build_registry())
    async with http_serving(server, bearer_token="tok-123") as url:
        config = ServerConfig(url=url, headers={"Authorization": "Bearer tok-123"}, timeout=5)
        connection = McpConnection("peer", config)
        try:
            connection.start()
            assert await connection.wait_ready(), connection.status()
            [adapted] = [t for t in connection.tools() if t.name == "peer__add"]
            registry = ToolRegistry([adapted])
            result = await execute_tool_call(
                registry, ToolCall("c1", "peer__add", {"a": 4, "b": 5}), ToolContext()
            )
        finally:
            await connection.aclose()
    assert result.ok, result.error
    assert result.output == {"text": "9", "structured": {"result": 9}}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "mcp.example.com"])
async def test_a_non_loopback_address_without_a_token_is_refused(host: str) -> None:
    server = HermesMcpServer(build_registry())
    async with asyncio.timeout(LIMIT_S):
        with pytest.raises(ConfigError, match="without a bearer token"):
            await server.serve_http(host=host, port=0)


@pytest.mark.parametrize("token", ["", "two words", "naïve"])
async def test_a_malformed_token_is_refused(token: str) -> None:
    server = HermesMcpServer(build_registry())
    async with asyncio.timeout(LIMIT_S):
        with pytest.raises(ConfigError, match="bearer token"):
            await server.serve_http(port=0, bearer_token=token)


@given(st.ip_addresses(v=4))
def test_only_127_slash_8_counts_as_ipv4_loopback(address: IPv4Address) -> None:
    assert is_loopback(str(address)) == str(address).startswith("127.")


@given(st.from_regex(r"[A-Za-z0-9\-._~+/]+=*", fullmatch=True))
def test_every_rfc6750_token_is_accepted(token: str) -> None:
    check_http_binding("0.0.0.0", token)


@given(st.text(min_size=1).filter(lambda t: any(c.isspace() or ord(c) > 127 for c in t)))
def test_a_token_with_spaces_or_non_ascii_is_refused(token: str) -> None:
    with pytest.raises(ConfigError):
        check_http_binding("127.0.0.1", token)


@pytest.mark.parametrize("path", ["mcp", "", "mcp/", " /mcp"])
def test_an_http_path_without_a_leading_slash_is_refused(path: str) -> None:
    with pytest.raises(ConfigError, match="must start with '/'") as caught:
        check_http_binding("127.0.0.1", None, path)
    assert repr(path) in str(caught.value)


@pytest.mark.parametrize("path", ["/mcp", "/", "/hermes/mcp"])
def test_an_http_path_with_a_leading_slash_is_accepted(path: str) -> None:
    check_http_binding("127.0.0.1", None, path)
    check_http_binding("0.0.0.0", "tok-123", path)


async def test_a_port_in_use_is_a_clear_error() -> None:
    server = HermesMcpServer(build_registry())
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        async with asyncio.timeout(LIMIT_S):
            with pytest.raises(McpServeError, match=f"cannot listen on 127.0.0.1:{port}"):
                await server.serve_http(port=port)


# -- an agent whose only tools come from a Hermes MCP server -----------------------------------


async def test_an_agent_uses_tools_served_by_a_hermes_mcp_server(tmp_path: Path) -> None:
    config = ServerConfig.model_validate(
        {"command": sys.executable, "args": [str(SCRIPT)], "timeout": 10}
    )
    connection = McpConnection("hermes", config)
    agent: Agent | None = None
    try:
        async with asyncio.timeout(LIMIT_S):
            connection.start()
            assert await connection.wait_ready(), connection.status()
            model = ScriptedModel(
                [call("hermes__forecast", {"city": "Oslo"}), say("It will be 22.5 °C in Oslo.")]
            )
            agent = Agent(model=model, tools=connection.tools(), store=tmp_path / "hermes.db")
            assert set(agent.tools.names()) == {f"hermes__{name}" for name in LOCAL_TOOLS}
            result = await agent.run("weather in Oslo?", session_id="session-mcp1")
    finally:
        if agent is not None:
            await agent.aclose()
        await connection.aclose()
    assert result.reply == "It will be 22.5 °C in Oslo."
    [made] = result.tool_calls
    assert (made.name, made.ok) == ("hermes__forecast", True)
    tool_message = model.requests[1].messages[-1]
    assert tool_message["role"] == "tool"
    assert '"high_c": 22.5' in tool_message["content"]
    model.assert_complete()


def build_registry_with(*extra: Any) -> ToolRegistry:
    registry = build_registry()
    for item in extra:
        registry.register(item)
    return registry


async def test_calls_run_through_the_executor_it_is_given() -> None:
    """``hermes mcp serve`` hands the server the agent's pipeline: its own steps see MCP calls."""
    from hermes.tools.pipeline import Call, CallContext, Next, ToolExecutor

    seen: list[CallContext] = []

    class Recorder:
        name = "recorder"

        async def __call__(self, call: Call, next: Next) -> ToolResult:
            seen.append(call.context)
            return await next(call)

    registry = build_registry()
    executor = ToolExecutor(registry)
    executor.insert(Recorder())
    server = HermesMcpServer(registry, user_id="u-1", executor=executor)
    async with connected(server) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error
    (ctx,) = seen
    assert (ctx.session_id, ctx.user_id, ctx.approved) == (MCP_SESSION_ID, "u-1", False)
    assert ctx.call_id.startswith("mcp-")
