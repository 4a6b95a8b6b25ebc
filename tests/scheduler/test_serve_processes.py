"""Two real ``hermes serve`` processes on one data directory run the same every-second job
(an ``@scheduled_job`` function of ``scheduler.jobs_dir``) for a few seconds: every due time
is run by exactly one of them, and ``GET /v1/jobs`` of either shows the same record (the claim
on (job, due time) in ``jobs.db``; DESIGN.md, "Public contracts", Scheduler)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter

import httpx

from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from tests.channels.http.serve_fixtures import run_serve, wait_ready, write_config

JOB_FILE = """\
import os
from pathlib import Path

from hermes.scheduler import scheduled_job


@scheduled_job("cron", second="*")
def tick(agent):
    with (Path(__file__).parent.parent / "executions.log").open("a", encoding="utf-8") as out:
        out.write(f"{os.getpid()}\\n")
    return "tick"
"""
CONFIG = """\
logging: {file: null}
scheduler:
  timezone: Asia/Shanghai
  jobs_dir: jobs
"""


def test_two_serve_processes_run_each_due_time_once(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "tick.py").write_text(JOB_FILE, "utf-8")
    config = write_config(tmp_path, CONFIG)
    procs = [run_serve(config, "--host", "127.0.0.1", "--port", "0") for _ in range(2)]
    try:
        ports = [wait_ready(proc)[1] for proc in procs]
        time.sleep(5)  # both fire (or find taken) about five due times
        listed = [
            httpx.get(f"http://127.0.0.1:{port}/v1/jobs", timeout=10).json() for port in ports
        ]
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            assert proc.wait(timeout=25) == 0

    async def read():
        runs = SQLiteJobRuns(tmp_path / "jobs.db")
        try:
            return await runs.list_runs("tick", limit=1000)
        finally:
            await runs.close()

    runs = asyncio.run(read())
    ran = [r for r in runs if r.status == "succeeded"]
    executions = Counter((tmp_path / "executions.log").read_text("utf-8").split())
    assert len(ran) >= 3, [(r.status, r.due_at) for r in runs]
    assert len({r.due_at for r in runs}) == len(runs)  # one record per due time
    assert sum(executions.values()) == len(ran)  # and no due time executed twice
    assert {r.status for r in runs} <= {"succeeded", "skipped", "missed", "failed"}
    assert (
        [entry["name"] for entry in listed[0]] == [entry["name"] for entry in listed[1]] == ["tick"]
    )
