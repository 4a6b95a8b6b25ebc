"""The ToolCallIndex contract (``hermes.memory.index.ToolCallIndex``, the L2 tool-call
records of seed 000 §2.4 and §3.5): record, read back, query by session, tool, user, status and
time, the reuse lookup, statuses, forgetting a user, pruning, persistence and sharing. Every
backend (``tests.storage.backends.TOOL_CALL_INDEX_BACKENDS``) must pass every test here; what
only the SQLite file does (its schema, query plans, migrations) is in
``tests/storage/sqlite/test_tool_calls.py``."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hermes.errors import StoreError
from hermes.memory.hashing import NotJSONSafeError, content_hash
from hermes.memory.index import (
    InvalidRecordError,
    NewToolCall,
    ToolCallIndex,
    ToolCallStatus,
)
from tests.storage.backends import ToolCallIndexBackend

T0 = 1_800_000_000.0
H_IN = content_hash({"city": "上海"})
H_OUT = content_hash({"temp": 21})


def call(
    *,
    session: str = "session-0001",
    user: str | None = "u1",
    tool: str = "get_weather",
    input_hash: str | None = H_IN,
    output_hash: str | None = H_OUT,
    status: ToolCallStatus = "ok",
    at: float = T0,
    reusable: bool = False,
    version: str = "",
    **metadata: Any,
) -> NewToolCall:
    return NewToolCall(
        session_id=session,
        user_id=user,
        tool_name=tool,
        input_hash=input_hash,
        output_hash=output_hash,
        status=status,
        timestamp=at,
        metadata={"ok": status == "ok", **metadata},
        reusable=reusable,
        tool_version=version,
    )


@pytest.fixture
def index(tool_calls: ToolCallIndex) -> ToolCallIndex:
    return tool_calls


def _durable(backend: ToolCallIndexBackend) -> None:
    if not backend.durable:
        pytest.skip(f"{backend.name} keeps nothing past its object")


def test_the_backend_is_a_tool_call_index(index: ToolCallIndex) -> None:
    assert isinstance(index, ToolCallIndex)


async def test_a_recorded_call_reads_back_with_every_field(index: ToolCallIndex) -> None:
    record_id = await index.record(call(duration_ms=12.5, attempts=2, error_type=None))
    record = await index.get(record_id)
    assert record is not None
    assert (record.session_id, record.user_id, record.tool_name) == (
        "session-0001",
        "u1",
        "get_weather",
    )
    assert (record.input_hash, record.output_hash, record.status) == (H_IN, H_OUT, "ok")
    assert record.timestamp == T0
    assert record.at == datetime.fromtimestamp(T0, UTC)
    assert record.at.tzinfo is UTC
    assert record.metadata == {"ok": True, "duration_ms": 12.5, "attempts": 2, "error_type": None}
    assert await index.get(record_id + 1) is None


async def test_an_anonymous_caller_reads_back_as_none(index: ToolCallIndex) -> None:
    record = await index.get(await index.record(call(user=None)))
    assert record is not None
    assert record.user_id is None


async def test_calls_of_a_session_come_newest_first_or_oldest_first(index: ToolCallIndex) -> None:
    for i in range(5):
        await index.record(call(at=T0 + i, step=i))
    await index.record(call(session="session-0002", at=T0 + 10))
    newest = await index.by_session("session-0001", limit=3)
    assert [r.metadata["step"] for r in newest.records] == [4, 3, 2]
    oldest = await index.by_session("session-0001", order="oldest")
    assert [r.metadata["step"] for r in oldest.records] == [0, 1, 2, 3, 4]


async def test_equal_timestamps_keep_insertion_order(index: ToolCallIndex) -> None:
    ids = [await index.record(call(step=i)) for i in range(3)]
    found = await index.by_session("session-0001")
    assert [r.id for r in found.records] == ids[::-1]


async def test_calls_of_a_tool_within_a_half_open_time_range(index: ToolCallIndex) -> None:
    for i in range(10):
        await index.record(call(tool="send_email" if i % 2 else "get_weather", at=T0 + i))
    found = await index.by_tool("send_email", since=T0 + 3, until=T0 + 7)
    assert [r.timestamp - T0 for r in found.records] == [5, 3]


async def test_time_ranges_take_aware_datetimes(index: ToolCallIndex) -> None:
    for i in range(4):
        await index.record(call(at=T0 + i * 3600))
    start = datetime.fromtimestamp(T0, UTC) + timedelta(hours=1)
    shanghai = start.astimezone(datetime.now().astimezone().tzinfo)  # any zone, same instant
    found = await index.in_range(shanghai, start + timedelta(hours=2), order="oldest")
    assert [r.timestamp for r in found.records] == [T0 + 3600, T0 + 7200]


async def test_a_naive_datetime_is_refused_as_ambiguous(index: ToolCallIndex) -> None:
    with pytest.raises(InvalidRecordError, match="naive datetime"):
        await index.in_range(datetime(2027, 1, 1), datetime(2027, 1, 2))


async def test_query_combines_filters(index: ToolCallIndex) -> None:
    await index.record(call(user="u1", status="ok"))
    await index.record(call(user="u1", status="error", output_hash=None))
    await index.record(call(user="u2", status="error", output_hash=None))
    found = await index.query(user_id="u1", status="error")
    assert [(r.user_id, r.status) for r in found.records] == [("u1", "error")]


async def test_sql_text_in_values_is_stored_and_matched_literally(index: ToolCallIndex) -> None:
    tricky = "x'); DROP TABLE tool_calls; --"
    await index.record(call(tool=tricky, session='s" OR 1=1 --'))
    found = await index.by_tool(tricky)
    assert [r.session_id for r in found.records] == ['s" OR 1=1 --']
    assert len(await index.by_session("anything' OR '1'='1")) == 0


# -- reuse lookup ------------------------------------------------------------------------


async def test_the_latest_reusable_call_within_the_ttl_is_found(index: ToolCallIndex) -> None:
    await index.record(call(at=T0, reusable=True, n=1))
    await index.record(call(at=T0 + 5, reusable=True, n=2))
    found = await index.latest_reusable("get_weather", H_IN, user_id="u1", max_age=60, now=T0 + 10)
    assert found.first is not None
    assert found.first.metadata["n"] == 2


async def test_a_call_older_than_the_ttl_is_not_reusable(index: ToolCallIndex) -> None:
    await index.record(call(at=T0, reusable=True))
    at_edge = await index.latest_reusable(
        "get_weather", H_IN, user_id="u1", max_age=60, now=T0 + 60
    )
    assert at_edge.first is not None
    late = await index.latest_reusable(
        "get_weather", H_IN, user_id="u1", max_age=60, now=T0 + 60.001
    )
    assert late.first is None


async def test_only_rows_marked_reusable_are_candidates(index: ToolCallIndex) -> None:
    await index.record(call(reusable=False))
    await index.record(call(status="unconfirmed"))
    await index.record(call(status="error", output_hash=None))
    found = await index.latest_reusable("get_weather", H_IN, user_id="u1", max_age=60, now=T0)
    assert found.first is None


async def test_another_users_result_is_never_a_candidate(index: ToolCallIndex) -> None:
    await index.record(call(user="u1", reusable=True))
    for other in ("u2", None):
        found = await index.latest_reusable("get_weather", H_IN, user_id=other, max_age=60, now=T0)
        assert found.first is None


async def test_a_session_bound_lookup_ignores_other_sessions(index: ToolCallIndex) -> None:
    await index.record(call(user=None, session="session-A", reusable=True))
    other = await index.latest_reusable(
        "get_weather", H_IN, user_id=None, session_id="session-B", max_age=60, now=T0
    )
    same = await index.latest_reusable(
        "get_weather", H_IN, user_id=None, session_id="session-A", max_age=60, now=T0
    )
    assert other.first is None
    assert same.first is not None


async def test_a_failed_or_unhashed_call_cannot_be_marked_reusable(index: ToolCallIndex) -> None:
    with pytest.raises(InvalidRecordError, match="reusable"):
        await index.record(call(status="error", reusable=True))
    with pytest.raises(InvalidRecordError, match="reusable"):
        await index.record(call(input_hash=None, reusable=True))


async def test_the_tool_version_is_stored_apart_from_the_input_hash(
    index: ToolCallIndex,
) -> None:
    record_id = await index.record(call(version="fp-1"))
    record = await index.get(record_id)
    assert record is not None
    assert (record.input_hash, record.tool_version) == (H_IN, "fp-1")
    listed = await index.by_session("session-0001")
    assert [r.tool_version for r in listed.records] == ["fp-1"]


async def test_the_reuse_lookup_matches_the_tool_version_exactly(index: ToolCallIndex) -> None:
    await index.record(call(at=T0, reusable=True, version="fp-1", n=1))
    await index.record(call(at=T0 + 1, reusable=True, version="", n=2))

    async def find(version: str) -> int | None:
        found = await index.latest_reusable(
            "get_weather", H_IN, user_id="u1", tool_version=version, max_age=60, now=T0 + 2
        )
        return None if found.first is None else found.first.metadata["n"]

    assert await find("fp-1") == 1  # not the newer row of another version
    assert await find("") == 2  # unversioned calls reuse each other only
    assert await find("fp-2") is None


async def test_a_bad_tool_version_is_refused(index: ToolCallIndex) -> None:
    with pytest.raises(InvalidRecordError, match="tool_version"):
        await index.record(call(version="v" * 300))
    not_a_version: Any = None
    with pytest.raises(InvalidRecordError, match="tool_version"):
        await index.latest_reusable(
            "t", H_IN, user_id="u1", tool_version=not_a_version, max_age=1, now=T0
        )


async def test_set_status_confirms_a_record(index: ToolCallIndex) -> None:
    record_id = await index.record(call(status="unconfirmed"))
    assert await index.set_status(record_id, "ok", reusable=True)
    found = await index.latest_reusable("get_weather", H_IN, user_id="u1", max_age=60, now=T0)
    assert found.first is not None
    assert found.first.id == record_id
    assert not await index.set_status(record_id + 99, "ok", reusable=False)


# -- writing in bulk, forgetting, pruning -----------------------------------------------------


async def test_record_many_returns_ids_in_order(index: ToolCallIndex) -> None:
    ids = await index.record_many([call(step=i) for i in range(5)])
    assert ids == sorted(ids)
    assert len(set(ids)) == 5
    assert await index.record_many([]) == []


async def test_a_bad_record_in_a_batch_stores_none_of_it(index: ToolCallIndex) -> None:
    with pytest.raises(InvalidRecordError):
        await index.record_many([call(), call(status="bogus")])  # type: ignore[arg-type]
    assert len(await index.query()) == 0


async def test_forgetting_a_user_returns_only_blobs_nobody_else_uses(index: ToolCallIndex) -> None:
    mine_only = content_hash("mine")
    await index.record(call(user="u1", output_hash=H_OUT))
    await index.record(call(user="u1", output_hash=mine_only))
    await index.record(call(user="u2", output_hash=H_OUT))
    orphaned = await index.forget_user("u1")
    assert orphaned == [mine_only]
    assert len(await index.query(user_id="u1")) == 0
    assert len(await index.query(user_id="u2")) == 1


async def test_prune_deletes_old_records(index: ToolCallIndex) -> None:
    await index.record(call(at=T0, output_hash=content_hash("old")))
    await index.record(call(at=T0 + 100, output_hash=H_OUT))
    assert await index.prune(T0 + 50) == [content_hash("old")]
    assert [r.timestamp for r in (await index.query()).records] == [T0 + 100]


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"tool": ""}, "tool_name is empty"),
        ({"tool": "t" * 300}, "longer than"),
        ({"input_hash": "not-a-hash"}, "input_hash"),
        ({"output_hash": "A" * 64}, "output_hash"),
        ({"status": "done"}, "status must be one of"),
        ({"at": float("nan")}, "finite"),
        ({"at": float("inf")}, "finite"),
        ({"big": "x" * 70_000}, "more than"),
    ],
)
async def test_malformed_records_are_refused_with_the_field_named(
    index: ToolCallIndex, bad: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidRecordError, match=message):
        await index.record(call(**bad))


async def test_metadata_without_a_json_form_is_refused_with_its_path(
    index: ToolCallIndex,
) -> None:
    with pytest.raises(NotJSONSafeError) as caught:
        await index.record(call(timing={"ms": float("nan")}))
    assert caught.value.path == "$.timing.ms"


@pytest.mark.parametrize("limit", [0, -1, 10_001, True])
async def test_a_query_limit_out_of_bounds_is_refused(index: ToolCallIndex, limit: int) -> None:
    with pytest.raises(InvalidRecordError, match="limit"):
        await index.query(limit=limit)


async def test_a_bad_reuse_lookup_is_refused(index: ToolCallIndex) -> None:
    with pytest.raises(InvalidRecordError, match="input_hash"):
        await index.latest_reusable("t", "x", user_id="u1", max_age=1, now=T0)
    with pytest.raises(InvalidRecordError, match="max_age"):
        await index.latest_reusable("t", H_IN, user_id="u1", max_age=0, now=T0)


async def test_a_record_many_of_none_is_nothing_and_ids_rise_across_batches(
    index: ToolCallIndex,
) -> None:
    first = await index.record(call(step=0))
    batch = await index.record_many([call(step=1), call(step=2)])
    assert first < batch[0] < batch[1]
    assert [r.id for r in (await index.query(order="oldest")).records] == [first, *batch]


async def test_set_status_can_mark_a_record_failed_and_not_reusable(index: ToolCallIndex) -> None:
    record_id = await index.record(call(reusable=True))
    assert await index.set_status(record_id, "error", reusable=False)
    record = await index.get(record_id)
    assert record is not None
    assert (record.status, record.reusable) == ("error", False)
    found = await index.latest_reusable("get_weather", H_IN, user_id="u1", max_age=60, now=T0)
    assert found.first is None
    with pytest.raises(InvalidRecordError, match="status must be one of"):
        await index.set_status(record_id, "done", reusable=False)  # type: ignore[arg-type]


async def test_each_status_is_found_by_its_own_query(index: ToolCallIndex) -> None:
    statuses: list[ToolCallStatus] = ["ok", "error", "unconfirmed"]
    for status in statuses:
        await index.record(call(status=status, output_hash=None if status == "error" else H_OUT))
    for status in statuses:
        assert [r.status for r in (await index.query(status=status)).records] == [status]


async def test_referenced_names_only_the_digests_some_record_uses(index: ToolCallIndex) -> None:
    other = content_hash("nobody's")
    await index.record(call(output_hash=H_OUT))
    assert await index.referenced([H_OUT, other, H_OUT]) == {H_OUT}
    assert await index.referenced([]) == set()
    many = [content_hash(i) for i in range(1200)]  # more than one statement's worth
    await index.record_many([call(output_hash=d) for d in many[::100]])
    assert await index.referenced(many) == set(many[::100])


async def test_forgetting_an_unknown_user_deletes_nothing(index: ToolCallIndex) -> None:
    await index.record(call(user="u1"))
    assert await index.forget_user("nobody") == []
    assert len(await index.query()) == 1
    with pytest.raises(InvalidRecordError, match="non-empty user id"):
        await index.forget_user("")


async def test_prune_keeps_a_blob_a_newer_record_still_names(index: ToolCallIndex) -> None:
    await index.record(call(at=T0, output_hash=H_OUT))
    await index.record(call(at=T0 + 100, output_hash=H_OUT))
    assert await index.prune(datetime.fromtimestamp(T0 + 50, UTC)) == []
    assert len(await index.query()) == 1


async def test_debug_returns_the_query_its_parameters_and_the_plan(
    tool_calls_backend: ToolCallIndexBackend,
) -> None:
    index = tool_calls_backend.open(debug=True)
    try:
        await index.record(call())
        found = await index.by_session("session-0001", limit=5)
        assert found.sql is not None
        assert found.params is not None
        assert "session-0001" in found.params
        assert found.plan
        assert len(found) == 1
        quiet = await index.by_session("session-0001", debug=False)
        assert (quiet.sql, quiet.params, quiet.plan) == (None, None, None)
    finally:
        await index.close()


async def test_debug_can_be_asked_for_one_query(index: ToolCallIndex) -> None:
    assert (await index.by_tool("get_weather")).sql is None
    assert (await index.by_tool("get_weather", debug=True)).sql is not None


# -- persistence and sharing -----------------------------------------------------------------


async def test_records_survive_closing_and_reopening(
    tool_calls_backend: ToolCallIndexBackend,
) -> None:
    _durable(tool_calls_backend)
    first = tool_calls_backend.open()
    record_id = await first.record(call(reusable=True, version="fp-1"))
    await first.close()
    second = tool_calls_backend.open()
    try:
        assert len(await second.by_session("session-0001")) == 1
        found = await second.latest_reusable(
            "get_weather", H_IN, user_id="u1", tool_version="fp-1", max_age=60, now=T0
        )
        assert found.first is not None
        assert found.first.id == record_id
    finally:
        await second.close()


async def test_two_indexes_on_one_storage_can_write_at_the_same_time(
    tool_calls_backend: ToolCallIndexBackend,
) -> None:
    # Two processes' worth of connections: one waits for the other's lock.
    _durable(tool_calls_backend)
    first, second = tool_calls_backend.open(), tool_calls_backend.open()
    try:
        await asyncio.gather(
            *(first.record(call(step=i)) for i in range(50)),
            *(second.record(call(step=i)) for i in range(50)),
        )
        assert len(await first.query(limit=1000)) == 100
        assert len(await second.query(limit=1000)) == 100  # each sees the other's at once
    finally:
        await first.close()
        await second.close()


async def test_a_closed_index_refuses_calls(tool_calls_backend: ToolCallIndexBackend) -> None:
    index = tool_calls_backend.open()
    await index.close()
    with pytest.raises(StoreError, match="closed"):
        await index.record(call())
    with pytest.raises(StoreError, match="closed"):
        await index.query()
