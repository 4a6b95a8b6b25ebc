"""SIGTERM mid-turn (DESIGN.md, "More CLI": stop within 20 s, finishing or checkpointing
running turns): a real server process (``serve_app.py``) on a SQLite file gets SIGTERM while
one turn runs a long tool and another a short one. The short one finishes; the long one is
checkpointed — its stream ends with its reply, every tool call has a result, the state is
idle — and the process exits on its own, in time."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.channels.http.chat_support import SseReader, assert_consistent, items_of, make_agent

ROOT = Path(__file__).resolve().parents[3]
GRACE_S = 1.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    db = tmp_path / "hermes.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.channels.http.serve_app", str(db), str(GRACE_S)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        assert port.isdigit(), f"the server printed {port!r}"
        yield proc, f"http://127.0.0.1:{port}", db
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


async def _up(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=2) as client:
        for _ in range(200):
            try:
                await client.get("/v1/turns/none/events")
                return
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    pytest.fail("the server did not come up")


async def test_sigterm_mid_turn_checkpoints_and_exits(
    server: tuple[subprocess.Popen[str], str, Path],
) -> None:
    proc, url, db = server
    await _up(url)
    long_body = {"message": "sleep 30", "session_id": "term-00001", "stream": True}
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        client.stream("POST", "/v1/chat", json=long_body) as response,
    ):
        reader = SseReader(response)
        head: list[str] = []
        while "tool_call_started" not in head:
            head += [e.event for e in await reader.read(1)]
        short = asyncio.create_task(
            client.post("/v1/chat", json={"message": "sleep 0.3", "session_id": "term-00002"})
        )
        await asyncio.sleep(0.1)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest = await reader.read()
        short_reply = await short
    assert rest[-1].event == "reply", rest
    assert rest[-1].data["error"]["type"] == "cancelled"
    assert short_reply.status_code == 200
    assert short_reply.json()["reply"] == "done"
    code = await asyncio.to_thread(proc.wait, 20)
    assert time.monotonic() - sent < 20
    assert code == 0
    assert proc.stdout is not None
    assert "closed" in proc.stdout.read()

    agent = make_agent(db)
    try:
        record = await agent.store.load_session("term-00001")
        assert record is not None
        assert record.state.fsm_state == "idle"
        items = await items_of(agent, "term-00001")
        assert_consistent(items)
        results = [i for i in items if i.kind == "tool_result"]
        assert len(results) == 1
        assert "interrupt" in results[0].content.lower()
    finally:
        await agent.aclose()
