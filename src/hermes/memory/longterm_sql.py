"""The long-term store's SQL: the blocking operations :class:`~hermes.memory.longterm.MemoryStore`
runs on its connection (the caller's thread on the fast path, else the worker thread).

Every statement that returns memory rows has ``user_id = ?`` in its WHERE clause (the store's
isolation rule, see :mod:`hermes.memory.longterm`); every write runs in
``write_transaction`` and bumps the user's version, which invalidates their cached vectors.
"""

from __future__ import annotations

import heapq
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from hermes.agent.compose import load_lexicon
from hermes.memory import concepts
from hermes.memory.concepts import indexed_text
from hermes.memory.crosslang import expand
from hermes.memory.keywords import (
    Bm25,
    Tokens,
    add_to_index,
    build_match,
    candidate_tokens,
    corpus_stats,
    document_counts,
    index_row,
    owner_token,
    remove_from_index,
)
from hermes.memory.lexicon import Lexicon
from hermes.memory.longterm_schema import bump_user_version, write_transaction
from hermes.memory.records import (
    ACTIVE_SQL,
    RECORD_COLUMNS,
    MemoryNotFoundError,
    MemoryRecord,
    SupersededReason,
    record_from_row,
)

#: Most matches of one keyword search that are ranked (the user's newest; see keyword_search).
_SCAN_LIMIT = 200
#: (vector, calibration) float32 blobs, one pair per memory.
Blobs = list[tuple[bytes, bytes]]


# Statements that look rows up by id or rid write ``+m.user_id`` (the unary plus keeps SQLite
# from choosing the user index for it): the owner check stays, and a user with 100,000
# memories no longer turns a lookup of 50 rows into a scan of 100,000. RECORD_COLUMNS and
# record_from_row (``hermes.memory.records``), write_transaction and bump_user_version are
# public for the memory package's own statements (upkeep, conflicts settled on write).


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """One search's fixed inputs, as the blocking SQL steps need them."""

    user_id: str
    text: str
    tokens: Tokens
    lexicon: Lexicon | Literal["auto"] | None
    clause: str
    params: tuple[Any, ...]
    limit: int


def _indexed_text(record: MemoryRecord) -> str:
    """What keyword search sees of a memory: its content, topic and tags, and the kinds they
    are about (``hermes.memory.concepts``)."""
    return indexed_text(record.content, record.topic, record.tags, record.user_id)


def not_found(memory_id: str) -> MemoryNotFoundError:
    return MemoryNotFoundError(
        f"no memory {memory_id!r} for this user / 找不到这条记忆", memory_id=memory_id
    )


_INSERT = (
    "INSERT INTO memories (id, user_id, kind, content, confidence, source_session, created_at, "
    "updated_at, recall_count, expires_at, sensitive, topic, tags, terms, chars, tier, explicit) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid"
)


def insert_records(
    conn: sqlite3.Connection,
    records: Sequence[MemoryRecord],
    vectors: Sequence[tuple[bytes, bytes] | None] | None,
    model: str | None,
    dedupe: bool = False,
) -> list[tuple[MemoryRecord, bool]]:
    """Insert ``records``; with ``dedupe``, a record whose exact content the user already has
    as an active memory is not inserted and the existing one is returned instead (checked in
    the write transaction, so two writers — tasks or processes — cannot both insert it).
    Returns ``(record, newly created)`` per record."""
    out: list[tuple[MemoryRecord, bool]] = []
    with write_transaction(conn):
        for i, r in enumerate(records):
            found = (
                _active_with_content(conn, r.user_id, r.content, r.created_at) if dedupe else None
            )
            if found is not None:
                out.append((found, False))
                continue
            fts = index_row(r.user_id, _indexed_text(r))
            (rid,) = conn.execute(
                _INSERT,
                (r.id, r.user_id, r.kind, r.content, r.confidence, r.source_session,
                 r.created_at, r.updated_at, r.expires_at, int(r.sensitive), r.topic,
                 json.dumps(list(r.tags), ensure_ascii=False), fts[1], fts[2], r.tier,
                 int(r.explicit)),
            ).fetchone()  # fmt: skip
            add_to_index(conn, rid, r.user_id, fts)
            blob = None if vectors is None else vectors[i]
            if blob is not None and model is not None:
                conn.execute(
                    "INSERT INTO memory_vectors (rid, model, vector, calibration) "
                    "VALUES (?, ?, ?, ?)",
                    (rid, model, *blob),
                )
            out.append((r, True))
        for user_id in {r.user_id for r, created in out if created}:
            bump_user_version(conn, user_id)
    return out


