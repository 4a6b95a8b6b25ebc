"""One turn of one session, in the order of the seed's pipeline (seed 004 §2.2):

claim (held by the caller) → state → store the message → context (+ fold history) →
model ⇄ tools → reply.

Everything a turn writes goes through ``Store.append`` in a few transactions (user message;
each batch of tool calls; each batch of results; the reply with the final state). The turn's
total timeout covers the history fold, the model calls and the tool runs, never a store write,
so a write is never cut in half; calls that did not finish in time get a ``timeout`` result,
and a turn that is cancelled or crashes is closed by :mod:`hermes.agent.recovery`, so no tool
call is ever left without its result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from hermes.agent import texts
from hermes.agent.approvals import (
    Decision,
    PendingApproval,
    ask_text,
    cancelled_text,
    classify,
    correction_note,
)
from hermes.agent.approvals_step import (
    check_requested,
    current_approval,
    run_with_proposals,
)
from hermes.agent.client_turn import ClientTurn, client_call_dicts, open_client_turn
from hermes.agent.events import (
    AgentEvent,
    ModelCallFinished,
    ModelCallStarted,
    StateChanged,
    TextDelta,
    TurnStarted,
)
from hermes.agent.recovery import WORKING_STATES, abandon, close_pending, drop_approval, recover
from hermes.agent.result import RunResult, ToolCallRecord, added_usage
from hermes.agent.tools_step import (
    ToolStepState,
    assistant_items,
    assistant_message,
    note_nothing_done,
    nothing_done,
    result_items,
)
from hermes.agent.turn_state import Ending, Runtime, TurnSettings, TurnState
from hermes.errors import ClaimLostError, ModelError
from hermes.messages import Message
from hermes.models.base import ModelRequest, ModelResponse, ToolCall, ToolSpec, TurnDirective
from hermes.models.conversation import with_notes
from hermes.observe import get_logger
from hermes.session.context import build_messages, fit_messages
from hermes.session.fsm import InvalidTransitionError
from hermes.session.inbound import Inbound, read_inbound
from hermes.session.items import ContextSlice, Item, SessionState
from hermes.session.locks import SessionClaim
from hermes.session.store import Opening, TurnStart, begin_turn
from hermes.session.summary import summarize_backlog
from hermes.session.tokens import message_tokens
from hermes.tools.pipeline import CallContext

__all__ = ["Runtime", "TurnSettings", "run_turn"]

log = get_logger("agent")


class _TurnTimeout(Exception):
    """The turn's own deadline passed (not a TimeoutError some model or tool raised)."""


