"""MCP servers' tools in an Agent's registry (seed 001 §4.1: the MCP adapter layer).

The agent's :class:`~hermes.tools.registry.ToolRegistry` holds its local tools (built-ins,
``@tool`` functions, plugins) and, beside them, the tools of the MCP servers that are ready.
:class:`RemoteTools` keeps the second part in step with the :class:`~hermes.mcp.McpManager`
before each turn: a server that connected late, reconnected, or changed its tool list
(``notifications/tools/list_changed``) is picked up by the next turn. A server that is
reconnecting keeps its tools offered (their calls fail fast with ``service_unavailable``);
one that has failed or closed takes them away. Local names are reserved: a remote tool never
shadows one.

The check costs one integer comparison when nothing changed (``McpManager.version``), so turns
of an agent without MCP changes pay nothing for it; the tool schemas' tokens and the toolset
index are recounted (``Runtime.refresh_tools``) only when tools joined or left the registry,
not for a state change alone. The manager is imported only when MCP
servers are configured: the SDK is a large import that plain agents never need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hermes.agent.turn_state import tools_tokens
from hermes.observe import get_logger
from hermes.tools.base import Tool

if TYPE_CHECKING:
    from hermes.agent.turn_state import Runtime
    from hermes.config.mcp import ServerConfig
    from hermes.mcp.client import McpManager

__all__ = ["RemoteTools", "tools_tokens"]

logger = get_logger("agent")


class RemoteTools:
    """The MCP part of an agent's registry: started lazily, synced per turn, closed with it."""

    def __init__(self, source: Mapping[str, ServerConfig] | McpManager, runtime: Runtime) -> None:
        from hermes.mcp.client import McpManager

        self.owned = not isinstance(source, McpManager)
        self.manager = source if isinstance(source, McpManager) else McpManager(source)
        self._runtime = runtime
        #: The remote tools this object put in the registry, by name. Everything else in the
        #: registry is local — also tools registered after the agent was built — and reserved.
        self._remote: dict[str, Tool] = {}
        self._version: int | None = None
        self._started = False

    def start(self) -> None:
        """Begin connecting every server in the background (needs a running event loop)."""
        # Every time: a no-op while the owners live, a restart after their event loop ended.
        self._started = True
        self.manager.start()

    async def wait_ready(self, timeout: float | None = None) -> None:  # noqa: ASYNC109 - a bounded wait is the API
        """Start, wait until each server is ready or failed (bounded), then sync the tools."""
        self.start()
        await self.manager.wait_ready(timeout)
        self.sync()

    def sync(self) -> None:
        """Bring the registry in step with the servers' current tools (cheap when unchanged).

        Only tools this object registered are ever replaced or removed: a local tool — also one
        registered after the agent was built, or one that took a remote tool's name — stays,
        and the remote tool of that name is reported as a collision instead.
        """
        self.start()
        version = self.manager.version
        if version == self._version:
            return
        self._version = version
        registry, ours = self._runtime.tools, self._remote
        reserved = [name for name in registry.names() if registry.get(name) is not ours.get(name)]
        current = {tool.name: tool for tool in self.manager.tools(reserved=reserved)}
        changed = False
        for name, tool in ours.items():
            if name not in current and registry.get(name) is tool:
                registry.unregister(name)
                changed = True
        for name, tool in current.items():
            existing = registry.get(name)
            if existing is not tool and (existing is None or existing is ours.get(name)):
                registry.register(tool, replace=True)
                changed = True
        added, removed = current.keys() - ours.keys(), ours.keys() - current.keys()
        self._remote = current
        if changed:  # not for a state change alone (ready ↔ reconnecting keeps the tools)
            self._runtime.refresh_tools()
        if added or removed:
            logger.info(
                "mcp_tools_synced",
                added=sorted(added),
                removed=sorted(removed),
                remote_tools=len(current),
            )

    def status(self) -> list[dict[str, Any]]:
        return self.manager.status()

    async def aclose(self) -> None:
        """Close the servers' connections (only those this object opened)."""
        if self.owned and self._started:
            await self.manager.aclose()
