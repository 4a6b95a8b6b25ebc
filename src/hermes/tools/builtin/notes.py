"""Per-user notes and to-dos: ``note_add``, ``note_list``, ``todo_add``, ``todo_list``,
``todo_done``.

Stored in SQLite at ``<workspace>/.hermes/notes.db`` (WAL), created on first use. Every row
carries the ``user_id`` of the call (``ToolContext.user_id``) and every query filters on it:
one user never sees, counts or completes another's entries, and ids are numbered per user
(your notes are #1, #2, … whoever else writes), so an id reveals nothing about other users.
A call without a user is refused. The file tools cannot reach ``.hermes/`` (see files.py), so
the model cannot read the database around these checks.

The tools are sync on purpose: sqlite3 blocks, and sync tools run on the daemon worker threads
(hermes.tools.threads). Each thread keeps its own connection per database (never shared
between threads): opening one costs ~0.3 ms and closing the last one checkpoints the WAL,
which made a note cost ~2 ms; a kept connection makes it ~0.1 ms. A database file that was
replaced (another inode) is reopened.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from hermes.errors import FieldProblem, ToolArgumentError, ToolExecutionError
from hermes.sqlite_support import enable_wal
from hermes.tools.base import ToolContext
from hermes.tools.decorator import tool

__all__ = [
    "MAX_ENTRIES_PER_USER",
    "MAX_LISTED",
    "MAX_TEXT_CHARS",
    "NotesError",
    "note_add",
    "note_list",
    "todo_add",
    "todo_done",
    "todo_list",
]

MAX_TEXT_CHARS = 2000
#: Stored notes per user, and stored to-dos (open or done) per user.
MAX_ENTRIES_PER_USER = 1000
#: Entries one list call returns (newest notes; oldest open to-dos first).
MAX_LISTED = 200
DB_DIR = ".hermes"
DB_NAME = "notes.db"
_BUSY_TIMEOUT_S = 5.0
_SCHEMA_VERSION = 1

Kind = Literal["note", "todo"]

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


class NotesError(ToolExecutionError):
    """A notes operation that cannot be done; ``code`` names why (``user_required``,
    ``limit_reached``, ``not_found``, ``store_error``)."""

    def __init__(self, code: str, english: str, chinese: str) -> None:
        super().__init__(f"{english} ({chinese})")
        self.code = code


def _user(ctx: ToolContext) -> str:
    user = ctx.user_id
    if not isinstance(user, str) or not user.strip():
        raise NotesError(
            "user_required", "notes need a user id; this call has none", "笔记功能需要用户身份"
        )
    return user


def _clean_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ToolArgumentError([FieldProblem("text", "text is empty (内容为空)")])
    cleaned = text.strip()
    if len(cleaned) > MAX_TEXT_CHARS:
        raise ToolArgumentError(
            [FieldProblem("text", f"text is longer than {MAX_TEXT_CHARS} characters (内容过长)")]
        )
    if any(ord(ch) < 32 and ch not in "\n\t" for ch in cleaned):
        raise ToolArgumentError(
            [FieldProblem("text", "text contains control characters (内容包含控制字符)")]
        )
    return cleaned


#: Connections kept per thread (one per workspace database, least recently used dropped).
_MAX_CONNECTIONS_PER_THREAD = 8
_Cache = OrderedDict[Path, tuple[sqlite3.Connection, int]]


class _ThreadConnections(threading.local):
    def __init__(self) -> None:
        self.cache: _Cache = OrderedDict()


_connections = _ThreadConnections()


@contextmanager
def _database(ctx: ToolContext) -> Iterator[sqlite3.Connection]:
    """This thread's connection to the workspace's notes database (made on first use).

    ``sqlite3.Error`` inside becomes a ``store_error`` :class:`NotesError`, and the
    connection is dropped so the next call starts afresh.
    """
    try:
        folder = Path(ctx.workspace).resolve(strict=True) / DB_DIR
        if folder.is_symlink():  # our data must live inside the workspace
            raise NotesError("store_error", f"{DB_DIR} must not be a symbolic link", "存储路径无效")
        folder.mkdir(exist_ok=True)
        path = folder / DB_NAME
        connection = _connection(path)
    except OSError as exc:
        raise NotesError(
            "store_error", f"notes database unavailable: {exc.strerror}", "无法打开笔记库"
        ) from None
    except sqlite3.Error as exc:
        raise _store_error(exc) from None
    try:
        yield connection
    except sqlite3.Error as exc:
        _forget(path)
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


def _store_error(exc: sqlite3.Error) -> NotesError:
    return NotesError("store_error", f"notes database error: {exc}", "笔记库读写失败")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _add(ctx: ToolContext, kind: Kind, text: str) -> dict[str, Any]:
    user, cleaned = _user(ctx), _clean_text(text)
    label = "note" if kind == "note" else "to-do"
    with _database(ctx) as db:
        db.execute("BEGIN IMMEDIATE")
        try:
            count, last = db.execute(
                "SELECT COUNT(*), COALESCE(MAX(number), 0) FROM entries "
                "WHERE user_id = ? AND kind = ?",
                (user, kind),
            ).fetchone()
            if count >= MAX_ENTRIES_PER_USER:
                raise NotesError(
                    "limit_reached",
                    f"you already have {MAX_ENTRIES_PER_USER} {label}s, the limit",
                    f"已达到 {MAX_ENTRIES_PER_USER} 条上限",
                )
            number = last + 1
            db.execute(
                "INSERT INTO entries (user_id, kind, number, text, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (user, kind, number, cleaned, _now()),
            )
            db.execute("COMMIT")
        except BaseException:  # clean up, then re-raise unchanged
            if db.in_transaction:  # a failed COMMIT may already have ended it
                db.execute("ROLLBACK")
            raise
    return {"id": number, "text": cleaned, "summary": f"{label} #{number} saved (已保存)"}


@tool(timeout=10.0, toolset="notes", parallel_safe=False)
def note_add(text: str, *, ctx: ToolContext) -> dict[str, Any]:
    """Save a note for the current user (at most 2000 characters).

    Args:
        text: What to remember, e.g. "Wi-Fi password is on the fridge".
    """
    return _add(ctx, "note", text)


@tool(timeout=10.0, toolset="notes")
def note_list(*, ctx: ToolContext) -> dict[str, Any]:
    """List the current user's notes, newest first (at most 200)."""
    user = _user(ctx)
    with _database(ctx) as db:
        total = db.execute(
            "SELECT COUNT(*) FROM entries WHERE user_id = ? AND kind = 'note'", (user,)
        ).fetchone()[0]
        rows = db.execute(
            "SELECT number, text, created_at FROM entries WHERE user_id = ? AND kind = 'note' "
            "ORDER BY number DESC LIMIT ?",
            (user, MAX_LISTED),
        ).fetchall()
    notes = [{"id": n, "text": t, "created_at": c} for n, t, c in rows]
    summary = (
        f"{total} notes" if total <= MAX_LISTED else f"{total} notes; newest {MAX_LISTED} shown"
    )
    return {"notes": notes, "total": total, "truncated": total > len(notes), "summary": summary}


