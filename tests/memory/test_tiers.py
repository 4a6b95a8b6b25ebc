"""The tiers together: every call recorded, ``cache_ttl`` results reused L1 → L2 + L3, never
across users, surviving a restart (seed 000 §2.4, §3.5)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes.memory.cache import TOOL_RESULTS, MemoryCache
from hermes.memory.hashing import canonical_bytes, content_hash
from hermes.memory.tiers import CallKey, ToolMemory
from hermes.models.base import ToolCall
from hermes.storage.files.archive import LocalArchive
from hermes.storage.sqlite.tool_calls import SQLiteToolCallIndex
from hermes.tools import ToolRegistry, tool
from hermes.tools.base import ToolResult
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.policies import PolicyState
from tests.memory.support import Clock

T0 = 1_800_000_000.0
ARGS = {"city": "上海", "days": 3}
OUTPUT = {"city": "上海", "forecast": [{"day": d, "temp": 20 + d} for d in range(3)]}


class CountingArchive:
    """A LocalArchive that counts reads: shows which tier answered."""

    def __init__(self, inner: LocalArchive) -> None:
        self.inner = inner
        self.gets = 0

    async def put(self, data: bytes) -> str:
        return await self.inner.put(data)

    async def get(self, digest: str) -> bytes | None:
        self.gets += 1
        return await self.inner.get(digest)

    async def exists(self, digest: str) -> bool:
        return await self.inner.exists(digest)

    async def delete(self, digest: str) -> bool:
        return await self.inner.delete(digest)


class Tiers:
    """Opens ToolMemory on one directory, as often as a test restarts the process."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.wall = Clock(T0)
        self.mono = Clock(100.0)
        self.opened: list[ToolMemory] = []
        self.archive = CountingArchive(LocalArchive(root / "archive"))

    def open(self, **options: Any) -> ToolMemory:
        memory = ToolMemory(
            SQLiteToolCallIndex(self.root / "memory.db"),
            options.pop("archive", self.archive),
            MemoryCache(clock=self.mono),
            clock=self.wall,
            **options,
        )
        self.opened.append(memory)
        return memory

    async def restart(self, memory: ToolMemory) -> ToolMemory:
        """What a process restart does: L1 is gone, L2 and L3 stay."""
        await memory.close()
        return self.open()


@pytest.fixture
async def tiers(tmp_path: Path) -> AsyncIterator[Tiers]:
    made = Tiers(tmp_path / "hermes")
    try:
        yield made
    finally:
        for memory in made.opened:
            await memory.close()


@pytest.fixture
def memory(tiers: Tiers) -> ToolMemory:
    return tiers.open()


def ok(
    output: Any = OUTPUT, *, summary: str | None = "3-day forecast", cached: bool = False
) -> ToolResult:
    return ToolResult(ok=True, output=output, summary=summary, duration_ms=12.0, cached=cached)


async def run_once(
    memory: ToolMemory,
    *,
    user: str | None = "u1",
    session: str = "session-0001",
    args: dict[str, Any] | None = None,
    ttl: float = 600,
    result: ToolResult | None = None,
    **options: Any,
) -> Any:
    """What the executor does for a ``cache_ttl`` tool: look up, else run and record."""
    key = memory.key("get_weather", args or ARGS, user_id=user, session_id=session)
    hit = await memory.find_reusable(key, ttl=ttl)
    if hit is not None:
        return hit
    return await memory.record_call(key, result or ok(), reuse_ttl=ttl, **options)


async def lookup(
    memory: ToolMemory,
    *,
    user: str | None = "u1",
    session: str = "session-0001",
    args: dict[str, Any] | None = None,
    ttl: float = 600,
) -> Any:
    key = memory.key("get_weather", args or ARGS, user_id=user, session_id=session)
    return await memory.find_reusable(key, ttl=ttl)


# -- reuse ----------------------------------------------------------------------------------


async def test_an_identical_call_within_its_ttl_is_answered_from_l1(
    memory: ToolMemory, tiers: Tiers
) -> None:
    recorded = await run_once(memory)
    assert recorded.reusable
    hit = await lookup(memory)
    assert hit is not None
    assert (hit.output, hit.summary, hit.tier) == (OUTPUT, "3-day forecast", "l1")
    assert hit.record_id == recorded.record_id
    assert tiers.archive.gets == 0  # L3 is read only when L1 cannot answer


