"""One turn of one session, in the order of the seed's pipeline (seed 004 §2.2):

lock (held by the caller) → state → context (+ fold history) → model ⇄ tools → reply.

Everything a turn writes goes through ``Store.append`` in a few transactions (user message;
each batch of tool calls; each batch of results; the reply with the final state), so a process
that dies mid-turn leaves a log that the next turn can repair: calls without results get a
synthetic "interrupted" result, and the state falls back to ``idle``.

The turn's total timeout covers the model calls and the tool runs, never a store write: a
write is not cut in half, and a call whose results did not arrive in time gets an
"interrupted" result, so no tool call is ever left without its result.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent import texts
from hermes.agent.events import (
    AgentEvent,
    ModelCallFinished,
    ModelCallStarted,
    StateChanged,
    TextDelta,
    TurnStarted,
)
from hermes.agent.result import RunResult, ToolCallRecord, TurnOutcome
from hermes.agent.tools_step import (
    ToolStepState,
    assistant_items,
    assistant_message,
    result_items,
    run_tool_calls,
)
from hermes.errors import ModelError
from hermes.messages import Message
from hermes.models.base import Model, ModelRequest, ModelResponse, ToolSpec
from hermes.observe import get_logger
from hermes.session.context import build_messages
from hermes.session.fsm import ConversationState, StateMachineSpec
from hermes.session.items import ContextSlice, Item, SessionState
from hermes.session.store import Store
from hermes.session.summary import Summarizer, fold_backlog
from hermes.tools.base import ToolContext
from hermes.tools.registry import ToolRegistry

log = get_logger("agent")

INTERRUPTED = json.dumps(
    {
        "ok": False,
        "error": {
            "type": "interrupted",
            "message": "the turn that made this call stopped before its result was recorded",
        },
    }
)


@dataclass(slots=True)
class TurnSettings:
    instructions: str | None = None
    max_iterations: int = 8
    turn_timeout: float = 120.0
    context_rounds: int = 12
    context_budget_tokens: int = 6000
    max_unknown_tools: int = 3
    summary_min_backlog: int = 8
    max_output_chars: int = 20_000
    workspace: Path = field(default_factory=Path.cwd)


@dataclass(slots=True)
class Runtime:
    """The parts of an Agent a turn uses."""

    model: Model
    tools: ToolRegistry
    store: Store
    states: StateMachineSpec
    summarizer: Summarizer
    settings: TurnSettings


@dataclass(slots=True)
class _Turn:
    session_id: str
    user_id: str | None
    trace_id: str
    chinese: bool
    fsm: ConversationState
    state: SessionState
    emit: Callable[[AgentEvent], None]
    records: list[ToolCallRecord] = field(default_factory=list)
    iterations: int = 0
    deadline: float = 0.0
    #: ids of calls whose tool_call items are stored but whose results are not (yet).
    pending_calls: list[str] = field(default_factory=list)

    def snapshot(self) -> SessionState:
        """A copy of the state to store (the scratch dict keeps changing during the turn)."""
        return SessionState(
            self.fsm.state, self.fsm.entered_at, dict(self.state.scratch), self.state.token_estimate
        )

    async def append(self, store: Store, items: list[Item]) -> list[Item]:
        """Append items together with the current state, in one transaction."""
        return await store.append(self.session_id, items, state=self.snapshot())


@dataclass(slots=True)
class _Ending:
    reply: str
    outcome: TurnOutcome = "ok"
    error: dict[str, str] | None = None
    awaiting_slot: bool = False


async def run_turn(
    rt: Runtime,
    message: Message,
    session_id: str,
    user_id: str | None,
    emit: Callable[[AgentEvent], None],
) -> RunResult:
    """Run one turn; the caller holds the session lock and has validated the ids and text."""
    started = time.perf_counter()
    trace_id = message.trace_id
    record = await rt.store.ensure_session(session_id, user_id)
    turn = _Turn(
        session_id,
        user_id,
        trace_id,
        texts.is_chinese(message.content),
        rt.states.attach(record.state.fsm_state, record.state.state_entered_at),
        record.state,
        emit,
    )
    turn.fsm.listeners.append(_state_listener(turn))
    # The total timeout covers the history fold, model calls and tools (not store writes).
    turn.deadline = asyncio.get_running_loop().time() + rt.settings.turn_timeout
    emit(TurnStarted(session_id, trace_id, message.msg_id))
    await _recover(rt, turn, record.last_seq)
    slice_ = await rt.store.context_slice(session_id, max(1, rt.settings.context_rounds - 1))
    slice_ = await _close_gap(rt, turn, slice_)
    turn.fsm.fire("receive_input", text=message.content)
    user_item = Item(
        "user",
        "text",
        message.content,
        trace_id=trace_id,
        meta={"msg_id": message.msg_id, "channel": message.channel},
    )
    stored = await turn.append(rt.store, [user_item])
    window = ContextSlice(slice_.sticky, slice_.summary, [*slice_.window, *stored])
    built = build_messages(
        window,
        system_prompt=rt.settings.instructions,
        budget_tokens=rt.settings.context_budget_tokens,
    )
    turn.state.token_estimate = built.tokens
    ending = await _run_guarded(rt, turn, built.messages)
    reply_item = Item(
        "assistant",
        "text",
        ending.reply,
        trace_id=trace_id,
        meta={"outcome": ending.outcome} if ending.outcome != "ok" else None,
    )
    (reply_stored,) = await turn.append(rt.store, [reply_item])
    result = RunResult(
        reply=ending.reply,
        session_id=session_id,
        state=turn.fsm.state,
        trace_id=trace_id,
        msg_id=message.msg_id,
        reply_msg_id=f"{trace_id}:{reply_stored.seq}",
        tool_calls=turn.records,
        outcome=ending.outcome,
        error=ending.error,
        iterations=turn.iterations,
        model=rt.model.name,
    )
    log.info(
        "turn_finished",
        cost_ms=round((time.perf_counter() - started) * 1000, 3),
        outcome=ending.outcome,
        iterations=turn.iterations,
        tool_calls=len(turn.records),
        state=turn.fsm.state,
    )
    return result


def _state_listener(turn: _Turn) -> Callable[[str, str, str], None]:
    def on_change(source: str, dest: str, trigger: str) -> None:
        turn.emit(StateChanged(turn.session_id, source, dest, trigger))
        log.debug("state_changed", source=source, dest=dest, trigger=trigger)

    return on_change


async def _recover(rt: Runtime, turn: _Turn, last_seq: int) -> None:
    """Repair what an earlier, interrupted turn left, and apply state timeouts."""
    fsm = turn.fsm
    if fsm.state in ("parsing_intent", "executing_tool"):
        # A turn of this session was cut off (crash, kill, restart): close its open calls.
        recent = await rt.store.read_items(turn.session_id, after_seq=max(0, last_seq - 64))
        answered = {i.tool_call_id for i in recent if i.kind == "tool_result"}
        repairs = [
            Item(
                "tool",
                "tool_result",
                INTERRUPTED,
                tool_call_id=i.tool_call_id,
                tool_name=i.tool_name,
                trace_id=turn.trace_id,
                meta={"ok": False, "error_type": "interrupted"},
            )
            for i in recent
            if i.kind == "tool_call" and i.tool_call_id not in answered
        ]
        fsm.fire("fail")
        await turn.append(rt.store, repairs)
        log.warning("turn_recovered", repaired_calls=len(repairs))
    elif fsm.expired():
        previous = fsm.state
        fsm.expire()
        turn.state.scratch.pop("pending", None)
        log.info("state_timeout", state=previous)


async def _run_guarded(rt: Runtime, turn: _Turn, messages: list[dict[str, Any]]) -> _Ending:
    """The model/tool iterations under the turn's total timeout; failures become endings."""
    try:
        ending = await _iterate(rt, turn, messages)
    except TimeoutError:
        await _close_pending(rt, turn)
        seconds = rt.settings.turn_timeout
        ending = _Ending(
            texts.say("timeout", turn.chinese, seconds=seconds),
            "timeout",
            {"type": "timeout", "message": f"turn exceeded {seconds:g} s"},
        )
        log.warning("turn_timeout", timeout_s=seconds)
    except ModelError as exc:
        await _close_pending(rt, turn)
        ending = _Ending(
            texts.say("model_error", turn.chinese, detail=exc.message),
            "error",
            {"type": exc.code, "message": exc.message},
        )
        log.error("model_failed", error=exc.message, retryable=exc.retryable)
    except Exception as exc:
        # Not ours to turn into a reply (a bug in a model or a test double): leave the session
        # consistent — calls closed, state idle — and let the caller see the error.
        await _close_pending(rt, turn)
        turn.fsm.fire("fail")
        await turn.append(rt.store, [])
        log.error("turn_failed", error_type=type(exc).__name__)
        raise
    if ending.outcome != "ok":
        turn.fsm.fire("fail")
    elif ending.awaiting_slot:
        turn.fsm.fire("missing_slot")
    else:
        turn.fsm.fire("reply")
    return ending


