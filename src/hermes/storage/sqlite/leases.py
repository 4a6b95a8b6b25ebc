"""What the SQLite backends of event dedupe, job runs and plan runs share: fencing tokens, the
clock, JSON columns, and the default place of their files.

Where their files live (``default_path``): one file per concern beside the session database —
``events.db``, ``jobs.db``, ``plans.db``, ``requests.db`` (the HTTP ``Idempotency-Key`` records)
in ``.hermes/`` by default, as ``idempotency.db`` is.
Not tables in ``hermes.db``, because SQLite has one writer per file: a webhook's dedupe claim,
a scheduler tick or a plan node's outcome would otherwise queue behind the session turns'
appends (and they behind it), and each schema would have to version itself apart from the
session schema's ``PRAGMA user_version``. Apart, each file has its own version, and each can
be deleted on its own (``events.db`` is a 72-hour window; ``jobs.db`` history; ``plans.db`` the
state a resume needs). Nothing needs a transaction across them and the sessions: a finished
plan is recorded in its session by a separate, idempotent write.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from hermes.errors import InvalidInputError, LeaseLostError, StoreError
from hermes.storage.sqlite.migrations import Migration, apply_migrations
from hermes.storage.sqlite.support import SQLiteWorker, write_transaction

#: A source of the current time in seconds since the epoch (``time.time``; a fake in tests).
Clock = Callable[[], float]

EVENTS_FILE = "events.db"
JOBS_FILE = "jobs.db"
PLANS_FILE = "plans.db"
REQUESTS_FILE = "requests.db"


def next_token(previous: int | None) -> int:
    """A fencing token above ``previous``: wall-clock nanoseconds, so a key deleted and claimed
    anew (an expired dedupe key) never hands out a token an old holder still carries."""
    return max(time.time_ns(), (previous or 0) + 1)


class Held(Protocol):
    """A claimed record with a window (an event delivery, an idempotency key)."""

    @property
    def status(self) -> str: ...

    @property
    def lease_until(self) -> float | None: ...

    @property
    def expires_at(self) -> float: ...


def is_gone(record: Held, now: float) -> bool:
    """Whether ``record`` is past its window: as if never seen, unless a live lease (a
    ``processing`` claim whose holder still renews it) holds it."""
    live = record.status == "processing" and (record.lease_until or 0.0) > now
    return record.expires_at <= now and not live


def fenced_write(
    conn: sqlite3.Connection, sql: str, values: tuple[Any, ...], what: str, **details: Any
) -> Any:
    """Run one statement fenced by its ``WHERE … token = ? AND status = 'processing'`` in a
    write transaction: its first ``RETURNING`` row (``None`` for a ``DELETE``). When no row
    matched — the claim no longer holds its key — nothing is written and ``LeaseLostError``
    says it cannot ``what`` (``"finish event 'm-1' of route 'default'"``), with ``details``."""
    with write_transaction(conn):
        cursor = conn.execute(sql, values)
        rows = cursor.fetchall()  # RETURNING rows, or none for the DELETE
        if not rows and cursor.rowcount <= 0:
            raise LeaseLostError(
                f"cannot {what}: this claim no longer holds it (finished, released, or taken "
                "over after its lease expired)",
                **details,
            )
        return rows[0] if rows else None


def dump_json(value: Any, what: str) -> str:
    """``value`` as compact JSON; ``InvalidInputError`` naming ``what`` when it is not JSON."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} is not JSON-serializable: {exc}") from exc


def load_json(text: str | None, what: str) -> Any:
    """A JSON column back (``None`` stays ``None``); ``StoreError`` for a corrupt value."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StoreError(f"corrupt {what} in the database: {exc}") from exc


def default_path(beside: str | Path, filename: str) -> str:
    """``filename`` in the directory of the database file ``beside``."""
    return str(Path(beside).with_name(filename))


class RunsFile(SQLiteWorker):
    """The file of one record of claims (event dedupe, job runs, plan runs): ``path``
    (``":memory:"``: private to this object), ``clock`` (the time source, ``time.time``),
    ``busy_timeout`` (seconds a write waits for another process's lock). Opening creates or
    migrates the schema (:attr:`migrations`) and raises ``StoreError`` for an unusable file."""

    #: The schema of the file, applied on opening; the worker thread's name.
    migrations: ClassVar[Sequence[Migration]] = ()
    thread: ClassVar[str] = "hermes-runs"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = time.time,
        busy_timeout: float = 5.0,
    ) -> None:
        raw = os.fspath(path)
        super().__init__(
            raw if raw == ":memory:" else str(Path(raw)), busy_timeout, thread_name=self.thread
        )
        self._clock = clock
        self._open_now()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r})"

    def _prepare(self, conn: sqlite3.Connection) -> None:
        apply_migrations(conn, self.path, self.migrations)
