"""The JSON objects of jobs and runs: what ``hermes jobs list --json`` / ``GET /v1/jobs``
print (:func:`job_entry`) and the run object of ``hermes jobs run --json`` and of a
``deliver_to`` POST (:func:`run_object`). Every time is ISO 8601 with the offset of the job's
zone (DESIGN.md, "More CLI").
"""

from __future__ import annotations

from typing import Any, Literal

from hermes.scheduler.jobs import Job
from hermes.scheduler.runs import JobRun, due_key

__all__ = ["RunTrigger", "is_scheduled", "job_entry", "run_object", "run_trigger"]

#: Why a run happened: its due time came (``schedule``), it caught up a due time that passed
#: while no scheduler ran (``catch_up``), or someone asked (``manual``).
RunTrigger = Literal["schedule", "catch_up", "manual"]


def is_scheduled(due_at: float) -> bool:
    """Whether a run's due time came from the schedule: cron fire times fall on whole
    seconds, and a manual run's due time never does (``hermes.scheduler.service``)."""
    return due_key(due_at) % 1000 == 0


def run_trigger(run: JobRun, *, grace: float) -> RunTrigger:
    """What started ``run`` (``grace``: how late a scheduled start may be and be on time)."""
    if not is_scheduled(run.due_at):
        return "manual"
    if run.started_at is not None and run.started_at - run.due_at > grace:
        return "catch_up"
    return "schedule"


def job_entry(
    job: Job, *, next_run: float | None, last: JobRun | None, missed: int
) -> dict[str, Any]:
    """``{"name", "cron", "timezone", "next_run", "last_run": {"at", "status", "trace_id"} |
    null, "missed"}`` (``next_run`` null for a disabled or ended job)."""
    zone = job.schedule
    last_run = None
    if last is not None:
        last_run = {"at": zone.iso(last.due_at), "status": last.status, "trace_id": last.trace_id}
    return {
        "name": job.name,
        "cron": job.schedule.text,
        "timezone": job.timezone,
        "next_run": None if next_run is None else zone.iso(next_run),
        "last_run": last_run,
        "missed": missed,
    }


def run_object(
    job: Job,
    run: JobRun,
    *,
    reply: str | None,
    grace: float,
    with_delivery: bool = False,
) -> dict[str, Any]:
    """The run object: ``{"run_id", "job", "status", "trigger", "due_at", "started_at",
    "finished_at", "trace_id", "session_id", "reply", "error", "attempts"}`` (and
    ``"delivery": {"status", "attempts", "error"} | null`` with ``with_delivery``)."""

    def at(value: float | None) -> str | None:
        return None if value is None else job.schedule.iso(value)

    data: dict[str, Any] = {
        "run_id": run.run_id,
        "job": run.job,
        "status": run.status,
        "trigger": run_trigger(run, grace=grace),
        "due_at": at(run.due_at),
        "started_at": at(run.started_at),
        "finished_at": at(run.finished_at),
        "trace_id": run.trace_id,
        "session_id": job.session_id,
        "reply": reply,
        "error": run.error,
        "attempts": run.attempts,
    }
    if with_delivery:
        data["delivery"] = (
            None
            if run.delivery is None
            else {
                "status": run.delivery,
                "attempts": run.delivery_attempts,
                "error": run.delivery_error,
            }
        )
    return data
