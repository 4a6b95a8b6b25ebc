"""Multi-call plans: a validated DAG of tool calls on the ordinary tool chain (DESIGN.md,
"Multi-call plans"; seed 003 §2.3, §4.3; user docs: ``docs/plans.md``).

- :mod:`.spec` — the format (JSON/YAML, pydantic, unknown fields refused);
- :mod:`.templates` — ``{{n1.result.room_id}}``, ``{{n1.result.rooms[0]}}``, ``{{params.x}}``;
- :mod:`.validate` — every problem before anything runs, each naming its nodes;
- :mod:`.execution` — ready nodes concurrently, trigger rules, outcomes persisted at once;
- :mod:`.saga` — outputs, or compensations in reverse order of completion;
- :mod:`.node_key` — the key run id + node id on every node's call;
- :mod:`.runner` — :class:`PlanRunner`: start, resume, cancel;
- :mod:`.library` — named templates in ``plans/*.yaml``;
- :mod:`.outcome` — a run as the JSON of ``hermes plan run --json``.

The record of runs is :mod:`hermes.tools.plan_runs` (the ``PlanRuns`` protocol).
"""

from hermes.tools.plans.events import EventSink, PlanEvent
from hermes.tools.plans.outcome import run_details, run_json
from hermes.tools.plans.runner import PlanRunner, PlanSettings
from hermes.tools.plans.spec import CompensateSpec, NodeSpec, PlanSpec, load_plan, parse_plan
from hermes.tools.plans.templates import TemplateError
from hermes.tools.plans.validate import PlanProblem, check_params, check_plan

__all__ = [
    "CompensateSpec",
    "EventSink",
    "NodeSpec",
    "PlanEvent",
    "PlanProblem",
    "PlanRunner",
    "PlanSettings",
    "PlanSpec",
    "TemplateError",
    "check_params",
    "check_plan",
    "load_plan",
    "parse_plan",
    "run_details",
    "run_json",
]
