"""The ``scheduler`` section: the zone is explicit whenever there is a job, cron expressions,
names and session ids are checked when the file is read, and ``@scheduled_job`` functions of
``jobs_dir`` become jobs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hermes.config import load_config
from hermes.errors import ConfigError
from hermes.scheduler import scheduled_job
from hermes.scheduler.setup import configured_jobs


def _load(tmp_path: Path, text: str):
    (tmp_path / "hermes.yaml").write_text(textwrap.dedent(text), encoding="utf-8")
    return load_config(cwd=tmp_path, environ={}, home=tmp_path)


JOB = "{name: daily-report, cron: '0 9 * * *', message: 生成报告, session_id: ops-daily-report}"


def test_a_job_without_a_timezone_is_refused_never_the_hosts_zone(tmp_path):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, f"scheduler:\n  jobs:\n    - {JOB}\n")
    assert "'timezone' is required" in caught.value.message
    assert "hermes.yaml" in caught.value.message


def test_a_jobs_dir_without_a_timezone_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="'timezone' is required"):
        _load(tmp_path, "scheduler:\n  jobs_dir: jobs\n")


def test_no_jobs_need_no_timezone(tmp_path):
    assert _load(tmp_path, "scheduler: {}\n").config.scheduler.jobs == ()


def test_a_configured_job_loads_with_its_defaults(tmp_path):
    loaded = _load(tmp_path, f"scheduler:\n  timezone: Asia/Shanghai\n  jobs:\n    - {JOB}\n")
    [job] = configured_jobs(loaded)
    assert (job.name, job.timezone, job.schedule.text, job.action) == (
        "daily-report",
        "Asia/Shanghai",
        "0 9 * * *",
        "message",
    )
    assert (job.misfire, job.enabled, job.deliver_to, job.user_id) == ("run_once", True, None, None)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("cron: '61 9 * * *'", "invalid cron expression"),
        ("cron: '0 9 * *'", "five fields"),
        ("session_id: short", "too short"),
        ("user_id: 'a b'", "user id"),
        ("name: 'bad name'", "invalid job name"),
        ("misfire: later", "run_once"),
        ("deliver_to: ftp://example.com", "http"),
        ("plan: {template: report}", "exactly one of 'message' or 'plan'"),
    ],
)
def test_a_bad_job_is_refused_naming_what_is_wrong(tmp_path, change, expected):
    key = change.split(":")[0]
    fields = {
        "name": "daily-report",
        "cron": "'0 9 * * *'",
        "message": "生成报告",
        "session_id": "ops-daily-report",
    }
    entry = ", ".join(f"{k}: {v}" for k, v in fields.items() if k != key)
    text = f"scheduler:\n  timezone: Asia/Shanghai\n  jobs:\n    - {{{entry}, {change}}}\n"
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, text)
    assert expected in caught.value.message
    assert "scheduler.jobs[0]" in caught.value.message


def test_job_names_are_unique(tmp_path):
    with pytest.raises(ConfigError, match="must be unique"):
        _load(
            tmp_path, f"scheduler:\n  timezone: Asia/Shanghai\n  jobs:\n    - {JOB}\n    - {JOB}\n"
        )


def test_an_unknown_zone_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="unknown time zone"):
        _load(tmp_path, f"scheduler:\n  timezone: Mars/Olympus\n  jobs:\n    - {JOB}\n")


def test_a_plan_job_loads_with_its_template_and_params(tmp_path):
    loaded = _load(
        tmp_path,
        "scheduler:\n  timezone: UTC\n  jobs:\n    - {name: weekly, cron: '0 8 * * mon', "
        "plan: {template: report, params: {days: 7}}, session_id: ops-weekly-1}\n",
    )
    [job] = configured_jobs(loaded)
    assert job.action == "plan"
    assert job.plan == {"template": "report", "params": {"days": 7}}


def test_scheduled_job_functions_of_jobs_dir_become_jobs(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "reports_daily.py").write_text(
        "from hermes.scheduler import scheduled_job\n\n"
        "@scheduled_job('cron', hour=9, minute=0)\n"
        "async def daily_report(agent):\n    return 'ok'\n\n"
        "@scheduled_job('cron', day_of_week='mon', hour=8, name='weekly', misfire='skip')\n"
        "def weekly_report(agent):\n    return 'ok'\n\n"
        "def helper():\n    return None\n",
        encoding="utf-8",
    )
    (jobs / "_shared.py").write_text("raise RuntimeError('never imported')\n", encoding="utf-8")
    loaded = _load(
        tmp_path, f"scheduler:\n  timezone: Asia/Shanghai\n  jobs_dir: jobs\n  jobs:\n    - {JOB}\n"
    )
    found = configured_jobs(loaded)
    assert [(j.name, j.action, j.misfire) for j in found] == [
        ("daily-report", "message", "run_once"),
        ("daily_report", "function", "run_once"),
        ("weekly", "function", "skip"),
    ]
    assert found[1].schedule.text == "hour=9 minute=0"


def test_a_jobs_file_that_does_not_load_refuses_the_configuration(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "broken_jobs.py").write_text("import not_a_module_anywhere\n", encoding="utf-8")
    loaded = _load(tmp_path, "scheduler:\n  timezone: UTC\n  jobs_dir: jobs\n")
    with pytest.raises(ConfigError, match=r"broken_jobs\.py does not load"):
        configured_jobs(loaded)


def test_a_missing_jobs_dir_is_refused(tmp_path):
    loaded = _load(tmp_path, "scheduler:\n  timezone: UTC\n  jobs_dir: nowhere\n")
    with pytest.raises(ConfigError, match="not a directory"):
        configured_jobs(loaded)


def test_scheduled_job_checks_its_arguments_when_decorating():
    with pytest.raises(ValueError, match="'cron' trigger only"):
        scheduled_job("interval", minutes=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown cron field"):
        scheduled_job("cron", hours=9)
    with pytest.raises(ValueError, match="invalid cron fields"):
        scheduled_job("cron", hour=25)
    with pytest.raises(ValueError, match="at least one cron field"):
        scheduled_job("cron")
