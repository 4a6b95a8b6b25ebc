"""The connection's own failure: a server that could not be started, initialized or listed."""

from __future__ import annotations

from hermes.errors import ErrorCode, HermesError

__all__ = ["McpConnectionError"]


class McpConnectionError(HermesError):
    """A server could not be started, initialized or listed; the message names the server."""

    code: ErrorCode = "mcp_connection_error"
    status = 502
