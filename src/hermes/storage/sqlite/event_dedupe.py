"""Event dedupe on one SQLite file (the ``EventDedupe`` protocol of ``hermes.channels.dedupe``):
``events.db`` beside the session database by default (``hermes.storage.sqlite.leases`` says
why a file of its own).

One row per ``(route, msg_id)`` (the primary key). A claim reads and writes its row inside one
``BEGIN IMMEDIATE`` transaction, which holds the file's write lock from its first statement: of
any number of processes claiming one key at once, the first to take the lock inserts the row
and every later one reads it — exactly one ``new``. Expired keys are deleted by the claim that
meets one, by :meth:`SQLiteEventDedupe.expire`, and in the periodic upkeep on the worker.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from hermes.channels.dedupe import (
    DEFAULT_KEEP_SECONDS,
    DEFAULT_LEASE_SECONDS,
    DedupeClaim,
    Delivery,
    check_event_key,
)
from hermes.storage.sqlite.leases import RunsFile, fenced_write, is_gone, next_token
from hermes.storage.sqlite.migrations import Migration
from hermes.storage.sqlite.support import write_transaction

MIGRATIONS: list[Migration] = [
    (
        """
        CREATE TABLE event_deliveries (
            route         TEXT NOT NULL,
            msg_id        TEXT NOT NULL,
            body_hash     TEXT NOT NULL,
            trace_id      TEXT NOT NULL,
            status        TEXT NOT NULL CHECK (status IN ('processing', 'done', 'failed')),
            token         INTEGER NOT NULL,
            attempts      INTEGER NOT NULL,
            first_seen_at REAL NOT NULL,
            claimed_at    REAL NOT NULL,
            lease_until   REAL,
            finished_at   REAL,
            error         TEXT,
            expires_at    REAL NOT NULL,
            PRIMARY KEY (route, msg_id)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX event_deliveries_by_expiry ON event_deliveries (expires_at)",
    ),
]

_COLUMNS = (
    "route, msg_id, body_hash, trace_id, status, token, attempts, first_seen_at, claimed_at, "
    "lease_until, finished_at, error, expires_at"
)
_SELECT = f"SELECT {_COLUMNS} FROM event_deliveries WHERE route = ? AND msg_id = ?"
_INSERT = (
    f"INSERT INTO event_deliveries ({_COLUMNS}) "
    "VALUES (?, ?, ?, ?, 'processing', ?, 1, ?, ?, ?, NULL, NULL, ?)"
)
_RETAKE = (
    "UPDATE event_deliveries SET trace_id = ?, status = 'processing', token = ?, "
    "attempts = attempts + 1, claimed_at = ?, lease_until = ?, finished_at = NULL, error = NULL, "
    f"expires_at = ? WHERE route = ? AND msg_id = ? RETURNING {_COLUMNS}"
)
_HELD = " WHERE route = ? AND msg_id = ? AND token = ? AND status = 'processing'"
_FINISH = (
    "UPDATE event_deliveries SET status = ?, lease_until = NULL, finished_at = ?, error = ?"
    + _HELD
    + f" RETURNING {_COLUMNS}"
)
_RENEW = "UPDATE event_deliveries SET lease_until = ?" + _HELD + f" RETURNING {_COLUMNS}"
_RELEASE = "DELETE FROM event_deliveries" + _HELD
# A key past its window is gone, unless a live lease still holds it.
_EXPIRED = "expires_at <= ? AND (status <> 'processing' OR lease_until <= ?)"
_EXPIRE = f"DELETE FROM event_deliveries WHERE {_EXPIRED}"


def _delivery(row: Any) -> Delivery:
    return Delivery(*row)


