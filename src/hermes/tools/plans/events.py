"""What a plan run tells its watchers as it goes (the CLI's live table, the SSE of
``POST /v1/plans``): one :class:`PlanEvent` per change, in order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from hermes.tools.plan_runs import NodeStatus, RunError

__all__ = ["EventSink", "PlanEvent", "PlanEventKind", "ignore_events"]

#: ``plan_started`` (the run id is known), ``node`` (a node changed status),
#: ``compensation`` (a node's compensation ran: ``error`` when it failed), ``plan_finished``.
PlanEventKind = Literal["plan_started", "node", "compensation", "plan_finished"]


@dataclass(frozen=True, slots=True)
class PlanEvent:
    """One change of a run: ``node_id``/``status`` for a node, ``error`` when it failed."""

    kind: PlanEventKind
    run_id: str
    node_id: str | None = None
    status: NodeStatus | str | None = None
    error: RunError | None = None
    plan: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON data (the ``data:`` of an SSE event)."""
        data: dict[str, Any] = {"run_id": self.run_id}
        if self.plan is not None:
            data["plan"] = self.plan
        if self.node_id is not None:
            data["node_id"] = self.node_id
        if self.status is not None:
            data["status"] = self.status
        if self.error is not None:
            data["error"] = {"type": self.error.type, "message": self.error.message}
        return data


EventSink = Callable[[PlanEvent], None]


def ignore_events(event: PlanEvent) -> None:
    """The sink of a run nobody watches."""
    del event