async def _close_pending(rt: Runtime, turn: _Turn) -> None:
    """Give every call still without a result an "interrupted" result (no dangling pairs)."""
    if not turn.pending_calls:
        return
    items = [
        Item(
            "tool",
            "tool_result",
            INTERRUPTED,
            tool_call_id=call_id,
            trace_id=turn.trace_id,
            meta={"ok": False, "error_type": "interrupted"},
        )
        for call_id in turn.pending_calls
    ]
    turn.pending_calls.clear()
    if turn.fsm.state == "executing_tool":
        turn.fsm.fire("tools_done")
    await turn.append(rt.store, items)


async def _iterate(rt: Runtime, turn: _Turn, messages: list[dict[str, Any]]) -> _Ending:
    specs: list[ToolSpec] = rt.tools.specs()
    steps = ToolStepState()
    ctx = ToolContext(
        session_id=turn.session_id,
        user_id=turn.user_id,
        trace_id=turn.trace_id,
        workspace=rt.settings.workspace,
    )
    for iteration in range(1, rt.settings.max_iterations + 1):
        turn.iterations = iteration
        response = await _call_model(rt, turn, messages, specs, iteration)
        if not response.tool_calls:
            reply = response.content or texts.say("empty_reply", turn.chinese)
            return _Ending(reply, awaiting_slot=bool(response.meta.get("awaiting_slot")))
        await _tool_step(rt, turn, response, messages=messages, steps=steps, ctx=ctx)
        if steps.unknown_tools >= rt.settings.max_unknown_tools:
            log.warning("unknown_tools_limit", count=steps.unknown_tools)
            return _Ending(
                texts.say("unknown_tools", turn.chinese),
                "refused",
                {
                    "type": "unknown_tool",
                    "message": "the model kept asking for tools that do not exist",
                },
            )
    n = rt.settings.max_iterations
    return _Ending(
        texts.say("max_iterations", turn.chinese, n=n),
        "max_iterations",
        {"type": "max_iterations", "message": f"no final answer within {n} model calls"},
    )


