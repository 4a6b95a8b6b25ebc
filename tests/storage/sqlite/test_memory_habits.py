"""The SQLite side of ``HabitStore``: the ``memory_habits`` table of ``memory.db``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes.storage.sqlite.memories import SQLiteMemoryStore


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}


async def test_the_table_is_made_on_first_use_not_by_opening(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteMemoryStore(path, embedder=None, lexicon=None)
    try:
        assert "memory_habits" not in _tables(path)
        await store.save_habits("u1", {"counts": {"a": 1}})
        assert "memory_habits" in _tables(path)
    finally:
        await store.close()


async def test_a_document_that_is_not_json_loads_as_none(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteMemoryStore(path, embedder=None, lexicon=None)
    try:
        await store.save_habits("u1", {"counts": {}})
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE memory_habits SET data = '{not json' WHERE user_id = 'u1'")
        assert await store.load_habits("u1") is None
        await store.save_habits("u1", {"counts": {"a": 2}})  # a new save repairs it
        assert await store.load_habits("u1") == {"counts": {"a": 2}}
    finally:
        await store.close()


async def test_counts_written_by_the_old_habit_table_are_read(tmp_path: Path) -> None:
    # The facade's own table (before the habit counts moved to the store) had this shape.
    path = tmp_path / "memory.db"
    SQLiteMemoryStore(path, embedder=None, lexicon=None).close_sync()
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE memory_habits (user_id TEXT PRIMARY KEY, data TEXT NOT NULL, "
            "updated_at REAL NOT NULL) WITHOUT ROWID"
        )
        conn.execute("INSERT INTO memory_habits VALUES ('u1', '{\"counts\": {\"a\": 4}}', 1.0)")
    store = SQLiteMemoryStore(path, embedder=None, lexicon=None)
    try:
        assert await store.load_habits("u1") == {"counts": {"a": 4}}
    finally:
        await store.close()
