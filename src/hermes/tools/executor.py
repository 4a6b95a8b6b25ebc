"""Running one tool call: the minimal executor (look up → validate → run → shape the output).

Every outcome is a :class:`ToolResult` — a failed call is data the model can react to
(DESIGN principle 2, seed 001 §3.2), never an exception out of here. Stable error types:
``unknown_tool``, ``invalid_arguments``, ``timeout``, ``execution_error`` (or the ``code`` of a
:class:`~hermes.errors.ToolError` the tool raised on purpose). Authorization, approval,
idempotency, caching, circuit breaking, retries and sandboxing wrap this path in later issues.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from time import perf_counter
from typing import Any

from pydantic_core import to_jsonable_python

from hermes.errors import ToolArgumentError, ToolError
from hermes.models.base import ToolCall
from hermes.observe import get_logger
from hermes.tools.base import Tool, ToolContext, ToolResult
from hermes.tools.registry import ToolRegistry
from hermes.tools.threads import TOOL_THREADS
from hermes.tools.validation import validate_arguments

__all__ = ["execute_tool_call", "json_safe"]

logger = get_logger("tools")

#: How many registered names an ``unknown_tool`` error lists (bounded for huge registries).
_MAX_LISTED_TOOLS = 20
_JSON_SCALARS = (str, int, float, bool, type(None))


async def execute_tool_call(
    registry: ToolRegistry,
    call: ToolCall,
    ctx: ToolContext,
    *,
    max_output_chars: int = 20_000,
) -> ToolResult:
    """Run ``call`` against ``registry``; never raises for a tool's failure.

    Sync tools run in a worker thread, async ones on the loop; both under ``tool.timeout``.
    Outputs are made JSON-safe; text longer than ``max_output_chars`` is truncated with a note.
    Cancellation of the calling task propagates (it is not a tool failure).
    """
    start = perf_counter()
    tool = registry.get(call.name)
    if tool is None:
        return _failure("unknown_tool", _unknown_tool_message(call.name, registry), start)
    if call.arguments_error is not None:
        message = f"arguments of tool {tool.name!r} are not a JSON object: {call.arguments_error}"
        return _failure("invalid_arguments", message, start)
    try:
        arguments = validate_arguments(tool.parameters, call.arguments)
    except ToolArgumentError as exc:
        return _failure("invalid_arguments", _named(exc, tool.name), start)
    if tool.context_param is not None:
        arguments[tool.context_param] = ctx
    try:
        output = await _run(tool, arguments)
    except _ToolTimedOut:
        # A sync tool's thread cannot be killed: it runs on in the background and its result
        # is dropped. The process sandbox of a later issue is what stops runaway code.
        message = f"tool {tool.name!r} did not finish within {tool.timeout:g} s"
        return _failure("timeout", message, start)
    except ToolArgumentError as exc:  # raised by argument conversion or by the tool itself
        return _failure("invalid_arguments", _named(exc, tool.name), start)
    except ToolError as exc:  # a failure the tool reports on purpose, with its own code
        return _failure(exc.code, exc.message, start)
    except Exception as exc:  # noqa: BLE001 - any tool bug becomes data for the model
        logger.warning("tool_raised", tool=tool.name, error_type=type(exc).__name__)
        if logger.is_enabled("DEBUG"):
            logger.debug("tool_traceback", tool=tool.name, traceback=traceback.format_exc())
        return _failure("execution_error", _exception_text(exc), start)
    return _success(tool, output, max_output_chars, start)


class _ToolTimedOut(Exception):
    pass


async def _run(tool: Tool, arguments: dict[str, Any]) -> Any:
    timeout = asyncio.timeout(tool.timeout)
    try:
        async with timeout:
            if tool.is_async:
                return await tool.fn(**arguments)
            result = await TOOL_THREADS.run(tool.fn, **arguments)
            if inspect.isawaitable(result):  # a sync callable that hands back a coroutine
                return await result
            return result
    except TimeoutError:
        # Only our deadline is a "timeout"; a TimeoutError the tool raised itself (a socket
        # timeout, say) is an execution error with its own message.
        if timeout.expired():
            raise _ToolTimedOut from None
        raise


def _success(tool: Tool, output: Any, max_output_chars: int, start: float) -> ToolResult:
    if isinstance(output, ToolResult):
        if not output.duration_ms:
            output.duration_ms = (perf_counter() - start) * 1000
        return output
    summary = _summary(tool, output)
    try:
        safe = json_safe(output)
    except Exception as exc:  # noqa: BLE001 - e.g. an object whose __str__ raises
        message = f"output of tool {tool.name!r} is not serializable: {type(exc).__name__}: {exc}"
        return _failure("execution_error", message, start)
    if isinstance(safe, str) and len(safe) > max_output_chars:
        safe = _truncate(safe, max_output_chars)
    return ToolResult.model_construct(
        ok=True,
        output=safe,
        error=None,
        summary=summary,
        duration_ms=(perf_counter() - start) * 1000,
        attempts=1,
        cached=False,
    )


def json_safe(value: Any) -> Any:
    """``value`` as JSON-ready data: models → ``model_dump(mode="json")``, dataclasses → dicts,
    sets/tuples → lists, NaN/inf → null, bytes → text (or base64), anything else → ``str``."""
    if isinstance(value, _JSON_SCALARS) and not isinstance(value, float):
        return value
    try:
        return to_jsonable_python(value, fallback=str, inf_nan_mode="null")
    except UnicodeDecodeError:  # bytes that are not UTF-8
        return to_jsonable_python(value, fallback=str, inf_nan_mode="null", bytes_mode="base64")


def _summary(tool: Tool, output: Any) -> str | None:
    if tool.summary is not None:
        try:
            return str(tool.summary(output))
        except Exception as exc:  # noqa: BLE001 - a broken summary must not fail the call
            logger.warning("tool_summary_failed", tool=tool.name, error_type=type(exc).__name__)
            return None
    if isinstance(output, dict):
        summary = output.get("summary")
        if isinstance(summary, str):
            return summary
    return None


def _truncate(text: str, limit: int) -> str:
    kept = max(limit, 0)
    return f"{text[:kept]}\n…[truncated: showing {kept} of {len(text)} characters]"


def _failure(error_type: str, message: str, start: float) -> ToolResult:
    return ToolResult.failure(error_type, message, duration_ms=(perf_counter() - start) * 1000)


def _named(exc: ToolArgumentError, tool_name: str) -> str:
    return str(ToolArgumentError(exc.problems, tool=exc.tool or tool_name))


def _unknown_tool_message(name: str, registry: ToolRegistry) -> str:
    names = registry.names()
    shown = ", ".join(names[:_MAX_LISTED_TOOLS])
    if len(names) > _MAX_LISTED_TOOLS:
        shown += f", … ({len(names) - _MAX_LISTED_TOOLS} more)"
    return f"no tool named {name!r}; available: {shown or '(none)'}"


#: How much of an exception's text the model sees; the full text is in the debug log.
MAX_ERROR_CHARS = 500


def _exception_text(exc: BaseException) -> str:
    """ "TypeName: message", clipped: an exception may carry a whole payload or a secret."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"
