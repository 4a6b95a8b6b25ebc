"""The scheduler (DESIGN.md, "Public contracts", Scheduler): cron jobs from ``scheduler.jobs``
and ``@scheduled_job`` functions, run once per (job, due time) however many workers run.

Today it holds the record of runs, :mod:`hermes.scheduler.runs` (the ``JobRuns`` protocol; its
backends live in ``hermes.storage``); the scheduler itself and ``scheduled_job`` build on it.
"""
