"""``Idempotency-Key`` through real HTTP (DESIGN.md, "Public contracts", HTTP): a small route of
the test's own wrapped in ``hermes.channels.http.idempotency.idempotent``, the error shape of
``create_app`` (``install_error_handlers``), real SQLite files (``requests.db``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import httpx
import pytest
from fastapi import Depends, FastAPI, Request

from hermes import Agent
from hermes.channels.http.app import create_app
from hermes.channels.http.auth import CallerDep
from hermes.channels.http.errors import ApiError, install_error_handlers
from hermes.channels.http.idempotency import (
    KEY_HEADER,
    PART,
    REPLAYED_HEADER,
    close_request_keys,
    idempotent,
    request_keys,
)
from hermes.channels.http.request_keys import RequestKeys, request_scope
from hermes.channels.http.state import Service, service
from hermes.config.server import ApiKeyConfig, ServerConfig
from hermes.storage.sqlite.request_keys import SQLiteRequestKeys
from hermes.testing import ScriptedModel, say

ROUTE = "POST /v1/echo"


@dataclass
class EchoRoute:
    """What the test's route does: count its runs, optionally wait for a gate, answer."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    gate: asyncio.Event | None = None
    answer: int = 200
    refuse: ApiError | None = None
    wait: float = 10.0
    lease: float = 5.0
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.runs.append(payload)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.refuse is not None:
            raise self.refuse
        return self.answer, {"run": len(self.runs), "echo": payload, "reply": "好的 / ok"}


def add_echo_route(app: FastAPI, echo: EchoRoute) -> None:
    """``POST /v1/echo``: ``echo.run`` wrapped in ``idempotent`` (as the chat route will be)."""

    @app.post("/v1/echo")
    async def _echo(
        request: Request, svc: Annotated[Service, Depends(service)], caller: CallerDep
    ) -> Any:
        payload = await request.json()
        return await idempotent(
            request, svc, caller, ROUTE, lambda: echo.run(payload),
            user_id=payload.get("user_id"), wait=echo.wait, lease=echo.lease,
        )  # fmt: skip


def make_app(keys: RequestKeys | None, echo: EchoRoute, settings: ServerConfig | None = None,
             agent: Agent | None = None) -> FastAPI:  # fmt: skip
    app = FastAPI()
    install_error_handlers(app)
    svc = Service(agent=cast(Any, agent), settings=settings or ServerConfig())
    if keys is not None:
        svc.parts[PART] = keys
    app.state.hermes = svc
    add_echo_route(app, echo)
    return app


def client(app: FastAPI) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=30.0)


@pytest.fixture
async def keys(tmp_path: Path) -> AsyncIterator[SQLiteRequestKeys]:
    opened = SQLiteRequestKeys(tmp_path / "requests.db")
    yield opened
    await opened.close()


def _post(http: httpx.AsyncClient, body: Any, key: str | None = "k-1", **headers: str):
    if key is not None:
        headers[KEY_HEADER] = key
    return http.post("/v1/echo", json=body, headers=headers)


# -- replay and conflict ---------------------------------------------------------------------


async def test_without_a_key_every_request_runs(keys: SQLiteRequestKeys):
    echo = EchoRoute()
    async with client(make_app(keys, echo)) as http:
        for _ in range(2):
            answer = await _post(http, {"message": "hi"}, key=None)
            assert answer.status_code == 200
            assert REPLAYED_HEADER not in answer.headers
    assert len(echo.runs) == 2


async def test_a_retry_with_the_same_key_and_body_replays_the_first_result(
    keys: SQLiteRequestKeys,
):
    echo = EchoRoute()
    async with client(make_app(keys, echo)) as http:
        first = await _post(http, {"message": "今天的报警", "session_id": "s-1"})
        # The same JSON with its keys in another order and other whitespace is the same body.
        raw = b'{ "session_id" : "s-1",  "message": "\\u4eca\\u5929\\u7684\\u62a5\\u8b66" }'
        again = await http.post(
            "/v1/echo", content=raw,
            headers={KEY_HEADER: "k-1", "content-type": "application/json"},
        )  # fmt: skip
    assert first.status_code == again.status_code == 200
    assert REPLAYED_HEADER not in first.headers
    assert again.headers[REPLAYED_HEADER] == "true"
    assert again.json() == first.json() == {
        "run": 1, "echo": {"message": "今天的报警", "session_id": "s-1"}, "reply": "好的 / ok",
    }  # fmt: skip
    assert len(echo.runs) == 1


