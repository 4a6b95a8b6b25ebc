"""L2: the index of tool calls (seed 000 §2.4 and §3.5).

Every tool call becomes one row ``{session_id, user_id, tool_name, input_hash, output_hash,
timestamp, metadata}`` in a SQLite file (WAL) owned by :class:`~hermes.sqlite_support.
SQLiteWorker`, so "what did this session call", "every ``send_email`` this week" and "the
latest good result of this exact call" are index seeks, never scans (seed 000 §2.4: precise
recall by session and tool instead of fuzzy vector search).

Choices, documented once:

- **Timestamps** are epoch seconds (UTC by definition) in a ``REAL`` column — compact,
  index-friendly, unambiguous, and what the session store uses. Records expose them as
  ``timestamp`` (float) and ``at`` (an aware UTC ``datetime``); queries accept either a float
  or an aware ``datetime`` (a naive one is refused: its zone is a guess).
- **The file**: its own ``memory.db`` beside the session database (``ToolMemory.open`` puts
  it there). Not the session file itself: both stores version their schema with
  ``PRAGMA user_version``, which is one number per file; and the index's write rate (every
  tool call) should not contend with the session's locks.
- **Hashes** are sha256 over canonical JSON (``hermes.memory.hashing``); ``input_hash`` is
  the hash of the call's arguments alone — the same arguments in any key order have the same
  hash, whichever tool or version took them — ``NULL`` when the arguments have no JSON form
  (such a call is recorded, never reused); ``output_hash`` is ``NULL`` when there is no
  output (a failed call).
- ``tool_version`` (schema v2) identifies the tool that ran: the caller's fingerprint of its
  name, schemas and function (``hermes.memory.tiers.tool_fingerprint``), or ``''`` when the
  caller gave none. The reuse lookup matches it exactly, so a changed tool, or another tool
  of the same name, never answers from the old one's results — without folding the version
  into ``input_hash``, which would change what that column means. Rows recorded before v2
  have ``NULL`` (the version that produced them is unknown): they stay readable in every
  query but are never reused (``NULL`` equals nothing; the reuse index leaves them out).
- ``status`` is ``ok`` | ``error`` | ``unconfirmed``; ``reusable`` (0/1) marks the rows the
  tiers may answer a later identical call from: a fresh (not itself reused), confirmed, ok
  result of a ``cache_ttl`` tool whose output is archived in L3.
- **Debug mode** (``debug=True`` on the index or per query): every :class:`QueryResult`
  carries the SQL it ran, its parameters and SQLite's query plan — paste them into the
  ``sqlite3`` shell to see why a query returned what it did (seed 000 §4.4).

Schema changes are versioned like the session store's (``MIGRATIONS`` below, applied with
``hermes.session.migrations.apply_migrations``): append a step, never edit a released one.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal, get_args

from hermes.errors import ErrorCode, HermesError
from hermes.memory.hashing import canonical_json, is_content_hash
from hermes.session.migrations import Migration, apply_migrations
from hermes.sqlite_support import SQLiteWorker, write_transaction

__all__ = [
    "MIGRATIONS",
    "InvalidRecordError",
    "NewToolCall",
    "QueryResult",
    "ToolCallIndex",
    "ToolCallRecord",
    "ToolCallStatus",
]

ToolCallStatus = Literal["ok", "error", "unconfirmed"]
_STATUSES: frozenset[str] = frozenset(get_args(ToolCallStatus))
Order = Literal["newest", "oldest"]

#: Bounds of one query's answer and of one record's fields.
MAX_QUERY_LIMIT = 10_000
MAX_NAME_LENGTH = 256
MAX_METADATA_CHARS = 64 * 1024

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


class InvalidRecordError(HermesError):
    """A tool-call record or a query argument is malformed; the message names the field."""

    code: ErrorCode = "invalid_record"
    status = 400


@dataclass(frozen=True, slots=True)
class NewToolCall:
    """One tool call to record. ``user_id`` ``None`` (or ``""``) is an anonymous caller;
    ``tool_version`` ``""`` is a tool whose caller gave no version (see the module docstring).
    """

    session_id: str
    user_id: str | None
    tool_name: str
    input_hash: str | None
    output_hash: str | None
    status: ToolCallStatus
    timestamp: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    reusable: bool = False
    tool_version: str = ""


@dataclass(frozen=True)
class ToolCallRecord:
    """One recorded tool call (see the module docstring for the fields).

    ``metadata`` is parsed from ``metadata_json`` on first access: a query of 100 rows that
    only needs ids and hashes does not pay for 100 JSON parses. ``tool_version`` is ``None``
    for a row recorded before schema v2 (never reused).
    """

    id: int
    session_id: str
    user_id: str | None
    tool_name: str
    input_hash: str | None
    output_hash: str | None
    status: ToolCallStatus
    reusable: bool
    timestamp: float
    metadata_json: str = field(default="{}", repr=False)
    tool_version: str | None = None

    @property
    def at(self) -> datetime:
        """When the call was recorded, as an aware UTC datetime."""
        return datetime.fromtimestamp(self.timestamp, UTC)

    @cached_property
    def metadata(self) -> dict[str, Any]:
        """The call's metadata (``{"corrupt_metadata": true}`` if the stored text is not a
        JSON object — never an exception for a damaged row)."""
        try:
            value = json.loads(self.metadata_json)
        except ValueError:
            return {"corrupt_metadata": True}
        return value if isinstance(value, dict) else {"corrupt_metadata": True}


@dataclass(frozen=True, slots=True)
class QueryResult:
    """The records a query found; in debug mode also the SQL, its parameters and the plan."""

    records: list[ToolCallRecord]
    sql: str | None = None
    params: tuple[Any, ...] | None = None
    plan: tuple[str, ...] | None = None

    def __len__(self) -> int:
        return len(self.records)

    @property
    def first(self) -> ToolCallRecord | None:
        return self.records[0] if self.records else None


class ToolCallIndex(SQLiteWorker):
    """The L2 index on one SQLite file; opened (and migrated) at construction.

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
        return f"ToolCallIndex({self.path!r})"

    def _prepare(self, conn: sqlite3.Connection) -> None:
        apply_migrations(conn, self.path, MIGRATIONS)

    # -- writing -----------------------------------------------------------------------------
    async def record(self, call: NewToolCall) -> int:
        """Store one call (one commit); returns its id."""
        row = _row_of(call)
        return await self._run("record", _insert_one, row)

    async def record_many(self, calls: Sequence[NewToolCall]) -> list[int]:
        """Store several calls in one transaction (an import, a batch); returns their ids."""
        rows = [_row_of(call) for call in calls]
        if not rows:
            return []
        return await self._run("record_many", _insert_many, rows)

    async def set_status(self, record_id: int, status: ToolCallStatus, *, reusable: bool) -> bool:
        """Change a record's status and reuse flag (e.g. an unconfirmed result confirmed);
        ``False`` if there is no such record."""
        _check_status(status)
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
        cutoff = _epoch(before, "before")
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
            _check_status(status)
        if since is not None:
            terms.append("created_at >= ?")
            params.append(_epoch(since, "since"))
        if until is not None:
            terms.append("created_at < ?")
            params.append(_epoch(until, "until"))
        if order not in ("newest", "oldest"):
            raise InvalidRecordError(f"order must be 'newest' or 'oldest', not {order!r}")
        direction = "DESC" if order == "newest" else "ASC"
        where = f" WHERE {' AND '.join(terms)}" if terms else ""
        sql = (
            f"SELECT {_COLUMNS} FROM tool_calls{where} "
            f"ORDER BY created_at {direction}, id {direction} LIMIT ?"
        )
        params.append(_check_limit(limit))
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
        if not is_content_hash(input_hash):
            raise InvalidRecordError("input_hash must be 64 lowercase hex characters")
        _check_name(tool_version, "tool_version", allow_empty=True)
        if not max_age > 0:  # also refuses NaN; infinity means "any age"
            raise InvalidRecordError(f"max_age must be a positive number, got {max_age!r}")
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


