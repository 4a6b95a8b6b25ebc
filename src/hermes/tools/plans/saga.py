"""How a run ends: its outputs when every node succeeded, else the saga (DESIGN.md, "Multi-call
plans"; seed 003 §2.3).

Compensation starts once no node is running: the ``compensate`` calls of the nodes that
succeeded run one at a time, in reverse order of completion (a compensation exists only for a
node that succeeded). A compensation that fails is recorded on its node
(``compensation_error``) and the others still run. The run is ``compensated`` when at least
one compensation ran and all of them succeeded, else ``failed``.
"""

from __future__ import annotations

from typing import Any

from hermes.observe import get_logger
from hermes.tools.plan_runs import FinalPlanStatus, PlanRun, RunError
from hermes.tools.plans.events import PlanEvent
from hermes.tools.plans.execution import Execution
from hermes.tools.plans.templates import TemplateError, render

__all__ = ["finish_run"]

log = get_logger("tools")


async def finish_run(execution: Execution) -> PlanRun:
    """End the run: ``succeeded`` with its outputs, or the saga and ``compensated`` /
    ``failed`` with the reason."""
    status = execution.status
    failed = [node.id for node in execution.spec.nodes if status[node.id] == "failed"]
    stopped = execution.cancelled.is_set() and any(s == "skipped" for s in status.values())
    if not failed and not stopped:
        outputs = _outputs(execution)
        final = await execution.runs.finish(
            execution.run_id, execution.token, status="succeeded", outputs=outputs
        )
    else:
        ran, all_ok = await _compensate(execution)
        outcome: FinalPlanStatus = "compensated" if ran and all_ok else "failed"
        final = await execution.runs.finish(
            execution.run_id, execution.token, status=outcome, error=_run_error(execution, failed)
        )
    execution.on_event(PlanEvent("plan_finished", execution.run_id, status=final.status))
    return final


def _outputs(execution: Execution) -> dict[str, Any]:
    resolve = execution.resolver()
    outputs: dict[str, Any] = {}
    for name, template in execution.spec.outputs.items():
        try:
            outputs[name] = render(template, resolve)
        except TemplateError as exc:
            # Every node succeeded: an output that reads a missing field is reported, not a
            # reason to undo what was done.
            log.warning(
                "plan_output_unresolved", run_id=execution.run_id, output=name, error=str(exc)
            )
            outputs[name] = None
    return outputs


async def _compensate(execution: Execution) -> tuple[int, bool]:
    """Run the compensations backwards; how many ran and whether all succeeded. A saga cut
    off by a crash is finished on resume: the nodes it had compensated count as run, the
    others (a failed compensation included) are compensated now."""
    by_id = {node.id: node for node in execution.spec.nodes}
    ran = sum(1 for status in execution.status.values() if status == "compensated")
    all_ok = True
    for node_id in reversed(execution.completed):
        node = by_id[node_id]
        if node.compensate is None or execution.status[node_id] != "succeeded":
            continue
        ran += 1
        error = await _undo(execution, node_id)
        await execution.runs.record_compensation(
            execution.run_id, execution.token, node_id, error=error
        )
        if error is None:
            execution.status[node_id] = "compensated"
        all_ok = all_ok and error is None
        execution.on_event(
            PlanEvent("compensation", execution.run_id, node_id=node_id,
                      status="compensated" if error is None else "succeeded", error=error)
        )  # fmt: skip
    return ran, all_ok


async def _undo(execution: Execution, node_id: str) -> RunError | None:
    node = next(n for n in execution.spec.nodes if n.id == node_id)
    assert node.compensate is not None
    try:
        arguments = render(node.compensate.params, execution.resolver())
    except TemplateError as exc:
        return RunError("template_error", f"compensation of node {node_id}: {exc}")
    result = await execution.call(
        node.compensate.tool,
        f"{execution.run_id}:{node_id}:compensate",
        arguments,
        f"{execution.run_id}/{node_id}/compensate",
    )
    if result.ok:
        return None
    error = result.error
    kind, message = (error.type, error.message) if error is not None else ("error", "failed")
    return RunError(kind, f"compensation of node {node_id} failed: {message}")


def _run_error(execution: Execution, failed: list[str]) -> RunError:
    if not failed:
        return RunError("cancelled", "the run was cancelled before every node ran / 计划已取消")
    stored = execution.node_error(failed[0])
    detail = f"{stored.type}: {stored.message}" if stored is not None else "failed"
    more = f" (and {len(failed) - 1} more node(s))" if len(failed) > 1 else ""
    return RunError("node_failed", f"node {failed[0]} failed{more}: {detail}")
