"""The JobRuns contract (``hermes.scheduler.runs``; DESIGN.md, "Public contracts", Scheduler and
"Scale-out": a job runs once per (job, due time) however many workers run): every backend
(``tests.storage.backends.RUNS_BACKENDS``) must pass every test here."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.errors import InvalidInputError, LeaseLostError, RunNotFoundError
from hermes.scheduler.runs import ABANDONED, JobClaim, JobRuns
from tests.storage.backends import RunsBackend
from tests.storage.conformance import racers
from tests.storage.conformance.conftest import FakeClock

JOB = "daily-report"
NINE = 1_767_258_000.0  # 2026-01-01 09:00 UTC: a cron due time
DAY = 86_400.0


# -- claiming --------------------------------------------------------------------------------


async def test_a_first_claim_of_a_due_time_is_claimed_and_running(job_runs: JobRuns):
    claim = await job_runs.claim(JOB, NINE, trace_id="trace-1", lease=60.0)
    run = claim.run
    assert claim.outcome == "claimed"
    assert (run.job, run.due_at, run.status, run.trace_id) == (JOB, NINE, "running", "trace-1")
    assert run.attempts == 1
    assert run.run_id.startswith("job-")
    assert run.lease_until is not None
    assert run.started_at is not None
    assert await job_runs.get(run.run_id) == run
    assert await job_runs.running(JOB) == run


async def test_a_second_claim_of_the_same_due_time_is_taken_whatever_the_first_did(
    job_runs: JobRuns,
):
    first = await job_runs.claim(JOB, NINE, trace_id="trace-1")
    assert (await job_runs.claim(JOB, NINE, trace_id="trace-2")).outcome == "taken"
    await job_runs.finish(first.run.run_id, first.token, status="failed", error="boom")
    taken = await job_runs.claim(JOB, NINE, trace_id="trace-3")
    assert taken.outcome == "taken"
    assert (taken.run.run_id, taken.run.status, taken.run.trace_id) == (
        first.run.run_id, "failed", "trace-1",
    )  # fmt: skip


async def test_due_times_are_the_same_to_the_millisecond(job_runs: JobRuns):
    await job_runs.claim(JOB, NINE, trace_id="trace-1")
    assert (await job_runs.claim(JOB, NINE + 0.0001, trace_id="trace-2")).outcome == "taken"
    assert (await job_runs.claim(JOB, NINE + 0.5, trace_id="t-3", on_overlap="run")).outcome == (
        "claimed"
    )


async def test_a_claim_while_another_run_of_the_job_runs_is_skipped_and_recorded(
    job_runs: JobRuns,
):
    first = await job_runs.claim(JOB, NINE, trace_id="trace-1", lease=3600.0)
    skipped = await job_runs.claim(JOB, NINE + 60, trace_id="trace-2")
    assert skipped.outcome == "skipped"
    assert (skipped.run.status, skipped.run.skipped_for) == ("skipped", first.run.run_id)
    assert skipped.run.started_at is None
    assert skipped.run.finished_at is not None
    # recorded, once: a second worker deciding the same due time finds it
    assert (await job_runs.claim(JOB, NINE + 60, trace_id="trace-3")).outcome == "taken"
    assert await job_runs.count_runs(JOB, status="skipped") == 1
    # other jobs do not overlap it
    assert (await job_runs.claim("other-job", NINE + 60, trace_id="t")).outcome == "claimed"


async def test_a_manual_run_may_overlap_a_running_one(job_runs: JobRuns):
    await job_runs.claim(JOB, NINE, trace_id="trace-1")
    manual = await job_runs.claim(JOB, NINE + 5, trace_id="trace-2", on_overlap="run")
    assert manual.outcome == "claimed"


async def test_a_finished_run_no_longer_overlaps(job_runs: JobRuns):
    first = await job_runs.claim(JOB, NINE, trace_id="trace-1")
    await job_runs.finish(first.run.run_id, first.token, status="succeeded")
    assert await job_runs.running(JOB) is None
    assert (await job_runs.claim(JOB, NINE + DAY, trace_id="trace-2")).outcome == "claimed"


async def test_malformed_job_names_are_refused(job_runs: JobRuns):
    for job in ("", "j" * 129, "a\tb"):
        with pytest.raises(InvalidInputError):
            await job_runs.claim(job, NINE, trace_id="t")
        with pytest.raises(InvalidInputError):
            await job_runs.record_missed(job, NINE)


# -- finishing, fencing, dead workers --------------------------------------------------------


async def test_finish_records_the_outcome_and_releases_the_run(job_runs: JobRuns):
    claim = await job_runs.claim(JOB, NINE, trace_id="trace-1")
    done = await job_runs.finish(claim.run.run_id, claim.token, status="failed", error="timeout")
    assert (done.status, done.error, done.lease_until) == ("failed", "timeout", None)
    assert done.finished_at is not None
    with pytest.raises(LeaseLostError):
        await job_runs.finish(claim.run.run_id, claim.token, status="succeeded")
    with pytest.raises(LeaseLostError):
        await job_runs.renew(claim.run.run_id, claim.token, lease=60.0)
    with pytest.raises(RunNotFoundError):
        await job_runs.finish("job-unknown", 1, status="succeeded")


async def test_a_wrong_token_writes_nothing(job_runs: JobRuns):
    claim = await job_runs.claim(JOB, NINE, trace_id="trace-1")
    with pytest.raises(LeaseLostError):
        await job_runs.finish(claim.run.run_id, claim.token + 1, status="succeeded")
    stored = await job_runs.get(claim.run.run_id)
    assert stored is not None
    assert stored.status == "running"


async def test_a_renewed_run_keeps_blocking_overlap(job_runs: JobRuns, clock: FakeClock):
    claim = await job_runs.claim(JOB, NINE, trace_id="trace-1", lease=60.0)
    clock.advance(50.0)
    await job_runs.renew(claim.run.run_id, claim.token, lease=60.0)
    clock.advance(50.0)
    assert (await job_runs.claim(JOB, NINE + 60, trace_id="trace-2")).outcome == "skipped"


async def test_a_dead_workers_run_is_taken_over_for_the_same_due_time(
    job_runs: JobRuns, clock: FakeClock
):
    first = await job_runs.claim(JOB, NINE, trace_id="trace-1", lease=60.0)
    clock.advance(61.0)
    assert await job_runs.running(JOB) is None
    again = await job_runs.claim(JOB, NINE, trace_id="trace-2", lease=60.0)
    assert again.outcome == "claimed"
    assert (again.run.run_id, again.run.attempts, again.run.trace_id) == (
        first.run.run_id, 2, "trace-2",
    )  # fmt: skip
    with pytest.raises(LeaseLostError):
        await job_runs.finish(first.run.run_id, first.token, status="succeeded")
    await job_runs.finish(again.run.run_id, again.token, status="succeeded")


async def test_a_dead_workers_run_is_recorded_abandoned_by_the_next_due_time(
    job_runs: JobRuns, clock: FakeClock
):
    first = await job_runs.claim(JOB, NINE, trace_id="trace-1", lease=60.0)
    clock.advance(DAY)
    nxt = await job_runs.claim(JOB, NINE + DAY, trace_id="trace-2")
    assert nxt.outcome == "claimed"  # a dead run does not overlap
    abandoned = await job_runs.get(first.run.run_id)
    assert abandoned is not None
    assert (abandoned.status, abandoned.error) == ("failed", ABANDONED)
    with pytest.raises(LeaseLostError):
        await job_runs.finish(first.run.run_id, first.token, status="succeeded")


# -- missed runs, delivery, reads ------------------------------------------------------------


async def test_a_missed_run_is_recorded_once(job_runs: JobRuns):
    missed = await job_runs.record_missed(JOB, NINE)
    assert (missed.status, missed.trace_id, missed.started_at) == ("missed", None, None)
    again = await job_runs.record_missed(JOB, NINE)
    assert again.run_id == missed.run_id
    assert (await job_runs.claim(JOB, NINE, trace_id="t")).outcome == "taken"
    assert await job_runs.count_runs(JOB, status="missed") == 1


async def test_recording_a_missed_run_keeps_a_run_that_exists(job_runs: JobRuns):
    claim = await job_runs.claim(JOB, NINE, trace_id="trace-1")
    standing = await job_runs.record_missed(JOB, NINE)
    assert (standing.run_id, standing.status) == (claim.run.run_id, "running")


async def test_delivery_outcomes_are_recorded(job_runs: JobRuns):
    claim = await job_runs.claim(JOB, NINE, trace_id="trace-1")
    await job_runs.finish(claim.run.run_id, claim.token, status="succeeded")
    failed = await job_runs.record_delivery(
        claim.run.run_id, outcome="failed", attempts=5, error="HTTP 503 from the receiver"
    )
    assert (failed.delivery, failed.delivery_attempts) == ("failed", 5)
    assert failed.delivery_error == "HTTP 503 from the receiver"
    assert failed.status == "succeeded"  # the run's own outcome is untouched
    with pytest.raises(RunNotFoundError):
        await job_runs.record_delivery("job-unknown", outcome="delivered", attempts=1)


async def test_last_run_list_and_counts(job_runs: JobRuns):
    for day in range(5):
        claim = await job_runs.claim(JOB, NINE + day * DAY, trace_id=f"trace-{day}")
        await job_runs.finish(claim.run.run_id, claim.token, status="succeeded")
    await job_runs.record_missed(JOB, NINE + 5 * DAY)
    await job_runs.claim("other-job", NINE, trace_id="t-other")
    last = await job_runs.last_run(JOB)
    assert last is not None
    assert (last.due_at, last.status) == (NINE + 5 * DAY, "missed")
    assert await job_runs.last_run("never-ran") is None
    page = await job_runs.list_runs(JOB, limit=3)
    assert [run.due_at for run in page] == [NINE + d * DAY for d in (5, 4, 3)]
    rest = await job_runs.list_runs(JOB, limit=10, before=page[-1].due_at)
    assert [run.due_at for run in rest] == [NINE + d * DAY for d in (2, 1, 0)]
    assert len(await job_runs.list_runs(limit=100)) == 7
    assert await job_runs.count_runs(JOB, status="succeeded") == 5
    assert await job_runs.count_runs(JOB, status="succeeded", since=NINE + 3 * DAY) == 2
    assert await job_runs.list_runs(JOB, limit=0) == []


async def test_prune_deletes_old_finished_runs_and_never_a_running_one(job_runs: JobRuns):
    running = await job_runs.claim(JOB, NINE, trace_id="trace-1", lease=10 * DAY)
    await job_runs.record_missed("other-job", NINE)
    await job_runs.record_missed("other-job", NINE + 2 * DAY)
    assert await job_runs.prune(NINE + DAY) == 1
    assert await job_runs.get(running.run.run_id) is not None
    assert [run.due_at for run in await job_runs.list_runs("other-job")] == [NINE + 2 * DAY]


# -- any sequence of ticks --------------------------------------------------------------------

_DUES = [NINE, NINE + 60, NINE + 120]
_ticks = st.lists(
    st.one_of(
        st.tuples(
            st.just("claim"),
            st.integers(0, 2),
            st.sampled_from(["skip", "run"]),
            st.sampled_from([100.0, 1000.0]),
        ),
        st.tuples(
            st.just("finish"),
            st.integers(0, 2),
            st.sampled_from(["succeeded", "failed"]),
            st.booleans(),
        ),
        st.tuples(st.just("missed"), st.integers(0, 2)),
        st.tuples(st.just("advance"), st.sampled_from([50.0, 500.0, 2000.0])),
    ),
    max_size=14,
)


@dataclass(frozen=True)
class _Run:
    """What the contract says is stored for one due time (the reference model)."""

    run_id: str
    status: str
    token: int
    attempts: int
    lease_until: float

    def live(self, now: float) -> bool:
        return self.status == "running" and self.lease_until > now


def _expected_claim(model: dict[int, _Run], due: int, skip: bool, now: float) -> str:
    row = model.get(due)
    if row is not None:
        return "claimed" if row.status == "running" and not row.live(now) else "taken"
    for other, run in model.items():
        if run.status == "running" and not run.live(now):
            model[other] = replace(run, status="failed")  # abandoned by this claim
    if skip and any(run.live(now) for run in model.values()):
        return "skipped"
    return "claimed"


def _after_claim(model: dict[int, _Run], due: int, got: JobClaim, now: float, lease: float) -> None:
    row = model.get(due)
    if got.outcome == "skipped":
        model[due] = _Run(got.run.run_id, "skipped", got.token, 0, 0.0)
    elif got.outcome == "claimed":
        attempts = 1 if row is None else row.attempts + 1
        model[due] = _Run(got.run.run_id, "running", got.token, attempts, now + lease)


async def _tick(runs: JobRuns, job: str, model: dict[int, _Run], step: tuple[Any, ...],
                now: float, stale: dict[int, int]) -> None:  # fmt: skip
    if step[0] == "claim":
        expected = _expected_claim(model, step[1], step[2] == "skip", now)
        got = await runs.claim(job, _DUES[step[1]], trace_id="t", lease=step[3],
                               on_overlap=step[2])  # fmt: skip
        assert got.outcome == expected, (step, model)
        if step[1] in model and got.outcome == "claimed":
            stale[step[1]] = model[step[1]].token
        _after_claim(model, step[1], got, now, step[3])
    elif step[0] == "missed":
        got_run = await runs.record_missed(job, _DUES[step[1]])
        if step[1] not in model:
            model[step[1]] = _Run(got_run.run_id, "missed", got_run.token, 0, 0.0)
        assert got_run.run_id == model[step[1]].run_id
    elif step[1] in model:  # finish a run that exists, with its token or a stale one
        row = model[step[1]]
        token = row.token if step[3] else stale.get(step[1], row.token + 1)
        holds = row.status == "running" and token == row.token
        try:
            await runs.finish(row.run_id, token, status=step[2])
        except LeaseLostError:
            assert not holds, (step, model)
            return
        assert holds, (step, model)
        model[step[1]] = replace(row, status=step[2])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_ticks)
def test_any_sequence_of_ticks_gets_the_answers_the_contract_gives(
    runs_backend: RunsBackend, steps: list[tuple[Any, ...]]
):
    """Claims of three due times (skipping or not), finishes with the standing or a stale
    token, missed runs and time passing over leases: every answer, every stored run and the
    running one are what the reference model of the contract (``_Run``) gives."""

    async def play() -> None:
        clock, job = FakeClock(), f"job-{uuid.uuid4().hex[:12]}"
        runs = runs_backend.open_job_runs(clock)
        model: dict[int, _Run] = {}
        stale: dict[int, int] = {}
        try:
            for step in steps:
                if step[0] == "advance":
                    clock.advance(step[1])
                else:
                    await _tick(runs, job, model, step, clock.now, stale)
                for due, row in model.items():
                    stored = await runs.get(row.run_id)
                    assert stored is not None
                    assert (stored.due_at, stored.status, stored.token, stored.attempts) == (
                        _DUES[due], row.status, row.token, row.attempts,
                    ), (step, model)  # fmt: skip
                live = sorted(due for due, row in model.items() if row.live(clock.now))
                running = await runs.running(job)
                assert (running.due_at if running else None) == (_DUES[live[0]] if live else None)
        finally:
            await runs.close()

    asyncio.run(play())


# -- several workers, restarts ---------------------------------------------------------------


async def test_of_many_concurrent_claims_in_one_process_exactly_one_runs(
    runs_backend: RunsBackend, clock: FakeClock
):
    handles = [runs_backend.open_job_runs(clock) for _ in range(4)]
    try:
        claims = await asyncio.gather(
            *(h.claim(JOB, NINE, trace_id=f"t-{i}") for i, h in enumerate(handles * 3))
        )
        assert sorted(claim.outcome for claim in claims) == ["claimed"] + ["taken"] * 11
        assert len({claim.run.run_id for claim in claims}) == 1
    finally:
        for handle in handles:
            await handle.close()


def test_a_job_runs_once_per_due_time_however_many_processes_claim_it(
    cross_process: RunsBackend,
):
    outcomes = racers.race(cross_process, "job", (JOB, NINE, 60.0), 4)
    assert sorted(outcomes) == ["claimed"] + ["taken"] * 3


async def test_a_run_of_a_killed_process_is_taken_over_once_its_lease_passed(
    cross_process: RunsBackend,
):
    due = time.time()
    outcome, token = racers.hold_then_kill(cross_process, "job", (JOB, due, 1.5))
    assert outcome == "claimed"
    runs = cross_process.open_job_runs()
    try:
        held = await runs.last_run(JOB)
        assert held is not None
        assert held.lease_until is not None
        assert held.status == "running"
        racers.wait_past(held.lease_until)
        assert await runs.running(JOB) is None
        again = await runs.claim(JOB, due, trace_id="t-2")
        assert (again.outcome, again.run.attempts, again.run.run_id) == ("claimed", 2, held.run_id)
        assert again.token != token
    finally:
        await runs.close()


async def test_runs_survive_a_reopen(durable: RunsBackend, clock: FakeClock):
    first = durable.open_job_runs(clock)
    claim = await first.claim(JOB, NINE, trace_id="trace-1")
    await first.finish(claim.run.run_id, claim.token, status="succeeded")
    running = await first.claim(JOB, NINE + DAY, trace_id="trace-2", lease=3600.0)
    await first.close()
    reopened = durable.open_job_runs(clock)
    try:
        done = await reopened.get(claim.run.run_id)
        assert done is not None
        assert done.status == "succeeded"
        assert (await reopened.claim(JOB, NINE + 2 * DAY, trace_id="t")).outcome == "skipped"
        await reopened.finish(running.run.run_id, running.token, status="succeeded")
    finally:
        await reopened.close()
