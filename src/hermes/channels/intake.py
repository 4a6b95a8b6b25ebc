"""The one inbound path of every channel: validate → dedupe by ``msg_id`` → ``Message`` → the
agent (DESIGN.md, "Layers": channels/intake.py).

    intake = Intake(agent)
    message = intake.message("15乘以27？", channel="http", session_id=sid, user_id=uid)
    result = await intake.submit(message, on_event=events.append, busy="reject")

:class:`RecentMessages` is the in-process guard against the same ``msg_id`` delivered twice
while a process runs (a channel retrying a message it already handed in); inbound *events*
have their own durable dedupe (``hermes.channels.dedupe``) in front of this one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from hermes.errors import InvalidIdError, InvalidInputError, SessionBusyError
from hermes.messages import Message
from hermes.session.ids import new_session_id, validate_session_id, validate_user_id

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.agent.events import AgentEvent
    from hermes.agent.result import RunResult

#: How many recent message ids the in-process guard remembers.
DEFAULT_RECENT = 10_000
BusyPolicy = Literal["enqueue", "reject"]


class DuplicateMessageError(InvalidInputError):
    """A message whose ``msg_id`` was handed in already (nothing of it runs again)."""

    status = 409


class RecentMessages:
    """The last ``size`` message ids seen (bounded: the oldest is forgotten first)."""

    def __init__(self, size: int = DEFAULT_RECENT) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self._size = size
        self._ids: OrderedDict[str, None] = OrderedDict()

    def claim(self, msg_id: str) -> bool:
        """True the first time ``msg_id`` is seen, False while it is remembered."""
        if msg_id in self._ids:
            return False
        self._ids[msg_id] = None
        if len(self._ids) > self._size:
            self._ids.popitem(last=False)
        return True

    def forget(self, msg_id: str) -> None:
        """Make ``msg_id`` new again (a message refused before it ran may be sent again)."""
        self._ids.pop(msg_id, None)

    def __len__(self) -> int:
        return len(self._ids)


class Intake:
    """The inbound path of one agent (one per service; every channel goes through it)."""

    def __init__(self, agent: Agent, *, recent: int = DEFAULT_RECENT) -> None:
        self.agent = agent
        self.recent = RecentMessages(recent)

    def message(
        self,
        text: object,
        *,
        channel: str,
        session_id: str | None = None,
        user_id: str | None = None,
        trace_id: str | None = None,
    ) -> Message:
        """A checked request ``Message``: the text as the agent takes it, valid ids, and a new
        session id when none is given. Raises ``InvalidInputError`` / ``InvalidIdError``."""
        checked = self.agent.check_message(text)
        sid = new_session_id() if session_id is None else validate_session_id(session_id)
        uid = None if user_id is None else validate_user_id(user_id)
        return Message.request(
            checked, channel=channel, session_id=sid, user_id=uid, trace_id=trace_id
        )

    async def submit(
        self,
        message: Message,
        *,
        on_event: Callable[[AgentEvent], None] | None = None,
        busy: BusyPolicy = "enqueue",
    ) -> RunResult:
        """Run the turn of ``message``; raises ``DuplicateMessageError`` for a ``msg_id`` seen
        already, ``SessionBusyError`` per ``busy`` (then the id may be sent again)."""
        if not self.recent.claim(message.msg_id):
            raise DuplicateMessageError(
                f"message {message.msg_id!r} was received already / 该消息已收到，不再重复处理"
            )
        try:
            return await self.agent.run_message(message, on_event=on_event, busy=busy)
        except (InvalidInputError, InvalidIdError, SessionBusyError):
            self.recent.forget(message.msg_id)  # refused before anything was stored
            raise