async def run_turn(
    rt: Runtime,
    message: Message,
    session_id: str,
    user_id: str | None,
    emit: Callable[[AgentEvent], None],
    *,
    claim: SessionClaim,
    decision: Decision | None = None,
    approval_id: str | None = None,
) -> RunResult:
    """Run one turn; the caller holds ``claim`` on the session and has validated the ids and
    text. Every write of the turn carries the claim's token (``ClaimLostError`` if a newer
    turn overtook it: the turn stops there, writing nothing more).

    With ``approval_id`` (``Agent.approve``/``reject``) the session's pending approval must be
    that one and still valid, else ``InvalidInputError`` before anything is stored; ``decision``
    then overrides what the message text says.
    """
    started = time.perf_counter()
    trace_id = message.trace_id
    client = ClientTurn.of(message)
    start, incoming, meta, results = await _start(
        rt, message, session_id, user_id, claim=claim, approval_id=approval_id, client=client
    )
    turn = TurnState(
        session_id,
        user_id,
        trace_id,
        texts.is_chinese(message.content),
        rt.states.attach(start.record.state.fsm_state, start.record.state.state_entered_at),
        start.record.state,
        emit,
        claim,
        directive=TurnDirective.from_meta(message.meta),
        client=client,
    )
    if approval_id is not None:
        check_requested(turn, approval_id)
    turn.fsm.listeners.append(_state_listener(turn))
    turn.deadline = asyncio.get_running_loop().time() + rt.settings.turn_timeout
    emit(TurnStarted(session_id, trace_id, message.msg_id))
    await recover(rt, turn)
    # Results of the client's tools decide no approval (their text is no person's answer).
    pending = None if results else current_approval(turn)
    if pending is not None:
        # Decided now, whatever follows: the approval is dropped with the user's message (a
        # crash before the calls run leaves them not run, never run twice).
        decision = decision or classify(message.content)
        drop_approval(turn, f"approval_{decision}")
        meta["approval"] = {"id": pending.approval_id, "decision": decision}
        incoming = read_inbound(message.content, trace_id=trace_id, meta=meta)
    incoming.flag(turn.state.scratch)
    turn.fsm.fire("receive_input", text=incoming.text)
    if start.slice is None or start.stored is None:
        slice_ = await rt.store.context_slice(session_id, _window_rounds(rt))
        stored = await turn.append(rt.store, results or [incoming.item])
    else:
        slice_, stored = start.slice, [start.stored]
    if pending is not None and decision == "reject":
        ending = Ending(cancelled_text(pending, turn.chinese))
        turn.fsm.fire("reply")
    elif incoming.answer_alone:  # any model, the offline brain too: Hermes keeps no secrets
        ending = Ending(incoming.reply("", turn.chinese))
        turn.fsm.fire("reply")
    else:
        ending = await _run_guarded(
            rt, turn, slice_, stored, incoming.text, pending=pending, decision=decision
        )
    ending.reply = incoming.reply(ending.reply, turn.chinese)
    reply_stored = await _store_reply(rt, turn, ending, incoming.text)
    log.info(
        "turn_finished",
        cost_ms=round((time.perf_counter() - started) * 1000, 3),
        outcome=ending.outcome,
        iterations=turn.iterations,
        tool_calls=len(turn.records),
        state=turn.fsm.state,
    )
    return _result(rt, turn, message, ending, reply_stored)


async def _start(
    rt: Runtime,
    message: Message,
    session_id: str,
    user_id: str | None,
    *,
    claim: SessionClaim,
    approval_id: str | None,
    client: ClientTurn,
) -> tuple[TurnStart, Inbound, dict[str, Any], list[Item]]:
    """The turn's start: what the user's message becomes (secrets out, sticky facts and
    personal data marked, seed 003 §2.1: from here on the turn only ever sees its text), and
    in one store call the session, its context and the message, stored before anything can
    fail (nothing the user said is ever lost) — unless the session must be repaired first or
    waits for an approval (then the turn goes step by step: ``TurnStart.slice`` is None).

    A chat-completions client's turn (``client``) first seeds a new session with its history;
    when its input is its tools' results, those are the items to store (the last of the
    returned four), step by step, instead of the message."""
    meta: dict[str, Any] = {"msg_id": message.msg_id, "channel": message.channel}
    results: list[Item] = []
    if client.history or client.results:
        results = await open_client_turn(
            rt.store, session_id, user_id, client, trace_id=message.trace_id,
            rounds=_window_rounds(rt), max_chars=rt.settings.max_output_chars,
        )  # fmt: skip
    if results:
        incoming = Inbound(message.content, results[0])  # the text: for language and recall
        record = await rt.store.ensure_session(session_id, user_id)
        return TurnStart(record), incoming, meta, results
    incoming = read_inbound(message.content, trace_id=message.trace_id, meta=meta)
    if approval_id is not None:
        record = await rt.store.ensure_session(session_id, user_id)
        return TurnStart(record), incoming, meta, results
    start = await begin_turn(
        rt.store, session_id, user_id, incoming.item,
        rounds=_window_rounds(rt), fence=claim.token, opening=_opening(rt, incoming),
    )  # fmt: skip
    return start, incoming, meta, results


def _window_rounds(rt: Runtime) -> int:
    """The earlier rounds a turn's context holds besides its own."""
    return max(1, rt.settings.context_rounds - 1)


