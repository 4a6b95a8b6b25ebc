"""Every HTTP error is ``{"error": {"type", "message"}}`` (DESIGN.md, HTTP, "Errors").

Routes raise :class:`ApiError` (or let a typed Hermes error through); the handlers installed by
:func:`install_error_handlers` turn each into its status and JSON body, bilingual where a person
reads it. No route builds an error body by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hermes.errors import (
    HermesError,
    InvalidIdError,
    InvalidInputError,
    ModelError,
    PermissionDeniedError,
    RunNotFoundError,
    SessionAccessError,
    SessionBusyError,
    SessionNotFoundError,
    StoreError,
)
from hermes.observe import get_logger

log = get_logger("hermes.channels.http")

#: The response header that carries the request's trace id (every response, errors too).
TRACE_HEADER = "X-Hermes-Trace-Id"


class ApiError(Exception):
    """An HTTP failure: ``status``, a stable ``type`` and one sentence for the person."""

    def __init__(
        self,
        status: int,
        type_: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message
        self.headers = dict(headers or {})


def error_response(
    status: int, type_: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one shape of an error response."""
    return JSONResponse(
        {"error": {"type": type_, "message": message}}, status_code=status, headers=headers
    )


#: The status of each typed Hermes error that reaches the edge (others: 500, logged).
_STATUS: tuple[tuple[type[HermesError], int], ...] = (
    (SessionNotFoundError, 404),
    (RunNotFoundError, 404),
    (InvalidIdError, 400),
    (InvalidInputError, 400),
    (SessionAccessError, 403),
    (PermissionDeniedError, 403),
    (SessionBusyError, 409),
    (StoreError, 503),
    (ModelError, 503),
)


def status_of(exc: HermesError) -> int:
    """The HTTP status of a typed Hermes error (500 for one the edge does not expect)."""
    for kind, status in _STATUS:
        if isinstance(exc, kind):
            return status
    return 500


def install_error_handlers(app: FastAPI) -> None:
    """Make every failure of ``app`` the JSON error shape."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.type, exc.message, exc.headers)

    @app.exception_handler(HermesError)
    async def _hermes_error(request: Request, exc: HermesError) -> JSONResponse:
        status = status_of(exc)
        if status == 500:
            log.error("http_unexpected_error", type=exc.code, path=request.url.path)
        return error_response(status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(
                400, "invalid_json", "the body is not valid JSON / 请求体不是合法的 JSON"
            )
        if _not_json(request, errors):
            return error_response(
                415,
                "unsupported_media_type",
                "send the body as JSON, with Content-Type: application/json / "
                "请求体须为 JSON，并带 Content-Type: application/json",
            )
        fields = ", ".join(_field(e) for e in errors[:10])
        return error_response(422, "invalid_request", f"invalid fields / 字段无效: {fields}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == _UNPARSABLE:  # bad UTF-8, JSON too deep
            return error_response(
                400, "invalid_json", "the body is not valid JSON / 请求体不是合法的 JSON"
            )
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, kind, str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        # Starlette answers this one outside the middleware: the trace id header is set here.
        trace_id = getattr(request.state, "trace_id", None)
        log.exception("http_internal_error", path=request.url.path, trace_id=trace_id)
        return error_response(
            500,
            "internal_error",
            "an internal error occurred; see the server log / 内部错误，请查看服务日志",
            {TRACE_HEADER: trace_id} if isinstance(trace_id, str) else None,
        )


#: FastAPI's detail for a body it could not decode (not UTF-8, or JSON nested too deep).
_UNPARSABLE = "There was an error parsing the body"


def _not_json(request: Request, errors: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the body failed as a whole because it was not sent as JSON (a form, text)."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not kind or kind == "application/json" or kind.endswith("+json"):
        return False
    return any(tuple(e.get("loc") or ()) == ("body",) for e in errors)


def _field(error: Mapping[str, object]) -> str:
    loc = error.get("loc") or ()
    path = ".".join(str(p) for p in loc if p != "body") if isinstance(loc, tuple | list) else ""
    return f"{path or 'body'} ({error.get('msg', 'invalid')})"
