"""The OpenAI-compatible façade as chat front ends call it: requests exactly as Open WebUI
sends them (its forwarded user headers, ``X-OpenWebUI-Chat-Id``, ``stream_options``) and as
LibreChat sends them (the ``user`` field, the openai-node headers), and with API keys."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from hermes import Agent
from hermes.config.server import ApiKeyConfig, RateLimitConfig, ServerConfig
from hermes.testing import FunctionModel
from tests.channels.http.chat_support import items_of
from tests.channels.http.openai_support import make_agent, served, sse_chunks

OPENWEBUI_CHAT = "1f0c2c8e-5b7e-4a55-9d3e-0b6f7f3c1a2d"
OPENWEBUI_USER = "8a2b3c4d-1111-4222-8333-944455556666"


@pytest.fixture
async def scripted(tmp_path: Path) -> AsyncIterator[tuple[Agent, FunctionModel]]:
    agent, model = make_agent(tmp_path / "hermes.db")
    yield agent, model
    await agent.aclose()


def _openwebui_headers(key: str = "sk-hermes") -> dict[str, str]:
    """What Open WebUI's backend sends with ENABLE_FORWARD_USER_INFO_HEADERS (its
    ``get_headers_and_cookies``: the user's name URL-quoted, the chat id from the metadata)."""
    return {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {key}",
        "User-Agent": "Python/3.11 aiohttp/3.11.18",
        "X-OpenWebUI-User-Name": "Ada%20Lovelace",
        "X-OpenWebUI-User-Id": OPENWEBUI_USER,
        "X-OpenWebUI-User-Email": "ada@example.com",
        "X-OpenWebUI-User-Role": "user",
        "X-OpenWebUI-Chat-Id": OPENWEBUI_CHAT,
    }


def _openwebui_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A streamed request as Open WebUI builds it: its model params, content parts for the
    last user message, and ``stream_options.include_usage`` forced on."""
    return {
        "stream": True,
        "model": "hermes",
        "messages": messages,
        "temperature": 0.8,
        "max_tokens": 1024,
        "seed": 42,
        "stream_options": {"include_usage": True},
    }


async def _post_stream(url: str, headers: dict[str, str], body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=20) as client:
        return await client.post(
            f"{url}/v1/chat/completions", content=json.dumps(body), headers=headers
        )


async def test_an_open_webui_chat_is_one_session_stored_once(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, _ = scripted
    system = {"role": "system", "content": "You are a helpful assistant."}
    first = {"role": "user", "content": [{"type": "text", "text": "Hello there"}]}
    async with served(agent) as (url, _):
        one = await _post_stream(url, _openwebui_headers(), _openwebui_body([system, first]))
        assert one.status_code == 200
        assert one.headers["content-type"].startswith("text/event-stream")
        chunks = sse_chunks(one.text)
        reply = "".join(
            c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]
        )
        assert reply == "echo: Hello there (users seen: 1)"
        assert chunks[-1]["choices"] == []
        assert chunks[-1]["usage"]["total_tokens"] == 18
        history = [
            system,
            first,
            {"role": "assistant", "content": reply},
            {"role": "user", "content": [{"type": "text", "text": "And again"}]},
        ]
        two = await _post_stream(url, _openwebui_headers(), _openwebui_body(history))
    assert two.status_code == 200
    assert two.headers["X-Hermes-Session-Id"] == OPENWEBUI_CHAT
    items = await items_of(agent, OPENWEBUI_CHAT)
    assert [i.content for i in items if i.role == "user"] == ["Hello there", "And again"]
    assert [i.content for i in items if i.role == "system"] == [system["content"]]
    record = await agent.store.load_session(OPENWEBUI_CHAT)
    assert record is not None
    assert record.user_id == OPENWEBUI_USER  # an anonymous service takes the forwarded user


async def test_an_open_webui_chat_id_that_is_no_session_id_still_keeps_one_session(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    headers = {**_openwebui_headers(), "X-OpenWebUI-Chat-Id": "chat-1"}  # too short for an id
    first = [{"role": "user", "content": "hi"}]
    async with served(scripted[0]) as (url, _):
        one = await _post_stream(url, headers, _openwebui_body(first))
        again = [*first, {"role": "assistant", "content": "x"}, {"role": "user", "content": "more"}]
        two = await _post_stream(url, headers, _openwebui_body(again))
    assert one.status_code == two.status_code == 200
    session_id = one.headers["X-Hermes-Session-Id"]
    assert session_id.startswith("owui-")
    assert two.headers["X-Hermes-Session-Id"] == session_id
    items = await items_of(scripted[0], session_id)
    assert [i.content for i in items if i.role == "user"] == ["hi", "more"]


def _librechat_headers(key: str) -> dict[str, str]:
    """The headers of the openai-node client LibreChat's custom endpoints use."""
    return {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": "OpenAI/JS 4.96.0",
        "X-Stainless-Lang": "js",
        "X-Stainless-Package-Version": "4.96.0",
        "X-Stainless-OS": "Linux",
        "X-Stainless-Arch": "x64",
        "X-Stainless-Runtime": "node",
        "X-Stainless-Runtime-Version": "v20.19.0",
        "X-Stainless-Retry-Count": "0",
        "Authorization": f"Bearer {key}",
    }


