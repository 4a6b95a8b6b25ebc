"""Fixtures of the conformance suites: ``backend``/``store`` run a test on every store backend,
``locks_backend``/``make_locks`` on every ``SessionLocks``, ``memory_backend``/``memory_store``
on every backend of the memory protocols, ``tool_calls_backend``/``tool_calls`` on every
tool-call index, ``archive_backend``/``archive`` on every L3 archive, ``idempotency_backend`` and
``notes_backend`` on every backend of theirs, ``runs_backend`` and ``dedupe``/``job_runs``/
``plan_runs`` on every backend of event dedupe, job runs and plan runs
(``tests.storage.backends``)."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from hermes.channels.dedupe import EventDedupe
from hermes.channels.http.request_keys import RequestKeys  # idemkey
from hermes.memory.archive import Archive
from hermes.memory.index import ToolCallIndex
from hermes.memory.store import MemoryStore
from hermes.scheduler.runs import JobRuns
from hermes.session.locks import SessionLocks
from hermes.session.store import Store
from hermes.tools.plan_runs import PlanRuns
from tests.storage.backends import (
    ARCHIVE_BACKENDS,
    IDEMPOTENCY_BACKENDS,
    LOCKS_BACKENDS,
    MEMORY_BACKENDS,
    NOTES_BACKENDS,
    REQUEST_KEYS_BACKENDS,
    RUNS_BACKENDS,
    STORE_BACKENDS,
    TOOL_CALL_INDEX_BACKENDS,
    ArchiveBackend,
    Backend,
    IdempotencyBackend,
    MemoryBackend,
    NotesBackend,
    RequestKeysBackend,
    RunsBackend,
    ToolCallIndexBackend,
)

LocksFactory = Callable[[], SessionLocks]


@pytest.fixture(params=sorted(STORE_BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return STORE_BACKENDS[request.param](tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    opened = backend.open()
    yield opened
    await opened.close()


@pytest.fixture(params=sorted(LOCKS_BACKENDS))
def make_locks(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocksFactory]:
    """Each call: another locks object on the same sessions (another Agent, same store)."""
    if request.param == "sqlite-file-ranges" and sys.platform != "linux":
        pytest.skip("byte-range session locks are Linux's (F_OFD_SETLK)")
    made = LOCKS_BACKENDS[request.param](tmp_path)
    yield made.open
    made.close()


@pytest.fixture(params=sorted(MEMORY_BACKENDS))
def memory_backend(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryBackend:
    return MEMORY_BACKENDS[request.param](tmp_path)


@pytest.fixture
async def memory_store(memory_backend: MemoryBackend) -> AsyncIterator[MemoryStore]:
    opened = memory_backend.open()
    yield opened
    await opened.close()


# -- tool-call records and archive -----------------------------------------------------------


@pytest.fixture(params=sorted(TOOL_CALL_INDEX_BACKENDS))
def tool_calls_backend(request: pytest.FixtureRequest, tmp_path: Path) -> ToolCallIndexBackend:
    return TOOL_CALL_INDEX_BACKENDS[request.param](tmp_path)


@pytest.fixture
async def tool_calls(tool_calls_backend: ToolCallIndexBackend) -> AsyncIterator[ToolCallIndex]:
    opened = tool_calls_backend.open()
    yield opened
    await opened.close()


@pytest.fixture(params=sorted(ARCHIVE_BACKENDS))
def archive_backend(request: pytest.FixtureRequest, tmp_path: Path) -> ArchiveBackend:
    return ARCHIVE_BACKENDS[request.param](tmp_path)


@pytest.fixture
def archive(archive_backend: ArchiveBackend) -> Archive:
    return archive_backend.open()


# -- end of tool-call records and archive ------------------------------------------------------


# -- event dedupe, job runs, plan runs --


class FakeClock:
    """A clock the test moves by hand (leases and windows without sleeping); starts now."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=sorted(RUNS_BACKENDS))
def runs_backend(request: pytest.FixtureRequest, tmp_path: Path) -> RunsBackend:
    return RUNS_BACKENDS[request.param](tmp_path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def dedupe(runs_backend: RunsBackend, clock: FakeClock) -> AsyncIterator[EventDedupe]:
    opened = runs_backend.open_event_dedupe(clock)
    yield opened
    await opened.close()


@pytest.fixture
async def job_runs(runs_backend: RunsBackend, clock: FakeClock) -> AsyncIterator[JobRuns]:
    opened = runs_backend.open_job_runs(clock)
    yield opened
    await opened.close()


@pytest.fixture
async def plan_runs(runs_backend: RunsBackend, clock: FakeClock) -> AsyncIterator[PlanRuns]:
    opened = runs_backend.open_plan_runs(clock)
    yield opened
    await opened.close()


@pytest.fixture
def cross_process(runs_backend: RunsBackend) -> RunsBackend:
    """The backend, for tests with other processes (skipped where none can reach it)."""
    if not runs_backend.cross_process:
        pytest.skip(f"{runs_backend.name} cannot be reached from another process")
    return runs_backend


@pytest.fixture
def durable(runs_backend: RunsBackend) -> RunsBackend:
    """The backend, for tests of a reopen (skipped where data does not survive one)."""
    if not runs_backend.durable:
        pytest.skip(f"{runs_backend.name} keeps nothing across a reopen")
    return runs_backend


# -- end of event dedupe, job runs, plan runs --


# -- idempotency records and notes -----------------------------------------------------------------


@pytest.fixture(params=sorted(IDEMPOTENCY_BACKENDS))
async def idempotency_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[IdempotencyBackend]:
    made = IDEMPOTENCY_BACKENDS[request.param](tmp_path)
    yield made
    await made.close()


@pytest.fixture(params=sorted(NOTES_BACKENDS))
def notes_backend(request: pytest.FixtureRequest, tmp_path: Path) -> NotesBackend:
    return NOTES_BACKENDS[request.param](tmp_path)


# -- end of idempotency records and notes ----------------------------------------------------------


# --- idemkey: HTTP Idempotency-Key records ---


@pytest.fixture(params=sorted(REQUEST_KEYS_BACKENDS))
def request_keys_backend(request: pytest.FixtureRequest, tmp_path: Path) -> RequestKeysBackend:
    return REQUEST_KEYS_BACKENDS[request.param](tmp_path)


@pytest.fixture
async def request_keys(
    request_keys_backend: RequestKeysBackend, clock: FakeClock
) -> AsyncIterator[RequestKeys]:
    opened = request_keys_backend.open_request_keys(clock)
    yield opened
    await opened.close()


# --- end idemkey ---
