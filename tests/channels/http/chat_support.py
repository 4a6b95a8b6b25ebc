"""Shared pieces of the chat tests: a scripted agent with a slow tool, an SSE parser, and a
real uvicorn server on 127.0.0.1 in the test's own event loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from hermes import Agent, tool
from hermes.channels.cli.serve_cmd import bind
from hermes.channels.http.app import create_app
from hermes.config.server import ServerConfig
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.items import Item
from hermes.testing import FunctionModel, call, say

SLEEP = re.compile(r"sleep ([0-9.]+)")


@tool
async def slow(seconds: float) -> str:
    """Wait the given number of seconds, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds:g}"


def script(request: ModelRequest) -> ModelResponse:
    """``sleep N`` calls the slow tool once, then says done; anything else is echoed."""
    last = request.messages[-1]
    if last["role"] == "tool":
        return say("done")
    text = str(last.get("content") or "")
    found = SLEEP.search(text)
    if found is not None:
        return call("slow", {"seconds": float(found.group(1))})
    return say(f"echo: {text}")


def make_agent(db: Path, **kw: Any) -> Agent:
    return Agent(model=FunctionModel(script), tools=[slow], store=db, **kw)


@dataclass(frozen=True, slots=True)
class Sse:
    event: str
    id: int
    data: dict[str, Any]


def parse_sse(text: str) -> list[Sse]:
    """The events of a ``text/event-stream`` body (comments skipped)."""
    found: list[Sse] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            fields[name] = fields[name] + "\n" + value if name in fields else value
        if "data" in fields:
            found.append(
                Sse(fields.get("event", "message"), int(fields["id"]), json.loads(fields["data"]))
            )
    return found


class SseReader:
    """Reads the events of a streamed response as they come, in as many steps as wanted."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = response.aiter_text()
        self._buffer = ""

    async def read(self, count: int | None = None) -> list[Sse]:
        """The next ``count`` events (None: up to the end of the stream)."""
        got: list[Sse] = []
        while count is None or len(got) < count:
            while "\n\n" in self._buffer and (count is None or len(got) < count):
                block, self._buffer = self._buffer.split("\n\n", 1)
                got.extend(parse_sse(block + "\n\n"))
            if count is not None and len(got) >= count:
                break
            try:
                self._buffer += await anext(self._chunks)
            except StopAsyncIteration:
                break
        return got


async def read_events(response: httpx.Response, count: int | None = None) -> list[Sse]:
    """Events of a streamed response as they come; stops after ``count`` (None: the end)."""
    return await SseReader(response).read(count)


def client_for(agent: Agent, **settings: Any) -> httpx.AsyncClient:
    """An httpx client on ``create_app(agent, ServerConfig(**settings))`` (ASGI, no socket)."""
    app = create_app(agent, ServerConfig(**settings))
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://hermes.test", timeout=30)


async def items_of(agent: Agent, session_id: str) -> list[Item]:
    return await agent.store.read_items(session_id, after_seq=0, limit=10_000)


def assert_consistent(items: list[Item]) -> None:
    """Every stored tool_call has exactly one tool_result after it."""
    for c in (i for i in items if i.kind == "tool_call"):
        results = [i for i in items if i.kind == "tool_result" and i.tool_call_id == c.tool_call_id]
        assert len(results) == 1, f"call {c.tool_call_id} has {len(results)} results"
        assert results[0].seq > c.seq


async def until(predicate: Callable[[], bool], limit_s: float = 10.0) -> None:
    """Poll ``predicate`` until it holds (at most ``limit_s``)."""
    async with asyncio.timeout(limit_s):
        while True:
            if predicate():
                return
            await asyncio.sleep(0.01)


@asynccontextmanager
async def live_server(app: FastAPI) -> AsyncIterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 (a free port) in this loop; its base URL."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        await until(lambda: server.started)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        async with asyncio.timeout(15):
            await task
        sock.close()
