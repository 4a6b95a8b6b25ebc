"""Shared helpers of the MCP tests: the tiny test server and how to start it."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import pytest

from hermes.mcp import McpConnection, ReconnectPolicy, ServerConfig

SERVER_SCRIPT = Path(__file__).parent / "servers" / "basic_server.py"
RAW_SERVER_SCRIPT = Path(__file__).parent / "servers" / "raw_server.py"

#: Reconnect numbers shrunk for tests: retries within tens of milliseconds, a breaker that
#: only the breaker tests reach.
FAST_RECONNECT = ReconnectPolicy(
    base_delay=0.05, max_delay=0.3, breaker_failures=1_000, breaker_cooldown=1.0
)


#: The bound on waiting for a connection to be ready, and on closing it, in ``connected``.
CONNECT_LIMIT_S = 20.0


@asynccontextmanager
async def connected(
    name: str, config: ServerConfig, *, ready: bool = True, **kw: Any
) -> AsyncIterator[McpConnection]:
    """A started ``McpConnection(name, config, **kw)``, closed after (bounded) however the
    block ends; the exit is ``aclose()``, so code after the block sees it closed.

    With ``ready`` (the default) it is asserted ready first (within ``CONNECT_LIMIT_S``);
    ``ready=False`` yields it right after ``start()``, for tests of failing starts.
    """
    connection = McpConnection(name, config, **kw)
    connection.start()
    try:
        if ready:
            assert await connection.wait_ready(CONNECT_LIMIT_S), connection.status()
        yield connection
    finally:
        await asyncio.wait_for(connection.aclose(), CONNECT_LIMIT_S)


def stdio_config(*extra_args: str, **fields: object) -> ServerConfig:
    """The test server over stdio, run by this interpreter."""
    return ServerConfig.model_validate(
        {"command": sys.executable, "args": [str(SERVER_SCRIPT), *extra_args], **fields}
    )


def raw_config(mode: str, *extra_args: str, **fields: object) -> ServerConfig:
    """The misbehaving raw server (``servers/raw_server.py``) in ``mode``, over stdio."""
    args = [str(RAW_SERVER_SCRIPT), mode, *extra_args]
    return ServerConfig.model_validate({"command": sys.executable, "args": args, **fields})


#: Runs the test server once ``marker`` exists (exec: same pid). Until then, mode ``fail``
#: exits at once (code 3, a line on stderr) and mode ``hang`` reads its stdin to the end
#: without answering. Plain Python: a refused start costs no SDK import.
_GATE = """
import os, sys
marker, mode, server = sys.argv[1:4]
if not os.path.exists(marker):
    if mode == "fail":
        print("not yet: " + marker + " is missing", file=sys.stderr)
        sys.exit(3)
    sys.stdin.buffer.read()
    sys.exit(0)
os.execv(sys.executable, [sys.executable, server, *sys.argv[4:]])
"""


def gated_config(
    marker: Path, mode: Literal["fail", "hang"], *server_args: str, **fields: object
) -> ServerConfig:
    """The test server over stdio behind a gate that opens when ``marker`` exists."""
    args = ["-c", _GATE, str(marker), mode, str(SERVER_SCRIPT), *server_args]
    return ServerConfig.model_validate({"command": sys.executable, "args": args, **fields})


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes once it is no longer running.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state != "Z"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def eventually(
    predicate: Callable[[], bool], within: float = 10.0, what: str = "condition"
) -> None:
    """Wait (polling) until ``predicate()`` holds; fail the test after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        if loop.time() > deadline:
            pytest.fail(f"{what} did not happen within {within:g} s")
        await asyncio.sleep(0.02)


def stop_process(process: subprocess.Popen[Any], grace: float = 5.0) -> None:
    """Stop a server process: SIGTERM, then SIGKILL after ``grace`` seconds; reaped either way."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=grace)


class HttpServers:
    """Starts test servers over streamable HTTP and stops every one it started."""

    def __init__(self) -> None:
        self._processes: list[subprocess.Popen[str]] = []

    def start(self, port: int = 0, *extra_args: str) -> tuple[str, subprocess.Popen[str]]:
        """A running server: its URL and its process (the port is printed first thing)."""
        process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--http", "--port", str(port), *extra_args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self._processes.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), f"test server did not start: {line!r}"
        return f"http://127.0.0.1:{int(line.split()[1])}/mcp", process

    @staticmethod
    def stop(process: subprocess.Popen[str]) -> None:
        stop_process(process)
        if process.stdout is not None:
            process.stdout.close()

    def stop_all(self) -> None:
        for process in self._processes:
            if process.poll() is None or (process.stdout and not process.stdout.closed):
                self.stop(process)


@pytest.fixture
def http_servers() -> Iterator[HttpServers]:
    servers = HttpServers()
    try:
        yield servers
    finally:
        servers.stop_all()


@pytest.fixture(scope="module")
def http_server_url() -> Iterator[str]:
    """The test server over streamable HTTP on 127.0.0.1 (ephemeral port), stopped after."""
    servers = HttpServers()
    try:
        url, _ = servers.start()
        yield url
    finally:
        servers.stop_all()
