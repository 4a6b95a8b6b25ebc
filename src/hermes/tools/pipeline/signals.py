"""Signals: what a tool or a step raises on purpose to talk to the loop — not failures of the
run (STYLE, pydantic-ai's two error families). Each becomes a :class:`ToolResult` the model
reads, unless the caller asked for the signal itself (``ToolExecutor.run(signals="raise")``:
the agent does, to ask a person for an approval).
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["ApprovalRequired", "RetryWith", "ToolSignal"]


class ToolSignal(Exception):
    """Base of the signals; ``error_type`` is the code of the result it becomes."""

    error_type: ClassVar[str] = "signal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class RetryWith(ToolSignal):
    """The call should be made again, changed as ``message`` says (raised by a tool or a step,
    like pydantic-ai's ``ModelRetry``). The model reads ``message`` as a ``retry_with`` error;
    it never counts against the tool's circuit breaker and is never retried as it was."""

    error_type = "retry_with"


class ApprovalRequired(ToolSignal):
    """The call is valid and allowed but waits for a person's approval (seed 004 §4.3): raised
    by the approval step, after validation and authorization, for a ``requires_approval``
    tool called without ``CallContext.approved``. Carries what the person must be shown."""

    error_type = "approval_required"

    def __init__(self, tool: str, call_id: str, arguments: dict[str, Any]) -> None:
        super().__init__(
            f"tool {tool!r} needs a person's approval before it runs; the call was not executed"
        )
        self.tool = tool
        self.call_id = call_id
        self.arguments = arguments
