"""Who is calling: bearer keys → users and RBAC roles (DESIGN.md, HTTP, "Auth").

With ``server.api_keys`` every request sends ``Authorization: Bearer KEY`` (loopback too) and
acts as the key's user; without keys the service is anonymous and a body's ``user_id`` is taken
as given. :func:`acting_user` is the one check of "may this caller act for that user".
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request

from hermes.channels.http.errors import ApiError
from hermes.channels.http.state import Service, service
from hermes.config.schema import RbacConfig, UserConfig
from hermes.config.server import ApiKeyConfig
from hermes.session.ids import validate_user_id

ADMIN_ROLE = "admin"


@dataclass(frozen=True, slots=True)
class Caller:
    """The authenticated caller; ``user_id`` is ``None`` for an anonymous one."""

    user_id: str | None
    roles: frozenset[str] = frozenset()
    #: Stable id of the key used (never the key itself): scopes idempotency keys and limits.
    key_id: str | None = None

    @property
    def admin(self) -> bool:
        return ADMIN_ROLE in self.roles

    @property
    def scope(self) -> str:
        """The caller's name for per-caller records (idempotency keys, rate limits)."""
        if self.key_id is not None:
            return f"key:{self.key_id}"
        return "anonymous" if self.user_id is None else f"user:{self.user_id}"


def key_id_of(header: str, keys: tuple[ApiKeyConfig, ...]) -> str | None:
    """The id (index) of the key an ``Authorization: Bearer KEY`` header presents, else
    ``None``. Constant time per key, and every key compared: no timing hint of which matched."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    presented = token.strip().encode("utf-8")
    found: str | None = None
    for index, entry in enumerate(keys):
        if hmac.compare_digest(presented, entry.key.encode("utf-8")) and found is None:
            found = str(index)
    return found


async def authenticate(request: Request, svc: Annotated[Service, Depends(service)]) -> Caller:
    """The caller of ``request`` (a FastAPI dependency; ``async`` to stay off the thread
    pool); 401 without a valid key once keys exist."""
    keys = svc.settings.api_keys
    if not keys:
        return Caller(user_id=None)
    header = request.headers.get("authorization", "")
    key_id = key_id_of(header, keys)
    if key_id is None:
        scheme, _, token = header.partition(" ")
        sent = scheme.lower() == "bearer" and token.strip()
        raise ApiError(
            401,
            "unauthorized",
            "the API key is not valid / API 密钥无效"
            if sent
            else "send an API key: Authorization: Bearer KEY / 需要 API 密钥",
            headers={"WWW-Authenticate": "Bearer"},
        )
    entry = keys[int(key_id)]
    return Caller(user_id=entry.user, roles=frozenset(entry.roles), key_id=key_id)


def with_key_roles(rbac: RbacConfig, keys: tuple[ApiKeyConfig, ...]) -> RbacConfig:
    """``rbac`` with each key's user also holding the key's roles (those ``rbac.roles``
    defines; ``admin`` is also an HTTP role), so tool permissions follow the key's roles."""
    users = {user: list(entry.roles) for user, entry in rbac.users.items()}
    for entry in keys:
        held = users.setdefault(entry.user, [])
        held.extend(r for r in entry.roles if r in rbac.roles and r not in held)
    merged = {user: UserConfig(roles=roles) for user, roles in users.items()}
    return rbac.model_copy(update={"users": merged})


CallerDep = Annotated[Caller, Depends(authenticate)]


def acting_user(caller: Caller, requested: str | None) -> str | None:
    """The user a request acts as: the requested one (validated) when the caller may act for
    it, else the caller's own. 403 when a non-admin key names another user; 400 for an
    invalid id."""
    if requested is not None:
        requested = validate_user_id(requested)
    if caller.user_id is None:  # anonymous service: the request says who
        return requested
    if requested is None or requested == caller.user_id or caller.admin:
        return requested or caller.user_id
    raise ApiError(
        403,
        "forbidden",
        f"this key acts for user {caller.user_id!r}, not {requested!r} / 无权代表其他用户操作",
    )
