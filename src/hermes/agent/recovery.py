"""Keeping a session consistent when a turn does not end normally (seed 001 §2.3).

A turn cut off mid-way — a crash, a kill, a cancelled task, an exception from a model — must
never leave a tool call without its result nor a session stuck in a working state. Calls
without results get an ``interrupted`` result and the state falls back to ``idle``, either at
once (cancellation, exceptions) or when the session's next turn finds the leftovers (a crash).

The next turn knows a leftover from a live turn by its claim (``hermes.session.locks``): an OS
file lock, a lease, or a store no other process can reach exclude every other turn, so a
working state found under such a claim was left by a turn whose process died — repaired at
once, however young. Only a ``Store`` object whose locks cannot see other processes keeps the
time rule: a working state younger than the turn timeout (+ margin) may be a live turn there.
"""

from __future__ import annotations

import json
import time

from hermes.agent.turn_state import Runtime, TurnState
from hermes.errors import SessionBusyError
from hermes.observe import get_logger
from hermes.session.items import Item

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
#: States in which a turn is running. ``awaiting_confirmation`` is not one: a session waiting
#: for a person's approval is at rest (its pending approval is in the stored state).
WORKING_STATES = ("parsing_intent", "executing_tool")
#: For stores without cross-process locks only: seconds past the turn timeout after which a
#: session left in a working state is taken to belong to a dead process (and repaired) rather
#: than to a turn running elsewhere.
STALE_MARGIN_S = 5.0


def interrupted_item(call_id: str, tool_name: str | None, trace_id: str) -> Item:
    return Item(
        "tool",
        "tool_result",
        INTERRUPTED,
        tool_call_id=call_id,
        tool_name=tool_name,
        trace_id=trace_id,
        meta={"ok": False, "error_type": "interrupted"},
    )


async def recover(rt: Runtime, turn: TurnState) -> None:
    """Before a turn: repair what an interrupted turn left, and apply state timeouts.

    A session found in a working state was left by a turn that died (the claim excludes every
    live one) — then every call of that turn without a result gets ``interrupted`` and the
    state goes back to ``idle`` — unless the claim cannot see other processes and the state
    moved less than a turn timeout ago (``SessionBusyError``: it may be running there).
    """
    fsm = turn.fsm
    if fsm.state in WORKING_STATES:
        age = time.time() - fsm.entered_at
        limit = rt.settings.turn_timeout + STALE_MARGIN_S
        if not turn.claim.cross_process and age < limit:
            raise SessionBusyError(
                f"session '{turn.session_id}' has a turn running in another process "
                f"(started {age:.0f} s ago); if that process died, the session is repaired "
                f"after {limit:.0f} s / 该会话正在另一个进程中处理，若该进程已退出，"
                f"{limit:.0f} 秒后自动修复",
                session_id=turn.session_id,
            )
        # All calls of the interrupted turn come after its user message: read from there.
        last_turn = await rt.store.context_slice(turn.session_id, 1)
        answered = {i.tool_call_id for i in last_turn.window if i.kind == "tool_result"}
        repairs = [
            interrupted_item(i.tool_call_id or "", i.tool_name, turn.trace_id)
            for i in last_turn.window
            if i.kind == "tool_call" and i.tool_call_id not in answered
        ]
        fsm.fire("fail")
        await turn.append(rt.store, repairs)
        log.warning("turn_recovered", repaired_calls=len(repairs), left_s=round(age, 3))
    elif fsm.expired():
        previous = fsm.state
        fsm.expire()
        turn.state.scratch.pop("pending", None)
        log.info("state_timeout", state=previous)
        drop_approval(turn, "approval_expired")


def drop_approval(turn: TurnState, event: str) -> None:
    """Forget the session's pending approval (saved with the turn's next write), logging
    ``event`` with its id; nothing of it ever runs."""
    data = turn.state.approval
    if data is None:
        return
    turn.state.approval = None
    log.info(event, approval_id=data.get("approval_id"), state=turn.fsm.state)


async def close_pending(rt: Runtime, turn: TurnState) -> None:
    """Give every call still without a result an ``interrupted`` result."""
    if not turn.pending_calls:
        return
    items = [interrupted_item(cid, name, turn.trace_id) for cid, name in turn.pending_calls]
    turn.pending_calls = []
    if turn.fsm.state == "executing_tool":
        turn.fsm.fire("tools_done")
    await turn.append(rt.store, items)


async def abandon(rt: Runtime, turn: TurnState) -> None:
    """A turn that will not reply (cancelled, or a foreign exception): close it cleanly."""
    await close_pending(rt, turn)
    turn.fsm.fire("fail")
    await turn.append(rt.store, [])
