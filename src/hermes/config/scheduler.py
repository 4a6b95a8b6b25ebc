"""``scheduler``: cron jobs (DESIGN.md, "Public contracts", Scheduler; seed 002 §3.2–§3.3).

``timezone`` is required as soon as there is a job (``jobs`` or a ``jobs_dir``): a schedule is
never read in the host's implicit zone, so a server in UTC and a laptop in Shanghai fire a
``0 9 * * *`` job at the same instant (seed 002 §4.1: "定时任务到点没触发：时区配置不一致").
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from hermes.config.local import check_timezone
from hermes.config.section import Section as _Section
from hermes.config.section import check_name
from hermes.config.urls import http_url
from hermes.errors import InvalidIdError
from hermes.session.ids import validate_session_id, validate_user_id

#: What a job due while no scheduler ran gets: one catch-up run, or only its ``missed`` record.
MisfirePolicy = Literal["run_once", "skip"]

#: Job names: what ``hermes jobs run NAME`` and ``POST /v1/jobs/{name}/run`` take.
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
JOB_NAME_RULE = "1-128 of A-Z a-z 0-9 _ . - starting with a letter or digit"


def check_job_name(value: str) -> str:
    """``value`` if it is a valid job name, else ``ValueError`` with the rule."""
    return check_name(value, JOB_NAME, JOB_NAME_RULE, "job name")


def check_cron(value: str) -> str:
    """``value`` if it is a five-field crontab expression APScheduler reads, else
    ``ValueError`` saying what is wrong."""
    from apscheduler.triggers.cron import CronTrigger  # only when there is a job to check

    text = " ".join(value.split())
    try:
        CronTrigger.from_crontab(text, timezone="UTC")
    except ValueError as exc:
        raise ValueError(
            f"invalid cron expression {text[:80]!r}: {exc} (five fields: minute hour "
            "day-of-month month day-of-week, e.g. '0 9 * * *' / 需要五个字段)"
        ) from None
    return text


class PlanJobConfig(_Section):
    """A job that starts a named plan template (``plans/*.yaml``) with its parameters."""

    template: str = Field(min_length=1, max_length=128)
    params: dict[str, Any] = Field(default_factory=dict)


class JobConfig(_Section):
    """One cron job: a ``message`` sent as a turn of ``session_id``, or a ``plan``."""

    name: str
    #: Five crontab fields, read in ``scheduler.timezone``.
    cron: str
    message: str | None = Field(default=None, min_length=1)
    plan: PlanJobConfig | None = None
    session_id: str
    user_id: str | None = None
    #: A URL that gets a POST of each finished run (signed with ``scheduler.deliver_secret``).
    deliver_to: str | None = None
    misfire: MisfirePolicy = "run_once"
    enabled: bool = True

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return check_job_name(value)

    @field_validator("cron")
    @classmethod
    def _check_cron(cls, value: str) -> str:
        return check_cron(value)

    @field_validator("session_id")
    @classmethod
    def _check_session(cls, value: str) -> str:
        try:
            return validate_session_id(value)
        except InvalidIdError as exc:  # a ValueError for pydantic, so the key is named
            raise ValueError(exc.message) from None

    @field_validator("user_id")
    @classmethod
    def _check_user(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return validate_user_id(value)
        except InvalidIdError as exc:
            raise ValueError(exc.message) from None

    @field_validator("deliver_to")
    @classmethod
    def _check_deliver_to(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value)

    @model_validator(mode="after")
    def _one_action(self) -> JobConfig:
        if (self.message is None) == (self.plan is None):
            raise ValueError(
                f"job {self.name!r} needs exactly one of 'message' or 'plan' "
                "(每个任务需要 message 或 plan 之一)"
            )
        return self


class SchedulerConfig(_Section):
    """The cron jobs of ``hermes serve`` (and ``hermes jobs``)."""

    #: The IANA zone every schedule is read in, e.g. ``Asia/Shanghai``; required with jobs.
    timezone: str | None = None
    jobs: tuple[JobConfig, ...] = ()
    #: A directory of ``*.py`` files with ``@scheduled_job`` functions; relative to the run
    #: directory. ``None``: none.
    jobs_dir: str | None = Field(default=None, min_length=1)
    #: The HMAC-SHA256 key of ``deliver_to`` POSTs (signed like events); ``None``: unsigned.
    #: Use ``${HERMES_DELIVER_SECRET}``; kept out of ``repr``.
    deliver_secret: str | None = Field(default=None, repr=False)
    #: POST attempts per delivery (retried on 5xx, 429 and network errors, with backoff).
    deliver_attempts: int = Field(default=4, ge=1, le=10)
    #: Seconds each delivery attempt may take.
    deliver_timeout: float = Field(default=10.0, gt=0, le=300)

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str | None) -> str | None:
        return None if value is None or not value.strip() else check_timezone(value.strip())

    @field_validator("deliver_secret")
    @classmethod
    def _empty_secret_is_none(cls, value: str | None) -> str | None:
        return value or None

    @model_validator(mode="after")
    def _check_jobs(self) -> SchedulerConfig:
        seen: set[str] = set()
        for job in self.jobs:
            if job.name in seen:
                raise ValueError(f"two jobs are named {job.name!r}: job names must be unique")
            seen.add(job.name)
        if (self.jobs or self.jobs_dir) and self.timezone is None:
            raise ValueError(
                "'timezone' is required when there are jobs (an IANA zone such as "
                "'Asia/Shanghai'; the host's zone is never assumed) / 配置定时任务时必须显式设置 "
                "scheduler.timezone"
            )
        return self
