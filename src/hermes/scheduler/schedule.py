"""When a job is due: APScheduler's cron trigger in the job's zone (DESIGN.md, Dependencies),
and the times it computes as seconds since the epoch and ISO 8601 with the zone's offset.

APScheduler computes the fire times; the scheduler (``hermes.scheduler.service``) owns what
happens at them through ``JobRuns``. Two rules around daylight saving time, both from how the
trigger reads wall-clock time (tests/scheduler/test_schedule.py):

- a wall-clock time that happens twice (autumn, ``02:30`` in ``Europe/Berlin``) fires once,
  at its first occurrence (cron's rule for a fixed time);
- a wall-clock time that does not exist (spring, ``02:30``) fires an hour later by the clock,
  at ``03:30`` local time — the instant ``02:30`` would have been.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

__all__ = ["Schedule", "iso"]

_STEP = timedelta(microseconds=1)


def iso(at: float, zone: ZoneInfo) -> str:
    """``at`` (seconds since the epoch) as ISO 8601 in ``zone``, with its offset
    (``2026-12-04T09:00:00+08:00``; milliseconds when it has them)."""
    moment = datetime.fromtimestamp(at, zone)
    spec = "seconds" if moment.microsecond == 0 else "milliseconds"
    return moment.isoformat(timespec=spec)


@dataclass(frozen=True, slots=True)
class Schedule:
    """A cron schedule in one IANA zone. ``text`` is how it reads (``0 9 * * *`` or
    ``hour=9 minute=0``)."""

    text: str
    zone: ZoneInfo
    trigger: Any  # apscheduler.triggers.cron.CronTrigger (untyped)

    @classmethod
    def crontab(cls, expression: str, zone: ZoneInfo) -> Schedule:
        """A five-field crontab expression; ``ValueError`` when it is not one."""
        from apscheduler.triggers.cron import CronTrigger

        return cls(expression, zone, CronTrigger.from_crontab(expression, timezone=zone))

    @classmethod
    def fields(cls, fields: dict[str, int | str], zone: ZoneInfo) -> Schedule:
        """APScheduler cron keywords (``hour=9, minute=0``); ``ValueError`` when invalid."""
        from apscheduler.triggers.cron import CronTrigger

        text = " ".join(f"{key}={value}" for key, value in fields.items())
        return cls(text, zone, CronTrigger(timezone=zone, **fields))

    def next_after(self, at: float) -> float | None:
        """The first due time strictly after ``at``; ``None`` when the schedule has ended
        (a ``year`` field in the past)."""
        moment = datetime.fromtimestamp(at, UTC) + _STEP
        while True:
            fire = self.trigger.get_next_fire_time(None, moment)
            if fire is None:
                return None
            local = datetime.fromtimestamp(fire.timestamp(), self.zone)
            if not local.fold:  # the second occurrence of a repeated wall-clock time: skip it
                return float(local.timestamp())
            moment = local.astimezone(UTC) + _STEP

    def due_between(self, after: float, until: float) -> Iterator[float]:
        """The due times in ``(after, until]``, oldest first."""
        at = self.next_after(after)
        while at is not None and at <= until:
            yield at
            at = self.next_after(at)

    def iso(self, at: float) -> str:
        """``at`` as ISO 8601 in this schedule's zone, with its offset."""
        return iso(at, self.zone)
