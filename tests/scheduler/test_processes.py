"""Two real processes on one data directory fire a job once per due time: both schedulers run
the same every-second job for a few seconds, and both restart across the same missed due time;
every due time is run by exactly one of them (the claim on (job, due time) in ``jobs.db``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from tests.scheduler.conftest import at

CHILD = Path(__file__).with_name("scheduler_child.py")
TIMEOUT = 60


def _start(data: Path, mode: str, start_at: float, moment: float) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(data), mode, str(start_at), str(moment)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _wait(children: list[subprocess.Popen[bytes]]) -> None:
    for child in children:
        try:
            _, err = child.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
        assert child.returncode == 0, err.decode(errors="replace")


def _executions(data: Path) -> Counter[str]:
    log = data / "executions.log"
    lines = log.read_text(encoding="utf-8").split() if log.exists() else []
    return Counter(lines)


async def _runs(data: Path):
    runs = SQLiteJobRuns(data / "jobs.db")
    try:
        return sorted(await runs.list_runs("tick", limit=1000), key=lambda r: r.due_at)
    finally:
        await runs.close()


def test_two_processes_fire_an_every_second_job_once_per_due_time(tmp_path):
    start_at = time.time() + 4.0  # both interpreters are up by then (each takes ~1 s)
    until = start_at + 4.0
    children = [_start(tmp_path, "live", start_at, until) for _ in range(2)]
    _wait(children)
    runs = asyncio.run(_runs(tmp_path))
    ran = [r for r in runs if r.status == "succeeded"]
    assert len(ran) >= 2, [(r.status, r.due_at) for r in runs]
    assert {r.status for r in runs} <= {"succeeded", "missed", "skipped"}
    assert len({r.due_at for r in runs}) == len(runs)
    executions = _executions(tmp_path)
    assert sum(executions.values()) == len(ran)  # no due time executed twice
    assert len(executions) >= 1, executions


def test_two_processes_restarting_across_a_due_time_catch_it_up_once(tmp_path):
    async def seed() -> None:  # the job ran on the 4th; the schedulers were down since
        runs = SQLiteJobRuns(tmp_path / "jobs.db")
        claim = await runs.claim("tick", at("2026-12-04 09:00"), trace_id="seed-trace")
        await runs.finish(claim.run.run_id, claim.token, status="succeeded")
        await runs.close()

    asyncio.run(seed())
    start_at = time.time() + 3.0
    now = at("2026-12-06 10:30")
    children = [_start(tmp_path, "catch-up", start_at, now) for _ in range(2)]
    _wait(children)
    runs = asyncio.run(_runs(tmp_path))
    assert [(r.status, r.due_at) for r in runs] == [
        ("succeeded", at("2026-12-04 09:00")),
        ("missed", at("2026-12-05 09:00")),
        ("succeeded", at("2026-12-06 09:00")),
    ]
    assert sum(_executions(tmp_path).values()) == 1
