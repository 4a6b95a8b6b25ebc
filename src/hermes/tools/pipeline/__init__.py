"""The tool pipeline: one chain of small steps every tool call runs through (DESIGN "Layers →
tools"; the walk through one call is ``docs/tool-pipeline.md``).

- :class:`ToolExecutor` — builds the chain once and runs calls through it.
- :class:`Step` — ``async (call, next) -> ToolResult``; :class:`Call` is what travels.
- :class:`CallContext` — the frozen, serializable per-call context.
- Signals a tool or step raises on purpose: :class:`RetryWith`, :class:`ApprovalRequired`.
- The built-in steps, each in its own module: :class:`ValidateStep`, :class:`AuthorizeStep`,
  :class:`ApprovalStep`, :class:`CacheStep`, :class:`IdempotencyStep`, :class:`BreakerStep`,
  :class:`RunStep`.
- :class:`IdempotencyRecords` — where the idempotency step keeps its keys (the protocol; the
  SQLite backend is in ``hermes.storage.sqlite``); :class:`RecordsPerWorkspace` picks them by
  each call's workspace.
"""

from hermes.tools.pipeline.approval import ApprovalStep
from hermes.tools.pipeline.authorize import AuthorizeStep
from hermes.tools.pipeline.breaker import BreakerStep
from hermes.tools.pipeline.cache import CacheStep
from hermes.tools.pipeline.call import Call, Next, Step
from hermes.tools.pipeline.chain import STEP_ORDER, SignalMode, ToolExecutor, default_steps
from hermes.tools.pipeline.context import CallContext
from hermes.tools.pipeline.idempotency import IdempotencyStep
from hermes.tools.pipeline.idempotency_records import IdempotencyRecords, RecordsPerWorkspace
from hermes.tools.pipeline.output import json_safe
from hermes.tools.pipeline.results import refused, reused
from hermes.tools.pipeline.run import RunStep, SandboxUnavailableError
from hermes.tools.pipeline.signals import ApprovalRequired, RetryWith, ToolSignal
from hermes.tools.pipeline.validate import ValidateStep

__all__ = [
    "STEP_ORDER",
    "ApprovalRequired",
    "ApprovalStep",
    "AuthorizeStep",
    "BreakerStep",
    "CacheStep",
    "Call",
    "CallContext",
    "IdempotencyRecords",
    "IdempotencyStep",
    "Next",
    "RecordsPerWorkspace",
    "RetryWith",
    "RunStep",
    "SandboxUnavailableError",
    "SignalMode",
    "Step",
    "ToolExecutor",
    "ToolSignal",
    "ValidateStep",
    "default_steps",
    "json_safe",
    "refused",
    "reused",
]
