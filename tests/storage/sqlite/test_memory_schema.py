"""The memory tables' schema on SQLite (``hermes.storage.sqlite.memory_schema``): a newer schema
is refused; databases of earlier versions are migrated on opening — version 1 (no tiers),
version 2 (one global statistics table), version 3 (no kind tokens: after the migration the
follow-ups that name their kind find them, with exact keyword statistics)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes.errors import StoreError
from hermes.memory.keywords import owner_token
from hermes.memory.recall import recall
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.storage.sqlite.memory_fts import rebuild_user_stats
from hermes.storage.sqlite.memory_schema import MIGRATIONS


def as_schema_3(path: Path) -> None:
    """Turn a store into what the previous version wrote: tokens without kinds, version 3."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('delete-all')")
        for rid, user_id, terms, chars in conn.execute(
            "SELECT rid, user_id, terms, chars FROM memories"
        ).fetchall():
            kinds = owner_token(user_id)[1:13]
            old = " ".join(t for t in terms.split() if not t.startswith(f"k{kinds}"))
            conn.execute("UPDATE memories SET terms = ? WHERE rid = ?", (old, rid))
            conn.execute(
                "INSERT INTO memory_fts (rowid, owner, terms, chars) VALUES (?, ?, ?, ?)",
                (rid, owner_token(user_id), old, chars),
            )
        rebuild_user_stats(conn)
        conn.execute("DROP INDEX memories_explicit")
        conn.execute("UPDATE memory_schema SET version = 3")
    conn.close()


async def test_a_store_of_the_previous_version_opens_and_finds_memories_by_kind(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    store = SQLiteMemoryStore(path, embedder=None)
    await store.add("u1", "The user's order id is ORD-58213.", explicit=True)
    await store.add("u1", "用户住在上海市浦东新区。")
    await store.add("u2", "The user's order id is ORD-11111.")
    await store.close()
    as_schema_3(path)
    opened = SQLiteMemoryStore(path, embedder=None)  # opening migrates
    await opened.close()
    conn = sqlite3.connect(path)
    (version,) = conn.execute("SELECT version FROM memory_schema").fetchone()
    stats = sorted(conn.execute("SELECT * FROM memory_user_stats").fetchall())
    terms = sorted(conn.execute("SELECT * FROM memory_user_terms").fetchall())
    with conn:
        rebuild_user_stats(conn)
    assert version == 4
    assert stats == sorted(conn.execute("SELECT * FROM memory_user_stats").fetchall())
    assert terms == sorted(conn.execute("SELECT * FROM memory_user_terms").fetchall())
    conn.close()
    async with SQLiteMemoryStore(path, embedder=None) as migrated:
        shipped = await recall(migrated, "u1", "has my package shipped yet?", force=True)
        assert [h.record.content for h in shipped.hits] == ["The user's order id is ORD-58213."]
        home = await recall(migrated, "u1", "我住哪", force=True)
        assert [h.record.content for h in home.hits] == ["用户住在上海市浦东新区。"]


async def test_a_newer_memory_schema_is_refused(tmp_path: Path):
    path = tmp_path / "memory.db"
    await SQLiteMemoryStore(path, embedder=None).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE memory_schema SET version = 99")
    with pytest.raises(StoreError, match="newer"):
        SQLiteMemoryStore(path, embedder=None)


async def test_a_version_2_database_gets_its_statistics_on_opening(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteMemoryStore(path, embedder=None)
    await store.add("u1", "I like oolong tea")
    await store.add("u2", "oolong")
    await store.close()
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TABLE memory_user_stats; DROP TABLE memory_user_terms; "
        "DROP INDEX memories_by_content; "
        "CREATE TABLE memory_stats (id INTEGER PRIMARY KEY, rows INTEGER, terms INTEGER, "
        "chars INTEGER); UPDATE memory_schema SET version = 2;"
    )
    conn.close()
    store = SQLiteMemoryStore(path, embedder=None)
    try:
        hits = await store.search("u1", "oolong")
        assert len(hits) == 1
        assert hits[0].score == 1.0
        sql = "SELECT docs FROM memory_user_terms WHERE user_id = 'u1' AND term = 'oolong'"
        row = await store.run_blocking("test", lambda c: c.execute(sql).fetchone())
        assert row == (1,)
    finally:
        await store.close()


async def test_a_version_1_database_is_migrated_with_events_episodic(tmp_path: Path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memory_schema (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
    for statement in MIGRATIONS[0]:
        conn.execute(statement)
    conn.execute("INSERT INTO memory_schema VALUES (1, 1)")
    conn.execute(
        "INSERT INTO memories (id, user_id, kind, content, confidence, created_at, updated_at) "
        "VALUES ('m-old', 'u1', 'event', 'met Anna', 1.0, 0, 0)"
    )
    conn.commit()
    conn.close()
    async with SQLiteMemoryStore(path, embedder=None) as migrated:
        record = await migrated.get("u1", "m-old")
        assert record is not None
        assert (record.tier, record.explicit, record.subject) == ("episodic", False, None)
