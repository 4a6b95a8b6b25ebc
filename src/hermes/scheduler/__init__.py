"""The scheduler (DESIGN.md, "Public contracts", Scheduler; seed 002 §3.2–§3.3): cron jobs
from ``scheduler.jobs`` and ``@scheduled_job`` functions, run once per (job, due time) however
many workers run.

- :mod:`hermes.scheduler.runs`: the record of runs (the ``JobRuns`` protocol; its backends
  live in ``hermes.storage``);
- :mod:`hermes.scheduler.decorator`: ``@scheduled_job`` (re-exported here);
- :mod:`hermes.scheduler.schedule`: due times (APScheduler's cron trigger, in the job's zone);
- :mod:`hermes.scheduler.jobs`: the jobs of a configuration;
- :mod:`hermes.scheduler.actions`: what a run does (a turn, a plan, a function);
- :mod:`hermes.scheduler.delivery`: the signed POST of a run to ``deliver_to``;
- :mod:`hermes.scheduler.service`: the ``Scheduler`` (catch-up, timers, overlap, manual runs);
- :mod:`hermes.scheduler.setup`: a ``Scheduler`` from a configuration (``build_scheduler``).

This package's ``__init__`` imports only the decorator: a jobs file pays for nothing else.
"""

from hermes.scheduler.decorator import scheduled_job

__all__ = ["scheduled_job"]
