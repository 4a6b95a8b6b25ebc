"""The PlanRuns contract (``hermes.tools.plan_runs``; DESIGN.md, "Multi-call plans" and "Public
contracts", Plans): every backend (``tests.storage.backends.RUNS_BACKENDS``) must pass every
test here."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.errors import (
    InvalidInputError,
    LeaseLostError,
    NodeTransitionError,
    RunNotFoundError,
    StoreError,
)
from hermes.memory.archive import ArchiveUpkeep
from hermes.tools.plan_runs import (
    NODE_TRANSITIONS,
    NodeChange,
    NodeStatus,
    PlanClaim,
    PlanResultLostError,
    PlanRun,
    PlanRuns,
    RunError,
)
from tests.storage.backends import ArchiveBackend, RunsBackend
from tests.storage.conformance import racers
from tests.storage.conformance.conftest import FakeClock

SPEC = {
    "name": "book-meeting",
    "nodes": [
        {"id": "n1", "tool": "check_room_availability", "params": {"city": "{{params.city}}"}},
        {"id": "n2", "tool": "book_room", "params": {"room": "{{n1.result.room_id}}"},
         "depends_on": ["n1"], "compensate": {"tool": "cancel_booking", "params": {}}},
        {"id": "n3", "tool": "send_calendar_invite", "params": {}, "depends_on": ["n2"]},
    ],
}  # fmt: skip
NODES = ["n1", "n2", "n3"]
FAILED = RunError(type="timeout", message="book_room did not answer in 10 s")


async def _create(runs: PlanRuns, **kwargs: Any) -> PlanClaim:
    fields: dict[str, Any] = {
        "spec": SPEC, "params": {"city": "北京"}, "node_ids": NODES, "user_id": "u1",
        "session_id": "session-0001", "trace_id": "trace-1", **kwargs,
    }  # fmt: skip
    return await runs.create("book-meeting", **fields)


# -- creating and reading ----------------------------------------------------------------------


async def test_a_new_run_is_running_claimed_and_every_node_pending(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    run = claim.run
    assert claim.outcome == "claimed"
    assert run.run_id.startswith("plan-")
    assert (run.plan, run.status, run.claims) == ("book-meeting", "running", 1)
    assert (run.spec, run.params) == (SPEC, {"city": "北京"})
    assert (run.user_id, run.session_id, run.trace_id) == ("u1", "session-0001", "trace-1")
    assert list(run.nodes) == NODES  # in the plan's order
    assert all(node.status == "pending" and node.attempts == 0 for node in run.nodes.values())
    assert await plan_runs.get(run.run_id) == run
    assert await plan_runs.get("plan-unknown") is None


async def test_bad_names_node_ids_and_values_are_refused(plan_runs: PlanRuns):
    for kwargs in ({"node_ids": []}, {"node_ids": ["n1", "n1"]}, {"node_ids": [""]},
                   {"node_ids": ["a\nb"]}, {"params": {"when": object()}}):  # fmt: skip
        with pytest.raises(InvalidInputError):
            await _create(plan_runs, **kwargs)
    with pytest.raises(InvalidInputError):
        await plan_runs.create("", spec=SPEC, params={}, node_ids=NODES)
    assert await plan_runs.list_runs() == []


async def test_each_node_outcome_is_stored_the_moment_it_ends(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    running = await plan_runs.set_node(run_id, token, "n1", "running")
    assert (running.status, running.attempts) == ("running", 1)
    assert running.started_at is not None
    result = {"room_id": "A101", "rooms": ["A101", "B202"], "note": "二楼"}
    done = await plan_runs.set_node(run_id, token, "n1", "succeeded", result=result)
    assert (done.status, done.result, done.error) == ("succeeded", result, None)
    assert done.finished_at is not None
    await plan_runs.set_node(run_id, token, "n2", "running")
    failed = await plan_runs.set_node(run_id, token, "n2", "failed", error=FAILED)
    assert (failed.status, failed.error, failed.result) == ("failed", FAILED, None)
    skipped = await plan_runs.set_node(run_id, token, "n3", "skipped")
    assert skipped.status == "skipped"
    stored = await plan_runs.get(run_id)
    assert stored is not None
    assert {k: v.status for k, v in stored.nodes.items()} == {
        "n1": "succeeded", "n2": "failed", "n3": "skipped",
    }  # fmt: skip
    assert stored.nodes["n1"] == done
    assert stored.nodes["n2"] == failed


async def test_several_moves_commit_together_in_order(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    moved = await plan_runs.set_nodes(
        run_id,
        token,
        [
            NodeChange("n1", "running"),
            NodeChange("n2", "running"),
            NodeChange("n1", "succeeded", result={"room_id": "A101"}),
            NodeChange("n2", "failed", error=FAILED),
        ],
    )
    assert [(n.node_id, n.status, n.attempts) for n in moved] == [
        ("n1", "succeeded", 1), ("n2", "failed", 1),
    ]  # fmt: skip
    stored = await plan_runs.get(run_id)
    assert stored is not None
    assert stored.nodes["n1"].result == {"room_id": "A101"}
    assert stored.nodes["n2"].error == FAILED
    assert await plan_runs.set_nodes(run_id, token, []) == []


async def test_a_batch_with_a_move_not_allowed_writes_nothing(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    with pytest.raises(NodeTransitionError):
        await plan_runs.set_nodes(
            run_id, token, [NodeChange("n1", "running"), NodeChange("n2", "succeeded")]
        )
    with pytest.raises(LeaseLostError):
        await plan_runs.set_nodes(run_id, token + 1, [NodeChange("n1", "running")])
    with pytest.raises(NodeTransitionError):
        await plan_runs.set_nodes(run_id, token, [NodeChange("n9", "running")])
    stored = await plan_runs.get(run_id)
    assert stored is not None
    assert all(node.status == "pending" for node in stored.nodes.values())


async def test_json_results_keep_their_type(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    for node_id, value in zip(NODES, ["a string", 42, [1, {"x": None}]], strict=True):
        await plan_runs.set_node(claim.run.run_id, claim.token, node_id, "running")
        await plan_runs.set_node(claim.run.run_id, claim.token, node_id, "succeeded", result=value)
    stored = await plan_runs.get(claim.run.run_id)
    assert stored is not None
    assert [node.result for node in stored.nodes.values()] == ["a string", 42, [1, {"x": None}]]


async def test_a_result_that_is_not_json_is_refused_and_the_node_keeps_running(
    plan_runs: PlanRuns,
):
    claim = await _create(plan_runs)
    await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    with pytest.raises(InvalidInputError, match="n1"):
        await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "succeeded", result={1j})
    stored = await plan_runs.get(claim.run.run_id)
    assert stored is not None
    assert stored.nodes["n1"].status == "running"


async def test_a_node_cut_off_mid_call_may_run_again(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    again = await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    assert (again.status, again.attempts) == ("running", 2)
    unknown = RunError(type="outcome_unknown", message="cut off mid-call; the tool has effects")
    failed = await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "failed", error=unknown)
    assert failed.error == unknown


async def test_moves_outside_the_transition_table_are_refused(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    with pytest.raises(NodeTransitionError):
        await plan_runs.set_node(run_id, token, "n1", "succeeded")  # never ran
    with pytest.raises(NodeTransitionError):
        await plan_runs.set_node(run_id, token, "n1", "compensated")
    with pytest.raises(NodeTransitionError):
        await plan_runs.set_node(run_id, token, "n9", "running")  # no such node
    await plan_runs.set_node(run_id, token, "n1", "skipped")
    with pytest.raises(NodeTransitionError):
        await plan_runs.set_node(run_id, token, "n1", "running")
    stored = await plan_runs.get(run_id)
    assert stored is not None
    assert stored.nodes["n1"].status == "skipped"


def test_the_transition_table_is_the_documented_one():
    assert {
        "pending": {"running", "skipped", "failed"},
        "running": {"running", "succeeded", "failed"},
        "succeeded": set(), "failed": set(), "skipped": set(), "compensated": set(),
    } == NODE_TRANSITIONS  # fmt: skip
    assert set(NODE_TRANSITIONS) == set(get_args(NodeStatus))


_moves = st.lists(
    st.tuples(st.sampled_from(NODES), st.sampled_from(get_args(NodeStatus))), max_size=12
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(moves=_moves)
def test_any_sequence_of_node_moves_ends_where_the_table_says(
    runs_backend: RunsBackend, clock: FakeClock, moves: list[tuple[str, NodeStatus]]
):
    """Each move is accepted exactly when the table allows it, and what is stored afterwards is
    what the accepted moves say (statuses and attempts), node by node."""

    async def play() -> None:
        runs = runs_backend.open_plan_runs(clock)
        try:
            claim = await _create(runs)
            model: dict[str, NodeStatus] = dict.fromkeys(NODES, "pending")
            attempts = dict.fromkeys(NODES, 0)
            for node_id, status in moves:
                allowed = status in NODE_TRANSITIONS[model[node_id]]
                try:
                    await runs.set_node(claim.run.run_id, claim.token, node_id, status,
                                        result={"n": node_id}, error=FAILED)  # fmt: skip
                except NodeTransitionError:
                    assert not allowed, (node_id, model[node_id], status)
                    continue
                assert allowed, (node_id, model[node_id], status)
                model[node_id] = status
                attempts[node_id] += status == "running"
            stored = await runs.get(claim.run.run_id)
            assert stored is not None
            assert {k: v.status for k, v in stored.nodes.items()} == model
            assert {k: v.attempts for k, v in stored.nodes.items()} == attempts
            for node in stored.nodes.values():
                assert (node.result is not None) == (node.status == "succeeded")
                assert (node.error is not None) == (node.status == "failed")
        finally:
            await runs.close()

    asyncio.run(play())


# -- compensation and finishing ----------------------------------------------------------------


async def _two_succeeded(runs: PlanRuns) -> PlanClaim:
    claim = await _create(runs)
    for node_id in ("n1", "n2"):
        await runs.set_node(claim.run.run_id, claim.token, node_id, "running")
        await runs.set_node(claim.run.run_id, claim.token, node_id, "succeeded", result={})
    await runs.set_node(claim.run.run_id, claim.token, "n3", "running")
    await runs.set_node(claim.run.run_id, claim.token, "n3", "failed", error=FAILED)
    return claim


async def test_a_saga_ends_compensated_when_every_compensation_ran(plan_runs: PlanRuns):
    claim = await _two_succeeded(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    for node_id in ("n2", "n1"):  # in reverse
        node = await plan_runs.record_compensation(run_id, token, node_id)
        assert (node.status, node.compensation_error) == ("compensated", None)
    with pytest.raises(NodeTransitionError):  # a failed node is not compensated
        await plan_runs.record_compensation(run_id, token, "n3")
    ended = await plan_runs.finish(run_id, token, status="compensated", error=FAILED)
    assert (ended.status, ended.error, ended.lease_until) == ("compensated", FAILED, None)
    assert ended.finished_at is not None
    assert [n.status for n in ended.nodes.values()] == ["compensated", "compensated", "failed"]


async def test_a_failed_compensation_keeps_its_error_on_a_succeeded_node(plan_runs: PlanRuns):
    claim = await _two_succeeded(plan_runs)
    error = RunError(type="execution_error", message="cancel_booking: room already taken")
    node = await plan_runs.record_compensation(claim.run.run_id, claim.token, "n2", error=error)
    assert (node.status, node.compensation_error) == ("succeeded", error)
    ended = await plan_runs.finish(claim.run.run_id, claim.token, status="failed", error=FAILED)
    assert ended.nodes["n2"].compensation_error == error


async def test_a_run_finishes_with_its_outputs_and_is_then_immutable(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    for node_id in NODES:
        await plan_runs.set_node(claim.run.run_id, claim.token, node_id, "running")
        await plan_runs.set_node(claim.run.run_id, claim.token, node_id, "succeeded", result=1)
    ended = await plan_runs.finish(
        claim.run.run_id, claim.token, status="succeeded", outputs={"room": "A101"}
    )
    assert (ended.status, ended.outputs) == ("succeeded", {"room": "A101"})
    for write in (
        plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running"),
        plan_runs.finish(claim.run.run_id, claim.token, status="failed"),
        plan_runs.renew(claim.run.run_id, claim.token, lease=60.0),
        plan_runs.release(claim.run.run_id, claim.token),
    ):
        with pytest.raises(LeaseLostError):
            await write
    assert (await plan_runs.claim(claim.run.run_id)).outcome == "finished"


async def test_a_run_cannot_finish_while_a_node_runs(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    with pytest.raises(NodeTransitionError, match="n1"):
        await plan_runs.finish(claim.run.run_id, claim.token, status="failed")
    stored = await plan_runs.get(claim.run.run_id)
    assert stored is not None
    assert stored.status == "running"


# -- claims, resume, cancel --------------------------------------------------------------------


async def test_a_held_run_cannot_be_claimed_until_its_lease_passes(
    plan_runs: PlanRuns, clock: FakeClock
):
    claim = await _create(plan_runs, lease=60.0)
    assert (await plan_runs.claim(claim.run.run_id, lease=60.0)).outcome == "held"
    clock.advance(61.0)
    resumed = await plan_runs.claim(claim.run.run_id, lease=60.0)
    assert (resumed.outcome, resumed.run.claims) == ("claimed", 2)
    assert resumed.token > claim.token
    with pytest.raises(LeaseLostError):  # the first holder is fenced off
        await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    await plan_runs.set_node(claim.run.run_id, resumed.token, "n1", "running")
    with pytest.raises(RunNotFoundError):
        await plan_runs.claim("plan-unknown")


async def test_a_released_run_is_claimed_at_once_and_a_renewed_one_is_not(
    plan_runs: PlanRuns, clock: FakeClock
):
    first = await _create(plan_runs, lease=60.0)
    second = await _create(plan_runs, lease=60.0)
    await plan_runs.release(first.run.run_id, first.token)
    assert (await plan_runs.claim(first.run.run_id)).outcome == "claimed"
    clock.advance(50.0)
    renewed = await plan_runs.renew(second.run.run_id, second.token, lease=60.0)
    assert renewed.lease_until == pytest.approx(clock.now + 60.0)
    clock.advance(50.0)
    assert (await plan_runs.claim(second.run.run_id)).outcome == "held"


async def test_a_holder_past_its_lease_may_write_while_nobody_took_over(
    plan_runs: PlanRuns, clock: FakeClock
):
    claim = await _create(plan_runs, lease=10.0)
    clock.advance(30.0)
    node = await plan_runs.set_node(claim.run.run_id, claim.token, "n1", "running")
    assert node.status == "running"


async def test_cancel_is_recorded_for_the_holder_to_see(plan_runs: PlanRuns):
    claim = await _create(plan_runs)
    cancelled = await plan_runs.request_cancel(claim.run.run_id)
    assert cancelled.cancel_requested_at is not None
    assert cancelled.status == "running"
    again = await plan_runs.request_cancel(claim.run.run_id)
    assert again.cancel_requested_at == cancelled.cancel_requested_at
    seen = await plan_runs.renew(claim.run.run_id, claim.token, lease=60.0)
    assert seen.cancel_requested_at == cancelled.cancel_requested_at
    with pytest.raises(RunNotFoundError):
        await plan_runs.request_cancel("plan-unknown")
    ended = await plan_runs.finish(claim.run.run_id, claim.token, status="failed")
    assert (await plan_runs.request_cancel(ended.run_id)).status == "failed"


# -- listing, erasing --------------------------------------------------------------------------


async def test_runs_are_listed_newest_first_page_by_page(plan_runs: PlanRuns, clock: FakeClock):
    made = []
    for i in range(5):
        made.append(await _create(plan_runs, user_id=f"u{i % 2}"))
        clock.advance(1.0)
    first = await plan_runs.finish(made[0].run.run_id, made[0].token, status="failed")
    page = await plan_runs.list_runs(limit=3)
    assert [s.run_id for s in page] == [c.run.run_id for c in made[4:1:-1]]
    rest = await plan_runs.list_runs(limit=3, before=page[-1].run_id)
    assert [s.run_id for s in rest] == [made[1].run.run_id, made[0].run.run_id]
    assert (rest[-1].plan, rest[-1].status, rest[-1].started_at) == (
        "book-meeting", "failed", first.started_at,
    )  # fmt: skip
    assert [s.run_id for s in await plan_runs.list_runs(user_id="u1")] == [
        made[3].run.run_id, made[1].run.run_id,
    ]  # fmt: skip
    assert len(await plan_runs.list_runs(status="running")) == 4
    assert await plan_runs.list_runs(limit=0) == []


async def test_erasing_a_user_deletes_their_runs_only(plan_runs: PlanRuns):
    mine = await _create(plan_runs, user_id="u-erase")
    theirs = await _create(plan_runs, user_id="u-keep")
    assert await plan_runs.delete_user("u-erase") == 1
    assert await plan_runs.get(mine.run.run_id) is None
    assert await plan_runs.get(theirs.run.run_id) is not None
    assert await plan_runs.delete_user("u-erase") == 0


# -- several workers, restarts -----------------------------------------------------------------


async def test_of_many_concurrent_resumes_in_one_process_exactly_one_claims(
    runs_backend: RunsBackend, clock: FakeClock
):
    handles = [runs_backend.open_plan_runs(clock) for _ in range(4)]
    try:
        created = await _create(handles[0], lease=10.0)
        clock.advance(11.0)
        claims = await asyncio.gather(*(h.claim(created.run.run_id) for h in handles * 3))
        assert sorted(claim.outcome for claim in claims) == ["claimed"] + ["held"] * 11
    finally:
        for handle in handles:
            await handle.close()


async def test_two_processes_never_resume_the_same_run(cross_process: RunsBackend):
    runs = cross_process.open_plan_runs()
    try:
        created = await _create(runs)
        await runs.release(created.run.run_id, created.token)
        outcomes = racers.race(cross_process, "plan", (created.run.run_id, 60.0), 4)
        assert sorted(outcomes) == ["claimed"] + ["held"] * 3
    finally:
        await runs.close()


async def test_a_run_held_by_a_killed_process_is_resumed_once_its_lease_passed(
    cross_process: RunsBackend,
):
    runs = cross_process.open_plan_runs()
    try:
        created = await _create(runs)
        await runs.release(created.run.run_id, created.token)
        outcome, token = racers.hold_then_kill(cross_process, "plan", (created.run.run_id, 1.5))
        assert outcome == "claimed"
        held = await runs.get(created.run.run_id)
        assert held is not None
        assert held.lease_until is not None
        assert held.token == token
        racers.wait_past(held.lease_until)
        resumed = await runs.claim(created.run.run_id, lease=60.0)
        assert (resumed.outcome, resumed.run.claims) == ("claimed", 3)
    finally:
        await runs.close()


async def test_runs_and_node_outcomes_survive_a_reopen(durable: RunsBackend, clock: FakeClock):
    first = durable.open_plan_runs(clock)
    claim = await _create(first)
    await first.set_node(claim.run.run_id, claim.token, "n1", "running")
    await first.set_node(claim.run.run_id, claim.token, "n1", "succeeded", result={"id": 7})
    await first.set_node(claim.run.run_id, claim.token, "n2", "running")
    await first.close()  # as if the worker stopped mid-plan
    reopened = durable.open_plan_runs(clock)
    try:
        stored = await reopened.get(claim.run.run_id)
        assert stored is not None
        assert stored.spec == SPEC
        assert stored.nodes["n1"].result == {"id": 7}
        assert [n.status for n in stored.nodes.values()] == ["succeeded", "running", "pending"]
        # the old holder's token still stands until someone claims the run
        await reopened.set_node(claim.run.run_id, claim.token, "n2", "running")
    finally:
        await reopened.close()


# -- results by archive hash -------------------------------------------------------------------


@pytest.fixture
def results_archive(runs_backend: RunsBackend) -> ArchiveBackend:
    """Where the backend archives its nodes' results (skipped where they stay in the records)."""
    if runs_backend.plan_results is None:
        pytest.skip(f"{runs_backend.name} keeps results in its records (no archive)")
    return runs_backend.plan_results


