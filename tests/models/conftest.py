"""Fixtures for the model tests: a scripted local chat server and models pointed at it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from hermes.models.guard import allow_model_requests
from hermes.models.openai_compat import OpenAICompatModel
from tests.models.fake_chat_server import FakeChatServer, model_settings

ModelFactory = Callable[..., OpenAICompatModel]


@pytest.fixture(autouse=True)
def _model_requests_allowed() -> Iterator[None]:
    """These tests talk to a local fake server on purpose; the guard is restored after."""
    with allow_model_requests():
        yield


@pytest.fixture
async def make_model(server: FakeChatServer) -> AsyncIterator[ModelFactory]:
    """Build models against ``server`` (tiny retry waits, short timeouts); closed after."""
    made: list[OpenAICompatModel] = []

    def factory(**options: Any) -> OpenAICompatModel:
        settings = model_settings(server, **options)
        model = OpenAICompatModel(**settings)
        made.append(model)
        return model

    yield factory
    for model in made:
        await model.aclose()


@pytest.fixture
def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
