"""Connections to MCP servers (issue 4 §3), on the official SDK's transports and ``ClientSession``.

Each :class:`McpConnection` has one owner task that opens the transport and the session, runs
``initialize`` and the tool listing, serves until the connection is closed or lost, closes
everything it opened — open and close in the same task (STYLE §7), as the SDK's anyio task
groups require — and then, unless closed, tries again. Calls from other tasks go through the
live session. One attempt (start, initialize, listing) is bounded by ``connect_timeout``: when
it passes, the attempt is recorded as failed at once, with a reason naming the server — whatever
the server is doing — and its transport is closed afterwards (bounded too: a stdio server that
ignores the end of its input and SIGTERM is killed with its process group).

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
A connect counts as a success only once the session has stayed up
``ReconnectPolicy.stable_after`` seconds; a session lost sooner counts as a failed connect, so
a server that crashes right after listing its tools backs off and opens its circuit instead of
restarting forever.

A loss is seen when the transport's read stream ends (a stdio server exited), when a call
meets a closed connection or a terminated HTTP session, when the transport fails, or — for a
stdio server whose pipes a surviving child holds open — when its process is gone (checked every
second). An idle streamable-HTTP connection has no stream that ends: its loss shows at the next
call. ``notifications/tools/list_changed`` makes the owner list the tools again;
:attr:`McpManager.version` changes with every state change and every change of the tool set.

Every failure text goes through the server's redactor (:mod:`hermes.mcp.failures`): a secret
in the URL, a header or the environment never reaches an error, a status or a log line.

The owner task lives on the event loop that started it. When that loop ends (an ``Agent`` used
from two successive ``asyncio.run()`` calls), ``start()`` or ``wait_ready()`` on the next loop
starts a new owner there, which connects again.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

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
from hermes.mcp.adapter import SkippedTool, adapt_tools, normalize_result
from hermes.mcp.config import ServerConfig
from hermes.mcp.failures import (
    HttpStatus,
    Redactor,
    TransportNote,
    clip,
    exception_text,
    first_leaf,
)
from hermes.mcp.listing import (
    ReadWatch,
    ToolListScreen,
    WriteWatch,
    list_all_tools,
    tools_fingerprint,
)
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

#: The executor's bound on a call exceeds the session's by this much, so the connection's own
#: timeout (with its clearer message) is the one that fires.
_CALL_GRACE_S = 1.0
_HTTP_READ_TIMEOUT_S = 300.0
#: How often a served stdio connection checks that its server process still runs.
_LIVENESS_INTERVAL_S = 1.0
#: States in which the connection's tools are offered (calls fail fast while reconnecting).
_OFFERING: frozenset[ConnectionState] = frozenset({"ready", "reconnecting"})
#: States a wait for readiness waits through.
_PENDING: frozenset[ConnectionState] = frozenset({"connecting", "reconnecting"})
#: The streamable-HTTP transport's stand-in message for a non-2xx answer.
_HTTP_STAND_IN = "Server returned an error response"


class McpConnectionError(HermesError):
    """A server could not be started, initialized or listed; the message names the server."""

    code = "mcp_connection_error"
    status = 502


@dataclass(slots=True)
class _Attempt:
    """One connection attempt, from its start to the end of its session."""

    ticket: Ticket
    #: ``time.monotonic()`` at its start (transport notes older than that are not its own).
    started: float
    #: Initialized and listed: the session was adopted.
    connected: bool = False
    #: The breaker has its verdict: a failure, or success once the session proved stable.
    judged: bool = False
    #: connect_timeout passed before it connected (the failure is recorded already).
    timed_out: bool = False
    #: The session stayed up ``stable_after`` seconds.
    stable: bool = False
    #: Why the served session ended (``None``: closed, or not served).
    loss: str | None = None


class McpConnection:
    """One MCP server: start it, list its tools as Hermes tools, call them, keep it connected,
    close it.

    ``start()`` needs a running event loop; ``aclose()`` must be awaited on the loop that runs
    the connection. ``reconnect`` sets the backoff, circuit-breaker and stability numbers
    (tests shrink them).
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
        self._redact = Redactor.for_config(config)
        self._screen = ToolListScreen(name)
        self._http = HttpStatus()
        self._note = TransportNote()
        self._tools: list[Tool] = []
        self._by_remote: dict[str, Tool] = {}
        self._fingerprint: object = None
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
        """Begin connecting in the background (no-op when disabled, closed or running).

        An owner task that ended without ``aclose()`` — its event loop finished — is replaced
        by a new one on the running loop, which connects again.
        """
        if not self.config.enabled or self._stop.is_set() or self._owner_alive():
            return
        loop = asyncio.get_running_loop()
        if self._task is not None:
            logger.warning(
                "mcp_owner_restarted",
                server=self.name,
                reason="its event loop ended or it was cancelled without aclose()",
            )
            self._end_attempt()  # a loop closed under a running owner skipped its cleanup
            self._fresh_events()
            self._retry_at = None
        self._set_state("connecting")
        self._task = loop.create_task(self._own(), name=f"mcp:{self.name}")

    def _owner_alive(self) -> bool:
        task = self._task
        return task is not None and not task.done() and not task.get_loop().is_closed()

    def _fresh_events(self) -> None:
        """New events for a new owner: an asyncio event binds to the loop that waits on it."""
        self._stop, self._wake, self._changed = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def wait_ready(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait while the connection is connecting or reconnecting; ``True`` when ready.

        Returns at once when ready, failed (retries go on in the background), disabled or
        closed. Never waits past ``timeout`` (default: the server's ``connect_timeout`` plus a
        second); a first connection never takes longer than ``connect_timeout``. A connection
        started on an event loop that has ended is started again on this one first.
        """
        if self._task is not None and not self._owner_alive():
            self.start()
        limit = self.config.connect_timeout + 1.0 if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while self.state in _PENDING and self._task is not None:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            changed = self._changed
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                break
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
        stopped and reaped. Prompt in every state (a pending attempt is cancelled).

        Never raises for the owner task's own end: an owner cancelled with its event loop, or
        one that failed, is logged, not re-raised (only a cancellation of this call is).
        """
        task = self._task
        if task is not None and not self._owner_alive():
            self._fresh_events()  # the old ones may hold waiters of a loop that is gone
        self._stop.set()
        self._wake.set()
        if task is None:
            if self.state != "disabled":
                self._set_state("closed")
            return
        if not task.done():
            if task.get_loop() is not asyncio.get_running_loop():
                # Its loop is gone or elsewhere: nothing here can wait for it.
                logger.warning("mcp_owner_on_another_loop", server=self.name)
                self._end_attempt()
            else:
                if self._scope is not None:
                    self._scope.cancel()
                await asyncio.wait({task})
        self._report_owner_end(task)
        self._set_state("closed")

    def _report_owner_end(self, task: asyncio.Task[None]) -> None:
        if not task.done() or task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            logger.error("mcp_owner_failed", server=self.name, error=self._say(exception_text(exc)))

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
        timeout = self.config.timeout
        result = await self.request(
            f"the call of {name!r}",
            # The SDK's own per-request deadline (its REQUEST_TIMEOUT error is mapped below):
            # a second deadline of our own around it cost ~4 % of a fast call (BENCHMARKS §4).
            lambda session: session.call_tool(name, dict(arguments), read_timeout_seconds=timeout),
            bounded=True,
        )
        if isinstance(result, ToolResult):
            return result
        return normalize_result(result, max_text_chars=self._max_text_chars)

    async def request(
        self,
        action: str,
        send: Callable[[ClientSession], Awaitable[R]],
        *,
        bounded: bool = False,
    ) -> R | ToolResult:
        """Run ``send`` on the live session, bounded by ``config.timeout`` (``bounded``:
        ``send`` already passes that deadline to the SDK itself).

        Failures come back as a :class:`ToolResult` naming the server and ``action``:
        ``service_unavailable`` when not connected (or the connection was just lost),
        ``timeout``, ``mcp_error`` for a protocol error (unknown tool or uri, invalid params),
        ``invalid_output`` for a malformed result. Their messages carry no secret.
        """
        session = self._session
        if session is None or self.state != "ready":
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        started, http_seen = time.monotonic(), self._http.count
        try:
            if bounded:
                return await send(session)
            with anyio.fail_after(self.config.timeout):
                return await send(session)
        except TimeoutError:
            return self._request_timeout(action, started, http_seen)
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                return self._request_timeout(action, started, http_seen)
            return self._request_error(action, exc, session, http_seen)
        except (ValidationError, RuntimeError) as exc:
            # RuntimeError: structured content that breaks the tool's output schema, or a
            # request for input Hermes cannot answer over this path.
            message = self._say(
                f"MCP server {self.name!r} returned an unusable result for {action}: "
                + exception_text(exc)
            )
            logger.warning("mcp_invalid_result", server=self.name, error=message)
            return ToolResult.failure("invalid_output", message)

    def _request_timeout(self, action: str, started: float, http_seen: int) -> ToolResult:
        status = self._http.since(http_seen)
        message = self._say(
            f"MCP server {self.name!r} did not answer {action} within {self.config.timeout:g} s"
            + self._note.since(started)
            + (f"; its last HTTP answer was {status}" if status else "")
        )
        logger.warning("mcp_request_timeout", server=self.name, error=message)
        return ToolResult.failure("timeout", message)

    def _request_error(
        self, action: str, exc: MCPError, session: ClientSession, http_seen: int
    ) -> ToolResult:
        if session is not self._session:
            # A late error of a session that has been replaced since: it says nothing about
            # the live one, which must not be torn down for it.
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        if self._is_session_loss(exc):
            self._connection_lost(f"MCP server {self.name!r} lost the connection during {action}")
            return ToolResult.failure("service_unavailable", self._unavailable_message())
        detail = exc.message
        status = self._http.since(http_seen)
        if status is not None:
            detail = status if detail == _HTTP_STAND_IN else f"{detail} ({status})"
        message = self._say(f"MCP server {self.name!r} refused {action}: {detail}")
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
                stable = await self._attempt(ticket)
                if self._stop.is_set():
                    break
                await self._pause(self._next_delay(stable))
        finally:
            self._retry_at = None
            self._set_state("closed")

    async def _attempt(self, ticket: Ticket) -> bool:
        """One connection: open, initialize, list, serve until lost or closed.

        Returns whether it ended as the loss of a stable session (retried at once; anything
        else backs off). Everything it opened is closed when it returns.
        """
        self._lost, self._tools_changed, self._retry_at = None, False, None
        self._http.reset()
        self._note.reset()
        attempt = _Attempt(ticket, started=time.monotonic())
        reason: str | None = None
        scope = anyio.CancelScope()
        # A timer, not the scope's deadline: the failure is recorded the moment the deadline
        # passes, while closing the transport (bounded on its own) goes on after it.
        timer = asyncio.get_running_loop().call_later(
            self.config.connect_timeout, self._deadline_passed, attempt, scope
        )
        try:
            with scope:
                self._scope = scope
                await self._connect_and_serve(attempt, scope, timer)
        except Exception as exc:  # noqa: BLE001 - becomes the attempt's failure or loss, logged
            reason = self._failure_reason(exc, attempt)
        finally:
            timer.cancel()
            self._end_attempt()
        return self._settle(attempt, reason)

    async def _connect_and_serve(
        self, attempt: _Attempt, scope: anyio.CancelScope, timer: asyncio.TimerHandle
    ) -> None:
        async with AsyncExitStack() as stack:
            session = await self._open(stack)
            init = await session.initialize()
            listed, screened = await list_all_tools(session, self.name, self._screen)
            timer.cancel()
            if attempt.timed_out:
                return  # recorded already; the cancelled scope ends the attempt
            attempt.connected = True
            self._ready(session, init, listed, screened)
            try:
                attempt.loss = await self._serve(session, attempt)
            finally:
                # Closing is bounded too: a hung HTTP server must not hold the session's
                # DELETE past connect_timeout (stdio bounds its own shutdown).
                scope.deadline = anyio.current_time() + self.config.connect_timeout

    def _deadline_passed(self, attempt: _Attempt, scope: anyio.CancelScope) -> None:
        """connect_timeout passed: the attempt fails now; its teardown follows."""
        if attempt.connected or attempt.timed_out or self._stop.is_set():
            return
        attempt.timed_out = True
        self._connect_failed(attempt, self._timeout_reason(attempt))
        scope.cancel()

    def _failure_reason(self, exc: Exception, attempt: _Attempt) -> str | None:
        reason = self._describe(exc, connected=attempt.connected)
        if attempt.timed_out:
            # The timeout is the reported failure; this is how the teardown ended.
            logger.info("mcp_attempt_teardown_error", server=self.name, error=reason)
            return None
        if self._lost is not None:  # the loss was reported already; this is its cause
            logger.warning("mcp_connection_error", server=self.name, error=reason)
        return reason

    def _settle(self, attempt: _Attempt, reason: str | None) -> bool:
        """Record how an attempt ended; whether it was a stable session's loss."""
        if self._stop.is_set():
            if not attempt.judged:
                self._breaker.release(attempt.ticket)
            return False
        if attempt.timed_out:
            return False
        if not attempt.connected:
            self._connect_failed(attempt, reason or f"MCP server {self.name!r} failed to connect")
            return False
        loss = attempt.loss or reason or f"MCP server {self.name!r} closed the connection"
        self._mark_lost(loss)
        if attempt.stable:
            return True
        within = f"; it was lost within {self._policy.stable_after:g} s of connecting"
        self._connect_failed(attempt, loss + within)
        return False

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
            # Built here (not the SDK's private factory) to bound connecting by our timeout
            # and to see the HTTP status of failed answers; reads stay long because the
            # server may hold a response stream open.
            http = httpx2.AsyncClient(
                headers=dict(config.headers),
                timeout=httpx2.Timeout(config.connect_timeout, read=_HTTP_READ_TIMEOUT_S),
                event_hooks={"response": [self._http]},
            )
            await stack.enter_async_context(http)
            streams = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=http)
            )
        else:
            assert config.url is not None
            streams = await stack.enter_async_context(
                sse_client(
                    config.url,
                    headers=dict(config.headers),
                    timeout=config.connect_timeout,
                    httpx_client_factory=self._sse_http_client,
                )
            )
        read, write = streams
        screen = self._screen
        watched: ReadWatch[SessionMessage | Exception] = ReadWatch(
            read, self._transport_ended, screen
        )
        session = ClientSession(
            watched,
            WriteWatch(write, screen),
            message_handler=self._on_message,
            client_info=_client_info(),
        )
        screen.version = lambda: session.protocol_version
        return await stack.enter_async_context(session)

    def _sse_http_client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """The SSE transport's HTTP client, with the hook that records failed answers."""
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout if timeout is not None else httpx2.Timeout(30.0),
            auth=auth,
            event_hooks={"response": [self._http]},
        )

    async def _serve(self, session: ClientSession, attempt: _Attempt) -> str | None:
        """Wait for close, loss or a changed tool list; returns the loss (``None``: closed).

        Once the session has stayed up ``stable_after`` seconds the connect counts as a
        success (breaker closed, failures reset).
        """
        self._scope = None
        self._serving = True
        interval = _LIVENESS_INTERVAL_S if self.pid is not None else math.inf
        stable_at = anyio.current_time() + self._policy.stable_after
        while True:
            wait = interval
            if not attempt.stable:
                wait = min(wait, max(0.0, stable_at - anyio.current_time()))
            with anyio.move_on_after(wait):
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
            if not attempt.stable and anyio.current_time() >= stable_at:
                self._became_stable(attempt)
            if self._tools_changed:
                self._tools_changed = False
                await self._refresh_tools(session)

    def _became_stable(self, attempt: _Attempt) -> None:
        attempt.stable = attempt.judged = True
        self._breaker.record(attempt.ticket, failed=False)
        if self._failures:
            logger.info("mcp_server_stable", server=self.name, after_failures=self._failures)
            self._failures = 0

    async def _refresh_tools(self, session: ClientSession) -> None:
        """List the tools again after ``notifications/tools/list_changed``; on failure the
        previous tools stay (a lost connection is handled as such)."""
        failure: str | None = None
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                with anyio.fail_after(self.config.connect_timeout):
                    listed, screened = await list_all_tools(session, self.name, self._screen)
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
                failure = exception_text(exc)
            finally:
                self._scope = None
        if scope.cancelled_caught:
            return  # closing
        if failure is not None:
            logger.warning("mcp_tools_refresh_failed", server=self.name, error=self._say(failure))
            return
        changed = self._adopt_tools(listed, screened)
        logger.info("mcp_tools_listed", server=self.name, tools=len(self._tools), changed=changed)

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

    def _next_delay(self, stable: bool) -> float:
        cooldown = self._breaker.retry_in()  # > 0 only while the circuit is open
        if stable:
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
        self,
        session: ClientSession,
        init: types.InitializeResult,
        listed: list[types.Tool],
        screened: list[SkippedTool],
    ) -> None:
        """Adopt a freshly initialized session (the connect counts once it proves stable)."""
        recovered = self.state in ("reconnecting", "failed")
        self.server_info = init.server_info
        self.capabilities = init.capabilities
        self._session = session
        self._adopt_tools(listed, screened)
        self.error = None
        self._set_state("ready")
        event = "mcp_server_reconnected" if recovered else "mcp_server_ready"
        logger.info(event, server=self.name, tools=len(self._tools), skipped=len(self.skipped))

    def _adopt_tools(self, listed: list[types.Tool], screened: list[SkippedTool]) -> bool:
        """The server's tools (filtered, adapted) plus its resource/prompt utilities.

        Returns whether they changed: a listing equal to the last one (a reconnect, a
        ``list_changed`` that changed nothing) keeps the tools and the version.
        """
        config = self.config
        wanted = [t for t in listed if config.tools.allows(t.name)]
        caps = self.capabilities
        fingerprint = (
            tools_fingerprint(wanted),
            tuple(screened),
            caps is not None and caps.resources is not None,
            caps is not None and caps.prompts is not None,
        )
        if fingerprint == self._fingerprint:
            return False
        self._fingerprint = fingerprint
        prefix = config.prefix_for(self.name)
        timeout = config.timeout + _CALL_GRACE_S
        by_remote, skipped = adapt_tools(
            self.name,
            prefix,
            wanted,
            self.call_tool,
            timeout=timeout,
            permissions=config.permissions,
            requires_approval=config.needs_approval,
        )
        utilities, not_offered = utility_tools(
            self.name,
            prefix,
            caps,
            self.request,
            taken={tool.name for tool in by_remote.values()},
            allows=config.tools.allows,
            timeout=timeout,
            max_text_chars=self._max_text_chars,
            request_timeout=config.timeout,
            permissions=config.permissions,
            requires_approval=config.needs_approval,
        )
        for item in (*screened, *skipped, *not_offered):
            logger.warning(
                "mcp_tool_skipped", server=self.name, tool=item.remote_name, reason=item.reason
            )
        self._by_remote = by_remote
        self._tools = [*by_remote.values(), *utilities]
        self.skipped = screened + skipped + not_offered
        self._version += 1
        return True

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
        self.error = self._say(reason)
        self._set_state("reconnecting")
        logger.error("mcp_connection_lost", server=self.name, error=self.error)

    def _connect_failed(self, attempt: _Attempt, reason: str) -> None:
        reason = self._say(reason)
        attempt.judged = True
        self._failures += 1
        self._breaker.record(attempt.ticket, failed=True)
        cooldown = self._breaker.retry_in()
        if cooldown > 0:
            self.error = clip(
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
            text = self._say(self._note.record(message))
            logger.warning("mcp_transport_error", server=self.name, error=text)

    def _transport_ended(self) -> None:
        if self._serving and not self._stop.is_set():
            self._connection_lost(
                f"MCP server {self.name!r} closed the connection" + self._stderr_note()
            )

    # -- failure reports -------------------------------------------------------------------

    def _say(self, text: str) -> str:
        """A failure text as it may be shown and logged: without secrets, bounded."""
        return clip(self._redact(text))

    def _timeout_reason(self, attempt: _Attempt) -> str:
        status = self._http.text
        return self._say(
            f"MCP server {self.name!r} did not start, initialize and list its tools "
            f"within {self.config.connect_timeout:g} s"
            + self._note.since(attempt.started)
            + (f"; its last HTTP answer was {status}" if status else "")
            + self._stderr_note()
        )

    def _describe(self, exc: BaseException, *, connected: bool) -> str:
        if isinstance(exc, BaseExceptionGroup):  # anyio task groups wrap their tasks' failures
            exc = first_leaf(exc)
        if isinstance(exc, McpConnectionError):
            return self._say(exc.message)
        status = self._http.text
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            text = "the server closed the connection" + ("" if connected else " during start-up")
        elif isinstance(exc, MCPError) and status is not None:
            text = f"the server answered {status}"
        elif isinstance(exc, FileNotFoundError | PermissionError):
            text = f"could not start the command: {exc}"
        else:
            text = exception_text(exc)
        what = "lost the connection" if connected else "failed to connect"
        note = self._note.since(0.0)
        return self._say(f"MCP server {self.name!r} {what}: {text}{note}{self._stderr_note()}")

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
        """Start connecting every enabled server (again, on this loop, after an earlier loop
        ended); returns at once."""
        for connection in self._connections.values():
            connection.start()

    async def wait_ready(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 - a bounded wait is the API
        """Wait until every enabled server is ready or failed (each bounded by its timeout).

        Connections whose owner ended with an earlier event loop start again on this one.
        """
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
        """Each server's :meth:`McpConnection.status`, plus ``collisions``: the reasons its
        tools were left out by the last :meth:`tools` call (their names were taken)."""
        rows = []
        for name, connection in self._connections.items():
            row = connection.status()
            row["collisions"] = [c.reason for c in self.collisions if c.server == name]
            rows.append(row)
        return rows

    async def aclose(self) -> None:
        await asyncio.gather(*(c.aclose() for c in self._connections.values()))

    async def __aenter__(self) -> McpManager:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _client_info() -> types.Implementation:
    from hermes import __version__  # lazy: the package root may one day import this module

    return types.Implementation(name="hermes", version=__version__)
