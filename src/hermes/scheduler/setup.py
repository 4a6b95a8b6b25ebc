"""A scheduler from a configuration: its jobs (``scheduler.jobs`` and ``scheduler.jobs_dir``),
its record of runs (``jobs.db`` beside the session database, through the composition root)
and its delivery settings. What ``hermes serve`` starts in its lifespan::

    scheduler = await start_scheduler(loaded, agent)   # None without jobs
    ...
    await scheduler.stop(grace=...)

(``hermes.channels.http.app`` does that and keeps it as ``Service.parts["scheduler"]``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.agent import compose
from hermes.config.loader import LoadedConfig
from hermes.scheduler.delivery import Delivery
from hermes.scheduler.jobs import Job, load_jobs
from hermes.scheduler.service import Scheduler
from hermes.session.store import Store

if TYPE_CHECKING:
    from hermes.agent.agent import Agent

__all__ = ["SCHEDULER_PART", "build_scheduler", "configured_jobs", "start_scheduler"]

#: The name of the running scheduler in ``hermes serve``'s ``Service.parts`` (the jobs routes
#: find it there).
SCHEDULER_PART = "scheduler"


def configured_jobs(loaded: LoadedConfig) -> list[Job]:
    """The jobs of ``loaded`` (a ``ConfigError`` naming the file for a jobs file that does not
    load or a job name used twice)."""
    config = loaded.config.scheduler
    jobs_dir = None if config.jobs_dir is None else loaded.resolve_path(config.jobs_dir)
    source = None if loaded.source is None else str(loaded.source)
    return load_jobs(config, jobs_dir=jobs_dir, file=source)


def build_scheduler(
    loaded: LoadedConfig,
    agent: Agent | None,
    *,
    store: Store | None = None,
    jobs: list[Job] | None = None,
) -> Scheduler:
    """The scheduler of ``loaded`` running its jobs with ``agent``, not started; its runs are
    recorded beside ``agent.store`` (or ``store``, for a scheduler that only lists)."""
    where = store if store is not None else agent.store if agent is not None else None
    if where is None:
        raise ValueError("build_scheduler needs an agent or a store")
    config = loaded.config.scheduler
    delivery = Delivery(
        secret=config.deliver_secret,
        attempts=config.deliver_attempts,
        timeout=config.deliver_timeout,
    )
    return Scheduler(
        configured_jobs(loaded) if jobs is None else jobs,
        compose.open_job_runs(where, base_dir=loaded.base_dir),
        agent,
        delivery=delivery,
    )


async def start_scheduler(loaded: LoadedConfig | None, agent: Agent) -> Scheduler | None:
    """The started scheduler of ``loaded`` (``hermes serve``'s lifespan), ``None`` when there
    is no configuration or no job (nothing is opened then). Stop it with ``await
    scheduler.stop(grace=...)``."""
    if loaded is None:
        return None
    jobs = configured_jobs(loaded)
    if not jobs:
        return None
    scheduler = build_scheduler(loaded, agent, jobs=jobs)
    await scheduler.start()
    return scheduler
