"""The first step: the model's arguments against the tool's JSON Schema, coerced where the
schema allows (``hermes.tools.validation``); every later step sees valid arguments only."""

from __future__ import annotations

from hermes.errors import ToolArgumentError
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.results import named, refused
from hermes.tools.validation import validate_arguments

__all__ = ["ValidateStep"]


class ValidateStep:
    """Refuses arguments that are not a JSON object or break the schema (``invalid_arguments``,
    naming each wrong field); passes the call on with the validated arguments."""

    name = "validate"

    def applies(self, tool: Tool) -> bool:
        return True

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        tool = call.tool
        problem = call.request.arguments_error
        if problem is not None:
            message = f"arguments of tool {tool.name!r} are not a JSON object: {problem}"
            return refused("invalid_arguments", message, call.start)
        try:
            arguments = validate_arguments(tool.parameters, call.arguments)
        except ToolArgumentError as exc:
            return refused("invalid_arguments", named(exc, tool.name), call.start)
        call.mark("validate")
        call.arguments = arguments  # the first step: nothing before it holds the old ones
        return await next(call)
