"""What the scheduler tests share: a clock the test moves (no test waits for 09:00), a real
SQLite record of runs on that clock, a real agent on a scripted model, and a way to wait
until the scheduler has done what a moment of the clock asks of it."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from hermes import Agent
from hermes.scheduler.jobs import Job
from hermes.scheduler.schedule import Schedule
from hermes.scheduler.service import Scheduler
from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from hermes.testing import FunctionModel, say

SHANGHAI = ZoneInfo("Asia/Shanghai")
#: The longest a test waits for the scheduler to settle (real seconds).
SETTLE_TIMEOUT = 10.0


class ManualClock:
    """A scheduler clock the test moves: ``time()`` is what the test set, ``sleep`` waits until
    the test moves past its end. Moving the clock is a jump, as a host waking from a suspend:
    every sleep that ends before the new time wakes at once."""

    def __init__(self, start: float) -> None:
        self.now = start
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._sleepers.append((self.now + seconds, future))
        await future

    @property
    def sleeping(self) -> int:
        """How many sleeps wait now."""
        self._sleepers = [(end, f) for end, f in self._sleepers if not f.done()]
        return len(self._sleepers)

    def set(self, at: float) -> None:
        """Move the clock to ``at``, waking every sleep that ends by then."""
        self.now = at
        for end, future in self._sleepers:
            if end <= at and not future.done():
                future.set_result(None)


def at(text: str, zone: ZoneInfo = SHANGHAI) -> float:
    """``2026-12-04 09:00`` in ``zone`` as seconds since the epoch."""
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


async def until(condition: Callable[[], bool], within: float = SETTLE_TIMEOUT) -> None:
    """Wait (real time, at most ``within`` seconds) until ``condition()`` holds."""
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the scheduler did not settle in time")
        await asyncio.sleep(0.005)


async def settle(scheduler: Scheduler, clock: ManualClock) -> None:
    """Wait until every run the scheduler started has ended and every timer sleeps again."""
    timers = sum(1 for job in scheduler.jobs if job.enabled)
    await until(lambda: not scheduler._running and clock.sleeping >= timers)
    await scheduler.wait_idle()


def message_job(
    name: str = "daily-report",
    cron: str = "0 9 * * *",
    *,
    zone: ZoneInfo = SHANGHAI,
    **fields: Any,
) -> Job:
    """A job sending ``生成昨日核心指标报告`` to ``ops-<name>`` on ``cron`` in ``zone``."""
    return Job(
        name=name,
        schedule=Schedule.crontab(cron, zone),
        action="message",
        session_id=f"ops-{name}",
        message="生成昨日核心指标报告",
        **fields,
    )


def function_job(name: str, fn: Any, cron: str = "0 9 * * *", **fields: Any) -> Job:
    return Job(
        name=name,
        schedule=Schedule.crontab(cron, SHANGHAI),
        action="function",
        function=fn,
        **fields,
    )


class Replies:
    """A model that answers every turn with ``report N`` and counts its turns."""

    def __init__(self) -> None:
        self.turns = 0

    def __call__(self, request: Any) -> Any:
        self.turns += 1
        return say(f"report {self.turns}")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(at("2026-12-04 08:00"))


@pytest.fixture
def replies() -> Replies:
    return Replies()


@pytest.fixture
async def agent(tmp_path: Path, replies: Replies) -> AsyncIterator[Agent]:
    opened = Agent(model=FunctionModel(replies), tools=[], store=tmp_path / "hermes.db")
    yield opened
    await opened.aclose()


@pytest.fixture
async def open_scheduler(
    tmp_path: Path, clock: ManualClock, agent: Agent
) -> AsyncIterator[Callable[..., Scheduler]]:
    """A new scheduler (a new process, as far as the record of runs goes) on one jobs.db;
    every one opened is stopped at the end of the test."""
    opened: list[Scheduler] = []

    def make(jobs: list[Job], **options: Any) -> Scheduler:
        runs = SQLiteJobRuns(tmp_path / "jobs.db", clock=clock.time)
        scheduler = Scheduler(jobs, runs, options.pop("agent", agent), clock=clock, **options)
        opened.append(scheduler)
        return scheduler

    yield make
    for scheduler in opened:
        await scheduler.stop(grace=1.0)


@pytest.fixture
def runs_file(tmp_path: Path) -> Path:
    return tmp_path / "jobs.db"


# -- a local receiver of deliveries --

SECRET = "s3cret-for-the-receiver"


@dataclass
class Receiver:
    """What a local receiver got, and the statuses it answers with (then 200)."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    requests: list[tuple[dict[str, str], bytes]] = field(default_factory=list)

    def verify(self, headers: dict[str, str], body: bytes) -> bool:
        """What a receiver does with the event-signing rule."""
        timestamp = headers["X-Hermes-Timestamp"]
        expected = hmac.new(SECRET.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
        return hmac.compare_digest(headers["X-Hermes-Signature"], "sha256=" + expected.hexdigest())


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append((dict(self.headers.items()), body))
            status = state.statuses.pop(0) if state.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/jobs"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
