"""The tool step of a turn: run one model response's tool calls and turn them into items.

Independent calls run concurrently (seed 004 §2.2); calls to tools marked
``parallel_safe=False`` run one after another, in the order the model gave them. Every call
ends as a ``ToolResult`` — a failure is data for the model, never an exception for the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.events import AgentEvent, ToolCallFinished, ToolCallStarted
from hermes.agent.result import ToolCallRecord
from hermes.models.base import ModelResponse, ToolCall
from hermes.session.items import Item
from hermes.tools.base import ToolResult
from hermes.tools.pipeline import ApprovalRequired, CallContext, ToolExecutor
from hermes.tools.registry import ToolRegistry

REPEAT_NOTE = (
    "This tool returned exactly the same result as an earlier call in this turn. "
    "Do not repeat the call; check your arguments or answer with what you have."
)


#: What the model reads after a step when no tool call of the turn has succeeded yet, so that
#: it cannot tell the person an action was done (seed 002 §2.3: an honest failure beats a
#: wrong success).
NOTHING_DONE_NOTE = (
    "No tool call in this turn has succeeded, so no action was carried out. Do not tell the "
    "user that anything was done (booked, sent, saved, changed …); say plainly what failed. "
    "本轮没有任何工具调用成功，没有执行任何操作：不要告诉用户操作已完成，请如实说明失败原因。"
)
#: Results that are not failures: the call waits for a person's approval.
_NOT_FAILED = frozenset({"approval_pending"})


def nothing_done(records: list[ToolCallRecord]) -> bool:
    """Whether the turn made tool calls and every one failed (approvals waiting aside)."""
    attempted = [r for r in records if r.error_type not in _NOT_FAILED]
    return bool(attempted) and not any(r.ok for r in attempted)


def note_nothing_done(tool_messages: list[dict[str, Any]]) -> None:
    """Put :data:`NOTHING_DONE_NOTE` in the last of a step's tool messages (in place): the
    model reads it with the results, where every chat template takes tool output."""
    if not tool_messages:
        return
    last = tool_messages[-1]
    try:
        payload = json.loads(last["content"])
    except (TypeError, ValueError):
        payload = None
    if isinstance(payload, dict):
        payload["turn_note"] = NOTHING_DONE_NOTE
        content = json.dumps(payload, ensure_ascii=False)
    else:
        content = f"{last['content']}\n{NOTHING_DONE_NOTE}"
    tool_messages[-1] = {**last, "content": content}


@dataclass(slots=True)
class ToolStepState:
    """What the tool steps of one turn remember: repeats and hallucinated tool names."""

    seen_results: set[tuple[str, str, str]] = field(default_factory=set)
    unknown_tools: int = 0


def assistant_items(
    response: ModelResponse,
    trace_id: str,
    call_meta: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Item]:
    """The items that record a model response with tool calls (text first, then the calls).

    ``call_meta``: more meta per call id (e.g. the arguments memory filled in)."""
    items: list[Item] = []
    if response.content:
        items.append(Item("assistant", "text", response.content, trace_id=trace_id))
    for tc in response.tool_calls:
        meta: dict[str, Any] | None = (
            {"arguments_error": tc.arguments_error} if tc.arguments_error else None
        )
        if call_meta and tc.id in call_meta:
            meta = {**(meta or {}), **call_meta[tc.id]}
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
    """The OpenAI chat-format assistant message for a response with tool calls.

    ``content`` is ``""`` without text, never null: servers such as llama-cpp-python refuse a
    null (see :mod:`hermes.models.conversation`)."""
    return {
        "role": "assistant",
        "content": response.content or "",
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


def _out_of_time(tc: ToolCall) -> ToolResult:
    return ToolResult.failure(
        "timeout", f"the turn ran out of time before '{tc.name}' finished; it was stopped"
    )


async def run_tool_calls(
    executor: ToolExecutor,
    calls: list[ToolCall],
    ctx: CallContext,
    emit: Callable[[AgentEvent], None],
    *,
    deadline: float,
) -> tuple[list[ToolResult], dict[int, ApprovalRequired], bool]:
    """Run the calls of one response until ``deadline`` (event-loop time).

    Returns the results in the order of the calls, the calls the pipeline asked a person's
    approval for (by index; their result is a placeholder the caller replaces) and whether
    time ran out. A call that finished keeps its real result even when a sibling is still
    running at the deadline (its side effects happened: the model must know); only
    unfinished calls get a ``timeout`` result, so every call has exactly one result.
    """
    results: dict[int, ToolResult] = {}
    asked: dict[int, ApprovalRequired] = {}

    async def one(i: int, tc: ToolCall) -> None:
        emit(ToolCallStarted(tc.id, tc.name, tc.arguments))
        try:
            result = await executor.run(tc, ctx.for_call(tc.id), signals="raise")
        except ApprovalRequired as signal:
            asked[i] = signal
            result = ToolResult.failure("approval_pending", signal.message)
        results[i] = result
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

    async def in_order(indexes: list[int]) -> None:
        for i in indexes:
            await one(i, calls[i])

    registry = executor.registry
    serial = [i for i, tc in enumerate(calls) if not _parallel_safe(registry, tc)]
    jobs = [one(i, tc) for i, tc in enumerate(calls) if i not in serial]
    if serial:
        jobs.append(in_order(serial))
    timed_out = False
    if len(jobs) == 1:  # the common case: no task to create
        try:
            async with asyncio.timeout_at(deadline):
                await jobs[0]
        except TimeoutError:
            timed_out = True
    else:
        tasks = [asyncio.ensure_future(job) for job in jobs]
        try:
            _, pending = await asyncio.wait(
                tasks, timeout=max(0.0, deadline - asyncio.get_running_loop().time())
            )
        finally:
            for task in tasks:
                task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task  # re-raises a bug in our own code; tool failures are data
        timed_out = bool(pending)
    outcome = [results.get(i) or _out_of_time(tc) for i, tc in enumerate(calls)]
    return outcome, asked, timed_out


def _parallel_safe(registry: ToolRegistry, tc: ToolCall) -> bool:
    tool = registry.get(tc.name)
    return tool is None or tool.parallel_safe


def result_items(
    calls: list[ToolCall],
    results: list[ToolResult],
    state: ToolStepState,
    trace_id: str,
    max_chars: int,
    *,
    notes: Mapping[str, str] | None = None,
) -> tuple[list[Item], list[dict[str, Any]]]:
    """Items and tool messages for the results.

    The same call (name and arguments) answered with the same result twice gets a note
    (seed 004 §4.2), and every result is bounded to ``max_chars`` whatever the tool returned.
    ``notes``: a ``memory_note`` per call id for the model (arguments filled from memory).
    """
    items: list[Item] = []
    messages: list[dict[str, Any]] = []
    for tc, result in zip(calls, results, strict=True):
        text = _bounded(result.to_model_text(), max_chars)
        if notes and tc.id in notes:
            payload = json.loads(text)
            payload["memory_note"] = notes[tc.id]
            text = json.dumps(payload, ensure_ascii=False)
        key = (tc.name, json.dumps(tc.arguments, sort_keys=True, default=str), text)
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


def _bounded(text: str, max_chars: int) -> str:
    """A tool message of at most about ``max_chars``, still one JSON object."""
    if len(text) <= max_chars:
        return text
    payload = json.loads(text)
    output = json.dumps(payload.pop("output", None), ensure_ascii=False, default=str)
    payload["output_truncated"] = output[: max(0, max_chars - 200)]
    payload["note"] = f"output truncated from {len(output):,} to {max_chars:,} characters"
    error = payload.get("error")
    if isinstance(error, dict) and len(str(error.get("message", ""))) > max_chars // 2:
        error["message"] = str(error["message"])[: max_chars // 2] + " …[truncated]"
    return json.dumps(payload, ensure_ascii=False)
