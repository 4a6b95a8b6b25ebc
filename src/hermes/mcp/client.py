"""Connections to MCP servers (issue 4 §3), on the official SDK's transports and ``ClientSession``.

Each :class:`McpConnection` has one owner task that opens the transport and the session, runs
``initialize`` and the tool listing, serves until the connection is closed or lost, closes
everything it opened — open and close in the same task (STYLE §7), as the SDK's anyio task
groups require — and then, unless closed, tries again. Calls from other tasks go through the
live session. One attempt (start, initialize, listing) is bounded by ``connect_timeout``: past
it the attempt fails with a reason naming the server, whatever the server is doing.

States::

    connecting ──▶ ready ──(lost)──▶ reconnecting ──▶ ready …
        │            ▲                     │
        ▼            │                     ▼ (circuit opens)
      failed ────────┘ (a later retry)   failed
    disabled: never started · closed: after aclose()

A failed or lost connection is retried in the background with exponential backoff and a
per-server circuit breaker (:mod:`hermes.mcp.reconnect`), so a server that starts late or
crashes is picked up again instead of silently disappearing for the session. While
``reconnecting`` its tools stay offered and calls fail fast with ``service_unavailable``.

A loss is seen when the transport's read stream ends (a stdio server exited), when a call
meets a closed connection or a terminated HTTP session, when the transport fails, or — for a
stdio server whose pipes a surviving child holds open — when its process is gone (checked every
second). An idle streamable-HTTP connection has no stream that ends: its loss shows at the next
call. ``notifications/tools/list_changed`` makes the owner list the tools again;
:attr:`McpManager.version` changes with every state or tool-set change.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Protocol, Self, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from hermes.errors import HermesError
from hermes.mcp.adapter import SkippedTool, adapt_tools, normalize_result, tool_names
from hermes.mcp.config import ServerConfig
from hermes.mcp.process import StdioLaunch, process_running, sweep_process_group
from hermes.mcp.reconnect import ReconnectPolicy
from hermes.mcp.utility import utility_tools
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult
from hermes.tools.policies.breaker import CircuitBreaker, Ticket

__all__ = ["ConnectionState", "McpConnection", "McpConnectionError", "McpManager"]

logger = get_logger("mcp")

ConnectionState = Literal["disabled", "connecting", "ready", "reconnecting", "failed", "closed"]

R = TypeVar("R")
T_co = TypeVar("T_co", covariant=True)

#: The executor's bound on a call exceeds the session's by this much, so the connection's own
#: timeout (with its clearer message) is the one that fires.
_CALL_GRACE_S = 1.0
_MAX_TOOL_PAGES = 100
_HTTP_READ_TIMEOUT_S = 300.0
#: How often a served stdio connection checks that its server process still runs.
_LIVENESS_INTERVAL_S = 1.0
#: States in which the connection's tools are offered (calls fail fast while reconnecting).
_OFFERING: frozenset[ConnectionState] = frozenset({"ready", "reconnecting"})
#: States a wait for readiness waits through.
_PENDING: frozenset[ConnectionState] = frozenset({"connecting", "reconnecting"})


class McpConnectionError(HermesError):
    """A server could not be started, initialized or listed; the message names the server."""

    code = "mcp_connection_error"
    status = 502


class McpConnection:
    """One MCP server: start it, list its tools as Hermes tools, call them, keep it connected,
    close it.

    ``start()`` needs a running event loop; ``aclose()`` must be awaited on the same loop.
    ``reconnect`` sets the backoff and circuit-breaker numbers (tests shrink them).
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        max_text_chars: int = 20_000,
        reconnect: ReconnectPolicy | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.state: ConnectionState = "disabled" if not config.enabled else "connecting"
        self.error: str | None = None
        self.server_info: types.Implementation | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self.skipped: list[SkippedTool] = []
        #: The stdio server's process id from its start to its stop (``None`` between two
        #: processes, when it cannot be told, and for URL servers).
        self.pid: int | None = None
        self._max_text_chars = max_text_chars
        self._policy = reconnect if reconnect is not None else ReconnectPolicy()
        self._breaker = CircuitBreaker(f"mcp:{name}", self._policy.breaker(), time.monotonic)
        self._tools: list[Tool] = []
        self._by_remote: dict[str, Tool] = {}
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        #: What aclose() cancels: the attempt while connecting, a tool refresh while serving.
        self._scope: anyio.CancelScope | None = None
        self._serving = False
        self._launch: StdioLaunch | None = None
        self._stop = asyncio.Event()
        #: Wakes the serving owner: stop, loss or a changed tool list (flags below say which).
        self._wake = asyncio.Event()
        self._lost: str | None = None
        self._tools_changed = False
        #: Set and replaced on every state change (wait_ready waits on it).
        self._changed = asyncio.Event()
        self._failures = 0
        self._retry_at: float | None = None
        self._version = 0

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Grows whenever the state or the offered tools change (cheap to poll)."""
        return self._version

    def start(self) -> None:
        """Begin connecting in the background (no-op when disabled or already started)."""
        if self._task is not None or not self.config.enabled or self._stop.is_set():
            return
        self._set_state("connecting")
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{self.name}")

    async def wait_ready(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait while the connection is connecting or reconnecting; ``True`` when ready.

        Returns at once when ready, failed (retries go on in the background), disabled or
        closed. Never waits past ``timeout`` (default: the server's ``connect_timeout`` plus a
        second); a first connection never takes longer than ``connect_timeout``.
        """
        limit = self.config.connect_timeout + 1.0 if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while self.state in _PENDING and self._task is not None:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return self.state == "ready"

    def tools(self) -> list[Tool]:
        """The adapted tools (the server's own, then the utilities) while ready or reconnecting."""
        return list(self._tools) if self.state in _OFFERING else []

    def tool_for(self, remote_name: str) -> Tool | None:
        """The adapted tool for the server's own tool name (``hermes mcp call``), if offered."""
        if self.state not in _OFFERING:
            return None
        return self._by_remote.get(remote_name)

    def remote_names(self) -> list[str]:
        """The server's own names of the tools it offers (the keys of :meth:`tool_for`)."""
        return list(self._by_remote) if self.state in _OFFERING else []

    async def aclose(self) -> None:
        """Stop retrying, close the session and the transport; a stdio server process is
        stopped and reaped. Prompt in every state (a pending attempt is cancelled)."""
        self._stop.set()
        self._wake.set()
        task = self._task
        if task is None:
            if self.state != "disabled":
                self._set_state("closed")
            return
        if self._scope is not None:
            self._scope.cancel()
        await asyncio.shield(task)

    def status(self) -> dict[str, Any]:
        """What ``hermes mcp list`` shows: name, state, tools, error, breaker and more."""
        caps = self.capabilities
        retry_at = None
        if self._retry_at is not None and self.state in ("failed", "reconnecting"):
            retry_at = datetime.fromtimestamp(self._retry_at, UTC).isoformat(timespec="seconds")
        return {
            "name": self.name,
            "state": self.state,
            "transport": self.config.transport,
            "tools": [tool.name for tool in self.tools()],
            "error": self.error,
            "skipped": [{"tool": s.remote_name, "reason": s.reason} for s in self.skipped],
            "resources": bool(caps is not None and caps.resources is not None),
            "prompts": bool(caps is not None and caps.prompts is not None),
            "pid": self.pid,
            "breaker": self._breaker.state,
            "failures": self._failures,
            "retry_at": retry_at,
        }

    # -- calls -----------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call the server's tool ``name`` (its own name, not the prefixed one).

        Every outcome is a :class:`ToolResult` (see :meth:`request` for the failures);
        ``mcp_tool_error`` when the tool itself reported ``isError``.
        """
        result = await self.request(
            f"the call of {name!r}", lambda session: session.call_tool(name, dict(arguments))
        )
        if isinstance(result, ToolResult):
            return result
        return normalize_result(result, max_text_chars=self._max_text_chars)

    async def request(
        self, action: str, send: Callable[[ClientSession], Awaitable[R]]
    ) -> R | ToolResult:
        """Run ``send`` on the live session, bounded by ``config.timeout``.

        Failures come back as a :class:`ToolResult` naming the server and ``action``:
        ``service_unavailable`` when not connected (or the connection was just lost),
        ``timeout``, ``mcp_error`` for a protocol error (unknown tool or uri, invalid params),
        ``invalid_output`` for a malformed result.
        """
        session = self._session
        if session is None or self.state != "ready":
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        try:
            with anyio.fail_after(self.config.timeout):
                return await send(session)
        except TimeoutError:
            message = (
                f"MCP server {self.name!r} did not answer {action} within {self.config.timeout:g} s"
            )
            logger.warning("mcp_request_timeout", server=self.name, error=message)
            return ToolResult.failure("timeout", message)
        except MCPError as exc:
            return self._request_error(action, exc)
        except (ValidationError, RuntimeError) as exc:
            # RuntimeError: structured content that breaks the tool's output schema, or a
            # request for input Hermes cannot answer over this path.
            message = _clip(
                f"MCP server {self.name!r} returned an unusable result for {action}: {exc}"
            )
            logger.warning("mcp_invalid_result", server=self.name, error=message)
            return ToolResult.failure("invalid_output", message)

    def _request_error(self, action: str, exc: MCPError) -> ToolResult:
        if exc.code == types.REQUEST_TIMEOUT:
            message = (
                f"MCP server {self.name!r} did not answer {action} within {self.config.timeout:g} s"
            )
            logger.warning("mcp_request_timeout", server=self.name, error=message)
            return ToolResult.failure("timeout", message)
        if self._is_session_loss(exc):
            self._connection_lost(f"MCP server {self.name!r} lost the connection during {action}")
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        message = _clip(f"MCP server {self.name!r} refused {action}: {exc.message}")
        logger.warning("mcp_request_refused", server=self.name, code=exc.code, error=message)
        return ToolResult.failure("mcp_error", message)

    def _is_session_loss(self, exc: MCPError) -> bool:
        if exc.code == types.CONNECTION_CLOSED:
            return True
        # A restarted streamable-HTTP server no longer knows our session id: the SDK reports
        # its 404 as this error, and only a new session (a reconnect) helps.
        return (
            self.config.transport == "streamable_http"
            and exc.code == types.INVALID_REQUEST
            and exc.message == "Session terminated"
        )

    def _unavailable_message(self) -> str:
        reason = f": {self.error}" if self.error else ""
        retry = ""
        if self._retry_at is not None and self.state in ("failed", "reconnecting"):
            wait = self._retry_at - time.time()
            retry = f"; next attempt in {wait:.1f} s" if wait > 0 else "; retrying now"
        return f"MCP server {self.name!r} is not connected (state {self.state}{reason}{retry})"

    # -- the owner task ----------------------------------------------------------------------

    async def _own(self) -> None:
        """Connect, serve, and after a failure or a loss try again — until closed."""
        try:
            while not self._stop.is_set():
                ticket = self._breaker.allow()
                if ticket is None:  # the circuit is open: wait for its half-open attempt
                    await self._pause(self._breaker.retry_in())
                    continue
                connected = await self._attempt(ticket)
                if self._stop.is_set():
                    break
                await self._pause(self._next_delay(connected))
        finally:
            self._retry_at = None
            self._set_state("closed")

    async def _attempt(self, ticket: Ticket) -> bool:
        """One connection: open, initialize, list, serve until lost or closed.

        Returns whether it got ready. Everything it opened is closed when it returns.
        """
        self._lost, self._tools_changed, self._retry_at = None, False, None
        connected = False
        reason: str | None = None
        scope = anyio.CancelScope(deadline=anyio.current_time() + self.config.connect_timeout)
        try:
            with scope:
                self._scope = scope
                async with AsyncExitStack() as stack:
                    session = await self._open(stack)
                    init = await session.initialize()
                    listed = await _list_all_tools(session, self.name)
                    scope.deadline = math.inf
                    connected = True
                    self._breaker.record(ticket, failed=False)
                    self._ready(session, init, listed)
                    try:
                        reason = await self._serve(session)
                    finally:
                        # Closing is bounded too: a hung HTTP server must not hold the
                        # session's DELETE past connect_timeout (stdio bounds its own shutdown).
                        scope.deadline = anyio.current_time() + self.config.connect_timeout
            if not connected and scope.cancel_called:
                reason = self._timeout_reason()
        except Exception as exc:  # noqa: BLE001 - becomes the attempt's failure or loss, logged
            if not connected and scope.cancel_called:
                reason = self._timeout_reason()
            else:
                reason = self._describe(exc, connected=connected)
                if self._loss() is not None:  # the loss was reported already; this is its cause
                    logger.warning("mcp_connection_error", server=self.name, error=reason)
        finally:
            self._end_attempt()
        if self._stop.is_set():
            if not connected:
                self._breaker.release(ticket)
        elif connected:
            self._mark_lost(reason or f"MCP server {self.name!r} closed the connection")
        else:
            self._connect_failed(ticket, reason or f"MCP server {self.name!r} failed to connect")
        return connected

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        config = self.config
        if config.transport == "stdio":
            launch = self._launch = StdioLaunch(config)
            if launch.params is None or launch.errlog is None:
                raise McpConnectionError(
                    f"MCP server {self.name!r}: command {config.command!r} was not found"
                    + (" (looked on PATH)" if "/" not in str(config.command) else "")
                )
            # The server's stderr goes to a private file: its tail explains a failed start.
            streams = await stack.enter_async_context(
                stdio_client(launch.params, errlog=launch.errlog)
            )
            self.pid = launch.find_pid()
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
        watched: _EndWatch[SessionMessage | Exception] = _EndWatch(read, self._transport_ended)
        session = ClientSession(
            watched,
            write,
            message_handler=self._on_message,
            client_info=_client_info(),
        )
        return await stack.enter_async_context(session)

    async def _serve(self, session: ClientSession) -> str | None:
        """Wait for close, loss or a changed tool list; returns the loss (``None``: closed)."""
        self._scope = None
        self._serving = True
        interval = _LIVENESS_INTERVAL_S if self.pid is not None else math.inf
        while True:
            with anyio.move_on_after(interval):
                await self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return None
            if self._lost is None and self.pid is not None and not process_running(self.pid):
                self._connection_lost(
                    f"MCP server {self.name!r}: its process (pid {self.pid}) is gone"
                    + self._stderr_note()
                )
            if self._lost is not None:
                return self._lost
            if self._tools_changed:
                self._tools_changed = False
                await self._refresh_tools(session)

    async def _refresh_tools(self, session: ClientSession) -> None:
        """List the tools again after ``notifications/tools/list_changed``; on failure the
        previous tools stay (a lost connection is handled as such)."""
        failure: str | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                with anyio.fail_after(self.config.connect_timeout):
                    listed = await _list_all_tools(session, self.name)
            except TimeoutError:
                failure = f"no answer within {self.config.connect_timeout:g} s"
            except MCPError as exc:
                if self._is_session_loss(exc):
                    self._connection_lost(
                        f"MCP server {self.name!r} lost the connection while listing its tools"
                    )
                    return
                failure = f"refused: {exc.message}"
            except ValidationError as exc:
                failure = f"malformed answer: {exc}"
            finally:
                self._scope = None
        if scope.cancelled_caught:
            return  # closing
        if failure is not None:
            logger.warning("mcp_tools_refresh_failed", server=self.name, error=_clip(failure))
            return
        self._adopt_tools(listed)
        logger.info("mcp_tools_changed", server=self.name, tools=len(self._tools))

    def _end_attempt(self) -> None:
        self._session = None
        self._scope = None
        self._serving = False
        pid, self.pid = self.pid, None
        if self._launch is not None:
            self._launch.close()
            self._launch = None
        if pid is not None:
            sweep_process_group(pid, self.name)

    async def _pause(self, seconds: float) -> None:
        """Sleep before the next attempt; aclose() ends the sleep at once."""
        if seconds > 0:
            with anyio.move_on_after(seconds):
                await self._stop.wait()

    def _next_delay(self, connected: bool) -> float:
        cooldown = self._breaker.retry_in()  # > 0 only while the circuit is open
        if connected:
            delay = self._policy.delay(0)
        elif cooldown > 0:
            delay = cooldown
        else:
            delay = self._policy.delay(self._failures)
        self._retry_at = time.time() + delay
        return delay

    # -- state changes -----------------------------------------------------------------------

    def _set_state(self, state: ConnectionState) -> None:
        if state == self.state:
            return
        self.state = state
        self._version += 1
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _ready(
        self, session: ClientSession, init: types.InitializeResult, listed: list[types.Tool]
    ) -> None:
        """Adopt a freshly initialized session."""
        recovered = self.state in ("reconnecting", "failed")
        self.server_info = init.server_info
        self.capabilities = init.capabilities
        self._session = session
        self._failures = 0
        self._adopt_tools(listed)
        self.error = None
        self._set_state("ready")
        event = "mcp_server_reconnected" if recovered else "mcp_server_ready"
        logger.info(event, server=self.name, tools=len(self._tools), skipped=len(self.skipped))

    def _adopt_tools(self, listed: list[types.Tool]) -> None:
        """The server's tools (filtered, adapted) plus its resource/prompt utilities."""
        prefix = self.config.prefix_for(self.name)
        wanted = [t for t in listed if self.config.tools.allows(t.name)]
        timeout = self.config.timeout + _CALL_GRACE_S
        tools, skipped = adapt_tools(self.name, prefix, wanted, self.call_tool, timeout=timeout)
        utilities, not_offered = utility_tools(
            self.name,
            prefix,
            self.capabilities,
            self.request,
            taken={tool.name for tool in tools},
            allows=self.config.tools.allows,
            timeout=timeout,
            max_text_chars=self._max_text_chars,
        )
        for item in (*skipped, *not_offered):
            logger.warning(
                "mcp_tool_skipped", server=self.name, tool=item.remote_name, reason=item.reason
            )
        local = {tool.name: tool for tool in tools}
        names = tool_names(prefix, (t.name for t in wanted))
        self._by_remote = {remote: local[n] for remote, n in names.items() if n in local}
        self._tools = tools + utilities
        self.skipped = skipped + not_offered
        self._version += 1

    def _loss(self) -> str | None:
        """Why the live session broke, if it did (read anew: callbacks set it during awaits)."""
        return self._lost

    def _connection_lost(self, reason: str) -> None:
        """The live session broke (seen by a call, the transport or the liveness check)."""
        if self._lost is not None or self._stop.is_set():
            return
        self._lost = reason
        self._wake.set()
        self._mark_lost(reason)

    def _mark_lost(self, reason: str) -> None:
        if self.state != "ready":
            return
        self.error = reason
        self._set_state("reconnecting")
        logger.error("mcp_connection_lost", server=self.name, error=reason)

    def _connect_failed(self, ticket: Ticket, reason: str) -> None:
        self._failures += 1
        self._breaker.record(ticket, failed=True)
        cooldown = self._breaker.retry_in()
        if cooldown > 0:
            self.error = _clip(
                f"{reason}; circuit open after {self._failures} failed connects in a row, "
                f"next attempt in {cooldown:g} s"
            )
            self._set_state("failed")
            logger.error(
                "mcp_server_circuit_open",
                server=self.name,
                failures=self._failures,
                retry_in_s=cooldown,
                error=reason,
            )
            return
        self.error = reason
        if self.state != "reconnecting":
            self._set_state("failed")
        log = logger.error if self._failures == 1 else logger.warning
        log("mcp_server_failed", server=self.name, attempt=self._failures, error=reason)

    # -- callbacks from the session's tasks -------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed = True
            self._wake.set()
        elif isinstance(message, Exception):
            text = _clip(f"{type(message).__name__}: {message}")
            logger.warning("mcp_transport_error", server=self.name, error=text)

    def _transport_ended(self) -> None:
        if self._serving and not self._stop.is_set():
            self._connection_lost(
                f"MCP server {self.name!r} closed the connection" + self._stderr_note()
            )

    # -- failure reports -------------------------------------------------------------------

    def _timeout_reason(self) -> str:
        return (
            f"MCP server {self.name!r} did not start, initialize and list its tools "
            f"within {self.config.connect_timeout:g} s" + self._stderr_note()
        )

    def _describe(self, exc: BaseException, *, connected: bool) -> str:
        if isinstance(exc, BaseExceptionGroup):  # anyio task groups wrap their tasks' failures
            exc = _first_leaf(exc)
        if isinstance(exc, McpConnectionError):
            return exc.message
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            text = "the server closed the connection" + ("" if connected else " during start-up")
        elif isinstance(exc, FileNotFoundError | PermissionError):
            text = f"could not start the command: {exc}"
        else:
            text = f"{type(exc).__name__}: {exc}"
        what = "lost the connection" if connected else "failed to connect"
        return _clip(f"MCP server {self.name!r} {what}: {text}{self._stderr_note()}")

    def _stderr_note(self) -> str:
        tail = self._launch.stderr_tail() if self._launch is not None else ""
        return f"; its stderr ends with: {tail}" if tail else ""


