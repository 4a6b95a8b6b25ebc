"""Starting, failing and closing MCP connections: every failure names the server, in time."""

from __future__ import annotations

import sys
from pathlib import Path

from hermes.mcp import McpConnection, McpManager, ServerConfig
from tests.mcp.conftest import free_port, pid_alive, stdio_config


async def test_missing_command_fails_naming_the_server() -> None:
    conn = McpConnection("ghost", ServerConfig(command="hermes-no-such-mcp-server-xyz"))
    conn.start()
    assert not await conn.wait_ready()
    assert conn.state == "failed"
    assert conn.error is not None
    assert "'ghost'" in conn.error
    assert "hermes-no-such-mcp-server-xyz" in conn.error
    await conn.aclose()


async def test_server_that_hangs_at_start_fails_within_connect_timeout() -> None:
    config = ServerConfig(
        command=sys.executable, args=["-c", "import time; time.sleep(60)"], connect_timeout=0.5
    )
    conn = McpConnection("sleepy", config)
    conn.start()
    # wait_ready's own limit is far beyond connect_timeout: only the connection's deadline
    # can make it return failed here.
    assert not await conn.wait_ready(timeout=20)
    assert conn.state == "failed"
    assert conn.error is not None
    assert "'sleepy'" in conn.error
    assert "0.5 s" in conn.error
    await conn.aclose()


async def test_server_that_exits_at_start_reports_its_stderr() -> None:
    script = "import sys; print('cannot open database', file=sys.stderr); sys.exit(3)"
    conn = McpConnection("crashy", ServerConfig(command=sys.executable, args=["-c", script]))
    conn.start()
    assert not await conn.wait_ready()
    assert conn.error is not None
    assert "'crashy'" in conn.error
    assert "cannot open database" in conn.error
    await conn.aclose()


async def test_unreachable_http_server_fails_naming_the_server() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    conn = McpConnection("nowhere", ServerConfig(url=url, connect_timeout=3))
    conn.start()
    assert not await conn.wait_ready()
    assert conn.error is not None
    assert "'nowhere'" in conn.error
    await conn.aclose()


async def test_aclose_leaves_no_server_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    conn = McpConnection("tidy", stdio_config("--pid-file", str(pid_file)))
    conn.start()
    assert await conn.wait_ready(), conn.status()
    pid = int(pid_file.read_text())
    assert pid_alive(pid)
    await conn.aclose()
    assert conn.state == "closed"
    assert not pid_alive(pid)


async def test_calls_after_close_are_refused_as_unavailable() -> None:
    conn = McpConnection("gone", stdio_config())
    conn.start()
    assert await conn.wait_ready()
    await conn.aclose()
    result = await conn.call_tool("add", {"a": 1, "b": 2})
    assert result.error is not None
    assert result.error.type == "service_unavailable"
    assert "'gone'" in result.error.message
    assert conn.tools() == []


async def test_manager_connects_servers_concurrently_and_reports_status() -> None:
    configs = {
        "one": stdio_config(),
        "two": stdio_config(prefix="second", tools={"include": ["add", "echo"]}),
        "broken": ServerConfig(command="hermes-no-such-mcp-server-xyz"),
        "off": stdio_config(enabled=False),
    }
    async with McpManager(configs) as manager:
        await manager.wait_ready()
        names = {tool.name for tool in manager.tools()}
        assert {"one__add", "second__add", "second__echo"} <= names
        assert "second__fail" not in names
        status = {entry["name"]: entry for entry in manager.status()}
        assert status["one"]["state"] == "ready"
        assert status["broken"]["state"] == "failed"
        assert "'broken'" in status["broken"]["error"]
        assert status["off"]["state"] == "disabled"
        assert status["two"]["tools"] == ["second__add", "second__echo"]


async def test_manager_never_lets_a_remote_tool_shadow_a_local_one() -> None:
    async with McpManager({"one": stdio_config(tools={"include": ["add"]})}) as manager:
        await manager.wait_ready()
        assert manager.tools(reserved={"one__add"}) == []
        (collision,) = manager.collisions
        assert collision.server == "one"
        assert "local tool" in collision.reason


async def test_closing_right_after_start_ends_closed_without_a_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    conn = McpConnection("brief", stdio_config("--pid-file", str(pid_file)))
    conn.start()
    await conn.aclose()
    assert conn.state == "closed"
    assert not pid_file.exists()


async def test_closing_a_never_started_connection_is_harmless() -> None:
    conn = McpConnection("idle", stdio_config())
    await conn.aclose()
    assert conn.state == "closed"
    assert not await conn.wait_ready(timeout=0.1)