def _active_with_content(
    conn: sqlite3.Connection, user_id: str, content: str, now: float
) -> MemoryRecord | None:
    """The user's active (not superseded, not expired) memory with exactly ``content``."""
    row = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ? AND m.content = ? "
        f"AND {ACTIVE_SQL} "
        "ORDER BY m.created_at, m.rid LIMIT 1",
        (user_id, content, now),
    ).fetchone()
    return None if row is None else record_from_row(row)


def existing_of(
    conn: sqlite3.Connection, user_id: str, contents: Sequence[str], now: float
) -> dict[str, MemoryRecord]:
    found = {}
    for content in dict.fromkeys(contents):
        record = _active_with_content(conn, user_id, content, now)
        if record is not None:
            found[content] = record
    return found


def insert_unique(
    conn: sqlite3.Connection,
    records: Sequence[MemoryRecord],
    blobs: dict[str, tuple[bytes, bytes]],
    model: str | None,
) -> list[tuple[MemoryRecord, bool]]:
    # A record without a vector (a duplicate found before embedding, or a failed embedder)
    # is written without one; the next search embeds it.
    return insert_records(conn, records, [blobs.get(r.id) for r in records], model, True)


def _rid_of(conn: sqlite3.Connection, user_id: str, memory_id: str) -> int | None:
    row = conn.execute(
        "SELECT rid FROM memories WHERE id = ? AND user_id = ?", (memory_id, user_id)
    ).fetchone()
    return None if row is None else int(row[0])


def update_record(
    conn: sqlite3.Connection,
    record: MemoryRecord,
    content_changed: bool,
    vectors: Blobs | None,
    model: str | None,
) -> None:
    with write_transaction(conn):
        rid = _rid_of(conn, record.user_id, record.id)
        if rid is None:
            raise not_found(record.id)
        remove_from_index(conn, [rid])
        fts = index_row(record.user_id, _indexed_text(record))
        conn.execute(
            "UPDATE memories SET kind = ?, content = ?, confidence = ?, updated_at = ?, "
            "expires_at = ?, sensitive = ?, topic = ?, tags = ?, terms = ?, chars = ?, "
            "tier = ?, demoted_at = ?, subject = ? WHERE rid = ? AND user_id = ?",
            (record.kind, record.content, record.confidence, record.updated_at,
             record.expires_at, int(record.sensitive), record.topic,
             json.dumps(list(record.tags), ensure_ascii=False), fts[1], fts[2], record.tier,
             record.demoted_at, record.subject, rid, record.user_id),
        )  # fmt: skip
        add_to_index(conn, rid, record.user_id, fts)
        if content_changed:  # the old vector describes the old text: replace or drop it
            conn.execute("DELETE FROM memory_vectors WHERE rid = ?", (rid,))
            if vectors is not None and model is not None:
                conn.execute(
                    "INSERT INTO memory_vectors (rid, model, vector, calibration) "
                    "VALUES (?, ?, ?, ?)",
                    (rid, model, *vectors[0]),
                )
        bump_user_version(conn, record.user_id)


def supersede_record(
    conn: sqlite3.Connection,
    user_id: str,
    ids: tuple[str, str],
    reason: SupersededReason,
    now: float,
) -> MemoryRecord:
    old_id, new_id = ids
    with write_transaction(conn):
        rows = {
            row[1]: record_from_row(row)
            for row in conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.id IN (?, ?) AND +m.user_id = ?",
                (old_id, new_id, user_id),
            )
        }
        for memory_id in (old_id, new_id):
            found = rows.get(memory_id)
            if found is None or found.superseded_by is not None:
                raise not_found(memory_id)
        old = rows[old_id]
        expires = now if old.expires_at is None else min(old.expires_at, now)
        conn.execute(
            "UPDATE memories SET superseded_by = ?, superseded_reason = ?, expires_at = ?, "
            "updated_at = ? WHERE id = ? AND user_id = ?",
            (new_id, reason, expires, now, old_id, user_id),
        )
        bump_user_version(conn, user_id)
    return replace(
        old, superseded_by=new_id, superseded_reason=reason, expires_at=expires, updated_at=now
    )


