"""Review fixes of the memory package: no duplicate memories under concurrency (B3), forgetting
a user forgets everything (B4), per-user keyword statistics (B5), text that is not Unicode refused
(SF4), anonymous results never shared across sessions (SF6), reuse keyed by the tool's
identity (SF8)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import InvalidInputError
from hermes.memory.facade import Memory, run_scheduled_upkeep
from hermes.memory.hashing import content_hash
from hermes.memory.keywords import idf
from hermes.memory.records import validate_content
from hermes.memory.step import MemoryStep
from hermes.memory.tiers import ToolMemory, tool_fingerprint
from hermes.memory.upkeep import UpkeepPolicy, run_tool_upkeep
from hermes.models.base import ToolCall
from hermes.storage.sqlite.memories import SQLiteMemoryStore
from hermes.tools import ToolContext, ToolRegistry, tool
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import PolicyState
from tests.memory.conftest import GatedEmbedder

DAY = 86_400.0
WAIT = 5.0  # seconds a test waits for a worker thread before it fails (never reached)


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    made = Memory.open(tmp_path / "mem", semantic=False)
    try:
        yield made
    finally:
        await made.aclose()


# -- B3: one memory per content, whatever the concurrency -------------------------------------


async def test_concurrent_remember_of_one_text_writes_one_memory(tmp_path: Path) -> None:
    embedder = GatedEmbedder()
    store = SQLiteMemoryStore(tmp_path / "m.db", embedder=embedder)
    memory = Memory(store, None)
    try:
        first = asyncio.ensure_future(memory.remember("u1", "我喜欢喝乌龙茶", kind="preference"))
        second = asyncio.ensure_future(memory.remember("u1", "  我喜欢喝乌龙茶  "))
        assert await asyncio.to_thread(embedder.entered.wait, WAIT)
        await asyncio.sleep(0)  # let the second call reach the per-user lock
        embedder.release.set()
        (one, created_one), (two, created_two) = await asyncio.gather(first, second)
        assert (created_one, created_two) == (True, False)
        assert one.id == two.id
        assert embedder.calls == 1  # the second never embedded: it found the first
        assert await store.count("u1") == 1
    finally:
        await memory.aclose()


async def test_concurrent_learning_of_one_sentence_writes_one_memory(memory: Memory) -> None:
    results = await asyncio.gather(*[memory.learn("u2", "记住我的生日是5月3日") for _ in range(3)])
    assert sum(len(r) for r in results) == 1
    assert memory.store is not None
    assert len(await memory.store.list("u2")) == 1


async def test_existing_is_an_exact_match_for_emoji_and_shared_prefixes(memory: Memory) -> None:
    store = memory.store
    assert store is not None
    tea = await store.add("u1", "I like tea")
    for text in ("I like tea a lot", "I like tea with milk", "I like tea at noon", "I like tea!"):
        await store.add("u1", text)
    smile = await store.add("u1", "😀")
    assert (await memory.existing("u1", "I like tea")) == tea
    assert (await memory.existing("u1", " 😀 ")) == smile
    assert await memory.existing("u2", "😀") is None
    assert await memory.existing("u1", "I like") is None
    record, created = await memory.remember("u1", "😀")
    assert (record.id, created) == (smile.id, False)
    newer, _ = await memory.remember("u1", "I like coffee")
    await store.supersede("u1", tea.id, newer.id)
    again, created = await memory.remember("u1", "I like tea")  # history is not a duplicate
    assert created
    assert again.id != tea.id


# -- B4: forgetting a user -------------------------------------------------------------------


class Outcome:
    def __init__(self, output: Any) -> None:
        self.ok, self.output, self.summary, self.error = True, output, None, None
        self.duration_ms, self.attempts, self.cached = 1.0, 1, False


async def test_forget_user_erases_memories_tool_records_blobs_and_habits(memory: Memory) -> None:
    assert memory.store is not None
    assert memory.tools is not None
    tools = memory.tools
    await memory.remember("u1", "I like tea")
    await memory.remember("u2", "I like coffee")
    mine = tools.key("lookup", {"q": "x"}, user_id="u1", session_id="s-1")
    shared_blob = tools.key("lookup", {"q": "y"}, user_id="u1", session_id="s-1")
    theirs = tools.key("lookup", {"q": "y"}, user_id="u2", session_id="s-2")
    only_mine = await tools.record_call(mine, Outcome({"secret": "u1 only"}), reuse_ttl=600)
    await tools.record_call(shared_blob, Outcome({"same": 1}))
    kept = await tools.record_call(theirs, Outcome({"same": 1}))
    table = memory.store  # its HabitStore side keeps the habit counts
    await table.save_habits("u1", {"counts": {"a": 4}})
    await table.save_habits("u2", {"counts": {"b": 1}})

    counts = await memory.forget_user("u1")

    assert counts == {"memories": 1, "blobs": 1, "habits": 1}
    assert await memory.store.count("u1") == 0
    assert await memory.store.count("u2") == 1
    assert len((await tools.index.query(user_id="u1", limit=100)).records) == 0
    assert len((await tools.index.query(user_id="u2", limit=100)).records) == 1
    assert only_mine.output_hash is not None
    assert kept.output_hash is not None
    assert not await tools.archive.exists(only_mine.output_hash)
    assert await tools.archive.exists(kept.output_hash)  # still used by u2
    assert await tools.find_reusable(mine, ttl=600) is None  # L1 forgotten too
    assert await table.load_habits("u1") is None
    assert await table.load_habits("u2") is not None


async def test_memory_tools_are_recorded_without_their_output(memory: Memory) -> None:
    assert memory.tools is not None
    tools = memory.tools

    @tool(toolset="memory")
    def recall_memories(query: str) -> dict[str, Any]:
        """Stand-in for the real tool: returns memory text."""
        return {"memories": [f"secret about {query}"]}

    @tool
    def echo(text: str) -> dict[str, Any]:
        """An ordinary tool."""
        return {"echo": text}

    @tool
    def remember(content: str) -> dict[str, Any]:
        """Known by its name alone (default toolset)."""
        return {"content": f"secret about {content}"}

    registry = ToolRegistry([recall_memories, echo, remember])
    executor = _with_memory(registry, tools)
    ctx = CallContext(session_id="s-tools-0001", user_id="u1")
    calls = (("recall_memories", {"query": "tea"}), ("echo", {"text": "hi"}),
             ("remember", {"content": "cake"}))  # fmt: skip
    for name, arguments in calls:
        result = await executor.run(ToolCall("c1", name, arguments), ctx)
        assert result.ok
    records = {r.tool_name: r for r in (await tools.index.query(user_id="u1", limit=10)).records}
    plain = records["echo"]
    for hidden in (records["recall_memories"], records["remember"]):
        assert hidden.output_hash is not None  # the hash is recorded ...
        assert hidden.metadata["archived"] is False  # ... the output is not
        assert not await tools.archive.exists(hidden.output_hash)
    assert plain.output_hash is not None
    assert await tools.archive.exists(plain.output_hash)
    for path in (Path(str(memory.directory)) / "archive").rglob("*"):
        if path.is_file():
            assert b"secret about" not in path.read_bytes()


async def test_tool_upkeep_prunes_old_records_orphans_and_temp_files(tmp_path: Path) -> None:
    now = [time.time() - 100 * DAY]  # ends at the real time: blob ages are file times
    tools = ToolMemory.open(tmp_path / "mem", clock=lambda: now[0])
    try:
        old = await tools.record_call(
            tools.key("t", {"n": 1}, user_id="u1", session_id="s-1"), Outcome({"old": 1})
        )
        now[0] += 100 * DAY
        fresh = await tools.record_call(
            tools.key("t", {"n": 2}, user_id="u1", session_id="s-1"), Outcome({"fresh": 1})
        )
        archive = tools.archive
        orphan = await archive.put(b'{"nobody":"names me"}')
        young_orphan = await archive.put(b'{"row":"on its way"}')
        stale = now[0] - 2 * 3600
        assert old.output_hash is not None
        assert fresh.output_hash is not None
        for digest in (old.output_hash, fresh.output_hash, orphan):
            os.utime(archive.path_of(digest), (stale, stale))  # type: ignore[attr-defined]
        temp = archive.path_of(orphan).with_name(".leftover.tmp")  # type: ignore[attr-defined]
        temp.write_bytes(b"torn")
        os.utime(temp, (0, 0))

        counts = await run_tool_upkeep(tools, policy=UpkeepPolicy(), now=now[0])

        assert counts == {"blobs": 1, "temp_files": 1, "unreferenced_blobs": 1}
        left = (await tools.index.query(user_id="u1", limit=10)).records
        assert [r.output_hash for r in left] == [fresh.output_hash]
        assert not await archive.exists(old.output_hash)
        assert not await archive.exists(orphan)
        assert await archive.exists(young_orphan)  # younger than the grace period
        assert await archive.exists(fresh.output_hash)
        assert not temp.exists()
        assert await run_tool_upkeep(tools, dry_run=True, now=now[0]) == {}
    finally:
        await tools.close()


async def test_scheduled_upkeep_prunes_the_tool_tiers_too(tmp_path: Path) -> None:
    now = [time.time() - 100 * DAY]
    tools = ToolMemory.open(tmp_path / "mem", clock=lambda: now[0])
    memory = Memory(None, tools, upkeep_policy=UpkeepPolicy(tool_calls_retention_days=30))
    try:
        await tools.record_call(tools.key("t", {}, user_id="u1", session_id="s-1"), Outcome(1))
        now[0] += 100 * DAY
        assert await run_scheduled_upkeep(memory)  # tools alone keep the schedule going
        assert len((await tools.index.query(user_id="u1", limit=10)).records) == 0
        assert not await run_scheduled_upkeep(Memory(None, None))
    finally:
        await memory.aclose()


# -- B5: one user's memories never change another's search -----------------------------------
# (the store's side: tests/storage/conformance/test_memory_store.py and
# tests/storage/sqlite/test_memories.py)


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_idf_is_always_positive_and_falls_with_document_count(total: int, docs: int) -> None:
    docs = min(docs, total)
    assert idf(total, docs) > 0
    if docs < total:
        assert idf(total, docs) > idf(total, docs + 1)


# -- SF4: text that is not Unicode ------------------------------------------------------------


@pytest.mark.parametrize("text", ["\ud800x", "caf\udcff", "x\udfff"])
async def test_lone_surrogates_are_refused(memory: Memory, text: str) -> None:
    with pytest.raises(InvalidInputError, match="Unicode"):
        validate_content(text)
    with pytest.raises(InvalidInputError):
        await memory.remember("u1", text)
    assert memory.store is not None
    assert await memory.store.count("u1") == 0


@given(st.text(max_size=50))
def test_validate_content_accepts_exactly_encodable_text(text: str) -> None:
    try:
        kept = validate_content(text)
    except InvalidInputError:
        stripped = text.strip()
        assert (
            not stripped
            or "\x00" in stripped
            or any(0xD800 <= ord(ch) <= 0xDFFF for ch in stripped)
        )
    else:
        assert kept == text.strip()
        kept.encode("utf-8")


# -- SF6 / SF8: the result caches ------------------------------------------------------------


def _counting_registry(runs: list[Any]) -> ToolRegistry:
    @tool(cache_ttl=600)
    def secret(q: str, ctx: ToolContext) -> dict[str, Any]:
        """Per-caller secret."""
        runs.append((ctx.user_id, ctx.session_id))
        return {"owner": ctx.user_id, "session": ctx.session_id}

    return ToolRegistry([secret])


async def test_anonymous_results_are_never_shared_across_sessions() -> None:
    runs: list[Any] = []
    registry = _counting_registry(runs)
    state = PolicyState()

    async def call(user: str | None, session: str) -> bool:
        ctx = CallContext(session_id=session, user_id=user)
        result = await ToolExecutor(registry, state=state).run(
            ToolCall("c1", "secret", {"q": "x"}), ctx
        )
        assert result.ok
        return result.cached

    assert not await call(None, "s-1")
    assert await call(None, "s-1")  # same anonymous session: reused
    assert not await call(None, "s-2")  # another anonymous session: never
    assert not await call("", "s-3")
    assert not await call(None, "")  # neither user nor session: never cached
    assert not await call(None, "")
    assert not await call("alice", "s-1")
    assert await call("alice", "s-9")  # a user's results follow the user
    assert len(runs) == 6


async def test_reuse_needs_the_same_tool_not_just_the_same_name(tmp_path: Path) -> None:
    tools = ToolMemory.open(tmp_path / "mem")
    try:

        @tool(cache_ttl=600)
        def lookup(q: str) -> dict[str, Any]:
            """Version 1."""
            return {"version": 1}

        @tool(name="lookup", cache_ttl=600)
        def lookup_v2(q: str, limit: int = 5) -> dict[str, Any]:
            """Version 2: another schema."""
            return {"version": 2}

        ctx = CallContext(session_id="s-1", user_id="u1")
        call = ToolCall("c1", "lookup", {"q": "x"})
        first = await _with_memory(ToolRegistry([lookup]), tools).run(call, ctx)
        again = await _with_memory(ToolRegistry([lookup]), tools).run(call, ctx)
        changed = await _with_memory(ToolRegistry([lookup_v2]), tools).run(call, ctx)
        assert (first.output, first.cached) == ({"version": 1}, False)
        assert (again.output, again.cached) == ({"version": 1}, True)
        assert (changed.output, changed.cached) == ({"version": 2}, False)
    finally:
        await tools.close()


async def test_the_fingerprint_changes_with_name_and_schema_only(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    same = {"properties": {"q": {"type": "string"}}, "type": "object"}
    assert tool_fingerprint("a", schema) == tool_fingerprint("a", same)
    assert tool_fingerprint("a", schema) != tool_fingerprint("b", schema)
    assert tool_fingerprint("a", schema) != tool_fingerprint("a", {**schema, "required": ["q"]})
    tools = ToolMemory.open(tmp_path / "mem")
    try:  # the fingerprint is the key's tool version, matched by every reuse lookup ...
        plain = tools.key("a", {"q": "x"}, user_id="u1")
        one = tools.key("a", {"q": "x"}, user_id="u1", tool_version=tool_fingerprint("a", schema))
        two = tools.key("a", {"q": "x"}, user_id="u1", tool_version=tool_fingerprint("a", same))
        assert one.tool_version == two.tool_version != plain.tool_version == ""
        assert one.cache_slot() == two.cache_slot() != plain.cache_slot()
        # ... and never part of the input hash, which is of the arguments alone
        assert one.input_hash == two.input_hash == plain.input_hash == content_hash({"q": "x"})
    finally:
        await tools.close()


def _with_memory(registry: ToolRegistry, tiers: ToolMemory) -> ToolExecutor:
    """A pipeline with memory's step in the cache's place, as an agent with a memory has."""
    executor = ToolExecutor(registry, state=PolicyState())
    executor.replace("cache", MemoryStep(tiers))
    return executor
