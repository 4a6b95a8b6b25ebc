"""Due times in the job's zone, whatever the host's: a host in UTC fires an ``Asia/Shanghai``
09:00 job at 09:00 Shanghai (01:00 UTC); ``Europe/Berlin`` across both changes of the clock."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from zoneinfo import ZoneInfo

import pytest

from hermes.scheduler.schedule import Schedule, iso
from tests.scheduler.conftest import SHANGHAI, at, message_job, settle

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")


@pytest.fixture
def host_in_utc(monkeypatch):
    """This process's local zone is UTC (``TZ``), as on most servers."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_host_in_utc_computes_shanghai_nine_oclock(host_in_utc):
    assert time.localtime(0).tm_zone == "UTC"
    schedule = Schedule.crontab("0 9 * * *", SHANGHAI)
    due = schedule.next_after(at("2026-12-04 00:00", UTC))
    assert due == at("2026-12-04 01:00", UTC)
    assert schedule.iso(due) == "2026-12-04T09:00:00+08:00"


async def test_a_host_in_utc_fires_the_shanghai_job_at_nine_shanghai(
    host_in_utc, open_scheduler, clock
):
    clock.set(at("2026-12-04 00:30", UTC))
    scheduler = open_scheduler([message_job()])
    await scheduler.start()
    clock.set(at("2026-12-04 00:59:59", UTC))  # 08:59:59 in Shanghai
    await settle(scheduler, clock)
    assert await scheduler.runs.last_run("daily-report") is None
    clock.set(at("2026-12-04 01:00:00.3", UTC))
    await settle(scheduler, clock)
    run = await scheduler.runs.last_run("daily-report")
    assert run is not None
    assert run.status == "succeeded"
    assert iso(run.due_at, SHANGHAI) == "2026-12-04T09:00:00+08:00"


def test_jobs_list_in_a_utc_process_shows_shanghai_times(tmp_path):
    """The CLI in a process whose TZ is UTC: next_run carries +08:00, not the host's zone."""
    (tmp_path / "hermes.yaml").write_text(
        "scheduler:\n  timezone: Asia/Shanghai\n  jobs:\n"
        "    - {name: daily, cron: '0 9 * * *', message: hi, session_id: ops-daily-1}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(TZ="UTC", HOME=str(tmp_path))
    hermes = os.path.join(os.path.dirname(sys.executable), "hermes")
    done = subprocess.run(
        [hermes, "jobs", "list", "--json"], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"next_run": "' in done.stdout
    assert "T09:00:00+08:00" in done.stdout


def _fires(expression: str, start: str, count: int) -> list[str]:
    schedule = Schedule.crontab(expression, BERLIN)
    times, after = [], at(start, BERLIN)
    for _ in range(count):
        after = schedule.next_after(after)
        times.append(schedule.iso(after))
    return times


def test_berlin_spring_forward_runs_a_skipped_wall_time_at_the_same_instant_later():
    # 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that night.
    assert _fires("30 2 * * *", "2026-03-28 12:00", 2) == [
        "2026-03-29T03:30:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    assert _fires("0 9 * * *", "2026-03-28 12:00", 2) == [
        "2026-03-29T09:00:00+02:00",  # 07:00 UTC, one hour earlier than the day before
        "2026-03-30T09:00:00+02:00",
    ]


def test_berlin_fall_back_runs_a_repeated_wall_time_once():
    # 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    assert _fires("30 2 * * *", "2026-10-24 12:00", 2) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]
    assert _fires("*/30 * * * *", "2026-10-25 01:50", 4) == [
        "2026-10-25T02:00:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-25T03:00:00+01:00",  # the repeated hour is not run again
        "2026-10-25T03:30:00+01:00",
    ]


def test_due_between_lists_the_due_times_in_an_interval_oldest_first():
    schedule = Schedule.crontab("0 9 * * *", SHANGHAI)
    dues = list(schedule.due_between(at("2026-12-01 09:00"), at("2026-12-03 09:00")))
    assert dues == [at("2026-12-02 09:00"), at("2026-12-03 09:00")]


def test_an_ended_schedule_has_no_next_due_time():
    schedule = Schedule.fields({"year": 2020, "hour": 9, "minute": 0}, SHANGHAI)
    assert schedule.next_after(at("2026-12-01 00:00")) is None