def mark_recalled(conn: sqlite3.Connection, user_id: str, ids: list[str], now: float) -> int:
    marks = ", ".join("?" for _ in ids)
    with write_transaction(conn):
        # A recalled memory is in use again: a demoted one returns to the semantic tier.
        cursor = conn.execute(
            "UPDATE memories SET last_recalled_at = ?, recall_count = recall_count + 1, "
            "tier = CASE WHEN kind = 'event' THEN tier ELSE 'semantic' END, "
            "demoted_at = CASE WHEN kind = 'event' THEN demoted_at ELSE NULL END "
            f"WHERE id IN ({marks}) AND +user_id = ?",
            (now, *ids, user_id),
        )
        return cursor.rowcount


def delete_records(conn: sqlite3.Connection, user_id: str, memory_id: str | None) -> int:
    """Delete one memory of the user (or all of them when ``memory_id`` is None)."""
    with write_transaction(conn):
        if memory_id is None:
            rids = [r[0] for r in conn.execute(
                "SELECT rid FROM memories WHERE user_id = ?", (user_id,)
            )]  # fmt: skip
        else:
            rid = _rid_of(conn, user_id, memory_id)
            rids = [] if rid is None else [rid]
        for start in range(0, len(rids), 500):
            chunk = rids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            remove_from_index(conn, chunk)
            conn.execute(f"DELETE FROM memory_vectors WHERE rid IN ({marks})", chunk)
            conn.execute(
                f"DELETE FROM memories WHERE rid IN ({marks}) AND +user_id = ?", (*chunk, user_id)
            )
        if rids:
            bump_user_version(conn, user_id)
    return len(rids)


def get_record(conn: sqlite3.Connection, user_id: str, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.id = ? AND m.user_id = ?",
        (memory_id, user_id),
    ).fetchone()
    return None if row is None else record_from_row(row)


def list_records(
    conn: sqlite3.Connection,
    user_id: str,
    where: tuple[str, tuple[Any, ...]],
    page: tuple[int, int],
) -> list[MemoryRecord]:
    """The user's memories matching ``where`` (SQL, params), newest first; ``page`` is
    (limit, offset), limit -1 for all."""
    clause, params = where
    cursor = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m WHERE m.user_id = ?{clause} "
        "ORDER BY m.created_at DESC, m.rid DESC LIMIT ? OFFSET ?",
        (user_id, *params, *page),
    )
    return [record_from_row(row) for row in cursor]


