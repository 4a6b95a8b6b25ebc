"""The tool contract: what a tool is, what a call gets, and what every call returns.

A failed call is data, not an exception (DESIGN principle 2): ``ToolResult(ok=False, error=...)``
goes back to the model so it can correct itself, and to the log and metrics.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hermes.tools.policies.breaker import BreakerPolicy
from hermes.tools.policies.retry import RetryPolicy

SandboxMode = Literal["none", "process"]
#: An attribute a tool function may carry: ``check(arguments) -> None`` raising
#: ``ToolArgumentError`` for a call that must never run (the shell deny-list). The approval
#: step runs it before a person is asked, so nobody is asked to approve what would be refused
#: anyway (``hermes.tools.pipeline.approval``).
PRECHECK_ATTRIBUTE = "__hermes_precheck__"


class ToolErrorInfo(BaseModel):
    """The structured error of a failed call; ``type`` is a stable code (``invalid_arguments``,
    ``unknown_tool``, ``timeout``, ``execution_error``, ``permission_denied`` …)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    message: str


class ToolResult(BaseModel):
    """The outcome of one tool call (DESIGN "Core data")."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    output: Any = None
    error: ToolErrorInfo | None = None
    summary: str | None = None
    duration_ms: float = 0.0
    attempts: int = 1
    cached: bool = False

    @classmethod
    def failure(cls, error_type: str, message: str, **fields: Any) -> ToolResult:
        return cls(ok=False, error=ToolErrorInfo(type=error_type, message=message), **fields)

    def to_model_text(self) -> str:
        """The tool message the model reads: summary first (seed 002 §2.1), then the data.

        Always a JSON object, so a model never mistakes a result for an instruction.
        """
        payload: dict[str, Any] = {"ok": self.ok}
        if self.summary:
            payload["summary"] = self.summary
        if self.ok:
            payload["output"] = self.output
        elif self.error is not None:
            payload["error"] = {"type": self.error.type, "message": self.error.message}
        return json.dumps(payload, ensure_ascii=False, default=str)


@dataclass(slots=True)
class ToolContext:
    """What the runtime tells a tool about the call it is serving.

    A tool function receives it when it declares a parameter annotated ``ToolContext``; that
    parameter never appears in the tool's JSON Schema.
    """

    session_id: str = ""
    user_id: str | None = None
    trace_id: str = ""
    call_id: str = ""
    workspace: Path = field(default_factory=Path.cwd)
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Tool:
    """A registered tool: its contract (name, description, JSON Schema) and its implementation.

    ``fn`` may be sync (run in a worker thread) or async. ``context_param`` names the parameter
    that receives the :class:`ToolContext`, if any. ``parallel_safe=False`` makes concurrent
    calls of one model response run in order.

    Execution policies (all off by default; see ``hermes.tools.pipeline`` for the chain):
    ``retry`` and ``circuit_breaker`` (``hermes.tools.policies``); ``idempotency_key`` — the
    argument names whose values make the key of a call whose result is stored and replayed
    (``()``: all arguments; ``None``: not idempotent) for ``idempotency_ttl`` seconds;
    ``cache_ttl`` — seconds an identical successful result is reused (``None``: never);
    ``permissions`` — scopes the caller needs; ``requires_approval`` — a person must approve
    each call; ``sandbox`` — ``"process"`` runs the call in a separate, limited process;
    ``max_output_chars`` — this tool's text-output limit (else the caller's); ``parser`` —
    turns the raw output into the structured one; ``post_validate`` — checks the parsed
    output and raises if it is wrong; ``side_effects`` — whether a call changes anything
    outside itself: ``False`` for a read-only tool (the clock, the calculator, file reads),
    a callable ``arguments -> bool`` when it depends on the call (``http_request`` GET/HEAD),
    ``True`` (the default: unknown is taken as "it may") — a plan node of a read-only tool
    cut off mid-call is simply run again on resume (DESIGN.md, "Multi-call plans").
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    is_async: bool = False
    output_schema: dict[str, Any] | None = None
    timeout: float = 10.0
    summary: Callable[[Any], str] | None = None
    context_param: str | None = None
    parallel_safe: bool = True
    toolset: str = "default"
    retry: RetryPolicy | None = None
    circuit_breaker: BreakerPolicy | None = None
    idempotency_key: tuple[str, ...] | None = None
    idempotency_ttl: float = 86_400.0
    cache_ttl: float | None = None
    permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    sandbox: SandboxMode = "none"
    max_output_chars: int | None = None
    parser: Callable[[Any], Any] | None = None
    post_validate: Callable[[Any], Any] | None = None
    side_effects: bool | Callable[[Mapping[str, Any]], bool] = True

    def has_side_effects(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with ``arguments`` may change anything (``side_effects``; a
        callable that raises is taken as "it may")."""
        declared = self.side_effects
        if isinstance(declared, bool):
            return declared
        try:
            return bool(declared(arguments))
        except Exception:  # noqa: BLE001 - a broken declaration must never make a call "safe"
            return True
