"""Nodes whose tool needs a person's approval (seed 004 §4.3; DESIGN.md, "Multi-call plans":
every node has the same approvals as any call). A run nobody can approve is refused before
anything runs — never half-way, after other nodes took effect; the person approves by starting
it (``hermes plan run --approve``) or by approving the model's ``run_plan`` call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent, tool
from hermes.agent.plan_tool import RUN_PLAN, offer_run_plan
from hermes.agent.plans import PlanSetup, configure_plans
from hermes.errors import PlanInvalidError
from hermes.testing import FunctionModel, call, say
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.plan_runs import NodeChange, PlanRuns
from hermes.tools.plans import PlanRunner, PlanSettings, check_plan, parse_plan
from hermes.tools.plans.library import PlanLibrary
from hermes.tools.policies import PolicyState
from hermes.tools.registry import ToolRegistry

EFFECTS: list[str] = []


@tool
def hold_room(room: str) -> dict[str, Any]:
    """Hold a room (no approval needed)."""
    EFFECTS.append(f"hold {room}")
    return {"hold": f"h-{room}"}


@tool(requires_approval=True)
def pay_deposit(hold: str) -> str:
    """Pay the deposit (a person approves each call)."""
    EFFECTS.append(f"pay {hold}")
    return "paid"


@tool(requires_approval=True)
def refund(hold: str) -> str:
    """Refund a deposit (a person approves each call)."""
    EFFECTS.append(f"refund {hold}")
    return "refunded"


PLAN: dict[str, Any] = {
    "name": "deposit",
    "nodes": [
        {"id": "hold", "tool": "hold_room", "params": {"room": "R1"}},
        {
            "id": "pay",
            "tool": "pay_deposit",
            "params": {"hold": "{{hold.result.hold}}"},
            "depends_on": ["hold"],
        },
    ],
}


@pytest.fixture(autouse=True)
def _clear() -> None:
    EFFECTS.clear()


def _runner(runs: PlanRuns, *, approved: bool) -> PlanRunner:
    executor = ToolExecutor(ToolRegistry([hold_room, pay_deposit, refund]), state=PolicyState())
    settings = PlanSettings(lease_seconds=5.0)
    return PlanRunner(executor, runs, settings=settings, approved=approved)


def test_validation_names_the_nodes_that_need_an_approval_only_when_nobody_can_give_it() -> None:
    spec = parse_plan(
        {
            "nodes": [
                {"id": "hold", "tool": "hold_room", "params": {"room": "R1"},
                 "compensate": {"tool": "refund", "params": {"hold": "x"}}},
                {"id": "pay", "tool": "pay_deposit", "params": {"hold": "x"}},
            ]
        }
    )  # fmt: skip
    tools = ToolRegistry([hold_room, pay_deposit, refund])
    assert check_plan(spec, tools) == []  # validity itself does not depend on the starter
    problems = check_plan(spec, tools, approved=False)
    assert [p.nodes for p in problems] == [("hold",), ("pay",)]
    assert "'refund'" in problems[0].message
    assert "'pay_deposit'" in problems[1].message
    assert "--approve" in problems[1].message


async def test_an_unapproved_start_is_refused_before_any_node_runs(plan_runs: PlanRuns) -> None:
    runner = _runner(plan_runs, approved=False)
    with pytest.raises(PlanInvalidError) as refused:
        await runner.start(parse_plan(PLAN))
    assert refused.value.problems == [(["pay"], refused.value.problems[0][1])]
    assert "approval" in refused.value.message
    assert EFFECTS == []  # the hold did not run either: nothing to undo
    assert await plan_runs.list_runs() == []  # and nothing was recorded


async def test_an_approved_start_runs_the_node(plan_runs: PlanRuns) -> None:
    run = await _runner(plan_runs, approved=True).start(parse_plan(PLAN))
    assert run.status == "succeeded"
    assert EFFECTS == ["hold R1", "pay h-R1"]


async def test_an_unapproved_resume_is_refused_and_gives_the_run_back(
    plan_runs: PlanRuns,
) -> None:
    """A run cut off before its approval node: resuming without an approval is refused at
    once (the lease given back, so an approved resume need not wait for it)."""
    spec = parse_plan(PLAN)
    claim = await plan_runs.create(
        spec.name, spec=spec.to_data(), params={}, node_ids=["hold", "pay"], lease=30.0
    )
    run = claim.run
    await plan_runs.set_nodes(
        run.run_id, run.token, [NodeChange("hold", "running"),
                                NodeChange("hold", "succeeded", result={"hold": "h-R1"})]
    )  # fmt: skip
    await plan_runs.release(run.run_id, run.token)
    with pytest.raises(PlanInvalidError) as refused:
        await _runner(plan_runs, approved=False).resume(run.run_id, wait=False)
    assert refused.value.problems[0][0] == ["pay"]
    resumed = await _runner(plan_runs, approved=True).resume(run.run_id, wait=False)
    assert resumed.status == "succeeded"
    assert EFFECTS == ["pay h-R1"]  # the hold that had succeeded was not run again


TEMPLATE = """
description: Hold a room and pay its deposit
params:
  room: {type: string}
