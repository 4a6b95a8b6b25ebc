"""A run as JSON: the object ``hermes plan run --json`` prints, the last SSE event of
``POST /v1/plans`` and ``GET /v1/plans/{run_id}`` (DESIGN.md, "Public contracts", Plans)::

    {"run_id", "status": "running"|"succeeded"|"failed"|"compensated",
     "nodes": {ID: {"status", "result"?: the tool's output, "error"?: {"type", "message"},
                    "compensation_error"?: {"type", "message"}}}}
"""

from __future__ import annotations

from typing import Any

from hermes.tools.plan_runs import NodeRun, PlanRun, RunError

__all__ = ["node_json", "run_details", "run_json"]


def run_json(run: PlanRun) -> dict[str, Any]:
    """The ``plan run --json`` object of ``run``."""
    return {
        "run_id": run.run_id,
        "status": run.status,
        "nodes": {node_id: node_json(node) for node_id, node in run.nodes.items()},
    }


def node_json(node: NodeRun) -> dict[str, Any]:
    """One node of :func:`run_json`: its status, and its result or error when it has one."""
    data: dict[str, Any] = {"status": node.status}
    if node.status in ("succeeded", "compensated"):
        data["result"] = node.result
    if node.error is not None:
        data["error"] = _error(node.error)
    if node.compensation_error is not None:
        data["compensation_error"] = _error(node.compensation_error)
    return data


def run_details(run: PlanRun) -> dict[str, Any]:
    """:func:`run_json` and what else the record holds (``GET /v1/plans/{run_id}``): the
    plan's name, its outputs, the run's error, who it ran for and when."""
    data = run_json(run)
    data.update(
        plan=run.plan,
        outputs=run.outputs,
        error=None if run.error is None else _error(run.error),
        user_id=run.user_id,
        session_id=run.session_id,
        trace_id=run.trace_id,
        started_at=run.started_at,
        finished_at=run.finished_at,
        cancel_requested=run.cancel_requested_at is not None,
    )
    return data


def _error(error: RunError) -> dict[str, str]:
    return {"type": error.type, "message": error.message}
