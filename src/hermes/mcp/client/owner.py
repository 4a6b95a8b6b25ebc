"""What one MCP connection's owner task does: connect, serve, and after a failure or a loss try
again — until closed (the life the :mod:`hermes.mcp.client.connection` docstring tells).

:class:`Owner` holds what only the owner task changes: the live session and what it said
(server info, capabilities), the stdio process, the attempt's cancel scope, and the events that
wake it (stop, a loss, a changed tool list). :class:`~hermes.mcp.client.connection.McpConnection`
starts the task on :meth:`Owner.run`, stops it and reads what it holds; requests from other
tasks reach the live session through :attr:`Owner.session`.
"""

from __future__ import annotations

import asyncio
import math
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass

import anyio
import mcp_types as types
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from hermes.mcp.adapter import SkippedTool
from hermes.mcp.client.calls import is_session_loss
from hermes.mcp.client.diagnosis import Diagnosis
from hermes.mcp.client.health import Health
from hermes.mcp.client.offer import ToolOffer
from hermes.mcp.client.transport import SessionHooks, open_session
from hermes.mcp.config import ServerConfig
from hermes.mcp.failures import HttpStatus, TransportNote, exception_text
from hermes.mcp.listing import ToolListScreen, list_all_tools
from hermes.mcp.process import StdioLaunch, process_running, sweep_process_group
from hermes.observe import get_logger
from hermes.tools.policies.breaker import Ticket

__all__ = ["Owner"]

logger = get_logger("mcp")

#: How often a served stdio connection checks that its server process still runs.
_LIVENESS_INTERVAL_S = 1.0


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


class Owner:
    """The owner task's side of one connection (see the module docstring)."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        health: Health,
        diagnosis: Diagnosis,
        offer: ToolOffer,
        screen: ToolListScreen,
        http: HttpStatus,
        note: TransportNote,
    ) -> None:
        self.name = name
        self.config = config
        self._health = health
        self._diagnosis = diagnosis
        self._offer = offer
        self._screen = screen
        self._http = http
        self._note = note
        #: The live session while one is adopted (requests run on it).
        self.session: ClientSession | None = None
        self.server_info: types.Implementation | None = None
        self.capabilities: types.ServerCapabilities | None = None
        #: The stdio server's process id from its start to its stop (``None`` between two
        #: processes, when it cannot be told, and for URL servers).
        self.pid: int | None = None
        #: Why the live session was lost (set once per attempt; the first report wins).
        self.lost: str | None = None
        #: What stop() cancels: the attempt while connecting, a tool refresh while serving.
        self._scope: anyio.CancelScope | None = None
        self._serving = False
        self._launch: StdioLaunch | None = None
        self._stop = asyncio.Event()
        #: Wakes the serving owner: stop, loss or a changed tool list (flags say which).
        self._wake = asyncio.Event()
        self._tools_changed = False

    @property
    def stopped(self) -> bool:
        """``aclose()`` was called: no further attempt starts."""
        return self._stop.is_set()

    def fresh_events(self) -> None:
        """New events for a new owner task: an asyncio event binds to the loop that waits on it."""
        self._stop, self._wake = asyncio.Event(), asyncio.Event()

    def stop(self, *, cancel: bool) -> None:
        """Stop retrying and wake the task; ``cancel`` also cancels a pending attempt or refresh."""
        self._stop.set()
        self._wake.set()
        if cancel and self._scope is not None:
            self._scope.cancel()

    async def run(self) -> None:
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
        self.lost, self._tools_changed = None, False
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
            self.end_attempt()
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
        if self.lost is not None:  # the loss was reported already; this is its cause
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
            if self.lost is None and self.pid is not None and not process_running(self.pid):
                self.connection_lost(
                    f"MCP server {self.name!r}: its process (pid {self.pid}) is gone"
                    + self._diagnosis.stderr_note()
                )
            if self.lost is not None:
                return self.lost
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
                    self.connection_lost(
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
        changed = self.adopt_tools(listed, screened)
        logger.info(
            "mcp_tools_listed", server=self.name, tools=len(self._offer.tools), changed=changed
        )

    def end_attempt(self) -> None:
        self.session = None
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
        recovered = self._health.state in ("reconnecting", "failed")
        self.server_info = init.server_info
        self.capabilities = init.capabilities
        self.session = session
        self.adopt_tools(listed, screened)
        self._health.error = None
        self._health.set_state("ready")
        event = "mcp_server_reconnected" if recovered else "mcp_server_ready"
        logger.info(
            event, server=self.name, tools=len(self._offer.tools), skipped=len(self._offer.skipped)
        )

    def adopt_tools(self, listed: list[types.Tool], screened: list[SkippedTool]) -> bool:
        """Offer the listed tools (see :meth:`ToolOffer.adopt`); whether they changed.

        A listing equal to the last one (a reconnect, a ``list_changed`` that changed nothing)
        keeps the tools and the version.
        """
        if not self._offer.adopt(listed, screened, self.capabilities):
            return False
        self._health.version += 1
        return True

    def connection_lost(self, reason: str) -> None:
        """The live session broke (seen by a call, the transport or the liveness check)."""
        if self.lost is not None or self._stop.is_set():
            return
        self.lost = reason
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
            self.connection_lost(
                f"MCP server {self.name!r} closed the connection" + self._diagnosis.stderr_note()
            )

    def stderr_tail(self) -> str:
        return self._launch.stderr_tail() if self._launch is not None else ""