async def test_the_same_key_with_another_body_is_409_idempotency_conflict(
    keys: SQLiteRequestKeys,
):
    echo = EchoRoute()
    async with client(make_app(keys, echo)) as http:
        await _post(http, {"message": "one"})
        clash = await _post(http, {"message": "two"})
    assert clash.status_code == 409
    assert clash.json()["error"]["type"] == "idempotency_conflict"
    assert len(echo.runs) == 1


@pytest.mark.parametrize("bad", ["", "k" * 256, "ключ"])
async def test_a_malformed_key_is_400(keys: SQLiteRequestKeys, bad: str):
    echo = EchoRoute()
    async with client(make_app(keys, echo)) as http:
        answer = await http.post(
            "/v1/echo", json={"message": "hi"}, headers={KEY_HEADER: bad.encode()}
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "invalid_idempotency_key"
    assert echo.runs == []


async def test_keys_are_scoped_to_the_caller(keys: SQLiteRequestKeys):
    settings = ServerConfig(
        api_keys=(
            ApiKeyConfig(key="alice-key-0123456789", user="alice"),
            ApiKeyConfig(key="bob-key-0123456789ab", user="bob"),
        )
    )
    echo = EchoRoute()
    async with client(make_app(keys, echo, settings)) as http:
        for who in ("alice-key-0123456789", "bob-key-0123456789ab"):
            answer = await _post(http, {"message": "hi"}, Authorization=f"Bearer {who}")
            assert (answer.status_code, REPLAYED_HEADER in answer.headers) == (200, False)
    assert len(echo.runs) == 2


# -- refusals are not stored -----------------------------------------------------------------


async def test_a_refused_first_attempt_is_forgotten_and_a_retry_runs(keys: SQLiteRequestKeys):
    echo = EchoRoute(refuse=ApiError(409, "session_busy", "busy / 忙"))
    async with client(make_app(keys, echo)) as http:
        refused = await _post(http, {"message": "hi"})
        assert (refused.status_code, refused.json()["error"]["type"]) == (409, "session_busy")
        echo.refuse = None
        again = await _post(http, {"message": "another body is fine now"})
    assert (again.status_code, REPLAYED_HEADER in again.headers) == (200, False)
    assert len(echo.runs) == 2


async def test_an_answer_that_is_not_2xx_is_not_stored(keys: SQLiteRequestKeys):
    echo = EchoRoute(answer=503)
    async with client(make_app(keys, echo)) as http:
        assert (await _post(http, {"message": "hi"})).status_code == 503
        echo.answer = 200
        assert (await _post(http, {"message": "hi"})).json()["run"] == 2


# -- a retry while the first runs ------------------------------------------------------------


async def test_a_concurrent_retry_waits_for_the_first_and_replays_it(keys: SQLiteRequestKeys):
    echo = EchoRoute(gate=asyncio.Event())
    async with client(make_app(keys, echo)) as http:
        first = asyncio.create_task(_post(http, {"message": "hi"}))
        await asyncio.wait_for(echo.started.wait(), 10)
        second = asyncio.create_task(_post(http, {"message": "hi"}))
        await asyncio.sleep(0.3)
        assert not second.done()  # waiting, not refused
        echo.gate.set()  # type: ignore[union-attr]
        one, two = await first, await second
    assert one.status_code == two.status_code == 200
    assert two.headers[REPLAYED_HEADER] == "true"
    assert two.json() == one.json()
    assert len(echo.runs) == 1


async def test_a_retry_that_waited_too_long_is_409_in_progress_with_retry_after(
    keys: SQLiteRequestKeys,
):
    echo = EchoRoute(gate=asyncio.Event(), wait=0.3)
    async with client(make_app(keys, echo)) as http:
        first = asyncio.create_task(_post(http, {"message": "hi"}))
        await asyncio.wait_for(echo.started.wait(), 10)
        busy = await _post(http, {"message": "hi"})
        echo.gate.set()  # type: ignore[union-attr]
        assert (await first).status_code == 200
    assert busy.status_code == 409
    assert busy.json()["error"]["type"] == "idempotency_in_progress"
    assert int(busy.headers["Retry-After"]) >= 1


async def test_a_running_attempt_renews_its_lease_so_a_retry_does_not_run_it_again(
    keys: SQLiteRequestKeys, tmp_path: Path
):
    """Lease 0.3 s, a run of 1.2 s: without the heartbeat the retry (another worker on the
    same file) would take the key over and run it a second time."""
    echo = EchoRoute(gate=asyncio.Event(), lease=0.3)
    other = SQLiteRequestKeys(tmp_path / "requests.db")
    try:
        async with client(make_app(keys, echo)) as one, client(make_app(other, echo)) as two:
            first = asyncio.create_task(_post(one, {"message": "hi"}))
            await asyncio.wait_for(echo.started.wait(), 10)
            retry = asyncio.create_task(_post(two, {"message": "hi"}))
            await asyncio.sleep(1.2)
            echo.gate.set()  # type: ignore[union-attr]
            assert (await first).status_code == 200
            again = await retry
    finally:
        await other.close()
    assert again.headers[REPLAYED_HEADER] == "true"
    assert len(echo.runs) == 1


async def test_a_first_attempt_whose_worker_died_is_run_again(keys: SQLiteRequestKeys):
    """A worker claimed the key and died (nothing renews its 0.5 s lease): the retry waits,
    then runs it itself."""
    dead = await keys.claim(request_scope("anonymous", ROUTE), "k-1",
                            body_hash=_hash({"message": "hi"}), lease=0.5)  # fmt: skip
    assert dead.outcome == "new"
    echo = EchoRoute()
    async with client(make_app(keys, echo)) as http:
        answer = await _post(http, {"message": "hi"})
    assert (answer.status_code, REPLAYED_HEADER in answer.headers) == (200, False)
    stored = await keys.get(request_scope("anonymous", ROUTE), "k-1")
    assert stored is not None
    assert (stored.status, stored.attempts, stored.response) == ("done", 2, answer.json())


async def test_a_client_that_leaves_does_not_lose_the_record(keys: SQLiteRequestKeys):
    echo = EchoRoute(gate=asyncio.Event())
    async with client(make_app(keys, echo)) as http:
        first = asyncio.create_task(_post(http, {"message": "hi"}))
        await asyncio.wait_for(echo.started.wait(), 10)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        echo.gate.set()  # type: ignore[union-attr]
        again = await _post(http, {"message": "hi"})
    assert again.headers[REPLAYED_HEADER] == "true"
    assert len(echo.runs) == 1


# -- durable -----------------------------------------------------------------------------------


async def test_a_new_app_over_the_same_file_replays_after_a_restart(tmp_path: Path):
    echo = EchoRoute()
    first_keys = SQLiteRequestKeys(tmp_path / "requests.db")
    async with client(make_app(first_keys, echo)) as http:
        first = await _post(http, {"message": "hi", "user_id": "alice"})
    await first_keys.close()
    reopened = SQLiteRequestKeys(tmp_path / "requests.db")
    try:
        async with client(make_app(reopened, EchoRoute())) as http:
            again = await _post(http, {"message": "hi", "user_id": "alice"})
        assert again.headers[REPLAYED_HEADER] == "true"
        assert again.json() == first.json()
        assert await reopened.forget_user("alice") == 1  # user erasure reaches the reply
    finally:
        await reopened.close()


async def test_the_service_opens_requests_db_beside_the_agents_store(tmp_path: Path):
    agent = Agent(model=ScriptedModel([say("hi")]), store=tmp_path / ".hermes" / "hermes.db")
    try:
        app = make_app(None, EchoRoute(), agent=agent)
        async with client(app) as http:
            assert (await _post(http, {"message": "hi"})).status_code == 200
        svc: Service = app.state.hermes
        assert isinstance(request_keys(svc), SQLiteRequestKeys)
        assert (tmp_path / ".hermes" / "requests.db").exists()
        await close_request_keys(svc)
        assert PART not in svc.parts
    finally:
        await agent.aclose()


async def test_over_create_app_erasing_a_user_deletes_the_replies_kept_for_them(tmp_path: Path):
    """The real app (its error handlers, ``DELETE /v1/users/{id}``) with the test's route on it:
    the reply kept for a retry is personal data, erased with the user."""
    agent = Agent(model=ScriptedModel([say("hi")]), store=tmp_path / ".hermes" / "hermes.db")
    echo = EchoRoute()
    app = create_app(agent)
    add_echo_route(app, echo)
    try:
        async with client(app) as http:
            body = {"message": "hi", "user_id": "alice"}
            assert (await _post(http, body)).status_code == 200
            assert (await _post(http, body)).headers[REPLAYED_HEADER] == "true"
            clash = await _post(http, {**body, "message": "other"})
            assert clash.status_code == 409
            assert set(clash.json()["error"]) == {"type", "message"}
            erased = await http.delete("/v1/users/alice")
            assert (erased.status_code, erased.json()["requests"]) == (200, 1)
            again = await _post(http, body)
        assert (again.status_code, REPLAYED_HEADER in again.headers) == (200, False)
        assert len(echo.runs) == 2
        await close_request_keys(app.state.hermes)
    finally:
        await agent.aclose()


def _hash(body: dict[str, Any]) -> str:
    from hermes.channels.http.request_keys import request_body_hash

    return request_body_hash(body)
