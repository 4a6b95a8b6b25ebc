"""Idempotency keys: a repeated call with the same key returns the stored result, never runs twice.

Durable across restarts: results live in a SQLite table (WAL, ``synchronous=NORMAL`` — a
committed result survives a crash of the process; a power cut may lose the last few). Only
successful results are stored, for the tool's ``idempotency_ttl``.

Exactly-once, also across processes sharing the file: before running, a caller *claims* the
key (a ``pending`` row, unique per tool and key, with a lease long enough for the whole call).
Another caller that meets a live claim waits for it to end and then returns the stored result
(or, if the first call failed and released its claim, runs itself). A process that dies while
holding a claim blocks the key only until the lease expires. Within one process, a per-key
asyncio lock (:class:`KeyLocks`) makes same-key callers queue instead of polling the table.

Like the session store (see ``hermes.session.sqlite_store``), each operation first tries a fast
path on the caller's thread with ``busy_timeout = 0`` — it can never wait on another process —
and falls back to one worker thread (with the real busy timeout) when the connection is in use
or another process holds the write lock. The file is opened lazily on that worker, and the
WAL checkpoints and the purge of expired rows run there too.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Hashable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from typing import Any, Literal, ParamSpec, TypeVar

from hermes.errors import StoreError
from hermes.observe import get_logger
from hermes.sqlite_support import SQLiteWorker, is_busy

__all__ = ["IdempotencyStore", "KeyLocks", "idempotency_key", "new_owner"]

P = ParamSpec("P")
T = TypeVar("T")

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


def idempotency_key(user_id: str | None, arguments_json: str) -> str:
    """The key of a call: a hash of the user and the canonical JSON of the key's arguments.

    The user is part of it: the same order id sent by two users must not hand one of them the
    other's stored result.
    """
    user = user_id or ""
    # The length prefix keeps (user, arguments) pairs apart whatever characters they hold.
    return hashlib.sha256(f"{len(user)}:{user}:{arguments_json}".encode()).hexdigest()


def new_owner() -> str:
    """A token naming one claim (the process id helps reading the table by hand)."""
    return f"{os.getpid()}-{os.urandom(6).hex()}"


class _Slot:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class KeyLocks:
    """Per-key asyncio locks that exist only while someone holds or waits for them.

    Keys are scoped by event loop, so several loops (threads) can share one instance.
    """

    __slots__ = ("_guard", "_slots")

    def __init__(self) -> None:
        self._slots: dict[tuple[int, Hashable], _Slot] = {}
        self._guard = threading.Lock()

    def __len__(self) -> int:
        return len(self._slots)

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        scoped = (id(asyncio.get_running_loop()), key)
        with self._guard:
            slot = self._slots.get(scoped)
            if slot is None:
                slot = self._slots[scoped] = _Slot()
            slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            with self._guard:
                slot.users -= 1
                if slot.users == 0:
                    del self._slots[scoped]


class IdempotencyStore(SQLiteWorker):
    """The stored results of one SQLite file. Nothing is opened until the first operation.

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
        return f"IdempotencyStore({self.path!r})"

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
