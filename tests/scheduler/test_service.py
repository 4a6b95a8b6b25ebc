"""The scheduler on a clock the test moves: a job fires at its due time, once; a restart across
a due time catches up (``run_once``) or records the miss (``skip``), never silently; a run that
would overlap a running one is skipped and recorded; manual runs; plan and function jobs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hermes.scheduler.runs import JobRun
from hermes.scheduler.service import JobNotFoundError
from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from tests.scheduler.conftest import at, function_job, message_job, settle


async def _runs(path: Path, job: str = "daily-report") -> list[JobRun]:
    """The job's runs, oldest due time first (read through a connection of its own)."""
    runs = SQLiteJobRuns(path)
    try:
        return sorted(await runs.list_runs(job, limit=1000), key=lambda r: r.due_at)
    finally:
        await runs.close()


async def test_a_job_fires_at_its_due_time_as_a_turn_of_its_session(
    open_scheduler, clock, agent, runs_file
):
    scheduler = open_scheduler([message_job()])
    await scheduler.start()
    await settle(scheduler, clock)
    assert await _runs(runs_file) == []  # 08:00: nothing due yet

    clock.set(at("2026-12-04 09:00:00.5"))
    await settle(scheduler, clock)
    [run] = await _runs(runs_file)
    assert (run.status, run.due_at) == ("succeeded", at("2026-12-04 09:00"))
    record = await agent.store.load_session("ops-daily-report")
    assert record is not None
    assert record.item_count == 2
    items = await agent.store.read_items("ops-daily-report", after_seq=0, limit=10)
    assert items[0].content == "生成昨日核心指标报告"
    assert items[0].trace_id == run.trace_id  # the run's trace is its turn's


async def test_a_restart_across_a_due_time_runs_it_once_with_run_once(
    open_scheduler, clock, replies, runs_file
):
    first = open_scheduler([message_job()])
    await first.start()
    clock.set(at("2026-12-04 09:00:01"))
    await settle(first, clock)
    await first.stop()

    clock.set(at("2026-12-06 10:30"))  # down over two due times (5th and 6th, 09:00)
    second = open_scheduler([message_job()])
    await second.start()
    await settle(second, clock)

    runs = await _runs(runs_file)
    assert [(r.status, r.due_at) for r in runs] == [
        ("succeeded", at("2026-12-04 09:00")),
        ("missed", at("2026-12-05 09:00")),
        ("succeeded", at("2026-12-06 09:00")),  # the one catch-up run, late
    ]
    assert runs[-1].started_at == at("2026-12-06 10:30")
    assert replies.turns == 2
    [entry] = await second.list_jobs()
    assert entry["missed"] == 1
    assert entry["last_run"]["at"] == "2026-12-06T09:00:00+08:00"


async def test_a_restart_across_a_due_time_records_it_missed_with_skip(
    open_scheduler, clock, replies, runs_file
):
    first = open_scheduler([message_job(misfire="skip")])
    await first.start()
    clock.set(at("2026-12-04 09:00:01"))
    await settle(first, clock)
    await first.stop()

    clock.set(at("2026-12-06 10:30"))
    second = open_scheduler([message_job(misfire="skip")])
    await second.start()
    await settle(second, clock)

    statuses = [(r.status, r.due_at) for r in await _runs(runs_file)]
    assert statuses == [
        ("succeeded", at("2026-12-04 09:00")),
        ("missed", at("2026-12-05 09:00")),
        ("missed", at("2026-12-06 09:00")),
    ]
    assert replies.turns == 1
    [entry] = await second.list_jobs()
    assert (entry["missed"], entry["last_run"]["status"]) == (2, "missed")


