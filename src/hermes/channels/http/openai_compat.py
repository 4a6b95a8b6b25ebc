"""The OpenAI-compatible façade: ``POST /v1/chat/completions`` and ``GET /v1/models``
(DESIGN.md, HTTP, "OpenAI-compatible"; docs/http.md).

The ``openai`` client, Open WebUI and LibreChat talk to the agent as to a model: each request
is one turn of a Hermes session — its memory, validated tools and approvals — run like every
other turn of the service (``turn_task.start_turn``: busy policy, turn events, cancel, drain).

Session: ``X-Hermes-Session-Id``; else ``X-OpenWebUI-Chat-Id`` (as it is when it is a valid
session id, else one derived from it); else one derived from the ``user`` field and the caller
(never equal to a user id); else a new session per request. The last message is the new
input — the user's message, or the ``tool`` results answering the client's tool calls —;
earlier messages seed a session that does not exist yet and are never stored twice in one
that does.

Hermes's own tools run here and never appear as ``tool_calls``: their progress goes in the
side channel, a ``hermes`` field of the chunks (and of a plain completion) that OpenAI
clients ignore. The client's ``tools`` are offered to the model; a call to one ends the turn
and comes back as ``tool_calls`` (``finish_reason: "tool_calls"``).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from hermes.agent.client_turn import CLIENT_META
from hermes.channels.http.auth import Caller, CallerDep
from hermes.channels.http.chat import incoming_trace, shutting_down, store_down
from hermes.channels.http.errors import TRACE_HEADER, ApiError, status_of
from hermes.channels.http.openai_wire import (
    DONE,
    CompletionRequest,
    Reply,
    WireError,
    chunk,
    completion,
    error_response,
    read_request,
    reply_of,
    sse_data,
    tool_call_deltas,
)
from hermes.channels.http.state import Service, service
from hermes.channels.http.turn_task import TurnTask, intake_of, open_trace, start_turn
from hermes.channels.http.turns import REPLY_EVENT, TurnEvent, follow_quietly, turn_events
from hermes.errors import HermesError, InvalidIdError, StoreError
from hermes.session.ids import new_session_id, validate_session_id, validate_user_id

router = APIRouter()

SESSION_HEADER = "X-Hermes-Session-Id"
OPENWEBUI_CHAT = "X-OpenWebUI-Chat-Id"
OPENWEBUI_USER = "X-OpenWebUI-User-Id"
#: The side channel's events (the loop's events about Hermes's own tools).
SIDE_EVENTS = frozenset({"tool_call_started", "tool_call_finished"})
_STARTED = int(time.time())


@router.get("/v1/models")
async def list_models(svc: Annotated[Service, Depends(service)], caller: CallerDep) -> Any:
    """The agent, as the one model this service offers (id ``server.model_id``)."""
    return {"object": "list", "data": [_model(svc)]}


@router.get("/v1/models/{model_id}")
async def get_model(
    model_id: str, svc: Annotated[Service, Depends(service)], caller: CallerDep
) -> Response:
    """The agent's model object; 404 for another id."""
    if model_id != svc.settings.model_id:
        return error_response(
            404,
            "not_found",
            f"no model {model_id!r}; this service offers {svc.settings.model_id!r} / 模型不存在",
            param="model",
        )
    return JSONResponse(_model(svc))


def _model(svc: Service) -> dict[str, Any]:
    return {
        "id": svc.settings.model_id,
        "object": "model",
        "created": _STARTED,
        "owned_by": "hermes",
    }


