"""Versioned schema of the SQLite session store (``hermes.storage.sqlite.sessions``).

``MIGRATIONS[i]`` upgrades a database from version ``i`` to ``i + 1``; the version lives in
``PRAGMA user_version`` and :func:`hermes.storage.sqlite.migrations.apply_migrations` runs the
steps, one transaction each. Steps are append-only: never edit a released step, add a new one.
"""

from __future__ import annotations

from hermes.storage.sqlite.migrations import Migration

_V1: Migration = (
    """
    CREATE TABLE sessions (
        session_id       TEXT PRIMARY KEY,
        user_id          TEXT,
        title            TEXT,
        created_at       REAL NOT NULL,
        last_active      REAL NOT NULL,
        item_count       INTEGER NOT NULL DEFAULT 0,
        last_seq         INTEGER NOT NULL DEFAULT 0,
        fsm_state        TEXT NOT NULL DEFAULT 'idle',
        state_entered_at REAL NOT NULL DEFAULT 0,
        scratch          TEXT NOT NULL DEFAULT '{}',
        token_estimate   INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX sessions_by_activity ON sessions (last_active DESC)",
    "CREATE INDEX sessions_by_user_activity ON sessions (user_id, last_active DESC)",
    """
    CREATE TABLE items (
        session_id   TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
        seq          INTEGER NOT NULL,
        role         TEXT NOT NULL,
        kind         TEXT NOT NULL,
        content      TEXT NOT NULL,
        tool_call_id TEXT,
        tool_name    TEXT,
        sticky       INTEGER NOT NULL DEFAULT 0,
        trace_id     TEXT,
        meta         TEXT,
        created_at   REAL NOT NULL,
        PRIMARY KEY (session_id, seq)
    )
    """,
    # Partial indexes: each read a turn makes (start of the N-th last round, latest summary,
    # sticky items) is a seek into a small index, whatever the session's length (DESIGN §5).
    "CREATE INDEX items_round_starts ON items (session_id, seq) "
    "WHERE role = 'user' AND kind = 'text'",
    "CREATE INDEX items_summaries ON items (session_id, seq) WHERE kind = 'summary'",
    "CREATE INDEX items_sticky ON items (session_id, seq) WHERE sticky = 1",
)

# v2: every append moves sessions.last_active, and with two indexes on it each commit wrote
# two more index pages (~30% of a turn's write cost). Sessions are now listed through an
# index on the owner only (it never changes), then sorted by activity; listing all sessions
# of all users, an operator's rare query, sorts the table.
_V2: Migration = (
    "DROP INDEX sessions_by_activity",
    "DROP INDEX sessions_by_user_activity",
    "CREATE INDEX sessions_by_user ON sessions (user_id)",
)

# v3: the pending approval of a session (seed 004 §4.3): the tool call(s) waiting
# for a person's yes or no, as JSON, NULL when nothing waits. Its own column rather than a key
# of ``scratch``, so an operator can find waiting sessions with one query.
_V3: Migration = ("ALTER TABLE sessions ADD COLUMN approval TEXT",)

# v4: the fence of a session (hermes.session.locks): the highest claim token a write of a turn
# has carried. A write with a lower token (a turn whose claim was overtaken) is refused, so only
# the claimant of the session's newest turn writes to it.
_V4: Migration = ("ALTER TABLE sessions ADD COLUMN claim_token INTEGER NOT NULL DEFAULT 0",)

MIGRATIONS: tuple[Migration, ...] = (_V1, _V2, _V3, _V4)
SCHEMA_VERSION = len(MIGRATIONS)
