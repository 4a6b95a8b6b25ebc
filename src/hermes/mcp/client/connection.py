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

:class:`McpConnection` is the public face: it starts and stops the owner task and answers for
the connection. The work lives in collaborators it builds and owns, one module each: the owner
task's attempts and serving (:mod:`~hermes.mcp.client.owner`), the state and retry bookkeeping
(:mod:`~hermes.mcp.client.health`), opening the transport (:mod:`~hermes.mcp.client.transport`),
requests on the live session (:mod:`~hermes.mcp.client.calls`) and the offered tools
(:mod:`~hermes.mcp.client.offer`).

The owner task lives on the event loop that started it. When that loop ends (an ``Agent`` used
from two successive ``asyncio.run()`` calls), ``start()`` or ``wait_ready()`` on the next loop
starts a new owner there, which connects again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import mcp_types as types
from mcp.client.session import ClientSession

from hermes.mcp.adapter import SkippedTool
from hermes.mcp.client.calls import RemoteCalls
from hermes.mcp.client.diagnosis import Diagnosis
from hermes.mcp.client.health import ConnectionState, Health
from hermes.mcp.client.offer import ToolOffer
from hermes.mcp.client.owner import Owner
from hermes.mcp.config import ServerConfig
from hermes.mcp.failures import HttpStatus, TransportNote, exception_text
from hermes.mcp.listing import ToolListScreen
from hermes.mcp.reconnect import ReconnectPolicy
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult

__all__ = ["ConnectionState", "McpConnection"]

logger = get_logger("mcp")

R = TypeVar("R")

#: States in which the connection's tools are offered (calls fail fast while reconnecting).
_OFFERING: frozenset[ConnectionState] = frozenset({"ready", "reconnecting"})
#: States a wait for readiness waits through.
_PENDING: frozenset[ConnectionState] = frozenset({"connecting", "reconnecting"})


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
        self._screen = ToolListScreen(name)
        self._http = HttpStatus()
        self._note = TransportNote()
        # The owner is built last (it needs the offer, which needs the calls): what it holds
        # is reached through late-bound lambdas.
        self._diagnosis = Diagnosis(
            name,
            config,
            http=self._http,
            note=self._note,
            stderr_tail=lambda: self._owner.stderr_tail(),  # noqa: PLW0108 - late-bound
        )
        self._health = Health(
            name,
            enabled=config.enabled,
            policy=reconnect if reconnect is not None else ReconnectPolicy(),
            diagnosis=self._diagnosis,
        )
        self._calls = RemoteCalls(
            self._diagnosis,
            session=lambda: self._owner.session,
            ready=lambda: self.state == "ready",
            on_loss=lambda reason: self._owner.connection_lost(reason),  # noqa: PLW0108
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
        self._owner = Owner(
            name,
            config,
            health=self._health,
            diagnosis=self._diagnosis,
            offer=self._offer,
            screen=self._screen,
            http=self._http,
            note=self._note,
        )
        self._task: asyncio.Task[None] | None = None

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
    def server_info(self) -> types.Implementation | None:
        """What the server said about itself when it was last initialized."""
        return self._owner.server_info

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        """The capabilities the server declared when it was last initialized."""
        return self._owner.capabilities

    @capabilities.setter
    def capabilities(self, capabilities: types.ServerCapabilities | None) -> None:
        self._owner.capabilities = capabilities

    @property
    def pid(self) -> int | None:
        """The stdio server's process id from its start to its stop (``None`` between two
        processes, when it cannot be told, and for URL servers)."""
        return self._owner.pid

    @property
    def version(self) -> int:
        """Grows whenever the state or the offered tools change (cheap to poll)."""
        return self._health.version

    def start(self) -> None:
        """Begin connecting in the background (no-op when disabled, closed or running).

        An owner task that ended without ``aclose()`` — its event loop finished — is replaced
        by a new one on the running loop, which connects again.
        """
        if not self.config.enabled or self._owner.stopped or self._owner_alive():
            return
        loop = asyncio.get_running_loop()
        if self._task is not None:
            logger.warning(
                "mcp_owner_restarted",
                server=self.name,
                reason="its event loop ended or it was cancelled without aclose()",
            )
            self._owner.end_attempt()  # a loop closed under a running owner skipped its cleanup
            self._fresh_events()
            self._health.retry_at = None
        self._health.set_state("connecting")
        self._task = loop.create_task(self._owner.run(), name=f"mcp:{self.name}")

    def _owner_alive(self) -> bool:
        task = self._task
        return task is not None and not task.done() and not task.get_loop().is_closed()

    def _fresh_events(self) -> None:
        """New events for a new owner: an asyncio event binds to the loop that waits on it."""
        self._owner.fresh_events()
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
        self._owner.stop(cancel=False)
        if task is None:
            if self.state != "disabled":
                self._health.set_state("closed")
            return
        if not task.done():
            if task.get_loop() is not asyncio.get_running_loop():
                # Its loop is gone or elsewhere: nothing here can wait for it.
                logger.warning("mcp_owner_on_another_loop", server=self.name)
                self._owner.end_attempt()
            else:
                self._owner.stop(cancel=True)
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
        """Run ``send`` on the live session, bounded by ``config.timeout``; failures come back
        as a :class:`ToolResult` (:meth:`RemoteCalls.request <hermes.mcp.client.calls.
        RemoteCalls.request>` lists them)."""
        return await self._calls.request(action, send, bounded=bounded)

    # -- failure reports -------------------------------------------------------------------
