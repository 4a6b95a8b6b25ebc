"""The tools one connection offers: the server's own (filtered, adapted) plus the resource and
prompt utilities (:mod:`hermes.mcp.utility`) its capabilities call for.

A listing equal to the last one (a reconnect, a ``list_changed`` that changed nothing) keeps the
adapted tools as they are, so the agent's tool set — and what the model is shown — stays put.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types as types

from hermes.mcp.adapter import SkippedTool, adapt_tools
from hermes.mcp.config import ServerConfig
from hermes.mcp.listing import tools_fingerprint
from hermes.mcp.utility import SessionRequest, utility_tools
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult

__all__ = ["CALL_GRACE_S", "ToolOffer"]

logger = get_logger("mcp")

#: The executor's bound on a call exceeds the session's by this much, so the connection's own
#: timeout (with its clearer message) is the one that fires.
CALL_GRACE_S = 1.0


class ToolOffer:
    """The adapted tools of one server, keyed by the server's own names too."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        call_tool: Callable[[str, Mapping[str, Any]], Awaitable[ToolResult]],
        request: SessionRequest,
        max_text_chars: int,
    ) -> None:
        self.name = name
        self.config = config
        self._call_tool = call_tool
        self._request = request
        self._max_text_chars = max_text_chars
        #: The server's own tools, then the utilities.
        self.tools: list[Tool] = []
        #: The server's own tools by their remote names.
        self.by_remote: dict[str, Tool] = {}
        #: What was not offered, and why (screened out, not adaptable, name taken …).
        self.skipped: list[SkippedTool] = []
        self._fingerprint: object = None

    def adopt(
        self,
        listed: list[types.Tool],
        screened: list[SkippedTool],
        capabilities: types.ServerCapabilities | None,
    ) -> bool:
        """The server's tools (filtered, adapted) plus its resource/prompt utilities.

        Returns whether they changed: a listing equal to the last one keeps the tools.
        """
        config = self.config
        wanted = [t for t in listed if config.tools.allows(t.name)]
        caps = capabilities
        fingerprint = (
            tools_fingerprint(wanted),
            tuple(screened),
            caps is not None and caps.resources is not None,
            caps is not None and caps.prompts is not None,
        )
        if fingerprint == self._fingerprint:
            return False
        self._fingerprint = fingerprint
        prefix = config.prefix_for(self.name)
        timeout = config.timeout + CALL_GRACE_S
        by_remote, skipped = adapt_tools(
            self.name,
            prefix,
            wanted,
            self._call_tool,
            timeout=timeout,
            permissions=config.permissions,
            requires_approval=config.needs_approval,
        )
        utilities, not_offered = utility_tools(
            self.name,
            prefix,
            caps,
            self._request,
            taken={tool.name for tool in by_remote.values()},
            allows=config.tools.allows,
            timeout=timeout,
            max_text_chars=self._max_text_chars,
            request_timeout=config.timeout,
            permissions=config.permissions,
            requires_approval=config.needs_approval,
        )
        for item in (*screened, *skipped, *not_offered):
            logger.warning(
                "mcp_tool_skipped", server=self.name, tool=item.remote_name, reason=item.reason
            )
        self.by_remote = by_remote
        self.tools = [*by_remote.values(), *utilities]
        self.skipped = screened + skipped + not_offered
        return True