@router.post(
    "/v1/chat/completions",
    response_model=None,
    responses={
        200: {
            "description": "A `chat.completion`; with `stream`, SSE of `chat.completion.chunk` "
            "ending in `data: [DONE]`.",
            "content": {"application/json": {}, "text/event-stream": {}},
        },
        400: {"description": '`{"error": {"message", "type", "param", "code"}}`'},
    },
)
async def chat_completions(
    request: Request, svc: Annotated[Service, Depends(service)], caller: CallerDep
) -> Response:
    """One turn of the agent, answered as a chat completion (see the module docstring)."""
    try:
        if svc.stopping:
            raise shutting_down()
        body = read_request(await request.body())
        _check_tools(svc, body)
        user_id = end_user(caller, body.user, request.headers.get(OPENWEBUI_USER))
        session_id = session_of(request, body, caller, user_id)
        turn = await _start(svc, request, body, session_id, user_id)
        completion_id = f"chatcmpl-{turn.trace_id}"
        model = body.model or svc.settings.model_id
        headers = {TRACE_HEADER: turn.trace_id, SESSION_HEADER: session_id}
        if body.stream:
            stream = _stream(svc, turn, completion_id, model, include_usage=body.include_usage)
            return StreamingResponse(
                stream,
                media_type="text/event-stream",
                headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            )
        run = await _outcome(turn)
        if _model_down(run):
            return _model_error(run, headers)
        return JSONResponse(completion(reply_of(run, completion_id, model)), headers=headers)
    except WireError as exc:
        return error_response(
            exc.status, exc.type, exc.message, param=exc.param, headers=exc.headers
        )
    except ApiError as exc:
        return error_response(exc.status, exc.type, exc.message, headers=exc.headers)
    except HermesError as exc:
        if status_of(exc) == 500:
            raise
        return error_response(status_of(exc), exc.code, exc.message)


def end_user(caller: Caller, named: str | None, openwebui_user: str | None) -> str | None:
    """The Hermes user of the request: a key's user; the end user the client names (``user``,
    else ``X-OpenWebUI-User-Id``) when the caller may act for it — an anonymous service or an
    ``admin`` key — and it is a valid user id."""
    if caller.user_id is not None and not caller.admin:
        return caller.user_id
    for candidate in (named, openwebui_user):
        if candidate:
            try:
                return validate_user_id(candidate)
            except InvalidIdError:
                continue  # a name that is no valid user id still picks the session
    return caller.user_id


def session_of(
    request: Request, body: CompletionRequest, caller: Caller, user_id: str | None
) -> str:
    """The session of the request (the rules of the module docstring)."""
    explicit = request.headers.get(SESSION_HEADER)
    if explicit is not None:
        return validate_session_id(explicit.strip())
    chat = request.headers.get(OPENWEBUI_CHAT, "").strip()
    if chat:
        try:
            return validate_session_id(chat)
        except InvalidIdError:  # still one session per chat, under a valid id
            return derived_session("owui", caller, user_id, chat)
    if body.user is not None:
        return derived_session("oai", caller, user_id, body.user)
    return new_session_id()


def derived_session(prefix: str, caller: Caller, user_id: str | None, name: str) -> str:
    """The session a client's name for it stands for (the ``user`` field, a chat id that is
    no valid session id): a digest of the caller, the acting user and the name — stable across
    requests, never the user id, whatever the name holds."""
    seed = f"{caller.scope}\n{user_id or ''}\n{name}".encode()
    return f"{prefix}-{hashlib.sha256(seed).hexdigest()[:40]}"


def _check_tools(svc: Service, body: CompletionRequest) -> None:
    for spec in body.tools:
        if svc.agent.tools.get(spec.name) is not None:
            raise WireError(
                400,
                "invalid_request_error",
                f"the client tool {spec.name!r} has the name of one of the agent's own tools; "
                f"rename it / 客户端工具 {spec.name!r} 与智能体自带工具同名，请改名",
                param="tools",
            )


async def _start(
    svc: Service, request: Request, body: CompletionRequest, session_id: str, user_id: str | None
) -> TurnTask:
    """Start the turn of the request; its refusal (bad input, busy, store down) raised."""
    message = intake_of(svc).message(
        body.text,
        channel="openai",
        session_id=session_id,
        user_id=user_id,
        trace_id=incoming_trace(request),
    )
    client = body.client_turn()
    if client.tools or client.results or client.history:
        message.meta[CLIENT_META] = client.to_meta()
    message.meta["trace_id"] = open_trace(turn_events(svc), message.trace_id, session_id)
    turn = start_turn(svc, message, busy=svc.settings.busy)
    await turn.wait_started()
    if turn.task.done() and turn.task.cancelled() and not turn.started.is_set():
        raise shutting_down()
    refused = turn.refusal()
    if isinstance(refused, StoreError):
        raise store_down(refused)
    if refused is not None:
        raise refused
    return turn


