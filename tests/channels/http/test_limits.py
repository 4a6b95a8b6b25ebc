"""Body size, rate limits, CORS and trace ids around every route (DESIGN.md, HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from hermes.channels.http.limits import InProcessRateLimiter
from hermes.config.server import RateLimitConfig, ServerConfig
from tests.channels.http.serve_fixtures import ADMIN_KEY, ALICE_KEY, KEYS, bearer, client, served

SMALL = ServerConfig(max_body_bytes=2048)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_limiter_allows_per_minute_requests_then_says_when_to_retry() -> None:
    clock = Clock()
    limiter = InProcessRateLimiter(3, clock=clock)
    assert [limiter.hit("a").allowed for _ in range(3)] == [True, True, True]
    refused = limiter.hit("a")
    assert not refused.allowed
    assert refused.retry_after == 20
    assert limiter.hit("b").allowed  # scopes are counted apart
    clock.now += 20
    assert limiter.hit("a").allowed
    assert not limiter.hit("a").allowed


def test_the_limiter_forgets_scopes_whose_window_has_passed() -> None:
    clock = Clock()
    limiter = InProcessRateLimiter(60, clock=clock)
    for n in range(100):
        limiter.hit(f"caller-{n}")
    clock.now += 120
    limiter.hit("late")
    assert len(limiter._tat) == 1


async def test_a_body_over_the_declared_limit_is_413_before_the_route_runs(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, SMALL) as app, client(app) as http:
        answer = await http.post("/test/echo", content=b"x" * 4096)
        fits = await http.post("/test/echo", content=b"x" * 2048)
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "payload_too_large"
    assert "x-hermes-trace-id" in answer.headers
    assert fits.json() == {"bytes": 2048}


async def test_a_streamed_body_is_counted_and_refused_once_over_the_limit(
    tmp_path: Path,
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            yield b"y" * 1000

    async with served(tmp_path, SMALL) as app, client(app) as http:
        answer = await http.post("/test/echo", content=chunks())
    assert answer.status_code == 413
    assert answer.json()["error"]["type"] == "payload_too_large"


async def test_over_the_rate_limit_a_key_gets_429_with_retry_after(tmp_path: Path) -> None:
    settings = ServerConfig(api_keys=KEYS, rate_limit=RateLimitConfig(per_minute=2))
    async with served(tmp_path, settings) as app, client(app) as http:
        statuses = [
            (await http.get("/test/act", headers=bearer(ALICE_KEY))).status_code for _ in range(2)
        ]
        refused = await http.get("/test/act", headers=bearer(ALICE_KEY))
        other_key = await http.get("/test/act", headers=bearer(ADMIN_KEY))
        probe = await http.get("/healthz")
    assert statuses == [200, 200]
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    assert refused.json()["error"]["type"] == "rate_limited"
    assert other_key.status_code == 200
    assert probe.status_code != 429


async def test_anonymous_callers_are_limited_per_client_address(tmp_path: Path) -> None:
    settings = ServerConfig(rate_limit=RateLimitConfig(per_minute=1))
    async with (
        served(tmp_path, settings) as app,
        client(app, "127.0.0.2") as first,
        client(app, "127.0.0.3") as second,
    ):
        assert (await first.get("/test/act")).status_code == 200
        assert (await first.get("/test/act")).status_code == 429
        assert (await second.get("/test/act")).status_code == 200


async def test_without_cors_origins_no_cors_headers_are_sent(tmp_path: Path) -> None:
    async with served(tmp_path) as app, client(app) as http:
        answer = await http.get("/test/act", headers={"Origin": "http://ok.example"})
    assert "access-control-allow-origin" not in answer.headers


async def test_cors_allows_the_configured_origins_only(tmp_path: Path) -> None:
    settings = ServerConfig(cors_origins=("http://ok.example",))
    preflight = {"Access-Control-Request-Method": "POST"}
    async with served(tmp_path, settings) as app, client(app) as http:
        allowed = await http.options(
            "/test/echo", headers={**preflight, "Origin": "http://ok.example"}
        )
        denied = await http.options(
            "/test/echo", headers={**preflight, "Origin": "http://evil.example"}
        )
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://ok.example"
    assert denied.status_code == 400
    assert "access-control-allow-origin" not in denied.headers


async def test_the_trace_id_comes_from_traceparent_or_x_request_id_else_is_new(
    tmp_path: Path,
) -> None:
    w3c = "0af7651916cd43dd8448eb211c80319c"
    async with served(tmp_path) as app, client(app) as http:
        parent = await http.get(
            "/test/trace", headers={"traceparent": f"00-{w3c}-b7ad6b7169203331-01"}
        )
        request_id = await http.get("/test/trace", headers={"X-Request-Id": "req-12345678"})
        bad = await http.get("/test/trace", headers={"X-Request-Id": "bad id!"})
        missing = await http.get("/nothing-here")
    assert parent.json()["trace_id"] == w3c == parent.headers["x-hermes-trace-id"]
    assert request_id.headers["x-hermes-trace-id"] == "req-12345678"
    assert len(bad.headers["x-hermes-trace-id"]) == 32
    assert bad.json()["trace_id"] == bad.headers["x-hermes-trace-id"]
    assert missing.status_code == 404
    assert "x-hermes-trace-id" in missing.headers
