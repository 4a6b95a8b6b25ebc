"""Authorization (seed 003 §2.2; seed 004 §4.1): the caller must hold the tool's scopes."""

from __future__ import annotations

import inspect
from typing import Any, Protocol

from hermes.errors import HermesError
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call, Next
from hermes.tools.pipeline.results import refused

__all__ = ["AuthorizeStep", "Checker"]

logger = get_logger("tools")


class Checker(Protocol):
    """What the step asks (``hermes.tools.permissions.Authorizer`` fits): ``check`` raises an
    error with code ``permission_denied``, or returns (may be async)."""

    def check(self, user_id: str | None, tool: Tool, *, session_id: str, trace_id: str) -> Any: ...


class AuthorizeStep:
    """Refuses a call its user may not make (``permission_denied``). Fails closed: an
    authorizer that breaks refuses the call too, it never lets it through."""

    name = "authorize"

    def __init__(self, authorizer: Checker) -> None:
        self.authorizer = authorizer

    def applies(self, tool: Tool) -> bool:
        return True  # the authorizer decides, also for a tool without declared scopes

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        denial = await self._denial(call)
        call.mark("authorize")
        if denial is not None:
            return refused("permission_denied", denial, call.start)
        return await next(call)

    async def _denial(self, call: Call) -> str | None:
        """None when allowed, else why not."""
        tool, ctx = call.tool, call.context
        try:
            outcome = self.authorizer.check(
                ctx.user_id, tool, session_id=ctx.session_id, trace_id=ctx.trace_id
            )
            if inspect.isawaitable(outcome):
                await outcome
        except HermesError as exc:
            if exc.code == "permission_denied":
                return exc.message
            logger.error(
                "authorizer_failed", tool=tool.name, error_type=exc.code, error=exc.message
            )
        except Exception as exc:  # noqa: BLE001 - a broken authorizer refuses, never lets through
            logger.error("authorizer_failed", tool=tool.name, error_type=type(exc).__name__)
        else:
            return None
        return f"the permission check for tool {tool.name!r} failed, so the call was refused"