class McpManager:
    """Several MCP servers connected concurrently; tools of the ready ones.

    ``start()`` returns at once (a slow server never blocks the first turn); ``tools()`` is
    what is offered now, and :attr:`version` tells whether that may have changed. Use as
    ``async with McpManager(configs) as mcp:`` or start/aclose.
    """

    def __init__(
        self,
        configs: Mapping[str, ServerConfig],
        *,
        reconnect: ReconnectPolicy | None = None,
        max_text_chars: int = 20_000,
    ) -> None:
        self._connections = {
            name: McpConnection(name, cfg, max_text_chars=max_text_chars, reconnect=reconnect)
            for name, cfg in configs.items()
        }
        self.collisions: list[SkippedTool] = []

    @property
    def version(self) -> int:
        """Changes whenever any server's state or offered tools change (O(servers), no
        allocation): compare it with the last value seen to skip re-reading :meth:`tools`."""
        total = 0
        for connection in self._connections.values():
            total += connection.version
        return total

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
        """Tools of the ready (and reconnecting) servers, in configuration order.

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


class _Readable(Protocol[T_co]):
    async def receive(self) -> T_co: ...
    async def aclose(self) -> None: ...


class _EndWatch(Generic[T_co]):
    """A transport's read stream that calls ``on_end`` when it ends or breaks.

    The SDK's session treats the end of its read stream as a quiet close; for us it is how a
    crashed stdio server (or a dropped SSE stream) shows, so the owner can reconnect.
    """

    def __init__(self, inner: _Readable[T_co], on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    @property
    def last_context(self) -> Any:
        # The dispatcher reads it (when present) to run handlers in the sender's context.
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> T_co:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T_co:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _list_all_tools(session: ClientSession, server: str) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    logger.warning("mcp_tool_pages_capped", server=server, pages=_MAX_TOOL_PAGES)
    return tools


def _client_info() -> types.Implementation:
    from hermes import __version__  # lazy: the package root may one day import this module

    return types.Implementation(name="hermes", version=__version__)


def _first_leaf(group: BaseExceptionGroup[Any]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _clip(text: str, limit: int = 1_000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
