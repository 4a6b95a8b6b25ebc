"""Requests on a connection's live session: tool calls and the utilities' requests.

Every outcome is data: a failure comes back as a :class:`~hermes.tools.base.ToolResult` naming
the server and the action, never as an exception into the executor. A request that meets a
closed connection or a terminated HTTP session reports the loss to the connection, whose owner
task reconnects.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from hermes.mcp.adapter import normalize_result
from hermes.mcp.client.diagnosis import Diagnosis
from hermes.observe import get_logger
from hermes.tools.base import ToolResult

__all__ = ["RemoteCalls", "is_session_loss"]

logger = get_logger("mcp")

R = TypeVar("R")


def is_session_loss(exc: MCPError, *, transport: str) -> bool:
    """Whether a protocol error means the session is gone (only a reconnect helps)."""
    if exc.code == types.CONNECTION_CLOSED:
        return True
    # A restarted streamable-HTTP server no longer knows our session id: the SDK reports
    # its 404 as this error, and only a new session (a reconnect) helps.
    return (
        transport == "streamable_http"
        and exc.code == types.INVALID_REQUEST
        and exc.message == "Session terminated"
    )


class RemoteCalls:
    """The requests of one connection, run on whatever session it holds at the time.

    ``session`` returns the adopted session (``None`` between two), ``ready`` whether the
    connection is ready; ``on_loss`` reports a lost session; ``unavailable`` words the failure
    of a request made while not connected.
    """

    def __init__(
        self,
        diagnosis: Diagnosis,
        *,
        session: Callable[[], ClientSession | None],
        ready: Callable[[], bool],
        on_loss: Callable[[str], None],
        unavailable: Callable[[], str],
        max_text_chars: int,
    ) -> None:
        self._diagnosis = diagnosis
        self._session = session
        self._ready = ready
        self._on_loss = on_loss
        self._unavailable = unavailable
        self._max_text_chars = max_text_chars

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Call the server's tool ``name`` (its own name, not the prefixed one).

        Every outcome is a :class:`ToolResult` (see :meth:`request` for the failures);
        ``mcp_tool_error`` when the tool itself reported ``isError``.
        """
        timeout = self._diagnosis.config.timeout
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
        session = self._session()
        if session is None or not self._ready():
            return ToolResult.failure("service_unavailable", self._unavailable())
        diagnosis = self._diagnosis
        started, http_seen = time.monotonic(), diagnosis.http.count
        try:
            if bounded:
                return await send(session)
            with anyio.fail_after(diagnosis.config.timeout):
                return await send(session)
        except TimeoutError:
            return self._timed_out(action, started, http_seen)
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                return self._timed_out(action, started, http_seen)
            return self._refused(action, exc, session, http_seen)
        except (ValidationError, RuntimeError) as exc:
            # RuntimeError: structured content that breaks the tool's output schema, or a
            # request for input Hermes cannot answer over this path.
            message = diagnosis.unusable(action, exc)
            logger.warning("mcp_invalid_result", server=diagnosis.name, error=message)
            return ToolResult.failure("invalid_output", message)

    def _timed_out(self, action: str, started: float, http_seen: int) -> ToolResult:
        message = self._diagnosis.request_timeout(action, started, http_seen)
        logger.warning("mcp_request_timeout", server=self._diagnosis.name, error=message)
        return ToolResult.failure("timeout", message)

    def _refused(
        self, action: str, exc: MCPError, session: ClientSession, http_seen: int
    ) -> ToolResult:
        diagnosis = self._diagnosis
        if session is not self._session():
            # A late error of a session that has been replaced since: it says nothing about
            # the live one, which must not be torn down for it.
            return ToolResult.failure("service_unavailable", self._unavailable())
        if is_session_loss(exc, transport=diagnosis.config.transport):
            self._on_loss(f"MCP server {diagnosis.name!r} lost the connection during {action}")
            return ToolResult.failure("service_unavailable", self._unavailable())
        message = diagnosis.refused(action, exc, http_seen)
        logger.warning("mcp_request_refused", server=diagnosis.name, code=exc.code, error=message)
        return ToolResult.failure("mcp_error", message)
