"""The results the steps build: refusals, reused results, failures of a run."""

from __future__ import annotations

import traceback
from time import perf_counter
from typing import Any

from hermes.errors import ToolArgumentError, ToolError
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolResult

__all__ = ["MAX_ERROR_CHARS", "exception_text", "failed", "named", "refused", "reused"]

logger = get_logger("tools")

#: How much of an exception's text the model sees; the full text is in the debug log.
MAX_ERROR_CHARS = 500


def refused(error_type: str, message: str, start: float, attempts: int = 0) -> ToolResult:
    """A failed result; ``attempts`` is how many times the tool ran (0: it never did)."""
    return ToolResult.failure(
        error_type, message, duration_ms=(perf_counter() - start) * 1000, attempts=attempts
    )


def reused(output: Any, summary: str | None, start: float) -> ToolResult:
    """A result answered without running the tool (cache, idempotent replay, memory tiers)."""
    return ToolResult.model_construct(
        ok=True,
        output=output,
        error=None,
        summary=summary,
        duration_ms=(perf_counter() - start) * 1000,
        attempts=0,
        cached=True,
    )


def failed(tool: Tool, exc: Exception, attempts: int, start: float) -> ToolResult:
    """The result of a run that raised (call inside the ``except`` block: logs traceback)."""
    if isinstance(exc, ToolArgumentError):  # raised by argument conversion or by the tool
        return refused("invalid_arguments", named(exc, tool.name), start, attempts)
    if isinstance(exc, ToolError):  # a failure reported on purpose, with its own code
        return refused(exc.code, exc.message, start, attempts)
    logger.warning("tool_raised", tool=tool.name, error_type=type(exc).__name__)
    if logger.is_enabled("DEBUG"):
        logger.debug("tool_traceback", tool=tool.name, traceback=traceback.format_exc())
    return refused("execution_error", exception_text(exc), start, attempts)


def named(exc: ToolArgumentError, tool_name: str) -> str:
    """The error's text, naming the tool."""
    return str(ToolArgumentError(exc.problems, tool=exc.tool or tool_name))


def exception_text(exc: BaseException) -> str:
    """ "TypeName: message", clipped: an exception may carry a whole payload or a secret."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
