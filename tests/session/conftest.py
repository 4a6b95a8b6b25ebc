"""Fixtures of the session tests: ``store`` runs a test on every store backend
(``tests.storage.backends``, the ones the Store conformance suite runs on)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.session.store import Store
from tests.storage.backends import STORE_BACKENDS, Backend


@pytest.fixture(params=sorted(STORE_BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return STORE_BACKENDS[request.param](tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Store]:
    opened = backend.open()
    yield opened
    await opened.close()
