"""The upkeep job's SQL statements, run by the ``SQLiteMemoryStore.upkeep_*`` methods: every one
is scoped by user, writes in ``write_transaction`` and bumps the version of each user whose
active memories it changes (the rules are :mod:`hermes.memory.upkeep`'s)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from hermes.memory.records import MemoryRecord
from hermes.memory.upkeep_duplicates import merged_record
from hermes.storage.sqlite.memory_rows import ACTIVE_SQL, RECORD_COLUMNS, record_from_row
from hermes.storage.sqlite.memory_schema import bump_user_version
from hermes.storage.sqlite.support import write_transaction

_LAST_USE = "max(m.updated_at, coalesce(m.last_recalled_at, 0))"


def pending_records(
    conn: sqlite3.Connection, user_id: str | None, now: float, limit: int
) -> list[MemoryRecord]:
    """Active memories new or changed since the job last examined them, by user, oldest first."""
    where = "" if user_id is None else " AND m.user_id = ?"
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE {ACTIVE_SQL} "
        f"AND (m.checked_at IS NULL OR m.checked_at < m.updated_at){where} "
        "ORDER BY m.user_id, m.rid LIMIT ?",
        (now, *(() if user_id is None else (user_id,)), limit),
    )
    return [record_from_row(row) for row in rows]


def by_subject(
    conn: sqlite3.Connection, user_id: str, kind: str, subject: str, now: float
) -> list[MemoryRecord]:
    rows = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.subject = ? "
        f"AND m.kind = ? AND {ACTIVE_SQL} ORDER BY m.rid LIMIT 100",
        (user_id, subject, kind, now),
    )
    return [record_from_row(row) for row in rows]


def save_checks(
    conn: sqlite3.Connection, user_id: str, checks: Sequence[tuple[str, str | None]], now: float
) -> None:
    with write_transaction(conn):
        conn.executemany(
            "UPDATE memories SET subject = ?, checked_at = max(?, updated_at) "
            "WHERE id = ? AND user_id = ?",
            [(subject, now, memory_id, user_id) for memory_id, subject in checks],
        )


def merge_pair(
    conn: sqlite3.Connection, user_id: str, keeper_id: str, other_id: str, now: float
) -> MemoryRecord | None:
    """Fold ``other_id`` into ``keeper_id``; None when either is no longer an active memory of
    the user. Both are read inside the write transaction, so no concurrent write is lost."""
    with write_transaction(conn):
        rows = conn.execute(
            f"SELECT {RECORD_COLUMNS}, m.checked_at FROM memories m WHERE m.id IN (?, ?) "
            "AND +m.user_id = ? AND m.superseded_by IS NULL",
            (keeper_id, other_id, user_id),
        ).fetchall()
        found = {row[1]: (record_from_row(row), row[-1]) for row in rows}
        if keeper_id not in found or other_id not in found:
            return None
        (keep, checked), (other, _) = found[keeper_id], found[other_id]
        merged = merged_record(keep, other)
        # Its text did not change: a keeper examined before stays examined.
        up_to_date = checked is not None and checked >= keep.updated_at
        conn.execute(
            "UPDATE memories SET recall_count = ?, last_recalled_at = ?, updated_at = ?, "
            "confidence = ?, explicit = ?, expires_at = ?, tier = ?, demoted_at = ?, "
            "checked_at = ? WHERE id = ? AND user_id = ?",
            (merged.recall_count, merged.last_recalled_at, merged.updated_at, merged.confidence,
             int(merged.explicit), merged.expires_at, merged.tier, merged.demoted_at,
             max(now, merged.updated_at) if up_to_date else checked, keeper_id, user_id),
        )  # fmt: skip
        conn.execute(
            "UPDATE memories SET superseded_by = ?, superseded_reason = 'duplicate', "
            "expires_at = min(coalesce(expires_at, ?), ?), updated_at = ? "
            "WHERE id = ? AND user_id = ?",
            (keeper_id, now, now, now, other_id, user_id),
        )
        bump_user_version(conn, user_id)
    return merged


def stale_records(
    conn: sqlite3.Connection,
    user_id: str | None,
    tier: str,
    cutoffs: tuple[float, float | None],
    *,
    now: float,
    limit: int,
) -> list[MemoryRecord]:
    """Active, not explicit memories of ``tier`` last used before ``cutoffs[0]`` (and, when
    ``cutoffs[1]`` is set, demoted before it or never), by user, oldest first."""
    last_use, demoted_before = cutoffs
    sql = (
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.tier = ? AND m.explicit = 0 "
        f"AND {ACTIVE_SQL} AND {_LAST_USE} < ?"
    )
    params: list[Any] = [tier, now, last_use]
    if demoted_before is not None:
        sql += " AND (m.demoted_at IS NULL OR m.demoted_at < ?)"
        params.append(demoted_before)
    if user_id is not None:
        sql += " AND m.user_id = ?"
        params.append(user_id)
    rows = conn.execute(sql + " ORDER BY m.user_id, m.rid LIMIT ?", (*params, limit))
    return [record_from_row(row) for row in rows]


def demote_records(conn: sqlite3.Connection, records: Sequence[MemoryRecord], now: float) -> None:
    with write_transaction(conn):
        for record in records:
            conn.execute(
                "UPDATE memories SET tier = 'episodic', demoted_at = ? "
                "WHERE id = ? AND user_id = ? AND tier = 'semantic'",
                (now, record.id, record.user_id),
            )
        for user_id in {r.user_id for r in records}:
            bump_user_version(conn, user_id)
