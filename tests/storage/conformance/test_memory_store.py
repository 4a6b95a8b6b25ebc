"""The MemoryStore contract (``hermes.memory.store.MemoryStore``): long-term memories of many
users — validation, records, supersede, forget and erase, search (Chinese and English, keyword
and vector), the duplicate check inside the write transaction, the upkeep job's reads and
writes, persistence — and, above all, that one user's memories never reach another user through
any method. Every backend (``tests.storage.backends.MEMORY_BACKENDS``) must pass every test here,
through the protocol only; SQLite's own tables, migrations and FTS details are tested in
``tests/storage/sqlite/``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes.errors import InvalidIdError, InvalidInputError
from hermes.memory.habits import HabitStore
from hermes.memory.recall import recall
from hermes.memory.records import (
    MAX_CONTENT_CHARS,
    MemoryDraft,
    MemoryNotFoundError,
    SearchFilter,
)
from hermes.memory.store import MemoryStore
from tests.memory.conftest import WAIT, FailingEmbedder, FakeEmbedder, GatedEmbedder
from tests.storage.backends import MemoryBackend

DAY = 86_400.0
NOW = 1_750_000_000.0


@pytest.fixture
async def vector_memory_store(memory_backend: MemoryBackend) -> AsyncIterator[MemoryStore]:
    """A store of the backend with a deterministic embedder (vector search on)."""
    pytest.importorskip("numpy")
    opened = memory_backend.open(embedder=FakeEmbedder())
    yield opened
    await opened.close()


def _durable(memory_backend: MemoryBackend) -> None:
    if not memory_backend.durable:
        pytest.skip(f"{memory_backend.name} keeps nothing across a reopen")


def test_every_backend_is_a_memory_store_and_a_habit_store(memory_store: MemoryStore) -> None:
    assert isinstance(memory_store, MemoryStore)
    assert isinstance(memory_store, HabitStore)
    assert memory_store.embedder is None


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   ", "\n\t "])
async def test_empty_and_blank_memories_are_refused(memory_store: MemoryStore, content: str):
    with pytest.raises(InvalidInputError, match="empty"):
        await memory_store.add("alice", content)


async def test_a_memory_over_the_limit_is_refused_naming_the_limit(memory_store: MemoryStore):
    with pytest.raises(InvalidInputError, match=f"at most {MAX_CONTENT_CHARS}"):
        await memory_store.add("alice", "字" * (MAX_CONTENT_CHARS + 1))
    assert await memory_store.count("alice") == 0


async def test_a_memory_at_the_limit_is_kept_and_surrounding_space_is_stripped(
    memory_store: MemoryStore,
):
    record = await memory_store.add("alice", "  " + "a" * MAX_CONTENT_CHARS + "  ")
    assert record.content == "a" * MAX_CONTENT_CHARS


@pytest.mark.parametrize(
    ("field", "value"),
    [("kind", "opinion"), ("confidence", 1.5), ("confidence", -0.1), ("confidence", float("nan")),
     ("confidence", True), ("tags", "not-a-list"), ("tags", [""]), ("expires_at", float("inf"))],
)  # fmt: skip
async def test_bad_fields_are_refused(memory_store: MemoryStore, field: str, value: Any):
    with pytest.raises(InvalidInputError):
        await memory_store.add("alice", "likes tea", **{field: value})


@pytest.mark.parametrize("user_id", ["", "a b", "../etc", "x" * 129, "用户", "-lead"])
async def test_malformed_user_ids_are_refused_by_every_method(
    memory_store: MemoryStore, user_id: str
):
    with pytest.raises(InvalidIdError):
        await memory_store.add(user_id, "likes tea")
    store = memory_store
    for call in (
        store.list(user_id), store.search(user_id, "tea"), store.export(user_id),
        store.delete_all(user_id), store.get(user_id, "m-1"), store.forget(user_id, "m-1"),
        store.mark_recalled(user_id, ["m-1"]), store.count(user_id),
        store.find_exact(user_id, "tea"), store.add_unique(user_id, [MemoryDraft("tea")]),
        store.update(user_id, "m-1", content="x"), store.supersede(user_id, "m-1", "m-2"),
    ):  # fmt: skip
        with pytest.raises(InvalidIdError):
            await call


async def test_a_malformed_source_session_is_refused(memory_store: MemoryStore):
    with pytest.raises(InvalidIdError):
        await memory_store.add("alice", "likes tea", source_session="short")


async def test_add_many_stores_all_or_nothing(memory_store: MemoryStore):
    drafts = [MemoryDraft("likes tea"), MemoryDraft("   ")]
    with pytest.raises(InvalidInputError):
        await memory_store.add_many("alice", drafts)
    assert await memory_store.count("alice") == 0


# -- records ---------------------------------------------------------------------------------


async def test_an_added_memory_comes_back_with_every_field(memory_store: MemoryStore):
    added = await memory_store.add(
        "alice", "Prefers window seats", kind="preference", confidence=0.9,
        source_session="session-0001", topic="travel 旅行", tags=["flights"], now=NOW,
    )  # fmt: skip
    got = await memory_store.get("alice", added.id)
    assert got == added
    assert (got.kind, got.confidence, got.source_session) == ("preference", 0.9, "session-0001")
    assert (got.created_at, got.updated_at, got.recall_count) == (NOW, NOW, 0)
    assert (got.topic, got.tags, got.sensitive) == ("travel 旅行", ("flights",), False)
    assert got.last_recalled_at is None
    assert got.expires_at is None
    assert got.superseded_by is None


async def test_list_is_newest_first_and_filters_by_kind(memory_store: MemoryStore):
    first = await memory_store.add("alice", "likes tea", kind="preference", now=NOW)
    second = await memory_store.add("alice", "lives in Berlin", kind="fact", now=NOW + 1)
    assert [r.id for r in await memory_store.list("alice")] == [second.id, first.id]
    assert [r.id for r in await memory_store.list("alice", kind="fact")] == [second.id]
    assert [r.id for r in await memory_store.list("alice", limit=1, offset=1)] == [first.id]


async def test_update_changes_fields_and_what_search_finds(memory_store: MemoryStore):
    record = await memory_store.add("alice", "likes green tea", now=NOW)
    updated = await memory_store.update(
        "alice", record.id, content="likes black coffee", kind="preference", now=NOW + 5
    )
    assert (updated.content, updated.kind, updated.updated_at) == (
        "likes black coffee", "preference", NOW + 5,
    )  # fmt: skip
    assert await memory_store.get("alice", record.id) == updated
    assert [h.record.id for h in await memory_store.search("alice", "coffee")] == [record.id]
    assert await memory_store.search("alice", "green tea") == []


async def test_update_with_no_change_returns_the_record_as_is(memory_store: MemoryStore):
    record = await memory_store.add("alice", "likes tea", now=NOW)
    assert await memory_store.update("alice", record.id) == record


async def test_updating_an_unknown_memory_raises_not_found(memory_store: MemoryStore):
    with pytest.raises(MemoryNotFoundError):
        await memory_store.update("alice", "m-0000000000000000", content="x")


async def test_supersede_keeps_the_old_memory_as_expired_history(memory_store: MemoryStore):
    old = await memory_store.add("alice", "prefers tea in the morning", kind="preference", now=NOW)
    new = await memory_store.add("alice", "now prefers coffee in the morning", kind="preference")
    marked = await memory_store.supersede("alice", old.id, new.id, now=NOW + 10)
    assert (marked.superseded_by, marked.expires_at) == (new.id, NOW + 10)
    assert await memory_store.get("alice", old.id) == marked
    found = [h.record.id for h in await memory_store.search("alice", "morning")]
    assert found == [new.id]
    everything = await memory_store.search(
        "alice", "morning", where=SearchFilter(include_inactive=True)
    )
    assert {h.record.id for h in everything} == {old.id, new.id}


async def test_supersede_refuses_itself_and_memories_already_replaced(memory_store: MemoryStore):
    a = await memory_store.add("alice", "likes tea")
    b = await memory_store.add("alice", "likes coffee")
    c = await memory_store.add("alice", "likes water")
    with pytest.raises(InvalidInputError):
        await memory_store.supersede("alice", a.id, a.id)
    await memory_store.supersede("alice", a.id, b.id)
    with pytest.raises(MemoryNotFoundError):
        await memory_store.supersede("alice", a.id, c.id)  # a is already replaced
    with pytest.raises(MemoryNotFoundError):
        await memory_store.supersede("alice", c.id, a.id)  # nor can it replace another


async def test_forget_and_delete_all(memory_store: MemoryStore):
    a = await memory_store.add("alice", "likes tea")
    await memory_store.add("alice", "lives in Berlin")
    assert await memory_store.forget("alice", a.id) is True
    assert await memory_store.forget("alice", a.id) is False
    assert await memory_store.get("alice", a.id) is None
    assert await memory_store.search("alice", "tea") == []
    assert await memory_store.delete_all("alice") == 1
    assert await memory_store.count("alice") == 0
    assert await memory_store.search("alice", "Berlin") == []


async def test_export_is_json_safe_and_includes_replaced_memories(memory_store: MemoryStore):
    old = await memory_store.add("alice", "likes tea", now=NOW)
    new = await memory_store.add("alice", "likes coffee 咖啡", tags=["drinks"], now=NOW + 1)
    await memory_store.supersede("alice", old.id, new.id)
    exported = await memory_store.export("alice")
    assert [m["id"] for m in exported] == [old.id, new.id]
    assert json.loads(json.dumps(exported, ensure_ascii=False)) == exported
    assert exported[1]["tags"] == ["drinks"]
    assert exported[0]["superseded_by"] == new.id


async def test_mark_recalled_updates_counts_and_time(memory_store: MemoryStore):
    a = await memory_store.add("alice", "likes tea")
    assert await memory_store.mark_recalled("alice", [a.id, a.id], now=NOW) == 1
    assert await memory_store.mark_recalled("alice", [a.id], now=NOW + 1) == 1
    got = await memory_store.get("alice", a.id)
    assert got is not None
    assert (got.recall_count, got.last_recalled_at) == (2, NOW + 1)


async def test_memories_survive_reopening_the_store(memory_backend: MemoryBackend):
    _durable(memory_backend)
    first = memory_backend.open(embedder=None)
    record = await first.add("alice", "喜欢喝咖啡")
    await first.close()
    second = memory_backend.open(embedder=None)
    try:
        assert await second.get("alice", record.id) == record
        assert [h.record.id for h in await second.search("alice", "咖啡")] == [record.id]
        assert await second.count("alice") == 1
        assert await second.find_exact("alice", "喜欢喝咖啡") == record
    finally:
        await second.close()


# -- isolation -------------------------------------------------------------------------------


async def _two_users(memory_store: MemoryStore) -> tuple[str, str]:
    """alice and bob with the same memory text; returns (alice's id, bob's id)."""
    a = await memory_store.add("alice", "我的猫叫 Mochi, my cat is called Mochi", sensitive=True,
                        topic="pets 宠物 猫")  # fmt: skip
    b = await memory_store.add("bob", "我的猫叫 Mochi, my cat is called Mochi")
    return a.id, b.id


async def test_no_read_path_returns_another_users_memory(memory_store: MemoryStore):
    alice_id, bob_id = await _two_users(memory_store)
    assert await memory_store.get("bob", alice_id) is None
    assert [r.id for r in await memory_store.list("bob")] == [bob_id]
    assert [m["id"] for m in await memory_store.export("bob")] == [bob_id]
    for query in ("Mochi", "猫", "my cat", "我的猫叫什么"):
        assert [h.record.id for h in await memory_store.search("bob", query)] == [bob_id]
    assert await memory_store.count("bob") == 1


async def test_no_write_path_touches_another_users_memory(memory_store: MemoryStore):
    alice_id, bob_id = await _two_users(memory_store)
    before = await memory_store.get("alice", alice_id)
    assert await memory_store.forget("bob", alice_id) is False
    with pytest.raises(MemoryNotFoundError):
        await memory_store.update("bob", alice_id, content="hijacked")
    with pytest.raises(MemoryNotFoundError):
        await memory_store.supersede("bob", alice_id, bob_id)
    with pytest.raises(MemoryNotFoundError):
        await memory_store.supersede("bob", bob_id, alice_id)
    assert await memory_store.mark_recalled("bob", [alice_id]) == 0
    assert await memory_store.delete_all("bob") == 1
    assert await memory_store.get("alice", alice_id) == before


async def test_vector_search_never_returns_another_users_memory(vector_memory_store: MemoryStore):
    alice_id, bob_id = await _two_users(vector_memory_store)
    await vector_memory_store.forget("bob", bob_id)
    await vector_memory_store.add("bob", "lives in Madrid")
    for query in ("Mochi", "我的猫叫什么", "cat"):
        hits = await vector_memory_store.search("bob", query)
        assert all(h.record.user_id == "bob" for h in hits)
        assert alice_id not in {h.record.id for h in hits}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=60))
def test_any_query_from_another_user_finds_nothing_of_alice(
    memory_backend: MemoryBackend, query: str
):
    async def check() -> None:
        memory = memory_backend.open(embedder=None)
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


async def test_a_two_character_chinese_word_finds_its_memory(memory_store: MemoryStore):
    coffee = await memory_store.add("alice", "我每天早上喝一杯咖啡")
    await memory_store.add("alice", "我养了一只猫")
    hits = await memory_store.search("alice", "咖啡")
    assert [h.record.id for h in hits] == [coffee.id]
    assert 0.0 < hits[0].score <= 1.0
    assert hits[0].vector_score is None


async def test_better_matches_rank_first_and_scores_stay_in_range(memory_store: MemoryStore):
    best = await memory_store.add("alice", "Prefers black coffee without sugar")
    some = await memory_store.add("alice", "Drinks coffee at work")
    await memory_store.add("alice", "Lives in Berlin")
    hits = await memory_store.search("alice", "black coffee without sugar")
    assert [h.record.id for h in hits] == [best.id, some.id]
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    assert hits[0].score > hits[1].score


async def test_expired_memories_are_not_found_unless_asked(memory_store: MemoryStore):
    await memory_store.add("alice", "has a dentist appointment", expires_at=NOW - 1)
    assert await memory_store.search("alice", "dentist", now=NOW) == []
    everything = SearchFilter(include_inactive=True)
    assert len(await memory_store.search("alice", "dentist", where=everything, now=NOW)) == 1


async def test_the_recency_filter_spares_exempt_kinds(memory_store: MemoryStore):
    await memory_store.add("alice", "went to the dentist", kind="event", now=NOW - 40 * DAY)
    await memory_store.add("alice", "her dentist is Dr Li", kind="fact", now=NOW - 400 * DAY)
    where = SearchFilter(updated_since=NOW - 30 * DAY, recency_exempt=("fact",))
    hits = await memory_store.search("alice", "dentist", where=where, now=NOW)
    assert [h.record.kind for h in hits] == ["fact"]


async def test_an_old_memory_with_a_rare_word_is_found_behind_hundreds_of_newer_matches(
    memory_store: MemoryStore,
):
    old = await memory_store.add("alice", "likes oolong tea from the Wuyi mountains", now=NOW)
    await memory_store.add_many(
        "alice", [MemoryDraft(f"likes tea number {i}") for i in range(400)], now=NOW + 1
    )
    hits = await memory_store.search("alice", "Wuyi tea", limit=3)
    assert hits[0].record.id == old.id


@pytest.mark.parametrize(
    ("query", "found"),
    [('"', False), ("*", False), ("NEAR(a b)", True), (")", False), ("OR", False),
     ("-", False), ("😀", False), ('咖啡"*', True), ("", False), ("   ", False),
     ("owner : x", False)],
)  # fmt: skip
async def test_fts_syntax_in_a_query_is_harmless(
    memory_store: MemoryStore, query: str, found: bool
):
    mine = await memory_store.add("alice", '咖啡 "quoted" NEAR OR - 😀')
    await memory_store.add("bob", '咖啡 "quoted" NEAR OR - 😀')  # the same text, another user's
    hits = await memory_store.search("alice", query)
    # Syntax is text: found only through a real word of the memory (near, 咖啡), never run.
    assert [h.record.id for h in hits] == ([mine.id] if found else [])


async def test_a_non_string_query_is_refused(memory_store: MemoryStore):
    with pytest.raises(InvalidInputError):
        await memory_store.search("alice", None)  # type: ignore[arg-type]


# -- vectors ---------------------------------------------------------------------------------


async def test_a_write_invalidates_the_cached_vectors(vector_memory_store: MemoryStore):
    await vector_memory_store.add("alice", "likes green tea")
    await vector_memory_store.search("alice", "tea")
    added = await vector_memory_store.add("alice", "plays the violin")
    hits = await vector_memory_store.search("alice", "violin", mode="auto")
    assert hits[0].record.id == added.id
    assert hits[0].vector_score is not None


async def test_keyword_mode_never_embeds(vector_memory_store: MemoryStore):
    await vector_memory_store.add("alice", "likes green tea")
    (hit,) = await vector_memory_store.search("alice", "tea", mode="keyword")
    assert hit.vector_score is None


async def test_memories_written_without_an_embedder_get_vectors_later(
    memory_backend: MemoryBackend,
):
    pytest.importorskip("numpy")
    _durable(memory_backend)
    plain = memory_backend.open(embedder=None)
    record = await plain.add("alice", "plays the violin")
    await plain.close()
    embedder = FakeEmbedder()
    semantic = memory_backend.open(embedder=embedder)
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


async def test_an_embedder_failure_keeps_the_memory_and_keyword_search(
    memory_backend: MemoryBackend,
):
    pytest.importorskip("numpy")
    memory = memory_backend.open(embedder=FailingEmbedder())
    try:
        record = await memory.add("alice", "plays the violin")
        (hit,) = await memory.search("alice", "violin")
        assert hit.record.id == record.id
        assert hit.vector_score is None
    finally:
        await memory.close()


# -- duplicates and per-user statistics -------------------------------------------------------


async def test_the_store_dedupes_inside_its_write_transaction(
    memory_backend: MemoryBackend,
) -> None:
    """Two writers that both passed the pre-check (the barrier proves it) still write one
    memory: the second finds the first inside its transaction (two processes, no lock)."""
    embedder = GatedEmbedder(parties=2)
    memory_store = memory_backend.open(embedder=embedder)
    try:
        tasks = [
            asyncio.ensure_future(memory_store.add_unique("u1", [MemoryDraft("I like tea")]))
            for _ in range(2)
        ]
        assert await asyncio.to_thread(embedder.entered.wait, WAIT)
        embedder.release.set()
        results = await asyncio.gather(*tasks)
        assert embedder.calls == 2
        written = [pair for (pair,) in results]
        assert sorted(created for _, created in written) == [False, True]
        assert written[0][0].id == written[1][0].id
        assert await memory_store.count("u1") == 1
        # another user's identical text is theirs, not a duplicate
        ((other, created),) = await memory_store.add_unique("u2", [MemoryDraft("I like tea")])
        assert created
        assert other.user_id == "u2"
    finally:
        await memory_store.close()


def _write_in_a_process(backend: MemoryBackend, texts: list[str], start: Any, out: Any) -> None:
    """A child process: open the backend, wait for the other writer, write ``texts`` one by one
    with the duplicate check, put the ``created`` flags in ``out``."""

    async def write() -> list[bool]:
        store = backend.open()
        try:
            start.wait(WAIT * 6)
            flags = []
            for text in texts:
                ((_, created),) = await store.add_unique("alice", [MemoryDraft(text)])
                flags.append(created)
            return flags
        finally:
            await store.close()

    out.put(asyncio.run(write()))


async def test_two_processes_writing_the_same_texts_store_each_once(
    memory_backend: MemoryBackend,
) -> None:
    """Two workers on one store (no shared lock, no shared memory) write the same 30 texts at
    the same time: each is stored once, and exactly one of the two was told it created it."""
    _durable(memory_backend)
    await memory_backend.open().close()  # the schema exists, as on a running deployment
    spawn = multiprocessing.get_context("spawn")
    texts = [f"likes tea number {i} 喜欢第{i}种茶" for i in range(30)]
    start, out = spawn.Barrier(2), spawn.Queue()
    writers = [
        spawn.Process(target=_write_in_a_process, args=(memory_backend, texts, start, out))
        for _ in range(2)
    ]
    for writer in writers:
        writer.start()
    try:
        flags = [await asyncio.to_thread(out.get, True, WAIT * 12) for _ in writers]
    finally:
        for writer in writers:
            await asyncio.to_thread(writer.join, WAIT * 2)
            if writer.is_alive():
                writer.kill()
    assert [a + b for a, b in zip(*flags, strict=True)] == [1] * len(texts)
    store = memory_backend.open()
    try:
        assert await store.count("alice") == len(texts)
        for text in texts[:3]:
            assert await store.find_exact("alice", text) is not None
    finally:
        await store.close()


async def test_a_batch_with_a_repeated_text_writes_it_once(memory_backend: MemoryBackend) -> None:
    memory_store = memory_backend.open(embedder=FakeEmbedder())
    try:
        written = await memory_store.add_unique("u1", [MemoryDraft("a b c"), MemoryDraft("a b c ")])
        assert [created for _, created in written] == [True, False]
        assert await memory_store.count("u1") == 1
        hits = await memory_store.search("u1", "a b c")
        assert [h.record.id for h in hits] == [written[0][0].id]
    finally:
        await memory_store.close()


async def test_other_users_memories_change_neither_scores_nor_recall(
    memory_backend: MemoryBackend,
) -> None:
    memory_store = memory_backend.open(embedder=None)
    try:
        await memory_store.add("bob", "I drink green tea every morning", kind="preference")
        await memory_store.add("bob", "我每天早上喝绿茶", kind="preference")
        queries = ["what tea do I usually drink", "我平时喝什么茶", "green tea or coffee", "tea"]

        async def observe() -> list[tuple[list[float], int]]:
            seen = []
            for q in queries:
                hits = await memory_store.search("bob", q)
                recalled = await recall(memory_store, "bob", q, force=True)
                seen.append(([round(h.score, 9) for h in hits], len(recalled.hits)))
            return seen

        before = await observe()
        await memory_store.add_many(
            "alice", [MemoryDraft(f"tea green drink morning 茶 喝 早上 {i}") for i in range(400)]
        )
        assert await observe() == before
        await memory_store.delete_all("alice")
        assert await observe() == before
        assert before[0][1] == 2  # bob's own tea memories, in both languages (their kind: tea)
    finally:
        await memory_store.close()


async def test_a_tiny_memory_set_scores_sensibly(memory_backend: MemoryBackend) -> None:
    memory_store = memory_backend.open(embedder=None)
    try:
        await memory_store.add("u1", "I like tea")
        await memory_store.add("u1", "I like tea with lemon")
        hits = await memory_store.search("u1", "tea lemon")
        assert [h.record.content for h in hits] == ["I like tea with lemon", "I like tea"]
        assert hits[0].score > hits[1].score > 0
    finally:
        await memory_store.close()


async def test_add_unique_returns_the_existing_memory_of_the_same_text(memory_store: MemoryStore):
    first = await memory_store.add("alice", "我喜欢喝乌龙茶", kind="preference", now=NOW)
    written = await memory_store.add_unique(
        "alice", [MemoryDraft("  我喜欢喝乌龙茶 "), MemoryDraft("lives in Hangzhou")], now=NOW + 1
    )
    assert [(record.id == first.id, created) for record, created in written] == [
        (True, False),
        (False, True),
    ]
    assert await memory_store.find_exact("alice", "我喜欢喝乌龙茶") == first
    assert await memory_store.find_exact("alice", "我喜欢喝") is None  # exact, not a prefix
    assert await memory_store.find_exact("bob", "我喜欢喝乌龙茶") is None
    assert await memory_store.count("alice") == 2


async def test_a_superseded_text_may_be_written_again(memory_store: MemoryStore):
    old = await memory_store.add("alice", "likes tea", now=NOW)
    new = await memory_store.add("alice", "likes coffee", now=NOW + 1)
    await memory_store.supersede("alice", old.id, new.id, now=NOW + 2)
    assert await memory_store.find_exact("alice", "likes tea", now=NOW + 3) is None
    ((again, created),) = await memory_store.add_unique(
        "alice", [MemoryDraft("likes tea")], now=NOW + 3
    )
    assert created
    assert again.id != old.id


# -- supersede on write (hermes.memory.supersede) -------------------------------------------


async def test_a_changed_statement_supersedes_the_old_one_when_it_is_written(
    memory_store: MemoryStore,
):
    old = await memory_store.add("alice", "用户喜欢喝美式咖啡。", kind="preference", now=NOW)
    ((new, created),) = await memory_store.add_unique(
        "alice", [MemoryDraft("我现在改喝拿铁了", kind="preference")], now=NOW + 10
    )
    assert created
    history = await memory_store.get("alice", old.id)
    assert history is not None
    assert (history.superseded_by, history.superseded_reason) == (new.id, "conflict")
    assert history.expires_at is not None
    assert history.expires_at <= NOW + 10
    assert not history.is_active(NOW + 11)
    found = await memory_store.search("alice", "喝什么 咖啡 拿铁", now=NOW + 11)
    assert old.id not in {h.record.id for h in found}
    listed = await memory_store.list("alice", include_inactive=False, now=NOW + 11)
    assert [r.id for r in listed] == [new.id]
    assert {r.id for r in await memory_store.list("alice", now=NOW + 11)} == {old.id, new.id}


async def test_settle_off_and_another_users_statement_supersede_nothing(
    memory_store: MemoryStore,
):
    mine = await memory_store.add("alice", "my city is Beijing", now=NOW)
    await memory_store.add_unique("bob", [MemoryDraft("my city is Shanghai")], now=NOW + 1)
    await memory_store.add_unique(
        "alice", [MemoryDraft("my city is Shanghai")], now=NOW + 2, settle=False
    )
    kept = await memory_store.get("alice", mine.id)
    assert kept is not None
    assert kept.superseded_by is None


# -- erasing a user --------------------------------------------------------------------------


async def test_delete_all_erases_one_user_and_keeps_the_others(memory_store: MemoryStore):
    await memory_store.add_many(
        "alice", [MemoryDraft("likes tea"), MemoryDraft("我住在杭州")], now=NOW
    )
    bob = await memory_store.add("bob", "likes tea", now=NOW)
    await memory_store.save_habits("alice", {"counts": {"a": 1}})
    assert await memory_store.delete_all("alice") == 2
    assert await memory_store.delete_all("alice") == 0
    assert await memory_store.list("alice") == []
    assert await memory_store.export("alice") == []
    assert await memory_store.search("alice", "杭州") == []
    assert await memory_store.delete_habits("alice") == 1  # habits go by their own call
    assert [r.id for r in await memory_store.list("bob")] == [bob.id]


async def test_export_masks_personal_data_of_sensitive_memories(memory_store: MemoryStore):
    await memory_store.add("alice", "我的手机号是13812345678", sensitive=True, topic="phone 手机")
    (masked,) = await memory_store.export("alice")
    assert masked["masked"] is True
    assert "13812345678" not in masked["content"]
    (shown,) = await memory_store.export("alice", reveal_personal=True)
    assert "13812345678" in shown["content"]


# -- the upkeep job's reads and writes -------------------------------------------------------


async def test_upkeep_pending_lists_unexamined_memories_until_they_are_checked(
    memory_store: MemoryStore,
):
    a = await memory_store.add("alice", "likes tea", now=NOW)
    b = await memory_store.add("alice", "my city is Beijing", now=NOW + 1)
    c = await memory_store.add("bob", "likes tea", now=NOW + 2)
    pending = await memory_store.upkeep_pending(None, NOW + 5, 10)
    assert [r.id for r in pending] == [a.id, b.id, c.id]  # by user, oldest first
    assert [r.id for r in await memory_store.upkeep_pending("bob", NOW + 5, 10)] == [c.id]
    assert len(await memory_store.upkeep_pending(None, NOW + 5, 2)) == 2
    await memory_store.upkeep_checked("alice", [(a.id, None), (b.id, "is:city")], NOW + 5)
    assert [r.id for r in await memory_store.upkeep_pending(None, NOW + 6, 10)] == [c.id]
    await memory_store.upkeep_checked("bob", [(a.id, "x")], NOW + 5)  # not bob's: no effect
    got = await memory_store.get("alice", a.id)
    assert got is not None
    assert got.subject is None
    updated = await memory_store.update("alice", a.id, confidence=0.5, now=NOW + 10)
    assert updated.id in {r.id for r in await memory_store.upkeep_pending("alice", NOW + 11, 10)}


async def test_upkeep_by_subject_finds_the_users_memories_of_that_kind_and_subject(
    memory_store: MemoryStore,
):
    a = await memory_store.add("alice", "my city is Beijing", now=NOW)
    b = await memory_store.add("alice", "I live in Beijing", kind="fact", now=NOW + 1)
    other = await memory_store.add("bob", "my city is Beijing", now=NOW)
    await memory_store.upkeep_checked("alice", [(a.id, "is:city"), (b.id, "is:city")], NOW + 2)
    await memory_store.upkeep_checked("bob", [(other.id, "is:city")], NOW + 2)
    found = await memory_store.upkeep_by_subject("alice", "fact", "is:city", NOW + 3)
    assert [r.id for r in found] == [a.id, b.id]
    assert all(r.subject == "is:city" for r in found)
    assert await memory_store.upkeep_by_subject("alice", "preference", "is:city", NOW + 3) == []


async def test_upkeep_merge_folds_a_duplicate_into_the_keeper(memory_store: MemoryStore):
    keeper = await memory_store.add("alice", "likes green tea", now=NOW)
    other = await memory_store.add("alice", "Likes green tea!", now=NOW + 1)
    await memory_store.mark_recalled("alice", [other.id], now=NOW + 2)
    merged = await memory_store.upkeep_merge("alice", keeper.id, other.id, NOW + 3)
    assert merged is not None
    assert merged.id == keeper.id
    assert merged.recall_count == 1
    assert await memory_store.get("alice", keeper.id) == merged
    folded = await memory_store.get("alice", other.id)
    assert folded is not None
    assert (folded.superseded_by, folded.superseded_reason) == (keeper.id, "duplicate")
    # Either one no longer active, or another user's: nothing happens.
    assert await memory_store.upkeep_merge("alice", keeper.id, other.id, NOW + 4) is None
    assert await memory_store.upkeep_merge("bob", keeper.id, other.id, NOW + 4) is None


async def test_upkeep_stale_and_demote_move_unused_memories_down_a_tier(
    memory_store: MemoryStore,
):
    old = await memory_store.add("alice", "likes tea", now=NOW)
    asked = await memory_store.add("alice", "likes jazz", explicit=True, now=NOW)
    recent = await memory_store.add("alice", "likes chess", now=NOW + 50 * DAY)
    event = await memory_store.add("bob", "went to Paris", kind="event", now=NOW)
    cutoff = NOW + 10 * DAY
    stale = await memory_store.upkeep_stale(None, "semantic", (cutoff, None), now=cutoff, limit=10)
    assert [r.id for r in stale] == [old.id]  # not the explicit one, not the recent one
    assert recent.id not in {r.id for r in stale}
    assert asked.id not in {r.id for r in stale}
    await memory_store.upkeep_demote(stale, cutoff)
    demoted = await memory_store.get("alice", old.id)
    assert demoted is not None
    assert (demoted.tier, demoted.demoted_at) == ("episodic", cutoff)
    episodic = await memory_store.upkeep_stale(
        None, "episodic", (cutoff + DAY, cutoff), now=cutoff + DAY, limit=10
    )
    assert [r.id for r in episodic] == [event.id]  # demoted at the cutoff: not before it
    assert await memory_store.upkeep_stale(
        "alice", "episodic", (cutoff + DAY, None), now=cutoff + DAY, limit=10
    ) == [demoted]
    await memory_store.mark_recalled("alice", [old.id], now=cutoff + 2 * DAY)
    promoted = await memory_store.get("alice", old.id)
    assert promoted is not None
    assert promoted.tier == "semantic"  # a recall brings a demoted memory back
