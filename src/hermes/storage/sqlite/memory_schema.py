"""The schema of the long-term memory tables and its migrations (split from ``memories``).

The schema version lives in the ``memory_schema`` table, not in ``PRAGMA user_version`` (which
the session store owns when both share one file). A migration step is an SQL statement or a
function of the connection (run inside the step's transaction).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any, Final

from hermes.memory.concepts import concept_tokens, indexed_text
from hermes.memory.keywords import index_row, owner_token, token_count
from hermes.storage.sqlite.memory_fts import rebuild_user_stats
from hermes.storage.sqlite.migrations import apply_migrations

__all__ = ["MIGRATIONS", "bump_user_version", "migrate"]


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
# Upkeep (seed 001 §5.4): the tier, what the user asked to keep, why a memory is history, and the
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
# Per-user keyword statistics (isolation, seed 003 §4.4): bm25's N, average lengths and
# document counts are each user's own, so one user's memories never change another user's
# recall or scores; kept in the transactions that change the index (counting per search would
# cost milliseconds at 100,000 memories). The exact-content index makes the duplicate check of
# every write cheap.
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

    A memory's words are indexed already: only its kind tokens are added to its ``terms``
    (and to its user's statistics, which stay exact without a recount); a row whose words the
    index never held is indexed whole. The FTS5 index is emptied and filled again in batches
    by rid (bulk inserts; a contentless table deletes a row only given its exact tokens)."""
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('delete-all')")
    owners: dict[str, str] = {}
    after = 0
    while True:
        rows = conn.execute(
            "SELECT rid, user_id, content, topic, tags, terms, chars FROM memories "
            "WHERE rid > ? ORDER BY rid LIMIT 1000",
            (after,),
        ).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        indexed: list[tuple[int, str, str, str]] = []
        changed: list[tuple[str, str, int]] = []
        added: dict[str, tuple[list[str], list[str]]] = {}
        for row in rows:
            rid, user_id, terms, chars = row[0], row[1], row[5], row[6]
            new_terms, new_chars = _with_kinds(row)
            owner = owners.setdefault(user_id, owner_token(user_id))
            indexed.append((rid, owner, new_terms, new_chars))
            if (new_terms, new_chars) != (terms, chars):
                changed.append((new_terms, new_chars, rid))
                counts = added.setdefault(user_id, ([], []))
                counts[0].extend(set(new_terms.split()) - set(terms.split()))
                counts[1].extend(set(new_chars.split()) - set(chars.split()))
                _count_tokens(conn, user_id, (terms, chars), (new_terms, new_chars))
        conn.executemany(
            "INSERT INTO memory_fts (rowid, owner, terms, chars) VALUES (?, ?, ?, ?)", indexed
        )
        conn.executemany("UPDATE memories SET terms = ?, chars = ? WHERE rid = ?", changed)
        for user_id, (terms_added, chars_added) in added.items():
            conn.executemany(
                "INSERT INTO memory_user_terms (user_id, term, docs) VALUES (?, ?, 1) "
                "ON CONFLICT (user_id, term) DO UPDATE SET docs = docs + 1",
                [(user_id, token) for token in (*terms_added, *chars_added)],
            )


def _with_kinds(row: tuple[Any, ...]) -> tuple[str, str]:
    """A row's (terms, chars) with its kind tokens; the whole row when it was never indexed.
    ``row``: rid, user_id, content, topic, tags, terms, chars."""
    _, user_id, content, topic, tags, terms, chars = row
    try:
        loaded = json.loads(tags)
    except ValueError:
        loaded = []
    names = [str(t) for t in loaded] if isinstance(loaded, list) else []
    if not terms and not chars:
        _, new_terms, new_chars = index_row(user_id, indexed_text(content, topic, names, user_id))
        return new_terms, new_chars
    kinds = concept_tokens(" ".join((content, topic or "", *names)), user_id)
    if not kinds or kinds in terms:
        return terms, chars
    return (f"{terms} {kinds}" if terms else kinds), chars


def _count_tokens(
    conn: sqlite3.Connection, user_id: str, before: tuple[str, str], after: tuple[str, str]
) -> None:
    """Add the tokens a row gained to its user's token totals (rows are counted already)."""
    gained_terms = token_count(after[0]) - token_count(before[0])
    gained_chars = token_count(after[1]) - token_count(before[1])
    conn.execute(
        "UPDATE memory_user_stats SET terms = terms + ?, chars = chars + ? WHERE user_id = ?",
        (gained_terms, gained_chars, user_id),
    )


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
