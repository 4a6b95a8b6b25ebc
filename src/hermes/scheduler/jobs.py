"""The jobs of a configuration: ``scheduler.jobs`` entries and the ``@scheduled_job``
functions of ``scheduler.jobs_dir`` files, each as one :class:`Job`.

A jobs file is imported as a plugin file is (``hermes.tools.plugins.import_plugin``: a fresh
top-level module named after the file, the directory kept off ``sys.path``). A file that fails
to import or names a job twice refuses the configuration with a ``ConfigError`` naming the
file: a schedule that silently lost a job would be worse than one that does not start.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from hermes.config.scheduler import MisfirePolicy, SchedulerConfig
from hermes.errors import ConfigError
from hermes.scheduler.decorator import SCHEDULED_ATTRIBUTE, ScheduledFunction
from hermes.scheduler.schedule import Schedule

__all__ = ["Job", "JobAction", "load_jobs"]

JobAction = Literal["message", "plan", "function"]


@dataclass(frozen=True, slots=True)
class Job:
    """One scheduled job: when (``schedule``), what (``action`` with ``message``, ``plan``
    or ``function``), for which session, and what happens around a run."""

    name: str
    schedule: Schedule
    action: JobAction
    session_id: str | None = None
    user_id: str | None = None
    message: str | None = None
    #: ``{"template", "params"}`` of a ``plan`` job.
    plan: dict[str, Any] | None = None
    function: Any = None  # fn(agent) -> str | Awaitable[str]
    deliver_to: str | None = None
    misfire: MisfirePolicy = "run_once"
    enabled: bool = True
    #: Where the job was defined (``hermes.yaml`` or a jobs file), for messages.
    origin: str = "hermes.yaml"

    @property
    def timezone(self) -> str:
        """The IANA name of the zone the schedule is read in."""
        return self.schedule.zone.key


def load_jobs(
    config: SchedulerConfig, *, jobs_dir: Path | None = None, file: str | None = None
) -> list[Job]:
    """Every job of ``config`` (``jobs_dir``: ``scheduler.jobs_dir`` resolved), in order:
    the configured ones, then the functions by file name. Raises ``ConfigError`` (naming
    ``file``, the configuration file) for a jobs file that does not load or a name used twice.
    """
    if config.timezone is None:
        return []  # validation allows that only without jobs
    zone = ZoneInfo(config.timezone)
    jobs = [_configured(entry, zone) for entry in config.jobs]
    if jobs_dir is not None:
        jobs.extend(_functions(jobs_dir, zone, file))
    seen: dict[str, Job] = {}
    for job in jobs:
        if job.name in seen:
            raise ConfigError(
                f"two jobs are named {job.name!r} ({seen[job.name].origin} and {job.origin}): "
                "job names must be unique / 任务名称重复",
                key="scheduler.jobs",
                file=file,
            )
        seen[job.name] = job
    return jobs


def _configured(entry: Any, zone: ZoneInfo) -> Job:
    plan = None
    if entry.plan is not None:
        plan = {"template": entry.plan.template, "params": dict(entry.plan.params)}
    return Job(
        name=entry.name,
        schedule=Schedule.crontab(entry.cron, zone),
        action="message" if entry.message is not None else "plan",
        session_id=entry.session_id,
        user_id=entry.user_id,
        message=entry.message,
        plan=plan,
        deliver_to=entry.deliver_to,
        misfire=entry.misfire,
        enabled=entry.enabled,
    )


def _functions(directory: Path, zone: ZoneInfo, file: str | None) -> list[Job]:
    from hermes.tools.plugins import import_plugin

    if not directory.is_dir():
        raise ConfigError(
            f"scheduler.jobs_dir {str(directory)!r} is not a directory", key="scheduler.jobs_dir",
            file=file,
        )  # fmt: skip
    jobs: list[Job] = []
    for path in sorted(directory.glob("*.py")):
        if path.name.startswith(("_", ".")):
            continue
        try:
            module = import_plugin(path)
        except Exception as exc:  # noqa: BLE001 - user code: any failure refuses the config
            raise ConfigError(
                f"jobs file {path} does not load: {type(exc).__name__}: {exc}",
                key="scheduler.jobs_dir",
                file=file,
            ) from None
        for value in vars(module).values():
            spec = getattr(value, SCHEDULED_ATTRIBUTE, None)
            if isinstance(spec, ScheduledFunction) and spec.function.__module__ == module.__name__:
                jobs.append(_function_job(spec, zone, path))
    return jobs


def _function_job(spec: ScheduledFunction, zone: ZoneInfo, path: Path) -> Job:
    return Job(
        name=spec.name,
        schedule=Schedule.fields(spec.fields, zone),
        action="function",
        function=spec.function,
        deliver_to=spec.deliver_to,
        misfire=spec.misfire,
        enabled=spec.enabled,
        origin=str(path),
    )
