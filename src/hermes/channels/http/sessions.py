"""Routes: sessions (DESIGN.md, HTTP, "Sessions").

- ``GET /v1/sessions?user_id=U&cursor=C&limit=N`` → ``{sessions, next_cursor}``, most recently
  active first (keyset pages on ``(last_active, session_id)``: a page's cost does not grow with
  the pages before it).
- ``GET /v1/sessions/{id}?cursor=C&limit=N`` → ``{session_id, user_id, state, items,
  next_cursor}``: items in rising ``seq`` (pages after a seq), ``next_cursor`` null on the last.
- ``DELETE /v1/sessions/{id}`` → 204 (404 unknown, 409 ``session_busy`` while a turn runs).
- ``POST /v1/sessions/{id}/cancel`` → ``{"cancelled": N}``: the turns of the session running in
  this process are cancelled and awaited (bounded); their calls without results get
  ``interrupted`` results (the turn's own cancellation path, ``hermes.agent.turn``). Nothing
  running is ``{"cancelled": 0}`` with 200: the session is then as the caller wants it.

Cursors are opaque (base64url of JSON); one that does not decode is 400 ``invalid_cursor``.
A session of another user is 403 (``session_forbidden``) for a key without the ``admin`` role.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import math
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from hermes.channels.http.auth import Caller, CallerDep, acting_user
from hermes.channels.http.errors import ApiError
from hermes.channels.http.state import Service, service
from hermes.session.ids import validate_session_id
from hermes.session.items import Item, SessionRecord
from hermes.session.locks import busy_error
from hermes.session.privacy import mask_personal
from hermes.session.store import SessionCursor

router = APIRouter(tags=["sessions"])

ServiceDep = Annotated[Service, Depends(service)]
#: How long a cancel waits for the cancelled turns to close (write their ``interrupted``
#: results and idle state) before it answers.
CANCEL_WAIT_S = 10.0
MAX_PAGE = 1000

PageLimit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="At most this many (1–1000).")]
CursorParam = Annotated[
    str | None, Query(max_length=1024, description="next_cursor of the page before.")
]


# -- cursors ----------------------------------------------------------------------------------


def encode_cursor(kind: str, value: Any) -> str:
    raw = json.dumps([kind, value], separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(kind: str, cursor: str) -> Any:
    """The value of a cursor made by :func:`encode_cursor` for ``kind``; 400 otherwise."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        tag, value = json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        tag, value = None, None
    if tag != kind:
        raise ApiError(
            400, "invalid_cursor", "the cursor is not valid here / 分页游标无效"
        )  # fmt: skip
    return value


def _session_cursor(cursor: str | None) -> SessionCursor | None:
    if cursor is None:
        return None
    value = decode_cursor("s", cursor)
    if (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], int | float)
        and not isinstance(value[0], bool)
        and math.isfinite(value[0])
        and isinstance(value[1], str)
    ):
        return float(value[0]), value[1]
    raise ApiError(400, "invalid_cursor", "the cursor is not valid here / 分页游标无效")


def _item_cursor(cursor: str | None) -> int:
    if cursor is None:
        return 0
    value = decode_cursor("i", cursor)
    # A seq is a SQLite INTEGER: a forged cursor past 2**63 is refused, not an overflow.
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63:
        return value
    raise ApiError(400, "invalid_cursor", "the cursor is not valid here / 分页游标无效")


# -- shapes -----------------------------------------------------------------------------------


def session_summary(record: SessionRecord) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        "user_id": record.user_id,
        "title": record.title,
        "state": record.state.fsm_state,
        "last_active": record.last_active,
    }


def item_json(item: Item) -> dict[str, Any]:
    """An item with the Item fields of DESIGN.md ("Core data"); content holding personal data
    (``meta["personal"]``) is masked, as ``hermes sessions show`` masks it (seed 003 §4.4)."""
    personal = bool(item.meta and item.meta.get("personal"))
    return {
        "seq": item.seq,
        "role": item.role,
        "kind": item.kind,
        "content": mask_personal(item.content) if personal else item.content,
        "tool_call_id": item.tool_call_id,
        "tool_name": item.tool_name,
        "sticky": item.sticky,
        "trace_id": item.trace_id,
        "created_at": item.created_at,
    }


