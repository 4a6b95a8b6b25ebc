"""``webhooks``: inbound events at ``POST /v1/events[/{route}]`` (DESIGN.md, "Public contracts",
HTTP Events; seed 002 §3.3: a monitoring alert arrives as a webhook and the agent handles it).

Each route sends its events to a session and a handler: an ``intent`` of the offline rule brain
run with the event's content, or a ``prompt`` template given to the model with the event's
fields. ``secret`` (the route's, else the section's) makes signatures required.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from hermes.config.section import Section as _Section
from hermes.config.section import check_name
from hermes.errors import InvalidIdError
from hermes.session.ids import validate_session_id, validate_user_id

#: Route names: the ``{route}`` of ``/v1/events/{route}``; ``default`` is ``/v1/events``.
ROUTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ROUTE_NAME_RULE = "1-64 of A-Z a-z 0-9 _ . - starting with a letter or digit"
#: The fields a ``prompt`` template may name: ``{content}``, ``{meta.level}`` …
PROMPT_FIELDS = frozenset({"content", "type", "msg_id", "route", "session_id", "user_id", "meta"})
#: ``{name}`` or ``{meta.key}`` in a template; ``{{`` and ``}}`` are literal braces.
PROMPT_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_]+)((?:\.[A-Za-z0-9_-]+)*)\}")


def check_route_name(value: str) -> str:
    """``value`` if it is a valid route name, else ``ValueError`` with the rule."""
    return check_name(value, ROUTE_NAME, ROUTE_NAME_RULE, "route name")


def check_prompt(value: str) -> str:
    """``value`` if every ``{placeholder}`` names an event field, else ``ValueError``."""
    for found in PROMPT_PLACEHOLDER.finditer(value):
        name = found.group(1)
        if name is None:
            continue
        if name not in PROMPT_FIELDS or (found.group(2) and name != "meta"):
            fields = ", ".join("{" + f + "}" for f in sorted(PROMPT_FIELDS))
            raise ValueError(
                f"unknown placeholder {found.group(0)!r} (fields: {fields}, {{meta.KEY}}; "
                "write {{ and }} for literal braces) / 模板占位符未知"
            )
    stray = PROMPT_PLACEHOLDER.sub("", value)
    if "{" in stray or "}" in stray:
        raise ValueError("a lone '{' or '}' in the prompt: write {{ or }} / 模板中有未配对的花括号")
    return value


class HandlerConfig(_Section):
    """What handles a route's events: exactly one of ``intent`` or ``prompt``."""

    #: An intent of the offline rule brain (built-in or from ``brain.intents``).
    intent: str | None = Field(default=None, min_length=1, max_length=64)
    #: A template for the model: ``{content}``, ``{type}``, ``{msg_id}``, ``{route}``,
    #: ``{session_id}``, ``{user_id}``, ``{meta}`` (JSON) and ``{meta.KEY}``.
    prompt: str | None = Field(default=None, min_length=1, max_length=20_000)

    @field_validator("prompt")
    @classmethod
    def _check_prompt(cls, value: str | None) -> str | None:
        return None if value is None else check_prompt(value)

    @model_validator(mode="after")
    def _one_handler(self) -> HandlerConfig:
        if (self.intent is None) == (self.prompt is None):
            raise ValueError(
                "a handler needs exactly one of 'intent' or 'prompt' / 需要 intent 或 prompt 之一"
            )
        return self


def _session(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return validate_session_id(value)
    except InvalidIdError as exc:  # a ValueError for pydantic, so the key is named
        raise ValueError(exc.message) from None


def _user(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return validate_user_id(value)
    except InvalidIdError as exc:
        raise ValueError(exc.message) from None


class RouteConfig(_Section):
    """One route: where its events go and who handles them."""

    #: The session of its events unless the body names one; ``None``: ``events-ROUTE``.
    session_id: str | None = None
    user_id: str | None = None
    #: ``None``: the agent answers the event's content as any message.
    handler: HandlerConfig | None = None
    #: This route's HMAC key (instead of ``webhooks.secret``); kept out of ``repr``.
    secret: str | None = Field(default=None, repr=False)

    @field_validator("session_id")
    @classmethod
    def _check_session(cls, value: str | None) -> str | None:
        return _session(value)

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str | None) -> str | None:
        return _user(value)

    @field_validator("secret")
    @classmethod
    def _empty_secret_is_none(cls, value: str | None) -> str | None:
        return value or None


class WebhooksConfig(_Section):
    """Inbound events (``POST /v1/events``, ``POST /v1/events/{route}``)."""

    #: The HMAC-SHA256 key every route without its own needs signatures with; ``None``:
    #: unsigned. Use ``${HERMES_WEBHOOK_SECRET}``; kept out of ``repr``.
    secret: str | None = Field(default=None, repr=False)
    #: How long a delivered ``(route, msg_id)`` is remembered (senders retry for days).
    dedupe_hours: float = Field(default=72.0, gt=0, le=24 * 365)
    #: Seconds a signature's timestamp may be off the server's clock, either way.
    signature_tolerance_seconds: int = Field(default=300, ge=1, le=3600)
    routes: dict[str, RouteConfig] = Field(default_factory=dict)

    @field_validator("secret")
    @classmethod
    def _empty_secret_is_none(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("routes", mode="before")
    @classmethod
    def _check_routes(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name in value:
                check_route_name(str(name))
            return {name: {} if route is None else route for name, route in value.items()}
        return value

    def route(self, name: str) -> RouteConfig:
        """The route called ``name`` (an unconfigured one: the defaults)."""
        return self.routes.get(name) or RouteConfig()

    def secret_of(self, name: str) -> str | None:
        """The key signatures of route ``name`` are checked with (``None``: unsigned)."""
        return self.route(name).secret or self.secret
