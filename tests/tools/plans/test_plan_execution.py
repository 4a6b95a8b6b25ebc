"""Running plans: real overlap, bounded concurrency, trigger rules, failure, the saga, timeouts
and node keys (DESIGN.md, "Multi-call plans")."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from hermes import tool
from hermes.errors import PlanInvalidError
from hermes.tools.base import ToolContext
from hermes.tools.plan_runs import PlanRuns
from hermes.tools.plans import PlanEvent, PlanRunner, parse_plan, run_json

Runner = Callable[..., PlanRunner]


def _recorder(log: list[str]) -> Any:
    @tool(name="step")
    def step(label: str, fail: bool = False) -> dict[str, Any]:
        """Record a label; fail on request."""
        log.append(label)
        if fail:
            raise RuntimeError(f"{label} broke")
        return {"label": label}

    @tool(name="undo")
    def undo(label: str, fail: bool = False) -> str:
        """Record an undo."""
        log.append(f"undo:{label}")
        if fail:
            raise RuntimeError(f"undo {label} broke")
        return "undone"

    return step, undo


def _node(
    node_id: str, *deps: str, fail: bool = False, undo: bool = True, **extra: Any
) -> dict[str, Any]:
    node: dict[str, Any] = {
        "id": node_id,
        "tool": "step",
        "params": {"label": node_id, "fail": fail},
    }
    if deps:
        node["depends_on"] = list(deps)
    if undo:
        node["compensate"] = {"tool": "undo", "params": {"label": node_id}}
    return {**node, **extra}


async def test_independent_nodes_really_overlap(make_runner: Runner) -> None:
    barrier = asyncio.Barrier(3)

    @tool
    async def meet(label: str) -> str:
        """Wait until all three are running at once."""
        await asyncio.wait_for(barrier.wait(), timeout=5)
        return label

    plan = {
        "nodes": [{"id": f"n{i}", "tool": "meet", "params": {"label": f"n{i}"}} for i in range(3)]
    }
    run = await make_runner(meet).start(parse_plan(plan))
    assert run.status == "succeeded"
    assert {n.result for n in run.nodes.values()} == {"n0", "n1", "n2"}


async def test_concurrency_is_bounded(make_runner: Runner) -> None:
    running = 0
    most = 0
    gate = asyncio.Event()

    @tool
    async def work(label: str) -> str:
        """Count how many run at once."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        if most >= 2:
            gate.set()
        await asyncio.wait_for(gate.wait(), timeout=5)
        await asyncio.sleep(0)
        running -= 1
        return label

    plan = {"nodes": [{"id": f"n{i}", "tool": "work", "params": {"label": "x"}} for i in range(6)]}
    run = await make_runner(work, concurrency=2).start(parse_plan(plan))
    assert run.status == "succeeded"
    assert most == 2


async def test_a_failed_node_skips_its_dependants_per_trigger_rule(make_runner: Runner) -> None:
    log: list[str] = []
    plan = {
        "nodes": [
            _node("n1", fail=True, undo=False),
            _node("after_success", "n1", undo=False),
            _node("after_all_done", "n1", undo=False, when="all_done"),
            _node("after_none_failed", "n1", undo=False, when="none_failed"),
            _node("below_skipped", "after_success", undo=False, when="none_failed"),
            _node("below_skipped_strict", "after_success", undo=False),
        ]
    }
    run = await make_runner(*_recorder(log)).start(parse_plan(plan))
    states = {node_id: node.status for node_id, node in run.nodes.items()}
    assert states == {
        "n1": "failed",
        "after_success": "skipped",
        "after_all_done": "succeeded",
        "after_none_failed": "skipped",
        "below_skipped": "succeeded",
        "below_skipped_strict": "skipped",
    }
    assert run.status == "failed"  # no compensation ran
    assert run.error is not None
    assert "n1" in run.error.message


async def test_compensations_run_in_reverse_order_of_completion(make_runner: Runner) -> None:
    log: list[str] = []
    plan = {"nodes": [_node("a"), _node("b", "a"), _node("c", "b"), _node("d", "c", fail=True)]}
    run = await make_runner(*_recorder(log)).start(parse_plan(plan))
    assert log == ["a", "b", "c", "d", "undo:c", "undo:b", "undo:a"]
    assert run.status == "compensated"
    assert [run.nodes[n].status for n in "abcd"] == ["compensated"] * 3 + ["failed"]


async def test_compensation_waits_until_no_node_is_running(make_runner: Runner) -> None:
    log: list[str] = []
    release = asyncio.Event()

    @tool
    async def slow(label: str) -> str:
        """Finish only after the other branch failed."""
        await asyncio.wait_for(release.wait(), timeout=5)
        log.append(label)
        return label

    step, undo = _recorder(log)

    def watch(event: PlanEvent) -> None:
        if event.node_id == "bad" and event.status == "failed":
            release.set()

    plan = {
        "nodes": [
            {"id": "long", "tool": "slow", "params": {"label": "long"},
             "compensate": {"tool": "undo", "params": {"label": "long"}}},
            _node("bad", fail=True),
        ]
    }  # fmt: skip
    run = await make_runner(slow, step, undo).start(parse_plan(plan), on_event=watch)
    assert log == ["bad", "long", "undo:long"]
    assert run.status == "compensated"