# -- access -----------------------------------------------------------------------------------


def not_found(session_id: str) -> ApiError:
    return ApiError(
        404, "session_not_found", f"no session '{session_id}' / 没有会话 '{session_id}'"
    )


def check_owner(caller: Caller, record: SessionRecord) -> None:
    """403 when ``caller`` (a key's user, not admin) is not the session's user."""
    if caller.user_id is None or caller.admin or record.user_id == caller.user_id:
        return
    raise ApiError(
        403,
        "session_forbidden",
        f"session '{record.session_id}' belongs to another user / 该会话属于其他用户",
    )


async def owned_session(svc: Service, caller: Caller, session_id: str) -> SessionRecord:
    """The session ``caller`` may act on: 400 bad id, 404 unknown, 403 another user's."""
    sid = validate_session_id(session_id)
    record = await svc.agent.store.load_session(sid)
    if record is None:
        raise not_found(sid)
    check_owner(caller, record)
    return record


# -- routes -----------------------------------------------------------------------------------


@router.get("/v1/sessions")
async def list_sessions(
    svc: ServiceDep,
    caller: CallerDep,
    user_id: str | None = None,
    cursor: CursorParam = None,
    limit: PageLimit = 100,
) -> dict[str, Any]:
    """Sessions, most recently active first. / 会话列表（最近的在前）。"""
    user = acting_user(caller, user_id)
    after = _session_cursor(cursor)
    page = await svc.agent.store.list_sessions(user, limit + 1, after=after)
    more = len(page) > limit
    page = page[:limit]
    last = page[-1] if page else None
    return {
        "sessions": [session_summary(r) for r in page],
        "next_cursor": (
            encode_cursor("s", [last.last_active, last.session_id])
            if more and last is not None
            else None
        ),
    }


@router.get("/v1/sessions/{session_id}")
async def show_session(
    session_id: str,
    svc: ServiceDep,
    caller: CallerDep,
    cursor: CursorParam = None,
    limit: PageLimit = 100,
) -> dict[str, Any]:
    """A session and one page of its items, in rising seq. / 会话及其消息（分页）。"""
    record = await owned_session(svc, caller, session_id)
    after = _item_cursor(cursor)
    items = await svc.agent.store.read_items(record.session_id, after_seq=after, limit=limit + 1)
    more = len(items) > limit
    items = items[:limit]
    return {
        "session_id": record.session_id,
        "user_id": record.user_id,
        "state": record.state.fsm_state,
        "items": [item_json(i) for i in items],
        "next_cursor": encode_cursor("i", items[-1].seq) if more and items else None,
    }


@router.delete("/v1/sessions/{session_id}", status_code=204)
async def delete_session(session_id: str, svc: ServiceDep, caller: CallerDep) -> Response:
    """Delete a session and all its items. / 删除会话及其全部消息。"""
    record = await owned_session(svc, caller, session_id)
    if not await delete_claimed(svc, record.session_id):
        raise not_found(record.session_id)
    return Response(status_code=204)


async def delete_claimed(svc: Service, session_id: str) -> bool:
    """Delete under the session's claim, so a running turn (here or in a worker) is not cut
    off mid-write: 409 ``session_busy`` instead."""
    if svc.running.of(session_id):
        raise busy_error(session_id, 0.0)
    return await svc.agent.delete_session(session_id)


@router.post("/v1/sessions/{session_id}/cancel")
async def cancel_session(session_id: str, svc: ServiceDep, caller: CallerDep) -> dict[str, int]:
    """Stop the turn running in a session. / 停止会话中正在运行的对话。"""
    record = await owned_session(svc, caller, session_id)
    return {"cancelled": await cancel_running(svc, record.session_id)}


async def cancel_running(svc: Service, session_id: str) -> int:
    """Cancel the session's turns running in this process and wait (at most
    :data:`CANCEL_WAIT_S`) for them to close; how many were cancelled."""
    tasks = [t for t in svc.running.of(session_id) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=CANCEL_WAIT_S)
    return len(tasks)