nodes:
  - {id: hold, tool: hold_room, params: {room: "{{params.room}}"}}
  - {id: pay, tool: pay_deposit, params: {hold: "{{hold.result.hold}}"}, depends_on: [hold]}
outputs:
  hold: "{{hold.result.hold}}"
"""


def _agent(tmp_path: Path, script: Callable[[Any], Any]) -> Agent:
    directory = tmp_path / "plans"
    directory.mkdir()
    (directory / "deposit.yaml").write_text(TEMPLATE, encoding="utf-8")
    agent = Agent(
        model=FunctionModel(script),
        tools=[hold_room, pay_deposit, refund],
        store=tmp_path / "hermes.db",
    )
    setup = PlanSetup(PlanLibrary(directory))
    configure_plans(agent, setup)
    offer_run_plan(agent, setup)
    return agent


async def test_a_models_run_plan_of_such_a_template_waits_for_the_persons_approval(
    tmp_path: Path,
) -> None:
    seen: list[dict[str, Any]] = []

    def script(request: Any) -> Any:
        last = request.messages[-1]
        if last["role"] == "tool":
            seen.append(json.loads(last["content"]))
            return say("done")
        return call(RUN_PLAN, {"template": "deposit", "params": {"room": "R7"}})

    agent = _agent(tmp_path, script)
    assert agent.tools.get(RUN_PLAN).requires_approval  # type: ignore[union-attr]
    asked = await agent.run("hold R7 and pay", session_id="session-deposit-1", user_id="u1")
    assert asked.approval_id is not None
    assert EFFECTS == []  # nothing ran while the person was asked
    approved = await agent.approve(asked.approval_id, session_id="session-deposit-1", user_id="u1")
    await agent.aclose()
    assert approved.reply == "done"
    assert EFFECTS == ["hold R7", "pay h-R7"]
    assert seen[-1]["ok"] is True
    assert seen[-1]["output"]["status"] == "succeeded"


async def test_run_plan_needs_no_approval_when_no_template_needs_one(tmp_path: Path) -> None:
    directory = tmp_path / "plans"
    directory.mkdir()
    (directory / "hold.yaml").write_text(
        "nodes:\n  - {id: hold, tool: hold_room, params: {room: R1}}\n", encoding="utf-8"
    )
    agent = Agent(model=FunctionModel(lambda r: say("hi")), tools=[hold_room],
                  store=tmp_path / "hermes.db")  # fmt: skip
    setup = PlanSetup(PlanLibrary(directory))
    configure_plans(agent, setup)
    offer_run_plan(agent, setup)
    assert agent.tools.get(RUN_PLAN).requires_approval is False  # type: ignore[union-attr]
    await agent.aclose()