async def test_argument_key_order_does_not_matter(memory: ToolMemory) -> None:
    await run_once(memory, args={"city": "上海", "days": 3})
    hit = await lookup(memory, args={"days": 3, "city": "上海"})
    assert hit is not None


async def test_the_input_hash_is_of_the_arguments_alone_in_any_key_order(
    memory: ToolMemory,
) -> None:
    reordered = {"days": 3, "city": "上海"}
    keys = [
        memory.key("get_weather", arguments, user_id="u1", session_id="session-0001", **version)
        for arguments in (ARGS, reordered)
        for version in ({}, {"tool_version": "fp-1"}, {"tool_version": "fp-2"})
    ]
    assert {key.input_hash for key in keys} == {content_hash(ARGS)}
    assert content_hash(ARGS) == content_hash(reordered)
    await memory.record_call(keys[1], ok(), reuse_ttl=600)
    [record] = (await memory.index.by_session("session-0001")).records
    assert (record.input_hash, record.tool_version) == (content_hash(ARGS), "fp-1")


async def test_a_result_is_reused_only_by_the_same_tool_version(
    memory: ToolMemory, tiers: Tiers
) -> None:
    def key(mem: ToolMemory, version: str) -> CallKey:
        return mem.key("get_weather", ARGS, user_id="u1", session_id="s-1", tool_version=version)

    await memory.record_call(key(memory, "fp-1"), ok(), reuse_ttl=600)
    assert await memory.find_reusable(key(memory, "fp-2"), ttl=600) is None  # not from L1
    assert await memory.find_reusable(key(memory, ""), ttl=600) is None
    restarted = await tiers.restart(memory)
    assert await restarted.find_reusable(key(restarted, "fp-2"), ttl=600) is None  # nor L2
    hit = await restarted.find_reusable(key(restarted, "fp-1"), ttl=600)
    assert hit is not None
    assert (hit.output, hit.tier) == (OUTPUT, "l3")


async def test_different_arguments_are_a_different_call(memory: ToolMemory) -> None:
    await run_once(memory)
    assert await lookup(memory, args={"city": "北京", "days": 3}) is None
    assert await lookup(memory, args={"city": "上海", "days": 3.0}) is None  # 3 ≠ 3.0 in JSON


async def test_after_a_restart_the_result_comes_from_l2_and_l3(
    memory: ToolMemory, tiers: Tiers
) -> None:
    await run_once(memory)
    restarted = await tiers.restart(memory)
    hit = await lookup(restarted)
    assert hit is not None
    assert (hit.output, hit.summary, hit.tier, hit.recorded_at) == (
        OUTPUT,
        "3-day forecast",
        "l3",
        T0,
    )
    assert tiers.archive.gets == 1
    again = await lookup(restarted)  # promoted to L1 by the first read
    assert again is not None
    assert again.tier == "l1"
    assert tiers.archive.gets == 1


async def test_a_result_never_crosses_users(memory: ToolMemory, tiers: Tiers) -> None:
    await run_once(memory, user="alice")
    assert await lookup(memory, user="bob") is None
    assert await lookup(memory, user=None) is None
    restarted = await tiers.restart(memory)
    assert await lookup(restarted, user="bob") is None
    assert await lookup(restarted, user="alice") is not None


async def test_a_users_result_is_reused_in_their_other_sessions(memory: ToolMemory) -> None:
    await run_once(memory, user="alice", session="session-A")
    assert await lookup(memory, user="alice", session="session-B") is not None


async def test_session_scope_keeps_a_result_in_its_session(memory: ToolMemory) -> None:
    key = memory.key("get_weather", ARGS, user_id="alice", session_id="session-A", scope="session")
    await memory.record_call(key, ok(), reuse_ttl=600)
    elsewhere = memory.key(
        "get_weather", ARGS, user_id="alice", session_id="session-B", scope="session"
    )
    assert await memory.find_reusable(key, ttl=600) is not None
    assert await memory.find_reusable(elsewhere, ttl=600) is None


