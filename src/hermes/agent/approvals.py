"""Human approval of tool calls (seed 004 §4.3; seed 000 §2.1).

A call to a ``requires_approval`` tool is not run: the turn stores it with an
``approval_pending`` result, keeps a :class:`PendingApproval` with the session state (it
survives a restart), moves the session to ``awaiting_confirmation`` and asks the person.
Their next message decides (:func:`classify`): a yes-word runs the call(s), a no-word drops
them, anything else is a correction the model hears about. ``Agent.approve``/``reject`` take
the same paths by approval id. A pending approval expires with the ``awaiting_confirmation``
state's timeout.

Which calls wait is the pipeline's decision (``hermes.tools.pipeline.approval``: after
validation, authorization and the tool's precheck, it raises ``ApprovalRequired``); this
module is the human side — the wording, the classification of the answer, the expiry.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Literal

from hermes.tools.base import Tool, ToolResult
from hermes.tools.registry import ToolRegistry

__all__ = [
    "NO_WORDS",
    "YES_WORDS",
    "Decision",
    "PendingApproval",
    "PendingCall",
    "ask_text",
    "cancelled_text",
    "classify",
    "correction_note",
    "impact",
    "new_approval_id",
    "pending_result",
]

Decision = Literal["approve", "reject", "correct"]

YES_WORDS = frozenset(
    {"好的", "好", "是", "是的", "确认", "可以", "执行"}
    | {"yes", "y", "ok", "okay", "sure", "confirm", "approve", "go ahead"}
)
NO_WORDS = frozenset({"不", "不要", "取消", "算了", "否"} | {"no", "n", "cancel", "reject", "stop"})
#: Trailing punctuation ignored when matching a whole message against the words above.
_TRAILING = re.compile(r"[\s。！!.?？，,~～…]+$")
_MAX_IMPACT = 300
_MAX_DESCRIPTION = 120


@dataclass(slots=True)
class PendingCall:
    """One proposed call: what would run and a one-line description of its effect."""

    call_id: str
    tool: str
    arguments: dict[str, Any]
    impact: str


@dataclass(slots=True)
class PendingApproval:
    """The call(s) of one model response waiting for a person; stored as JSON data."""

    approval_id: str
    calls: list[PendingCall]
    created_at: float
    expires_at: float
    #: The language of the message that led to the proposal (for the API paths' texts).
    chinese: bool = False
    trace_id: str = ""

    def expired(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) >= self.expires_at

    def to_data(self) -> dict[str, Any]:
        return {
            "approval_id": self.approval_id,
            "calls": [
                {"call_id": c.call_id, "tool": c.tool, "arguments": c.arguments, "impact": c.impact}
                for c in self.calls
            ],
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "chinese": self.chinese,
            "trace_id": self.trace_id,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any] | None) -> PendingApproval | None:
        """The approval stored in a session state, or None (also for unreadable data: a
        damaged record never runs anything)."""
        if not data:
            return None
        try:
            calls = [
                PendingCall(
                    str(c["call_id"]), str(c["tool"]), dict(c["arguments"]), str(c["impact"])
                )
                for c in data["calls"]
            ]
            return cls(
                str(data["approval_id"]),
                calls,
                float(data["created_at"]),
                float(data["expires_at"]),
                bool(data.get("chinese", False)),
                str(data.get("trace_id", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None


def new_approval_id() -> str:
    """A short random id: ``ap-`` and 10 hex digits."""
    return "ap-" + secrets.token_hex(5)


def classify(text: str) -> Decision:
    """Yes, no, or a correction: the whole trimmed message, case-insensitive, trailing
    punctuation ignored — never a substring ("不确认" is a correction, not a yes)."""
    word = _TRAILING.sub("", text.strip()).strip().lower()
    word = " ".join(word.split())
    if word in YES_WORDS:
        return "approve"
    if word in NO_WORDS:
        return "reject"
    return "correct"


def pending_result(approval_id: str, tool: str) -> ToolResult:
    """The result stored for a proposed call (the log's call/result pairs stay complete)."""
    return ToolResult.failure(
        "approval_pending",
        f"the call of {tool!r} was not run: it waits for the user's approval ({approval_id})",
    )


def impact(tool: Tool, arguments: dict[str, Any]) -> str:
    """One readable line: the tool, its arguments and what it does."""
    return _clip(f"{tool.name} {_arguments_text(arguments)} — {_description(tool)}", _MAX_IMPACT)


def ask_text(approval: PendingApproval, tools: ToolRegistry, chinese: bool) -> str:
    """The reply that says what would run and asks the person to confirm (zh or en)."""
    lines = []
    for c in approval.calls:
        found = tools.get(c.tool)
        what = _description(found) if found is not None else ""
        args = _arguments_text(c.arguments)
        if chinese:
            lines.append(f"{c.tool}：{args}" + (f"（{what}）" if what else ""))
        else:
            lines.append(f"{c.tool} with {args}" + (f" ({what})" if what else ""))
    if len(lines) == 1:
        if chinese:
            return f"将要执行 {lines[0]}。确认执行吗？回复「确认」或「取消」。"
        return f"About to run {lines[0]}. Reply “yes” to run it or “no” to cancel."
    listed = "\n".join(f"{n}. {line}" for n, line in enumerate(lines, 1))
    if chinese:
        return f"将要执行以下 {len(lines)} 个操作：\n{listed}\n确认执行吗？回复「确认」或「取消」。"
    return (
        f"About to run {len(lines)} actions:\n{listed}\nReply “yes” to run them or “no” to cancel."
    )


def cancelled_text(approval: PendingApproval, chinese: bool) -> str:
    names = (
        "、".join(c.tool for c in approval.calls)
        if chinese
        else ", ".join(c.tool for c in approval.calls)
    )
    if chinese:
        return f"已取消：{names} 没有执行。"
    return f"Cancelled: {names} was not run."


def correction_note(approval: PendingApproval) -> str:
    """What the model is told when the person answered a proposal with a change."""
    proposed = "; ".join(
        f"{c.tool}({json.dumps(c.arguments, ensure_ascii=False)})" for c in approval.calls
    )
    return (
        f"The tool call(s) you proposed were NOT run: {proposed}. Instead of approving, the "
        "user asked for a change in the next message. Follow it: propose a corrected call "
        "if one is still needed (it will need approval again), or answer."
    )


def _description(tool: Tool) -> str:
    first = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
    return _clip(first.rstrip("。."), _MAX_DESCRIPTION)


def _arguments_text(arguments: dict[str, Any]) -> str:
    values = list(arguments.values())
    if len(values) == 1 and isinstance(values[0], str):
        return "`" + _clip(" ".join(values[0].split()), _MAX_IMPACT // 2) + "`"
    return _clip(json.dumps(arguments, ensure_ascii=False, default=str), _MAX_IMPACT // 2)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
