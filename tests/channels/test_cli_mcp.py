"""``hermes mcp list|call`` and ``hermes run`` with an MCP server, as real subprocesses.

The MCP server is the test server of ``tests/mcp/servers/basic_server.py`` over stdio, started
by the ``hermes`` process itself from the configuration.
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from tests.channels.conftest import RUN_JSON_KEYS, Hermes, write_config
from tests.channels.test_cli_model import model_config
from tests.mcp.conftest import SERVER_SCRIPT
from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall


def mcp_config(*, name: str = "calc", extra: str = "") -> str:
    return (
        "mcp_servers:\n"
        f"  {name}:\n"
        f"    command: {json.dumps(sys.executable)}\n"
        f"    args: [{json.dumps(str(SERVER_SCRIPT))}]\n"
        "    connect_timeout: 20\n"
        f"{extra}"
    )


def test_list_without_servers_prints_an_empty_list(hermes: Hermes) -> None:
    result = hermes("mcp", "list", "--json")
    assert result.returncode == 0, result
    assert result.json() == []
    text = hermes("mcp", "list")
    assert text.returncode == 0, text
    assert "no MCP servers configured" in text.stderr


def test_list_shows_state_and_prefixed_tools(hermes: Hermes) -> None:
    broken = "  broken:\n    command: /nonexistent/mcp-server\n    connect_timeout: 5\n"
    write_config(hermes.cwd, mcp_config() + broken)
    result = hermes("mcp", "list", "--json")
    assert result.returncode == 0, result
    rows = {row["name"]: row for row in result.json()}
    assert rows["calc"]["state"] == "ready"
    assert rows["calc"]["transport"] == "stdio"
    assert {"calc__add", "calc__echo"} <= set(rows["calc"]["tools"])
    assert rows["broken"]["state"] == "failed"
    assert "broken" in rows["broken"]["error"]
    assert "not found" in rows["broken"]["error"]
    table = hermes("mcp", "list")
    assert table.returncode == 0, table
    assert "calc__add" in table.stdout


def test_list_reports_a_clash_with_a_plugin_tool_the_agent_has(hermes: Hermes) -> None:
    plugins = hermes.cwd / "plugins"
    plugins.mkdir()
    (plugins / "calc_plugin.py").write_text(
        "from hermes import tool\n\n\n@tool\ndef calc__add(a: int, b: int) -> int:\n"
        '    """A local add whose name a remote tool would take."""\n    return a + b\n',
        encoding="utf-8",
    )
    write_config(hermes.cwd, "tools:\n  plugins_dir: plugins\n" + mcp_config())
    result = hermes("mcp", "list", "--json")
    assert result.returncode == 0, result
    (row,) = result.json()
    assert row["state"] == "ready"
    # The agent keeps its plugin tool of that name: the remote one is reported, not offered.
    assert any("'calc__add'" in c and "a local tool" in c for c in row["collisions"])


def test_call_runs_the_server_tool_by_its_own_name(hermes: Hermes) -> None:
    write_config(hermes.cwd, mcp_config())
    result = hermes("mcp", "call", "calc", "add", "--args", '{"a": 2, "b": "40"}', "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert data["ok"] is True
    assert data["error"] is None
    assert data["output"]["text"] == "42"  # "40" coerced locally by the input schema
    assert (data["server"], data["tool"]) == ("calc", "add")
    text = hermes("mcp", "call", "calc", "echo", "--args", '{"text": "你好"}')
    assert text.returncode == 0, text
    assert text.stdout == "你好\n"


def test_call_with_invalid_arguments_fails_before_the_wire(hermes: Hermes) -> None:
    write_config(hermes.cwd, mcp_config())
    result = hermes("mcp", "call", "calc", "add", "--args", '{"a": "two"}', "--json")
    assert result.returncode == 3, result
    error = result.json()["error"]
    assert error["type"] == "invalid_arguments"
    assert "a" in error["message"]
    assert "b" in error["message"]


def test_call_of_a_failing_tool_exits_3_with_the_server_message(hermes: Hermes) -> None:
    write_config(hermes.cwd, mcp_config())
    result = hermes("mcp", "call", "calc", "fail")
    assert result.returncode == 3, result
    result.assert_no_traceback()
    assert "mcp_tool_error" in result.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["calc", "add", "--args", "{not json"], "not valid JSON"),
        (["calc", "add", "--args", "[1, 2]"], "must be a JSON object"),
        (["nosuch", "add"], "no MCP server named 'nosuch'"),
        (["calc", "nosuch"], "has no tool 'nosuch'"),
    ],
)
def test_refused_calls_exit_2_with_one_clear_error(
    hermes: Hermes, args: list[str], needle: str
) -> None:
    write_config(hermes.cwd, mcp_config())
    result = hermes("mcp", "call", *args, "--json")
    assert result.returncode == 2, result
    error = result.json()["error"]
    assert needle in error["message"]


def test_a_refused_call_in_text_mode_says_why_on_stderr(hermes: Hermes) -> None:
    result = hermes("mcp", "call", "calc", "add", "--args", "{oops")
    assert result.returncode == 2, result
    assert "not valid JSON" in result.stderr
    result.assert_no_traceback()


def test_bad_mcp_config_names_file_and_key(hermes: Hermes) -> None:
    write_config(hermes.cwd, "mcp_servers:\n  calc: {command: x, url: 'http://127.0.0.1:1/mcp'}\n")
    result = hermes("mcp", "list", "--json")
    assert result.returncode == 2, result
    message = result.json()["error"]["message"]
    assert "hermes.yaml" in message
    assert "mcp_servers.calc" in message


def test_run_offers_the_mcp_tools_in_the_first_turn(hermes: Hermes, server: FakeChatServer) -> None:
    server.push(
        Reply.calls(ScriptedCall("calc__add", {"a": 20, "b": 22})),
        Reply.text("20 + 22 = 42"),
    )
    write_config(hermes.cwd, model_config(server.base_url) + mcp_config())
    result = hermes("run", "add 20 and 22", "--json")
    assert result.returncode == 0, result
    data = result.json()
    assert set(data) == RUN_JSON_KEYS | {"usage"}  # the fake server reports usage
    assert data["tool_calls"] == [
        {"name": "calc__add", "arguments": {"a": 20, "b": 22}, "ok": True}
    ]
    first = server.requests[0]
    offered = {t["function"]["name"] for t in first["tools"]}
    assert {"calc__add", "calculator", "current_time"} <= offered


async def test_serve_over_stdio_answers_the_official_sdk_client(hermes: Hermes) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=hermes.executable, args=["mcp", "serve"], env=hermes.env(), cwd=str(hermes.cwd)
    )

    async def session() -> tuple[set[str], str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            result = await client.call_tool("calculator", {"expression": "15*27"})
            text = result.content[0].text if result.content else ""
            return {t.name for t in listed.tools}, str(text)

    names, text = await asyncio.wait_for(session(), 60)
    assert {"calculator", "current_time"} <= names
    assert "405" in text


async def test_serve_with_mcp_tools_picks_up_a_changed_tool_list(hermes: Hermes) -> None:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    write_config(hermes.cwd, mcp_config() + "mcp_serve:\n  include_mcp_tools: true\n")
    params = StdioServerParameters(
        command=hermes.executable, args=["mcp", "serve"], env=hermes.env(), cwd=str(hermes.cwd)
    )

    async def session() -> tuple[set[str], set[str]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            before = {t.name for t in (await client.list_tools()).tools}
            await client.call_tool("calc__register_tool", {"name": "brand_new"})
            after: set[str] = set()
            for _ in range(50):  # the notification reaches Hermes asynchronously
                after = {t.name for t in (await client.list_tools()).tools}
                if "calc__brand_new" in after:
                    break
                await asyncio.sleep(0.1)
            return before, after

    before, after = await asyncio.wait_for(session(), 90)
    assert {"calc__add", "calculator"} <= before
    assert "calc__brand_new" not in before
    assert "calc__brand_new" in after


def test_serve_refuses_a_public_host_without_a_token(hermes: Hermes) -> None:
    result = hermes("mcp", "serve", "--transport", "http", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2, result
    result.assert_no_traceback()
    assert "token" in result.stderr
