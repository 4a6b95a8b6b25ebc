"""What a person reads when the model fails: the cause in one sentence, zh or en, and "try again
later" only where waiting can help (a closed port or a bad key will not fix themselves)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent
from hermes.models.guard import allow_model_requests
from hermes.models.openai_compat import OpenAICompatModel
from tests.agent.conftest import add
from tests.models.fake_chat_server import FakeChatServer, Reply, model_settings

SESSION = "session-failures-01"
LATER = ("稍后再试", "try again later")

Factory = Callable[..., Agent]


@pytest.fixture(autouse=True)
def _model_requests_allowed() -> Iterator[None]:
    with allow_model_requests():
        yield


@pytest.fixture
async def make_agent(server: FakeChatServer, tmp_path: Path) -> AsyncIterator[Factory]:
    made: list[Agent] = []

    def factory(**model_options: Any) -> Agent:
        settings = model_settings(server, **model_options)
        agent = Agent(model=OpenAICompatModel(**settings), tools=[add], store=tmp_path / "x.db")
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.aclose()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _no_later(reply: str) -> None:
    assert not any(word in reply for word in LATER), reply


@pytest.mark.parametrize(("text", "chinese"), [("你好", True), ("hello", False)])
async def test_a_closed_port_names_the_url_and_model_base_url(
    make_agent: Factory, text: str, chinese: bool
) -> None:
    base_url = f"http://127.0.0.1:{_free_port()}/v1"
    result = await make_agent(base_url=base_url, max_retries=0).run(text, session_id=SESSION)
    assert result.outcome == "error"
    assert base_url in result.reply
    assert "model.base_url" in result.reply
    assert ("连接不上" in result.reply) is chinese
    assert result.error is not None
    assert result.error["kind"] == "unreachable"
    _no_later(result.reply)


@pytest.mark.parametrize(("text", "chinese"), [("你好", True), ("hello", False)])
async def test_a_bad_key_says_check_model_api_key(
    server: FakeChatServer, make_agent: Factory, text: str, chinese: bool
) -> None:
    server.default = Reply.http_error(401, "Incorrect API key provided: sk-wrong")
    result = await make_agent().run(text, session_id=SESSION)
    assert "model.api_key" in result.reply
    assert "sk-wrong" not in result.reply
    assert ("API 密钥" in result.reply) is chinese
    assert len(server.requests) == 1
    _no_later(result.reply)


async def test_rate_limiting_says_when_to_come_back(
    server: FakeChatServer, make_agent: Factory
) -> None:
    server.default = Reply.http_error(429, "slow down", retry_after="30")
    result = await make_agent().run("你好", session_id=SESSION)
    assert "30 秒后再试" in result.reply
    english = await make_agent().run("hello", session_id="session-failures-02")
    assert "try again in 30 s" in english.reply


async def test_a_timeout_says_try_again_later(server: FakeChatServer, make_agent: Factory) -> None:
    server.default = Reply.text("too late", delay=2.0)
    result = await make_agent(timeout=0.2, max_retries=0).run("hello", session_id=SESSION)
    assert "did not answer in time" in result.reply
    assert "try again later" in result.reply


async def test_an_outage_says_try_again_later(server: FakeChatServer, make_agent: Factory) -> None:
    server.default = Reply.http_error(503, "restarting")
    result = await make_agent(max_retries=1).run("你好", session_id=SESSION)
    assert "暂时不可用" in result.reply
    assert "稍后再试" in result.reply
    assert len(server.requests) == 2


async def test_a_refused_request_is_not_an_outage_and_is_sent_once(
    server: FakeChatServer, make_agent: Factory
) -> None:
    server.default = Reply.http_error(500, "1 validation error: Input should be a valid string")
    result = await make_agent(max_retries=2).run("hello", session_id=SESSION)
    assert "refused this request" in result.reply
    assert "unavailable" not in result.reply
    assert result.error is not None
    assert result.error["kind"] == "request_rejected"
    assert len(server.requests) == 1
    _no_later(result.reply)


async def test_an_unknown_model_says_check_model_model(
    server: FakeChatServer, make_agent: Factory
) -> None:
    server.default = Reply.http_error(404, "The model `nope` does not exist")
    result = await make_agent().run("hello", session_id=SESSION)
    assert "model.model" in result.reply
    _no_later(result.reply)


async def test_every_failure_sentence_carries_the_trace(
    server: FakeChatServer, make_agent: Factory
) -> None:
    server.default = Reply.http_error(401, "no")
    result = await make_agent().run("hello", session_id=SESSION)
    assert result.trace_id[:12] in result.reply


async def test_a_context_overflow_says_lower_the_budget(
    server: FakeChatServer, make_agent: Factory
) -> None:
    server.default = Reply.http_error(400, "This model's maximum context length is 2048 tokens")
    result = await make_agent().run("你好", session_id=SESSION)
    assert "agent.context_budget_tokens" in result.reply
    assert "上下文窗口" in result.reply
    _no_later(result.reply)