def _opening(rt: Runtime, incoming: Inbound) -> Opening:
    """The state a turn stores with the user's message when it goes straight on: the state
    machine's ``receive_input`` from the stored state, the message's personal-data flag in the
    scratch — what the turn itself arrives at (``run_turn``), written in the same transaction
    as the message, so a live turn's working state is in the store from its first write (it
    tells other processes a turn runs, and the next turn after a crash what to repair).

    None — the turn goes step by step — when a turn died mid-way (its calls are repaired
    first, before the message), an approval waits (the message records the decision), or the
    state has timed out (the turn applies the timeout first)."""

    def opening(state: SessionState) -> SessionState | None:
        if state.fsm_state in WORKING_STATES or state.approval is not None:
            return None
        fsm = rt.states.attach(state.fsm_state, state.state_entered_at)
        try:
            if fsm.expired() or not fsm.fire("receive_input", text=incoming.text):
                return None
        except InvalidTransitionError:  # a custom state machine: the turn says why
            return None
        scratch = dict(state.scratch)
        incoming.flag(scratch)
        return SessionState(fsm.state, fsm.entered_at, scratch, state.token_estimate, None)

    return opening


def _result(
    rt: Runtime, turn: TurnState, message: Message, ending: Ending, reply_stored: Item | None
) -> RunResult:
    """What ``run_turn`` returns once the reply is stored."""
    asked = turn.proposal if turn.state.approval is not None else None
    return RunResult(
        reply=ending.reply,
        session_id=turn.session_id,
        state=turn.fsm.state,
        trace_id=turn.trace_id,
        msg_id=message.msg_id,
        reply_msg_id="" if reply_stored is None else f"{turn.trace_id}:{reply_stored.seq}",
        tool_calls=turn.records,
        outcome=ending.outcome,
        error=ending.error,
        iterations=turn.iterations,
        model=rt.model.name,
        approval_id=None if asked is None else asked.approval_id,
        pending_calls=[]
        if asked is None
        else [{"tool": c.tool, "arguments": c.arguments} for c in asked.calls],
        tools_failed=nothing_done(turn.records),
        usage=turn.usage,
        client_calls=client_call_dicts(turn.client_calls),
    )


async def _store_reply(rt: Runtime, turn: TurnState, ending: Ending, text: str) -> Item | None:
    """Store the reply with the final state; then memory learns from the user's ``text``.

    A turn that ended with calls to the client's tools stored what the model said with them:
    only the state is stored (the client's results continue the round)."""
    turn.memory.finish(turn.state.scratch)  # working memory is saved with the reply's state
    if turn.client.results:
        ending.learn = False  # a client tool's output is not what the person said
    if turn.client_calls:
        await turn.append(rt.store, [])
        turn.memory.learn_later(turn, text if ending.learn else "")
        return None
    reply_item = Item(
        "assistant",
        "text",
        ending.reply,
        trace_id=turn.trace_id,
        meta=_reply_meta(ending, turn),
    )
    (stored,) = await turn.append(rt.store, [reply_item])
    # In the background (the reply does not wait); from nothing the model said it did not
    # take in (the rule brain's "didn't understand" must not keep the message silently).
    turn.memory.learn_later(turn, text if ending.learn else "")
    return stored


def _reply_meta(ending: Ending, turn: TurnState) -> dict[str, Any] | None:
    meta: dict[str, Any] = {}
    if ending.outcome != "ok":
        meta["outcome"] = ending.outcome
    if turn.state.approval is not None and turn.proposal is not None:
        meta["approval_id"] = turn.proposal.approval_id
    return meta or None


def _state_listener(turn: TurnState) -> Callable[[str, str, str], None]:
    def on_change(source: str, dest: str, trigger: str) -> None:
        turn.emit(StateChanged(turn.session_id, source, dest, trigger))
        log.debug("state_changed", source=source, dest=dest, trigger=trigger)

    return on_change


