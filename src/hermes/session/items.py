"""Session identity, session state and conversation items (seed 001 §2.1, §2.3).

Identity (who a session belongs to) is kept apart from volatile state (FSM state, scratch data,
counters). Items are the append-only event log of a conversation: nothing rewrites them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ItemRole = Literal["system", "user", "assistant", "tool"]
ItemKind = Literal["text", "tool_call", "tool_result", "summary", "state"]


@dataclass(slots=True)
class Item:
    """One entry of a conversation log.

    - ``text``: a user or assistant message (``content`` is the text).
    - ``tool_call``: an assistant's call; ``content`` is the JSON arguments, ``tool_name`` and
      ``tool_call_id`` are set. Consecutive assistant items form one assistant message.
    - ``tool_result``: ``content`` is what the model reads; ``tool_call_id`` pairs it.
    - ``summary``: a rolling summary; ``meta["covers_until"]`` is the last seq it folds in.
    - ``state``: a marker of a state change worth keeping in the log (e.g. an approval).

    ``seq`` and ``created_at`` are assigned by the store on append. ``tokens`` is not data: the
    context builder's memo of what the item costs in a request (-1 until counted), so a window
    the store keeps in memory is not counted again on every turn (``hermes.session.context``).
    """

    role: ItemRole
    kind: ItemKind
    content: str
    tool_call_id: str | None = None
    tool_name: str | None = None
    sticky: bool = False
    trace_id: str | None = None
    meta: dict[str, Any] | None = None
    seq: int = 0
    created_at: float = 0.0
    tokens: int = field(default=-1, init=False, repr=False, compare=False)


@dataclass(slots=True)
class SessionState:
    """The volatile part of a session, saved after every step of a turn."""

    fsm_state: str = "idle"
    state_entered_at: float = 0.0
    scratch: dict[str, Any] = field(default_factory=dict)
    token_estimate: int = 0
    #: The tool call(s) waiting for a person's approval (JSON data, see
    #: ``hermes.agent.approvals.PendingApproval``), or None (seed 004 §4.3).
    approval: dict[str, Any] | None = None


@dataclass(slots=True)
class SessionRecord:
    """A session: stable identity plus its current state and counters."""

    session_id: str
    user_id: str | None
    title: str | None
    created_at: float
    last_active: float
    item_count: int = 0
    last_seq: int = 0
    state: SessionState = field(default_factory=SessionState)


@dataclass(slots=True)
class ContextSlice:
    """What a turn reads from the store: never more than the window needs (DESIGN principle 5).

    ``window`` holds the items of the last N rounds (a round starts at a user ``text`` item),
    ``summary`` the latest summary item, ``sticky`` the sticky items older than the window.
    ``backlog`` counts items that are older than the window and not yet folded into the summary,
    and ``backlog_from``/``window_start`` bound them (seqs), so a summarizer can fetch them.
    """

    sticky: list[Item]
    summary: Item | None
    window: list[Item]
    backlog: int = 0
    backlog_from: int = 0
    window_start: int = 0
