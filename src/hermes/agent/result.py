"""What a turn returns (``hermes run --json`` prints exactly ``RunResult.to_json_dict()``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from hermes.models.base import Usage

TurnOutcome = Literal["ok", "error", "max_iterations", "timeout", "refused"]


@dataclass(slots=True)
class ToolCallRecord:
    """One tool call made during a turn, as a caller sees it."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    call_id: str = ""
    error_type: str | None = None
    duration_ms: float = 0.0
    #: The arguments memory filled in (seed 001 §6.1–6.2), one ``{"name", "value", "source",
    #: "origin", "memory_id"}`` each; None when the call is exactly as the model made it.
    #: Not part of ``RunResult.to_json_dict`` (the public JSON contract is unchanged).
    filled_from_memory: list[dict[str, Any]] | None = None


@dataclass(slots=True)
class RunResult:
    """The outcome of one turn.

    ``outcome`` is ``ok`` for a normal reply; otherwise the reply is an honest message to the
    user and ``error`` holds ``{"type", "message"}`` for programs.
    """

    reply: str
    session_id: str
    state: str
    trace_id: str
    msg_id: str = ""
    reply_msg_id: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    outcome: TurnOutcome = "ok"
    error: dict[str, str] | None = None
    iterations: int = 0
    model: str = ""
    #: The id of the approval this turn asked for (state ``awaiting_confirmation``), else None;
    #: pass it to ``Agent.approve``/``Agent.reject``.
    approval_id: str | None = None
    #: The calls waiting for that approval: ``{"tool", "arguments"}`` each.
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    #: Every tool call of the turn failed (unknown tool, invalid arguments, an error): nothing
    #: the model may have claimed was done. False when no call was made.
    tools_failed: bool = False
    #: ``{"prompt_tokens", "completion_tokens"}`` summed over the turn's model calls, when the
    #: model reported them; None otherwise.
    usage: dict[str, int] | None = None
    #: Calls to tools the client sent (``{"id", "name", "arguments"}`` each): not run here,
    #: the turn ended with them for the client to run (``hermes.agent.client_turn``).
    client_calls: list[dict[str, Any]] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        """The public JSON contract of ``hermes run --json`` and ``POST /v1/chat``."""
        data: dict[str, Any] = {
            "reply": self.reply,
            "session_id": self.session_id,
            "state": self.state,
            "tool_calls": [
                {"name": c.name, "arguments": c.arguments, "ok": c.ok} for c in self.tool_calls
            ],
            "trace_id": self.trace_id,
        }
        if self.error is not None:
            data["error"] = self.error
        if self.tools_failed:
            data["tools_failed"] = True
        if self.usage is not None:
            data["usage"] = dict(self.usage)
        if self.client_calls:
            data["client_tool_calls"] = [dict(c) for c in self.client_calls]
        if self.approval_id is not None:
            first = self.pending_calls[0] if self.pending_calls else {}
            approval: dict[str, Any] = {
                "id": self.approval_id,
                "tool": first.get("tool"),
                "arguments": first.get("arguments"),
            }
            if len(self.pending_calls) > 1:
                approval["calls"] = self.pending_calls
            data["approval"] = approval
        return data


def added_usage(total: dict[str, int] | None, usage: Usage | None) -> dict[str, int] | None:
    """``total`` (``RunResult.usage``) with one model call's ``usage`` added."""
    if usage is None:
        return total
    before = total or {"prompt_tokens": 0, "completion_tokens": 0}
    return {
        "prompt_tokens": before["prompt_tokens"] + usage.input_tokens,
        "completion_tokens": before["completion_tokens"] + usage.output_tokens,
    }
