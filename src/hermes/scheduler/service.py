"""The scheduler: fires each job at its due times, once per (job, due time) however many
processes run on one data directory (DESIGN.md, "Public contracts", Scheduler; "Scale-out").

APScheduler's cron trigger computes the due times (``hermes.scheduler.schedule``); durability
is ours, through ``JobRuns`` (``hermes.scheduler.runs``) rather than APScheduler's job stores,
whose 3.x misfire handling lives in one process's memory and which cannot claim a due time
across processes. What happens at a due time:

- **Claim.** The scheduler claims ``(job, due time)``; the one claim that wins runs the job,
  every other process gets ``taken`` and does nothing. A claim while a run of the job is still
  running records the due time ``skipped`` (it would have overlapped) and runs nothing.
- **Catch-up on start.** The due times since the job's last scheduled run that passed while no
  scheduler ran are never silent: each is recorded. With ``misfire: run_once`` (the default)
  the latest of them runs once, late (its record shows when it started); the others are
  ``missed``. With ``skip`` they are all ``missed``. A due time less than ``misfire_grace``
  seconds ago is on time, not missed. A job seen for the first time has no history: nothing
  before it counts as missed.
- **Manual runs** (``hermes jobs run``, ``POST /v1/jobs/{name}/run``) run now, overlapping or
  not; their due time is "now" off the whole second, so they never stand for a scheduled one.
- **After a run**: its outcome is recorded; with ``deliver_to`` the run object is POSTed and
  the delivery's outcome recorded too (``hermes.scheduler.delivery``).

A run's ``trace_id`` is its turn's. The clock is injectable (:class:`SchedulerClock`): tests
move a fake one instead of waiting for 09:00.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from hermes.errors import InvalidInputError, LeaseLostError
from hermes.messages.message import new_id
from hermes.observe import get_logger
from hermes.scheduler.actions import Outcome, run_action
from hermes.scheduler.delivery import Delivery
from hermes.scheduler.jobs import Job
from hermes.scheduler.runs import (
    DEFAULT_LEASE_SECONDS,
    DeliveryOutcome,
    JobRun,
    JobRuns,
    due_key,
)
from hermes.scheduler.views import is_scheduled, job_entry, run_object

if TYPE_CHECKING:
    from hermes.agent.agent import Agent

__all__ = [
    "JobNotFoundError",
    "RunReport",
    "RunStarted",
    "Scheduler",
    "SchedulerClock",
    "SystemClock",
    "find_job",
]

logger = get_logger("scheduler")

#: Seconds a due time may have passed and still be run as on time (not a misfire).
DEFAULT_MISFIRE_GRACE = 60.0
#: Most ``missed`` records written for one job at one catch-up (the rest are counted in the log).
MAX_MISSED_RECORDS = 1000
#: The longest a timer sleeps before looking at the clock again (a suspended host wakes late).
_MAX_NAP = 60.0
_INTERRUPTED = "interrupted: the scheduler stopped before the run finished"
#: Pages of runs read looking for a job's last scheduled one past manual runs.
_MAX_PAGES = 20


class SchedulerClock(Protocol):
    """The time and the waiting of a scheduler."""

    def time(self) -> float:
        """Seconds since the epoch."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock: ``time.time`` and ``asyncio.sleep``."""

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class JobNotFoundError(InvalidInputError):
    """No job of this name is configured (``name`` names it)."""

    status = 404


