"""Superseding on write, on SQLite: the statements behind ``add_unique(..., settle=True)``; the
rules are :mod:`hermes.memory.supersede`'s.

Runs on the store's connection, in one write transaction, scoped by user like every statement
of the memory store. Older memories are found through the subject index, and — for memories
written before subjects were stored — among the user's newest ones of the kind whose subject is
not known yet (bounded).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hermes.memory.records import MemoryRecord
from hermes.memory.supersede import SUBJECT_LIMIT, UNREAD_LIMIT, settle, statement_of
from hermes.storage.sqlite.memory_rows import ACTIVE_SQL, RECORD_COLUMNS, record_from_row
from hermes.storage.sqlite.memory_schema import bump_user_version
from hermes.storage.sqlite.support import write_transaction

__all__ = ["settle_on_write"]


def _older(
    conn: sqlite3.Connection, record: MemoryRecord, subject: str, now: float
) -> list[MemoryRecord]:
    """The user's other active memories of the record's kind that may state the same subject."""
    same = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.subject = ? "
        f"AND m.kind = ? AND m.id != ? AND {ACTIVE_SQL} ORDER BY m.rid DESC LIMIT ?",
        (record.user_id, subject, record.kind, record.id, now, SUBJECT_LIMIT),
    ).fetchall()
    unread = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.subject IS NULL "
        f"AND m.kind = ? AND m.id != ? AND {ACTIVE_SQL} ORDER BY m.rid DESC LIMIT ?",
        (record.user_id, record.kind, record.id, now, UNREAD_LIMIT),
    ).fetchall()
    return [record_from_row(row) for row in (*same, *unread)]


def settle_on_write(
    conn: sqlite3.Connection, records: Sequence[MemoryRecord], now: float
) -> list[tuple[str, str]]:
    """Store each new record's subject and supersede the older memories it replaces; returns
    (old id, new id) pairs. ``records`` are memories just written (of one or more users)."""
    settled: list[tuple[str, str]] = []
    new_ids = {r.id for r in records}
    with write_transaction(conn):
        touched: set[str] = set()
        for record in records:
            statement = statement_of(record)
            if statement.subject is None:
                continue
            candidates = _older(conn, record, statement.subject, now)
            by_id = {old.id: old for old in candidates}
            outcome = settle(record, statement, candidates, new_ids)
            conn.executemany(
                "UPDATE memories SET subject = ? WHERE id = ? AND user_id = ?",
                [(subject, mid, record.user_id) for mid, subject in outcome.subjects],
            )
            for old_id in outcome.superseded:
                old = by_id[old_id]
                expires = now if old.expires_at is None else min(old.expires_at, now)
                conn.execute(
                    "UPDATE memories SET superseded_by = ?, superseded_reason = 'conflict', "
                    "expires_at = ?, updated_at = ? WHERE id = ? AND user_id = ? "
                    "AND superseded_by IS NULL",
                    (record.id, expires, now, old.id, old.user_id),
                )
                settled.append((old.id, record.id))
                touched.add(record.user_id)
        for user_id in touched:
            bump_user_version(conn, user_id)
    return settled
