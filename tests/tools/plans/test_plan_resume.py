"""Resume after a simulated crash: completed nodes are not repeated, a node cut off mid-call
follows DESIGN.md's rule, the key run id + node id answers a repeated call (DESIGN.md,
"Multi-call plans")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes import tool
from hermes.models.base import ToolCall
from hermes.tools.pipeline import CallContext
from hermes.tools.plan_runs import PlanRuns, RunError
from hermes.tools.plans import PlanRunner, parse_plan
from hermes.tools.plans.node_key import NODE_KEY_EXTRA

Runner = Callable[..., PlanRunner]


class Effects:
    """Counts of each tool's runs (the side effects a resume must not repeat)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def tools(self) -> list[Any]:
        counts = self.counts

        @tool(name="book")
        def book(room: str) -> dict[str, Any]:
            """Book (a side effect)."""
            counts["book"] = counts.get("book", 0) + 1
            return {"booking": f"b-{room}"}

        @tool(name="invite")
        def invite(booking: str) -> str:
            """Send an invitation (a side effect)."""
            counts["invite"] = counts.get("invite", 0) + 1
            return "sent"

        @tool(name="look", side_effects=False)
        def look(booking: str) -> str:
            """Read-only lookup."""
            counts["look"] = counts.get("look", 0) + 1
            return "seen"

        @tool(name="charge", idempotency_key=("booking",))
        def charge(booking: str) -> str:
            """Idempotent by its own key."""
            counts["charge"] = counts.get("charge", 0) + 1
            return "charged"

        @tool(name="cancel_booking")
        def cancel_booking(booking: str) -> str:
            """Undo a booking."""
            counts["cancel"] = counts.get("cancel", 0) + 1
            return "cancelled"

        return [book, invite, look, charge, cancel_booking]


UNDO = {"tool": "cancel_booking", "params": {"booking": "{{n1.result.booking}}"}}


def _plan(second_tool: str) -> dict[str, Any]:
    return {
        "name": "meeting",
        "nodes": [
            {"id": "n1", "tool": "book", "params": {"room": "r1"}, "compensate": UNDO},
            {"id": "n2", "tool": second_tool, "params": {"booking": "{{n1.result.booking}}"},
             "depends_on": ["n1"]},
            {"id": "n3", "tool": "invite", "params": {"booking": "{{n1.result.booking}}"},
             "depends_on": ["n2"]},
        ],
    }  # fmt: skip


async def _crashed_run(runs: PlanRuns, plan: dict[str, Any]) -> str:
    """A run whose runner died while n2 was running, after n1 had succeeded (its lease passes
    at once)."""
    spec = parse_plan(plan)
    claim = await runs.create(
        spec.name, spec=spec.to_data(), params={}, node_ids=["n1", "n2", "n3"], lease=0.05
    )
    run_id, token = claim.run.run_id, claim.token
    await runs.set_node(run_id, token, "n1", "running")
    await runs.set_node(run_id, token, "n1", "succeeded", result={"booking": "b-r1"})
    await runs.set_node(run_id, token, "n2", "running")
    return run_id


async def test_a_cut_off_read_only_node_runs_again_and_completed_ones_do_not(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    effects = Effects()
    run_id = await _crashed_run(plan_runs, _plan("look"))
    run = await make_runner(*effects.tools()).resume(run_id)
    assert run.status == "succeeded"
    assert effects.counts == {"look": 1, "invite": 1}  # book (n1) was not repeated
    assert run.nodes["n2"].attempts == 2


async def test_a_cut_off_idempotent_node_runs_again(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    effects = Effects()
    run_id = await _crashed_run(plan_runs, _plan("charge"))
    run = await make_runner(*effects.tools()).resume(run_id)
    assert run.status == "succeeded"
    assert effects.counts == {"charge": 1, "invite": 1}


async def test_a_cut_off_node_with_side_effects_is_outcome_unknown_and_the_saga_runs(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    effects = Effects()
    run_id = await _crashed_run(plan_runs, _plan("invite"))
    run = await make_runner(*effects.tools()).resume(run_id)
    error = run.nodes["n2"].error
    assert error is not None
    assert error.type == "outcome_unknown"
    assert run.nodes["n3"].status == "skipped"
    assert run.nodes["n1"].status == "compensated"
    assert run.status == "compensated"
    assert effects.counts == {"cancel": 1}  # neither book nor invite ran again


async def test_a_node_whose_call_finished_before_the_crash_is_answered_from_its_key(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    effects = Effects()
    run_id = await _crashed_run(plan_runs, _plan("invite"))
    runner = make_runner(*effects.tools())
    # The call of n2 ended (its result stored under the node's key), then the process died
    # before the node's outcome was recorded.
    context = CallContext(extras={NODE_KEY_EXTRA: f"{run_id}/n2"})
    call = ToolCall(id=f"{run_id}:n2", name="invite", arguments={"booking": "b-r1"})
    first = await runner.executor.run(call, context)
    again = await runner.executor.run(call, context)  # the same key twice: one effect
    assert first.ok
    assert again.ok
    assert again.cached
    assert effects.counts == {"invite": 1}
    run = await runner.resume(run_id)
    assert run.status == "succeeded"
    assert run.nodes["n2"].result == "sent"
    assert effects.counts == {"invite": 2}  # n2 replayed; n3 ran once


async def test_a_cancel_request_skips_what_had_not_started(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    effects = Effects()
    run_id = await _crashed_run(plan_runs, _plan("look"))
    await make_runner().cancel(run_id)
    run = await make_runner(*effects.tools()).resume(run_id)
    assert run.nodes["n2"].status == "failed"
    assert run.nodes["n2"].error is not None
    assert run.nodes["n2"].error.type == "cancelled"
    assert run.nodes["n3"].status == "skipped"
    assert run.status == "compensated"
    assert run.error is not None
    assert effects.counts == {"cancel": 1}


async def test_resuming_a_finished_run_changes_nothing(make_runner: Runner) -> None:
    effects = Effects()
    runner = make_runner(*effects.tools())
    done = await runner.start(parse_plan(_plan("look")))
    assert done.status == "succeeded"
    counts = dict(effects.counts)
    again = await runner.resume(done.run_id)
    assert again.status == "succeeded"
    assert effects.counts == counts


async def test_a_saga_cut_off_by_a_crash_is_finished_on_resume(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    effects = Effects()
    plan = _plan("look")
    plan["nodes"].insert(
        1, {"id": "n0", "tool": "book", "params": {"room": "r0"}, "compensate": UNDO}
    )
    spec = parse_plan(plan)
    claim = await plan_runs.create(
        spec.name, spec=spec.to_data(), params={}, node_ids=["n1", "n0", "n2", "n3"], lease=0.05
    )
    run_id, token = claim.run.run_id, claim.token
    for node_id in ("n1", "n0"):
        await plan_runs.set_node(run_id, token, node_id, "running")
        await plan_runs.set_node(run_id, token, node_id, "succeeded", result={"booking": "b"})
    await plan_runs.set_node(run_id, token, "n2", "running")
    await plan_runs.set_node(run_id, token, "n2", "failed", error=RunError("x", "broke"))
    await plan_runs.set_node(run_id, token, "n3", "skipped")
    await plan_runs.record_compensation(run_id, token, "n0")  # then the process died
    run = await make_runner(*effects.tools()).resume(run_id)
    assert run.status == "compensated"
    assert {n: v.status for n, v in run.nodes.items()} == {
        "n1": "compensated", "n0": "compensated", "n2": "failed", "n3": "skipped"
    }  # fmt: skip
    assert effects.counts == {"cancel": 1}  # only n1's compensation was left to run