async def _run_guarded(
    rt: Runtime,
    turn: TurnState,
    slice_: ContextSlice,
    stored: list[Item],
    text: str,
    *,
    pending: PendingApproval | None = None,
    decision: Decision | None = None,
) -> Ending:
    """Context, then model/tool iterations; failures become honest endings.

    ``pending`` with ``decision`` ``approve``: its calls run first; ``correct``: the model is
    told, just before the user's message, that they did not run (seed 004 §4.3).
    """
    try:
        correction = pending if decision == "correct" else None
        messages, tokens = await _context(rt, turn, slice_, stored, correction, text=text)
        approved = pending if decision == "approve" else None
        ending = await _iterate(rt, turn, messages, tokens, text, approved=approved)
    except _TurnTimeout:
        await close_pending(rt, turn)
        seconds = rt.settings.turn_timeout
        ending = Ending(
            texts.say("timeout", turn.chinese, seconds=seconds),
            "timeout",
            {"type": "timeout", "message": f"turn exceeded {seconds:g} s"},
        )
        log.warning("turn_timeout", timeout_s=seconds)
    except ModelError as exc:
        await close_pending(rt, turn)
        ending = Ending(
            texts.model_failure(exc, turn.chinese, turn.trace_id[:12]),
            "error",
            exc.to_dict(),
        )
        log.error("model_failed", error=exc.message, kind=exc.kind, retryable=exc.retryable)
    except ClaimLostError:
        # A newer turn owns the session now: nothing of ours may be written over its work.
        log.warning("turn_claim_lost")
        raise
    except asyncio.CancelledError:
        # The caller gave up (a closed stream, wait_for, Ctrl-C): close the turn, then obey.
        await asyncio.shield(abandon(rt, turn))
        log.warning("turn_cancelled")
        raise
    except Exception as exc:
        # Not ours to turn into a reply (a bug in a model or a test double): leave the session
        # consistent, calls closed and state idle, and let the caller see the error.
        await abandon(rt, turn)
        log.error("turn_failed", error_type=type(exc).__name__)
        raise
    if ending.outcome != "ok":
        turn.fsm.fire("fail")
    elif turn.proposal is not None:
        turn.state.approval = turn.proposal.to_data()
        turn.fsm.fire("need_confirmation")
        log.info("approval_requested", approval_id=turn.proposal.approval_id)
    elif ending.awaiting_slot:
        turn.fsm.fire("missing_slot")
    else:
        turn.fsm.fire("reply")
    return ending


async def _context(
    rt: Runtime,
    turn: TurnState,
    slice_: ContextSlice,
    stored: list[Item],
    correction: PendingApproval | None,
    *,
    text: str,
) -> tuple[list[dict[str, Any]], int]:
    """The messages of the first model call and their tokens: history (folded when due), the
    memory note and the correction note ending the one system message."""
    window = await _close_gap(rt, turn, slice_)
    budget = rt.message_budget
    remembered = await _memory_note(rt, turn, text)
    if remembered is not None:  # its room is taken from the history, not added on top
        budget = max(256, budget - message_tokens(remembered))
    built = build_messages(
        ContextSlice(window.sticky, window.summary, [*window.window, *stored]),
        system_prompt=rt.settings.instructions,
        budget_tokens=budget,
    )
    notes = [remembered] if remembered is not None else []
    if correction is not None:  # the person corrected a proposal (seed 004 §4.3)
        notes.append({"role": "system", "content": correction_note(correction)})
    if turn.directive is not None and turn.directive.prompt:  # an event route's handler
        notes.append({"role": "system", "content": turn.directive.prompt})
    # One system message at the start, the notes last in it: strict chat templates refuse a
    # system message anywhere else (hermes.models.conversation).
    built.messages = with_notes(built.messages, [note["content"] for note in notes])
    built.tokens += sum(message_tokens(note) for note in notes)
    turn.state.token_estimate = built.tokens
    if built.repaired or built.dropped_rounds or built.truncated:
        log.info(
            "context_adjusted",
            repaired=built.repaired,
            dropped_rounds=built.dropped_rounds,
            truncated=built.truncated,
        )
    return built.messages, built.tokens


