"""The schema of the long-term memory tables and its migrations (split from ``longterm``).

The schema version lives in the ``memory_schema`` table, not in ``PRAGMA user_version`` (which
the session store owns when both share one file). A migration step is an SQL statement or a
function of the connection (run inside the step's transaction).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Final

from hermes.memory.concepts import indexed_text
from hermes.memory.keywords import index_row, rebuild_user_stats
from hermes.session.migrations import apply_migrations
from hermes.sqlite_support import write_transaction

__all__ = ["MIGRATIONS", "bump_user_version", "migrate", "write_transaction"]


_SCHEMA_V1: Final = (
    """
    CREATE TABLE memories (
        rid              INTEGER PRIMARY KEY,
        id               TEXT NOT NULL UNIQUE,
        user_id          TEXT NOT NULL,
        kind             TEXT NOT NULL,
        content          TEXT NOT NULL,
        confidence       REAL NOT NULL,
        source_session   TEXT,
        created_at       REAL NOT NULL,
        updated_at       REAL NOT NULL,
        last_recalled_at REAL,
        recall_count     INTEGER NOT NULL DEFAULT 0,
        expires_at       REAL,
        superseded_by    TEXT,
        sensitive        INTEGER NOT NULL DEFAULT 0,
        topic            TEXT,
        tags             TEXT NOT NULL DEFAULT '[]',
        terms            TEXT NOT NULL DEFAULT '',
        chars            TEXT NOT NULL DEFAULT ''
    )
    """,
    "CREATE INDEX memories_by_user ON memories (user_id, created_at)",
    # Tokens come pre-split (keywords.py) and are kept in memories.terms/chars; unicode61 only
    # splits them on spaces. Contentless: a search reads the tokens from the memories row it
    # joins anyway (a second lookup per match in FTS5's content table cost ~40% of a search).
    # detail=column: phrases are single tokens, so positions would only cost space.
    "CREATE VIRTUAL TABLE memory_fts USING fts5(owner, terms, chars, content = '', "
    "tokenize = 'unicode61 remove_diacritics 0', detail = column)",
    "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row')",
    # Rows and tokens per column of the FTS5 table (superseded by per-user counts in V3).
    "CREATE TABLE memory_stats (id INTEGER PRIMARY KEY CHECK (id = 1), rows INTEGER NOT NULL, "
    "terms INTEGER NOT NULL, chars INTEGER NOT NULL)",
    "INSERT INTO memory_stats (id, rows, terms, chars) VALUES (1, 0, 0, 0)",
    """
    CREATE TABLE memory_vectors (
        rid         INTEGER PRIMARY KEY REFERENCES memories (rid) ON DELETE CASCADE,
        model       TEXT NOT NULL,
        vector      BLOB NOT NULL,
        calibration BLOB NOT NULL
    )
    """,
    # Bumped with every write to a user's memories: the key of the cached vector matrices,
    # so a matrix built before another process's write is never used.
    "CREATE TABLE memory_users (user_id TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID",
)
# Upkeep (issue 5 §8): the tier, what the user asked to keep, why a memory is history, and the
# upkeep job's per-row bookkeeping (the statement's subject, when it was last examined).
_SCHEMA_V2: Final = (
    "ALTER TABLE memories ADD COLUMN tier TEXT NOT NULL DEFAULT 'semantic'",
    "ALTER TABLE memories ADD COLUMN demoted_at REAL",
    "ALTER TABLE memories ADD COLUMN explicit INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE memories ADD COLUMN superseded_reason TEXT",
    "ALTER TABLE memories ADD COLUMN subject TEXT",
    "ALTER TABLE memories ADD COLUMN checked_at REAL",
    "UPDATE memories SET tier = 'episodic' WHERE kind = 'event'",
    "CREATE INDEX memories_by_subject ON memories (user_id, subject) WHERE subject IS NOT NULL",
)
# Per-user keyword statistics (issue 5 §9): bm25's N, average lengths and document counts are
# each user's own, so one user's memories never change another user's recall or scores; kept
# in the transactions that change the index (counting per search would cost milliseconds at
# 100,000 memories). The exact-content index makes the duplicate check of every write cheap.
_SCHEMA_V3: Final = (
    "CREATE TABLE memory_user_stats (user_id TEXT PRIMARY KEY, rows INTEGER NOT NULL, "
    "terms INTEGER NOT NULL, chars INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE memory_user_terms (user_id TEXT NOT NULL, term TEXT NOT NULL, "
    "docs INTEGER NOT NULL, PRIMARY KEY (user_id, term)) WITHOUT ROWID",
    "DROP TABLE memory_stats",
    "CREATE INDEX memories_by_content ON memories (user_id, content) WHERE superseded_by IS NULL",
    rebuild_user_stats,
)


def _reindex_kinds(conn: sqlite3.Connection) -> None:
    """Index every memory again with the kinds it is about (``hermes.memory.concepts``), so
    memories written before recall knew kinds answer "my package", "我住哪" as new ones do.
    In batches by rid; the users' keyword statistics are counted afresh at the end. A row the
    index never held (written by hand, or by a crash of an old version) is indexed now."""
    after = 0
    while True:
        rows = conn.execute(
            "SELECT rid, user_id, content, topic, tags, terms, chars FROM memories "
            "WHERE rid > ? ORDER BY rid LIMIT 500",
            (after,),
        ).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        for rid, user_id, content, topic, tags, terms, chars in rows:
            try:
                loaded = json.loads(tags)
            except ValueError:
                loaded = []
            names = [str(t) for t in loaded] if isinstance(loaded, list) else []
            owner, new_terms, new_chars = index_row(user_id, indexed_text(content, topic, names))
            indexed = conn.execute(
                "SELECT rowid FROM memory_fts WHERE rowid = ?", (rid,)
            ).fetchone()
            if indexed is not None and (new_terms, new_chars) == (terms, chars):
                continue
            if indexed is not None:  # contentless: the exact tokens it holds say what to delete
                conn.execute(
                    "INSERT INTO memory_fts (memory_fts, rowid, owner, terms, chars) "
                    "VALUES ('delete', ?, ?, ?, ?)",
                    (rid, owner, terms, chars),
                )
            conn.execute(
                "INSERT INTO memory_fts (rowid, owner, terms, chars) VALUES (?, ?, ?, ?)",
                (rid, owner, new_terms, new_chars),
            )
            conn.execute(
                "UPDATE memories SET terms = ?, chars = ? WHERE rid = ?",
                (new_terms, new_chars, rid),
            )
    rebuild_user_stats(conn)


# What a memory is about (issue: recall that does not hinge on wording): every memory is indexed
# again with its kinds, and the user's explicit memories get an index of their own (recall
# keeps them eligible; a lookup of them is one seek whatever the user's number of memories).
_SCHEMA_V4: Final = (
    "CREATE INDEX IF NOT EXISTS memories_explicit ON memories (user_id, rid) "
    "WHERE explicit = 1 AND superseded_by IS NULL",
    _reindex_kinds,
)
MIGRATIONS: Final[tuple[tuple[str | Callable[[sqlite3.Connection], None], ...], ...]] = (
    _SCHEMA_V1,
    _SCHEMA_V2,
    _SCHEMA_V3,
    _SCHEMA_V4,
)


def bump_user_version(conn: sqlite3.Connection, user_id: str) -> None:
    """Mark ``user_id``'s memories as changed (cached vector matrices of them go stale)."""
    conn.execute(
        "INSERT INTO memory_users (user_id, version) VALUES (?, 1) "
        "ON CONFLICT (user_id) DO UPDATE SET version = version + 1",
        (user_id,),
    )


def migrate(conn: sqlite3.Connection, where: str) -> None:
    """Bring the memory tables to ``len(MIGRATIONS)``, one transaction per step (the session
    store's migration runner, with the version kept in ``memory_schema``)."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS memory_schema "
        "(id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)"
    )
    apply_migrations(
        conn,
        where,
        MIGRATIONS,
        read_version=_read_version,
        write_version=_write_version,
        what="the memory tables of {where}",
    )


def _read_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT version FROM memory_schema WHERE id = 1").fetchone()
    return 0 if row is None else int(row[0])


def _write_version(conn: sqlite3.Connection, version: int) -> None:
    conn.execute(
        "INSERT INTO memory_schema (id, version) VALUES (1, ?) "
        "ON CONFLICT (id) DO UPDATE SET version = excluded.version",
        (version,),
    )
