"""Connections to MCP servers (DESIGN.md, Layers: mcp), on the official SDK's transports and
``ClientSession``.

One :class:`McpConnection` per server, several under one :class:`McpManager`. The connection
starts and stops its owner task and hands the work to small collaborators, one module each:

- :mod:`~hermes.mcp.client.owner` is the owner task's work: attempts, serving, reconnecting;
- :mod:`~hermes.mcp.client.health` holds the state, the last error and the retry bookkeeping;
- :mod:`~hermes.mcp.client.transport` opens the transport and the session;
- :mod:`~hermes.mcp.client.calls` runs requests on the live session (tool calls, utilities),
  every failure a ``ToolResult``;
- :mod:`~hermes.mcp.client.offer` turns a tool listing into the offered tools (the server's
  own, then the resource and prompt utilities);
- :mod:`~hermes.mcp.client.diagnosis` words failures, redacted and bounded.
"""

from hermes.mcp.client.connection import McpConnection
from hermes.mcp.client.errors import McpConnectionError
from hermes.mcp.client.health import ConnectionState
from hermes.mcp.client.manager import McpManager

__all__ = ["ConnectionState", "McpConnection", "McpConnectionError", "McpManager"]