def _librechat_body(user: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "hermes",
        "temperature": 1,
        "top_p": 1,
        "presence_penalty": 0,
        "frequency_penalty": 0,
        "user": user,
        "stream": True,
        "messages": messages,
    }


async def test_a_librechat_user_keeps_one_derived_session(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, _ = scripted
    user = "6650f1c2a9b8e7d6c5b4a3f2"  # a LibreChat (MongoDB) user id
    first = [{"role": "user", "content": "hi"}]
    async with served(agent) as (url, _):
        one = await _post_stream(url, _librechat_headers("x"), _librechat_body(user, first))
        second = [
            *first,
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "more"},
        ]
        two = await _post_stream(url, _librechat_headers("x"), _librechat_body(user, second))
        other = await _post_stream(
            url, _librechat_headers("x"), _librechat_body("6650f1c2a9b8e7d6c5b4a3f3", first)
        )
    assert one.status_code == two.status_code == other.status_code == 200
    session_id = one.headers["X-Hermes-Session-Id"]
    assert two.headers["X-Hermes-Session-Id"] == session_id
    assert session_id != user
    assert other.headers["X-Hermes-Session-Id"] != session_id
    items = await items_of(agent, session_id)
    assert [i.content for i in items if i.role == "user"] == ["hi", "more"]
    reply = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in sse_chunks(two.text) if c["choices"]
    )
    assert reply == "echo: more (users seen: 2)"


async def test_a_user_field_that_is_no_string_is_ignored(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    """Open WebUI sends ``user`` as an object to pipelines."""
    body = {
        "model": "hermes",
        "messages": [{"role": "user", "content": "hi"}],
        "user": {"name": "Ada", "id": OPENWEBUI_USER, "email": "a@b.c", "role": "user"},
    }
    async with served(scripted[0]) as (url, _), httpx.AsyncClient() as client:
        response = await client.post(f"{url}/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "echo: hi (users seen: 1)"


KEY = "sk-hermes-test-key-0001"
ADMIN_KEY = "sk-hermes-admin-key-0001"


def _keyed(**extra: Any) -> ServerConfig:
    return ServerConfig(
        api_keys=(
            ApiKeyConfig(key=KEY, user="alice"),
            ApiKeyConfig(key=ADMIN_KEY, user="root", roles=("admin",)),
        ),
        **extra,
    )


async def test_with_keys_every_route_needs_one(scripted: tuple[Agent, FunctionModel]) -> None:
    body = {"model": "hermes", "messages": [{"role": "user", "content": "hi"}]}
    async with served(scripted[0], _keyed(), api_key="sk-not-a-key-at-all-0000") as (url, client):
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()
        with pytest.raises(openai.AuthenticationError):
            await client.chat.completions.create(
                model="hermes", messages=[{"role": "user", "content": "hi"}]
            )
        async with httpx.AsyncClient(base_url=url) as bare:  # no key at all
            for response in (
                await bare.get("/v1/models"),
                await bare.post("/v1/chat/completions", json=body),
            ):
                assert response.status_code == 401
                assert response.json()["error"]["type"] == "unauthorized"


async def test_a_key_acts_as_its_user_whatever_user_the_client_names(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, _ = scripted
    async with served(agent, _keyed(), api_key=KEY) as (url, client):
        raw = await client.chat.completions.with_raw_response.create(
            model="hermes", messages=[{"role": "user", "content": "hi"}], user="someone-else"
        )
        admin = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=ADMIN_KEY, max_retries=0)
        acted = await admin.chat.completions.with_raw_response.create(
            model="hermes", messages=[{"role": "user", "content": "hi"}], user="bob"
        )
        await admin.close()
    record = await agent.store.load_session(raw.headers["X-Hermes-Session-Id"])
    assert record is not None
    assert record.user_id == "alice"
    on_behalf = await agent.store.load_session(acted.headers["X-Hermes-Session-Id"])
    assert on_behalf is not None
    assert on_behalf.user_id == "bob"  # an admin key may act for the user it names


async def test_over_the_rate_limit_is_the_clients_rate_limit_error(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    settings = _keyed(rate_limit=RateLimitConfig(per_minute=2))
    async with served(scripted[0], settings, api_key=KEY) as (_, client):
        for _ in range(2):
            await client.chat.completions.create(
                model="hermes", messages=[{"role": "user", "content": "hi"}]
            )
        with pytest.raises(openai.RateLimitError):
            await client.chat.completions.create(
                model="hermes", messages=[{"role": "user", "content": "hi"}]
            )
