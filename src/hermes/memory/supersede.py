"""A changed statement replaces the old one when it is written (seed 001 §5.4 "以新记忆为准，并给
旧记忆打上已过期标签"), not only after the next upkeep run.

"记住我现在改喝拿铁了" after "用户喜欢喝美式咖啡。": the next question must find 拿铁, and never
美式 again. :func:`settle_on_write` reads what each new memory states (``read_statement``: its
subject, ``likes:喝``, ``is:city`` …), stores the subject with it, and supersedes the user's
older active memories of the same kind and subject that the new one replaces (``relation``):
kept as history (``superseded_reason = "conflict"``), never recalled again. Only what the rules
read with certainty is settled here; what needs an embedder to see (two choices close in
meaning) is left to the upkeep job, which also re-examines every memory written here.

Runs on the store's connection, in one write transaction, scoped by user like every statement
of the memory package. Older memories are found through the subject index, and — for memories
written before subjects were stored — among the user's newest ones of the kind whose subject is
not known yet (bounded), whose subject is then stored too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from hermes.memory.longterm_schema import bump_user_version, write_transaction
from hermes.memory.records import ACTIVE_SQL, RECORD_COLUMNS, MemoryRecord, record_from_row
from hermes.memory.statements import Statement, read_statement, relation

__all__ = ["settle_on_write"]

#: Older memories without a subject read per new memory (the newest of its kind).
_UNREAD_LIMIT = 50
#: Older memories of the same subject compared per new memory.
_SUBJECT_LIMIT = 100


def _statement(record: MemoryRecord) -> Statement:
    return read_statement(record.content, topic=record.topic, sensitive=record.sensitive)


def _older(
    conn: sqlite3.Connection, record: MemoryRecord, subject: str, now: float
) -> list[MemoryRecord]:
    """The user's other active memories of the record's kind that may state the same subject."""
    same = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.subject = ? "
        f"AND m.kind = ? AND m.id != ? AND {ACTIVE_SQL} ORDER BY m.rid DESC LIMIT ?",
        (record.user_id, subject, record.kind, record.id, now, _SUBJECT_LIMIT),
    ).fetchall()
    unread = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.subject IS NULL "
        f"AND m.kind = ? AND m.id != ? AND {ACTIVE_SQL} ORDER BY m.rid DESC LIMIT ?",
        (record.user_id, record.kind, record.id, now, _UNREAD_LIMIT),
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
            statement = _statement(record)
            if statement.subject is None:
                continue
            conn.execute(
                "UPDATE memories SET subject = ? WHERE id = ? AND user_id = ?",
                (statement.subject, record.id, record.user_id),
            )
            for old in _older(conn, record, statement.subject, now):
                if old.id in new_ids or old.created_at > record.created_at:
                    continue  # only an older statement is replaced by a newer one
                before = _statement(old)
                if old.subject is None and before.subject is not None:
                    conn.execute(
                        "UPDATE memories SET subject = ? WHERE id = ? AND user_id = ?",
                        (before.subject, old.id, old.user_id),
                    )
                if relation(before, statement) != "replaces":
                    continue
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
