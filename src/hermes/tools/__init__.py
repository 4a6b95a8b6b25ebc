"""Tools: the contract (:class:`Tool`, :class:`ToolResult`), ``@tool``, the registry, argument
validation, the executor and the built-in tools.

Every call goes through one chain of steps (:mod:`hermes.tools.pipeline`; the shortcut
:func:`execute_tool_call`): validate and coerce → authorize → approval gate → result cache →
idempotency → circuit breaker → timeout + retry → (process sandbox) → parse → output checks → a
JSON-safe :class:`ToolResult`. Failures are results, not exceptions (DESIGN principle 2);
policies are declared with ``@tool(...)``.
"""

from hermes.errors import FieldProblem, ToolArgumentError
from hermes.tools.base import Tool, ToolContext, ToolErrorInfo, ToolResult
from hermes.tools.builtin import BUILTIN_TOOLS, get_builtin
from hermes.tools.decorator import as_tool, tool
from hermes.tools.executor import execute_tool_call
from hermes.tools.policies import BreakerPolicy, RetryPolicy
from hermes.tools.registry import ToolRegistry
from hermes.tools.schema import FunctionSchema, function_schema
from hermes.tools.validation import validate_arguments

__all__ = [
    "BUILTIN_TOOLS",
    "BreakerPolicy",
    "FieldProblem",
    "FunctionSchema",
    "RetryPolicy",
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
