"""The SQLite idempotency records (the protocol and its contract:
``hermes.tools.pipeline.idempotency_records``): one table ``tool_idempotency`` in a file of its
own — ``idempotency.db`` beside the session database, or ``<workspace>/.hermes/idempotency.db``
for an agent whose store has no file (``hermes.storage.open``).

Durable across restarts: results live in a SQLite table (WAL, ``synchronous=NORMAL`` — a
committed result survives a crash of the process; a power cut may lose the last few). Only
what the step completes (successful results) is stored, for the tool's ``idempotency_ttl``.

Exactly-once, also across processes sharing the file: before running, a caller *claims* the
key (a ``pending`` row, unique per tool and key, with a lease long enough for the whole call),
in one atomic statement. Another caller that meets a live claim polls it until it ends and
then returns the stored result (or, if the first call failed and released its claim, runs
itself). A process that dies while holding a claim blocks the key only until the lease
expires.

Like the session store, each operation first tries a fast path on the caller's thread with
``busy_timeout = 0`` — it can never wait on another process — and falls back to one worker
thread (with the real busy timeout) when the connection is in use or another process holds the
write lock. The file is opened lazily on that worker, and the WAL checkpoints and the purge of
expired rows run there too.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Literal

from hermes.errors import StoreError
from hermes.observe import get_logger
from hermes.storage.sqlite.support import SQLiteWorker, is_busy

__all__ = ["IdempotencyFiles", "SQLiteIdempotencyRecords"]

logger = get_logger("tools")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tool_idempotency (
    tool TEXT NOT NULL,
    key TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'done')),
    owner TEXT NOT NULL,
    result TEXT,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    PRIMARY KEY (tool, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tool_idempotency_expiry ON tool_idempotency (expires_at);
"""
_POLL_S = 0.05  # how often a caller re-reads a key another process has claimed
# Row changes between WAL checkpoints and purges of expired rows (two per stored call). The
# maintenance holds the connection for a few ms, sending that moment's calls to the worker.

_Status = Literal["done", "busy", "claimed"]


class SQLiteIdempotencyRecords(SQLiteWorker):
    """The idempotency records of one SQLite file. Nothing is opened until the first operation.

    ``clock`` gives wall-clock seconds (expiry times outlive the process, so not monotonic;
    injectable for tests). ``busy_timeout`` (seconds) is how long a write waits for another
    process's lock. Every failure is a :class:`~hermes.errors.StoreError` with one clear
    sentence.
    """

    kind = "idempotency store"
    maintain_every = 1024

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 5.0,
    ) -> None:
        super().__init__(str(path), busy_timeout, thread_name="hermes-idem")
        self.clock = clock

    def __repr__(self) -> str:
        return f"SQLiteIdempotencyRecords({self.path!r})"

    # -- operations ------------------------------------------------------------------------

    async def claim(self, tool: str, key: str, *, owner: str, lease: float) -> str | None:
        """The stored result (JSON text) of an earlier successful call with this key, or
        ``None`` once ``owner`` holds the claim and must run the call, then :meth:`complete`
        or :meth:`release` it. Waits while another process holds a live claim; ``lease`` is
        how many seconds this caller's claim blocks others if it dies before ending it."""
        while True:
            now = self.clock()
            status, value = await self._run(
                "claim", _begin, tool, key, now=now, lease_until=now + lease, owner=owner
            )
            if status == "done":
                return str(value)
            if status == "claimed":
                return None
            await asyncio.sleep(min(_POLL_S, max(0.001, float(value) - now)))

    async def complete(
        self, tool: str, key: str, *, owner: str, result_json: str, ttl: float
    ) -> bool:
        """Store the result of a claimed call for ``ttl`` seconds; ``False`` if the claim was
        lost meanwhile (its lease ran out and another caller took the key)."""
        expires_at = self.clock() + ttl
        return await self._run(
            "complete", _complete, tool, key, owner=owner, result=result_json, expires_at=expires_at
        )

    async def release(self, tool: str, key: str, *, owner: str) -> None:
        """Give up a claim (the call failed): the next caller with this key runs it."""
        await self._run("release", _release, tool, key, owner)

    def complete_soon(
        self, tool: str, key: str, *, owner: str, result_json: str, ttl: float
    ) -> None:
        """:meth:`complete` without awaiting (from a cancelled task); failures are logged."""
        expires_at = self.clock() + ttl
        try:
            future = self._submit(
                "complete",
                _complete,
                tool,
                key,
                owner=owner,
                result=result_json,
                expires_at=expires_at,
            )
        except StoreError as exc:
            logger.error("idempotency_record_failed", tool=tool, error=exc.message)
            return

        def report(done: Future[bool]) -> None:
            error = done.exception()
            if error is not None:
                logger.error("idempotency_record_failed", tool=tool, error=str(error))

        future.add_done_callback(report)

    def release_soon(self, tool: str, key: str, *, owner: str) -> None:
        """:meth:`release` without awaiting (from a cancelled task); failures are logged."""
        try:
            future = self._submit("release", _release, tool, key, owner)
        except StoreError as exc:
            logger.error("idempotency_release_failed", tool=tool, error=exc.message)
            return

        def report(done: Future[None]) -> None:
            error = done.exception()
            if error is not None:
                logger.error("idempotency_release_failed", tool=tool, error=str(error))

        future.add_done_callback(report)

    def _prepare(self, conn: sqlite3.Connection) -> None:
        conn.executescript(_SCHEMA)

    def _maintain_connection(self, conn: sqlite3.Connection) -> None:
        """On the worker: drop expired rows and checkpoint the WAL (it fsyncs: never inline)."""
        conn.execute("DELETE FROM tool_idempotency WHERE expires_at <= ?", (self.clock(),))
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _error(self, exc: sqlite3.Error, action: str) -> StoreError:
        if is_busy(exc):
            message = (
                f"the idempotency database {self.path} is locked (busy for {self.busy_timeout:g} s)"
            )
        else:
            message = f"{action} failed on the idempotency database {self.path}: {exc}"
        return StoreError(message, path=self.path, action=action)


