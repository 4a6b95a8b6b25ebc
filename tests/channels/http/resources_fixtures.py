"""What the tests of the session, approval and memory routes share: a real agent on a SQLite
file and a memory directory in ``tmp_path``, its app, and HTTP clients over it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.channels.http.state import Service
from hermes.config.server import ApiKeyConfig, ServerConfig
from hermes.models.base import Model

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef00"
ADMIN_KEY = "admin-key-0123456789abcdef"

KEYED = ServerConfig(
    api_keys=(
        ApiKeyConfig(key=ALICE_KEY, user="alice"),
        ApiKeyConfig(key=BOB_KEY, user="bob"),
        ApiKeyConfig(key=ADMIN_KEY, user="root", roles=("admin",)),
    )
)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


class Served:
    """An agent, its app and service, and a client on it."""

    def __init__(self, agent: Agent, settings: ServerConfig | None) -> None:
        self.agent = agent
        self.app = create_app(agent, settings)
        self.svc: Service = self.app.state.hermes
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://hermes.test"
        )


ServeFactory = Callable[..., Any]


@pytest.fixture
def serve(tmp_path: Path) -> Callable[..., Any]:
    """``async with serve(model, tools, settings=…, memory=True) as s``: a served agent on
    this test's files, closed at the end."""

    @asynccontextmanager
    async def _serve(
        model: Model | None = None,
        tools: list[Any] | None = None,
        *,
        settings: ServerConfig | None = None,
        memory: bool = True,
    ) -> AsyncIterator[Served]:
        agent = Agent(
            model=model,
            tools=tools or [],
            store=tmp_path / "hermes.db",
            memory=(tmp_path / "memory") if memory else None,
        )
        served = Served(agent, settings)
        try:
            async with served.client:
                yield served
        finally:
            await agent.aclose()

    return _serve
