"""The step protocol and the call that travels through the chain.

A step is ``async (call, next) -> ToolResult`` (FastMCP-style middleware): it may answer the
call itself (a refusal, a cached result), change it and pass it on (``await next(call)``), or
look at what came back. ``applies(tool)`` tells the executor whether the step has anything
to do for a tool at all, so a plain tool's chain holds only the steps it uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import perf_counter
from typing import Any, Literal, Protocol, runtime_checkable

from hermes.models.base import ToolCall
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.context import CallContext
from hermes.tools.policies.cache import canonical_json

__all__ = ["Call", "Health", "Next", "Step", "StepTimer", "Verdict"]

#: The run step's verdict on the tool's health for the circuit breaker: ``failed`` (counts
#: against it), ``ok``, or ``None`` (no verdict: refused before running, a caller's error).
Health = Literal["ok", "failed"] | None


class StepTimer:
    """Per-step costs of one call (only built when DEBUG logging is on)."""

    __slots__ = ("_last", "costs")

    def __init__(self, start: float) -> None:
        self._last = start
        self.costs: dict[str, float] = {}

    def mark(self, step: str) -> None:
        now = perf_counter()
        self.costs[step] = round((now - self._last) * 1000, 3)
        self._last = now


class Verdict:
    """The run step's verdict on the tool's health, for the breaker step."""

    __slots__ = ("health",)

    def __init__(self) -> None:
        self.health: Health = None


class Call:
    """One call on its way through the chain.

    ``tool`` is the registered tool; ``arguments`` are the model's until the validate step
    replaces them with the validated, coerced ones (a step that changes them passes
    :meth:`replace` on); ``request`` is the call as the model made it; ``context`` the
    :class:`CallContext`; ``limit`` the text-output limit; ``start`` when the call began
    (``perf_counter``). ``verdict.health`` is written by the run step for the breaker step
    (shared by every :meth:`replace` of the call, so a step in between cannot hide it).
    """

    __slots__ = (
        "_arguments_json",
        "arguments",
        "context",
        "limit",
        "request",
        "start",
        "timer",
        "tool",
        "verdict",
    )

    def __init__(
        self,
        tool: Tool,
        request: ToolCall,
        context: CallContext,
        *,
        limit: int,
        start: float,
        timer: StepTimer | None = None,
        arguments: dict[str, Any] | None = None,
    ) -> None:
        self.tool = tool
        self.request = request
        self.context = context
        self.arguments: dict[str, Any] = request.arguments if arguments is None else arguments
        self.limit = tool.max_output_chars if tool.max_output_chars is not None else limit
        self.start = start
        self.timer = timer
        self.verdict = Verdict()
        self._arguments_json: str | None = None

    def replace(self, *, arguments: dict[str, Any]) -> Call:
        """This call with other arguments (the rest, timer and start included, is shared)."""
        new = Call(
            self.tool,
            self.request,
            self.context,
            limit=self.limit,
            start=self.start,
            timer=self.timer,
            arguments=arguments,
        )
        new.verdict = self.verdict
        return new

    def arguments_json(self) -> str:
        """The arguments as canonical JSON (computed once: the cache and idempotency keys)."""
        if self._arguments_json is None:
            self._arguments_json = canonical_json(self.arguments)
        return self._arguments_json

    def mark(self, step: str) -> None:
        """Note the cost of ``step`` (a no-op unless DEBUG logging is on)."""
        if self.timer is not None:
            self.timer.mark(step)


#: The rest of the chain, as a step sees it.
Next = Callable[[Call], Awaitable[ToolResult]]


@runtime_checkable
class Step(Protocol):
    """One link of the tool pipeline. ``name`` places it (``ToolExecutor.insert``); a step
    without an ``applies`` method applies to every tool."""

    name: str

    async def __call__(self, call: Call, next: Next) -> ToolResult: ...
