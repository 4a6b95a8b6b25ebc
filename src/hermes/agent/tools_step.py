"""The tool step of a turn: run one model response's tool calls and turn them into items.

Independent calls run concurrently (seed 004 §2.2); calls to tools marked
``parallel_safe=False`` run one after another, in the order the model gave them. Every call
ends as a ``ToolResult`` — a failure is data for the model, never an exception for the loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.events import AgentEvent, ToolCallFinished, ToolCallStarted
from hermes.models.base import ModelResponse, ToolCall
from hermes.session.items import Item
from hermes.tools.base import ToolContext, ToolResult
from hermes.tools.executor import execute_tool_call
from hermes.tools.registry import ToolRegistry

REPEAT_NOTE = (
    "This tool returned exactly the same result as an earlier call in this turn. "
    "Do not repeat the call; check your arguments or answer with what you have."
)


@dataclass(slots=True)
class ToolStepState:
    """What the tool steps of one turn remember: repeats and hallucinated tool names."""

    seen_results: set[tuple[str, str]] = field(default_factory=set)
    unknown_tools: int = 0


def assistant_items(response: ModelResponse, trace_id: str) -> list[Item]:
    """The items that record a model response with tool calls (text first, then the calls)."""
    items: list[Item] = []
    if response.content:
        items.append(Item("assistant", "text", response.content, trace_id=trace_id))
    for tc in response.tool_calls:
        meta = {"arguments_error": tc.arguments_error} if tc.arguments_error else None
        items.append(
            Item(
                "assistant",
                "tool_call",
                json.dumps(tc.arguments, ensure_ascii=False),
                tool_call_id=tc.id,
                tool_name=tc.name,
                trace_id=trace_id,
                meta=meta,
            )
        )
    return items


def assistant_message(response: ModelResponse) -> dict[str, Any]:
    """The OpenAI chat-format assistant message for a response with tool calls."""
    return {
        "role": "assistant",
        "content": response.content or None,
        "tool_calls": [
            {
                "id": tc.id,
                "type": "function",
                "function": {
                    "name": tc.name,
                    "arguments": json.dumps(tc.arguments, ensure_ascii=False),
                },
            }
            for tc in response.tool_calls
        ],
    }


async def run_tool_calls(
    registry: ToolRegistry,
    calls: list[ToolCall],
    ctx: ToolContext,
    emit: Callable[[AgentEvent], None],
    max_output_chars: int,
) -> list[ToolResult]:
    """Run the calls of one response; results come back in the order of the calls."""

    async def one(tc: ToolCall) -> ToolResult:
        emit(ToolCallStarted(tc.id, tc.name, tc.arguments))
        call_ctx = ToolContext(
            session_id=ctx.session_id,
            user_id=ctx.user_id,
            trace_id=ctx.trace_id,
            call_id=tc.id,
            workspace=ctx.workspace,
            extras=ctx.extras,
        )
        result = await execute_tool_call(registry, tc, call_ctx, max_output_chars=max_output_chars)
        emit(
            ToolCallFinished(
                tc.id,
                tc.name,
                result.ok,
                result.duration_ms,
                result.error.type if result.error else None,
                result.summary,
            )
        )
        return result

    if len(calls) == 1:
        return [await one(calls[0])]
    results: dict[int, ToolResult] = {}
    parallel: dict[int, asyncio.Task[ToolResult]] = {}
    for i, tc in enumerate(calls):
        tool = registry.get(tc.name)
        if tool is None or tool.parallel_safe:
            parallel[i] = asyncio.ensure_future(one(tc))
    try:
        for i, tc in enumerate(calls):
            if i not in parallel:
                results[i] = await one(tc)
        for i, task in parallel.items():
            results[i] = await task
    finally:
        for task in parallel.values():
            task.cancel()
    return [results[i] for i in range(len(calls))]


def result_items(
    calls: list[ToolCall], results: list[ToolResult], state: ToolStepState, trace_id: str
) -> tuple[list[Item], list[dict[str, Any]]]:
    """Items and tool messages for the results; a repeated identical result gets a note."""
    items: list[Item] = []
    messages: list[dict[str, Any]] = []
    for tc, result in zip(calls, results, strict=True):
        text = result.to_model_text()
        key = (tc.name, text)
        if key in state.seen_results:
            payload = json.loads(text)
            payload["note"] = REPEAT_NOTE
            text = json.dumps(payload, ensure_ascii=False)
        else:
            state.seen_results.add(key)
        if result.error is not None and result.error.type == "unknown_tool":
            state.unknown_tools += 1
        meta: dict[str, Any] = {"ok": result.ok, "duration_ms": round(result.duration_ms, 3)}
        if result.error is not None:
            meta["error_type"] = result.error.type
        items.append(
            Item(
                "tool",
                "tool_result",
                text,
                tool_call_id=tc.id,
                tool_name=tc.name,
                trace_id=trace_id,
                meta=meta,
            )
        )
        messages.append({"role": "tool", "tool_call_id": tc.id, "content": text})
    return items, messages