async def _outcome(turn: TurnTask) -> dict[str, Any]:
    """The ``run --json`` object of a started turn, once it ends (a client that leaves does
    not stop it)."""
    try:
        result = await asyncio.shield(turn.task)
    except asyncio.CancelledError:
        if not turn.task.cancelled() or turn.progress.reply is None:
            raise
        return dict(turn.progress.reply)
    except StoreError as exc:
        raise store_down(exc) from None
    return result.to_json_dict()


def _model_down(run: dict[str, Any]) -> bool:
    error = run.get("error")
    return isinstance(error, dict) and error.get("type") == "model_error"


def _model_error(run: dict[str, Any], headers: dict[str, str]) -> JSONResponse:
    """503 for a model that is down; the turn is stored, so clients must not retry it as is
    (``x-should-retry: false`` tells the ``openai`` client)."""
    error = run["error"]
    return error_response(
        503,
        "model_error",
        str(error.get("message") or run.get("reply")),
        headers={**headers, "x-should-retry": "false"},
    )


async def _stream(
    svc: Service, turn: TurnTask, completion_id: str, model: str, *, include_usage: bool
) -> AsyncIterator[bytes]:
    """The turn as ``chat.completion.chunk`` lines (see the module docstring)."""
    ids = {"session_id": turn.session_id, "trace_id": turn.trace_id}
    yield chunk(completion_id, model, {"role": "assistant", "content": ""}, hermes=ids)
    text = _StreamedText()
    async for event in _follow(svc, turn.trace_id):
        if event is None:
            yield b": keep-alive\n\n"
        elif event.event == "text_delta":
            piece = text.add(str(event.data.get("text") or ""))
            if piece:
                yield chunk(completion_id, model, {"content": piece})
        elif event.event == "model_call_started":
            text.next_call()
        elif event.event in SIDE_EVENTS:
            side = {k: v for k, v in event.data.items() if k != "trace_id"}
            side["event"] = side.pop("type", event.event)
            yield chunk(completion_id, model, {}, hermes=side)
        elif event.event == REPLY_EVENT:
            for line in _ending(event.data, text, completion_id, model, include_usage):
                yield line
            return


def _ending(
    run: dict[str, Any], text: _StreamedText, completion_id: str, model: str, include_usage: bool
) -> list[bytes]:
    """The last lines of a stream: the rest of the reply, the client's tool calls, the
    finish reason, the usage and ``[DONE]``; an error chunk for a model that is down."""
    if _model_down(run):
        error = run["error"]
        body = {"error": {"message": str(error.get("message")), "type": "model_error",
                          "param": None, "code": "model_error"}}  # fmt: skip
        return [sse_data(body), DONE]
    reply: Reply = reply_of(run, completion_id, model)
    lines: list[bytes] = []
    rest = text.rest_of(reply.content)
    if rest:
        lines.append(chunk(completion_id, model, {"content": rest}))
    lines.extend(chunk(completion_id, model, delta) for delta in tool_call_deltas(reply))
    lines.append(
        chunk(completion_id, model, {}, finish_reason=reply.finish_reason, hermes=reply.hermes)
    )
    if include_usage:
        lines.append(chunk(completion_id, model, None, usage=reply.usage))
    lines.append(DONE)
    return lines


class _StreamedText:
    """The text streamed so far, by model call: what of the reply is still to send."""

    def __init__(self) -> None:
        self.sent = False
        self.call_text = ""
        self.separate = False

    def next_call(self) -> None:
        self.separate = self.sent
        self.call_text = ""

    def add(self, piece: str) -> str:
        if not piece:
            return ""
        if self.separate and not self.call_text:
            piece = "\n\n" + piece.lstrip("\n")
        self.call_text += piece
        self.sent = True
        self.separate = False
        return piece

    def rest_of(self, reply: str) -> str:
        """What of ``reply`` the stream has not sent (the last call's text is its start)."""
        streamed = self.call_text.lstrip("\n")
        if streamed and reply.startswith(streamed):
            return reply[len(streamed) :]
        if not reply:
            return ""
        return ("\n\n" + reply) if self.sent else reply


def _follow(svc: Service, trace_id: str) -> AsyncIterator[TurnEvent | None]:
    """The turn's events as they come; ``None`` after a quiet ``KEEPALIVE_SECONDS``."""
    return follow_quietly(turn_events(svc), trace_id)
