"""Routes: approvals (DESIGN.md, HTTP, "Approvals"; seed 004 §4.3).

- ``GET /v1/approvals?user_id=U`` → ``{"approvals": [{id, session_id, tool, arguments,
  expires_at}]}``: the approvals pending now (expired ones are not), found with one query on
  the sessions' state (``Store.list_sessions(awaiting_approval=True)``), no item read. A
  proposal of several calls adds ``calls`` (as ``run --json`` does).
- ``POST /v1/approvals/{id}`` ``{session_id, decision: "approve"|"reject"}`` → the ``run --json``
  object of what followed (``Agent.approve`` / ``reject``). An approval the session does not
  wait for (unknown, already decided) is 404 ``approval_not_found``, an expired one 404
  ``approval_expired``; another user's session 403; a malformed id 400.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from hermes.agent.approvals import PendingApproval
from hermes.agent.events import AgentEvent, TurnFinished
from hermes.channels.http.auth import CallerDep, acting_user
from hermes.channels.http.chat import incoming_trace
from hermes.channels.http.errors import TRACE_HEADER, ApiError
from hermes.channels.http.sessions import owned_session
from hermes.channels.http.state import Service, service
from hermes.channels.http.turn_task import event_data, failure_reply, observe, open_trace
from hermes.channels.http.turns import turn_events
from hermes.session.items import SessionRecord

router = APIRouter(tags=["approvals"])

ServiceDep = Annotated[Service, Depends(service)]
#: ``hermes.agent.approvals.new_approval_id``: ``ap-`` and 10 hex digits.
_APPROVAL_ID = re.compile(r"ap-[0-9a-f]{10}")
_PAGE = 500


class Decision(BaseModel):
    """The body of ``POST /v1/approvals/{id}``."""

    model_config = ConfigDict(extra="forbid")

    session_id: str
    decision: Literal["approve", "reject"]


def approval_json(record: SessionRecord, pending: PendingApproval) -> dict[str, Any]:
    first = pending.calls[0] if pending.calls else None
    data: dict[str, Any] = {
        "id": pending.approval_id,
        "session_id": record.session_id,
        "tool": None if first is None else first.tool,
        "arguments": None if first is None else first.arguments,
        "expires_at": pending.expires_at,
    }
    if len(pending.calls) > 1:
        data["calls"] = [{"tool": c.tool, "arguments": c.arguments} for c in pending.calls]
    return data


@router.get("/v1/approvals")
async def list_approvals(
    svc: ServiceDep, caller: CallerDep, user_id: str | None = None
) -> dict[str, Any]:
    """The tool calls waiting for a person's yes or no. / 等待确认的工具调用。"""
    user = acting_user(caller, user_id)
    store = svc.agent.store
    found: list[dict[str, Any]] = []
    after = None
    while True:
        page = await store.list_sessions(user, _PAGE, after=after, awaiting_approval=True)
        for record in page:
            pending = PendingApproval.from_data(record.state.approval)
            if pending is not None and not pending.expired():
                found.append(approval_json(record, pending))
        if len(page) < _PAGE:
            return {"approvals": found}
        after = (page[-1].last_active, page[-1].session_id)


@router.post("/v1/approvals/{approval_id}")
async def decide(
    approval_id: str, body: Decision, request: Request, svc: ServiceDep, caller: CallerDep
) -> JSONResponse:
    """Approve or reject a waiting call; the reply that followed. / 确认或拒绝等待中的调用。"""
    if not _APPROVAL_ID.fullmatch(approval_id):
        raise ApiError(
            400, "invalid_id", f"approval id {approval_id[:40]!r} is not valid / 确认编号无效"
        )
    record = await owned_session(svc, caller, body.session_id)
    pending = PendingApproval.from_data(record.state.approval)
    if pending is None or pending.approval_id != approval_id:
        raise ApiError(
            404,
            "approval_not_found",
            f"session '{record.session_id}' waits for no approval {approval_id}"
            " / 没有这条待确认的操作",
        )
    if pending.expired():
        raise ApiError(
            404, "approval_expired", f"approval {approval_id} has expired / 这条确认已过期"
        )
    if svc.stopping:
        raise ApiError(503, "shutting_down", "the server is shutting down / 服务正在停止")
    agent = svc.agent
    sid = record.session_id
    # A turn like any other: its events go to the turn-event log (replayable at
    # /v1/turns/{trace_id}/events) and to the observers (metrics, spans).
    events = turn_events(svc)
    trace_id = open_trace(events, incoming_trace(request), sid)

    def on_event(event: AgentEvent) -> None:
        observe(svc, trace_id, sid, event)
        events.append(trace_id, event.type, event_data(event, trace_id))

    task = asyncio.ensure_future(
        agent.decide(approval_id, body.decision, session_id=sid, user_id=record.user_id,
                     trace_id=trace_id, on_event=on_event)
    )  # fmt: skip
    # Registered like every turn: cancel and shutdown see it. Shielded: a decision taken is
    # carried out even when the client goes away before the reply.
    svc.running.add(sid, task)
    try:
        result = await asyncio.shield(task)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if task.cancelled() and (current is None or not current.cancelling()):
            # The turn was stopped (POST /v1/sessions/{id}/cancel), not this request.
            events.finish(trace_id, failure_reply(trace_id, sid, None))
            raise ApiError(
                409, "turn_cancelled", "the turn was cancelled / 本轮对话已被取消"
            ) from None
        raise
    except Exception as exc:
        events.finish(trace_id, failure_reply(trace_id, sid, exc))
        raise
    observe(svc, trace_id, sid, TurnFinished(result))
    answer = result.to_json_dict()
    events.finish(trace_id, answer)
    return JSONResponse(answer, headers={TRACE_HEADER: trace_id})
