"""The FTS5 keyword index of long-term memories on SQLite and each user's keyword statistics
(``memory_fts``, ``memory_user_stats``, ``memory_user_terms``): what
:mod:`hermes.memory.keywords` tokenizes, kept and counted here. The store calls the writers
inside its write transactions.

Statistics are per user (seed 003 §4.4): another user's memories never change this user's
scores or which of their memories a search finds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from hermes.memory.keywords import CorpusStats, Tokens, owner_token, token_count

__all__ = [
    "add_to_index",
    "corpus_stats",
    "document_counts",
    "rebuild_user_stats",
    "remove_from_index",
]


def document_counts(conn: sqlite3.Connection, user_id: str, tokens: Tokens) -> dict[str, int]:
    """How many of ``user_id``'s indexed memories hold each token (tokens in none are absent).

    Counted per user (``memory_user_terms``), never over the whole index: another user's
    memories must not change this user's scores or which of their memories a search finds."""
    flat = tokens.searched()
    wanted = (*flat.terms, *flat.chars)
    if not wanted:
        return {}
    marks = ", ".join("?" for _ in wanted)
    rows = conn.execute(
        f"SELECT term, docs FROM memory_user_terms WHERE user_id = ? AND term IN ({marks})",
        (user_id, *wanted),
    ).fetchall()
    return {str(term): int(doc) for term, doc in rows}


_INDEX = "INSERT INTO memory_fts (rowid, owner, terms, chars) VALUES (?, ?, ?, ?)"
_COUNT_USER = (
    "INSERT INTO memory_user_stats (user_id, rows, terms, chars) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (user_id) DO UPDATE SET rows = rows + excluded.rows, "
    "terms = terms + excluded.terms, chars = chars + excluded.chars"
)
_COUNT_TERM = (
    "INSERT INTO memory_user_terms (user_id, term, docs) VALUES (?, ?, ?) "
    "ON CONFLICT (user_id, term) DO UPDATE SET docs = docs + excluded.docs"
)


def _distinct(terms: str, chars: str) -> set[str]:
    """The tokens a row holds in either column (what a document count counts once)."""
    return set(terms.split()) | set(chars.split())


def add_to_index(
    conn: sqlite3.Connection, rid: int, user_id: str, row: tuple[str, str, str]
) -> None:
    """Index one memory of ``user_id`` (``row`` from :func:`index_row`) and count it in the
    user's keyword statistics."""
    conn.execute(_INDEX, (rid, *row))
    _, terms, chars = row
    conn.execute(_COUNT_USER, (user_id, 1, token_count(terms), token_count(chars)))
    conn.executemany(_COUNT_TERM, [(user_id, t, 1) for t in _distinct(terms, chars)])


def corpus_stats(conn: sqlite3.Connection, user_id: str) -> CorpusStats:
    """Rows and tokens of ``user_id``'s indexed memories (zeros for a user with none)."""
    row = conn.execute(
        "SELECT rows, terms, chars FROM memory_user_stats WHERE user_id = ?", (user_id,)
    ).fetchone()
    if row is None:
        return CorpusStats(0, 0, 0)
    rows, terms, chars = row
    return CorpusStats(int(rows), int(terms), int(chars))


def remove_from_index(conn: sqlite3.Connection, rids: Sequence[int]) -> None:
    """Take memories out of the FTS5 index and their owners' statistics. The table is
    contentless, so it is told the exact tokens it indexed, read back from the memories rows."""
    marks = ", ".join("?" for _ in rids)
    found = conn.execute(
        f"SELECT rid, user_id, terms, chars FROM memories WHERE rid IN ({marks})", tuple(rids)
    ).fetchall()
    conn.executemany(
        "INSERT INTO memory_fts (memory_fts, rowid, owner, terms, chars) "
        "VALUES ('delete', ?, ?, ?, ?)",
        [(rid, owner_token(user), terms, chars) for rid, user, terms, chars in found],
    )
    _uncount(conn, [(str(user), str(terms), str(chars)) for _, user, terms, chars in found])


def _tally(conn: sqlite3.Connection, rows: Iterable[tuple[str, str, str]], sign: int) -> set[str]:
    """Add (``sign`` 1) or take away (-1) the ``(user_id, terms, chars)`` rows in their users'
    keyword statistics; returns the users counted."""
    stats: dict[str, list[int]] = {}
    docs: dict[tuple[str, str], int] = {}
    for user, terms, chars in rows:
        totals = stats.setdefault(user, [0, 0, 0])
        totals[0] += sign
        totals[1] += sign * token_count(terms)
        totals[2] += sign * token_count(chars)
        for token in _distinct(terms, chars):
            docs[(user, token)] = docs.get((user, token), 0) + sign
    conn.executemany(_COUNT_USER, [(user, *totals) for user, totals in stats.items()])
    conn.executemany(_COUNT_TERM, [(user, term, n) for (user, term), n in docs.items()])
    return set(stats)


def _uncount(conn: sqlite3.Connection, rows: Sequence[tuple[str, str, str]]) -> None:
    users = _tally(conn, rows, -1)
    for user in users:  # a term no memory of the user holds any more
        conn.execute("DELETE FROM memory_user_terms WHERE user_id = ? AND docs <= 0", (user,))
    conn.executemany(
        "DELETE FROM memory_user_stats WHERE user_id = ? AND rows <= 0", [(u,) for u in users]
    )


def rebuild_user_stats(conn: sqlite3.Connection) -> None:
    """Count every user's keyword statistics afresh from the memories rows (the migration
    that introduced them; also a repair)."""
    conn.execute("DELETE FROM memory_user_stats")
    conn.execute("DELETE FROM memory_user_terms")
    _tally(conn, conn.execute("SELECT user_id, terms, chars FROM memories").fetchall(), 1)