async def test_anonymous_callers_share_results_only_within_their_session(
    memory: ToolMemory, tiers: Tiers
) -> None:
    await run_once(memory, user=None, session="session-A")
    assert await lookup(memory, user=None, session="session-B") is None
    assert await lookup(memory, user=None, session="session-A") is not None
    restarted = await tiers.restart(memory)
    assert await lookup(restarted, user=None, session="session-B") is None
    assert await lookup(restarted, user=None, session="session-A") is not None


async def test_a_call_with_neither_user_nor_session_is_never_reused(memory: ToolMemory) -> None:
    recorded = await run_once(memory, user=None, session="")
    assert recorded.record_id is not None
    assert not recorded.reusable
    assert await lookup(memory, user=None, session="") is None


async def test_a_result_expires_with_its_ttl_in_every_tier(
    memory: ToolMemory, tiers: Tiers
) -> None:
    await run_once(memory, ttl=60)
    tiers.wall.now += 60
    assert await lookup(memory, ttl=60) is not None
    tiers.wall.now += 1
    assert await lookup(memory, ttl=60) is None
    restarted = await tiers.restart(memory)
    assert await lookup(restarted, ttl=60) is None


async def test_the_ttl_of_the_lookup_decides_not_the_one_it_was_stored_with(
    memory: ToolMemory, tiers: Tiers
) -> None:
    await run_once(memory, ttl=600)
    tiers.wall.now += 30
    assert await lookup(memory, ttl=10) is None
    assert await lookup(memory, ttl=600) is not None


async def test_a_reused_result_recorded_again_does_not_extend_its_life(
    memory: ToolMemory, tiers: Tiers
) -> None:
    await run_once(memory, ttl=60)
    tiers.wall.now += 50
    key = memory.key("get_weather", ARGS, user_id="u1", session_id="session-0001")
    replay = await memory.record_call(key, ok(cached=True), reuse_ttl=60)
    assert replay.record_id is not None
    assert not replay.reusable
    tiers.wall.now += 20  # 70 s after the real run, 20 s after the replay
    restarted = await tiers.restart(memory)
    assert await lookup(restarted, ttl=60) is None


async def test_a_reused_output_is_a_fresh_copy(memory: ToolMemory) -> None:
    await run_once(memory)
    hit = await lookup(memory)
    hit.output["city"] = "changed"
    again = await lookup(memory)
    assert again.output == OUTPUT


async def test_without_a_reuse_ttl_a_result_is_recorded_but_not_reusable(
    memory: ToolMemory,
) -> None:
    key = memory.key("get_weather", ARGS, user_id="u1", session_id="session-0001")
    recorded = await memory.record_call(key, ok())
    assert recorded.record_id is not None
    assert recorded.archived
    assert not recorded.reusable
    assert await memory.find_reusable(key, ttl=600) is None


# -- what is never reused --------------------------------------------------------------------


async def test_a_failed_call_is_recorded_and_never_reused(memory: ToolMemory) -> None:
    failure = ToolResult.failure("timeout", "did not finish within 5 s", attempts=3)
    recorded = await run_once(memory, result=failure)
    assert (recorded.status, recorded.output_hash, recorded.reusable) == ("error", None, False)
    assert await lookup(memory) is None
    record = await memory.index.get(recorded.record_id)
    assert record is not None
    assert record.metadata["error_type"] == "timeout"
    assert record.metadata["attempts"] == 3


async def test_an_unconfirmed_result_is_held_but_not_reused_until_confirmed(
    memory: ToolMemory, tiers: Tiers
) -> None:
    recorded = await run_once(memory, confirmed=False)
    assert (recorded.status, recorded.reusable, recorded.archived) == ("unconfirmed", False, True)
    assert memory.pending(recorded.record_id) == OUTPUT
    assert await lookup(memory) is None
    assert await memory.confirm(recorded.record_id, reuse=True)
    assert memory.pending(recorded.record_id) is None
    hit = await lookup(memory)
    assert hit is not None
    assert hit.tier == "l3"
    assert not await memory.confirm(recorded.record_id)  # already confirmed


