"""The approval parts of a turn: find the session's pending approval, and gather the calls of
one model response the pipeline's approval step held for a person (seed 004 §4.3)."""

from __future__ import annotations

import time

from hermes.agent.approvals import (
    PendingApproval,
    PendingCall,
    impact,
    new_approval_id,
    pending_result,
)
from hermes.agent.recovery import drop_approval
from hermes.agent.tools_step import run_tool_calls
from hermes.agent.turn_state import Runtime, TurnState
from hermes.errors import InvalidInputError
from hermes.models.base import ToolCall
from hermes.tools.base import ToolResult
from hermes.tools.pipeline import CallContext

__all__ = ["check_requested", "current_approval", "run_with_proposals"]

CONFIRMATION_STATE = "awaiting_confirmation"
#: Lifetime of an approval when the state machine gives ``awaiting_confirmation`` no timeout.
DEFAULT_LIFETIME_S = 3600.0


def check_requested(turn: TurnState, approval_id: str) -> None:
    """Raise ``InvalidInputError`` unless ``approval_id`` is the session's pending approval
    and still valid (``Agent.approve``/``reject``); called before anything is stored."""
    pending = PendingApproval.from_data(turn.state.approval)
    if pending is None or pending.approval_id != approval_id:
        raise InvalidInputError(
            f"no pending approval {approval_id!r} in session {turn.session_id!r} (it was "
            "decided already, or never existed) / 没有待确认的操作 " + approval_id,
            approval_id=approval_id,
        )
    if turn.fsm.state != CONFIRMATION_STATE or pending.expired() or turn.fsm.expired():
        raise InvalidInputError(
            f"approval {approval_id!r} has expired; the call was not run — ask again "
            "/ 该确认已过期，操作没有执行",
            approval_id=approval_id,
        )


def current_approval(turn: TurnState) -> PendingApproval | None:
    """The session's pending approval if it is still valid; a stale one is dropped
    (``approval_expired``) and a session left in ``awaiting_confirmation`` falls back."""
    data = turn.state.approval
    if data is None:
        return None
    pending = PendingApproval.from_data(data)
    if pending is None or turn.fsm.state != CONFIRMATION_STATE or pending.expired():
        drop_approval(turn, "approval_expired")
        if turn.fsm.state == CONFIRMATION_STATE:
            turn.fsm.expire()
        return None
    return pending


async def run_with_proposals(
    rt: Runtime, turn: TurnState, calls: list[ToolCall], ctx: CallContext
) -> tuple[list[ToolResult], bool]:
    """Run the calls through the pipeline; those its approval step asks a person about
    (valid, allowed, passed the tool's precheck — ``ctx.approved`` false) get an
    ``approval_pending`` result and go together into one :class:`PendingApproval`
    (``turn.proposal``).

    Returns the results in the order of ``calls`` and whether the turn ran out of time.
    """
    results, asked, timed_out = await run_tool_calls(
        rt.pipeline(), calls, ctx, turn.emit, deadline=turn.deadline
    )
    if not asked:
        return results, timed_out
    approval_id = new_approval_id()
    proposed: list[PendingCall] = []
    for i in sorted(asked):
        signal = asked[i]
        tool = rt.tools.get(signal.tool)
        line = impact(tool, signal.arguments) if tool is not None else signal.tool
        proposed.append(PendingCall(calls[i].id, signal.tool, signal.arguments, line))
        results[i] = pending_result(approval_id, signal.tool)
    now = time.time()
    spec = rt.states.states.get(CONFIRMATION_STATE)
    lifetime = spec.timeout if spec is not None and spec.timeout else DEFAULT_LIFETIME_S
    turn.proposal = PendingApproval(
        approval_id, proposed, now, now + lifetime, turn.chinese, turn.trace_id
    )
    return results, timed_out
