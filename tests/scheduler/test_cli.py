"""``hermes jobs list`` and ``hermes jobs run`` as a person and a program run them: the real
console script in a working directory with a ``hermes.yaml`` (offline rule brain)."""

from __future__ import annotations

import re

import pytest

from tests.channels.conftest import Hermes, write_config
from tests.scheduler.conftest import SECRET

CONFIG = """\
scheduler:
  timezone: Asia/Shanghai
  jobs:
    - name: daily-calc
      cron: "0 9 * * *"
      message: "15乘以27等于多少？"
      session_id: ops-daily-calc
    - name: weekly-plan
      cron: "0 8 * * mon"
      plan: {template: weekly-report, params: {days: 7}}
      session_id: ops-weekly-plan
      enabled: false
"""
ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?\+08:00$")


@pytest.fixture
def hermes(tmp_path) -> Hermes:
    runner = Hermes(tmp_path / "work", tmp_path / "home")
    write_config(runner.cwd, CONFIG)
    return runner


def test_jobs_list_json_is_the_documented_list(hermes):
    result = hermes("jobs", "list", "--json")
    assert result.returncode == 0, result
    daily, weekly = result.json()
    assert set(daily) == {"name", "cron", "timezone", "next_run", "last_run", "missed"}
    assert (daily["name"], daily["cron"], daily["timezone"]) == (
        "daily-calc",
        "0 9 * * *",
        "Asia/Shanghai",
    )
    assert ISO_WITH_OFFSET.match(daily["next_run"])
    assert daily["next_run"].endswith("T09:00:00+08:00")
    assert (daily["last_run"], daily["missed"]) == (None, 0)
    assert weekly["next_run"] is None  # disabled
    assert not (hermes.cwd / ".hermes").exists()  # listing creates no files


def test_jobs_run_prints_the_reply_and_list_shows_the_run(hermes):
    ran = hermes("jobs", "run", "daily-calc")
    assert ran.returncode == 0, ran
    assert "405" in ran.stdout
    daily = hermes("jobs", "list", "--json").json()[0]
    assert daily["last_run"]["status"] == "succeeded"
    assert ISO_WITH_OFFSET.match(daily["last_run"]["at"])
    assert len(daily["last_run"]["trace_id"]) == 32


def test_jobs_run_json_prints_the_run_object(hermes):
    result = hermes("jobs", "run", "daily-calc", "--json")
    assert result.returncode == 0, result
    run = result.json()
    assert run["status"] == "succeeded"
    assert run["trigger"] == "manual"
    assert "405" in run["reply"]
    assert run["session_id"] == "ops-daily-calc"
    assert run["run_id"].startswith("job-")
    assert run["delivery"] is None
    shown = hermes("sessions", "show", "ops-daily-calc", "--json")
    assert shown.returncode == 0, shown
    assert run["trace_id"] in shown.stdout  # the run is a turn of its session


def test_a_failed_run_exits_3_with_its_error(hermes):
    result = hermes("jobs", "run", "weekly-plan", "--json")
    assert result.returncode == 3, result
    run = result.json()
    assert run["status"] == "failed"
    assert "template_not_found" in run["error"]  # no plans/ directory here
    text = hermes("jobs", "run", "weekly-plan")
    assert text.returncode == 3
    assert "template_not_found" in text.stderr
    text.assert_no_traceback()


def test_an_unknown_job_exits_2_naming_the_jobs(hermes):
    result = hermes("jobs", "run", "nightly", "--json")
    assert result.returncode == 2, result
    error = result.json()["error"]
    assert "daily-calc" in error["message"]
    assert not (hermes.cwd / ".hermes").exists()  # refused before anything was opened


def test_a_job_without_a_timezone_exits_2_with_a_clear_error(tmp_path):
    runner = Hermes(tmp_path / "work", tmp_path / "home")
    write_config(runner.cwd, CONFIG.replace("  timezone: Asia/Shanghai\n", ""))
    result = runner("jobs", "list")
    assert result.returncode == 2
    assert "'timezone' is required" in result.stderr
    result.assert_no_traceback()


def test_jobs_run_delivers_the_run_signed(tmp_path, receiver):
    runner = Hermes(tmp_path / "work", tmp_path / "home")
    config = CONFIG.replace(
        "      session_id: ops-daily-calc\n",
        f"      session_id: ops-daily-calc\n      deliver_to: {receiver.url}\n",
    ).replace(
        "  timezone: Asia/Shanghai\n", "  timezone: Asia/Shanghai\n  deliver_secret: ${SECRET}\n"
    )
    write_config(runner.cwd, config)
    result = runner("jobs", "run", "daily-calc", "--json", env={"SECRET": SECRET})
    assert result.returncode == 0, result
    [(headers, body)] = receiver.requests
    assert receiver.verify(headers, body)
    assert result.json()["delivery"] == {"status": "delivered", "attempts": 1, "error": None}