async def _iterate(
    rt: Runtime,
    turn: TurnState,
    messages: list[dict[str, Any]],
    tokens: int,
    text: str,
    *,
    approved: PendingApproval | None = None,
) -> Ending:
    specs: list[ToolSpec] = rt.offer(turn.user_id, text)
    if turn.client.tools:  # the client's own tools, beside ours (hermes.agent.client_turn)
        specs = [*specs, *turn.client.tools]
    steps = ToolStepState()
    ctx = CallContext(
        session_id=turn.session_id,
        user_id=turn.user_id,
        trace_id=turn.trace_id,
        workspace=str(rt.settings.workspace),
        extras=rt.extras | turn.memory.tool_extras(),
    )
    if approved is not None:
        # The person said yes: run the calls now, as new calls with fresh ids (each paired
        # with its result in the log), then let the model see the results.
        response = _approved_response(approved)
        approved_ctx = ctx.for_call("", approved=True)
        added = await _tool_step(
            rt, turn, response, messages=messages, steps=steps, ctx=approved_ctx
        )
        tokens += sum(message_tokens(m) for m in added)
        tokens, _ = fit_messages(messages, tokens, rt.message_budget)
    for iteration in range(1, rt.settings.max_iterations + 1):
        turn.iterations = iteration
        response = await _call_model(rt, turn, messages, specs, iteration)
        if not response.tool_calls:
            reply = response.content or texts.say("empty_reply", turn.chinese)
            awaiting = bool(response.meta.get("awaiting_slot"))
            return Ending(
                reply, awaiting_slot=awaiting, learn=response.meta.get("learn") is not False
            )
        added = await _tool_step(rt, turn, response, messages=messages, steps=steps, ctx=ctx)
        if turn.client_calls:  # the client runs them; its results start the next turn
            return Ending(response.content or "")
        if turn.proposal is not None:
            return Ending(ask_text(turn.proposal, rt.tools, turn.chinese))
        # This turn's own calls and results count against the budget too (seed 001 §2.2).
        tokens += sum(message_tokens(m) for m in added)
        tokens, shortened = fit_messages(messages, tokens, rt.message_budget)
        if shortened:
            log.info("context_adjusted", truncated=shortened)
        if steps.unknown_tools >= rt.settings.max_unknown_tools:
            log.warning("unknown_tools_limit", count=steps.unknown_tools)
            return Ending(
                texts.say("unknown_tools", turn.chinese),
                "refused",
                {
                    "type": "unknown_tool",
                    "message": "the model kept asking for tools that do not exist",
                },
            )
    n = rt.settings.max_iterations
    return Ending(
        texts.say("max_iterations", turn.chinese, n=n),
        "max_iterations",
        {"type": "max_iterations", "message": f"no final answer within {n} model calls"},
    )


