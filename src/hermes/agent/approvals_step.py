"""The approval parts of a turn: find the session's pending approval, and split one model
response's calls into those that run now and those a person must approve first (seed 004 §4.3)."""

from __future__ import annotations

import time

from hermes.agent.approvals import (
    PendingApproval,
    PendingCall,
    impact,
    needs_approval,
    new_approval_id,
    pending_result,
    precheck,
)
from hermes.agent.recovery import drop_approval
from hermes.agent.tools_step import run_tool_calls
from hermes.agent.turn_state import Runtime, TurnState
from hermes.errors import InvalidInputError
from hermes.models.base import ToolCall
from hermes.tools.base import ToolContext, ToolResult

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
    rt: Runtime,
    turn: TurnState,
    calls: list[ToolCall],
    ctx: ToolContext,
    *,
    approved: bool,
) -> tuple[list[ToolResult], bool]:
    """Run the calls that need no approval; the others get an ``approval_pending`` result and
    go together into one :class:`PendingApproval` (``turn.proposal``).

    Returns the results in the order of ``calls`` and whether the turn ran out of time.
    """
    held: dict[int, ToolResult] = {}
    if not approved:
        held = _hold(rt, turn, calls)
    to_run = [tc for i, tc in enumerate(calls) if i not in held]
    ran: list[ToolResult] = []
    timed_out = False
    if to_run:
        ran, timed_out = await run_tool_calls(
            rt.tools,
            to_run,
            ctx,
            turn.emit,
            max_output_chars=rt.settings.max_output_chars,
            deadline=turn.deadline,
        )
    if not held:
        return ran, timed_out
    it = iter(ran)
    return [held[i] if i in held else next(it) for i in range(len(calls))], timed_out


def _hold(rt: Runtime, turn: TurnState, calls: list[ToolCall]) -> dict[int, ToolResult]:
    """Results for the calls that must not run now (proposed or refused by a precheck)."""
    held: dict[int, ToolResult] = {}
    proposed: list[PendingCall] = []
    approval_id = ""
    authorizer = rt.authorizer if rt.authorizer is not None and rt.authorizer.enabled else None
    for i, tc in enumerate(calls):
        tool = rt.tools.get(tc.name)
        if tool is None or not needs_approval(tool, tc):
            continue
        if authorizer is not None and not authorizer.allowed(turn.user_id, tool):
            continue  # the executor refuses it (permission_denied): nobody is asked
        refused = precheck(tool, tc)
        if refused is not None:
            held[i] = refused
            continue
        approval_id = approval_id or new_approval_id()
        proposed.append(
            PendingCall(tc.id, tool.name, dict(tc.arguments), impact(tool, tc.arguments))
        )
        held[i] = pending_result(approval_id, tool.name)
    if proposed:
        now = time.time()
        spec = rt.states.states.get(CONFIRMATION_STATE)
        lifetime = spec.timeout if spec is not None and spec.timeout else DEFAULT_LIFETIME_S
        turn.proposal = PendingApproval(
            approval_id, proposed, now, now + lifetime, turn.chinese, turn.trace_id
        )
    return held
