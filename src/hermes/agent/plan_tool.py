"""``run_plan(template, params)``: how a model starts a multi-call plan (DESIGN.md, "Multi-call
plans"; seed 003 §4.3: templates only — a model never sends a DAG of its own).

Offered when ``plans.dir`` holds templates; its schema lists them (with their descriptions
and params), so the model picks one and fills its params. The plan is validated like any
other (the template's params by their declared schemas, every node by its tool's) and runs
on the same tool chain, for the turn's session and user. The call's result is the ``plan run
--json`` object with the outputs; a failed or compensated run is a failed call (the model
must not report a booking that was undone). When a template holds a node that needs a
person's approval, ``run_plan`` itself needs one: the turn asks the person (template and
params), and the approved call runs the plan with its approvals given.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from hermes.agent.plans import AgentPlans, PlanSetup
from hermes.errors import HermesError, ToolError
from hermes.tools.base import ToolContext
from hermes.tools.decorator import make_tool
from hermes.tools.plans import run_json
from hermes.tools.plans.validate import approval_problems

if TYPE_CHECKING:
    from hermes.agent.agent import Agent

__all__ = ["RUN_PLAN", "PlanFailedError", "offer_run_plan"]

RUN_PLAN = "run_plan"
#: How long one plan may take when a model starts it (its nodes' own timeouts bound each).
RUN_PLAN_TIMEOUT_S = 600.0
_MAX_DESCRIBED = 20


class PlanFailedError(ToolError):
    """The plan ran and failed (its compensations ran when it had any)."""

    code = "plan_failed"


def offer_run_plan(agent: Agent, setup: PlanSetup) -> None:
    """Register ``run_plan`` on ``agent`` when ``setup`` has templates (else leave it off)."""
    described = setup.library.describe()
    if not described:
        return
    names = [name for name, _ in described]
    lines = []
    for name, spec in described[:_MAX_DESCRIBED]:
        params = ", ".join(spec.params) or "none"
        about = f": {spec.description}" if spec.description else ""
        lines.append(f"- {name}{about} (params: {params})")
    schema = {
        "type": "object",
        "properties": {
            "template": {"type": "string", "enum": names, "description": "The plan template."},
            "params": {"type": "object", "description": "The template's params."},
        },
        "required": ["template"],
    }
    owner = weakref.ref(agent)
    # A template with a node that needs a person's approval makes run_plan need one: the person
    # is asked once, for the template and its params (the turn's approval, seed 004 §4.3), and
    # the approved call runs the plan approved. Without such a template no call is asked about,
    # and a template edited later to hold one is refused before anything runs.
    needs_approval = any(approval_problems(spec, agent.tools) for _, spec in described)

    async def run_plan(
        template: str, ctx: ToolContext, params: dict[str, Any] | None = None
    ) -> Any:
        held = owner()
        if held is None:
            raise PlanFailedError("the agent that offered run_plan is gone")
        return await _run(held, template, params or {}, ctx, approved=needs_approval)

    tool = make_tool(
        run_plan,
        name=RUN_PLAN,
        description="Run a named multi-call plan (checked, then run step by step). Templates:\n"
        + "\n".join(lines),
        schema=schema,
        timeout=RUN_PLAN_TIMEOUT_S,
        requires_approval=needs_approval,
    )
    agent.tools.register(tool, replace=True)
    agent._runtime.refresh_tools()  # the offered tools' token count and toolsets


async def _run(
    agent: Agent, template: str, params: dict[str, Any], ctx: ToolContext, *, approved: bool
) -> Any:
    async with AgentPlans(agent, approved=approved) as plans:
        try:
            run = await plans.runner.start(
                plans.library.load(template),
                params,
                user_id=ctx.user_id,
                session_id=ctx.session_id or None,
                trace_id=ctx.trace_id or None,
            )
        except HermesError as exc:  # refused: the arguments are what the model can fix
            raise PlanFailedError(exc.message) from None
    outcome = {**run_json(run), "outputs": run.outputs}
    if run.status != "succeeded":
        reason = run.error.message if run.error is not None else run.status
        raise PlanFailedError(f"plan {template!r} {run.status} (run {run.run_id}): {reason}")
    return outcome
