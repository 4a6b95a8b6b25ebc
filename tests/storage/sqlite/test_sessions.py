"""What is specific to the SQLite backend: file handling, PRAGMAs, migrations, query plans and
the translation of sqlite3 failures into StoreError."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hermes.errors import StoreError
from hermes.storage.sqlite import sessions as sqlite_store
from hermes.storage.sqlite.migrations import apply_migrations
from hermes.storage.sqlite.session_migrations import MIGRATIONS, SCHEMA_VERSION
from hermes.storage.sqlite.sessions import SQLiteStore
from tests.session.helpers import rounds, say, summary, user

SID = "session-0001"


def _version(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _columns(path: Path, table: str) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


# -- opening --------------------------------------------------------------------------------


async def test_the_default_database_is_dot_hermes_under_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    store = SQLiteStore()
    await store.close()
    assert (tmp_path / ".hermes" / "hermes.db").is_file()


async def test_opening_creates_missing_parent_directories(tmp_path: Path):
    path = tmp_path / "a" / "b" / "hermes.db"
    store = SQLiteStore(path)
    await store.close()
    assert path.is_file()


async def test_the_connection_uses_wal_and_the_documented_pragmas(tmp_path: Path):
    store = SQLiteStore(tmp_path / "hermes.db", busy_timeout=2.5)

    def pragmas(conn: sqlite3.Connection) -> tuple[str, int, int, int]:
        return (
            conn.execute("PRAGMA journal_mode").fetchone()[0],
            conn.execute("PRAGMA synchronous").fetchone()[0],
            conn.execute("PRAGMA busy_timeout").fetchone()[0],
            conn.execute("PRAGMA foreign_keys").fetchone()[0],
        )

    try:
        # The fast path on the caller's thread never waits; the worker waits 2.5 s.
        assert await store._run("test", pragmas) == ("wal", 1, 0, 1)  # 1 = NORMAL
        patient = store._submit("test", pragmas).result()
        assert patient == ("wal", 1, 2500, 1)
    finally:
        await store.close()


async def test_a_write_blocked_by_another_process_waits_on_the_worker(tmp_path: Path):
    """The fast path meets SQLITE_BUSY, hands the write to the worker, which waits it out."""
    import asyncio
    import threading

    path = tmp_path / "hermes.db"
    store = SQLiteStore(path, busy_timeout=5)
    await store.ensure_session(SID, "u1")
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    try:
        stored = await asyncio.wait_for(store.append(SID, [user("after the lock")]), 5)
        assert [i.content for i in stored] == ["after the lock"]
        assert [i.content for i in await store.read_items(SID)] == ["after the lock"]
    finally:
        release.join()
        other.close()
        await store.close()


async def test_an_in_memory_database_works(tmp_path: Path):
    store = SQLiteStore(":memory:")
    try:
        await store.ensure_session(SID, "u1")
        await store.append(SID, [user("hi")])
        assert [i.content for i in await store.read_items(SID)] == ["hi"]
    finally:
        await store.close()


def test_close_sync_closes_the_store_and_later_calls_raise(tmp_path: Path):
    store = SQLiteStore(tmp_path / "hermes.db")
    store.close_sync()
    store.close_sync()
    with pytest.raises(StoreError, match="closed"):
        store.bulk_import(SID, "u1", [user("x")])


# -- failures become StoreError ---------------------------------------------------------------


def test_a_path_under_a_regular_file_raises_store_error(tmp_path: Path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the directory"):
        SQLiteStore(blocker / "hermes.db")


def test_a_directory_as_the_database_path_raises_store_error(tmp_path: Path):
    with pytest.raises(StoreError, match="cannot open the database file"):
        SQLiteStore(tmp_path)


def test_a_file_that_is_not_a_database_raises_store_error(tmp_path: Path):
    path = tmp_path / "hermes.db"
    path.write_bytes(b"this is not an SQLite database, just some text " * 100)
    with pytest.raises(StoreError, match="is not a database"):
        SQLiteStore(path)


async def test_a_write_blocked_by_another_process_raises_store_error_naming_the_wait(
    tmp_path: Path,
):
    path = tmp_path / "hermes.db"
    store = SQLiteStore(path, busy_timeout=0.05)
    await store.ensure_session(SID, "u1")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match=r"database is locked \(busy for 0.05 s\)") as caught:
            await store.append(SID, [user("hi")])
        assert str(path) in caught.value.message
    finally:
        other.execute("ROLLBACK")
        other.close()
    (stored,) = await store.append(SID, [user("hi")])  # usable again once the lock is gone
    assert stored.seq == 1
    await store.close()


# -- migrations -----------------------------------------------------------------------------


async def test_a_fresh_database_gets_the_current_schema_version(tmp_path: Path):
    path = tmp_path / "hermes.db"
    await SQLiteStore(path).close()
    assert _version(path) == SCHEMA_VERSION
    assert {"session_id", "scratch", "last_seq"} <= _columns(path, "sessions")


async def test_reopening_keeps_the_version_and_migrates_nothing(tmp_path: Path):
    path = tmp_path / "hermes.db"
    store = SQLiteStore(path)
    await store.ensure_session(SID, "u1")
    await store.close()
    store = SQLiteStore(path)
    assert await store.load_session(SID) is not None
    await store.close()
    assert _version(path) == SCHEMA_VERSION


async def test_an_unversioned_database_file_is_upgraded_on_open(tmp_path: Path):
    path = tmp_path / "hermes.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE unrelated (x)")  # a version-0 file that already exists
    await SQLiteStore(path).close()
    assert _version(path) == SCHEMA_VERSION
    assert "unrelated" in {
        row[0] for row in sqlite3.connect(path).execute("SELECT name FROM sqlite_master")
    }


def test_an_older_schema_is_upgraded_step_by_step(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / "hermes.db", isolation_level=None)
    assert apply_migrations(conn, "test.db", MIGRATIONS) == len(MIGRATIONS)
    newer = (*MIGRATIONS, ("ALTER TABLE sessions ADD COLUMN channel TEXT",))
    assert apply_migrations(conn, "test.db", newer) == len(MIGRATIONS) + 1
    assert "channel" in {row[1] for row in conn.execute("PRAGMA table_info(sessions)")}
    conn.close()


def test_a_failing_migration_step_leaves_the_previous_version(tmp_path: Path):
    conn = sqlite3.connect(tmp_path / "hermes.db", isolation_level=None)
    apply_migrations(conn, "test.db", MIGRATIONS)
    broken = (*MIGRATIONS, ("CREATE TABLE extra (x)", "THIS IS NOT SQL"))
    with pytest.raises(sqlite3.OperationalError):
        apply_migrations(conn, "test.db", broken)
    assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == len(MIGRATIONS)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "extra" not in tables
    conn.close()


def test_a_database_from_a_newer_hermes_is_refused(tmp_path: Path):
    path = tmp_path / "hermes.db"
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    with pytest.raises(StoreError, match="newer than this Hermes supports") as caught:
        SQLiteStore(path)
    assert str(path) in caught.value.message


# -- bounded reads (DESIGN principle 5) ------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "index"),
    [
        (sqlite_store.SQL_ROUND_START, "items_round_starts"),
        (sqlite_store.SQL_LATEST_SUMMARY, "items_summaries"),
        (sqlite_store.SQL_STICKY, "items_sticky"),
        (sqlite_store.SQL_SUMMARIES_BETWEEN, "items_summaries"),
        (sqlite_store.SQL_WINDOW, "sqlite_autoindex_items_1"),
        (sqlite_store.SQL_READ_ITEMS, "sqlite_autoindex_items_1"),
    ],
)
async def test_every_read_of_a_turn_is_an_index_search(tmp_path: Path, sql: str, index: str):
    path = tmp_path / "hermes.db"
    store = SQLiteStore(path)
    store.bulk_import(SID, "u1", rounds(500))
    await store.close()
    params = (SID,) + (1,) * (sql.count("?") - 1)
    with sqlite3.connect(path) as conn:
        plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert plan.startswith(f"SEARCH items USING INDEX {index}")
    assert "SCAN" not in plan
    assert "TEMP B-TREE" not in plan


async def test_a_slice_of_a_long_session_reads_only_what_the_turn_needs(tmp_path: Path):
    store = SQLiteStore(tmp_path / "hermes.db", sticky_limit=3)
    items = rounds(5_000)  # 20,000 items
    for n in range(0, 20_000, 1_000):
        items[n].sticky = True
    store.bulk_import(SID, "u1", items)
    await store.append(SID, [summary("s", covers_until=10_000)])
    got = await store.context_slice(SID, 12)
    await store.close()
    assert len(got.window) == 12 * 4 + 1
    assert got.window_start == 19_953
    assert [i.seq for i in got.sticky] == [17_001, 18_001, 19_001]
    assert (got.backlog_from, got.backlog) == (10_001, 9_952)


async def test_the_window_is_capped_when_one_round_is_huge(tmp_path: Path):
    store = SQLiteStore(tmp_path / "hermes.db", window_limit=100)
    store.bulk_import(SID, "u1", [user("q"), *(say(f"part {n}") for n in range(300))])
    got = await store.context_slice(SID, 1)
    await store.close()
    assert [i.seq for i in got.window] == list(range(202, 302))
    assert (got.window_start, got.backlog) == (202, 201)


async def test_a_version_1_database_with_sessions_is_upgraded_to_the_current_schema(
    tmp_path: Path,
):
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, str(path), MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO sessions (session_id, user_id, created_at, last_active) "
        "VALUES ('session-old-1', 'u1', 1, 1)"
    )
    conn.close()
    store = SQLiteStore(path)
    try:
        assert [r.session_id for r in await store.list_sessions("u1")] == ["session-old-1"]
        await store.append("session-old-1", [user("after the upgrade")])

        def indexes(c: sqlite3.Connection) -> set[str]:
            rows = c.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
            return {r[0] for r in rows}

        names = await store._run("test", indexes)
        assert "sessions_by_user" in names
        assert "sessions_by_activity" not in names
        version = await store._run("test", lambda c: c.execute("PRAGMA user_version").fetchone())
        assert version[0] == SCHEMA_VERSION == 4
    finally:
        await store.close()


def test_two_processes_creating_the_same_new_database_both_succeed(tmp_path: Path):
    """Opening a brand-new file from two places at once must not fail on the WAL switch."""
    import concurrent.futures

    def open_and_close(path: Path) -> None:
        SQLiteStore(path).close_sync()

    for attempt in range(20):
        path = tmp_path / f"race-{attempt}.db"
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for future in [pool.submit(open_and_close, path) for _ in range(2)]:
                future.result()  # raises StoreError if the race is lost


# -- pending approvals (migration v3) --------------------------------------------------------


async def test_a_pending_approval_round_trips_through_the_state(tmp_path: Path) -> None:
    from hermes.session.items import SessionState

    path = tmp_path / "hermes.db"
    approval = {"approval_id": "ap-0123456789", "calls": [{"tool": "shell", "arguments": {}}]}
    store = SQLiteStore(path)
    await store.ensure_session(SID, "u1")
    await store.append(
        SID, [user("hi")], SessionState("awaiting_confirmation", 5.0, {}, 1, approval)
    )
    await store.close()
    store = SQLiteStore(path)
    try:
        record = await store.load_session(SID)
        assert record is not None
        assert record.state.approval == approval
        await store.save_state(SID, SessionState("idle"))
        record = await store.load_session(SID)
        assert record is not None
        assert record.state.approval is None
    finally:
        await store.close()


async def test_a_version_2_database_gains_the_approval_column(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, str(path), MIGRATIONS[:2])
    conn.execute(
        "INSERT INTO sessions (session_id, user_id, created_at, last_active) "
        "VALUES ('session-old-2', 'u1', 1, 1)"
    )
    conn.close()
    store = SQLiteStore(path)
    try:
        record = await store.load_session("session-old-2")
        assert record is not None
        assert record.state.approval is None
    finally:
        await store.close()
    assert "approval" in _columns(path, "sessions")
    assert _version(path) == SCHEMA_VERSION == 4


async def test_a_turn_begins_in_one_write_transaction(tmp_path: Path) -> None:
    """``begin_turn`` on the SQLite store: a new session is created with its first message,
    and an existing one gets its message, each in one ``BEGIN IMMEDIATE`` … ``COMMIT``."""
    from hermes.session.items import Item, SessionState
    from hermes.session.store import begin_turn

    def opening(state: SessionState) -> SessionState:
        return SessionState("parsing_intent", 1.0)

    async with SQLiteStore(tmp_path / "s.db") as store:
        for text in ("first", "second"):
            statements: list[str] = []
            assert store._conn is not None
            store._conn.set_trace_callback(statements.append)
            try:
                start = await begin_turn(
                    store, "session-1", "u1", Item("user", "text", text),
                    rounds=3, fence=1, opening=opening,
                )  # fmt: skip
            finally:
                store._conn.set_trace_callback(None)
            assert start.stored is not None
            assert [s for s in statements if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
                "BEGIN IMMEDIATE",
                "COMMIT",
            ]
        assert [i.content for i in await store.read_items("session-1")] == ["first", "second"]
