"""MCP (Model Context Protocol) for Hermes, on the official ``mcp`` SDK (seed 001 §4; seed 000
§2.3, §5.1).

Client side: :func:`parse_mcp_servers` reads the configuration, :class:`McpManager` connects the
servers concurrently, keeps them connected (backoff, circuit breaker, tool-list changes) and
offers their tools (named ``<prefix>__<tool>``, plus ``list_resources`` / ``read_resource`` /
``list_prompts`` / ``get_prompt`` utilities where the server has resources or prompts) as ordinary
Hermes tools that run through the executor pipeline like every other tool.
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
from hermes.mcp.reconnect import ReconnectPolicy
from hermes.mcp.utility import UTILITY_NAMES

__all__ = [
    "MCP_TOOL_ERROR",
    "UTILITY_NAMES",
    "ConnectionState",
    "McpConnection",
    "McpConnectionError",
    "McpManager",
    "ReconnectPolicy",
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
