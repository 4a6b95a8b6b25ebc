"""A scheduler in a process of its own, for tests/scheduler/test_processes.py: it opens the
data directory it is given as ``hermes serve`` would (an agent on ``hermes.db``, the runs in
``jobs.db`` beside it), starts at a wall-clock moment shared with its sibling, and appends one
line per run it executed to ``executions.log``.

    python scheduler_child.py DATA_DIR live START_AT UNTIL     # real clock, a job every second
    python scheduler_child.py DATA_DIR catch-up START_AT NOW   # clock fixed at NOW (a restart)
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from zoneinfo import ZoneInfo

from hermes import Agent
from hermes.agent import compose
from hermes.scheduler.jobs import Job
from hermes.scheduler.schedule import Schedule
from hermes.scheduler.service import Scheduler, SystemClock


class FixedClock(SystemClock):
    """The time stands at ``now`` (the moment a restarted scheduler wakes); sleeps are real."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def _job(data: Path, schedule: Schedule) -> Job:
    log = data / "executions.log"

    async def work(agent: Agent) -> str:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"{os.getpid()}\n")
        await asyncio.sleep(0.05)
        return "done"

    return Job(name="tick", schedule=schedule, action="function", function=work)


async def main(data: Path, mode: str, start_at: float, moment: float) -> None:
    agent = Agent(tools=[], store=data / "hermes.db")
    if mode == "live":
        job = _job(data, Schedule.fields({"second": "*"}, ZoneInfo("UTC")))
        clock: SystemClock = SystemClock()
    else:
        job = _job(data, Schedule.crontab("0 9 * * *", ZoneInfo("Asia/Shanghai")))
        clock = FixedClock(moment)
    scheduler = Scheduler([job], compose.open_job_runs(agent.store), agent, clock=clock)
    await asyncio.sleep(max(0.0, start_at - time.time()))
    await scheduler.start()
    if mode == "live":
        await asyncio.sleep(max(0.0, moment - time.time()))
    await scheduler.wait_idle()
    await scheduler.stop()
    await agent.aclose()


if __name__ == "__main__":
    directory, kind, start, until = sys.argv[1:5]
    asyncio.run(main(Path(directory), kind, float(start), float(until)))