def _lookup(
    conn: sqlite3.Connection, tool: str, key: str, now: float
) -> tuple[_Status, Any] | None:
    row = conn.execute(
        "SELECT state, result, expires_at FROM tool_idempotency WHERE tool = ? AND key = ?",
        (tool, key),
    ).fetchone()
    if row is None or row[2] <= now:
        return None
    return ("done", row[1]) if row[0] == "done" else ("busy", row[2])


def _begin(
    conn: sqlite3.Connection, tool: str, key: str, *, now: float, lease_until: float, owner: str
) -> tuple[_Status, Any]:
    # One atomic statement (one commit): insert the claim, or take over an expired row; a
    # live row makes it change nothing, and then we read that row. Claiming first makes the
    # common case (a new key) one statement; a replay pays one extra read.
    claimed = conn.execute(
        "INSERT INTO tool_idempotency (tool, key, state, owner, result, created_at, expires_at) "
        "VALUES (?, ?, 'pending', ?, NULL, ?, ?) "
        "ON CONFLICT (tool, key) DO UPDATE SET state = 'pending', owner = excluded.owner, "
        "result = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at "
        "WHERE tool_idempotency.expires_at <= excluded.created_at",
        (tool, key, owner, now, lease_until),
    ).rowcount
    if claimed == 1:
        return ("claimed", None)
    found = _lookup(conn, tool, key, now)
    # Gone again (expired between the two statements): report busy so the caller retries.
    return found if found is not None else ("busy", now)


def _complete(
    conn: sqlite3.Connection, tool: str, key: str, *, owner: str, result: str, expires_at: float
) -> bool:
    cursor = conn.execute(
        "UPDATE tool_idempotency SET state = 'done', result = ?, expires_at = ? "
        "WHERE tool = ? AND key = ? AND owner = ? AND state = 'pending'",
        (result, expires_at, tool, key, owner),
    )
    return cursor.rowcount == 1


def _release(conn: sqlite3.Connection, tool: str, key: str, owner: str) -> None:
    conn.execute(
        "DELETE FROM tool_idempotency "
        "WHERE tool = ? AND key = ? AND owner = ? AND state = 'pending'",
        (tool, key, owner),
    )


class IdempotencyFiles:
    """The open idempotency files of a process: one :class:`SQLiteIdempotencyRecords` per path
    (opened on first use, shared by every executor on that file, as a process shares one
    connection per file), and the per-workspace file ``<workspace>/.hermes/idempotency.db``.

    ``clock``: wall-clock seconds for the records it opens.
    """

    WORKSPACE_FILE = os.path.join(".hermes", "idempotency.db")

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._open: dict[str, SQLiteIdempotencyRecords] = {}
        self._lock = threading.Lock()

    def at(self, path: str | os.PathLike[str]) -> SQLiteIdempotencyRecords:
        """The records of the file at ``path`` (one object per path)."""
        key = os.fspath(path)
        records = self._open.get(key)
        if records is None:
            with self._lock:
                records = self._open.get(key)
                if records is None:
                    records = SQLiteIdempotencyRecords(key, clock=self.clock)
                    self._open[key] = records
        return records

    def for_workspace(self, workspace: str) -> SQLiteIdempotencyRecords:
        """The records of ``<workspace>/.hermes/idempotency.db``."""
        return self.at(os.path.join(workspace, self.WORKSPACE_FILE))

    async def close(self) -> None:
        """Close every open file; the object stays usable (the next call opens them again)."""
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for records in opened:
            await records.close()

    def close_sync(self) -> None:
        """:meth:`close` outside an event loop."""
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for records in opened:
            records.close_sync()