async def test_a_due_time_within_the_grace_is_on_time_not_missed(
    open_scheduler, clock, replies, runs_file
):
    first = open_scheduler([message_job(misfire="skip")])
    await first.start()
    clock.set(at("2026-12-04 09:00:01"))
    await settle(first, clock)
    await first.stop()
    clock.set(at("2026-12-05 09:00:30"))  # restarted 30 s after the next due time
    second = open_scheduler([message_job(misfire="skip")])
    await second.start()
    await settle(second, clock)
    assert [r.status for r in await _runs(runs_file)] == ["succeeded", "succeeded"]


async def test_a_run_that_would_overlap_a_running_one_is_skipped_and_recorded(
    open_scheduler, clock, runs_file
):
    release = asyncio.Event()
    started: list[str] = []

    async def slow(agent):
        started.append("run")
        await release.wait()
        return "done"

    scheduler = open_scheduler([function_job("daily-report", slow, cron="* * * * *")])
    await scheduler.start()
    clock.set(at("2026-12-04 08:01:00.2"))
    await asyncio.sleep(0.2)
    clock.set(at("2026-12-04 08:02:00.2"))  # the first run still runs
    for _ in range(100):
        if len(await _runs(runs_file)) == 2:
            break
        await asyncio.sleep(0.02)
    release.set()
    await settle(scheduler, clock)

    first, second = await _runs(runs_file)
    assert (first.status, second.status) == ("succeeded", "skipped")
    assert second.skipped_for == first.run_id
    assert started == ["run"]


async def test_a_new_job_has_nothing_missed_before_it_was_first_seen(
    open_scheduler, clock, runs_file
):
    clock.set(at("2026-12-10 10:00"))
    scheduler = open_scheduler([message_job()])
    await scheduler.start()
    await settle(scheduler, clock)
    assert await _runs(runs_file) == []
    [entry] = await scheduler.list_jobs()
    assert entry == {
        "name": "daily-report",
        "cron": "0 9 * * *",
        "timezone": "Asia/Shanghai",
        "next_run": "2026-12-11T09:00:00+08:00",
        "last_run": None,
        "missed": 0,
    }


async def test_a_manual_run_does_not_hide_a_missed_scheduled_one(
    open_scheduler, clock, replies, runs_file
):
    first = open_scheduler([message_job(misfire="skip")])
    await first.start()
    clock.set(at("2026-12-04 09:00:01"))
    await settle(first, clock)
    await first.stop()

    clock.set(at("2026-12-05 09:30"))
    manual = open_scheduler([message_job(misfire="skip")])
    report = await manual.run_job("daily-report")  # not started: a `hermes jobs run`
    assert report.ok
    assert report.to_json_dict()["trigger"] == "manual"
    await manual.stop()

    clock.set(at("2026-12-05 10:00"))
    second = open_scheduler([message_job(misfire="skip")])
    await second.start()
    await settle(second, clock)
    statuses = [r.status for r in await _runs(runs_file)]
    assert statuses == ["succeeded", "missed", "succeeded"]  # 4th, 5th 09:00, the manual one


async def test_run_now_returns_the_ids_at_once_and_runs_in_the_background(
    open_scheduler, clock, runs_file
):
    scheduler = open_scheduler([message_job()])
    started = await scheduler.run_now("daily-report")
    assert started.run_id.startswith("job-")
    assert len(started.trace_id) == 32
    await scheduler.wait_idle()
    [run] = await _runs(runs_file)
    assert (run.run_id, run.trace_id, run.status) == (
        started.run_id,
        started.trace_id,
        "succeeded",
    )


async def test_an_unknown_job_is_refused_naming_the_jobs(open_scheduler):
    scheduler = open_scheduler([message_job()])
    with pytest.raises(JobNotFoundError, match="daily-report") as caught:
        await scheduler.run_now("nightly")
    assert caught.value.status == 404


