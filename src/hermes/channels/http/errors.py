"""Every HTTP error is ``{"error": {"type", "message"}}`` (DESIGN.md, HTTP, "Errors").

Routes raise :class:`ApiError` (or let a typed Hermes error through); the handlers installed by
:func:`install_error_handlers` turn each into its status and JSON body, bilingual where a person
reads it. No route builds an error body by hand.
"""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hermes.errors import (
    HermesError,
    InvalidIdError,
    InvalidInputError,
    SessionBusyError,
    SessionNotFoundError,
)
from hermes.observe import get_logger

log = get_logger("hermes.channels.http")


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
    (InvalidIdError, 400),
    (InvalidInputError, 400),
    (SessionBusyError, 409),
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
        fields = ", ".join(_field(e) for e in errors[:10])
        return error_response(422, "invalid_request", f"invalid fields / 字段无效: {fields}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, kind, str(exc.detail), exc.headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("http_internal_error", path=request.url.path)
        return error_response(
            500,
            "internal_error",
            "an internal error occurred; see the server log / 内部错误，请查看服务日志",
        )


def _field(error: Mapping[str, object]) -> str:
    loc = error.get("loc") or ()
    path = ".".join(str(p) for p in loc if p != "body") if isinstance(loc, tuple | list) else ""
    return f"{path or 'body'} ({error.get('msg', 'invalid')})"
