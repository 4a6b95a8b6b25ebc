"""Keeping MCP servers connected: reconnect after a crash, late servers, the circuit breaker,
tool-list changes, and prompt shutdown in every state (real servers, bounded in time)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import mcp_types as types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.shared.exceptions import MCPError

from hermes.mcp import McpConnection, McpManager, ReconnectPolicy, ServerConfig
from hermes.tools.base import ToolResult
from tests.mcp.conftest import (
    FAST_RECONNECT,
    HttpServers,
    connected,
    eventually,
    free_port,
    gated_config,
    pid_alive,
    raw_config,
    stdio_config,
)


async def test_killed_stdio_server_is_unavailable_then_reconnected(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    config = stdio_config("--pid-file", str(pid_file), timeout=20)
    async with connected("victim", config, reconnect=FAST_RECONNECT) as conn:
        first = conn.pid
        assert first is not None
        assert first == int(pid_file.read_text())
        os.kill(first, signal.SIGKILL)
        await eventually(lambda: conn.state != "ready", what="noticing the dead server")
        result = await conn.call_tool("add", {"a": 1, "b": 2})
        # Refused at once while reconnecting, never left to the 20 s call timeout.
        assert result.error is not None
        assert result.error.type == "service_unavailable"
        assert "'victim'" in result.error.message
        assert conn.tools(), "the tools stay offered while reconnecting"
        assert await conn.wait_ready(20), conn.status()
        assert conn.pid not in (None, first)
        again = await conn.call_tool("add", {"a": 1, "b": 2})
        assert again.ok, again.error
        assert not pid_alive(first)


async def test_a_call_that_crashes_the_server_fails_and_a_later_call_works() -> None:
    async with connected("fragile", stdio_config(timeout=20), reconnect=FAST_RECONNECT) as conn:
        version = conn.version
        crashed = await conn.call_tool("crash", {})
        assert crashed.error is not None
        assert crashed.error.type == "service_unavailable"
        assert "'fragile'" in crashed.error.message
        assert conn.version > version
        assert await conn.wait_ready(20), conn.status()
        result = await conn.call_tool("echo", {"text": "back"})
        assert result.ok, result.error
        assert result.output["text"] == "back"


async def test_http_server_restarted_on_the_same_port_is_reconnected(
    http_servers: HttpServers,
) -> None:
    url, process = http_servers.start()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    config = ServerConfig(url=url, timeout=10, connect_timeout=5)
    async with connected("remote", config, reconnect=FAST_RECONNECT) as conn:
        http_servers.stop(process)
        down = await conn.call_tool("add", {"a": 1, "b": 2})
        assert down.error is not None
        assert down.error.type == "service_unavailable"
        assert conn.state == "reconnecting"
        http_servers.start(port)
        assert await conn.wait_ready(20), conn.status()
        result = await conn.call_tool("add", {"a": 2, "b": 2})
        assert result.ok, result.error
        assert result.output["text"] == "4"


async def test_late_server_after_a_connect_timeout_is_picked_up(
    http_servers: HttpServers,
) -> None:
    port = free_port()
    # Something that accepts connections on the port but never answers: the first attempt
    # runs into connect_timeout.
    mute = socket.socket()
    mute.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    mute.bind(("127.0.0.1", port))
    mute.listen(8)
    config = ServerConfig(url=f"http://127.0.0.1:{port}/mcp", connect_timeout=0.5)
    manager = McpManager({"late": config}, reconnect=FAST_RECONNECT)
    manager.start()
    try:
        await manager.wait_ready()
        (status,) = manager.status()
        assert status["state"] == "failed"
        assert "0.5 s" in status["error"]
        assert manager.tools() == []
        version = manager.version
        mute.close()
        http_servers.start(port)
        await eventually(lambda: bool(manager.tools()), within=20, what="the late server")
        assert manager.version != version
        assert "late__add" in {tool.name for tool in manager.tools()}
    finally:
        mute.close()
        await manager.aclose()


async def test_breaker_opens_after_failed_starts_then_recovers_half_open(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ready"
    policy = ReconnectPolicy(
        base_delay=0.02, max_delay=0.05, breaker_failures=3, breaker_cooldown=1.5, stable_after=0.2
    )
    config = gated_config(marker, "fail", connect_timeout=20)
    async with connected("flaky", config, ready=False, reconnect=policy) as conn:
        await eventually(lambda: conn.status()["breaker"] == "open", what="the open circuit")
        status = conn.status()
        assert status["state"] == "failed"
        assert status["failures"] == 3
        assert status["retry_at"] is not None
        assert "circuit open" in status["error"]
        assert "not yet" in status["error"]  # the server's own stderr explains why
        # While open, nothing is attempted (the cooldown is 1.5 s).
        await asyncio.sleep(0.3)
        assert conn.status()["failures"] == 3
        marker.touch()
        await eventually(lambda: conn.state == "ready", within=25, what="the half-open attempt")
        assert conn.status()["error"] is None
        # The half-open attempt succeeds once its session has stayed up stable_after.
        await eventually(lambda: conn.status()["breaker"] == "closed", what="the closed circuit")
        assert conn.status()["failures"] == 0


async def test_tool_list_change_is_picked_up_and_bumps_the_version() -> None:
    manager = McpManager({"grow": stdio_config()}, reconnect=FAST_RECONNECT)
    manager.start()
    try:
        await manager.wait_ready(20)
        assert "grow__sprout" not in {tool.name for tool in manager.tools()}
        version = manager.version
        plain = await manager.connection("grow").call_tool("add", {"a": 1, "b": 1})
        assert plain.ok
        assert manager.version == version  # a call changes nothing the agent must re-read
        result = await manager.connection("grow").call_tool("register_tool", {"name": "sprout"})
        assert result.ok, result.error
        await eventually(
            lambda: "grow__sprout" in {tool.name for tool in manager.tools()},
            what="the new tool",
        )
        assert manager.version > version
        sprout = manager.connection("grow").tool_for("sprout")
        assert sprout is not None
        answer = await sprout.fn(text="hi")
        assert answer.output["text"] == "sprout: hi"
    finally:
        await manager.aclose()


async def test_aclose_during_backoff_is_prompt(tmp_path: Path) -> None:
    slow_retry = ReconnectPolicy(base_delay=30, max_delay=60)
    conn = McpConnection("waiting", gated_config(tmp_path / "never", "fail"), reconnect=slow_retry)
    conn.start()
    await eventually(lambda: conn.state == "failed", what="the first failure")
    assert conn.status()["retry_at"] is not None
    await asyncio.wait_for(conn.aclose(), 5)
    assert conn.state == "closed"


async def test_aclose_while_connecting_leaves_no_process(tmp_path: Path) -> None:
    config = gated_config(tmp_path / "never", "hang", connect_timeout=60)
    conn = McpConnection("stuck", config, reconnect=FAST_RECONNECT)
    conn.start()
    await eventually(lambda: conn.pid is not None, what="the server process")
    pid = conn.pid
    assert pid is not None
    assert conn.state == "connecting"
    await asyncio.wait_for(conn.aclose(), 10)
    assert conn.state == "closed"
    assert conn.pid is None
    assert not pid_alive(pid)


async def test_aclose_while_reconnecting_leaves_no_process(tmp_path: Path) -> None:
    marker = tmp_path / "open"
    marker.touch()
    config = gated_config(marker, "hang", connect_timeout=60)
    conn = McpConnection("gone", config, reconnect=FAST_RECONNECT)
    conn.start()
    new_pid: int | None = None
    try:
        assert await conn.wait_ready(20), conn.status()
        first = conn.pid
        assert first is not None
        marker.unlink()  # the next attempt's server hangs at start
        os.kill(first, signal.SIGKILL)
        await eventually(lambda: conn.state == "reconnecting", what="the loss")
        await eventually(lambda: conn.pid not in (None, first), what="the next attempt's process")
        new_pid = conn.pid
        assert conn.state == "reconnecting"
    finally:
        await asyncio.wait_for(conn.aclose(), 10)
    assert conn.state == "closed"
    assert new_pid is not None
    assert not pid_alive(first)
    assert not pid_alive(new_pid)
    # The server led its own process group; nothing of it is left.
    with pytest.raises(ProcessLookupError):
        os.killpg(new_pid, 0)


async def test_a_server_that_crashes_after_listing_backs_off_and_opens_its_circuit() -> None:
    policy = ReconnectPolicy(
        base_delay=0.02, max_delay=0.05, breaker_failures=3, breaker_cooldown=60, stable_after=5
    )
    async with connected(
        "flappy", raw_config("crash_after_list"), ready=False, reconnect=policy
    ) as conn:
        await eventually(lambda: conn.status()["breaker"] == "open", what="the open circuit")
        status = conn.status()
        assert status["state"] == "failed"
        assert status["failures"] == 3
        assert "circuit open" in status["error"]
        assert "lost within 5 s of connecting" in status["error"]
        assert conn.tools() == []  # a failed server's tools are withdrawn


async def test_a_session_that_stays_up_resets_the_failures() -> None:
    policy = ReconnectPolicy(base_delay=0.02, max_delay=0.05, stable_after=0.3)
    async with connected("steady", stdio_config(), reconnect=policy) as conn:
        first = conn.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)  # lost at once: counts as a failed connect
        await eventually(lambda: conn.status()["failures"] == 1, what="the counted failure")
        assert await conn.wait_ready(20), conn.status()
        await eventually(lambda: conn.status()["failures"] == 0, what="the stable session")
        assert conn.status()["breaker"] == "closed"


async def test_an_unchanged_listing_keeps_the_tools_and_the_version() -> None:
    conn = McpConnection("same", stdio_config())
    listed = [
        types.Tool(name="add", description="Add.", input_schema={"type": "object"}),
        types.Tool(name="echo", description="Echo.", input_schema={"type": "object"}),
    ]
    assert conn._owner.adopt_tools(listed, [])
    version, tools = conn.version, list(conn._offer.tools)
    again = [tool.model_copy(deep=True) for tool in listed]
    assert not conn._owner.adopt_tools(again, [])
    assert conn.version == version
    assert conn._offer.tools == tools
    changed = [listed[0], listed[1].model_copy(update={"description": "Echo it back."})]
    assert conn._owner.adopt_tools(changed, [])
    assert conn.version > version


async def test_a_late_error_of_a_replaced_session_does_not_tear_down_the_live_one() -> None:
    conn = McpConnection("swap", stdio_config())
    old, live = object(), object()
    conn._owner.session = old  # type: ignore[assignment]
    conn.state = "ready"

    async def send(session: object) -> None:
        conn._owner.session = live  # type: ignore[assignment]  # a reconnect happened meanwhile
        raise MCPError(types.CONNECTION_CLOSED, "Connection closed")

    result = await conn.request("the call of 'x'", send)  # type: ignore[arg-type]
    assert isinstance(result, ToolResult)
    assert result.error is not None
    assert result.error.type == "service_unavailable"
    assert conn.state == "ready"
    assert conn._owner.lost is None


@given(
    failures=st.integers(min_value=0, max_value=10_000),
    draw=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_backoff_doubles_up_to_the_cap_with_jitter_down_to_half(failures: int, draw: float) -> None:
    policy = ReconnectPolicy(base_delay=0.5, max_delay=30, random=lambda: draw)
    # base · 2^(n-1) after n failures (0 waits as 1); 2**64 · 0.5 is far past the cap.
    ceiling = min(30.0, 0.5 * 2 ** min(max(failures - 1, 0), 64))
    delay = policy.delay(failures)
    assert ceiling / 2 <= delay <= ceiling


def test_the_default_backoff_is_half_a_second_doubling_to_thirty() -> None:
    # The schedule docs/mcp.md promises: 0.5 s doubling to 30 s (the waits' upper ends).
    policy = ReconnectPolicy(random=lambda: 1.0)
    assert [policy.delay(n) for n in range(9)] == [0.5, 0.5, 1, 2, 4, 8, 16, 30, 30]


@pytest.mark.parametrize(
    "fields",
    [
        {"base_delay": 0},
        {"max_delay": float("inf")},
        {"base_delay": 2, "max_delay": 1},
        {"breaker_failures": 0},
        {"breaker_cooldown": -1},
        {"stable_after": 0},
    ],
)
def test_reconnect_policy_rejects_nonsense(fields: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"ReconnectPolicy|BreakerPolicy"):
        ReconnectPolicy(**fields)  # type: ignore[arg-type]
