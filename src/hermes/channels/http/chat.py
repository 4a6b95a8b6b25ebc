"""``POST /v1/chat``: one turn, as the ``run --json`` object or as SSE (DESIGN.md, HTTP).

    POST /v1/chat {"session_id"?, "user_id"?, "message", "stream"?}

Plain: the ``run --json`` object (a new valid session id when none is given). ``stream: true``:
``text/event-stream``, one event per loop event (``event:`` its type, ``id:`` 1, 2, 3…,
``data:`` JSON; the first carries the ``trace_id``), the last ``event: reply`` with the
``run --json`` object. The turn runs as its own task (``turn_task``): a client that leaves
loses nothing, and ``GET /v1/turns/{trace_id}/events`` picks the stream up again.

Refused before the turn starts (nothing stored): 400 bad body or id, 409 ``session_busy``
(``server.busy: reject``, or still busy after ``agent.turn_timeout`` with ``enqueue``), 503
``shutting_down`` and 503 when the store is down. A model that is down is not a refusal: the
turn fails honestly and the reply says so, with ``error``.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from hermes.channels.http.auth import CallerDep, acting_user
from hermes.channels.http.errors import TRACE_HEADER, ApiError
from hermes.channels.http.idempotency import idempotent, idempotent_start
from hermes.channels.http.middleware import incoming_trace_id
from hermes.channels.http.state import Service, service
from hermes.channels.http.turn_task import TurnTask, intake_of, open_trace, start_turn
from hermes.channels.http.turns import event_stream, replayed_stream, turn_events
from hermes.errors import StoreError
from hermes.messages import Message
from hermes.session.ids import new_session_id, validate_session_id

router = APIRouter()


class ChatRequest(BaseModel):
    """The body of ``POST /v1/chat`` (unknown fields are refused: 422)."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(description="The user's message. / 用户消息。")
    session_id: str | None = Field(default=None, description="Omitted: a new session.")
    user_id: str | None = Field(default=None, description="Who speaks (see Auth).")
    # Strict: "yes", "1" or 1 is a wrong type (422), not a quiet "true".
    stream: bool = Field(default=False, strict=True, description="Answer with text/event-stream.")


def shutting_down() -> ApiError:
    return ApiError(
        503,
        "shutting_down",
        "the service is shutting down; try again shortly / 服务正在关闭，请稍后重试",
        headers={"Retry-After": "5"},
    )


def incoming_trace(request: Request) -> str | None:
    """The trace id the request brings: a trace-id middleware's, ``traceparent``'s, or a
    well-formed ``X-Request-Id``; ``None`` for a new one."""
    found = getattr(request.state, "trace_id", None)
    if isinstance(found, str) and found:
        return found
    return incoming_trace_id(request.headers)


_ERROR: dict[str, object] = {"description": '`{"error": {"type", "message"}}`'}
RESPONSES: dict[int | str, dict[str, object]] = {
    200: {
        "description": "The `run --json` object; with `stream`, SSE ending in `event: reply`.",
        "content": {"application/json": {}, "text/event-stream": {}},
    },
    400: _ERROR,
    409: {"description": "`session_busy`"},
    422: _ERROR,
    503: {"description": "`shutting_down`, or the store is down"},
}


@router.post("/v1/chat", response_model=None, responses=RESPONSES)
async def chat(
    body: ChatRequest,
    request: Request,
    svc: Annotated[Service, Depends(service)],
    caller: CallerDep,
) -> Response:
    """Run one turn: the ``run --json`` object, or its events as SSE with ``stream``."""
    if svc.stopping:
        raise shutting_down()
    user_id = acting_user(caller, body.user_id)
    session_id = body.session_id
    session_id = new_session_id() if session_id is None else validate_session_id(session_id)
    wanted = incoming_trace(request)
    message = intake_of(svc).message(
        body.message, channel="http", session_id=session_id, user_id=user_id, trace_id=wanted
    )
    wait = 2 * svc.agent.turn_timeout + 5  # waiting its turn, then running as long again
    if body.stream:

        async def start() -> tuple[Callable[[], Awaitable[tuple[int, dict[str, Any]]]], Response]:
            # Inside the claim: a replay opens no trace and starts no turn.
            turn, trace_id = await _start(svc, message, session_id)
            return functools.partial(_outcome, turn), event_stream(turn_events(svc), trace_id, 0)

        def replay(status: int, data: Any) -> Response:
            return replayed_stream(turn_events(svc), data)

        return await idempotent_start(
            request, svc, caller, "POST /v1/chat", start, replay=replay, user_id=user_id, wait=wait
        )

    async def run() -> tuple[int, dict[str, Any]]:
        # Inside the claim: a replay opens no trace and starts no turn.
        turn, _ = await _start(svc, message, session_id)
        return await _outcome(turn)

    response = await idempotent(
        request, svc, caller, "POST /v1/chat", run, user_id=user_id, wait=wait
    )
    trace = _trace_of(response)
    if trace is not None:
        response.headers[TRACE_HEADER] = trace
    return response


async def _start(svc: Service, message: Message, session_id: str) -> tuple[TurnTask, str]:
    """Start the turn of ``message``; raise its refusal (busy, store down) as an HTTP error."""
    events = turn_events(svc)
    # Opened once the message is taken (a refused one opens no trace); a trace id that is
    # taken already (a client reusing its request id) gets a new one.
    trace_id = message.meta["trace_id"] = open_trace(events, message.trace_id, session_id)
    turn = start_turn(svc, message, busy=svc.settings.busy)
    await turn.wait_started()
    raise_refusal(turn)
    return turn, trace_id


async def _outcome(turn: TurnTask) -> tuple[int, dict[str, Any]]:
    """The status and ``run --json`` object of a started turn, once it ends."""
    try:
        # Shielded: a client that leaves does not stop the turn (it is stored all the same).
        result = await asyncio.shield(turn.task)
    except asyncio.CancelledError:
        if not turn.task.cancelled() or turn.progress.reply is None:
            raise  # the request was cancelled, not the turn
        # Stopped (shutdown, a cancel request): checkpointed, and said so with ``error``.
        return 200, dict(turn.progress.reply)
    except StoreError as exc:
        raise store_down(exc) from None
    data = result.to_json_dict()
    error = data.get("error")
    # A model that is down is 503 (DESIGN.md, HTTP, "Errors"); the body is still the run
    # object: its ``error`` is the JSON error shape, and its reply is what the session stored.
    if isinstance(error, dict) and error.get("type") == "model_error":
        return 503, data
    return 200, data


def _trace_of(response: Response) -> str | None:
    """The trace id in a JSON response's run object (replays carry it too)."""
    if not isinstance(response, JSONResponse):
        return None
    try:
        data = json.loads(bytes(response.body))
    except ValueError:
        return None
    trace = data.get("trace_id") if isinstance(data, dict) else None
    return trace if isinstance(trace, str) else None


def store_down(exc: StoreError) -> ApiError:
    return ApiError(503, exc.code, f"the store is unavailable / 存储不可用: {exc.message}")


def raise_refusal(turn: TurnTask) -> None:
    """Raise what stopped the turn before it started, as its HTTP error."""
    if turn.task.done() and turn.task.cancelled() and not turn.started.is_set():
        raise shutting_down()
    refused = turn.refusal()
    if refused is None:
        return
    if isinstance(refused, StoreError):
        raise store_down(refused)
    raise refused
