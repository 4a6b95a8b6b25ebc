"""MCP (Model Context Protocol) for Hermes, on the official ``mcp`` SDK (issue 4).

Client side: :func:`parse_mcp_servers` reads the configuration, :class:`McpManager` connects the
servers concurrently and offers their tools (named ``<prefix>__<tool>``) as ordinary Hermes
tools that run through the executor pipeline like every other tool.
"""

from hermes.mcp.adapter import (
    MCP_TOOL_ERROR,
    SkippedTool,
    adapt_tools,
    normalize_result,
    remote_tool,
    tool_name,
    tool_names,
)
from hermes.mcp.client import ConnectionState, McpConnection, McpConnectionError, McpManager
from hermes.mcp.config import ServerConfig, ToolFilter, parse_mcp_servers

__all__ = [
    "MCP_TOOL_ERROR",
    "ConnectionState",
    "McpConnection",
    "McpConnectionError",
    "McpManager",
    "ServerConfig",
    "SkippedTool",
    "ToolFilter",
    "adapt_tools",
    "normalize_result",
    "parse_mcp_servers",
    "remote_tool",
    "tool_name",
    "tool_names",
]
