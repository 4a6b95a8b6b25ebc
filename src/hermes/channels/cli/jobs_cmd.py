"""``hermes jobs list`` and ``hermes jobs run NAME`` (DESIGN.md, "More CLI"; the scheduler's
jobs of ``scheduler.jobs`` and ``scheduler.jobs_dir``).

``jobs list --json`` prints ``[{"name", "cron", "timezone", "next_run", "last_run": {"at",
"status", "trace_id"} | null, "missed"}]`` (times ISO 8601 with the offset of the job's zone);
``jobs run NAME`` runs the job now, in this process, and prints its reply (``--json``: the run
object). Exit codes: 0 done, 3 the run failed (its error on stderr, or in the object), 2 an
unknown job or a refused configuration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from hermes.agent import compose
from hermes.channels.cli.app import JsonFlag, app, loaded_config, open_agent, run_async, with_agent
from hermes.channels.cli.output import fail, note, out, report_error, write_json, write_text
from hermes.errors import HermesError

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.scheduler.service import RunReport

jobs_app = typer.Typer(
    help="Scheduled jobs: list them, run one now. / 定时任务：查看列表、立即运行。",
    no_args_is_help=True,
)
app.add_typer(jobs_app, name="jobs")

#: Exit code of ``jobs run`` when the run failed (DESIGN.md, "CLI exit codes").
EXIT_RUN_FAILED = 3


@jobs_app.command("list")
def jobs_list(as_json: JsonFlag = False) -> None:
    """List the jobs: schedule, zone, next run, last run, missed runs. / 列出定时任务。"""
    try:
        entries = _list_entries()
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json(entries)
        return
    if not entries:
        note("no jobs configured (scheduler.jobs, scheduler.jobs_dir) / 没有配置定时任务")
        return
    table = Table()
    for column in ("name", "cron", "timezone"):
        table.add_column(column, no_wrap=True)
    for column in ("next run", "last run", "missed"):
        table.add_column(column, overflow="fold")  # a time wraps, never "2026-12-04T0…"
    for entry in entries:
        last = entry["last_run"]
        table.add_row(
            entry["name"],
            entry["cron"],
            entry["timezone"],
            _short(entry["next_run"]),
            "—" if last is None else f"{last['status']} {_short(last['at'])}",
            str(entry["missed"]),
        )
    out.print(table)


def _short(at: str | None) -> str:
    """An ISO time of the list as a person reads it in the job's zone: ``2026-12-04 09:00``."""
    return "—" if at is None else at[:16].replace("T", " ")


def _list_entries() -> list[dict[str, Any]]:
    from hermes.scheduler.service import Scheduler
    from hermes.scheduler.setup import configured_jobs

    loaded = loaded_config()
    jobs = configured_jobs(loaded)
    path = loaded.store_path
    if not jobs:
        return []
    if path.exists():
        store = compose.open_store(path)
        runs = compose.open_job_runs(store)
        run_async(store.close)
    else:  # no database yet: no run was ever recorded (and listing creates no files)
        runs = compose.open_job_runs(":memory:")
    scheduler = Scheduler(jobs, runs)

    async def listing() -> list[dict[str, Any]]:
        try:
            return await scheduler.list_jobs()
        finally:
            await scheduler.stop()

    return run_async(listing)


@jobs_app.command("run")
def jobs_run(
    name: Annotated[str, typer.Argument(help="The job's name.")],
    as_json: JsonFlag = False,
) -> None:
    """Run a job now and print its reply (--json: the run object). / 立即运行一个任务。"""
    try:
        report = _run(name)
    except HermesError as exc:
        fail(exc, as_json)
    if as_json:
        write_json(report.to_json_dict())
    elif report.ok:
        write_text(report.reply or "")
    run = report.run
    if run.delivery == "failed":
        report_error(
            f"delivery failed after {run.delivery_attempts} attempt(s): {run.delivery_error} "
            "/ 结果投递失败"
        )
    if not report.ok:
        if not as_json:
            report_error(f"job {run.job!r} failed: {run.error} (trace {run.trace_id})")
        raise typer.Exit(code=EXIT_RUN_FAILED)
    if not as_json:
        note(f"job {run.job} · run {run.run_id} · trace {run.trace_id}")


def _run(name: str) -> RunReport:
    from hermes.scheduler.service import find_job
    from hermes.scheduler.setup import build_scheduler, configured_jobs

    loaded = loaded_config()
    jobs = configured_jobs(loaded)
    find_job(jobs, name)  # an unknown job is refused before the agent (and its files) opens
    agent = open_agent(loaded)

    async def run(a: Agent) -> RunReport:
        await a.connect_mcp()
        scheduler = build_scheduler(loaded, a, jobs=jobs)
        try:
            return await scheduler.run_job(name)
        finally:
            await scheduler.stop()

    return run_async(lambda: with_agent(agent, run))
