"""Who may use which tool: users → roles → scopes from ``rbac:`` config (seed 003 §2.2).

A tool declares the scopes it requires (``Tool.permissions``, e.g. ``("hr:salary:read",)``); a
user holds the scopes of their roles and of every role those inherit. A call is allowed when the
user holds EVERY required scope ("set intersection", seed 003 §2.2). A tool that requires none
is open to everyone, RBAC or not.

Scope matching (case-sensitive; a scope is ``segment(:segment)*``):

- a held scope equal to the required one grants it;
- ``*`` grants every scope;
- ``x:*`` grants ``x`` itself and every scope below it (``x:read``, ``x:read:own``), by whole
  segments: ``order:*`` does not grant ``orders:read``;
- a required scope is read literally: a tool requiring ``x:*`` is granted only by ``x:*`` or a
  broader wildcard (``*``, or ``y:*`` when ``x`` starts with ``y:``), never by ``x:read``.

Who holds what (:meth:`Authorizer.from_roles` takes plain mappings; ``tools/`` never reads the
configuration: ``hermes.config.schema.RbacConfig`` resolves inherited roles and
``hermes.agent.factory.build_authorizer`` builds the authorizer of an ``rbac:`` section):

- a listed user holds the scopes of the roles listed for them, and only those;
- every other user, and an anonymous caller (``user_id=None``), holds the default role's
  scopes, or none when there is no default role.

With ``rbac.enabled: false`` (the default) the agent gets :meth:`Authorizer.allow_all`: everything
is allowed, nothing is audited, :meth:`Authorizer.filter_tools` returns all tools. It is always
an :class:`Authorizer` (never ``None``) so callers need no branch; a caller on a hot path may
test :attr:`Authorizer.enabled` to skip it altogether.

Use::

    authorizer = Authorizer.from_roles(
        {"staff": frozenset({"order:read"}), "root": frozenset({"*"})},  # inheritance resolved
        users={"alice": ["root"]},
        default_role="staff",
        audit=AuditLog(path),
    )
    offered = authorizer.filter_tools(user_id, registry)      # what the model is shown
    authorizer.check(user_id, tool, session_id=s, trace_id=t)  # before a call runs; may raise
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hermes.errors import PermissionDeniedError
from hermes.observe import get_logger
from hermes.tools.audit import AuditLog

__all__ = ["Authorizer", "scope_grants"]

logger = get_logger("tools")

_NO_SCOPES: frozenset[str] = frozenset()


def scope_grants(held: str, required: str) -> bool:
    """Whether the held scope ``held`` grants ``required`` (the rules in the module docstring)."""
    if held in (required, "*"):
        return True
    if held.endswith(":*"):
        stem = held[:-2]
        return required == stem or required.startswith(stem + ":")
    return False


@dataclass(frozen=True, slots=True)
class _Grant:
    """One user's scopes, compiled for matching: exact scopes, wildcard stems, or everything."""

    scopes: frozenset[str]
    exact: frozenset[str]
    #: ``"x"`` for each held ``x:*``.
    stems: tuple[str, ...]
    everything: bool

    @classmethod
    def of(cls, scopes: frozenset[str]) -> _Grant:
        stems = tuple(sorted(s[:-2] for s in scopes if s.endswith(":*")))
        return cls(scopes, scopes, stems, "*" in scopes)

    def missing(self, required: Iterable[str]) -> tuple[str, ...]:
        """The required scopes this grant lacks, in the tool's order, without duplicates."""
        if self.everything:
            return ()
        lacking: list[str] = []
        for scope in required:
            if scope in self.exact or scope in lacking:
                continue
            if any(scope == stem or scope.startswith(stem + ":") for stem in self.stems):
                continue
            lacking.append(scope)
        return tuple(lacking)


_NOTHING = _Grant.of(_NO_SCOPES)


