"""Hermes: a strict, fast, message-driven agent runtime.

The public surface is this module's ``__all__`` (pinned by ``tests/test_public_api.py``);
everything else may change between versions.
"""

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

__version__ = "0.1.0"

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
