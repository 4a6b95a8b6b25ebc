"""Memories written by the previous version (schema 3: no kind tokens) still open, and after the
migration answer the follow-ups that name their kind, with exact keyword statistics."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hermes.memory.keywords import owner_token
from hermes.memory.recall import recall
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.storage.sqlite.memory_fts import rebuild_user_stats


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
