"""Job runs on one SQLite file (the ``JobRuns`` protocol of ``hermes.scheduler.runs``):
``jobs.db`` beside the session database by default (``hermes.storage.sqlite.leases`` says why
a file of its own).

One row per run under ``UNIQUE (job, due_ms)``. A claim reads the job's running runs and its
own due time and writes the outcome inside one ``BEGIN IMMEDIATE`` transaction (the file's
write lock from the first statement), so of any number of processes claiming one
``(job, due time)`` exactly one inserts the run, and the overlap check cannot race a start.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from hermes.errors import LeaseLostError, RunNotFoundError
from hermes.scheduler.runs import (
    ABANDONED,
    DEFAULT_LEASE_SECONDS,
    DeliveryOutcome,
    JobClaim,
    JobRun,
    JobRunStatus,
    OverlapBehavior,
    check_job_name,
    due_key,
    new_run_id,
)
from hermes.storage.sqlite.leases import RunsFile, next_token
from hermes.storage.sqlite.migrations import Migration
from hermes.storage.sqlite.support import write_transaction

MIGRATIONS: list[Migration] = [
    (
        """
        CREATE TABLE job_runs (
            run_id            TEXT PRIMARY KEY,
            job               TEXT NOT NULL,
            due_ms            INTEGER NOT NULL,
            status            TEXT NOT NULL CHECK (status IN
                                  ('running', 'succeeded', 'failed', 'skipped', 'missed')),
            trace_id          TEXT,
            token             INTEGER NOT NULL,
            attempts          INTEGER NOT NULL,
            recorded_at       REAL NOT NULL,
            started_at        REAL,
            finished_at       REAL,
            lease_until       REAL,
            error             TEXT,
            skipped_for       TEXT,
            delivery          TEXT CHECK (delivery IN ('delivered', 'failed')),
            delivery_error    TEXT,
            delivery_attempts INTEGER NOT NULL DEFAULT 0,
            UNIQUE (job, due_ms)
        )
        """,
        "CREATE INDEX job_runs_by_due ON job_runs (due_ms DESC)",
        "CREATE INDEX job_runs_running ON job_runs (job) WHERE status = 'running'",
        "CREATE INDEX job_runs_by_status ON job_runs (job, status, due_ms)",
    ),
]

_COLUMNS = (
    "run_id, job, due_ms, status, trace_id, token, attempts, recorded_at, started_at, "
    "finished_at, lease_until, error, skipped_for, delivery, delivery_error, delivery_attempts"
)
_SELECT = f"SELECT {_COLUMNS} FROM job_runs"
_INSERT = f"INSERT INTO job_runs ({_COLUMNS}) VALUES ({', '.join('?' * 16)})"
_RUNNING = _SELECT + " WHERE job = ? AND status = 'running'"
_ABANDON = (
    "UPDATE job_runs SET status = 'failed', error = ?, finished_at = ?, lease_until = NULL "
    "WHERE run_id = ? AND status = 'running'"
)
_RETAKE = (
    "UPDATE job_runs SET token = ?, attempts = attempts + 1, trace_id = ?, started_at = ?, "
    f"lease_until = ? WHERE run_id = ? RETURNING {_COLUMNS}"
)
_HELD = " WHERE run_id = ? AND token = ? AND status = 'running'"
_FINISH = (
    "UPDATE job_runs SET status = ?, error = ?, finished_at = ?, lease_until = NULL"
    + _HELD
    + f" RETURNING {_COLUMNS}"
)
_RENEW = "UPDATE job_runs SET lease_until = ?" + _HELD + f" RETURNING {_COLUMNS}"
_DELIVERY = (
    "UPDATE job_runs SET delivery = ?, delivery_error = ?, delivery_attempts = ? "
    f"WHERE run_id = ? RETURNING {_COLUMNS}"
)


def _run(row: Any) -> JobRun:
    values = list(row)
    values[2] = values[2] / 1000.0  # due_ms → due_at
    return JobRun(*values)


def _new_row(
    job: str, due_ms: int, status: JobRunStatus, trace_id: str | None, now: float, **fields: Any
) -> tuple[Any, ...]:
    running = status == "running"
    return (
        new_run_id(), job, due_ms, status, trace_id, next_token(None), 1 if running else 0, now,
        now if running else None, None if running else now, fields.get("lease_until"), None,
        fields.get("skipped_for"), None, None, 0,
    )  # fmt: skip


def _insert(conn: sqlite3.Connection, row: tuple[Any, ...]) -> JobRun:
    conn.execute(_INSERT, row)
    return _run(conn.execute(_SELECT + " WHERE run_id = ?", (row[0],)).fetchone())


def _claim(
    conn: sqlite3.Connection,
    key: tuple[str, int],
    *,
    trace_id: str,
    lease: float,
    on_overlap: OverlapBehavior,
    now: float,
) -> JobClaim:
    job, due_ms = key
    with write_transaction(conn):
        row = conn.execute(_SELECT + " WHERE job = ? AND due_ms = ?", (job, due_ms)).fetchone()
        if row is not None:
            found = _run(row)
            if found.status == "running" and (found.lease_until or 0.0) <= now:
                # Its worker died: this claim takes the same run over (same run_id).
                values = (next_token(found.token), trace_id, now, now + lease, found.run_id)
                return JobClaim("claimed", _run(conn.execute(_RETAKE, values).fetchall()[0]))
            return JobClaim("taken", found)
        live: JobRun | None = None
        for other in map(_run, conn.execute(_RUNNING, (job,)).fetchall()):
            if (other.lease_until or 0.0) <= now:
                conn.execute(_ABANDON, (ABANDONED, now, other.run_id))
            elif live is None:
                live = other
        if live is not None and on_overlap == "skip":
            skipped = _new_row(job, due_ms, "skipped", trace_id, now, skipped_for=live.run_id)
            return JobClaim("skipped", _insert(conn, skipped))
        started = _new_row(job, due_ms, "running", trace_id, now, lease_until=now + lease)
        return JobClaim("claimed", _insert(conn, started))


def _held_write(conn: sqlite3.Connection, sql: str, values: tuple[Any, ...], what: str) -> JobRun:
    """A statement fenced by ``_HELD`` (its last two values are run_id, token)."""
    with write_transaction(conn):
        rows = conn.execute(sql, values).fetchall()
        if rows:
            return _run(rows[0])
        run_id = values[-2]
        found = conn.execute("SELECT status FROM job_runs WHERE run_id = ?", (run_id,)).fetchone()
        if found is None:
            raise RunNotFoundError(f"no job run {run_id!r}", run_id=run_id)
        raise LeaseLostError(
            f"cannot {what} job run {run_id!r}: this claim no longer holds it (it is "
            f"{found[0]}, or was taken over after its lease expired)",
            run_id=run_id,
        )


def _record_missed(conn: sqlite3.Connection, job: str, due_ms: int, now: float) -> JobRun:
    with write_transaction(conn):
        row = conn.execute(_SELECT + " WHERE job = ? AND due_ms = ?", (job, due_ms)).fetchone()
        if row is not None:
            return _run(row)
        return _insert(conn, _new_row(job, due_ms, "missed", None, now))


def _record_delivery(conn: sqlite3.Connection, values: tuple[Any, ...]) -> JobRun:
    with write_transaction(conn):
        rows = conn.execute(_DELIVERY, values).fetchall()
    if not rows:
        raise RunNotFoundError(f"no job run {values[-1]!r}", run_id=values[-1])
    return _run(rows[0])


def _select_one(conn: sqlite3.Connection, where: str, values: tuple[Any, ...]) -> JobRun | None:
    row = conn.execute(f"{_SELECT} WHERE {where}", values).fetchone()
    return None if row is None else _run(row)


def _list(
    conn: sqlite3.Connection, job: str | None, limit: int, before_ms: int | None
) -> list[JobRun]:
    terms: list[str] = []
    values: list[Any] = []
    if job is not None:
        terms.append("job = ?")
        values.append(job)
    if before_ms is not None:
        terms.append("due_ms < ?")
        values.append(before_ms)
    where = f" WHERE {' AND '.join(terms)}" if terms else ""
    sql = f"{_SELECT}{where} ORDER BY due_ms DESC, run_id DESC LIMIT ?"
    return [_run(row) for row in conn.execute(sql, (*values, limit)).fetchall()]


def _count(conn: sqlite3.Connection, job: str, status: str, since_ms: int | None) -> int:
    sql = "SELECT COUNT(*) FROM job_runs WHERE job = ? AND status = ? AND due_ms >= ?"
    since = -(2**62) if since_ms is None else since_ms
    return int(conn.execute(sql, (job, status, since)).fetchone()[0])


def _prune(conn: sqlite3.Connection, before_ms: int) -> int:
    with write_transaction(conn):
        sql = "DELETE FROM job_runs WHERE due_ms < ? AND status <> 'running'"
        return conn.execute(sql, (before_ms,)).rowcount


class SQLiteJobRuns(RunsFile):
    """A :class:`~hermes.scheduler.runs.JobRuns` on one SQLite file (WAL); ``path``,
    ``clock`` and ``busy_timeout`` as for :class:`~hermes.storage.sqlite.leases.RunsFile`.
    """

    kind = "job runs store"
    migrations = MIGRATIONS
    thread = "hermes-jobs"

    async def claim(
        self,
        job: str,
        due_at: float,
        *,
        trace_id: str,
        lease: float = DEFAULT_LEASE_SECONDS,
        on_overlap: OverlapBehavior = "skip",
    ) -> JobClaim:
        """See :meth:`hermes.scheduler.runs.JobRuns.claim`."""
        check_job_name(job)
        if on_overlap not in ("skip", "run"):
            raise ValueError(f"on_overlap must be 'skip' or 'run', not {on_overlap!r}")
        return await self._run(
            "claim", _claim, (job, due_key(due_at)), trace_id=trace_id, lease=lease,
            on_overlap=on_overlap, now=self._clock(),
        )  # fmt: skip

    async def finish(
        self,
        run_id: str,
        token: int,
        *,
        status: Literal["succeeded", "failed"],
        error: str | None = None,
    ) -> JobRun:
        """See :meth:`hermes.scheduler.runs.JobRuns.finish`."""
        if status not in ("succeeded", "failed"):
            raise ValueError(f"status must be 'succeeded' or 'failed', not {status!r}")
        values = (status, error, self._clock(), run_id, token)
        return await self._run("finish", _held_write, _FINISH, values, "finish")

    async def renew(self, run_id: str, token: int, *, lease: float) -> JobRun:
        """See :meth:`hermes.scheduler.runs.JobRuns.renew`."""
        values = (self._clock() + lease, run_id, token)
        return await self._run("renew", _held_write, _RENEW, values, "renew")

    async def record_missed(self, job: str, due_at: float) -> JobRun:
        """See :meth:`hermes.scheduler.runs.JobRuns.record_missed`."""
        check_job_name(job)
        due_ms = due_key(due_at)
        return await self._run("record_missed", _record_missed, job, due_ms, self._clock())

    async def record_delivery(
        self, run_id: str, *, outcome: DeliveryOutcome, attempts: int, error: str | None = None
    ) -> JobRun:
        """See :meth:`hermes.scheduler.runs.JobRuns.record_delivery`."""
        if outcome not in ("delivered", "failed"):
            raise ValueError(f"outcome must be 'delivered' or 'failed', not {outcome!r}")
        values = (outcome, error, attempts, run_id)
        return await self._run("record_delivery", _record_delivery, values)

    async def get(self, run_id: str) -> JobRun | None:
        """See :meth:`hermes.scheduler.runs.JobRuns.get`."""
        return await self._run("get", _select_one, "run_id = ?", (run_id,))

    async def running(self, job: str) -> JobRun | None:
        """See :meth:`hermes.scheduler.runs.JobRuns.running`."""
        where = "job = ? AND status = 'running' AND lease_until > ? ORDER BY due_ms LIMIT 1"
        return await self._run("running", _select_one, where, (job, self._clock()))

    async def last_run(self, job: str) -> JobRun | None:
        """See :meth:`hermes.scheduler.runs.JobRuns.last_run`."""
        where = "job = ? ORDER BY due_ms DESC LIMIT 1"
        return await self._run("last_run", _select_one, where, (job,))

    async def list_runs(
        self, job: str | None = None, *, limit: int = 50, before: float | None = None
    ) -> list[JobRun]:
        """See :meth:`hermes.scheduler.runs.JobRuns.list_runs`."""
        if limit <= 0:
            return []
        before_ms = None if before is None else due_key(before)
        return await self._run("list_runs", _list, job, limit, before_ms)

    async def count_runs(
        self, job: str, *, status: JobRunStatus, since: float | None = None
    ) -> int:
        """See :meth:`hermes.scheduler.runs.JobRuns.count_runs`."""
        since_ms = None if since is None else due_key(since)
        return await self._run("count_runs", _count, job, status, since_ms)

    async def prune(self, before: float) -> int:
        """See :meth:`hermes.scheduler.runs.JobRuns.prune`."""
        return await self._run("prune", _prune, due_key(before))
