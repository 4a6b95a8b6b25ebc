"""Starting, failing and closing MCP connections: every failure names the server, in time."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from hermes.mcp import McpConnection, McpManager, ReconnectPolicy, ServerConfig
from hermes.tools.base import ToolResult
from tests.mcp.conftest import (
    FAST_RECONNECT,
    connected,
    free_port,
    pid_alive,
    raw_config,
    stdio_config,
)


async def test_missing_command_fails_naming_the_server() -> None:
    config = ServerConfig(command="hermes-no-such-mcp-server-xyz")
    async with connected("ghost", config, ready=False) as conn:
        assert not await conn.wait_ready()
        assert conn.state == "failed"
        assert conn.error is not None
        assert "'ghost'" in conn.error
        assert "hermes-no-such-mcp-server-xyz" in conn.error


async def test_server_that_hangs_at_start_fails_within_connect_timeout() -> None:
    config = ServerConfig(
        command=sys.executable, args=["-c", "import time; time.sleep(60)"], connect_timeout=0.5
    )
    async with connected("sleepy", config, ready=False) as conn:
        # wait_ready's own limit is far beyond connect_timeout: only the connection's deadline
        # can make it return failed here.
        assert not await conn.wait_ready(timeout=20)
        assert conn.state == "failed"
        assert conn.error is not None
        assert "'sleepy'" in conn.error
        assert "0.5 s" in conn.error


async def test_server_that_exits_at_start_reports_its_stderr() -> None:
    script = "import sys; print('cannot open database', file=sys.stderr); sys.exit(3)"
    config = ServerConfig(command=sys.executable, args=["-c", script])
    async with connected("crashy", config, ready=False) as conn:
        assert not await conn.wait_ready()
        assert conn.error is not None
        assert "'crashy'" in conn.error
        assert "cannot open database" in conn.error


async def test_unreachable_http_server_fails_naming_the_server() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    async with connected("nowhere", ServerConfig(url=url, connect_timeout=3), ready=False) as conn:
        assert not await conn.wait_ready()
        assert conn.error is not None
        assert "'nowhere'" in conn.error


async def test_aclose_leaves_no_server_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    async with connected("tidy", stdio_config("--pid-file", str(pid_file))) as conn:
        pid = int(pid_file.read_text())
        assert pid_alive(pid)
    # The block's exit is aclose().
    assert conn.state == "closed"
    assert not pid_alive(pid)


async def test_calls_after_close_are_refused_as_unavailable() -> None:
    async with connected("gone", stdio_config()) as conn:
        pass
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
    async with connected("brief", stdio_config("--pid-file", str(pid_file)), ready=False) as conn:
        pass  # closed right after start()
    assert conn.state == "closed"
    assert not pid_file.exists()


async def test_closing_a_never_started_connection_is_harmless() -> None:
    conn = McpConnection("idle", stdio_config())
    await conn.aclose()
    assert conn.state == "closed"
    assert not await conn.wait_ready(timeout=0.1)


async def test_a_start_past_its_deadline_fails_at_once_and_closes_in_the_background(
    tmp_path: Path,
) -> None:
    """A server that ignores the end of its input and SIGTERM (and has a child doing the
    same): the failure is recorded when connect_timeout passes — while the transport is
    still being closed — and nothing of it is left after aclose()."""
    pids_file = tmp_path / "pids"
    slow_retry = ReconnectPolicy(base_delay=30, max_delay=60)
    config = raw_config("hang", str(pids_file), connect_timeout=1.5)
    async with connected("stubborn", config, ready=False, reconnect=slow_retry) as conn:
        assert not await conn.wait_ready(timeout=30)
        assert conn.state == "failed"
        assert conn.error is not None
        assert "'stubborn'" in conn.error
        assert "1.5 s" in conn.error
        # Recorded before the teardown: the server (stopped only after the SDK's grace
        # period) still runs.
        assert conn.pid is not None
        assert pid_alive(conn.pid)
        result = await conn.call_tool("ping", {})
        assert result.error is not None
        assert "1.5 s" in result.error.message
    # The block's exit is aclose(), bounded by CONNECT_LIMIT_S (20 s).
    assert conn.state == "closed"
    assert pids_file.exists(), "the server never started"
    server, child = (int(pid) for pid in pids_file.read_text().split())
    assert not pid_alive(server)
    assert not pid_alive(child)


def test_a_connection_used_from_two_event_loops_reconnects_on_the_second() -> None:
    conn = McpConnection("twice", stdio_config(), reconnect=FAST_RECONNECT)

    async def first() -> int | None:
        conn.start()
        assert await conn.wait_ready(20), conn.status()
        return conn.pid

    pid = asyncio.run(first())  # the loop ends with the owner still running
    assert pid is not None
    assert not pid_alive(pid)

    async def second() -> tuple[bool, ToolResult]:
        ready = await conn.wait_ready(20)
        result = await conn.call_tool("add", {"a": 1, "b": 2})
        await conn.aclose()  # must not raise the first owner's cancellation
        return ready, result

    ready, result = asyncio.run(second())
    assert ready
    assert result.ok, result.error
    assert result.output["text"] == "3"
    assert conn.state == "closed"


def test_aclose_after_the_owners_loop_ended_does_not_raise() -> None:
    manager = McpManager({"one": stdio_config()}, reconnect=FAST_RECONNECT)

    async def first() -> None:
        manager.start()
        await manager.wait_ready(20)

    asyncio.run(first())
    asyncio.run(manager.aclose())
    assert [row["state"] for row in manager.status()] == ["closed"]


async def test_status_rows_carry_the_collisions_of_their_server() -> None:
    configs = {"one": stdio_config(tools={"include": ["add", "echo"]}), "two": stdio_config()}
    async with McpManager(configs, reconnect=FAST_RECONNECT) as manager:
        await manager.wait_ready(20)
        manager.tools(reserved={"one__add"})
        rows = {row["name"]: row for row in manager.status()}
        (reason,) = rows["one"]["collisions"]
        assert "one__add" in reason
        assert "local tool" in reason
        assert rows["two"]["collisions"] == []
