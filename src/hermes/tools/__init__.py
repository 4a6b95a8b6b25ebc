"""Tools: the contract (:class:`Tool`, :class:`ToolResult`), ``@tool``, the registry, argument
validation, the executor and the built-in tools.

A tool call goes registry → :func:`validate_arguments` → the function (sync in a thread, async on
the loop, under a timeout) → a JSON-safe :class:`ToolResult`. Failures are results, not
exceptions (DESIGN principle 2).
"""

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.tools.base import Tool, ToolContext, ToolErrorInfo, ToolResult
from hermes.tools.builtin import BUILTIN_TOOLS, get_builtin
from hermes.tools.decorator import as_tool, tool
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry
from hermes.tools.schema import FunctionSchema, function_schema
from hermes.tools.validation import validate_arguments

__all__ = [
    "BUILTIN_TOOLS",
    "FieldProblem",
    "FunctionSchema",
    "Tool",
    "ToolArgumentError",
    "ToolContext",
    "ToolErrorInfo",
    "ToolRegistry",
    "ToolResult",
    "as_tool",
    "execute_tool_call",
    "function_schema",
    "get_builtin",
    "tool",
    "validate_arguments",
]