async def _succeeded(runs: PlanRuns, result: Any, node_id: str = "n1") -> PlanClaim:
    claim = await _create(runs)
    await runs.set_node(claim.run.run_id, claim.token, node_id, "running")
    await runs.set_node(claim.run.run_id, claim.token, node_id, "succeeded", result=result)
    return claim


async def test_a_result_is_archived_and_its_node_names_the_blob(
    plan_runs: PlanRuns, results_archive: ArchiveBackend
):
    claim = await _create(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    await plan_runs.set_node(run_id, token, "n1", "running")
    result = {"zeta": 1, "room_id": "A101", "note": "二楼", "rooms": [None, True, 1.5]}
    done = await plan_runs.set_node(run_id, token, "n1", "succeeded", result=result)
    assert done.result_hash is not None
    assert results_archive.read_raw(done.result_hash) is not None  # the blob is there
    assert done.result == result
    stored = await plan_runs.get(run_id)
    assert stored is not None
    assert stored.nodes["n1"] == done
    assert list(stored.nodes["n1"].result) == ["zeta", "room_id", "note", "rooms"]  # key order
    assert stored.nodes["n2"].result_hash is None  # no result, no blob


async def test_every_read_of_a_run_gives_the_archived_results_back(
    durable: RunsBackend, clock: FakeClock
):
    first = durable.open_plan_runs(clock)
    claim = await _two_succeeded(first)
    run_id, token = claim.run.run_id, claim.token
    await first.close()
    fresh = durable.open_plan_runs(clock)  # nothing of the writer's cache
    try:
        for run in (await fresh.get(run_id), await fresh.renew(run_id, token, lease=60.0),
                    await fresh.request_cancel(run_id)):  # fmt: skip
            assert run is not None
            assert [run.nodes[n].result for n in NODES] == [{}, {}, None]
        compensated = await fresh.record_compensation(run_id, token, "n2")
        assert (compensated.status, compensated.result) == ("compensated", {})
        ended = await fresh.finish(run_id, token, status="compensated")
        assert ended.nodes["n2"].result == {}
    finally:
        await fresh.close()


async def test_a_batch_archives_each_result_before_its_commit(
    plan_runs: PlanRuns, results_archive: ArchiveBackend
):
    claim = await _create(plan_runs)
    moved = await plan_runs.set_nodes(
        claim.run.run_id,
        claim.token,
        [NodeChange(n, "running") for n in NODES]
        + [NodeChange(n, "succeeded", result={"n": n}) for n in NODES],
    )
    assert [(n.result, n.result_hash is not None) for n in moved] == [
        ({"n": n}, True) for n in NODES
    ]
    hashes = {n.result_hash for n in moved}
    assert len(hashes) == 3  # one blob per node, even for equal results
    assert all(results_archive.read_raw(h) is not None for h in hashes if h is not None)


async def test_a_refused_write_leaves_no_blob_behind(
    plan_runs: PlanRuns, results_archive: ArchiveBackend
):
    claim = await _create(plan_runs)
    run_id, token = claim.run.run_id, claim.token
    before = await _blob_count(results_archive)
    with pytest.raises(NodeTransitionError):  # n2 never ran: the whole batch is refused
        await plan_runs.set_nodes(run_id, token, [
            NodeChange("n1", "running"), NodeChange("n1", "succeeded", result={"a": 1}),
            NodeChange("n2", "succeeded", result={"b": 2}),
        ])  # fmt: skip
    with pytest.raises(LeaseLostError):
        await plan_runs.set_node(run_id, token + 1, "n1", "succeeded", result={"c": 3})
    assert await _blob_count(results_archive) == before
    done = await _succeeded(plan_runs, {"d": 4})
    with pytest.raises(NodeTransitionError):  # the same result again: the first blob stays
        await plan_runs.set_node(done.run.run_id, done.token, "n1", "succeeded", result={"d": 4})
    stored = await plan_runs.get(done.run.run_id)
    assert stored is not None
    assert stored.nodes["n1"].result == {"d": 4}


@pytest.mark.parametrize("damage", ["missing", "corrupt", "another node's"])
async def test_a_result_whose_blob_is_lost_is_a_typed_error_naming_run_and_node(
    durable: RunsBackend, clock: FakeClock, damage: str
):
    archive = durable.plan_results
    assert archive is not None
    first = durable.open_plan_runs(clock)
    claim = await _succeeded(first, {"room_id": "A101"})
    other = await _succeeded(first, {"room_id": "B202"}, node_id="n2")
    run_id = claim.run.run_id
    stored = await first.get(run_id)
    await first.close()
    assert stored is not None
    digest = stored.nodes["n1"].result_hash
    assert digest is not None
    if damage == "missing":
        await _delete_blob(archive, digest)
    elif damage == "corrupt":
        archive.write_raw(digest, b"HMA1z" + b"\x00" * 20)  # a torn write
    else:
        theirs = (await _get_fresh(durable, clock, other.run.run_id)).nodes["n2"].result_hash
        assert theirs is not None
        raw = archive.read_raw(theirs)
        assert raw is not None
        archive.write_raw(digest, raw)  # a blob that verifies, but is another node's
    fresh = durable.open_plan_runs(clock)
    try:
        with pytest.raises(PlanResultLostError) as caught:
            await fresh.get(run_id)
        error = caught.value
        assert (error.run_id, error.node_id, error.digest) == (run_id, "n1", digest)
        assert run_id in error.message
        assert "'n1'" in error.message
        assert error.code == "plan_result_lost"
        assert isinstance(error, StoreError)  # the edges report it as the store's failure
        assert await fresh.get(other.run.run_id) is not None  # other runs read on
    finally:
        await fresh.close()


async def test_a_run_whose_result_is_lost_is_not_left_claimed(
    durable: RunsBackend, clock: FakeClock
):
    archive = durable.plan_results
    assert archive is not None
    first = durable.open_plan_runs(clock)
    claim = await _succeeded(first, {"room_id": "A101"})
    run_id = claim.run.run_id
    await first.release(run_id, claim.token)
    digest = (await _get_fresh(durable, clock, run_id)).nodes["n1"].result_hash
    await first.close()
    assert digest is not None
    await _delete_blob(archive, digest)
    fresh = durable.open_plan_runs(clock)
    try:
        with pytest.raises(PlanResultLostError, match="n1"):
            await fresh.claim(run_id, lease=60.0)
        with pytest.raises(PlanResultLostError):  # released again: claimable, still lost
            await fresh.claim(run_id, lease=60.0)
    finally:
        await fresh.close()


async def test_erasing_a_user_deletes_their_result_blobs_only(
    plan_runs: PlanRuns, results_archive: ArchiveBackend
):
    mine = await _succeeded(plan_runs, {"same": "result"})
    kept = await _create(plan_runs, user_id="u-keep")
    await plan_runs.set_node(kept.run.run_id, kept.token, "n1", "running")
    await plan_runs.set_node(
        kept.run.run_id, kept.token, "n1", "succeeded", result={"same": "result"}
    )
    assert await _blob_count(results_archive) == 2
    assert await plan_runs.delete_user("u1") == 1
    assert await plan_runs.get(mine.run.run_id) is None
    stored = await plan_runs.get(kept.run.run_id)
    assert stored is not None
    assert stored.nodes["n1"].result == {"same": "result"}  # an equal result, its own blob
    assert await _blob_count(results_archive) == 1


async def _get_fresh(backend: RunsBackend, clock: FakeClock, run_id: str) -> PlanRun:
    runs = backend.open_plan_runs(clock)
    try:
        run = await runs.get(run_id)
    finally:
        await runs.close()
    assert run is not None
    return run


async def _delete_blob(backend: ArchiveBackend, digest: str) -> None:
    assert await backend.open().delete(digest)


async def _blob_count(backend: ArchiveBackend) -> int:
    archive = backend.open()
    assert isinstance(archive, ArchiveUpkeep)
    return len(await archive.digests_before(float("inf")))