# -- values in and out -----------------------------------------------------------------------


def _row_of(call: NewToolCall) -> tuple[Any, ...]:
    """The column values of a new record, checked (raises :class:`InvalidRecordError`)."""
    _check_name(call.tool_name, "tool_name", allow_empty=False)
    _check_name(call.session_id, "session_id", allow_empty=True)
    _check_name(call.tool_version, "tool_version", allow_empty=True)
    if call.user_id is not None:
        _check_name(call.user_id, "user_id", allow_empty=True)
    for name, value in (("input_hash", call.input_hash), ("output_hash", call.output_hash)):
        if value is not None and not is_content_hash(value):
            raise InvalidRecordError(f"{name} must be 64 lowercase hex characters or None")
    _check_status(call.status)
    if call.reusable and (call.status != "ok" or call.input_hash is None):
        raise InvalidRecordError("only an ok record with an input hash can be reusable")
    timestamp = _epoch(call.timestamp, "timestamp")
    if not isinstance(call.metadata, Mapping):
        raise InvalidRecordError("metadata must be a JSON object (a mapping)")
    metadata = canonical_json(dict(call.metadata))  # NotJSONSafeError names the field
    if len(metadata) > MAX_METADATA_CHARS:
        raise InvalidRecordError(
            f"metadata is {len(metadata)} characters of JSON, more than {MAX_METADATA_CHARS}"
        )
    return (
        call.session_id,
        call.user_id or "",
        call.tool_name,
        call.input_hash,
        call.output_hash,
        call.status,
        1 if call.reusable else 0,
        timestamp,
        metadata,
        call.tool_version,
    )


def _record_of(row: Any) -> ToolCallRecord:
    record_id, session, user, tool, input_hash, output_hash, status, reusable = row[:8]
    at, meta, version = row[8:]
    return ToolCallRecord(
        record_id, session, user or None, tool, input_hash, output_hash, status, bool(reusable),
        at, meta, version,
    )  # fmt: skip


def _check_name(value: object, what: str, *, allow_empty: bool) -> None:
    if not isinstance(value, str):
        raise InvalidRecordError(f"{what} must be a string, not {type(value).__name__}")
    if not value and not allow_empty:
        raise InvalidRecordError(f"{what} is empty")
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidRecordError(f"{what} is longer than {MAX_NAME_LENGTH} characters")


def _check_status(status: object) -> None:
    if status not in _STATUSES:
        raise InvalidRecordError(f"status must be one of {sorted(_STATUSES)}, not {status!r}")


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_QUERY_LIMIT:
        raise InvalidRecordError(f"limit must be an integer from 1 to {MAX_QUERY_LIMIT}")
    return limit


def _epoch(value: object, what: str) -> float:
    """Epoch seconds from a number or an aware datetime (raises :class:`InvalidRecordError`)."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidRecordError(
                f"{what} is a naive datetime; give it a time zone (e.g. UTC) — "
                "its meaning would be a guess"
            )
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRecordError(f"{what} must be epoch seconds or an aware datetime")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidRecordError(f"{what} must be a finite number of epoch seconds")
    return number
