"""What only the SQLite backends of event dedupe, job runs and plan runs do
(``hermes.storage.sqlite.event_dedupe`` / ``job_runs`` / ``plan_runs``): where their files go,
WAL, schema versions, unusable files, a lock held by another connection, the upkeep. What every
backend does is in ``tests/storage/conformance/test_event_dedupe.py`` and its siblings."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.agent import compose
from hermes.channels.dedupe import EventDedupe
from hermes.errors import ConfigError, StoreError
from hermes.scheduler.runs import JobRuns
from hermes.session.store import Store
from hermes.storage.open import open_event_dedupe, open_job_runs, open_plan_runs, runs_path
from hermes.storage.sqlite.event_dedupe import SQLiteEventDedupe
from hermes.storage.sqlite.job_runs import SQLiteJobRuns
from hermes.storage.sqlite.plan_runs import SQLitePlanRuns
from hermes.storage.sqlite.sessions import SQLiteStore
from hermes.tools.plan_runs import PlanRuns

Opener = Callable[..., Any]
#: The schema version each file is at (plans.db 2: results by archive hash).
VERSIONS = {"events.db": 1, "jobs.db": 1, "plans.db": 2}
KINDS: list[tuple[str, Opener, type]] = [
    ("events.db", open_event_dedupe, SQLiteEventDedupe),
    ("jobs.db", open_job_runs, SQLiteJobRuns),
    ("plans.db", open_plan_runs, SQLitePlanRuns),
]
IDS = [name for name, _, _ in KINDS]


@pytest.fixture(params=KINDS, ids=IDS)
def kind(request: pytest.FixtureRequest) -> tuple[str, Opener, type]:
    return request.param  # type: ignore[no-any-return]


# -- where the files go ------------------------------------------------------------------------


async def test_each_file_lies_beside_the_session_database(
    tmp_path: Path, kind: tuple[str, Opener, type]
):
    filename, opener, cls = kind
    store = SQLiteStore(tmp_path / ".hermes" / "hermes.db")
    try:
        opened = opener(store)
        assert isinstance(opened, cls)
        assert Path(opened.path) == tmp_path / ".hermes" / filename
        assert (tmp_path / ".hermes" / filename).is_file()
        await opened.close()
    finally:
        await store.close()


async def test_beside_a_memory_store_they_are_private_memory_databases(
    kind: tuple[str, Opener, type],
):
    _, opener, _ = kind
    store = SQLiteStore(":memory:")
    try:
        opened = opener(store)
        assert opened.path == ":memory:"
        await opened.close()
    finally:
        await store.close()


class _OtherStore:
    """A ``Store`` of another backend, without a file (a runtime-checkable protocol looks at
    the method names only)."""


_STORE_METHODS = (
    "load_session", "ensure_session", "append", "save_state", "context_slice", "read_items",
    "list_sessions", "delete_session", "bulk_import", "close",
)  # fmt: skip
for _method in _STORE_METHODS:
    setattr(_OtherStore, _method, lambda self, *args, **kwargs: None)


def test_paths_urls_and_other_stores(tmp_path: Path):
    assert runs_path(str(tmp_path / "e.db"), "events.db") == str(tmp_path / "e.db")
    assert runs_path(f"sqlite://{tmp_path}/e.db", "events.db") == str(tmp_path / "e.db")
    assert runs_path("rel/e.db", "events.db", base_dir=tmp_path) == str(tmp_path / "rel/e.db")
    assert runs_path(":memory:", "jobs.db") == ":memory:"
    with pytest.raises(ConfigError, match="postgresql"):
        runs_path("postgresql://db/hermes", "plans.db")
    with pytest.raises(ConfigError):
        runs_path("  ", "plans.db")
    other = _OtherStore()
    assert isinstance(other, Store)
    assert runs_path(other, "plans.db", base_dir=tmp_path) == str(tmp_path / ".hermes/plans.db")


# -- the files ---------------------------------------------------------------------------------


async def test_each_file_is_in_wal_mode_at_its_schema_version(
    tmp_path: Path, kind: tuple[str, Opener, type]
):
    filename, opener, _ = kind
    opened = opener(tmp_path / filename)
    await opened.close()
    conn = sqlite3.connect(tmp_path / filename)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == VERSIONS[filename]
    finally:
        conn.close()


async def test_a_file_written_by_a_newer_hermes_is_refused(
    tmp_path: Path, kind: tuple[str, Opener, type]
):
    filename, opener, _ = kind
    opener(tmp_path / filename).close_sync()
    conn = sqlite3.connect(tmp_path / filename)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        opener(tmp_path / filename)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path, kind: tuple[str, Opener, type]):
    filename, opener, _ = kind
    (tmp_path / filename).write_bytes(b"not a database, just some text" * 100)
    with pytest.raises(StoreError, match="not a database"):
        opener(tmp_path / filename)


async def test_the_session_database_is_not_touched(tmp_path: Path):
    store = SQLiteStore(tmp_path / "hermes.db")
    opened = [opener(store) for _, opener, _ in KINDS]
    for each in opened:
        await each.close()
    await store.close()
    conn = sqlite3.connect(tmp_path / "hermes.db")
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert not {"event_deliveries", "job_runs", "plan_runs", "plan_nodes"} & tables


# -- locks and upkeep --------------------------------------------------------------------------


async def test_a_claim_waits_for_another_connections_write_lock(tmp_path: Path):
    dedupe = SQLiteEventDedupe(tmp_path / "events.db", busy_timeout=5.0)
    other = sqlite3.connect(tmp_path / "events.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    released = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    started = time.monotonic()
    released.start()
    try:
        claim = await dedupe.claim("default", "m-1", body_hash="h", trace_id="t")
    finally:
        released.join()
        other.close()
        await dedupe.close()
    assert claim.outcome == "new"
    assert time.monotonic() - started >= 0.25  # it waited on the worker, then won


async def test_a_lock_held_past_the_busy_timeout_is_one_clear_store_error(tmp_path: Path):
    runs = SQLiteJobRuns(tmp_path / "jobs.db", busy_timeout=0.2)
    other = sqlite3.connect(tmp_path / "jobs.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match="locked"):
            await runs.claim("daily-report", 0.0, trace_id="t")
    finally:
        other.execute("ROLLBACK")
        other.close()
        await runs.close()


async def test_the_upkeep_deletes_expired_event_keys(tmp_path: Path):
    now = [time.time()]
    dedupe = SQLiteEventDedupe(tmp_path / "events.db", clock=lambda: now[0])
    try:
        for i in range(3):
            claim = await dedupe.claim("default", f"old-{i}", body_hash="h", trace_id="t", keep=60)
            await dedupe.finish("default", f"old-{i}", claim.token, status="done")
        now[0] += 120.0
        dedupe.maintain_every = 1  # the next write runs the upkeep on the worker
        await dedupe.claim("default", "fresh", body_hash="h", trace_id="t")  # triggers upkeep
        for _ in range(50):
            await asyncio.sleep(0.01)
            conn = sqlite3.connect(tmp_path / "events.db")
            count = conn.execute("SELECT COUNT(*) FROM event_deliveries").fetchone()[0]
            conn.close()
            if count == 1:
                break
        assert count == 1
    finally:
        await dedupe.close()


# -- through the composition root, on data written before ------------------------------------

FIXTURE = Path(__file__).resolve().parent.parent.parent / "fixtures" / "hermes-data-v1"


async def test_an_earlier_hermes_directory_gets_the_three_files_and_nothing_else_changes(
    tmp_path: Path,
):
    shutil.copytree(FIXTURE / ".hermes", tmp_path / ".hermes")
    root = tmp_path / ".hermes"
    before = {
        path.relative_to(root): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and not path.name.startswith("hermes.db")
    }
    store = compose.open_store(None, base_dir=tmp_path)
    try:
        opened = [
            compose.open_event_dedupe(store),
            compose.open_job_runs(store),
            compose.open_plan_runs(store),
        ]
        assert isinstance(opened[0], EventDedupe)
        assert isinstance(opened[1], JobRuns)
        assert isinstance(opened[2], PlanRuns)
        for each in opened:
            await each.close()
        assert await store.load_session("session-fixture-ada") is not None
    finally:
        await store.close()
    for filename in ("events.db", "jobs.db", "plans.db"):
        assert (tmp_path / ".hermes" / filename).is_file()
    assert {rel: (root / rel).read_bytes() for rel in before} == before
