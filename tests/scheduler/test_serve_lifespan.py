"""``hermes serve``'s application starts the scheduler in its lifespan and stops it after: the
jobs routes find it as ``Service.parts["scheduler"]``; without jobs nothing is started."""

from __future__ import annotations

from pathlib import Path

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.config import load_config
from hermes.scheduler.setup import SCHEDULER_PART
from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from hermes.testing import FunctionModel, say

JOBS = """\
scheduler:
  timezone: Asia/Shanghai
  jobs:
    - {name: daily-report, cron: "0 9 * * *", message: 生成报告, session_id: ops-daily-report}
"""


def _loaded(tmp_path: Path, text: str):
    (tmp_path / "hermes.yaml").write_text(text, encoding="utf-8")
    return load_config(cwd=tmp_path, environ={}, home=tmp_path)


async def test_the_lifespan_runs_the_scheduler_the_jobs_routes_use(tmp_path):
    loaded = _loaded(tmp_path, JOBS)
    store = tmp_path / ".hermes" / "hermes.db"
    store.parent.mkdir()
    agent = Agent(model=FunctionModel(lambda request: say("报告已生成")), tools=[], store=store)
    app = create_app(agent, loaded=loaded)
    async with app.router.lifespan_context(app):
        scheduler = app.state.hermes.parts[SCHEDULER_PART]
        [entry] = await scheduler.list_jobs()
        assert entry["name"] == "daily-report"
        assert entry["next_run"].endswith("T09:00:00+08:00")
        started = await scheduler.run_now("daily-report")
        await scheduler.wait_idle()
    runs = SQLiteJobRuns(store.with_name("jobs.db"))  # beside hermes.db
    try:
        run = await runs.get(started.run_id)
    finally:
        await runs.close()
    await agent.aclose()
    assert run is not None
    assert (run.status, run.trace_id) == ("succeeded", started.trace_id)


async def test_without_jobs_no_scheduler_is_started(tmp_path):
    loaded = _loaded(tmp_path, "scheduler: {}\n")
    agent = Agent(tools=[], store=tmp_path / "hermes.db")
    app = create_app(agent, loaded=loaded)
    async with app.router.lifespan_context(app):
        assert SCHEDULER_PART not in app.state.hermes.parts
    await agent.aclose()
    assert not (tmp_path / "jobs.db").exists()