def _claim(
    conn: sqlite3.Connection,
    key: tuple[str, str],
    *,
    body_hash: str,
    trace_id: str,
    times: tuple[float, float, float],
) -> DedupeClaim:
    now, lease_until, expires_at = times
    with write_transaction(conn):
        row = conn.execute(_SELECT, key).fetchone()
        found = None if row is None else _delivery(row)
        if found is not None and is_gone(found, now):
            conn.execute("DELETE FROM event_deliveries WHERE route = ? AND msg_id = ?", key)
            found = None
        if found is None:
            token = next_token(None)
            values = (*key, body_hash, trace_id, token, now, now, lease_until, expires_at)
            conn.execute(_INSERT, values)
            return DedupeClaim("new", _delivery(conn.execute(_SELECT, key).fetchone()))
        if found.body_hash != body_hash:
            return DedupeClaim("conflict", found)
        if found.status == "done":
            return DedupeClaim("duplicate", found)
        if found.status == "processing" and (found.lease_until or 0.0) > now:
            return DedupeClaim("in_progress", found)
        # Failed, or its holder died (lease passed): this delivery processes it again.
        token = next_token(found.token)
        retake = (trace_id, token, now, lease_until, expires_at, *key)
        rows = conn.execute(_RETAKE, retake).fetchall()
        return DedupeClaim("new", _delivery(rows[0]))


def _held_write(conn: sqlite3.Connection, sql: str, values: tuple[Any, ...], what: str) -> Any:
    """Run a statement fenced by ``_HELD`` (its last three values are route, msg_id, token)."""
    route, msg_id, _token = values[-3:]
    where = f"{what} event {msg_id!r} of route {route!r}"
    return fenced_write(conn, sql, values, where, route=route, msg_id=msg_id)


def _get(conn: sqlite3.Connection, key: tuple[str, str], now: float) -> Delivery | None:
    row = conn.execute(_SELECT, key).fetchone()
    if row is None:
        return None
    found = _delivery(row)
    return None if is_gone(found, now) else found


def _expire(conn: sqlite3.Connection, now: float) -> int:
    with write_transaction(conn):
        return conn.execute(_EXPIRE, (now, now)).rowcount


class SQLiteEventDedupe(RunsFile):
    """An :class:`~hermes.channels.dedupe.EventDedupe` on one SQLite file (WAL); ``path``,
    ``clock`` and ``busy_timeout`` as for :class:`~hermes.storage.sqlite.leases.RunsFile`.
    """

    kind = "event dedupe store"
    migrations = MIGRATIONS
    thread = "hermes-events"

    def _maintain_connection(self, conn: sqlite3.Connection) -> None:
        # The checkpoint first: the purge may meet another process's lock (busy timeout 0
        # here) and fail, which only delays it to the next upkeep.
        super()._maintain_connection(conn)
        _expire(conn, self._clock())

    async def claim(
        self,
        route: str,
        msg_id: str,
        *,
        body_hash: str,
        trace_id: str,
        lease: float = DEFAULT_LEASE_SECONDS,
        keep: float = DEFAULT_KEEP_SECONDS,
    ) -> DedupeClaim:
        """See :meth:`hermes.channels.dedupe.EventDedupe.claim`."""
        check_event_key(route, msg_id)
        now = self._clock()
        return await self._run(
            "claim", _claim, (route, msg_id), body_hash=body_hash, trace_id=trace_id,
            times=(now, now + lease, now + keep),
        )  # fmt: skip

    async def finish(
        self,
        route: str,
        msg_id: str,
        token: int,
        *,
        status: Literal["done", "failed"],
        error: str | None = None,
    ) -> Delivery:
        """See :meth:`hermes.channels.dedupe.EventDedupe.finish`."""
        if status not in ("done", "failed"):
            raise ValueError(f"status must be 'done' or 'failed', not {status!r}")
        values = (status, self._clock(), error, route, msg_id, token)
        row = await self._run("finish", _held_write, _FINISH, values, "finish")
        return _delivery(row)

    async def renew(self, route: str, msg_id: str, token: int, *, lease: float) -> Delivery:
        """See :meth:`hermes.channels.dedupe.EventDedupe.renew`."""
        values = (self._clock() + lease, route, msg_id, token)
        return _delivery(await self._run("renew", _held_write, _RENEW, values, "renew"))

    async def release(self, route: str, msg_id: str, token: int) -> None:
        """See :meth:`hermes.channels.dedupe.EventDedupe.release`."""
        await self._run("release", _held_write, _RELEASE, (route, msg_id, token), "release")

    async def get(self, route: str, msg_id: str) -> Delivery | None:
        """See :meth:`hermes.channels.dedupe.EventDedupe.get`."""
        return await self._run("get", _get, (route, msg_id), self._clock())

    async def expire(self) -> int:
        """See :meth:`hermes.channels.dedupe.EventDedupe.expire`."""
        return await self._run("expire", _expire, self._clock())
