"""Several MCP servers connected concurrently, and the tools of the ready ones.

A slow server never blocks the first turn: :meth:`McpManager.start` returns at once and
:meth:`McpManager.tools` is what is offered now; :attr:`McpManager.version` tells a caller
whether that may have changed since it last looked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping
from typing import Any

from hermes.mcp.adapter import SkippedTool
from hermes.mcp.client.connection import McpConnection
from hermes.mcp.config import ServerConfig
from hermes.mcp.reconnect import ReconnectPolicy
from hermes.observe import get_logger
from hermes.tools.base import Tool

__all__ = ["McpManager"]

logger = get_logger("mcp")


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
