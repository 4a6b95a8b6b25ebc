"""Event dedupe is durable: a real ``hermes serve`` process accepts an event, is stopped
(SIGTERM) and started again on the same data directory, and the same delivery is then a
duplicate with the first trace id — nothing runs twice (DESIGN.md, HTTP Events)."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import httpx

from hermes.storage.sqlite.event_dedupe import SQLiteEventDedupe
from hermes.storage.sqlite.sessions import SQLiteStore
from tests.channels.http.serve_fixtures import serving

CONFIG = """\
logging: {file: null}
webhooks:
  routes:
    calc: {session_id: ops-calc-events}
"""
EVENT = {"msg_id": "calc-001", "type": "request", "content": "15乘以27等于多少？"}


def _status(data: Path) -> str | None:
    async def read() -> str | None:
        dedupe = SQLiteEventDedupe(data / "events.db")
        try:
            found = await dedupe.get("calc", "calc-001")
            return None if found is None else found.status
        finally:
            await dedupe.close()

    return asyncio.run(read())


def _texts(data: Path) -> list[str]:
    async def read() -> list[str]:
        store = SQLiteStore(data / "hermes.db")
        try:
            items = await store.read_items("ops-calc-events", after_seq=0, limit=100)
            return [i.content for i in items if i.kind == "text"]
        finally:
            await store.close()

    return asyncio.run(read())


def test_a_delivery_is_a_duplicate_after_a_restart(tmp_path):
    with serving(tmp_path, CONFIG) as first:
        answer = httpx.post(f"{first.url}/v1/events/calc", json=EVENT, timeout=30)
        assert answer.status_code == 202, answer.text
        accepted = answer.json()
        deadline = time.monotonic() + 20
        while _status(tmp_path) != "done" and time.monotonic() < deadline:
            time.sleep(0.05)
        first.proc.send_signal(signal.SIGTERM)
        assert first.proc.wait(timeout=20) == 0
    assert accepted["status"] == "accepted"
    with serving(tmp_path, CONFIG) as second:
        again = httpx.post(f"{second.url}/v1/events/calc", json=EVENT, timeout=30)
        other = httpx.post(
            f"{second.url}/v1/events/calc", json={**EVENT, "content": "16乘以2"}, timeout=30
        )
    assert again.status_code == 202
    assert again.json() == {**accepted, "status": "duplicate"}
    assert other.status_code == 409
    assert _texts(tmp_path) == ["15乘以27等于多少？", "15*27 = 405"]


SLOW_TOOL = """\
import asyncio

from hermes import tool


@tool
async def slow_sleep(seconds: float = 2.0) -> str:
    \"\"\"Wait the given number of seconds.\"\"\"
    await asyncio.sleep(seconds)
    return "slept"
"""
SLOW_INTENT = """\
intents:
  - name: slow_job
    description: {en: wait a while}
    patterns: ['^wait a while$']
    tool: slow_sleep
    args: {seconds: 2}
    reply: {en: done waiting, zh: 等待完成}
"""
SLOW_CONFIG = """\
logging: {file: null}
tools: {plugins_dir: plugins}
brain: {intents: [slow.yaml]}
webhooks:
  routes:
    slow: {session_id: ops-slow-events, handler: {intent: slow_job}}
"""


def test_sigterm_while_an_event_is_processed_lets_it_finish_and_records_it(tmp_path):
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "slow.py").write_text(SLOW_TOOL, "utf-8")
    (tmp_path / "slow.yaml").write_text(SLOW_INTENT, "utf-8")
    event = {"msg_id": "slow-001", "type": "job", "content": "an event the intent handles"}
    with serving(tmp_path, SLOW_CONFIG) as server:
        answer = httpx.post(f"{server.url}/v1/events/slow", json=event, timeout=30)
        assert answer.json()["status"] == "accepted", answer.text
        server.proc.send_signal(signal.SIGTERM)  # while the 2-second tool call runs
        assert server.proc.wait(timeout=20) == 0

    async def read() -> tuple[str | None, list[str]]:
        dedupe = SQLiteEventDedupe(tmp_path / "events.db")
        store = SQLiteStore(tmp_path / "hermes.db")
        try:
            found = await dedupe.get("slow", "slow-001")
            items = await store.read_items("ops-slow-events", after_seq=0, limit=100)
            return (None if found is None else found.status), [i.content for i in items]
        finally:
            await dedupe.close()
            await store.close()

    status, contents = asyncio.run(read())
    assert status == "done"
    assert contents[0] == "an event the intent handles"
    assert contents[-1] == "done waiting"
