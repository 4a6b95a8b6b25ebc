"""The circuit breaker (``circuit_breaker=``): after repeated failures a tool is refused for a
while (``service_unavailable``) instead of being called again and again."""

from __future__ import annotations

import math

from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.results import refused
from hermes.tools.policies.breaker import BreakerBoard

__all__ = ["BreakerStep"]


class BreakerStep:
    """One breaker per tool name on the board; the run step's verdict (``call.verdict``)
    decides what a run counts as: a failure, a success, or nothing (cancelled, or the
    caller's own error such as invalid arguments)."""

    name = "breaker"

    def __init__(self, board: BreakerBoard) -> None:
        self.board = board

    def applies(self, tool: Tool) -> bool:
        return tool.circuit_breaker is not None

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        tool = call.tool
        assert tool.circuit_breaker is not None
        breaker = self.board.get(tool.name, tool.circuit_breaker)
        ticket = breaker.allow()
        call.mark("breaker")
        if ticket is None:
            wait = max(1, math.ceil(breaker.retry_in()))
            message = (
                f"tool {tool.name!r} is temporarily unavailable after repeated failures "
                f"(circuit open); try again in {wait} s"
            )
            return refused("service_unavailable", message, call.start)
        verdict = call.verdict
        try:
            result = await next(call)
        except BaseException:  # cancelled: no verdict on the tool's health
            breaker.release(ticket)
            raise
        if verdict.health is None:
            breaker.release(ticket)
        else:
            breaker.record(ticket, failed=verdict.health == "failed")
        return result
