"""A successful run's output, shaped: parsed (``parser``), made JSON-safe, checked (output
schema, ``post_validate``), summarized and bounded — or refused as ``invalid_output``."""

from __future__ import annotations

from time import perf_counter
from typing import Any

from jsonschema import Draft202012Validator
from pydantic_core import to_jsonable_python

from hermes.observe import get_logger
from hermes.tools._fastcheck import Check, compile_fast_check
from hermes.tools._problems import problems_from_errors
from hermes.tools.base import Tool, ToolResult
from hermes.tools.pipeline.call import Call
from hermes.tools.pipeline.results import exception_text, refused

__all__ = ["json_safe", "shape"]

logger = get_logger("tools")

_JSON_SCALARS = (str, int, float, bool, type(None))
_MAX_OUTPUT_PROBLEMS = 5
_MAX_OUTPUT_VALIDATORS = 1024
# id(schema) → (schema, validator, fast check): holding the schema keeps its id from being
# reused. The fast check (~1 µs) answers for common shapes; jsonschema (~15 µs) for the rest.
_output_validators: dict[int, tuple[dict[str, Any], Draft202012Validator, Check | None]] = {}


def shape(call: Call, raw: Any, attempts: int) -> ToolResult:
    """Parse, check and shape a successful run's output."""
    tool, start = call.tool, call.start
    if isinstance(raw, ToolResult):  # the tool shaped its own result: pass it through
        raw.attempts = attempts
        if not raw.duration_ms:
            raw.duration_ms = (perf_counter() - start) * 1000
        return raw
    output = raw
    if tool.parser is not None:
        try:
            output = tool.parser(raw)
        except Exception as exc:  # noqa: BLE001 - a parser failure is the output's fault
            message = f"the parser of tool {tool.name!r} failed: {exception_text(exc)}"
            return refused("invalid_output", message, start, attempts)
        call.mark("parse")
    summary = _summary(tool, output)
    try:
        safe = json_safe(output)
    except Exception as exc:  # noqa: BLE001 - e.g. an object whose __str__ raises
        message = f"output of tool {tool.name!r} is not serializable: {type(exc).__name__}: {exc}"
        return refused("execution_error", message, start, attempts)
    if tool.output_schema is not None or tool.post_validate is not None:
        problem = _output_problem(tool, output, safe)
        call.mark("check")
        if problem is not None:
            return refused("invalid_output", problem, start, attempts)
    if isinstance(safe, str) and len(safe) > call.limit:
        safe = _truncate(safe, call.limit)
    return ToolResult.model_construct(
        ok=True,
        output=safe,
        error=None,
        summary=summary,
        duration_ms=(perf_counter() - start) * 1000,
        attempts=attempts,
        cached=False,
    )


def _output_problem(tool: Tool, parsed: Any, safe: Any) -> str | None:
    """Why the output is wrong (output schema, then ``post_validate``), or None."""
    schema = tool.output_schema
    if schema is not None:
        entry = _output_validators.get(id(schema))
        if entry is None or entry[0] is not schema:
            validator = Draft202012Validator(
                schema, format_checker=Draft202012Validator.FORMAT_CHECKER
            )
            if len(_output_validators) >= _MAX_OUTPUT_VALIDATORS:  # tools built per call
                _output_validators.pop(next(iter(_output_validators)))
            entry = (schema, validator, compile_fast_check(schema))
            _output_validators[id(schema)] = entry
        _, validator, fast_check = entry
        valid = fast_check is not None and fast_check(safe)
        problems = [] if valid else problems_from_errors(validator.iter_errors(safe))
        if problems:
            shown = "; ".join(str(p) for p in problems[:_MAX_OUTPUT_PROBLEMS])
            return f"output of tool {tool.name!r} does not match its output schema: {shown}"
    if tool.post_validate is not None:
        try:
            tool.post_validate(parsed)
        except Exception as exc:  # noqa: BLE001 - the check rejecting the output is its job
            return f"output of tool {tool.name!r} was rejected: {exception_text(exc)}"
    return None


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
