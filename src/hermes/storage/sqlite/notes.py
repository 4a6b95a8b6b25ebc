"""The SQLite notes store (the protocol and its contract: ``hermes.tools.builtin.notes_store``):
``<workspace>/.hermes/notes.db`` (WAL), created on first use, one table ``entries``.

Every row carries its user and every query filters on it. The file tools cannot reach
``.hermes/`` (see ``hermes.tools.builtin.files``), so a model cannot read the database around
the tools' checks; a ``.hermes`` that is a symbolic link is refused (our data must live inside
the workspace).

The operations are sync (the tools run on the daemon worker threads of ``hermes.tools.threads``).
Each thread keeps its own connection per database (never shared between threads): opening one
costs ~0.3 ms and closing the last one checkpoints the WAL, which made a note cost ~2 ms; a
kept connection makes it ~0.1 ms. A database file that was replaced (another inode) is reopened.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from hermes.errors import StoreError
from hermes.storage.sqlite.support import enable_wal
from hermes.tools.builtin.notes_store import Entry, Kind, NotesStore

__all__ = ["DB_DIR", "DB_NAME", "SQLiteNotes", "workspace_notes"]

DB_DIR = ".hermes"
DB_NAME = "notes.db"
_BUSY_TIMEOUT_S = 5.0
_SCHEMA_VERSION = 1

# One table: notes and to-dos differ only by ``kind`` and the ``done`` columns. The primary key
# (user, kind, number) is also the index every query uses; WITHOUT ROWID stores rows in it.
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries (
    user_id    TEXT    NOT NULL,
    kind       TEXT    NOT NULL CHECK (kind IN ('note', 'todo')),
    number     INTEGER NOT NULL,
    text       TEXT    NOT NULL,
    done       INTEGER NOT NULL DEFAULT 0,
    created_at TEXT    NOT NULL,
    done_at    TEXT,
    PRIMARY KEY (user_id, kind, number)
) WITHOUT ROWID;
PRAGMA user_version = {_SCHEMA_VERSION};
"""

#: Connections kept per thread (one per workspace database, least recently used dropped).
_MAX_CONNECTIONS_PER_THREAD = 8
_Cache = OrderedDict[Path, tuple[sqlite3.Connection, int]]


class _ThreadConnections(threading.local):
    def __init__(self) -> None:
        self.cache: _Cache = OrderedDict()


_connections = _ThreadConnections()


def workspace_notes(workspace: Path) -> NotesStore:
    """The notes store of ``workspace``: ``<workspace>/.hermes/notes.db`` (the directory made
    when missing). ``StoreError`` when the workspace does not exist, ``.hermes`` is a symbolic
    link or cannot be made."""
    try:
        folder = Path(workspace).resolve(strict=True) / DB_DIR
        if folder.is_symlink():  # our data must live inside the workspace
            raise StoreError(f"{DB_DIR} must not be a symbolic link", action="open")
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise StoreError(f"notes database unavailable: {exc.strerror}", action="open") from None
    return SQLiteNotes(folder / DB_NAME)


class SQLiteNotes:
    """The notes of one SQLite file (connections: per thread, see the module docstring).
    Cheap to make: it holds only the path."""

    __slots__ = ("path",)

    def __init__(self, path: Path) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"SQLiteNotes({str(self.path)!r})"

    def add(
        self, user_id: str, kind: Kind, text: str, *, created_at: str, max_entries: int
    ) -> int | None:
        with self._database() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                count, last = db.execute(
                    "SELECT COUNT(*), COALESCE(MAX(number), 0) FROM entries "
                    "WHERE user_id = ? AND kind = ?",
                    (user_id, kind),
                ).fetchone()
                if count >= max_entries:
                    db.execute("ROLLBACK")
                    return None
                number = int(last) + 1
                db.execute(
                    "INSERT INTO entries (user_id, kind, number, text, created_at) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (user_id, kind, number, text, created_at),
                )
                db.execute("COMMIT")
            except BaseException:  # clean up, then re-raise unchanged
                if db.in_transaction:  # a failed COMMIT may already have ended it
                    db.execute("ROLLBACK")
                raise
        return number

    def entries(
        self, user_id: str, kind: Kind, *, include_done: bool, limit: int
    ) -> tuple[int, list[Entry]]:
        done_filter = "" if include_done else " AND done = 0"
        order = "DESC" if kind == "note" else "ASC"
        with self._database() as db:
            total = db.execute(
                f"SELECT COUNT(*) FROM entries WHERE user_id = ? AND kind = ?{done_filter}",
                (user_id, kind),
            ).fetchone()[0]
            rows = db.execute(
                "SELECT number, text, created_at, done, done_at FROM entries "
                f"WHERE user_id = ? AND kind = ?{done_filter} ORDER BY number {order} LIMIT ?",
                (user_id, kind, limit),
            ).fetchall()
        return int(total), [Entry(n, t, c, bool(d), a) for n, t, c, d, a in rows]

    def mark_done(self, user_id: str, number: int, *, done_at: str) -> Entry | None:
        with self._database() as db:
            db.execute(
                "UPDATE entries SET done = 1, done_at = ? "
                "WHERE user_id = ? AND kind = 'todo' AND number = ? AND done = 0",
                (done_at, user_id, number),
            )
            row = db.execute(
                "SELECT text, created_at, done_at FROM entries "
                "WHERE user_id = ? AND kind = 'todo' AND number = ?",
                (user_id, number),
            ).fetchone()
        if row is None:
            return None
        return Entry(number, row[0], row[1], True, row[2])

    @contextmanager
    def _database(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection to the file (made on first use). ``sqlite3.Error`` inside
        becomes a ``StoreError``, and the connection is dropped so the next call starts
        afresh."""
        try:
            connection = _connection(self.path)
        except OSError as exc:
            raise StoreError(f"notes database unavailable: {exc.strerror}", action="open") from None
        except sqlite3.Error as exc:
            raise _store_error(exc) from None
        try:
            yield connection
        except sqlite3.Error as exc:
            _forget(self.path)
            raise _store_error(exc) from None


def _connection(path: Path) -> sqlite3.Connection:
    cache = _connections.cache
    try:
        inode: int | None = os.stat(path).st_ino
    except FileNotFoundError:
        inode = None
    kept = cache.get(path)
    if kept is not None and kept[1] == inode:
        cache.move_to_end(path)
        return kept[0]
    _forget(path)
    # isolation_level=None: we issue BEGIN IMMEDIATE ourselves, so a count-then-insert
    # holds the write lock across both statements.
    connection = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    try:
        if connection.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:
            enable_wal(connection, _BUSY_TIMEOUT_S)
            connection.executescript(_SCHEMA)
        connection.execute("PRAGMA synchronous = NORMAL")  # durable enough under WAL
    except BaseException:  # clean up, then re-raise unchanged
        connection.close()
        raise
    cache[path] = (connection, os.stat(path).st_ino)
    while len(cache) > _MAX_CONNECTIONS_PER_THREAD:
        _, (oldest, _inode) = cache.popitem(last=False)
        oldest.close()
    return connection


def _forget(path: Path) -> None:
    kept = _connections.cache.pop(path, None)
    if kept is not None:
        with suppress(sqlite3.Error):  # closing a broken connection may fail too
            kept[0].close()


def _store_error(exc: sqlite3.Error) -> StoreError:
    return StoreError(f"notes database error: {exc}", action="write")