class Authorizer:
    """Decides whether a user may use a tool, and writes each decision to the audit log.

    Build it with :meth:`from_roles` (or :meth:`allow_all`). Immutable after construction and
    safe to share between threads and tasks; per-user scopes are computed once.
    """

    __slots__ = ("_audit", "_default", "_grants", "enabled")

    def __init__(
        self,
        *,
        enabled: bool,
        user_scopes: Mapping[str, frozenset[str]],
        default_scopes: frozenset[str],
        audit: AuditLog | None,
    ) -> None:
        """Prefer :meth:`from_roles`. ``user_scopes``: every listed user's resolved scopes;
        ``default_scopes``: what everybody else holds."""
        self.enabled = enabled
        self._audit = audit if enabled else None
        # Listed users only (bounded by the configuration); unlisted ones share one grant, so
        # no per-request id ever grows this mapping.
        self._grants = {user: _Grant.of(scopes) for user, scopes in user_scopes.items()}
        self._default = _Grant.of(default_scopes) if default_scopes else _NOTHING

    @classmethod
    def from_roles(
        cls,
        roles: Mapping[str, Iterable[str]],
        *,
        users: Mapping[str, Iterable[str]],
        default_role: str | None = None,
        audit: AuditLog | None = None,
    ) -> Authorizer:
        """An enabled authorizer from plain mappings.

        ``roles``: each role's scopes, those of the roles it inherits already included (the
        configuration resolves inheritance); ``users``: each listed user's role names;
        ``default_role``: the role of everybody else (``None``: they hold no scope).
        ``audit`` receives one record per decision on a permission-protected tool; ``None``
        audits nothing. A role named but not in ``roles`` raises ``ValueError``.
        """
        scopes = {role: frozenset(held) for role, held in roles.items()}
        named = [*(r for held in users.values() for r in held), *filter(None, [default_role])]
        unknown = sorted({role for role in named if role not in scopes})
        if unknown:
            raise ValueError(f"unknown roles: {', '.join(unknown)}")
        user_scopes = {
            user: frozenset().union(*(scopes[role] for role in held))
            for user, held in users.items()
        }
        default = scopes[default_role] if default_role else _NO_SCOPES
        return cls(enabled=True, user_scopes=user_scopes, default_scopes=default, audit=audit)

    @classmethod
    def allow_all(cls) -> Authorizer:
        """A disabled authorizer: every tool allowed for everyone, nothing audited."""
        return cls(enabled=False, user_scopes={}, default_scopes=_NO_SCOPES, audit=None)

    @property
    def audit(self) -> AuditLog | None:
        """Where decisions are written (``None`` when disabled or not auditing)."""
        return self._audit

    def scopes_of(self, user_id: str | None) -> frozenset[str]:
        """The scopes ``user_id`` holds (roles and inherited roles; as configured, wildcards
        included). Empty when RBAC is disabled: nothing is enforced then."""
        return self._grant(user_id).scopes

    def allowed(self, user_id: str | None, tool: Any) -> bool:
        """Whether ``user_id`` may use ``tool`` (any object; ``permissions`` read if present)."""
        required = _required(tool)
        if not required or not self.enabled:
            return True
        return not self._grant(user_id).missing(required)

    def filter_tools(self, user_id: str | None, tools: Iterable[Any]) -> list[Any]:
        """The tools ``user_id`` may be offered, in the given order (seed 004 §4.1: tools the user
        may not use are not offered to the model at all). Writes no audit record."""
        if not self.enabled:
            return list(tools)
        grant = self._grant(user_id)
        return [tool for tool in tools if not (req := _required(tool)) or not grant.missing(req)]

    def check(
        self, user_id: str | None, tool: Any, *, session_id: str = "", trace_id: str = ""
    ) -> None:
        """Refuse a call before anything runs: raises :class:`PermissionDeniedError` naming the
        missing scopes. Every decision (allow and deny) on a tool that requires scopes is
        written to the audit log; calls of open tools are not audited."""
        required = _required(tool)
        if not required or not self.enabled:
            return
        missing = self._grant(user_id).missing(required)
        name = str(getattr(tool, "name", tool))
        if self._audit is not None:
            self._audit.write(
                {
                    "time": _utc_now(),
                    "user": user_id,
                    "tool": name,
                    "decision": "deny" if missing else "allow",
                    "required": list(required),
                    "missing": list(missing),
                    "session_id": session_id,
                    "trace_id": trace_id,
                }
            )
        if missing:
            logger.info("permission_denied", tool=name, user_id=user_id, missing=list(missing))
            noun = "scope" if len(missing) == 1 else "scopes"
            raise PermissionDeniedError(
                f"permission denied for tool {name!r}: the user lacks the required {noun} "
                + ", ".join(missing),
                tool=name,
                missing=missing,
                user_id=user_id,
            )

    def _grant(self, user_id: str | None) -> _Grant:
        if user_id is None:
            return self._default
        return self._grants.get(user_id, self._default)

    def __repr__(self) -> str:
        state = "enabled" if self.enabled else "disabled"
        return f"Authorizer({state}, users={len(self._grants)})"


def _required(tool: Any) -> tuple[str, ...]:
    # Duck-typed: any object with a ``permissions`` sequence (a Tool, an MCP-adapted tool …).
    permissions = getattr(tool, "permissions", None)
    if not permissions:
        return ()
    if isinstance(permissions, str):  # ``permissions="a:b"``: one scope, not its characters
        return (permissions,)
    return tuple(permissions)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
