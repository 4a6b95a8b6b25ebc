"""The reference MCP servers from npm, and how the interop tests start, call and stop them.

``make test`` installs the servers pinned in ``package-lock.json`` beside this file with
``npm ci`` into ``.cache/mcp-servers/`` (``make mcp-servers`` does only that), so plain
``pytest`` finds them afterwards. Without ``node`` these tests skip, saying why. With ``node``
but without the installed (or with outdated) packages they fail: a broken install is a broken
test setup, not a reason to test less.

Every wait is bounded (``LIMIT_S``); every server a test starts is stopped in a ``finally``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from hermes.mcp import McpConnection, ServerConfig
from hermes.models.base import ToolCall
from hermes.tools.base import Tool, ToolContext, ToolResult
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry
from tests.mcp.conftest import CONNECT_LIMIT_S, free_port, stop_process

INTEROP = Path(__file__).resolve().parent
REPO = INTEROP.parents[2]
SERVERS_DIR = REPO / ".cache" / "mcp-servers"
LOOPBACK = INTEROP / "loopback.cjs"
NODE = shutil.which("node")
EVERYTHING = "@modelcontextprotocol/server-everything"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
#: The bound on any single wait in these tests (a start, a call, a reconnect, a close); the
#: same as ``tests.mcp.conftest.connected``'s, which these tests use too.
LIMIT_S = CONNECT_LIMIT_S

HttpTransport = Literal["streamable_http", "sse"]
#: server-everything's own names for its HTTP transports (its first argument), and URL paths.
_EVERYTHING_MODES: dict[HttpTransport, tuple[str, str]] = {
    "streamable_http": ("streamableHttp", "/mcp"),
    "sse": ("sse", "/sse"),
}
_call_ids = itertools.count(1)


@dataclass(frozen=True)
class ReferenceServers:
    """The installed reference servers: ``node`` and each package's entry script."""

    node: str
    everything: Path
    filesystem: Path

    def everything_stdio(self, **fields: Any) -> ServerConfig:
        return ServerConfig.model_validate(
            {"command": self.node, "args": [str(self.everything), "stdio"], **fields}
        )

    def filesystem_stdio(self, *roots: Path, **fields: Any) -> ServerConfig:
        args = [str(self.filesystem), *(str(root) for root in roots)]
        return ServerConfig.model_validate({"command": self.node, "args": args, **fields})


@pytest.fixture(scope="session")
def servers() -> ReferenceServers:
    """The reference servers installed by ``make test``; skips only when node is absent."""
    if NODE is None:
        pytest.skip(
            "node is not installed: the MCP interop tests run the reference servers "
            f"({EVERYTHING}, {FILESYSTEM}) with Node.js"
        )
    pins = json.loads((INTEROP / "package.json").read_text(encoding="utf-8"))["dependencies"]
    return ReferenceServers(
        node=NODE, everything=_entry(EVERYTHING, pins), filesystem=_entry(FILESYSTEM, pins)
    )


def _entry(package: str, pins: dict[str, str]) -> Path:
    """The installed ``package``'s executable script, after checking it is the pinned version."""
    manifest = SERVERS_DIR / "node_modules" / package / "package.json"
    hint = (
        "run `make mcp-servers` (`make test` does it; it needs npm and the npm registry) to "
        f"install {INTEROP.relative_to(REPO)}/package-lock.json into "
        f"{SERVERS_DIR.relative_to(REPO)}"
    )
    if not manifest.is_file():
        pytest.fail(f"{package} is not installed, though node is: {hint}", pytrace=False)
    data = json.loads(manifest.read_text(encoding="utf-8"))
    if data.get("version") != pins[package]:
        pytest.fail(
            f"{package} {data.get('version')} is installed but {pins[package]} is pinned: {hint}",
            pytrace=False,
        )
    bins = data["bin"]
    script = manifest.parent / (bins if isinstance(bins, str) else next(iter(bins.values())))
    if not script.is_file():
        pytest.fail(f"{package}: its entry script {script} is missing: {hint}", pytrace=False)
    return script


# -- calls through Hermes --------------------------------------------------------------------


async def run_tool(tools: Iterable[Tool], name: str, arguments: dict[str, Any]) -> ToolResult:
    """Call ``name`` through the executor pipeline, as the agent does (bounded)."""
    registry = ToolRegistry(tools)
    call = ToolCall(f"call-{next(_call_ids)}", name, arguments)
    return await asyncio.wait_for(execute_tool_call(registry, call, ToolContext()), LIMIT_S)


def counting(tool: Tool) -> tuple[Tool, list[dict[str, Any]]]:
    """``tool`` with its function wrapped to record every call that reaches it (and thus the
    wire): a call refused by local validation never shows up in the list."""
    reached: list[dict[str, Any]] = []
    inner = tool.fn

    async def fn(**arguments: Any) -> Any:
        reached.append(arguments)
        return await inner(**arguments)

    return dataclasses.replace(tool, fn=fn), reached


def tool_named(connection: McpConnection, name: str) -> Tool:
    found = [tool for tool in connection.tools() if tool.name == name]
    assert found, f"{name} not among {[tool.name for tool in connection.tools()]}"
    return found[0]


async def wait_until(predicate: Any, what: str, limit: float = LIMIT_S) -> None:
    """Poll ``predicate()`` every 10 ms until true; fail naming ``what`` after ``limit`` s."""
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {limit:g} s waiting for {what}")
        await asyncio.sleep(0.01)


# -- server-everything over HTTP ---------------------------------------------------------------


class EverythingHttpServer:
    """server-everything over streamable HTTP or SSE on 127.0.0.1, as a child process.

    It reads its port from ``PORT``; ``loopback.cjs`` makes it bind 127.0.0.1 only. ``start``
    again after ``kill`` brings a new process up on the same port (the reconnect tests).
    """

    def __init__(self, servers: ReferenceServers, transport: HttpTransport, log: Path) -> None:
        self.servers = servers
        self.transport = transport
        self.log = log
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{_EVERYTHING_MODES[self.transport][1]}"

    @property
    def config(self) -> ServerConfig:
        return ServerConfig(url=self.url, transport=self.transport)

    def start(self) -> None:
        """Start the server and wait (bounded) until it accepts connections."""
        assert self.process is None, "already running"
        mode = _EVERYTHING_MODES[self.transport][0]
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
        env["PORT"] = str(self.port)
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [self.servers.node, "--require", str(LOOPBACK), str(self.servers.everything), mode],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + LIMIT_S
        while not self._accepts():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = self.log.read_text(encoding="utf-8", errors="replace")[-800:]
                pytest.fail(f"server-everything ({mode}) did not start on {self.url}: {tail}")
            time.sleep(0.02)

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would."""
        process = self.process
        assert process is not None, "not running"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=LIMIT_S)
        self.process = None

    def stop(self) -> None:
        """Stop the server if it runs (SIGTERM, then SIGKILL); safe to call twice."""
        process, self.process = self.process, None
        if process is not None:
            stop_process(process)

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False


@pytest.fixture(scope="module")
def everything_http(
    servers: ReferenceServers, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[HttpTransport, EverythingHttpServer]]:
    """server-everything over streamable HTTP and over SSE, shared by a test module."""
    logs = tmp_path_factory.mktemp("everything-logs")
    started: dict[HttpTransport, EverythingHttpServer] = {}
    try:
        for transport in _EVERYTHING_MODES:
            server = EverythingHttpServer(servers, transport, logs / f"{transport}.log")
            started[transport] = server
            server.start()
        yield started
    finally:
        for server in started.values():
            server.stop()
