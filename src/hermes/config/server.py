"""``server``: ``hermes serve``, the HTTP API (DESIGN.md, "Public contracts", HTTP; seed 003 §3).

Loopback and anonymous by default. With ``api_keys`` every client sends a bearer key (loopback
too); a non-loopback host without keys is refused at start unless ``allow_anonymous``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from hermes.config.section import Section as _Section
from hermes.errors import InvalidIdError
from hermes.session.ids import validate_user_id


class ApiKeyConfig(_Section):
    """One bearer key: the user its requests act as and that user's RBAC roles."""

    #: Kept out of ``repr`` and every message; use ``${HERMES_API_KEY}``.
    key: str = Field(min_length=16, repr=False)
    user: str
    #: Names of ``rbac.roles``; ``admin`` may also act for other users.
    roles: tuple[str, ...] = ()

    @field_validator("user")
    @classmethod
    def _check_user(cls, value: str) -> str:
        try:
            return validate_user_id(value)
        except InvalidIdError as exc:  # a ValueError for pydantic, so the key is named
            raise ValueError(exc.message) from None


class RateLimitConfig(_Section):
    """Requests per key (per client address when anonymous) and minute; ``None``: no limit."""

    per_minute: int | None = Field(default=None, ge=1)


class ServerConfig(_Section):
    """The HTTP service (``hermes serve``)."""

    host: str = Field(default="127.0.0.1", min_length=1)
    port: int = Field(default=8000, ge=0, le=65535)
    api_keys: tuple[ApiKeyConfig, ...] = ()
    #: Serve a non-loopback host without keys (refused at start otherwise).
    allow_anonymous: bool = False
    rate_limit: RateLimitConfig = Field(default_factory=RateLimitConfig)
    #: A larger request body is 413.
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    #: Origins allowed by CORS; none by default.
    cors_origins: tuple[str, ...] = ()
    #: A request to a session with a running turn: wait its turn, or 409 ``session_busy``.
    busy: Literal["enqueue", "reject"] = "enqueue"
    #: The id ``GET /v1/models`` lists (the OpenAI-compatible façade).
    model_id: str = Field(default="hermes", min_length=1)
    #: How long a turn's events stay replayable at ``GET /v1/turns/{trace_id}/events``.
    events_keep_seconds: float = Field(default=3600.0, gt=0)
    #: How long an ``Idempotency-Key`` is kept.
    idempotency_hours: float = Field(default=24.0, gt=0)
    #: Seconds SIGTERM waits for running turns before checkpointing them (DESIGN: stop within 20).
    shutdown_grace_seconds: float = Field(default=15.0, gt=0, le=15)
