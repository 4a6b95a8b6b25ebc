"""The one envelope every channel speaks (seed 002 §1.2).

An HTTP call, a cron tick, a webhook alert, a CLI line and another agent's request all become a
``Message``. ``meta`` carries ``session_id``, ``user_id``, ``trace_id`` and, on a reply,
``reply_to`` (the ``msg_id`` of the request), so a whole exchange can be followed by one id.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MsgType = Literal["request", "response", "event", "ack"]
Role = Literal["user", "system", "agent"]


def new_id() -> str:
    """A new random id (32 hex characters) for messages and traces."""
    return uuid.uuid4().hex


class Message(BaseModel):
    """A unit of traffic into or out of Hermes."""

    model_config = ConfigDict(extra="forbid")

    msg_id: str = Field(default_factory=new_id, min_length=1, max_length=128)
    msg_type: MsgType = "request"
    channel: str = Field(default="python", min_length=1, max_length=64)
    role: Role = "user"
    content: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)
    timestamp: float = Field(default_factory=time.time)

    @classmethod
    def request(
        cls,
        content: str,
        *,
        channel: str = "python",
        session_id: str | None = None,
        user_id: str | None = None,
        trace_id: str | None = None,
        **extra: Any,
    ) -> Message:
        """A user's request as it enters a channel."""
        meta: dict[str, Any] = {k: v for k, v in extra.items() if v is not None}
        if session_id is not None:
            meta["session_id"] = session_id
        if user_id is not None:
            meta["user_id"] = user_id
        meta["trace_id"] = trace_id or new_id()
        return cls(channel=channel, content=content, meta=meta)

    @property
    def session_id(self) -> str | None:
        value = self.meta.get("session_id")
        return value if isinstance(value, str) else None

    @property
    def user_id(self) -> str | None:
        value = self.meta.get("user_id")
        return value if isinstance(value, str) else None

    @property
    def trace_id(self) -> str:
        """The trace this message belongs to; a request without one starts its own."""
        value = self.meta.get("trace_id")
        if not isinstance(value, str) or not value:
            value = self.msg_id
            self.meta["trace_id"] = value
        return value

    def reply(self, content: str, **meta: Any) -> Message:
        """The agent's response to this message, linked by ``reply_to`` and ``trace_id``."""
        linked: dict[str, Any] = {
            "reply_to": self.msg_id,
            "trace_id": self.trace_id,
            "session_id": self.session_id,
            "user_id": self.user_id,
        }
        linked.update(meta)
        return Message(
            msg_type="response",
            channel=self.channel,
            role="agent",
            content=content,
            meta={k: v for k, v in linked.items() if v is not None},
        )
