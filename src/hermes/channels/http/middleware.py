"""The ASGI middleware of ``hermes serve`` (DESIGN.md, HTTP): trace ids, CORS, rate limits and
the body size limit — around every route, never ``if`` statements inside them (STYLE.md).

Outermost first: :class:`TraceIdMiddleware` (every response, errors too, carries
``X-Hermes-Trace-Id``), Starlette's ``CORSMiddleware`` (only with ``server.cors_origins``),
:class:`RateLimitMiddleware` (429 + ``Retry-After``), :class:`BodyLimitMiddleware` (413 before
the body is read: ``Content-Length`` checked first, streamed and chunked bytes counted).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hermes.channels.http.auth import key_id_of
from hermes.channels.http.errors import TRACE_HEADER, ApiError
from hermes.channels.http.limits import InProcessRateLimiter, RateLimiter
from hermes.observe import get_logger
from hermes.observe.trace_ids import is_trace_id

if TYPE_CHECKING:
    from fastapi import FastAPI

    from hermes.config.server import ApiKeyConfig, ServerConfig

log = get_logger("hermes.channels.http")

#: Probes carry no key and must not be throttled (see docs/http.md).
UNLIMITED_PATHS = frozenset({"/healthz", "/readyz"})
#: Requests not logged one by one: probes and scrapes, every few seconds.
_QUIET_PATHS = UNLIMITED_PATHS | {"/metrics"}
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def incoming_trace_id(headers: Headers) -> str | None:
    """The trace id a request brings: ``traceparent``'s (W3C), else a valid ``X-Request-Id``
    (8–128 of ``[A-Za-z0-9._:-]``), else None."""
    match = _TRACEPARENT.match(headers.get("traceparent", "").strip().lower())
    if match and match.group(1) != "0" * 32:
        return match.group(1)
    request_id = headers.get("x-request-id", "").strip()
    return request_id if is_trace_id(request_id) else None


def trace_id_of(headers: Headers) -> str:
    """The request's trace id (:func:`incoming_trace_id`), else a new one (32 hex digits)."""
    return incoming_trace_id(headers) or uuid.uuid4().hex


async def send_error(send: Send, status: int, type_: str, message: str, **headers: str) -> None:
    """Send the one error shape (``{"error": {"type", "message"}}``) from middleware."""
    body = json.dumps({"error": {"type": type_, "message": message}}).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class TraceIdMiddleware:
    """Chooses the trace id (``request.state.trace_id``), echoes it on every response, and
    logs each API request as the first step of its trace (``http_request``: method, path,
    status, ``cost_ms`` — what ``hermes trace`` shows of the HTTP edge; probes and
    ``/metrics`` are not logged)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        trace_id = trace_id_of(Headers(scope=scope))
        scope.setdefault("state", {})["trace_id"] = trace_id
        started = time.perf_counter()
        answered: dict[str, Any] = {"status": None, "trace_id": trace_id}

        async def send_with_trace(message: Message) -> None:
            if message["type"] == "http.response.start":
                # A route that knows better (a turn given a fresh trace id, a replayed result)
                # has set its own: that one stays.
                headers = MutableHeaders(scope=message)
                answered["trace_id"] = headers.setdefault(TRACE_HEADER, trace_id)
                answered["status"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_with_trace)
        finally:
            path = scope.get("path", "")
            if path not in _QUIET_PATHS:
                log.info(
                    "http_request",
                    trace_id=answered["trace_id"],
                    method=scope.get("method"),
                    path=path[:200],
                    status=answered["status"],
                    cost_ms=round((time.perf_counter() - started) * 1000, 2),
                )


class BodyTooLargeError(ApiError):
    """A request body over ``server.max_body_bytes`` (413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            413,
            "payload_too_large",
            f"the request body is larger than {limit:,} bytes / 请求体过大",
        )


class BodyLimitMiddleware:
    """413 for a body over ``limit`` bytes, before it is read: a larger ``Content-Length`` is
    refused at once; otherwise the bytes received are counted (chunked bodies too) and the read
    that passes the limit fails, with nothing more read."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = BodyTooLargeError(self.limit)
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await send_error(send, 413, too_large.type, too_large.message, connection="close")
            return
        received = 0
        exceeded = started = answered = False

        async def counted() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise too_large
            return message

        async def tracked(message: Message) -> None:
            # The route may turn the failed read into its own error (FastAPI answers 400 for a
            # body it could not read): the answer to an oversized body is 413 all the same.
            nonlocal started, answered
            if exceeded and not started:
                if message["type"] == "http.response.start":
                    started = answered = True
                    await send_error(
                        send, 413, too_large.type, too_large.message, connection="close"
                    )
                return
            if answered and message["type"] == "http.response.body":
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except BodyTooLargeError:
            if answered:
                return
            if started:
                raise
            await send_error(send, 413, too_large.type, too_large.message, connection="close")


class RateLimitMiddleware:
    """429 with ``Retry-After`` over ``server.rate_limit.per_minute``, per key (the key a valid
    ``Authorization`` header names), else per client address."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter, keys: tuple[ApiKeyConfig, ...]) -> None:
        self.app = app
        self.limiter = limiter
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in UNLIMITED_PATHS:
            await self.app(scope, receive, send)
            return
        key_id = key_id_of(Headers(scope=scope).get("authorization", ""), self.keys)
        client = scope.get("client")
        caller = f"key:{key_id}" if key_id is not None else f"addr:{client[0] if client else '-'}"
        decision = self.limiter.hit(caller)
        if decision.allowed:
            await self.app(scope, receive, send)
            return
        await send_error(
            send,
            429,
            "rate_limited",
            f"too many requests; retry in {decision.retry_after} s / 请求过于频繁，请稍后重试",
            retry_after=str(decision.retry_after),
        )


class JsonCorsMiddleware(CORSMiddleware):
    """Starlette's CORS, with a refused preflight in the one error shape (its own answer is
    ``text/plain``): 400 ``cors_refused`` naming what was not allowed."""

    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers)
        if answer.status_code < 400:
            return answer
        what = bytes(answer.body).decode("utf-8", "replace").removeprefix("Disallowed CORS ")
        return JSONResponse(
            {"error": {"type": "cors_refused", "message": f"CORS refused: {what} not allowed "
                       "(server.cors_origins) / 跨域请求被拒绝"}},
            status_code=400,
            headers={k: v for k, v in answer.headers.items() if k.lower() != "content-length"
                     and k.lower() != "content-type"},
        )  # fmt: skip


def install_middleware(app: FastAPI, settings: ServerConfig) -> None:
    """Wrap ``app`` in the middleware ``settings`` ask for (added innermost first)."""
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    per_minute = settings.rate_limit.per_minute
    if per_minute is not None:
        limiter = InProcessRateLimiter(per_minute)
        app.state.hermes.parts["rate_limiter"] = limiter
        app.add_middleware(RateLimitMiddleware, limiter=limiter, keys=settings.api_keys)
    if settings.cors_origins:
        app.add_middleware(
            JsonCorsMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=[TRACE_HEADER, "Retry-After", "Idempotency-Replayed"],
        )
    app.add_middleware(TraceIdMiddleware)
