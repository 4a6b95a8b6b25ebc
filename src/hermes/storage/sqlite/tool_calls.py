"""The L2 tool-call index on SQLite (the ``ToolCallIndex`` protocol of
``hermes.memory.index``, whose docstrings hold the contract and the choices of the records).

One ``memory.db`` (WAL) per ``.hermes/`` directory, owned by
:class:`~hermes.storage.sqlite.support.SQLiteWorker`. Not the session file itself: both
version their schema with ``PRAGMA user_version``, which is one number per file, and the
index's write rate (every tool call) should not contend with the session's locks. The
long-term memories (``MemoryStore``) share the file and keep their version in their own
``memory_schema`` table.

Every query shape is one walk of one index (each index ends in ``created_at``, and implicitly
the rowid), and the reuse lookup one seek in a partial index; ``debug`` returns the SQL, its
parameters and ``EXPLAIN QUERY PLAN`` — paste them into the ``sqlite3`` shell.

Schema changes are versioned (``MIGRATIONS`` below, applied with
``hermes.storage.sqlite.migrations.apply_migrations``): append a step, never edit a released
one. ``tool_version`` came in v2; rows of v1 read with ``tool_version`` ``None``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from hermes.memory.index import (
    InvalidRecordError,
    NewToolCall,
    Order,
    QueryResult,
    ToolCallRecord,
    ToolCallStatus,
    check_limit,
    check_order,
    check_reuse_lookup,
    check_status,
    epoch_seconds,
    record_values,
)
from hermes.storage.sqlite.migrations import Migration, apply_migrations
from hermes.storage.sqlite.support import SQLiteWorker, write_transaction

__all__ = ["MIGRATIONS", "SQLiteToolCallIndex"]

_V1: Migration = (
    """
    CREATE TABLE tool_calls (
        id          INTEGER PRIMARY KEY,
        session_id  TEXT NOT NULL,
        user_id     TEXT NOT NULL,
        tool_name   TEXT NOT NULL,
        input_hash  TEXT,
        output_hash TEXT,
        status      TEXT NOT NULL CHECK (status IN ('ok', 'error', 'unconfirmed')),
        reusable    INTEGER NOT NULL DEFAULT 0 CHECK (reusable IN (0, 1)),
        created_at  REAL NOT NULL,
        metadata    TEXT NOT NULL DEFAULT '{}'
    )
    """,
    # Each index ends in created_at, and (implicitly) the rowid: "newest first" within a
    # session, tool or user is a backwards walk of one index, no sort.
    "CREATE INDEX tool_calls_by_session ON tool_calls (session_id, created_at)",
    "CREATE INDEX tool_calls_by_tool ON tool_calls (tool_name, created_at)",
    # Seed 000 §2.4's own example — "the email this session sent" — is session AND tool.
    "CREATE INDEX tool_calls_by_session_tool ON tool_calls (session_id, tool_name, created_at)",
    "CREATE INDEX tool_calls_by_user ON tool_calls (user_id, created_at)",
    "CREATE INDEX tool_calls_by_time ON tool_calls (created_at)",
    # Which rows still use a blob (forgetting a user deletes only blobs nobody else uses).
    "CREATE INDEX tool_calls_by_output ON tool_calls (output_hash) WHERE output_hash IS NOT NULL",
    # The reuse lookup: one seek to the newest reusable row of (tool, user, input).
    "CREATE INDEX tool_calls_reusable ON tool_calls (tool_name, user_id, input_hash, created_at) "
    "WHERE reusable = 1",
)

# v2: the tool's version in its own column (see the module docstring); v1 had folded it into
# input_hash. Existing rows get NULL and so are never reused again — at worst one rerun of a
# cached call after the upgrade. The reuse index gains the column (still one seek to the
# newest row, see ``latest_reusable``) and leaves the NULL rows out: SQLite uses a partial
# index whose ``x IS NOT NULL`` term is implied by the query's ``x = ?``.
_V2: Migration = (
    "ALTER TABLE tool_calls ADD COLUMN tool_version TEXT",
    "DROP INDEX tool_calls_reusable",
    "CREATE INDEX tool_calls_reusable "
    "ON tool_calls (tool_name, user_id, input_hash, tool_version, created_at) "
    "WHERE reusable = 1 AND tool_version IS NOT NULL",
)

MIGRATIONS: tuple[Migration, ...] = (_V1, _V2)

_COLUMNS = (
    "id, session_id, user_id, tool_name, input_hash, output_hash, status, reusable, "
    "created_at, metadata, tool_version"
)
_INSERT = (
    "INSERT INTO tool_calls (session_id, user_id, tool_name, input_hash, output_hash, status, "
    "reusable, created_at, metadata, tool_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_REUSABLE = (
    f"SELECT {_COLUMNS} FROM tool_calls WHERE tool_name = ? AND user_id = ? AND input_hash = ? "
    "AND tool_version = ? AND reusable = 1 AND created_at >= ?"
)
_NEWEST_FIRST = " ORDER BY created_at DESC, id DESC LIMIT ?"


class SQLiteToolCallIndex(SQLiteWorker):
    """The L2 index (the ``ToolCallIndex`` protocol) on one SQLite file; opened (and
    migrated) at construction.

    Raises :class:`~hermes.errors.StoreError` if the file cannot be opened, is not a database
    or has a newer schema. ``debug`` makes every query return its SQL (see the module
    docstring). All methods are async: they run on the caller's thread when that cannot block,
    else on the index's worker thread (``SQLiteWorker``).
    """

    kind = "memory index"

    def __init__(
        self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0, debug: bool = False
    ) -> None:
        super().__init__(os.fspath(path), busy_timeout, thread_name="hermes-memory")
        self.debug = debug
        self._open_now()

    def __repr__(self) -> str:
        return f"SQLiteToolCallIndex({self.path!r})"

    def _prepare(self, conn: sqlite3.Connection) -> None:
        apply_migrations(conn, self.path, MIGRATIONS)

    # -- writing -----------------------------------------------------------------------------
    async def record(self, call: NewToolCall) -> int:
        """Store one call (one commit); returns its id."""
        row = record_values(call)
        return await self._run("record", _insert_one, row)

    async def record_many(self, calls: Sequence[NewToolCall]) -> list[int]:
        """Store several calls in one transaction (an import, a batch); returns their ids."""
        rows = [record_values(call) for call in calls]
        if not rows:
            return []
        return await self._run("record_many", _insert_many, rows)

    async def set_status(self, record_id: int, status: ToolCallStatus, *, reusable: bool) -> bool:
        """Change a record's status and reuse flag (e.g. an unconfirmed result confirmed);
        ``False`` if there is no such record."""
        check_status(status)
        return await self._run("set_status", _update_status, record_id, status, int(reusable))

    async def forget_user(self, user_id: str) -> list[str]:
        """Delete every record of ``user_id``; returns the output hashes no remaining record
        uses (their L3 blobs can go)."""
        if not isinstance(user_id, str) or not user_id:
            raise InvalidRecordError("forget_user needs a non-empty user id")
        return await self._run("forget_user", _delete_where, "user_id = ?", (user_id,))

    async def prune(self, before: float | datetime) -> list[str]:
        """Delete the records older than ``before``; returns the output hashes no remaining
        record uses."""
        cutoff = epoch_seconds(before, "before")
        return await self._run("prune", _delete_where, "created_at < ?", (cutoff,))

    async def referenced(self, digests: Sequence[str]) -> set[str]:
        """Which of ``digests`` some record names as its output hash (upkeep: blobs that no
        record names can go)."""
        wanted = list(dict.fromkeys(digests))
        if not wanted:
            return set()
        return await self._run("referenced", _referenced, wanted)

    # -- reading -----------------------------------------------------------------------------
    async def get(self, record_id: int) -> ToolCallRecord | None:
        """The record with this id, or ``None``."""
        rows = await self._run(
            "get", _fetch, f"SELECT {_COLUMNS} FROM tool_calls WHERE id = ?", (record_id,)
        )
        return _record_of(rows[0]) if rows else None

    async def query(
        self,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        tool_name: str | None = None,
        status: ToolCallStatus | None = None,
        since: float | datetime | None = None,
        until: float | datetime | None = None,
        limit: int = 100,
        order: Order = "newest",
        debug: bool | None = None,
    ) -> QueryResult:
        """Records matching every given filter, newest (or oldest) first, at most ``limit``.

        ``since`` is inclusive, ``until`` exclusive. Only fixed SQL fragments are combined;
        every value is a bound parameter.
        """
        terms: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("session_id", session_id),
            ("user_id", user_id),
            ("tool_name", tool_name),
            ("status", status),
        ):
            if value is not None:
                terms.append(f"{column} = ?")
                params.append(value)
        if status is not None:
            check_status(status)
        if since is not None:
            terms.append("created_at >= ?")
            params.append(epoch_seconds(since, "since"))
        if until is not None:
            terms.append("created_at < ?")
            params.append(epoch_seconds(until, "until"))
        check_order(order)
        direction = "DESC" if order == "newest" else "ASC"
        where = f" WHERE {' AND '.join(terms)}" if terms else ""
        sql = (
            f"SELECT {_COLUMNS} FROM tool_calls{where} "
            f"ORDER BY created_at {direction}, id {direction} LIMIT ?"
        )
        params.append(check_limit(limit))
        return await self._select("query", sql, tuple(params), debug)

    async def by_session(
        self,
        session_id: str,
        *,
        limit: int = 100,
        order: Order = "newest",
        debug: bool | None = None,
    ) -> QueryResult:
        """The calls of one session."""
        return await self.query(session_id=session_id, limit=limit, order=order, debug=debug)

    async def by_tool(
        self,
        tool_name: str,
        *,
        since: float | datetime | None = None,
        until: float | datetime | None = None,
        limit: int = 100,
        debug: bool | None = None,
    ) -> QueryResult:
        """The calls of one tool (optionally within a time range), newest first."""
        return await self.query(
            tool_name=tool_name, since=since, until=until, limit=limit, debug=debug
        )

    async def in_range(
        self,
        since: float | datetime,
        until: float | datetime,
        *,
        limit: int = 100,
        order: Order = "newest",
        debug: bool | None = None,
    ) -> QueryResult:
        """The calls recorded in ``[since, until)``."""
        return await self.query(since=since, until=until, limit=limit, order=order, debug=debug)

    async def latest_reusable(
        self,
        tool_name: str,
        input_hash: str,
        *,
        user_id: str | None,
        session_id: str | None = None,
        tool_version: str = "",
        max_age: float,
        now: float,
        debug: bool | None = None,
    ) -> QueryResult:
        """The newest reusable record of this exact call recorded at most ``max_age`` seconds
        before ``now`` — by ``user_id`` (``None``: anonymous callers), of exactly this
        ``tool_version`` (rows from before schema v2 never match), and within ``session_id``
        when given. At most one record."""
        check_reuse_lookup(input_hash, tool_version, max_age)
        sql = _SELECT_REUSABLE
        since = now - max_age
        params: tuple[Any, ...] = (tool_name, user_id or "", input_hash, tool_version, since)
        if session_id is not None:
            sql += " AND session_id = ?"
            params += (session_id,)
        return await self._select("latest_reusable", sql + _NEWEST_FIRST, (*params, 1), debug)

    async def _select(
        self, action: str, sql: str, params: tuple[Any, ...], debug: bool | None
    ) -> QueryResult:
        explain = self.debug if debug is None else debug
        if not explain:
            rows = await self._run(action, _fetch, sql, params)
            return QueryResult([_record_of(row) for row in rows])
        rows, plan = await self._run(action, _fetch_with_plan, sql, params)
        return QueryResult([_record_of(row) for row in rows], sql, params, plan)


# -- running on the connection (fast path or worker) ---------------------------------------


def _insert_one(conn: sqlite3.Connection, row: tuple[Any, ...]) -> int:
    cursor = conn.execute(_INSERT, row)
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _insert_many(conn: sqlite3.Connection, rows: list[tuple[Any, ...]]) -> list[int]:
    with write_transaction(conn):
        return [_insert_one(conn, row) for row in rows]


def _update_status(conn: sqlite3.Connection, record_id: int, status: str, reusable: int) -> bool:
    cursor = conn.execute(
        "UPDATE tool_calls SET status = ?, reusable = ? WHERE id = ?", (status, reusable, record_id)
    )
    return cursor.rowcount == 1


def _delete_where(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[str]:
    """Delete the rows matching ``where`` (a fixed fragment) and return the output hashes no
    remaining row uses — in one transaction, so a concurrent writer cannot slip between."""
    with write_transaction(conn):
        hashes = [
            row[0]
            for row in conn.execute(
                f"SELECT DISTINCT output_hash FROM tool_calls WHERE {where} "
                "AND output_hash IS NOT NULL",
                params,
            )
        ]
        conn.execute(f"DELETE FROM tool_calls WHERE {where}", params)
        return [
            digest
            for digest in hashes
            if conn.execute(
                "SELECT 1 FROM tool_calls WHERE output_hash = ? LIMIT 1", (digest,)
            ).fetchone()
            is None
        ]


def _referenced(conn: sqlite3.Connection, digests: list[str]) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(digests), 500):
        chunk = digests[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        found.update(
            str(row[0])
            for row in conn.execute(
                f"SELECT DISTINCT output_hash FROM tool_calls WHERE output_hash IN ({marks})",
                chunk,
            )
        )
    return found


def _fetch(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]) -> list[Any]:
    return conn.execute(sql, params).fetchall()


def _fetch_with_plan(
    conn: sqlite3.Connection, sql: str, params: tuple[Any, ...]
) -> tuple[list[Any], tuple[str, ...]]:
    plan = tuple(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params))
    return conn.execute(sql, params).fetchall(), plan


# -- values out -----------------------------------------------------------------------


def _record_of(row: Any) -> ToolCallRecord:
    record_id, session, user, tool, input_hash, output_hash, status, reusable = row[:8]
    at, meta, version = row[8:]
    return ToolCallRecord(
        record_id, session, user or None, tool, input_hash, output_hash, status, bool(reusable),
        at, meta, version,
    )  # fmt: skip
