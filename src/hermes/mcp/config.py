"""The ``mcp_servers:`` configuration models; they live in :mod:`hermes.config.mcp` (the config
layer owns every section of ``hermes.yaml``) and are re-exported here for MCP code."""

from hermes.config.mcp import ServerConfig, ToolFilter, Transport, parse_mcp_servers, sanitize_name

__all__ = ["ServerConfig", "ToolFilter", "Transport", "parse_mcp_servers", "sanitize_name"]
