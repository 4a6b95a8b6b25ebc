"""The HTTP ``Idempotency-Key`` records on one SQLite file (the ``RequestKeys`` protocol of
``hermes.channels.http.request_keys``): ``requests.db`` beside the session database by default
(``hermes.storage.sqlite.leases`` says why a file of its own).

One row per ``(scope, key)`` (the primary key). A claim reads and writes its row inside one
``BEGIN IMMEDIATE`` transaction, which holds the file's write lock from its first statement: of
any number of processes claiming one key at once, the first to take the lock inserts the row
and every later one reads it — exactly one ``new`` (as ``hermes.storage.sqlite.event_dedupe``,
whose fencing and window helpers this shares). Only the body's hash and the response are
stored; ``user_id`` is indexed so that erasing a user deletes the replies kept for them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from hermes.channels.http.request_keys import (
    DEFAULT_KEEP_SECONDS,
    DEFAULT_LEASE_SECONDS,
    KeyClaim,
    RequestRecord,
    check_request_key,
)
from hermes.storage.sqlite.leases import (
    RunsFile,
    dump_json,
    fenced_write,
    is_gone,
    load_json,
    next_token,
)
from hermes.storage.sqlite.migrations import Migration
from hermes.storage.sqlite.support import write_transaction

MIGRATIONS: list[Migration] = [
    (
        """
        CREATE TABLE request_keys (
            scope         TEXT NOT NULL,
            key           TEXT NOT NULL,
            body_hash     TEXT NOT NULL,
            user_id       TEXT,
            status        TEXT NOT NULL CHECK (status IN ('processing', 'done')),
            token         INTEGER NOT NULL,
            attempts      INTEGER NOT NULL,
            first_seen_at REAL NOT NULL,
            claimed_at    REAL NOT NULL,
            lease_until   REAL,
            finished_at   REAL,
            status_code   INTEGER,
            response      TEXT,
            expires_at    REAL NOT NULL,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID
        """,
        "CREATE INDEX request_keys_by_expiry ON request_keys (expires_at)",
        "CREATE INDEX request_keys_by_user ON request_keys (user_id) WHERE user_id IS NOT NULL",
    ),
]

_COLUMNS = (
    "scope, key, body_hash, user_id, status, token, attempts, first_seen_at, claimed_at, "
    "lease_until, finished_at, status_code, response, expires_at"
)
_KEY = " WHERE scope = ? AND key = ?"
_SELECT = f"SELECT {_COLUMNS} FROM request_keys" + _KEY
_INSERT = (
    f"INSERT INTO request_keys ({_COLUMNS}) "
    "VALUES (?, ?, ?, ?, 'processing', ?, 1, ?, ?, ?, NULL, NULL, NULL, ?)"
)
# A holder that died (its lease passed) leaves the key to this claim.
_RETAKE = (
    "UPDATE request_keys SET user_id = ?, token = ?, attempts = attempts + 1, claimed_at = ?, "
    f"lease_until = ?, expires_at = ?{_KEY} RETURNING {_COLUMNS}"
)
_HELD = _KEY + " AND token = ? AND status = 'processing'"
_FINISH = (
    "UPDATE request_keys SET status = 'done', lease_until = NULL, finished_at = ?, "
    f"status_code = ?, response = ?{_HELD} RETURNING {_COLUMNS}"
)
_RENEW = f"UPDATE request_keys SET lease_until = ?{_HELD} RETURNING {_COLUMNS}"
_RELEASE = "DELETE FROM request_keys" + _HELD
_EXPIRE = (
    "DELETE FROM request_keys "
    "WHERE expires_at <= ? AND (status <> 'processing' OR lease_until <= ?)"
)
_FORGET = "DELETE FROM request_keys WHERE user_id = ?"


def _record(row: Any) -> RequestRecord:
    values = list(row)
    values[12] = load_json(values[12], "stored idempotent response")
    return RequestRecord(*values)


def _claim(
    conn: sqlite3.Connection,
    key: tuple[str, str],
    *,
    body_hash: str,
    user_id: str | None,
    times: tuple[float, float, float],
) -> KeyClaim:
    now, lease_until, expires_at = times
    with write_transaction(conn):
        row = conn.execute(_SELECT, key).fetchone()
        found = None if row is None else _record(row)
        if found is not None and is_gone(found, now):
            conn.execute("DELETE FROM request_keys" + _KEY, key)
            found = None
        if found is None:
            values = (*key, body_hash, user_id, next_token(None), now, now, lease_until)
            conn.execute(_INSERT, (*values, expires_at))
            return KeyClaim("new", _record(conn.execute(_SELECT, key).fetchone()))
        if found.body_hash != body_hash:
            return KeyClaim("conflict", found)
        if found.status == "done":
            return KeyClaim("replay", found)
        if (found.lease_until or 0.0) > now:
            return KeyClaim("in_progress", found)
        retake = (user_id, next_token(found.token), now, lease_until, expires_at, *key)
        return KeyClaim("new", _record(conn.execute(_RETAKE, retake).fetchall()[0]))


def _held_write(conn: sqlite3.Connection, sql: str, values: tuple[Any, ...], what: str) -> Any:
    """Run a statement fenced by ``_HELD`` (its last three values are scope, key, token)."""
    scope, key, _token = values[-3:]
    where = f"{what} Idempotency-Key {key!r}"
    return fenced_write(conn, sql, values, where, scope=scope, key=key)


def _get(conn: sqlite3.Connection, key: tuple[str, str], now: float) -> RequestRecord | None:
    row = conn.execute(_SELECT, key).fetchone()
    found = None if row is None else _record(row)
    return None if found is None or is_gone(found, now) else found


def _delete(conn: sqlite3.Connection, sql: str, values: tuple[Any, ...]) -> int:
    with write_transaction(conn):
        return conn.execute(sql, values).rowcount


class SQLiteRequestKeys(RunsFile):
    """A :class:`~hermes.channels.http.request_keys.RequestKeys` on one SQLite file (WAL);
    ``path``, ``clock`` and ``busy_timeout`` as for
    :class:`~hermes.storage.sqlite.leases.RunsFile`."""

    kind = "idempotency key store"
    migrations = MIGRATIONS
    thread = "hermes-requests"

    def _maintain_connection(self, conn: sqlite3.Connection) -> None:
        super()._maintain_connection(conn)  # the checkpoint first, as the event dedupe
        now = self._clock()
        _delete(conn, _EXPIRE, (now, now))

    async def claim(
        self,
        scope: str,
        key: str,
        *,
        body_hash: str,
        user_id: str | None = None,
        lease: float = DEFAULT_LEASE_SECONDS,
        keep: float = DEFAULT_KEEP_SECONDS,
    ) -> KeyClaim:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.claim`."""
        check_request_key(scope, key)
        now = self._clock()
        return await self._run(
            "claim", _claim, (scope, key), body_hash=body_hash, user_id=user_id,
            times=(now, now + lease, now + keep),
        )  # fmt: skip

    async def finish(
        self, scope: str, key: str, token: int, *, status_code: int, body: Any
    ) -> RequestRecord:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.finish`."""
        stored = dump_json(body, "the response body")
        values = (self._clock(), status_code, stored, scope, key, token)
        return _record(await self._run("finish", _held_write, _FINISH, values, "finish"))

    async def renew(self, scope: str, key: str, token: int, *, lease: float) -> RequestRecord:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.renew`."""
        values = (self._clock() + lease, scope, key, token)
        return _record(await self._run("renew", _held_write, _RENEW, values, "renew"))

    async def release(self, scope: str, key: str, token: int) -> None:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.release`."""
        await self._run("release", _held_write, _RELEASE, (scope, key, token), "release")

    async def get(self, scope: str, key: str) -> RequestRecord | None:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.get`."""
        return await self._run("get", _get, (scope, key), self._clock())

    async def expire(self) -> int:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.expire`."""
        now = self._clock()
        return await self._run("expire", _delete, _EXPIRE, (now, now))

    async def forget_user(self, user_id: str) -> int:
        """See :meth:`hermes.channels.http.request_keys.RequestKeys.forget_user`."""
        return await self._run("forget user", _delete, _FORGET, (user_id,))
