"""Connections to MCP servers (issue 4 §3), on the official SDK's transports and ``ClientSession``.

Each :class:`McpConnection` has one owner task that opens the transport and the session, runs
``initialize`` and the tool listing, then waits for the stop event and closes everything it
opened — open and close in the same task (STYLE §7), as the SDK's anyio task groups require.
Calls from other tasks go through the live session. Start, initialize and listing together are
bounded by ``connect_timeout``: past it the connection is ``failed`` with a reason naming the
server, whatever the server is doing, and the owner tears the transport down in the background.

States: ``disabled`` (never started) → ``connecting`` → ``ready`` → ``closed``, or ``failed``
with ``error`` set. Reconnect with backoff and ``notifications/tools/list_changed`` are the next
steps: they hook in at :meth:`McpConnection._connection_lost` and :meth:`McpConnection._ready`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Collection, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Literal, TextIO, cast

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from hermes.errors import HermesError
from hermes.mcp.adapter import SkippedTool, adapt_tools, normalize_result, tool_names
from hermes.mcp.config import ServerConfig
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult

__all__ = ["ConnectionState", "McpConnection", "McpConnectionError", "McpManager"]

logger = get_logger("mcp")

ConnectionState = Literal["disabled", "connecting", "ready", "failed", "closed"]

#: The only variables of our environment a stdio server inherits (besides its own ``env``).
INHERITED_ENV = ("PATH", "HOME", "LANG")
#: The executor's bound on a call exceeds the session's by this much, so the connection's own
#: timeout (with its clearer message) is the one that fires.
_CALL_GRACE_S = 1.0
_MAX_TOOL_PAGES = 100
_HTTP_READ_TIMEOUT_S = 300.0
_STDERR_TAIL_CHARS = 600


class McpConnectionError(HermesError):
    """A server could not be started, initialized or listed; the message names the server."""

    code = "mcp_connection_error"
    status = 502


class McpConnection:
    """One MCP server: start it, list its tools as Hermes tools, call them, close it.

    ``start()`` needs a running event loop; ``aclose()`` must be awaited on the same loop.
    """

    def __init__(self, name: str, config: ServerConfig, *, max_text_chars: int = 20_000) -> None:
        self.name = name
        self.config = config
        self.state: ConnectionState = "disabled" if not config.enabled else "connecting"
        self.error: str | None = None
        self.server_info: types.Implementation | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self.skipped: list[SkippedTool] = []
        self._max_text_chars = max_text_chars
        self._tools: list[Tool] = []
        self._by_remote: dict[str, Tool] = {}
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._stop = asyncio.Event()
        self._settled = asyncio.Event()
        self._errlog: TextIO | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Begin connecting in the background (no-op when disabled or already started)."""
        if self._task is not None:
            return
        if not self.config.enabled:
            self._settled.set()
            return
        self.state = "connecting"
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{self.name}")

    async def wait_ready(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait until the connection is ready or has failed; ``True`` when ready.

        Never waits past ``timeout`` (default: the server's ``connect_timeout`` plus a second),
        and never longer than ``connect_timeout`` for a server that does not answer.
        """
        limit = self.config.connect_timeout + 1.0 if timeout is None else timeout
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._settled.wait(), limit)
        return self.state == "ready"

    def tools(self) -> list[Tool]:
        """The adapted tools of a ready connection (empty otherwise)."""
        return list(self._tools) if self.state == "ready" else []

    def tool_for(self, remote_name: str) -> Tool | None:
        """The adapted tool for the server's own tool name (``hermes mcp call``), if offered."""
        if self.state != "ready":
            return None
        return self._by_remote.get(remote_name)

    async def aclose(self) -> None:
        """Close the session and the transport; a stdio server process is stopped and reaped."""
        self._stop.set()
        task = self._task
        if task is None:
            if self.state == "connecting":
                self.state = "closed"
            self._settled.set()
            return
        if self.state == "connecting" and self._scope is not None:
            self._scope.cancel()
        await asyncio.shield(task)

    def status(self) -> dict[str, Any]:
        """What ``hermes mcp list`` shows: name, state, tools, error and more."""
        caps = self.capabilities
        return {
            "name": self.name,
            "state": self.state,
            "transport": self.config.transport,
            "tools": [tool.name for tool in self._tools] if self.state == "ready" else [],
            "error": self.error,
            "skipped": [{"tool": s.remote_name, "reason": s.reason} for s in self.skipped],
            "resources": bool(caps is not None and caps.resources is not None),
            "prompts": bool(caps is not None and caps.prompts is not None),
        }

    # -- calls -----------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call the server's tool ``name`` (its own name, not the prefixed one).

        Every outcome is a :class:`ToolResult`: ``service_unavailable`` when not connected,
        ``timeout`` past ``config.timeout``, ``mcp_error`` for a protocol error (unknown tool,
        invalid params), ``invalid_output`` for a malformed result, ``mcp_tool_error`` when the
        tool reported ``isError``.
        """
        session = self._session
        if session is None or self.state != "ready":
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        try:
            result = await session.call_tool(
                name, dict(arguments), read_timeout_seconds=self.config.timeout
            )
        except MCPError as exc:
            return self._call_error(name, exc)
        except (ValidationError, RuntimeError) as exc:
            # RuntimeError: structured content that breaks the tool's output schema, or a
            # request for input Hermes cannot answer over this path.
            message = f"MCP server {self.name!r} returned an unusable result for {name!r}: {exc}"
            return ToolResult.failure("invalid_output", _clip(message))
        return normalize_result(result, max_text_chars=self._max_text_chars)

    def _call_error(self, tool: str, exc: MCPError) -> ToolResult:
        if exc.code == types.REQUEST_TIMEOUT:
            message = (
                f"MCP server {self.name!r} did not answer the call of {tool!r} "
                f"within {self.config.timeout:g} s"
            )
            return ToolResult.failure("timeout", message)
        if exc.code == types.CONNECTION_CLOSED:
            self._connection_lost(f"connection lost during a call of {tool!r}")
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        message = f"MCP server {self.name!r} refused the call of {tool!r}: {exc.message}"
        return ToolResult.failure("mcp_error", _clip(message))

    def _unavailable_message(self) -> str:
        reason = f": {self.error}" if self.error else ""
        return f"MCP server {self.name!r} is not connected (state {self.state}{reason})"

    # -- the owner task ----------------------------------------------------------------------

    async def _own(self) -> None:
        """Open, initialize, list, wait for stop, close — all in this one task."""
        loop = asyncio.get_running_loop()
        deadline = loop.call_later(self.config.connect_timeout, self._connect_deadline_passed)
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._stop.is_set():  # closed before this task first ran
                    return
                async with AsyncExitStack() as stack:
                    session = await self._open(stack)
                    init = await session.initialize()
                    listed = await _list_all_tools(session)
                    deadline.cancel()
                    self._ready(session, init, listed)
                    await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - reported as the connection's failure, logged
            self._fail(self._describe(exc))
        finally:
            deadline.cancel()
            self._session = None
            self._scope = None
            if self.state in ("connecting", "ready"):
                self.state = "closed"
            self._settled.set()
            if self._errlog is not None:
                self._errlog.close()
                self._errlog = None

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        config = self.config
        if config.transport == "stdio":
            params = self._stdio_params()
            errlog = self._errlog if self._errlog is not None else sys.stderr
            streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        elif config.transport == "streamable_http":
            assert config.url is not None
            # Built here (not the SDK's private factory) to bound connecting by our timeout;
            # reads stay long because the server may hold a response stream open.
            http = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(config.connect_timeout, read=_HTTP_READ_TIMEOUT_S),
            )
            await stack.enter_async_context(http)
            streams = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=http)
            )
        else:
            assert config.url is not None
            streams = await stack.enter_async_context(
                sse_client(config.url, headers=dict(config.headers), timeout=config.connect_timeout)
            )
        read, write = streams
        session = ClientSession(read, write, client_info=_client_info())
        return await stack.enter_async_context(session)

    def _stdio_params(self) -> StdioServerParameters:
        config = self.config
        assert config.command is not None
        env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        env.update(config.env)
        resolved = _resolve_command(config.command, env.get("PATH", os.defpath), config.cwd)
        if resolved is None:
            raise McpConnectionError(
                f"MCP server {self.name!r}: command {config.command!r} was not found"
                + (" (looked on PATH)" if os.sep not in config.command else "")
            )
        command, args = resolved, list(config.args)
        # The SDK always adds some of our variables (LOGNAME, SHELL, TERM, USER …) to the
        # child's environment; ``env -u`` removes the ones we did not choose, without putting
        # any value on a command line. ``env`` execs the server, so its pid is the server's.
        env_tool = shutil.which("env") if sys.platform != "win32" else None
        unwanted = [k for k in DEFAULT_INHERITED_ENV_VARS if k not in env]
        if env_tool is not None and unwanted:
            args = [arg for k in unwanted for arg in ("-u", k)] + [resolved, *args]
            command = env_tool
        # The server's stderr goes to a private file: its tail explains a failed start.
        # Closed by the owner after the failure report has read it (not by the exit stack).
        errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - owner closes
        self._errlog = cast(TextIO, errlog)
        return StdioServerParameters(command=command, args=args, env=env, cwd=config.cwd)

    def _ready(
        self, session: ClientSession, init: types.InitializeResult, listed: list[types.Tool]
    ) -> None:
        """Adopt a freshly initialized session (the place a tools/list_changed refresh reuses)."""
        self.server_info = init.server_info
        self.capabilities = init.capabilities
        wanted = [t for t in listed if self.config.tools.allows(t.name)]
        tools, skipped = adapt_tools(
            self.name,
            self.config.prefix_for(self.name),
            wanted,
            self.call_tool,
            timeout=self.config.timeout + _CALL_GRACE_S,
        )
        for item in skipped:
            logger.warning(
                "mcp_tool_skipped", server=self.name, tool=item.remote_name, reason=item.reason
            )
        self._tools, self.skipped = tools, skipped
        local = {tool.name: tool for tool in tools}
        names = tool_names(self.config.prefix_for(self.name), (t.name for t in wanted))
        self._by_remote = {remote: local[n] for remote, n in names.items() if n in local}
        self._session = session
        self.state = "ready"
        self.error = None
        self._settled.set()
        logger.info("mcp_server_ready", server=self.name, tools=len(tools), skipped=len(skipped))

    def _connect_deadline_passed(self) -> None:
        if self.state != "connecting":
            return
        self._fail(
            f"MCP server {self.name!r} did not start, initialize and list its tools "
            f"within {self.config.connect_timeout:g} s"
        )
        if self._scope is not None:
            self._scope.cancel()

    def _connection_lost(self, reason: str) -> None:
        """The live session broke. Next step: reconnect with backoff here, behind a breaker."""
        self._fail(f"MCP server {self.name!r}: {reason}")
        self._stop.set()

    def _fail(self, reason: str) -> None:
        # The first failure is the cause; later ones are usually its echoes during teardown.
        if self.state in ("failed", "closed", "disabled"):
            return
        self.state = "failed"
        self.error = reason
        self._settled.set()
        logger.error("mcp_server_failed", server=self.name, error=reason)

    def _describe(self, exc: BaseException) -> str:
        if isinstance(exc, BaseExceptionGroup):  # anyio task groups wrap their tasks' failures
            exc = _first_leaf(exc)
        if isinstance(exc, McpConnectionError):
            return exc.message
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            text = "the server closed the connection during start-up"
        elif isinstance(exc, FileNotFoundError | PermissionError):
            text = f"could not start the command: {exc}"
        else:
            text = f"{type(exc).__name__}: {exc}"
        tail = self._stderr_tail()
        if tail:
            text += f"; its stderr ends with: {tail}"
        return _clip(f"MCP server {self.name!r} failed to connect: {text}")

    def _stderr_tail(self) -> str:
        errlog = self._errlog
        if errlog is None or not hasattr(os, "pread"):
            return ""
        try:
            errlog.flush()
            fd = errlog.fileno()
            size = os.fstat(fd).st_size
            # pread: the child shares this file's offset, so a seek+read would move its writes.
            data = os.pread(fd, _STDERR_TAIL_CHARS, max(0, size - _STDERR_TAIL_CHARS))
        except OSError as exc:
            return f"(stderr unreadable: {exc})"
        return data.decode("utf-8", "replace").strip()


class McpManager:
    """Several MCP servers connected concurrently; tools of the ready ones.

    ``start()`` returns at once (a slow server never blocks the first turn); ``tools()`` is
    what is ready now. Use as ``async with McpManager(configs) as mcp:`` or start/aclose.
    """

    def __init__(self, configs: Mapping[str, ServerConfig]) -> None:
        self._connections = {name: McpConnection(name, cfg) for name, cfg in configs.items()}
        self.collisions: list[SkippedTool] = []

    def start(self) -> None:
        for connection in self._connections.values():
            connection.start()

    async def wait_ready(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait until every enabled server is ready or failed (each bounded by its timeout)."""
        await asyncio.gather(*(c.wait_ready(timeout) for c in self._connections.values()))

    def connection(self, name: str) -> McpConnection:
        """The connection of server ``name``; ``KeyError`` names the configured ones."""
        try:
            return self._connections[name]
        except KeyError:
            known = ", ".join(self._connections) or "(none)"
            raise KeyError(f"no MCP server named {name!r}; configured: {known}") from None

    def tools(self, *, reserved: Collection[str] = ()) -> list[Tool]:
        """Tools of the ready servers, in configuration order.

        A tool whose name is in ``reserved`` (local tools) or already taken by an earlier
        server is left out and recorded in ``collisions``: a remote tool never shadows another.
        """
        taken = set(reserved)
        owner: dict[str, str] = {}
        tools: list[Tool] = []
        collisions: list[SkippedTool] = []
        for connection in self._connections.values():
            for tool in connection.tools():
                if tool.name in taken:
                    by = f"server {owner[tool.name]!r}" if tool.name in owner else "a local tool"
                    reason = f"the name {tool.name!r} is already taken by {by}"
                    collisions.append(SkippedTool(connection.name, tool.name, reason))
                    continue
                taken.add(tool.name)
                owner[tool.name] = connection.name
                tools.append(tool)
        for item in collisions:
            if item not in self.collisions:
                logger.warning("mcp_tool_name_collision", server=item.server, reason=item.reason)
        self.collisions = collisions
        return tools

    def status(self) -> list[dict[str, Any]]:
        return [connection.status() for connection in self._connections.values()]

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self._connections.values()))

    async def __aenter__(self) -> McpManager:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _list_all_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    logger.warning("mcp_tool_pages_capped", pages=_MAX_TOOL_PAGES)
    return tools


def _resolve_command(command: str, path: str, cwd: str | None) -> str | None:
    """The absolute path of an executable ``command`` (searched on ``path`` if it has no
    directory part, else relative to ``cwd``), or ``None``."""
    if os.sep in command or (os.altsep is not None and os.altsep in command):
        candidate = Path(command)
        if not candidate.is_absolute():
            candidate = Path(cwd or ".") / candidate
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())  # not resolve(): a venv python is a symlink
        return None
    return shutil.which(command, path=path)


def _client_info() -> types.Implementation:
    from hermes import __version__  # lazy: the package root may one day import this module

    return types.Implementation(name="hermes", version=__version__)


def _first_leaf(group: BaseExceptionGroup[Any]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _clip(text: str, limit: int = 1_000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