async def _call_model(
    rt: Runtime,
    turn: TurnState,
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
        directive=turn.directive,
    )
    emit(ModelCallStarted(iteration, rt.model.name))
    started = time.perf_counter()
    timer = asyncio.timeout_at(turn.deadline)
    try:
        async with timer:
            response = await rt.model.complete(request)
    except TimeoutError as exc:
        if timer.expired():
            raise _TurnTimeout from exc
        # A TimeoutError the model raised itself is a model failure, not the turn's timeout.
        raise ModelError(
            f"model '{rt.model.name}' timed out: {exc}", retryable=True, kind="timeout"
        ) from exc
    cost = (time.perf_counter() - started) * 1000
    turn.usage = added_usage(turn.usage, response.usage)
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
    turn: TurnState,
    response: ModelResponse,
    *,
    messages: list[dict[str, Any]],
    steps: ToolStepState,
    ctx: CallContext,
) -> list[dict[str, Any]]:
    """Store the calls, run them, store their results; returns the messages it added.

    Calls that need a person's approval are not run (unless ``ctx.approved``): they get an
    ``approval_pending`` result and ``turn.proposal`` holds them.
    """
    tm = turn.memory
    if not ctx.approved:  # approved calls run exactly as the person saw them
        response = tm.fill(rt.tools, response)
    turn.client_calls = turn.client.client_calls(response)
    calls = [tc for tc in response.tool_calls if tc.name not in turn.client.names]
    if calls:
        turn.fsm.fire("call_tools")
    await turn.append(rt.store, assistant_items(response, turn.trace_id, tm.call_meta()))
    turn.pending_calls = [(tc.id, tc.name) for tc in calls]
    call_message = assistant_message(response)
    messages.append(call_message)
    if not calls:  # only the client's tools: nothing runs here
        return [call_message]
    results, timed_out = await run_with_proposals(rt, turn, calls, ctx)
    tm.observe(calls, results)
    items, tool_messages = result_items(
        calls,
        results,
        steps,
        turn.trace_id,
        rt.settings.max_output_chars,
        notes=tm.result_notes(),
    )
    turn.fsm.fire("tools_done")
    await turn.append(rt.store, items)
    turn.pending_calls = []
    for tc, result in zip(calls, results, strict=True):
        error_type = result.error.type if result.error else None
        turn.records.append(
            ToolCallRecord(
                tc.name,
                tc.arguments,
                result.ok,
                tc.id,
                error_type,
                result.duration_ms,
                filled_from_memory=tm.filled_for(tc.id),
            )
        )
        log.info(
            "tool_call",
            tool=tc.name,
            ok=result.ok,
            cost_ms=round(result.duration_ms, 3),
            error_type=error_type,
        )
    if nothing_done(turn.records):
        note_nothing_done(tool_messages)  # the model must not claim success (seed 002 §2.3)
    messages.extend(tool_messages)
    if timed_out:
        raise _TurnTimeout
    return [call_message, *tool_messages]


async def _memory_note(rt: Runtime, turn: TurnState, text: str) -> dict[str, Any] | None:
    """Working memory and recall for this turn (``turn.memory``); the system message to put
    before the user's message, or None."""
    turn.memory, note = await rt.memory.begin(turn, text, rt.tools, rt.message_budget)
    return None if note is None else {"role": "system", "content": note}


async def _close_gap(rt: Runtime, turn: TurnState, slice_: ContextSlice) -> ContextSlice:
    """Make sure nothing between the summary and the window is invisible to the model.

    Rounds that left the window are folded into the rolling summary once there are at least
    ``summary_min_backlog`` items of them (seed 001 §2.2); until then the few unfolded items are
    shown as they are. Either way the work is bounded, whatever the session's length.
    """
    if slice_.backlog <= 0:
        return slice_
    if slice_.backlog >= rt.settings.summary_min_backlog:
        started = time.perf_counter()
        try:
            async with asyncio.timeout_at(turn.deadline):
                summary = await summarize_backlog(
                    rt.store,
                    turn.session_id,
                    slice_,
                    rt.summarizer,
                    min_backlog=rt.settings.summary_min_backlog,
                    trace_id=turn.trace_id,
                )
        except TimeoutError:
            # The summarizer used the whole turn's time: go on with what we have (the model
            # call that follows times out and says so); the next turn folds again.
            log.warning("history_fold_timeout", backlog=slice_.backlog)
            return slice_
        log.info("history_folded", cost_ms=round((time.perf_counter() - started) * 1000, 3))
        if summary is not None:  # stored with the turn's next write, one transaction less
            turn.unsaved.append(summary)
        return ContextSlice(slice_.sticky, summary or slice_.summary, slice_.window)
    unfolded = await rt.store.read_items(
        turn.session_id,
        after_seq=slice_.backlog_from - 1,
        before_seq=slice_.window_start,
        limit=rt.settings.summary_min_backlog,
    )
    window = [i for i in unfolded if i.kind != "summary"] + slice_.window
    return ContextSlice(slice_.sticky, slice_.summary, window)


def _approved_response(approved: PendingApproval) -> ModelResponse:
    """The approved calls as a response to record and run (fresh ids: the proposed calls
    already have their ``approval_pending`` results)."""
    return ModelResponse(
        tool_calls=[
            ToolCall(f"call_{approved.approval_id}_{n}", c.tool, dict(c.arguments))
            for n, c in enumerate(approved.calls, 1)
        ],
        finish_reason="tool_calls",
        model_name="approval",
    )
