"""The typed events a turn emits, in order; the CLI and the HTTP API render them.

A turn starts with ``TurnStarted`` and ends with exactly one ``TurnFinished`` (which carries
the :class:`~hermes.agent.result.RunResult`, also for turns that failed honestly); a turn that
raises (a bug, a cancelled caller) ends the stream with that exception instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hermes.agent.result import RunResult


@dataclass(slots=True, frozen=True)
class TurnStarted:
    session_id: str
    trace_id: str
    msg_id: str
    type: Literal["turn_started"] = "turn_started"


@dataclass(slots=True, frozen=True)
class StateChanged:
    session_id: str
    source: str
    dest: str
    trigger: str
    type: Literal["state_changed"] = "state_changed"


@dataclass(slots=True, frozen=True)
class ModelCallStarted:
    iteration: int
    model: str
    type: Literal["model_call_started"] = "model_call_started"


@dataclass(slots=True, frozen=True)
class ModelCallFinished:
    iteration: int
    model: str
    tool_calls: int
    cost_ms: float
    type: Literal["model_call_finished"] = "model_call_finished"


@dataclass(slots=True, frozen=True)
class TextDelta:
    """A piece of the reply while a streaming model is still writing it."""

    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(slots=True, frozen=True)
class ToolCallStarted:
    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    type: Literal["tool_call_started"] = "tool_call_started"


@dataclass(slots=True, frozen=True)
class ToolCallFinished:
    call_id: str
    name: str
    ok: bool
    cost_ms: float
    error_type: str | None = None
    summary: str | None = None
    type: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(slots=True, frozen=True)
class TurnFinished:
    result: RunResult
    type: Literal["turn_finished"] = "turn_finished"


AgentEvent = (
    TurnStarted
    | StateChanged
    | ModelCallStarted
    | ModelCallFinished
    | TextDelta
    | ToolCallStarted
    | ToolCallFinished
    | TurnFinished
)
