"""Fixtures of the session tests: the store backends every conformance test runs against.

A backend gives a fresh, empty storage per test and can open it again (to test that data
survives a restart). SQLite is the only backend today; PostgreSQL plugs in by adding a factory
to ``BACKENDS``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from hermes.session.sqlite_store import SQLiteStore
from hermes.session.store import Store


class Backend(Protocol):
    name: str

    def open(self) -> Store:
        """A store on this test's storage; calling it again reopens the same data."""
        ...


@dataclass
class SQLiteBackend:
    path: Path
    name: str = "sqlite"

    def open(self) -> Store:
        return SQLiteStore(self.path)


BACKENDS: dict[str, Callable[[Path], Backend]] = {
    "sqlite": lambda tmp_path: SQLiteBackend(tmp_path / "hermes.db"),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    opened = backend.open()
    yield opened
    await opened.close()
