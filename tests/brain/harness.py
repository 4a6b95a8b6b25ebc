"""A conversation harness for the offline brain: it plays the agent loop's part.

Each user message goes to ``RuleBrain.complete`` with the whole chat so far and one ``scratch``
dict that survives between steps as JSON (the loop persists it as JSON). When the brain calls a
tool, the harness runs a small stand-in tool and sends its ``ToolResult.to_model_text()`` back,
exactly as the loop does.
"""

from __future__ import annotations

import ast
import json
import operator
from collections.abc import Callable
from typing import Any

from hermes.models.base import ModelRequest, ModelResponse, ToolSpec
from hermes.models.brain import RuleBrain
from hermes.tools.base import ToolResult

CALCULATOR = ToolSpec(
    "calculator",
    "Evaluate an arithmetic expression.",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)
CURRENT_TIME = ToolSpec(
    "current_time",
    "The current date and time, optionally in a time zone or city.",
    {"type": "object", "properties": {"timezone": {"type": "string"}}},
)
ALL_TOOLS = [CALCULATOR, CURRENT_TIME]

_OPERATORS: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_ZONES = {"东京": "Asia/Tokyo", "london": "Europe/London", "纽约": "America/New_York"}


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp):
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp):
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"unsupported syntax: {type(node).__name__}")


def calculator(arguments: dict[str, Any]) -> ToolResult:
    """A stand-in for the built-in calculator with the same output shape."""
    expression = arguments["expression"]
    try:
        value = _evaluate(ast.parse(expression, mode="eval"))
    except ZeroDivisionError:
        return ToolResult.failure("execution_error", "division by zero")
    except (SyntaxError, ValueError, KeyError) as exc:
        return ToolResult.failure("invalid_arguments", f"not an arithmetic expression: {exc}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return ToolResult(
        ok=True,
        output={"expression": expression, "result": value},
        summary=f"{expression} = {value}",
    )


def current_time(arguments: dict[str, Any]) -> ToolResult:
    """A stand-in for the built-in current_time: a fixed instant, a few known places."""
    place = arguments.get("timezone")
    zone = "UTC" if place is None else _ZONES.get(str(place).lower())
    if zone is None:
        return ToolResult.failure("invalid_arguments", f"unknown time zone or city: {place}")
    return ToolResult(
        ok=True,
        output={
            "iso": "2024-05-01T14:03:00",
            "date": "2024-05-01",
            "time": "14:03:00",
            "weekday": "Wednesday",
            "weekday_zh": "星期三",
            "timezone": zone,
        },
    )


STAND_INS: dict[str, Callable[[dict[str, Any]], ToolResult]] = {
    "calculator": calculator,
    "current_time": current_time,
}


class Conversation:
    """One session with the brain: chat history, persisted scratch, and the tools on offer."""

    def __init__(self, brain: RuleBrain, tools: list[ToolSpec]) -> None:
        self.brain = brain
        self.tools = tools
        self.messages: list[dict[str, Any]] = []
        self.scratch: dict[str, Any] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []  # every tool call the brain made

    async def step(self) -> ModelResponse:
        request = ModelRequest(messages=list(self.messages), tools=self.tools, scratch=self.scratch)
        response = await self.brain.complete(request)
        # The loop stores scratch as JSON between steps: it must survive the round trip.
        self.scratch = json.loads(json.dumps(request.scratch))
        return response

    async def send(self, text: str) -> ModelResponse:
        """One user message → the brain's first response (a reply, a question or a call)."""
        self.messages.append({"role": "user", "content": text})
        response = await self.step()
        if response.content is not None and not response.tool_calls:
            self.messages.append({"role": "assistant", "content": response.content})
        return response

    async def give_result(self, response: ModelResponse, result: ToolResult) -> ModelResponse:
        """Answer the response's tool call with ``result`` → the brain's reply."""
        (call,) = response.tool_calls
        self.calls.append((call.name, call.arguments))
        self.messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                ],
            }
        )
        self.messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": result.to_model_text()}
        )
        reply = await self.step()
        self.messages.append({"role": "assistant", "content": reply.content})
        return reply

    async def turn(self, text: str) -> ModelResponse:
        """A whole turn: send, run the stand-in tool if one is called, return the final reply."""
        response = await self.send(text)
        if not response.tool_calls:
            return response
        call = response.tool_calls[0]
        return await self.give_result(response, STAND_INS[call.name](call.arguments))
