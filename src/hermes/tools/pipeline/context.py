"""What one tool call carries through the pipeline besides its arguments: a frozen,
serializable :class:`CallContext` (STYLE §12: per-call context is data, not live objects).

Everything a step depends on — the authorizer, the idempotency store, the breakers, the cache,
memory — is handed to the step when the executor is built; the context holds only what differs
from call to call, so a call can be written to a queue and run by another process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.tools.base import ToolContext

__all__ = ["CallContext"]


@dataclass(frozen=True, slots=True)
class CallContext:
    """Who a call serves and what it may do.

    ``session_id``, ``user_id``, ``trace_id`` and ``call_id`` identify it (the authorizer, the
    idempotency keys and the cache scope read them); ``workspace`` is the tools' working
    directory; ``approved`` says a person approved this call (a ``requires_approval`` tool runs
    only then). ``extras`` are the tools' own settings (``http_allow``, ``timezone``,
    ``protected_paths``, …): JSON data only, handed to a tool as ``ToolContext.extras``.
    """

    session_id: str = ""
    user_id: str | None = None
    trace_id: str = ""
    call_id: str = ""
    workspace: str = ""
    approved: bool = False
    extras: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_tool_context(cls, ctx: ToolContext, *, approved: bool = False) -> CallContext:
        """The call context of a :class:`ToolContext` (its ``extras`` become the settings)."""
        return cls(
            session_id=ctx.session_id,
            user_id=ctx.user_id,
            trace_id=ctx.trace_id,
            call_id=ctx.call_id,
            workspace=str(ctx.workspace),
            approved=approved,
            extras=ctx.extras,
        )

    def for_call(self, call_id: str, *, approved: bool | None = None) -> CallContext:
        """This context for the call ``call_id`` (and, when given, ``approved``): what a turn
        makes for each call of a response (``dataclasses.replace`` does the same, slower)."""
        return CallContext(
            self.session_id,
            self.user_id,
            self.trace_id,
            call_id,
            self.workspace,
            self.approved if approved is None else approved,
            self.extras,
        )

    def tool_context(self) -> ToolContext:
        """The :class:`ToolContext` a tool receives (a copy of the settings: a tool may not
        change what the next call sees)."""
        return ToolContext(
            session_id=self.session_id,
            user_id=self.user_id,
            trace_id=self.trace_id,
            call_id=self.call_id,
            workspace=self.workspace_path(),
            extras=dict(self.extras),
        )

    def workspace_path(self) -> Path:
        """The tools' working directory (the current one when none was given)."""
        return Path(self.workspace) if self.workspace else Path.cwd()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (``from_dict`` reads it back); ``ValueError`` when a setting in
        ``extras`` is not JSON data."""
        try:
            extras = json.loads(json.dumps(dict(self.extras), allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a call context's extras must be JSON data: {exc}") from exc
        return {
            "session_id": self.session_id,
            "user_id": self.user_id,
            "trace_id": self.trace_id,
            "call_id": self.call_id,
            "workspace": self.workspace,
            "approved": self.approved,
            "extras": extras,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallContext:
        """The context :meth:`to_dict` wrote; ``ValueError`` naming the first wrong field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a call context must be an object, got {type(data).__name__}")
        unknown = set(data) - _FIELDS
        if unknown:
            raise ValueError(f"unknown call context field(s): {', '.join(sorted(unknown))}")
        for name in ("session_id", "trace_id", "call_id", "workspace"):
            if not isinstance(data.get(name, ""), str):
                raise ValueError(f"call context field {name!r} must be a string")
        user_id = data.get("user_id")
        if user_id is not None and not isinstance(user_id, str):
            raise ValueError("call context field 'user_id' must be a string or null")
        approved = data.get("approved", False)
        if not isinstance(approved, bool):
            raise ValueError("call context field 'approved' must be true or false")
        extras = data.get("extras", {})
        if not isinstance(extras, Mapping):
            raise ValueError("call context field 'extras' must be an object")
        return cls(
            session_id=data.get("session_id", ""),
            user_id=user_id,
            trace_id=data.get("trace_id", ""),
            call_id=data.get("call_id", ""),
            workspace=data.get("workspace", ""),
            approved=approved,
            extras=dict(extras),
        )


_FIELDS = frozenset(CallContext.__dataclass_fields__)