async def _call_model(
    rt: Runtime,
    turn: _Turn,
    messages: list[dict[str, Any]],
    specs: list[ToolSpec],
    iteration: int,
) -> ModelResponse:
    emit = turn.emit
    request = ModelRequest(
        messages=list(messages),
        tools=specs,
        session_id=turn.session_id,
        user_id=turn.user_id,
        trace_id=turn.trace_id,
        scratch=turn.state.scratch,
        on_text=lambda delta: emit(TextDelta(delta)),
    )
    emit(ModelCallStarted(iteration, rt.model.name))
    started = time.perf_counter()
    async with asyncio.timeout_at(turn.deadline):
        response = await rt.model.complete(request)
    cost = (time.perf_counter() - started) * 1000
    emit(ModelCallFinished(iteration, rt.model.name, len(response.tool_calls), cost))
    log.info(
        "model_call",
        cost_ms=round(cost, 3),
        iteration=iteration,
        model=rt.model.name,
        tool_calls=len(response.tool_calls),
    )
    return response


async def _tool_step(
    rt: Runtime,
    turn: _Turn,
    response: ModelResponse,
    *,
    messages: list[dict[str, Any]],
    steps: ToolStepState,
    ctx: ToolContext,
) -> None:
    calls = response.tool_calls
    turn.fsm.fire("call_tools")
    await turn.append(rt.store, assistant_items(response, turn.trace_id))
    turn.pending_calls = [tc.id for tc in calls]
    messages.append(assistant_message(response))
    async with asyncio.timeout_at(turn.deadline):
        results = await run_tool_calls(
            rt.tools, calls, ctx, turn.emit, rt.settings.max_output_chars
        )
    items, tool_messages = result_items(calls, results, steps, turn.trace_id)
    turn.fsm.fire("tools_done")
    await turn.append(rt.store, items)
    turn.pending_calls = []
    messages.extend(tool_messages)
    for tc, result in zip(calls, results, strict=True):
        turn.records.append(
            ToolCallRecord(
                tc.name,
                tc.arguments,
                result.ok,
                tc.id,
                result.error.type if result.error else None,
                result.duration_ms,
            )
        )
        log.info(
            "tool_call",
            tool=tc.name,
            ok=result.ok,
            cost_ms=round(result.duration_ms, 3),
            error_type=result.error.type if result.error else None,
        )


async def _close_gap(rt: Runtime, turn: _Turn, slice_: ContextSlice) -> ContextSlice:
    """Make sure nothing between the summary and the window is invisible to the model.

    Rounds that left the window are folded into the rolling summary once there are at least
    ``summary_min_backlog`` items of them (seed 001 §2.2); until then the few unfolded items are
    shown as they are. Either way the work is bounded, whatever the session's length.
    """
    if slice_.backlog <= 0:
        return slice_
    session_id = turn.session_id
    if slice_.backlog >= rt.settings.summary_min_backlog:
        started = time.perf_counter()
        try:
            async with asyncio.timeout_at(turn.deadline):
                summary = await fold_backlog(
                    rt.store,
                    session_id,
                    slice_,
                    rt.summarizer,
                    min_backlog=rt.settings.summary_min_backlog,
                )
        except TimeoutError:
            # The summarizer used the whole turn's time: answer with what we have (the model
            # call that follows times out and says so); the next turn folds again.
            log.warning("history_fold_timeout", backlog=slice_.backlog)
            return slice_
        log.info("history_folded", cost_ms=round((time.perf_counter() - started) * 1000, 3))
        return ContextSlice(slice_.sticky, summary or slice_.summary, slice_.window)
    unfolded = await rt.store.read_items(
        session_id,
        after_seq=slice_.backlog_from - 1,
        before_seq=slice_.window_start,
        limit=rt.settings.summary_min_backlog,
    )
    window = [i for i in unfolded if i.kind != "summary"] + slice_.window
    return ContextSlice(slice_.sticky, slice_.summary, window)
