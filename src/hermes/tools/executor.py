"""Running one tool call without building an executor: :func:`execute_tool_call`, the
convenience over :class:`~hermes.tools.pipeline.ToolExecutor` (see :mod:`hermes.tools.pipeline`
for the chain every call runs through).

Stable error types of a result: ``unknown_tool``, ``invalid_arguments``, ``permission_denied``,
``approval_required``, ``service_unavailable`` (circuit open), ``timeout``,
``execution_error``, ``invalid_output``, ``store_error`` (idempotency record unavailable),
``outcome_unknown``, ``retry_with``, ``sandbox_*``, or the ``code`` of a
:class:`~hermes.errors.ToolError` the tool raised on purpose. ``attempts`` counts the runs of
the tool (0 when it never ran: refused, or replayed — then ``cached`` is true).
"""

from __future__ import annotations

import weakref

from hermes.models.base import ToolCall
from hermes.tools.base import ToolContext, ToolResult
from hermes.tools.pipeline import CallContext, SandboxUnavailableError, ToolExecutor, json_safe
from hermes.tools.registry import ToolRegistry

__all__ = ["REMOVED_EXTRAS", "SandboxUnavailableError", "execute_tool_call", "json_safe"]

#: ``ToolContext.extras`` keys that carried the pipeline's dependencies before the pipeline
#: took them at construction (``ToolExecutor(authorizer=…, state=…, idempotency=…)``,
#: ``CallContext(approved=True)``, memory's step). A context still carrying one is refused,
#: never silently ignored: an ignored ``authorizer`` would let every call through.
REMOVED_EXTRAS = frozenset(
    {
        "authorizer",
        "approved_call_ids",
        "idempotency_path",
        "policy_state",
        "tool_memory",
        "memory_background",
        "memory",
    }
)

_executors: weakref.WeakKeyDictionary[ToolRegistry, ToolExecutor] = weakref.WeakKeyDictionary()


async def execute_tool_call(
    registry: ToolRegistry,
    call: ToolCall,
    ctx: ToolContext | CallContext,
    *,
    max_output_chars: int = 20_000,
) -> ToolResult:
    """Run ``call`` against ``registry`` through the default chain (no authorizer, the
    process-wide policy state and its in-process idempotency records — exactly-once within
    this process, not durable: build a ``ToolExecutor(registry, idempotency=…)`` with durable
    records, or use an ``Agent``, for keys that outlive the process); never raises for a
    failure. ``ValueError`` when ``ctx.extras`` carries a key of :data:`REMOVED_EXTRAS`.

    Sync tools run in a worker thread, async ones on the loop; both under ``tool.timeout``
    (per attempt). Outputs are made JSON-safe; text longer than the tool's
    ``max_output_chars`` (else ``max_output_chars``) is truncated with a note.
    Cancellation of the calling task propagates (it is not a tool failure).
    """
    if isinstance(ctx, ToolContext) and ctx.extras and not REMOVED_EXTRAS.isdisjoint(ctx.extras):
        keys = ", ".join(sorted(REMOVED_EXTRAS.intersection(ctx.extras)))
        raise ValueError(
            f"ToolContext.extras no longer carries the pipeline's dependencies ({keys}): build a "
            "hermes.tools.pipeline.ToolExecutor(registry, authorizer=…, state=…, "
            "idempotency=…) and pass CallContext(approved=True) for an approved call"
        )
    executor = _executors.get(registry)
    if executor is None:
        executor = ToolExecutor(registry)
        _executors[registry] = executor
    return await executor.run(call, ctx, max_output_chars=max_output_chars)
