"""What the event tests share: a configuration from YAML, a real uvicorn server over an agent
on SQLite files in ``tmp_path``, signing, and reading what the session stored."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from hermes import Agent
from hermes.channels.dedupe import Delivery
from hermes.channels.http.app import create_app
from hermes.channels.http.signatures import sign
from hermes.config import LoadedConfig, load_config
from hermes.models.base import Model, ModelRequest, ModelResponse
from hermes.session.items import Item
from hermes.storage.sqlite.event_dedupe import SQLiteEventDedupe
from hermes.testing import FunctionModel, say
from tests.channels.http.chat_support import live_server

SECRET = "webhook-secret-for-tests"


def echo(request: ModelRequest) -> ModelResponse:
    """Answers every event with what it received."""
    return say(f"handled: {request.messages[-1].get('content')}")


def loaded_config(tmp_path: Path, text: str) -> LoadedConfig:
    (tmp_path / "hermes.yaml").write_text(text, encoding="utf-8")
    return load_config(cwd=tmp_path, environ={}, home=tmp_path)


def body(msg_id: str, content: str = "数据库连接池使用率超过80%", **extra: Any) -> dict[str, Any]:
    return {"msg_id": msg_id, "type": "alert", "content": content, **extra}


def raw(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8")


def signed(content: bytes, secret: str = SECRET, *, at: float | None = None) -> dict[str, str]:
    stamp = str(int(time.time() if at is None else at))
    return {
        "Content-Type": "application/json",
        "X-Hermes-Timestamp": stamp,
        "X-Hermes-Signature": sign(secret, stamp, content),
    }


@dataclass
class Served:
    """A served app: its base URL, the agent and the data directory."""

    url: str
    agent: Agent
    data: Path

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=30)

    async def items(self, session_id: str) -> list[Item]:
        return await self.agent.store.read_items(session_id, after_seq=0, limit=10_000)

    async def delivery(self, route: str, msg_id: str) -> Delivery | None:
        dedupe = SQLiteEventDedupe(self.data / "events.db")
        try:
            return await dedupe.get(route, msg_id)
        finally:
            await dedupe.close()

    async def settled(self, route: str, msg_id: str, limit: float = 15.0) -> Delivery:
        """The delivery once its outcome is recorded."""
        async with asyncio.timeout(limit):
            while True:
                found = await self.delivery(route, msg_id)
                if found is not None and found.status != "processing":
                    return found
                await asyncio.sleep(0.02)


@asynccontextmanager
async def serve_events(
    tmp_path: Path,
    config: str = "",
    *,
    model: Model | Callable[[ModelRequest], ModelResponse] | None = None,
    tools: Iterable[Any] = (),
) -> AsyncIterator[Served]:
    """The app over an agent (``hermes.db`` in ``tmp_path``) with ``config``'s ``webhooks``,
    served by uvicorn on 127.0.0.1 while the block runs."""
    loaded = loaded_config(tmp_path, f"store: {{path: {tmp_path / 'hermes.db'}}}\n{config}")
    chosen = FunctionModel(echo) if model is None else model
    if callable(chosen) and not isinstance(chosen, Model):
        chosen = FunctionModel(chosen)
    agent = Agent(model=chosen, tools=list(tools), store=tmp_path / "hermes.db")
    try:
        app = create_app(agent, loaded.config.server, loaded=loaded)
        async with live_server(app) as url:
            yield Served(url, agent, tmp_path)
    finally:
        await agent.aclose()
