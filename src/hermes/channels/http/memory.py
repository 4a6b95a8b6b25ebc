"""Routes: memory and erasing a user (DESIGN.md, HTTP, "Memory").

- ``GET /v1/memory/{user_id}?q=TEXT`` → a list of ``{id, content, kind, score}`` — the objects of
  ``hermes memory search --json`` (``MemoryHit.to_dict``), best first. Without ``q``: the user's
  active memories, newest first, the same objects with ``score`` null.
- ``POST /v1/memory/{user_id}`` ``{content}`` → 201 with the object (``score`` null, and
  ``created``: false when the same content was already remembered — one memory, not two).
- ``DELETE /v1/memory/{user_id}/{id}`` → 204 (404 ``memory_not_found``).
- ``DELETE /v1/users/{user_id}`` → 200 ``{user_id, sessions, memories, blobs, habits, plans}``
  (what was deleted): the user's sessions with their items (running turns cancelled first),
  memories, tool-call records with the archive blobs no one else uses, habit counts and plan
  runs, and (``requests``) the replies kept for its ``Idempotency-Key`` retries.

Memory off (``agent.memory`` is None, or without a long-term store) makes the memory routes
409 ``memory_disabled``; erasing a user still erases the sessions.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict

from hermes.agent.compose import open_plan_runs
from hermes.channels.http.auth import CallerDep, acting_user
from hermes.channels.http.errors import ApiError
from hermes.channels.http.idempotency import request_keys  # idemkey
from hermes.channels.http.sessions import cancel_running, delete_claimed
from hermes.channels.http.state import Service, service
from hermes.memory.facade import Memory
from hermes.memory.manual import SEARCH_MIN_SCORE, detect_sensitive, guess_kind
from hermes.memory.records import (
    MemoryHit,
    MemoryRecord,
    validate_content,
    validate_memory_id,
)
from hermes.session.store import SessionCursor

router = APIRouter(tags=["memory"])

ServiceDep = Annotated[Service, Depends(service)]
#: Search queries are cut here, as ``hermes memory search`` cuts them.
_MAX_QUERY_CHARS = 4000


class NewMemory(BaseModel):
    """The body of ``POST /v1/memory/{user_id}``."""

    model_config = ConfigDict(extra="forbid")

    content: str


def record_json(record: MemoryRecord) -> dict[str, Any]:
    """A memory as ``hermes memory search --json`` shows one, without a search score."""
    return {**MemoryHit(record, 0.0, 0.0, None).to_dict(), "score": None}


def _memory(svc: Service) -> Memory:
    memory = svc.agent.memory
    if memory is None or memory.store is None:
        raise ApiError(
            409,
            "memory_disabled",
            "long-term memory is off for this agent / 此智能体未开启长期记忆",
        )
    return memory


def _user(caller_user: str | None, user_id: str) -> str:
    # The path names the user: acting_user never returns None for a given id.
    return caller_user or user_id


@router.get("/v1/memory/{user_id}")
async def memories(
    user_id: str,
    svc: ServiceDep,
    caller: CallerDep,
    q: Annotated[str | None, Query(description="What to look for (any language).")] = None,
    limit: Annotated[int | None, Query(ge=1, le=1000)] = None,
) -> list[dict[str, Any]]:
    """Search a user's memories, or list them newest first. / 搜索或列出用户的记忆。"""
    user = _user(acting_user(caller, user_id), user_id)
    memory = _memory(svc)
    if q is None:
        records = await memory.memories(user, limit=limit or 1000)
        return [record_json(r) for r in records]
    if not q.strip():
        raise ApiError(400, "invalid_input", "the search query is empty / 搜索内容为空")
    hits = await memory.search(
        user, q[:_MAX_QUERY_CHARS], limit=min(limit or 5, 100), min_score=SEARCH_MIN_SCORE
    )
    return [hit.to_dict() for hit in hits]


@router.post("/v1/memory/{user_id}", status_code=201)
async def remember(
    user_id: str, body: NewMemory, svc: ServiceDep, caller: CallerDep
) -> dict[str, Any]:
    """Remember something for a user. / 为用户记住一条信息。"""
    user = _user(acting_user(caller, user_id), user_id)
    memory = _memory(svc)
    content = validate_content(body.content)
    # As ``hermes memory add`` does without options: the kind and sensitivity read from it.
    topic = detect_sensitive(content)
    record, created = await memory.remember(
        user, content, kind=guess_kind(content), sensitive=topic is not None, topic=topic
    )
    return {**record_json(record), "created": created}


@router.delete("/v1/memory/{user_id}/{memory_id}", status_code=204)
async def forget(user_id: str, memory_id: str, svc: ServiceDep, caller: CallerDep) -> Response:
    """Forget one memory. / 删除一条记忆。"""
    user = _user(acting_user(caller, user_id), user_id)
    mid = validate_memory_id(memory_id)
    if not await _memory(svc).forget(user, mid):
        raise ApiError(404, "memory_not_found", f"no memory {mid!r} for this user / 找不到这条记忆")
    return Response(status_code=204)


@router.delete("/v1/users/{user_id}")
async def erase_user(user_id: str, svc: ServiceDep, caller: CallerDep) -> dict[str, Any]:
    """Erase a user everywhere. / 删除用户的全部数据。"""
    user = _user(acting_user(caller, user_id), user_id)
    sessions = await _erase_sessions(svc, user)
    counts = {"memories": 0, "blobs": 0, "habits": 0}
    if svc.agent.memory is not None:
        counts.update(await svc.agent.memory.forget_user(user))
    # A plan run's params and results may hold what the user said (hermes.tools.plan_runs).
    runs = open_plan_runs(svc.agent.store)
    try:
        plans = await runs.delete_user(user)
    finally:
        await runs.close()
    # --- idemkey: the replies kept for Idempotency-Key retries are the user's too ---
    requests = await request_keys(svc).forget_user(user)
    # --- end idemkey ---
    return {"user_id": user, "sessions": sessions, **counts, "plans": plans, "requests": requests}


async def _erase_sessions(svc: Service, user_id: str) -> int:
    """Delete every session of ``user_id``, cancelling its turns running here first."""
    store = svc.agent.store
    deleted = 0
    after: SessionCursor | None = None
    while True:
        page = await store.list_sessions(user_id, 500, after=after)
        for record in page:
            await cancel_running(svc, record.session_id)
            deleted += int(await delete_claimed(svc, record.session_id))
        if len(page) < 500:
            return deleted
        after = (page[-1].last_active, page[-1].session_id)
