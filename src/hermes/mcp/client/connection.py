"""One MCP server's connection: its lifecycle, from the first connect to the last close.

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

Every failure text goes through the server's redactor (:mod:`hermes.mcp.client.diagnosis`): a
secret in the URL, a header or the environment never reaches an error, a status or a log line.
Opening the transport (:mod:`~hermes.mcp.client.transport`), running requests
(:mod:`~hermes.mcp.client.calls`) and adapting the listed tools (:mod:`~hermes.mcp.client.offer`)
live beside this module; the connection owns them and the state they share.

The owner task lives on the event loop that started it. When that loop ends (an ``Agent`` used
from two successive ``asyncio.run()`` calls), ``start()`` or ``wait_ready()`` on the next loop
starts a new owner there, which connects again.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from hermes.mcp.adapter import SkippedTool
from hermes.mcp.client.calls import RemoteCalls, is_session_loss
from hermes.mcp.client.diagnosis import Diagnosis
from hermes.mcp.client.health import ConnectionState, Health
from hermes.mcp.client.offer import ToolOffer
from hermes.mcp.client.transport import SessionHooks, open_session
from hermes.mcp.config import ServerConfig
from hermes.mcp.failures import HttpStatus, TransportNote, exception_text
from hermes.mcp.listing import ToolListScreen, list_all_tools
from hermes.mcp.process import StdioLaunch, process_running, sweep_process_group
from hermes.mcp.reconnect import ReconnectPolicy
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult
from hermes.tools.policies.breaker import Ticket

__all__ = ["ConnectionState", "McpConnection"]

logger = get_logger("mcp")

R = TypeVar("R")

#: How often a served stdio connection checks that its server process still runs.
_LIVENESS_INTERVAL_S = 1.0
#: States in which the connection's tools are offered (calls fail fast while reconnecting).
_OFFERING: frozenset[ConnectionState] = frozenset({"ready", "reconnecting"})
#: States a wait for readiness waits through.
_PENDING: frozenset[ConnectionState] = frozenset({"connecting", "reconnecting"})


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
        self.server_info: types.Implementation | None = None
        self.capabilities: types.ServerCapabilities | None = None
        #: The stdio server's process id from its start to its stop (``None`` between two
        #: processes, when it cannot be told, and for URL servers).
        self.pid: int | None = None
        self._screen = ToolListScreen(name)
        self._http = HttpStatus()
        self._note = TransportNote()
        self._diagnosis = Diagnosis(
            name, config, http=self._http, note=self._note, stderr_tail=self._stderr_tail
        )
        self._health = Health(
            name,
            enabled=config.enabled,
            policy=reconnect if reconnect is not None else ReconnectPolicy(),
            diagnosis=self._diagnosis,
        )
        self._calls = RemoteCalls(
            self._diagnosis,
            session=lambda: self._session,
            ready=lambda: self.state == "ready",
            on_loss=self._connection_lost,
            unavailable=self._health.unavailable_message,
            max_text_chars=max_text_chars,
        )
        self._offer = ToolOffer(
            name,
            config,
            call_tool=self._calls.call_tool,
            request=self._calls.request,
            max_text_chars=max_text_chars,
        )
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

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        """Where the connection is in its life (see the module docstring)."""
        return self._health.state

    @state.setter
    def state(self, state: ConnectionState) -> None:
        # A plain assignment, as before the split: no version bump, no waiter woken (tests
        # stage a state this way); the owner changes it through Health.set_state.
        self._health.state = state

    @property
    def error(self) -> str | None:
        """Why the connection is not ready (redacted, bounded); ``None`` while it is."""
        return self._health.error

    @property
    def version(self) -> int:
        """Grows whenever the state or the offered tools change (cheap to poll)."""
        return self._health.version

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
            self._health.retry_at = None
        self._health.set_state("connecting")
        self._task = loop.create_task(self._own(), name=f"mcp:{self.name}")

    def _owner_alive(self) -> bool:
        task = self._task
        return task is not None and not task.done() and not task.get_loop().is_closed()

    def _fresh_events(self) -> None:
        """New events for a new owner: an asyncio event binds to the loop that waits on it."""
        self._stop, self._wake = asyncio.Event(), asyncio.Event()
        self._health.changed = asyncio.Event()

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
            changed = self._health.changed
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                break
        return self.state == "ready"

    @property
    def skipped(self) -> list[SkippedTool]:
        """The server's tools that are not offered, and why (the last listing's)."""
        return self._offer.skipped

    def tools(self) -> list[Tool]:
        """The adapted tools (the server's own, then the utilities) while ready or reconnecting."""
        return list(self._offer.tools) if self.state in _OFFERING else []

    def tool_for(self, remote_name: str) -> Tool | None:
        """The adapted tool for the server's own tool name (``hermes mcp call``), if offered."""
        if self.state not in _OFFERING:
            return None
        return self._offer.by_remote.get(remote_name)

    def remote_names(self) -> list[str]:
        """The server's own names of the tools it offers (the keys of :meth:`tool_for`)."""
        return list(self._offer.by_remote) if self.state in _OFFERING else []

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
                self._health.set_state("closed")
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
        self._health.set_state("closed")

    def _report_owner_end(self, task: asyncio.Task[None]) -> None:
        if not task.done() or task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            logger.error(
                "mcp_owner_failed", server=self.name, error=self._diagnosis.say(exception_text(exc))
            )

    def status(self) -> dict[str, Any]:
        """What ``hermes mcp list`` shows: name, state, tools, error, breaker and more."""
        caps = self.capabilities
        health = self._health
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
            "breaker": health.breaker.state,
            "failures": health.failures,
            "retry_at": health.retry_at_text(),
        }

    # -- calls -----------------------------------------------------------------------------

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call the server's tool ``name`` (its own name, not the prefixed one).

        Every outcome is a :class:`ToolResult` (see :meth:`request` for the failures);
        ``mcp_tool_error`` when the tool itself reported ``isError``.
        """
        return await self._calls.call_tool(name, arguments)

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
        return await self._calls.request(action, send, bounded=bounded)

    # -- the owner task ----------------------------------------------------------------------

    async def _own(self) -> None:
        """Connect, serve, and after a failure or a loss try again — until closed."""
        try:
            while not self._stop.is_set():
                ticket = self._health.breaker.allow()
                if ticket is None:  # the circuit is open: wait for its half-open attempt
                    await self._pause(self._health.breaker.retry_in())
                    continue
                stable = await self._attempt(ticket)
                if self._stop.is_set():
                    break
                await self._pause(self._health.next_delay(stable))
        finally:
            self._health.retry_at = None
            self._health.set_state("closed")

    async def _attempt(self, ticket: Ticket) -> bool:
        """One connection: open, initialize, list, serve until lost or closed.

        Returns whether it ended as the loss of a stable session (retried at once; anything
        else backs off). Everything it opened is closed when it returns.
        """
        self._lost, self._tools_changed = None, False
        self._health.retry_at = None
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
        self._connect_failed(attempt, self._diagnosis.connect_timeout(attempt.started))
        scope.cancel()

    def _failure_reason(self, exc: Exception, attempt: _Attempt) -> str | None:
        reason = self._diagnosis.describe(exc, connected=attempt.connected)
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
                self._health.breaker.release(attempt.ticket)
            return False
        if attempt.timed_out:
            return False
        if not attempt.connected:
            self._connect_failed(attempt, reason or f"MCP server {self.name!r} failed to connect")
            return False
        loss = attempt.loss or reason or f"MCP server {self.name!r} closed the connection"
        self._health.lost(loss)
        if attempt.stable:
            return True
        within = f"; it was lost within {self._health.policy.stable_after:g} s of connecting"
        self._connect_failed(attempt, loss + within)
        return False

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        return await open_session(
            stack,
            self.name,
            self.config,
            screen=self._screen,
            http=self._http,
            hooks=SessionHooks(
                on_message=self._on_message,
                on_transport_end=self._transport_ended,
                on_launch=self._adopt_launch,
                on_pid=self._adopt_pid,
            ),
        )

    def _adopt_launch(self, launch: StdioLaunch) -> None:
        self._launch = launch

    def _adopt_pid(self, pid: int | None) -> None:
        self.pid = pid

    async def _serve(self, session: ClientSession, attempt: _Attempt) -> str | None:
        """Wait for close, loss or a changed tool list; returns the loss (``None``: closed).

        Once the session has stayed up ``stable_after`` seconds the connect counts as a
        success (breaker closed, failures reset).
        """
        self._scope = None
        self._serving = True
        interval = _LIVENESS_INTERVAL_S if self.pid is not None else math.inf
        stable_at = anyio.current_time() + self._health.policy.stable_after
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
                    + self._diagnosis.stderr_note()
                )
            if self._lost is not None:
                return self._lost
            if not attempt.stable and anyio.current_time() >= stable_at:
                attempt.stable = attempt.judged = True
                self._health.stable(attempt.ticket)
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
                    listed, screened = await list_all_tools(session, self.name, self._screen)
            except TimeoutError:
                failure = f"no answer within {self.config.connect_timeout:g} s"
            except MCPError as exc:
                if is_session_loss(exc, transport=self.config.transport):
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
            logger.warning(
                "mcp_tools_refresh_failed", server=self.name, error=self._diagnosis.say(failure)
            )
            return
        changed = self._adopt_tools(listed, screened)
        logger.info(
            "mcp_tools_listed", server=self.name, tools=len(self._offer.tools), changed=changed
        )

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

    # -- state changes -----------------------------------------------------------------------

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
        self._health.error = None
        self._health.set_state("ready")
        event = "mcp_server_reconnected" if recovered else "mcp_server_ready"
        logger.info(
            event, server=self.name, tools=len(self._offer.tools), skipped=len(self.skipped)
        )

    def _adopt_tools(self, listed: list[types.Tool], screened: list[SkippedTool]) -> bool:
        """Offer the listed tools (see :meth:`ToolOffer.adopt`); whether they changed.

        A listing equal to the last one (a reconnect, a ``list_changed`` that changed nothing)
        keeps the tools and the version.
        """
        if not self._offer.adopt(listed, screened, self.capabilities):
            return False
        self._health.version += 1
        return True

    def _connection_lost(self, reason: str) -> None:
        """The live session broke (seen by a call, the transport or the liveness check)."""
        if self._lost is not None or self._stop.is_set():
            return
        self._lost = reason
        self._wake.set()
        self._health.lost(reason)

    def _connect_failed(self, attempt: _Attempt, reason: str) -> None:
        attempt.judged = True
        self._health.connect_failed(attempt.ticket, reason)

    # -- callbacks from the session's tasks -------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools_changed = True
            self._wake.set()
        elif isinstance(message, Exception):
            text = self._diagnosis.say(self._note.record(message))
            logger.warning("mcp_transport_error", server=self.name, error=text)

    def _transport_ended(self) -> None:
        if self._serving and not self._stop.is_set():
            self._connection_lost(
                f"MCP server {self.name!r} closed the connection" + self._diagnosis.stderr_note()
            )

    # -- failure reports -------------------------------------------------------------------

    def _stderr_tail(self) -> str:
        return self._launch.stderr_tail() if self._launch is not None else ""