@tool(timeout=10.0, toolset="notes", parallel_safe=False)
def todo_add(text: str, *, ctx: ToolContext) -> dict[str, Any]:
    """Add a to-do item for the current user (at most 2000 characters).

    Args:
        text: The task, e.g. "renew the passport".
    """
    return _add(ctx, "todo", text)


@tool(timeout=10.0, toolset="notes")
def todo_list(include_done: bool = False, *, ctx: ToolContext) -> dict[str, Any]:
    """List the current user's to-do items, oldest first (at most 200).

    Args:
        include_done: Also list items already marked done.
    """
    user = _user(ctx)
    done_filter = "" if include_done else " AND done = 0"
    with _database(ctx) as db:
        total = db.execute(
            f"SELECT COUNT(*) FROM entries WHERE user_id = ? AND kind = 'todo'{done_filter}",
            (user,),
        ).fetchone()[0]
        rows = db.execute(
            "SELECT number, text, done, created_at, done_at FROM entries "
            f"WHERE user_id = ? AND kind = 'todo'{done_filter} ORDER BY number LIMIT ?",
            (user, MAX_LISTED),
        ).fetchall()
    todos = [
        {"id": n, "text": t, "done": bool(d), "created_at": c, "done_at": a}
        for n, t, d, c, a in rows
    ]
    what = "to-dos" if include_done else "open to-dos"
    summary = f"{total} {what}" + (f"; first {MAX_LISTED} shown" if total > MAX_LISTED else "")
    return {"todos": todos, "total": total, "truncated": total > len(todos), "summary": summary}


@tool(timeout=10.0, toolset="notes", parallel_safe=False)
def todo_done(todo_id: int, *, ctx: ToolContext) -> dict[str, Any]:
    """Mark one of the current user's to-do items as done (marking it twice is harmless).

    Args:
        todo_id: The id shown by todo_add or todo_list.
    """
    user = _user(ctx)
    with _database(ctx) as db:
        db.execute(
            "UPDATE entries SET done = 1, done_at = ? "
            "WHERE user_id = ? AND kind = 'todo' AND number = ? AND done = 0",
            (_now(), user, todo_id),
        )
        row = db.execute(
            "SELECT text, done_at FROM entries WHERE user_id = ? AND kind = 'todo' AND number = ?",
            (user, todo_id),
        ).fetchone()
    if row is None:  # the same answer whether or not another user has this number
        raise NotesError(
            "not_found", f"you have no to-do #{todo_id}", f"没有编号为 {todo_id} 的待办"
        )
    text, done_at = row
    return {
        "id": todo_id,
        "text": text,
        "done": True,
        "done_at": done_at,
        "summary": f"to-do #{todo_id} done (已完成): {text[:80]}",
    }