async def test_a_plan_job_runs_its_template_for_its_session(open_scheduler, agent, tmp_path):
    import json
    from dataclasses import replace

    from hermes.agent.plans import PlanSetup, configure_plans
    from hermes.tools.builtin import BUILTIN_TOOLS
    from hermes.tools.plans.library import PlanLibrary

    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "report.yaml").write_text(
        "params: {n: {type: integer}}\n"
        "nodes: [{id: add, tool: calculator, params: {expression: '{{params.n}} + 1'}}]\n"
        "outputs: {total: '{{add.result.result}}'}\n",
        encoding="utf-8",
    )
    agent.tools.register(BUILTIN_TOOLS["calculator"])
    configure_plans(agent, PlanSetup(PlanLibrary(tmp_path / "plans")))
    plan_job = replace(
        message_job(), action="plan", message=None, plan={"template": "report", "params": {"n": 41}}
    )
    report = await open_scheduler([plan_job]).run_job("daily-report")
    assert report.run.status == "succeeded", report.run.error
    reply = json.loads(report.reply or "")
    assert reply["status"] == "succeeded"
    assert reply["outputs"] == {"total": 42}
    missing = replace(plan_job, plan={"template": "nope", "params": {}})
    failed = await open_scheduler([missing]).run_job("daily-report")
    assert failed.run.status == "failed"
    assert "template_not_found" in (failed.run.error or "")


async def test_a_function_job_gets_the_agent_and_its_text_is_the_reply(open_scheduler, agent):
    seen = []

    async def daily(given):
        seen.append(given)
        result = await given.run("hello", session_id="ops-function-job")
        return f"delivered: {result.reply}"

    scheduler = open_scheduler([function_job("daily", daily)])
    report = await scheduler.run_job("daily")
    assert seen == [agent]
    assert report.ok
    assert report.reply == "delivered: report 1"


async def test_a_function_job_that_raises_is_a_failed_run_with_its_error(open_scheduler):
    def broken(agent):
        raise RuntimeError("the report source is down")

    scheduler = open_scheduler([function_job("daily", broken)])
    report = await scheduler.run_job("daily")
    assert report.run.status == "failed"
    assert report.run.error == "RuntimeError: the report source is down"


async def test_stopping_interrupts_a_running_run_and_records_it(open_scheduler, clock, runs_file):
    async def forever(agent):
        await asyncio.Event().wait()
        return ""

    scheduler = open_scheduler([function_job("daily-report", forever)])
    await scheduler.run_now("daily-report")
    await asyncio.sleep(0.05)
    await scheduler.stop(grace=0.1)
    [run] = await _runs(runs_file)
    assert run.status == "failed"
    assert "interrupted" in (run.error or "")


async def test_a_disabled_job_never_fires_and_has_no_next_run(open_scheduler, clock, runs_file):
    scheduler = open_scheduler([message_job(enabled=False)])
    await scheduler.start()
    clock.set(at("2026-12-04 09:00:01"))
    await asyncio.sleep(0.05)
    assert await _runs(runs_file) == []
    [entry] = await scheduler.list_jobs()
    assert entry["next_run"] is None


async def test_a_host_that_slept_over_due_times_records_them_and_catches_up_once(
    open_scheduler, clock, replies, runs_file
):
    scheduler = open_scheduler([message_job(cron="0 * * * *")])  # every hour
    await scheduler.start()
    clock.set(at("2026-12-04 09:00:02"))
    await settle(scheduler, clock)
    clock.set(at("2026-12-04 12:20"))  # the host was suspended from 09:00 to 12:20
    await settle(scheduler, clock)
    statuses = [(r.status, r.due_at) for r in await _runs(runs_file)]
    assert statuses == [
        ("succeeded", at("2026-12-04 09:00")),
        ("missed", at("2026-12-04 10:00")),
        ("missed", at("2026-12-04 11:00")),
        ("succeeded", at("2026-12-04 12:00")),
    ]
    assert replies.turns == 2
    clock.set(at("2026-12-04 13:00:01"))  # and the timer goes on from there
    await settle(scheduler, clock)
    assert len(await _runs(runs_file)) == 5