async def test_a_confirmed_result_is_reusable_only_when_asked(memory: ToolMemory) -> None:
    recorded = await run_once(memory, confirmed=False)
    assert await memory.confirm(recorded.record_id)
    assert await lookup(memory) is None


async def test_arguments_without_a_json_form_are_recorded_and_never_reused(
    memory: ToolMemory,
) -> None:
    key = memory.key("get_weather", {"lat": float("nan")}, user_id="u1", session_id="s-000001")
    assert key.input_hash is None
    assert key.input_problem is not None
    assert "$.lat" in key.input_problem
    recorded = await memory.record_call(key, ok(), reuse_ttl=600)
    assert recorded.record_id is not None
    assert not recorded.reusable
    assert "input_not_json_safe" in recorded.notes
    assert await memory.find_reusable(key, ttl=600) is None


async def test_an_output_without_a_json_form_is_recorded_without_a_hash(
    memory: ToolMemory,
) -> None:
    recorded = await run_once(memory, result=ok({"temp": float("inf")}))
    assert (recorded.output_hash, recorded.archived, recorded.reusable) == (None, False, False)
    assert "output_not_json_safe" in recorded.notes
    assert await lookup(memory) is None


async def test_a_huge_output_is_recorded_hashed_and_noted_but_not_archived(
    tiers: Tiers,
) -> None:
    memory = tiers.open(archive=LocalArchive(tiers.root / "small", max_bytes=1000))
    huge = {"rows": ["x" * 100] * 50}
    recorded = await run_once(memory, result=ok(huge))
    assert (recorded.archived, recorded.reusable) == (False, False)
    assert recorded.output_hash == content_hash(huge)
    assert "too_large" in recorded.notes
    record = await memory.index.get(recorded.record_id)
    assert record is not None
    assert record.metadata["notes"] == ["too_large"]
    assert record.metadata["output_bytes"] > 1000
    assert await lookup(memory) is None


async def test_a_summary_too_long_to_store_makes_the_result_not_reusable(
    memory: ToolMemory,
) -> None:
    recorded = await run_once(memory, result=ok(summary="s" * 5000))
    assert not recorded.reusable
    assert "summary_too_long" in recorded.notes


# -- damage and failures ---------------------------------------------------------------------


async def test_a_corrupt_blob_is_a_miss_then_is_rewritten_by_the_next_run(
    memory: ToolMemory, tiers: Tiers
) -> None:
    recorded = await run_once(memory)
    path = tiers.archive.inner.path_of(recorded.output_hash)
    path.write_bytes(path.read_bytes()[:-5])  # a torn write
    restarted = await tiers.restart(memory)
    assert await lookup(restarted) is None
    assert not path.exists()  # the bad blob was removed
    rerun = await run_once(restarted)
    assert rerun.archived
    assert path.exists()
    assert await tiers.archive.inner.get(recorded.output_hash) is not None


async def test_a_missing_blob_is_a_miss(memory: ToolMemory, tiers: Tiers) -> None:
    recorded = await run_once(memory)
    await tiers.archive.inner.delete(recorded.output_hash)
    restarted = await tiers.restart(memory)
    assert await lookup(restarted) is None


async def test_a_broken_index_makes_lookups_miss_and_records_report_it(
    memory: ToolMemory,
) -> None:
    await memory.index.close()
    assert await lookup(memory) is None
    key = memory.key("get_weather", ARGS, user_id="u1", session_id="session-0001")
    recorded = await memory.record_call(key, ok(), reuse_ttl=600)
    assert recorded.record_id is None
    assert not recorded.reusable


# -- what is recorded ------------------------------------------------------------------------


async def test_every_call_is_recorded_with_its_metadata(memory: ToolMemory) -> None:
    key = memory.key("get_weather", ARGS, user_id="u1", session_id="session-0001")
    await memory.record_call(key, ok(), reuse_ttl=600, call_id="call-1", trace_id="trace-1")
    await memory.record_call(key, ToolResult.failure("execution_error", "boom"), call_id="call-2")
    found = await memory.index.by_session("session-0001", order="oldest")
    first, second = found.records
    assert (first.input_hash, first.output_hash) == (content_hash(ARGS), content_hash(OUTPUT))
    assert first.metadata == {
        "ok": True,
        "error_type": None,
        "duration_ms": 12.0,
        "attempts": 1,
        "cached": False,
        "archived": True,
        "output_bytes": len(canonical_bytes(OUTPUT)),
        "summary": "3-day forecast",
        "call_id": "call-1",
        "trace_id": "trace-1",
    }
    assert first.timestamp == T0
    assert (second.status, second.metadata["error_type"], second.metadata["call_id"]) == (
        "error",
        "execution_error",
        "call-2",
    )