async def test_a_failing_compensation_is_recorded_and_the_others_still_run(
    make_runner: Runner,
) -> None:
    log: list[str] = []
    plan = {
        "nodes": [
            _node("a"),
            _node("b", "a", compensate={"tool": "undo", "params": {"label": "b", "fail": True}}),
            _node("c", "b", fail=True),
        ]
    }
    run = await make_runner(*_recorder(log)).start(parse_plan(plan))
    assert log == ["a", "b", "c", "undo:b", "undo:a"]
    assert run.status == "failed"
    assert run.nodes["a"].status == "compensated"
    assert run.nodes["b"].status == "succeeded"
    assert run.nodes["b"].compensation_error is not None
    assert "undo b broke" in run.nodes["b"].compensation_error.message
    assert run_json(run)["nodes"]["b"]["compensation_error"]["type"] == "execution_error"


async def test_a_hanging_tool_fails_its_node_by_its_timeout(make_runner: Runner) -> None:
    log: list[str] = []

    @tool(timeout=0.2)
    async def hang() -> str:
        """Never answers."""
        await asyncio.Event().wait()
        return "never"

    plan = {"nodes": [_node("a"), {"id": "h", "tool": "hang", "params": {}, "depends_on": ["a"]}]}
    run = await make_runner(hang, *_recorder(log)).start(parse_plan(plan))
    assert run.nodes["h"].status == "failed"
    assert run.nodes["h"].error is not None
    assert run.nodes["h"].error.type == "timeout"
    assert run.status == "compensated"
    assert log == ["a", "undo:a"]


async def test_data_flows_through_templates_keeping_types(make_runner: Runner) -> None:
    seen: list[Any] = []

    @tool
    def rooms() -> dict[str, Any]:
        """List rooms."""
        return {"rooms": [{"id": 7, "tags": ["a"]}]}

    @tool
    def book(room: int, tags: list[str], note: str) -> str:
        """Book one; returns JSON text."""
        seen.append((room, tags, note))
        return '{"booking": "b-7"}'

    plan = {
        "nodes": [
            {"id": "n1", "tool": "rooms", "params": {}},
            {"id": "n2", "tool": "book", "depends_on": ["n1"],
             "params": {"room": "{{n1.result.rooms[0].id}}", "tags": "{{n1.result.rooms[0].tags}}",
                        "note": "room {{n1.result.rooms[0].id}}"}},
        ],
        "outputs": {"booking": "{{n2.result.booking}}"},
    }  # fmt: skip
    run = await make_runner(rooms, book).start(parse_plan(plan))
    assert seen == [(7, ["a"], "room 7")]
    assert run.nodes["n2"].result == {"booking": "b-7"}  # a JSON text output is parsed
    assert run.outputs == {"booking": "b-7"}


async def test_a_template_into_a_missing_field_fails_the_node_clearly(make_runner: Runner) -> None:
    log: list[str] = []
    plan = {
        "nodes": [
            _node("a", undo=False),
            {
                "id": "b",
                "tool": "step",
                "params": {"label": "{{a.result.rooms[3]}}"},
                "depends_on": ["a"],
            },
        ]
    }
    run = await make_runner(*_recorder(log)).start(parse_plan(plan))
    error = run.nodes["b"].error
    assert error is not None
    assert error.type == "template_error"
    assert "node b" in error.message
    assert "no field 'rooms'" in error.message
    assert log == ["a"]


async def test_an_invalid_plan_records_nothing(make_runner: Runner, plan_runs: PlanRuns) -> None:
    with pytest.raises(PlanInvalidError, match="n2"):
        await make_runner().start(parse_plan({"nodes": [{"id": "n2", "tool": "nope"}]}))
    assert await plan_runs.list_runs() == []


async def test_every_outcome_is_persisted_the_moment_it_ends(
    make_runner: Runner, plan_runs: PlanRuns
) -> None:
    seen: list[str] = []
    run_ids: list[str] = []

    @tool
    async def check() -> str:
        """Look at the record of the run while the plan is still going."""
        run = await plan_runs.get(run_ids[0])
        assert run is not None
        seen.append(run.nodes["first"].status)
        return "ok"

    log: list[str] = []

    def started(event: PlanEvent) -> None:
        if event.kind == "plan_started":
            run_ids.append(event.run_id)

    plan = {
        "nodes": [
            _node("first", undo=False),
            {"id": "second", "tool": "check", "depends_on": ["first"]},
        ]
    }
    run = await make_runner(check, *_recorder(log)).start(parse_plan(plan), on_event=started)
    assert run.status == "succeeded"
    assert seen == ["succeeded"]


async def test_each_call_carries_the_run_and_node_key(make_runner: Runner) -> None:
    keys: list[str] = []

    @tool(name="keyed")
    def keyed(*, ctx: ToolContext) -> str:
        """Report the key the call carries."""
        keys.append(ctx.extras["idempotency_key"])
        return "ok"

    run = await make_runner(keyed).start(parse_plan({"nodes": [{"id": "n1", "tool": "keyed"}]}))
    assert keys == [f"{run.run_id}/n1"]
