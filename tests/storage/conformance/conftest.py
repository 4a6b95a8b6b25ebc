"""Fixtures of the conformance suites: ``backend``/``store`` run a test on every store backend,
``locks_backend``/``make_locks`` on every ``SessionLocks``, ``memory_backend``/``memory_store``
on every backend of the memory protocols, ``tool_calls_backend``/``tool_calls`` on every
tool-call index, ``archive_backend``/``archive`` on every L3 archive, ``idempotency_backend`` and
``notes_backend`` on every backend of theirs (``tests.storage.backends``)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from hermes.memory.archive import Archive
from hermes.memory.index import ToolCallIndex
from hermes.memory.longterm import MemoryStore
from hermes.session.locks import SessionLocks
from hermes.session.store import Store
from tests.storage.backends import (
    ARCHIVE_BACKENDS,
    IDEMPOTENCY_BACKENDS,
    LOCKS_BACKENDS,
    MEMORY_BACKENDS,
    NOTES_BACKENDS,
    STORE_BACKENDS,
    TOOL_CALL_INDEX_BACKENDS,
    ArchiveBackend,
    Backend,
    IdempotencyBackend,
    MemoryBackend,
    NotesBackend,
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