async def test_reusable_only_archiving_skips_l3_for_other_results(tiers: Tiers) -> None:
    memory = tiers.open(archive_outputs="reusable")
    key = memory.key("get_weather", ARGS, user_id="u1", session_id="session-0001")
    plain = await memory.record_call(key, ok())
    assert (plain.archived, plain.output_hash) == (False, content_hash(OUTPUT))
    assert list(tiers.archive.inner.digests()) == []
    cached = await memory.record_call(key, ok(), reuse_ttl=600)
    assert cached.archived


async def test_forgetting_a_user_removes_their_records_cache_and_unshared_blobs(
    memory: ToolMemory, tiers: Tiers
) -> None:
    mine = await run_once(memory, user="alice", args={"city": "杭州"}, result=ok({"only": "me"}))
    await run_once(memory, user="alice")
    await run_once(memory, user="bob")  # the same output as alice's second call
    assert await memory.forget_user("alice") == 1
    assert await lookup(memory, user="alice") is None
    assert len(await memory.index.query(user_id="alice")) == 0
    assert await tiers.archive.inner.get(mine.output_hash) is None
    assert await lookup(memory, user="bob") is not None
    held = [str(slot) for space, slot in memory.cache if space == TOOL_RESULTS]
    assert any("bob" in slot for slot in held)
    assert not any("alice" in slot for slot in held)


async def test_open_puts_the_index_and_archive_in_one_directory(tmp_path: Path) -> None:
    memory = ToolMemory.open(tmp_path / ".hermes")
    try:
        key = memory.key("t", {}, user_id="u1", session_id="session-0001")
        await memory.record_call(key, ok(), reuse_ttl=60)
        assert (tmp_path / ".hermes" / "memory.db").is_file()
        assert any((tmp_path / ".hermes" / "archive").iterdir())
    finally:
        await memory.close()


async def test_a_cache_ttl_tool_runs_once_across_a_restart_when_wired_as_documented(
    memory: ToolMemory, tiers: Tiers
) -> None:
    """The wiring the executor gets (see the report): look up before running, record after."""
    runs: list[str] = []

    @tool(name="get_weather", cache_ttl=600)
    def get_weather(city: str, days: int = 1) -> dict[str, Any]:
        """Forecast."""
        runs.append(city)
        return {"city": city, "days": days}

    registry = ToolRegistry([get_weather])

    async def call_tool(mem: ToolMemory, user: str, arguments: dict[str, Any]) -> ToolResult:
        ctx = CallContext(session_id="session-0001", user_id=user, call_id="c1")
        key = mem.key("get_weather", arguments, user_id=user, session_id=ctx.session_id)
        hit = await mem.find_reusable(key, ttl=600)
        if hit is not None:
            return ToolResult(ok=True, output=hit.output, summary=hit.summary, cached=True)
        # A fresh policy state: no in-process cache from the executor.
        executor = ToolExecutor(registry, state=PolicyState())
        result = await executor.run(ToolCall("c1", "get_weather", arguments), ctx)
        await mem.record_call(key, result, reuse_ttl=600, call_id="c1")
        return result

    first = await call_tool(memory, "u1", {"city": "上海", "days": 2})
    restarted = await tiers.restart(memory)
    second = await call_tool(restarted, "u1", {"days": 2, "city": "上海"})
    other_user = await call_tool(restarted, "u2", {"city": "上海", "days": 2})
    assert runs == ["上海", "上海"]  # u1 once (reused after the restart), u2 once
    assert (first.cached, second.cached, other_user.cached) == (False, True, False)
    assert second.output == first.output == {"city": "上海", "days": 2}
