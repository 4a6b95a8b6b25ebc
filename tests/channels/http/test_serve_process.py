"""A real ``hermes serve`` process with a configured (fake, slow) model on 127.0.0.1: two
requests to one session never interleave, under both busy policies, and SIGTERM mid-turn
lets the turn finish or checkpoints it — the process exits 0 within 20 s and the session is
whole (DESIGN.md, HTTP "Busy sessions" and "More CLI")."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.channels.http.serve_fixtures import HERMES, Process, serving
from tests.models.fake_chat_server import FakeChatServer, Reply

SESSION = "serve-proc-0001"


def _answer(delay: float) -> Any:
    def responder(body: dict[str, Any]) -> Reply:
        last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        return Reply.text(f"answer to {last}", delay=delay)

    return responder


@pytest.fixture
def slow_model() -> Iterator[FakeChatServer]:
    with FakeChatServer(responder=_answer(1.0)) as server:
        yield server


def _config(model: FakeChatServer, server_yaml: str = "") -> str:
    return (
        f"model: {{base_url: {model.base_url}, model: fake, max_retries: 0, timeout: 30}}\n"
        f"server:\n  shutdown_grace_seconds: 5\n{server_yaml}"
    )


async def _chat(url: str, message: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        body = {"session_id": SESSION, "user_id": "u1", "message": message}
        return await client.post("/v1/chat", json=body)


def _texts(url: str) -> list[tuple[str, str]]:
    page = httpx.get(f"{url}/v1/sessions/{SESSION}", timeout=10).json()
    return [(i["role"], i["content"]) for i in page["items"] if i["kind"] == "text"]


async def _two_at_once(proc: Process) -> list[httpx.Response]:
    first = asyncio.create_task(_chat(proc.url, "first"))
    await asyncio.sleep(0.3)  # the first turn holds the session (its model call is slow)
    second = asyncio.create_task(_chat(proc.url, "second"))
    return [await first, await second]


def test_two_requests_to_one_session_queue_and_never_interleave(
    tmp_path: Path, slow_model: FakeChatServer
) -> None:
    with serving(tmp_path, _config(slow_model)) as proc:
        first, second = asyncio.run(_two_at_once(proc))
        assert first.status_code == 200, first.text
        assert second.status_code == 200, second.text
        assert first.json()["reply"] == "answer to first"
        assert second.json()["reply"] == "answer to second"
        assert _texts(proc.url) == [
            ("user", "first"),
            ("assistant", "answer to first"),
            ("user", "second"),
            ("assistant", "answer to second"),
        ]


def test_busy_reject_refuses_the_second_request_with_409_and_stores_nothing_of_it(
    tmp_path: Path, slow_model: FakeChatServer
) -> None:
    with serving(tmp_path, _config(slow_model, "  busy: reject\n")) as proc:
        first, second = asyncio.run(_two_at_once(proc))
        assert first.status_code == 200, first.text
        assert second.status_code == 409, second.text
        assert second.json()["error"]["type"] == "session_busy"
        assert _texts(proc.url) == [("user", "first"), ("assistant", "answer to first")]


def _sigterm_mid_turn(proc: Process, model: FakeChatServer) -> tuple[httpx.Response, float]:
    async def run() -> tuple[httpx.Response, float]:
        turn = asyncio.create_task(_chat(proc.url, "long one"))
        for _ in range(400):  # until the model has the turn's request
            if model.requests:
                break
            await asyncio.sleep(0.025)
        assert model.requests, "the turn never reached the model"
        proc.proc.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        return await turn, stopped

    return asyncio.run(run())


@pytest.mark.parametrize(("delay", "finished"), [(1.5, True), (12.0, False)])
def test_sigterm_mid_turn_finishes_or_checkpoints_and_exits_0_within_20_s(
    tmp_path: Path, delay: float, finished: bool
) -> None:
    """A turn shorter than the 5 s grace finishes; a longer one is checkpointed: its client
    gets the run object with an error, and the stored session is whole and at rest."""
    with FakeChatServer(responder=_answer(delay)) as model:
        with serving(tmp_path, _config(model)) as proc:
            response, stopped = _sigterm_mid_turn(proc, model)
            code = proc.proc.wait(timeout=25)
            took = time.monotonic() - stopped
        assert code == 0
        assert took < 20
        assert response.status_code in (200, 503), response.text
        data = response.json()
        if finished:
            assert response.status_code == 200
            assert data["reply"] == "answer to long one"
            assert "error" not in data
        else:
            assert "error" in data, data
    # The store, opened again by a new process: the turn is there, whole, at rest.
    with (
        FakeChatServer(responder=_answer(0.0)) as model,
        serving(tmp_path, _config(model)) as again,
    ):
        texts = _texts(again.url)
        state = httpx.get(f"{again.url}/v1/sessions/{SESSION}", timeout=10).json()["state"]
    assert texts[0] == ("user", "long one")
    if finished:
        assert texts == [("user", "long one"), ("assistant", "answer to long one")]
    assert state in ("idle", "awaiting_feedback")  # at rest, not mid-turn


def test_hermes_trace_shows_the_http_request_as_a_step(tmp_path: Path) -> None:
    """The chain of one request starts at the HTTP edge: its method, path, status and ms."""
    request_id = "req-trace-http-0001"
    with serving(tmp_path, "") as proc:
        answer = httpx.post(
            f"{proc.url}/v1/chat",
            json={"session_id": SESSION, "message": "15乘以27等于多少？"},
            headers={"X-Request-Id": request_id},
            timeout=30,
        )
        assert answer.headers["X-Hermes-Trace-Id"] == request_id
    shown = subprocess.run(
        [str(HERMES), "--config", str(tmp_path / "hermes.yaml"), "trace", request_id, "--json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    steps = json.loads(shown.stdout)["steps"]
    http = [s for s in steps if s["event"] == "http_request"]
    assert len(http) == 1, steps
    assert http[0]["ms"] is not None
    assert http[0]["detail"]["status"] == 200
    assert http[0]["detail"]["path"] == "/v1/chat"
    assert any(s["event"] == "turn_finished" for s in steps), steps
