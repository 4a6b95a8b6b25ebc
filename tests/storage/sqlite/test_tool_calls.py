"""The SQLite tool-call index (``hermes.storage.sqlite.tool_calls``): what its file does
beyond the ``ToolCallIndex`` contract (``tests/storage/conformance/test_tool_call_index.py``)
— the SQL and plans of debug mode, every query shape an index walk, the versioned schema and
its migration, a damaged file or row."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import StoreError
from hermes.storage.sqlite.migrations import apply_migrations
from hermes.storage.sqlite.tool_calls import MIGRATIONS, SQLiteToolCallIndex
from tests.storage.conformance.test_tool_call_index import H_IN, H_OUT, T0, call


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "state" / "memory.db"


@pytest.fixture
async def index(db: Path) -> AsyncIterator[SQLiteToolCallIndex]:
    opened = SQLiteToolCallIndex(db)
    try:
        yield opened
    finally:
        await opened.close()


async def test_debug_mode_returns_the_sql_its_parameters_and_the_plan(db: Path) -> None:
    index = SQLiteToolCallIndex(db, debug=True)
    try:
        await index.record(call())
        found = await index.by_session("session-0001", limit=5)
        assert found.sql is not None
        assert found.sql.startswith("SELECT id, session_id")
        assert "WHERE session_id = ?" in found.sql
        assert found.params == ("session-0001", 5)
        assert found.plan is not None
        assert any("tool_calls_by_session" in step for step in found.plan)
        # The SQL and parameters run as they are in any SQLite shell or connection:
        with sqlite3.connect(db) as conn:
            assert len(conn.execute(found.sql, found.params).fetchall()) == 1
        quiet = await index.by_session("session-0001", debug=False)
        assert (quiet.sql, quiet.params, quiet.plan) == (None, None, None)
    finally:
        await index.close()


@pytest.mark.parametrize(
    ("kwargs", "index_name"),
    [
        ({"session_id": "s"}, "tool_calls_by_session"),
        ({"tool_name": "t", "since": T0, "until": T0 + 1}, "tool_calls_by_tool"),
        ({"user_id": "u1"}, "tool_calls_by_user"),
        ({"since": T0, "until": T0 + 1}, "tool_calls_by_time"),
        ({"session_id": "s", "tool_name": "t"}, "tool_calls_by_session_tool"),
    ],
)
async def test_each_query_shape_is_an_index_walk_without_a_sort(
    index: SQLiteToolCallIndex, kwargs: dict[str, Any], index_name: str
) -> None:
    await index.record_many([call(at=T0 + i, session=f"s{i % 7}") for i in range(200)])
    found = await index.query(**kwargs, debug=True)
    assert found.plan is not None
    plan = " | ".join(found.plan)
    assert index_name in plan
    assert "TEMP B-TREE" not in plan


@pytest.mark.parametrize("session", [None, "session-0001"])
async def test_the_reuse_lookup_is_one_seek_in_its_partial_index(
    index: SQLiteToolCallIndex, session: str | None
) -> None:
    await index.record_many(
        [call(at=T0 + i, reusable=i % 2 == 0, version=f"v{i % 3}") for i in range(200)]
    )
    found = await index.latest_reusable(
        "get_weather",
        H_IN,
        user_id="u1",
        session_id=session,
        tool_version="v1",
        max_age=60,
        now=T0 + 200,
        debug=True,
    )
    assert found.plan is not None
    plan = " | ".join(found.plan)
    # Every equality of the lookup, the tool version included, is part of the seek.
    seek = "tool_calls_reusable (tool_name=? AND user_id=? AND input_hash=? AND tool_version=?"
    assert seek in plan
    assert "TEMP B-TREE" not in plan
    assert found.first is not None
    assert (found.first.tool_version, found.first.timestamp) == ("v1", T0 + 196)


# -- the file ---------------------------------------------------------------------------------


async def test_the_schema_is_versioned(index: SQLiteToolCallIndex, db: Path) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 2
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _a_version_1_file(db: Path) -> None:
    """A memory.db as the previous release left it: schema v1, whose input_hash had the tool
    fingerprint folded in (one reusable row, one failed row)."""
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        assert apply_migrations(conn, str(db), MIGRATIONS[:1]) == 1
        insert = (
            "INSERT INTO tool_calls (session_id, user_id, tool_name, input_hash, output_hash, "
            "status, reusable, created_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
        )
        conn.execute(
            insert, ("session-0001", "u1", "get_weather", H_IN, H_OUT, "ok", 1, T0, '{"n":1}')
        )
        conn.execute(
            insert, ("session-0001", "u1", "get_weather", H_IN, None, "error", 0, T0 + 1, "{}")
        )
    finally:
        conn.close()


async def test_a_version_1_file_is_migrated_and_its_rows_stay_readable(db: Path) -> None:
    _a_version_1_file(db)
    index = SQLiteToolCallIndex(db)
    try:
        old = (await index.by_session("session-0001", order="oldest")).records
        assert [(r.status, r.input_hash, r.tool_version) for r in old] == [
            ("ok", H_IN, None),
            ("error", H_IN, None),
        ]
        assert old[0].metadata == {"n": 1}
        assert len(await index.by_tool("get_weather", since=T0, until=T0 + 2)) == 2
        for version in ("", "fp-1"):  # a row from before versions is never reused
            stale = await index.latest_reusable(
                "get_weather", H_IN, user_id="u1", tool_version=version, max_age=60, now=T0 + 2
            )
            assert stale.first is None
        new_id = await index.record(call(at=T0 + 2, reusable=True, version="fp-1"))
        fresh = await index.latest_reusable(
            "get_weather", H_IN, user_id="u1", tool_version="fp-1", max_age=60, now=T0 + 3
        )
        assert fresh.first is not None
        assert fresh.first.id == new_id
    finally:
        await index.close()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        [reuse_index] = conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'tool_calls_reusable'"
        ).fetchone()
        assert "tool_version" in reuse_index


def test_a_file_from_a_newer_hermes_is_refused(db: Path) -> None:
    db.parent.mkdir(parents=True)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="newer than this Hermes supports"):
        SQLiteToolCallIndex(db)


def test_a_file_that_is_not_a_database_is_a_clear_error(db: Path) -> None:
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="is not a database"):
        SQLiteToolCallIndex(db)


async def test_a_damaged_metadata_row_reads_as_marked_not_as_an_exception(
    index: SQLiteToolCallIndex, db: Path
) -> None:
    first = await index.record(call())
    second = await index.record(call())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE tool_calls SET metadata = '{not json' WHERE id = ?", (first,))
        conn.execute("UPDATE tool_calls SET metadata = '[1, 2]' WHERE id = ?", (second,))
    for record_id in (first, second):
        record = await index.get(record_id)
        assert record is not None
        assert record.metadata == {"corrupt_metadata": True}


def test_the_index_names_its_file(db: Path) -> None:
    index = SQLiteToolCallIndex(db)
    try:
        assert repr(index) == f"SQLiteToolCallIndex({str(db)!r})"
        assert index.path == str(db)
    finally:
        index.close_sync()
