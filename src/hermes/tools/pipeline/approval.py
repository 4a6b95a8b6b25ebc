"""The approval gate (seed 004 §4.3): a ``requires_approval`` tool runs only for a call a
person approved (``CallContext.approved``); otherwise the step raises :class:`ApprovalRequired`
— after validation and authorization, so nobody is asked about a call that would be refused.
The human side (wording, classification of the answer, expiry) is the agent's.
"""

from __future__ import annotations

from hermes.errors import ToolArgumentError
from hermes.tools.base import PRECHECK_ATTRIBUTE, Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.results import refused
from hermes.tools.pipeline.signals import ApprovalRequired

__all__ = ["ApprovalStep"]


class ApprovalStep:
    """Approved calls go on; others are prechecked, then signalled."""

    name = "approval"

    def applies(self, tool: Tool) -> bool:
        return tool.requires_approval

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        if call.context.approved:
            return await next(call)
        tool = call.tool
        check = getattr(tool.fn, PRECHECK_ATTRIBUTE, None)
        if check is not None:
            try:
                check(call.arguments)
            except ToolArgumentError as exc:
                message = f"tool {tool.name!r} refused the call before asking anyone: {exc.message}"
                return refused("invalid_arguments", message, call.start)
        raise ApprovalRequired(tool.name, call.context.call_id, dict(call.arguments))
