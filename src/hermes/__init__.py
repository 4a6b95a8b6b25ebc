"""Hermes: a strict, fast, message-driven agent runtime.

The public surface is this module's ``__all__`` (pinned by ``tests/test_public_api.py``);
everything else may change between versions. Names are imported on first use (PEP 562), so
``import hermes.tools.builtin.calculator`` — what a sandboxed tool's process does — does not
pay for the agent loop, the models and the store.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.agent.events import AgentEvent
    from hermes.agent.result import RunResult, ToolCallRecord
    from hermes.errors import (
        ConfigError,
        HermesError,
        InvalidIdError,
        InvalidInputError,
        ModelError,
        SessionAccessError,
        SessionBusyError,
        StoreError,
        ToolArgumentError,
    )
    from hermes.messages import Message
    from hermes.tools.base import Tool, ToolContext, ToolResult
    from hermes.tools.decorator import tool

from hermes._version import __version__

_EXPORTS = {
    "Agent": "hermes.agent.agent",
    "AgentEvent": "hermes.agent.events",
    "RunResult": "hermes.agent.result",
    "ToolCallRecord": "hermes.agent.result",
    "ConfigError": "hermes.errors",
    "HermesError": "hermes.errors",
    "InvalidIdError": "hermes.errors",
    "InvalidInputError": "hermes.errors",
    "ModelError": "hermes.errors",
    "SessionAccessError": "hermes.errors",
    "SessionBusyError": "hermes.errors",
    "StoreError": "hermes.errors",
    "ToolArgumentError": "hermes.errors",
    "Message": "hermes.messages",
    "Tool": "hermes.tools.base",
    "ToolContext": "hermes.tools.base",
    "ToolResult": "hermes.tools.base",
    "tool": "hermes.tools.decorator",
}

__all__ = [
    "Agent",
    "AgentEvent",
    "ConfigError",
    "HermesError",
    "InvalidIdError",
    "InvalidInputError",
    "Message",
    "ModelError",
    "RunResult",
    "SessionAccessError",
    "SessionBusyError",
    "StoreError",
    "Tool",
    "ToolArgumentError",
    "ToolCallRecord",
    "ToolContext",
    "ToolResult",
    "__version__",
    "tool",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hermes' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
