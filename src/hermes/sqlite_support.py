"""What every SQLite file of Hermes needs (sessions, idempotency keys, notes): WAL mode that
survives a concurrent first open, and one definition of "the database is busy"."""

from __future__ import annotations

import sqlite3
import time


def is_busy(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` means another connection holds a lock (worth waiting for)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc)


def enable_wal(conn: sqlite3.Connection, busy_timeout: float) -> str:
    """Switch ``conn``'s database to WAL and return the journal mode it ended in.

    Switching a brand-new file while another process does the same can fail at once with
    SQLITE_BUSY — SQLite does not call the busy handler for this pragma — so wait by hand, up to
    ``busy_timeout`` seconds. (Blocking: call it where blocking is allowed.)
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)