def count_records(conn: sqlite3.Connection, user_id: str) -> int:
    row = conn.execute("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,)).fetchone()
    return int(row[0])


def keyword_search(
    conn: sqlite3.Connection, query: SearchQuery
) -> list[tuple[MemoryRecord, float, int]]:
    """``(record, keyword score, rid)`` of the user's best keyword matches, best first.

    Rows are picked by the query's rarer tokens (``keywords.candidate_tokens``) and scored with
    all of them. At most ``_SCAN_LIMIT`` matches are scored, the user's newest (FTS5 walks its
    matches newest first and stops there): the cost of a search stays bounded however many
    memories a user piles up (DESIGN principle 5); below the limit nothing is left out.
    """
    tokens = query.tokens
    if query.lexicon is not None:  # on the worker: opening the lexicon costs ~40 ms once
        lexicon = load_lexicon(wait=False) if query.lexicon == "auto" else query.lexicon
        tokens = expand(query.text, tokens, lexicon)
    tokens = concepts.expand(query.text, tokens, query.user_id)  # "my package": its kind too
    docs = document_counts(conn, query.user_id, tokens)  # the user's own statistics
    stats = corpus_stats(conn, query.user_id)
    match = build_match(owner_token(query.user_id), candidate_tokens(tokens, docs, stats.rows))
    if match is None:
        return []
    rows = conn.execute(
        "SELECT m.rid, m.terms, m.chars "
        "FROM memory_fts JOIN memories m ON m.rid = memory_fts.rowid "
        f"WHERE memory_fts MATCH ? AND m.user_id = ?{query.clause} "
        "ORDER BY memory_fts.rowid DESC LIMIT ?",
        (match, query.user_id, *query.params, _SCAN_LIMIT),
    ).fetchall()
    if not rows:
        return []
    bm25 = Bm25(stats, tokens, docs)
    scored = ((bm25.score(terms, chars), rid) for rid, terms, chars in rows)
    # A row FTS5 matched may still score 0 (FTS5 folds case; the scorer compares tokens
    # exactly): it is no hit.
    top = heapq.nlargest(query.limit, ((s, rid) for s, rid in scored if s > 0))
    records = dict(records_by_rid(conn, query, [rid for _, rid in top]))
    return [(records[rid], score, rid) for score, rid in top if rid in records]


def records_by_rid(
    conn: sqlite3.Connection, query: SearchQuery, rids: Sequence[int]
) -> list[tuple[int, MemoryRecord]]:
    marks = ", ".join("?" for _ in rids)
    cursor = conn.execute(
        f"SELECT {RECORD_COLUMNS} FROM memories m "
        f"WHERE m.rid IN ({marks}) AND +m.user_id = ?{query.clause}",
        (*rids, query.user_id, *query.params),
    )
    return [(int(row[0]), record_from_row(row)) for row in cursor]


def store_vectors(
    conn: sqlite3.Connection, user_id: str, model: str, rows: Sequence[tuple[int, bytes, bytes]]
) -> None:
    with write_transaction(conn):
        for rid, vector, calibration in rows:
            # Only if the memory is still there and still the user's (it may be gone by now).
            conn.execute(
                "INSERT OR REPLACE INTO memory_vectors (rid, model, vector, calibration) "
                "SELECT rid, ?, ?, ? FROM memories WHERE rid = ? AND user_id = ?",
                (model, vector, calibration, rid, user_id),
            )
        bump_user_version(conn, user_id)


# -- reading vectors (moved from ``hermes.memory.embed``: the embedder runs no SQL) -----------


def user_version(conn: sqlite3.Connection, user_id: str) -> int:
    """The version of a user's memories: the store bumps it with every write to them."""
    row = conn.execute("SELECT version FROM memory_users WHERE user_id = ?", (user_id,)).fetchone()
    return 0 if row is None else int(row[0])


def missing_vectors(
    conn: sqlite3.Connection, user_id: str, model: str, limit: int
) -> list[tuple[int, str]]:
    """``(rid, content)`` of the user's active memories with no vector from ``model``."""
    cursor = conn.execute(
        "SELECT m.rid, m.content FROM memories m LEFT JOIN memory_vectors v ON v.rid = m.rid "
        "WHERE m.user_id = ? AND m.superseded_by IS NULL AND (v.rid IS NULL OR v.model != ?) "
        "ORDER BY m.rid LIMIT ?",
        (user_id, model, limit),
    )
    return [(int(rid), str(content)) for rid, content in cursor]


def load_vectors(
    conn: sqlite3.Connection, user_id: str, model: str
) -> tuple[int, list[tuple[int, bytes, bytes]]]:
    """The user's version and ``(rid, vector, calibration)`` rows, read in one snapshot."""
    conn.execute("BEGIN")
    try:
        version = user_version(conn, user_id)
        rows = conn.execute(
            "SELECT v.rid, v.vector, v.calibration FROM memories m JOIN memory_vectors v "
            "ON v.rid = m.rid WHERE m.user_id = ? AND m.superseded_by IS NULL AND v.model = ? "
            "ORDER BY v.rid",
            (user_id, model),
        ).fetchall()
    finally:
        conn.execute("COMMIT")
    return version, [(int(rid), bytes(vector), bytes(cal)) for rid, vector, cal in rows]


# -- habit counts (``hermes.memory.habits.HabitStore``: one JSON document per user) ------------

_HABITS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory_habits "
    "(user_id TEXT PRIMARY KEY, data TEXT NOT NULL, updated_at REAL NOT NULL) WITHOUT ROWID"
)


def create_habits_table(conn: sqlite3.Connection) -> None:
    """The ``memory_habits`` table, created on first use (as before it was in this module:
    a ``memory.db`` that never kept habits has none)."""
    conn.execute(_HABITS_SCHEMA)


def load_habits(conn: sqlite3.Connection, user_id: str) -> str | None:
    row = conn.execute("SELECT data FROM memory_habits WHERE user_id = ?", (user_id,)).fetchone()
    return None if row is None else str(row[0])


def save_habits(conn: sqlite3.Connection, user_id: str, data: str, now: float) -> None:
    conn.execute(
        "INSERT INTO memory_habits (user_id, data, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (user_id) DO UPDATE SET data = excluded.data, "
        "updated_at = excluded.updated_at",
        (user_id, data, now),
    )


def delete_habits(conn: sqlite3.Connection, user_id: str) -> int:
    return conn.execute("DELETE FROM memory_habits WHERE user_id = ?", (user_id,)).rowcount
