"""``GET /v1/jobs`` and ``POST /v1/jobs/{name}/run`` over real HTTP, on the scheduler the
lifespan starts (DESIGN.md, "Public contracts", HTTP Jobs)."""

from __future__ import annotations

import asyncio

from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from hermes.testing import say
from tests.channels.http.events_support import serve_events

JOBS = """\
scheduler:
  timezone: Asia/Shanghai
  jobs:
    - name: daily-report
      cron: "0 9 * * *"
      message: 生成昨日核心指标报告
      session_id: ops-daily-report
"""


async def test_get_jobs_is_the_jobs_list_json_list(tmp_path):
    model = lambda request: say("报告已生成")  # noqa: E731
    async with serve_events(tmp_path, JOBS, model=model) as served, served.client() as client:
        answer = await client.get("/v1/jobs")
    assert answer.status_code == 200
    [entry] = answer.json()
    assert set(entry) == {"name", "cron", "timezone", "next_run", "last_run", "missed"}
    assert (entry["name"], entry["cron"], entry["timezone"]) == (
        "daily-report", "0 9 * * *", "Asia/Shanghai",
    )  # fmt: skip
    assert entry["next_run"].endswith("T09:00:00+08:00")
    assert (entry["last_run"], entry["missed"]) == (None, 0)


async def test_running_a_job_is_202_with_its_ids_and_shows_in_the_list(tmp_path):
    model = lambda request: say("报告已生成")  # noqa: E731
    async with serve_events(tmp_path, JOBS, model=model) as served, served.client() as client:
        answer = await client.post("/v1/jobs/daily-report/run")
        assert answer.status_code == 202
        started = answer.json()
        assert set(started) == {"run_id", "trace_id"}
        async with asyncio.timeout(15):
            while (await client.get("/v1/jobs")).json()[0]["last_run"] is None:  # noqa: ASYNC110 - polling the API is the test
                await asyncio.sleep(0.05)
        [entry] = (await client.get("/v1/jobs")).json()
        items = await served.items("ops-daily-report")
        metrics = (await client.get("/metrics")).text
    assert entry["last_run"]["trace_id"] == started["trace_id"]
    assert entry["last_run"]["status"] == "succeeded"
    assert [i.content for i in items if i.kind == "text"] == ["生成昨日核心指标报告", "报告已生成"]
    assert 'hermes_job_runs_total{job="daily-report",status="succeeded"} 1.0' in metrics
    runs = SQLiteJobRuns(tmp_path / "jobs.db")
    try:
        run = await runs.get(started["run_id"])
    finally:
        await runs.close()
    assert run is not None
    assert run.trace_id == started["trace_id"]


async def test_an_unknown_job_is_404(tmp_path):
    async with serve_events(tmp_path, JOBS) as served, served.client() as client:
        answer = await client.post("/v1/jobs/nightly/run")
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "job_not_found"
    assert "daily-report" in answer.json()["error"]["message"]


async def test_without_a_scheduler_the_list_is_empty_and_a_run_is_404(tmp_path):
    async with serve_events(tmp_path) as served, served.client() as client:
        listed = await client.get("/v1/jobs")
        run = await client.post("/v1/jobs/daily-report/run")
    assert (listed.status_code, listed.json()) == (200, [])
    assert run.status_code == 404


async def test_with_api_keys_running_a_job_needs_the_admin_role(tmp_path):
    keys = """\
server:
  api_keys:
    - {key: ops-key-0123456789abcdef, user: ops}
    - {key: root-key-0123456789abcdef, user: root, roles: [admin]}
"""
    model = lambda request: say("报告已生成")  # noqa: E731
    async with (
        serve_events(tmp_path, JOBS + keys, model=model) as served,
        served.client() as client,
    ):
        plain = {"Authorization": "Bearer ops-key-0123456789abcdef"}
        admin = {"Authorization": "Bearer root-key-0123456789abcdef"}
        anonymous = await client.get("/v1/jobs")
        listed = await client.get("/v1/jobs", headers=plain)
        refused = await client.post("/v1/jobs/daily-report/run", headers=plain)
        ran = await client.post("/v1/jobs/daily-report/run", headers=admin)
    assert (anonymous.status_code, listed.status_code) == (401, 200)
    assert (refused.status_code, ran.status_code) == (403, 202)