@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run that was started in the background (``POST /v1/jobs/{name}/run`` → 202)."""

    run_id: str
    trace_id: str


@dataclass(frozen=True, slots=True)
class RunReport:
    """A finished run: its record, its job and the text it produced (``None`` when it failed
    before producing any)."""

    job: Job
    run: JobRun
    reply: str | None
    grace: float = DEFAULT_MISFIRE_GRACE

    @property
    def ok(self) -> bool:
        return self.run.status == "succeeded"

    def to_json_dict(self) -> dict[str, Any]:
        """The run object with its delivery (``hermes jobs run --json``)."""
        return run_object(
            self.job, self.run, reply=self.reply, grace=self.grace, with_delivery=True
        )


def find_job(jobs: Sequence[Job], name: str) -> Job:
    """The job of ``jobs`` called ``name``; ``JobNotFoundError`` naming the jobs otherwise."""
    for job in jobs:
        if job.name == name:
            return job
    known = ", ".join(job.name for job in jobs) or "none"
    raise JobNotFoundError(
        f"no job named {name[:128]!r} (jobs: {known}) / 没有名为 {name[:128]!r} 的任务", name=name
    )


class Scheduler:
    """Fires ``jobs`` on their schedules, recording every run in ``runs``.

    ``agent`` runs the jobs (``None``: a scheduler that only lists, e.g. ``hermes jobs list``).
    ``delivery`` POSTs runs to ``deliver_to``; ``clock`` (default :class:`SystemClock`) must
    be the clock ``runs`` uses. ``owns_runs``: :meth:`stop` closes ``runs``.

    Use ``await start()`` / ``await stop()`` around a service's life (``hermes serve``'s
    lifespan); :meth:`list_jobs`, :meth:`run_now` and :meth:`run_job` work started or not.
    """

    def __init__(
        self,
        jobs: Sequence[Job],
        runs: JobRuns,
        agent: Agent | None = None,
        *,
        delivery: Delivery | None = None,
        clock: SchedulerClock | None = None,
        lease: float = DEFAULT_LEASE_SECONDS,
        misfire_grace: float = DEFAULT_MISFIRE_GRACE,
        owns_runs: bool = True,
    ) -> None:
        self._jobs = {job.name: job for job in jobs}
        self.runs = runs
        self.agent = agent
        self._delivery = delivery or Delivery()
        self._clock: SchedulerClock = clock or SystemClock()
        self._lease = lease
        self._grace = misfire_grace
        self._owns_runs = owns_runs
        self._timers: list[asyncio.Task[None]] = []
        self._running: set[asyncio.Task[RunReport | None]] = set()
        self._started = False
        self._closed = False
        #: Called with ``(job, status)`` whenever a run ends or a due time is recorded missed or
        #: skipped (metrics); a listener must not raise or block.
        self.listeners: list[Callable[[str, str], None]] = []

    @property
    def jobs(self) -> list[Job]:
        """The jobs, in configuration order."""
        return list(self._jobs.values())

    def job(self, name: str) -> Job:
        """The job called ``name``; ``JobNotFoundError`` when there is none."""
        return find_job(self.jobs, name)

    # -- life ------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Catch up what was due while no scheduler ran, then fire every enabled job at its
        due times until :meth:`stop`. Idempotent."""
        if self._started:
            return
        if self.agent is None:
            raise RuntimeError("a scheduler without an agent cannot start")
        self._started = True
        now = self._clock.time()
        for job in self.jobs:
            if job.enabled:
                await self._catch_up(job, now)
        for job in self.jobs:
            if job.enabled:
                self._timers.append(asyncio.create_task(self._timer(job, now)))
        logger.info("scheduler_started", jobs=len(self._timers))

    async def stop(self, grace: float = 15.0) -> None:
        """Stop firing; wait up to ``grace`` seconds for running runs, then interrupt them
        (recorded ``failed``, interrupted). Closes ``runs`` when it owns them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for task in self._timers:
            task.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)
        self._timers.clear()
        if self._running:
            _, pending = await asyncio.wait(set(self._running), timeout=grace)
            for run_task in pending:
                run_task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._owns_runs:
            await self.runs.close()
        logger.info("scheduler_stopped")

    async def wait_idle(self) -> None:
        """Wait until no run started by this scheduler is running (tests, shutdown)."""
        while self._running:
            await asyncio.gather(*set(self._running), return_exceptions=True)

    # -- reads -----------------------------------------------------------------------------------

    async def list_jobs(self) -> list[dict[str, Any]]:
        """Every job as ``hermes jobs list --json`` prints it (``GET /v1/jobs``)."""
        now = self._clock.time()
        entries: list[dict[str, Any]] = []
        for job in self.jobs:
            last = await self.runs.last_run(job.name)
            missed = await self.runs.count_runs(job.name, status="missed")
            next_run = job.schedule.next_after(now) if job.enabled else None
            entries.append(job_entry(job, next_run=next_run, last=last, missed=missed))
        return entries

    def run_object(self, job: Job, run: JobRun, reply: str | None) -> dict[str, Any]:
        """The run object of ``run`` (what ``deliver_to`` gets)."""
        return run_object(job, run, reply=reply, grace=self._grace)

    # -- manual runs -----------------------------------------------------------------------------

    async def run_now(self, name: str) -> RunStarted:
        """Start a run of job ``name`` now, in the background: its ids at once. Raises
        ``JobNotFoundError``; ``RuntimeError`` without an agent."""
        job, run = await self._claim_manual(name)
        self._spawn(self._execute(job, run))
        return RunStarted(run.run_id, run.trace_id or "")

    async def run_job(self, name: str) -> RunReport:
        """Run job ``name`` now and wait for it (and its delivery): the report."""
        job, run = await self._claim_manual(name)
        task = self._spawn(self._execute(job, run))
        report = await task
        assert report is not None
        return report

    async def _claim_manual(self, name: str) -> tuple[Job, JobRun]:
        job = self.job(name)
        if self.agent is None:
            raise RuntimeError("this scheduler has no agent to run jobs with")
        due_ms = due_key(self._clock.time())
        for _ in range(10):
            if due_ms % 1000 == 0:  # a whole second would read as a scheduled due time
                due_ms += 1
            claim = await self.runs.claim(
                job.name, due_ms / 1000, trace_id=new_id(), lease=self._lease, on_overlap="run"
            )
            if claim.outcome == "claimed":
                return job, claim.run
            due_ms += 1  # another manual run took this very millisecond
        raise InvalidInputError(f"job {name!r} could not be claimed (too many runs at once)")

    # -- due times -------------------------------------------------------------------------------

    async def _catch_up(self, job: Job, now: float) -> None:
        last = await self._last_scheduled(job)
        if last is None:
            return  # first start with this job: nothing before it counts as missed
        kept: deque[float] = deque(maxlen=MAX_MISSED_RECORDS)
        total = 0
        for due in job.schedule.due_between(last.due_at, now):
            kept.append(due)
            total += 1
        if total > len(kept):
            logger.warning(
                "job_missed_not_recorded", job=job.name, count=total - len(kept),
                recorded=len(kept),
            )  # fmt: skip
        await self._settle(job, list(kept), now)

    async def _last_scheduled(self, job: Job) -> JobRun | None:
        """The job's run with the latest scheduled (not manual) due time."""
        before: float | None = None
        for _ in range(_MAX_PAGES):
            page = await self.runs.list_runs(job.name, limit=50, before=before)
            for run in page:
                if is_scheduled(run.due_at):
                    return run
            if len(page) < 50:
                return None
            before = page[-1].due_at
        return None

    async def _timer(self, job: Job, after: float) -> None:
        at = after
        while True:
            due = job.schedule.next_after(at)
            if due is None:
                logger.info("job_schedule_ended", job=job.name)
                return
            while (left := due - self._clock.time()) > 0:
                await self._clock.sleep(min(left, _MAX_NAP))
            now = self._clock.time()
            # Due times that passed while this process slept past them (a suspended host).
            dues = [due, *job.schedule.due_between(due, now)][-MAX_MISSED_RECORDS:]
            await self._settle(job, dues, now)
            at = dues[-1]

    async def _settle(self, job: Job, dues: list[float], now: float) -> None:
        """Handle due times that have come: on time ones fire; late ones are recorded and, by
        the job's misfire policy, the latest runs once."""
        on_time = [due for due in dues if now - due <= self._grace]
        late = [due for due in dues if now - due > self._grace]
        catch_up = late.pop() if late and job.misfire == "run_once" and not on_time else None
        for due in late:
            run = await self.runs.record_missed(job.name, due)
            if run.status == "missed":
                self._tell(job.name, "missed")
                logger.warning(
                    "job_missed", job=job.name, due_at=job.schedule.iso(due),
                    misfire=job.misfire,
                )  # fmt: skip
        if catch_up is not None:
            logger.info("job_catch_up", job=job.name, due_at=job.schedule.iso(catch_up))
            await self._fire(job, catch_up)
        for due in on_time:
            await self._fire(job, due)

    async def _fire(self, job: Job, due: float) -> None:
        claim = await self.runs.claim(job.name, due, trace_id=new_id(), lease=self._lease)
        match claim.outcome:
            case "claimed":
                self._spawn(self._execute(job, claim.run))
            case "taken":
                logger.debug("job_taken", job=job.name, due_at=job.schedule.iso(due))
            case "skipped":
                self._tell(job.name, "skipped")
                logger.warning(
                    "job_skipped", job=job.name, due_at=job.schedule.iso(due),
                    running=claim.run.skipped_for, trace_id=claim.run.trace_id,
                )  # fmt: skip

    # -- one run ---------------------------------------------------------------------------------

    def _tell(self, job: str, status: str) -> None:
        for listener in self.listeners:
            try:
                listener(job, status)
            except Exception:  # a listener's bug must not break a run
                logger.exception("scheduler_listener_failed")

    def _spawn(self, work: Any) -> asyncio.Task[RunReport | None]:
        task: asyncio.Task[RunReport | None] = asyncio.create_task(work)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def _execute(self, job: Job, run: JobRun) -> RunReport | None:
        """Run ``job`` for the claimed ``run``: record the outcome, deliver it."""
        assert self.agent is not None
        assert run.trace_id is not None
        log = logger.bind(job=job.name, run_id=run.run_id, trace_id=run.trace_id)
        log.info("job_run_started", due_at=job.schedule.iso(run.due_at), attempts=run.attempts)
        holder = asyncio.create_task(self._hold(run))
        try:
            outcome = await run_action(job, self.agent, trace_id=run.trace_id)
        except asyncio.CancelledError:
            holder.cancel()
            with contextlib.suppress(LeaseLostError):
                await self.runs.finish(run.run_id, run.token, status="failed", error=_INTERRUPTED)
            log.warning("job_run_interrupted")
            self._tell(job.name, "failed")
            raise
        except Exception as exc:  # noqa: BLE001 - a bug must still end the run, recorded
            outcome = Outcome(None, f"internal error: {type(exc).__name__}: {exc}")
            log.error("job_run_crashed", error_type=type(exc).__name__)
        finally:
            holder.cancel()
        finished = await self._finish(run, outcome)
        if finished is None:
            return None
        log.info("job_run_finished", status=finished.status, error=finished.error)
        self._tell(job.name, finished.status)
        report = RunReport(job, finished, outcome.reply, self._grace)
        if job.deliver_to is not None:
            report = await self._deliver(report, job.deliver_to)
        return report

    async def _finish(self, run: JobRun, outcome: Outcome) -> JobRun | None:
        status: Literal["succeeded", "failed"] = "succeeded" if outcome.ok else "failed"
        try:
            return await self.runs.finish(run.run_id, run.token, status=status, error=outcome.error)
        except LeaseLostError:
            # Taken over after our lease passed (this process stalled): the taker records it.
            logger.warning("job_run_lease_lost", run_id=run.run_id, job=run.job)
            return None

    async def _hold(self, run: JobRun) -> None:
        """Renew the run's lease while it runs (a third of the lease at a time)."""
        with contextlib.suppress(LeaseLostError):
            while True:
                await self._clock.sleep(self._lease / 3)
                await self.runs.renew(run.run_id, run.token, lease=self._lease)

    async def _deliver(self, report: RunReport, url: str) -> RunReport:
        body = self.run_object(report.job, report.run, report.reply)
        result = await self._delivery.deliver(url, body)
        outcome: DeliveryOutcome = "delivered" if result.ok else "failed"
        recorded = await self.runs.record_delivery(
            report.run.run_id, outcome=outcome, attempts=result.attempts, error=result.error
        )
        event = "job_delivered" if result.ok else "job_delivery_failed"
        (logger.info if result.ok else logger.warning)(
            event, job=report.job.name, run_id=report.run.run_id, attempts=result.attempts,
            error=result.error,
        )  # fmt: skip
        return replace(report, run=recorded)
