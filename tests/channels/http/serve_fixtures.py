"""What the auth, limits and ``hermes serve`` tests share: an app over a real agent with a
tiny test-only router, ASGI clients on it, and a real ``hermes serve`` subprocess."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import APIRouter, FastAPI, Request

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.channels.http.auth import CallerDep, acting_user
from hermes.config.server import ApiKeyConfig, ServerConfig
from hermes.testing import ScriptedModel, say

ALICE_KEY = "alice-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
KEYS = (
    ApiKeyConfig(key=ALICE_KEY, user="alice"),
    ApiKeyConfig(key=ADMIN_KEY, user="root", roles=("admin",)),
)
HERMES = Path(sys.executable).with_name("hermes")
READY = re.compile(r"Hermes serving on http://(\S+):(\d+) \(OpenAPI: /docs\)")


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def probe_router() -> APIRouter:
    """Test-only routes: who am I acting as, echo a body's size, the request's trace id."""
    router = APIRouter()

    @router.get("/test/act")
    async def act(caller: CallerDep, user_id: str | None = None) -> dict[str, Any]:
        return {"user": acting_user(caller, user_id), "admin": caller.admin}

    @router.post("/test/echo")
    async def echo(request: Request) -> dict[str, Any]:
        return {"bytes": len(await request.body())}

    @router.get("/test/trace")
    async def trace(request: Request) -> dict[str, Any]:
        return {"trace_id": request.state.trace_id}

    return router


@asynccontextmanager
async def served(tmp_path: Path, settings: ServerConfig | None = None) -> AsyncIterator[FastAPI]:
    """An app over a real agent (SQLite in ``tmp_path``) with :func:`probe_router`."""
    agent = Agent(model=ScriptedModel([say("ok")]), store=tmp_path / "hermes.db")
    try:
        app = create_app(agent, settings)
        app.include_router(probe_router())
        yield app
    finally:
        await agent.aclose()


def client(app: FastAPI, address: str = "127.0.0.1") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=(address, 50000))
    return httpx.AsyncClient(transport=transport, base_url="http://hermes.test")


class Process:
    """A running ``hermes serve``: its process, and the host and port of its ready line."""

    def __init__(self, proc: subprocess.Popen[str], host: str, port: int) -> None:
        self.proc = proc
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def write_config(tmp_path: Path, server_yaml: str) -> Path:
    path = tmp_path / "hermes.yaml"
    path.write_text(f"store: {{path: {tmp_path / 'hermes.db'}}}\n{server_yaml}", "utf-8")
    return path


def run_serve(config: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.Popen(
        [str(HERMES), "--config", str(config), "serve", *args],
        cwd=config.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_ready(proc: subprocess.Popen[str], timeout: float = 30.0) -> tuple[str, int]:
    """The host and port of the ready line (stderr), within ``timeout`` seconds."""
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        match = READY.search(line)
        if match:
            return match.group(1), int(match.group(2))
    proc.kill()
    raise AssertionError(f"no ready line; stderr: {''.join(seen)!r}")


@contextmanager
def serving(tmp_path: Path, server_yaml: str, *args: str) -> Iterator[Process]:
    """``hermes serve --port 0`` on 127.0.0.1 with ``server_yaml``; stopped (SIGKILL if it
    hangs) at the end."""
    config = write_config(tmp_path, server_yaml)
    proc = run_serve(config, "--host", "127.0.0.1", "--port", "0", *args)
    try:
        host, port = wait_ready(proc)
        yield Process(proc, host, port)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
