"""``@scheduled_job``: a function of a ``scheduler.jobs_dir`` file run on a cron schedule
(seed 002 §3.2: "jobs目录下放Python文件，每个文件里定义一个带装饰器的函数到点自动执行";
DESIGN.md, "Public contracts", Scheduler)::

    from hermes.scheduler import scheduled_job

    @scheduled_job("cron", hour=9, minute=0)
    async def daily_report(agent):
        result = await agent.run("生成昨日核心指标报告", session_id="ops-daily-report")
        return result.reply          # the text to deliver

The function receives the agent (sync or async) and returns the text of the run; raising
fails the run (recorded with the error). The cron fields are APScheduler's ``CronTrigger``
keywords, read in ``scheduler.timezone``; decorating checks them at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from hermes.config.scheduler import MisfirePolicy, check_job_name

__all__ = ["CRON_FIELDS", "SCHEDULED_ATTRIBUTE", "ScheduledFunction", "scheduled_job"]

#: The keywords of APScheduler's cron trigger a scheduled function may give.
CRON_FIELDS = frozenset({"year", "month", "day", "week", "day_of_week", "hour", "minute", "second"})
#: The attribute ``@scheduled_job`` sets on the function it decorates.
SCHEDULED_ATTRIBUTE = "__hermes_scheduled_job__"

#: What a scheduled function is: ``fn(agent) -> str`` or ``async fn(agent) -> str``.
JobFunction = Callable[[Any], "str | Awaitable[str]"]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class ScheduledFunction:
    """What ``@scheduled_job`` recorded about a function."""

    name: str
    fields: dict[str, int | str]
    function: Callable[..., Any]
    misfire: MisfirePolicy
    deliver_to: str | None
    enabled: bool


def scheduled_job(
    trigger: Literal["cron"] = "cron",
    *,
    name: str | None = None,
    misfire: MisfirePolicy = "run_once",
    deliver_to: str | None = None,
    enabled: bool = True,
    **fields: int | str,
) -> Callable[[F], F]:
    """Schedule the decorated ``fn(agent) -> str`` on a cron trigger (``hour=9, minute=0``).

    ``name`` defaults to the function's name. Raises ``ValueError`` for another trigger, an
    unknown or invalid cron field, an invalid name or misfire policy.
    """
    if trigger != "cron":
        raise ValueError(f"@scheduled_job supports the 'cron' trigger only, not {trigger!r}")
    unknown = sorted(set(fields) - CRON_FIELDS)
    if unknown:
        raise ValueError(
            f"unknown cron field(s) {', '.join(unknown)}: use {', '.join(sorted(CRON_FIELDS))}"
        )
    if not fields:
        raise ValueError("@scheduled_job needs at least one cron field, e.g. hour=9, minute=0")
    if misfire not in ("run_once", "skip"):
        raise ValueError(f"misfire must be 'run_once' or 'skip', not {misfire!r}")
    _check_fields(fields)
    if deliver_to is not None:
        from hermes.config.urls import http_url

        deliver_to = http_url(deliver_to)

    def decorate(fn: F) -> F:
        job_name = check_job_name(name or fn.__name__)
        spec = ScheduledFunction(job_name, dict(fields), fn, misfire, deliver_to, enabled)
        setattr(fn, SCHEDULED_ATTRIBUTE, spec)
        return fn

    return decorate


def _check_fields(fields: dict[str, int | str]) -> None:
    from apscheduler.triggers.cron import CronTrigger

    try:
        CronTrigger(timezone="UTC", **fields)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"invalid cron fields {fields}: {exc}") from None
