"""Memory's touch points in a turn, as one object (STYLE §13: optional features are null
objects, not ``if`` branches; seed 001 §5, seed 002 §2.2).

The :class:`~hermes.agent.turn_state.Runtime` holds one :class:`MemoryHook`, chosen when the
agent is built: :data:`NO_MEMORY` (this module: memory off, nothing happens) or
``hermes.agent.memory_step.MemoryTurns`` (an agent with a Memory). Each turn asks it to
:meth:`~MemoryHook.begin` and keeps the :class:`TurnMemory` it returns; the turn then calls
the same methods whether memory is on or off. In the order of a turn:

- ``begin`` — working memory and recall: this turn's memory and the note to show the model;
- ``tool_extras`` — what every tool call of the turn finds in ``ToolContext.extras`` (plain,
  serializable values: whether the user asked for something to be remembered);
- ``fill`` — a response's calls with missing required arguments filled from memory; then
  ``call_meta`` / ``result_notes`` / ``filled_for`` say what was filled;
- ``observe`` — the calls' results go into working memory;
- ``finish`` — working memory is saved into the session scratch (stored with the reply);
- ``learn_later`` — memories are learned from the user's text in the background.

This module stays light (it never imports ``hermes.memory``): an agent without memory loads
nothing of the memory package. The methods take plain values or a :class:`TurnFacts` — what
memory reads of a running turn, which ``TurnState`` satisfies — so nothing here imports the
turn's own modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from hermes.agent.result import ToolCallRecord
from hermes.models.base import ModelResponse, ToolCall
from hermes.session.items import SessionState
from hermes.tools.base import ToolResult
from hermes.tools.registry import ToolRegistry

__all__ = ["NO_MEMORY", "NO_TURN_MEMORY", "MemoryHook", "TurnFacts", "TurnMemory"]


class TurnFacts(Protocol):
    """What memory reads of a running turn (``hermes.agent.turn_state.TurnState`` fits)."""

    @property
    def session_id(self) -> str: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def trace_id(self) -> str: ...
    @property
    def chinese(self) -> bool: ...
    @property
    def deadline(self) -> float:
        """Event-loop time at which the turn's total timeout expires."""
        ...

    @property
    def state(self) -> SessionState: ...
    @property
    def records(self) -> list[ToolCallRecord]: ...


class TurnMemory:
    """What memory does in one turn; this base does nothing (memory off)."""

    __slots__ = ()

    def tool_extras(self) -> dict[str, Any]:
        """What this turn's tool calls get in ``ToolContext.extras`` from memory."""
        return {}

    def fill(self, registry: ToolRegistry, response: ModelResponse) -> ModelResponse:
        """``response`` with its calls' missing required arguments filled from memory."""
        return response

    def call_meta(self) -> dict[str, dict[str, Any]] | None:
        """Call id → what its stored ``tool_call`` item's meta gets (None: nothing filled)."""
        return None

    def result_notes(self) -> dict[str, str] | None:
        """Call id → the note its tool message carries (None: nothing filled)."""
        return None

    def filled_for(self, call_id: str) -> list[dict[str, Any]] | None:
        """The provenance of the arguments memory filled into one call (None: none)."""
        return None

    def observe(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Put each finished call into working memory."""

    def finish(self, scratch: dict[str, Any]) -> None:
        """Save working memory into the session's scratch (stored with the reply)."""

    def learn_later(self, turn: TurnFacts, text: str) -> None:
        """Learn memories from the user's own ``text`` (and habits) in the background."""


class MemoryHook:
    """Starts each turn's memory; this base is memory off (every turn gets the null one)."""

    __slots__ = ()

    async def begin(
        self,
        turn: TurnFacts,
        text: str,
        tools: ToolRegistry,
        budget_tokens: int,
    ) -> tuple[TurnMemory, str | None]:
        """This turn's memory and the note to show the model before the user's message
        (None: no note); ``tools`` are the agent's (the recall gate reads their names). Never
        raises: memory is a help, a turn goes on without it."""
        return NO_TURN_MEMORY, None


#: The turn memory of a turn with memory off (stateless: one for all).
NO_TURN_MEMORY = TurnMemory()
#: The hook of an agent without memory.
NO_MEMORY = MemoryHook()
