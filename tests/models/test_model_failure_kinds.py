"""Every model failure says what happened (ModelError.kind), and only transient ones are retried.

A closed port, a bad key, a request the server refuses and an outage are different failures:
the person is told the cause in one sentence (hermes.agent.texts.model_failure), and a request
the server refuses is sent once, not three times.
"""

from __future__ import annotations

import pytest

from hermes.errors import ModelError
from hermes.models.base import ModelRequest
from hermes.models.openai_compat import OpenAICompatModel
from tests.models.conftest import ModelFactory
from tests.models.fake_chat_server import FakeChatServer, Reply

#: What llama-cpp-python's server answers when its request model refuses a message (FastAPI's
#: validation error turned into HTTP 500 by its error handler).
LLAMA_CPP_VALIDATION = (
    "[{'type': 'string_type', 'loc': ('body', 'messages', 2, 'typed-dict', 'content'), "
    "'msg': 'Input should be a valid string', 'input': None}]"
)
#: What a strict chat template raises (llama.cpp's server answers HTTP 500 with it).
TEMPLATE_REFUSAL = "System message must be at the beginning."


def request() -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": "hi"}])


async def _failure(model: OpenAICompatModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await model.complete(request())
    return caught.value


async def test_a_closed_port_is_unreachable_and_names_the_url(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    model = OpenAICompatModel(base_url=base_url, model="m", retry_backoff=0.001)
    try:
        error = await _failure(model)
    finally:
        await model.aclose()
    assert error.kind == "unreachable"
    assert error.server == base_url


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_is_an_authentication_failure_sent_once(
    server: FakeChatServer, make_model: ModelFactory, status: int
) -> None:
    server.push(Reply.http_error(status, "Incorrect API key provided"))
    error = await _failure(make_model())
    assert (error.kind, error.status_code, error.retryable) == ("authentication", status, False)
    assert len(server.requests) == 1


async def test_rate_limiting_keeps_the_server_s_retry_after(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.http_error(429, "slow down", retry_after="7"))
    error = await _failure(make_model(retry_backoff_max=1.0))
    assert error.kind == "rate_limited"
    assert error.retry_after == 7.0
    # Waiting 7 s is beyond the retry cap (1 s): retrying sooner would be refused again.
    assert len(server.requests) == 1


async def test_rate_limiting_within_the_cap_is_retried(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(*[Reply.http_error(429, "slow down", retry_after="0")] * 3)
    error = await _failure(make_model())
    assert error.kind == "rate_limited"
    assert error.retryable is True
    assert len(server.requests) == 3


@pytest.mark.parametrize(
    "message", [LLAMA_CPP_VALIDATION, TEMPLATE_REFUSAL, "1 validation error for Request"]
)
async def test_a_500_refusing_the_request_is_a_request_error_sent_once(
    server: FakeChatServer, make_model: ModelFactory, message: str
) -> None:
    server.push(*[Reply.http_error(500, message)] * 3)
    error = await _failure(make_model())
    assert error.kind == "request_rejected"
    assert error.retryable is False
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 413, 422])
async def test_client_errors_are_request_errors(
    server: FakeChatServer, make_model: ModelFactory, status: int
) -> None:
    server.push(Reply.http_error(status, "bad request body"))
    error = await _failure(make_model())
    assert error.kind == "request_rejected"
    assert len(server.requests) == 1


async def test_an_unknown_model_is_not_found(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.http_error(404, "The model `gpt-9` does not exist"))
    error = await _failure(make_model())
    assert error.kind == "not_found"


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_an_outage_is_a_server_error_and_retried(
    server: FakeChatServer, make_model: ModelFactory, status: int
) -> None:
    server.push(*[Reply.http_error(status, "upstream failed")] * 3)
    error = await _failure(make_model())
    assert (error.kind, error.retryable) == ("server_error", True)
    assert len(server.requests) == 3


async def test_a_timeout_is_a_timeout(server: FakeChatServer, make_model: ModelFactory) -> None:
    server.push(Reply.text("too late", delay=2.0))
    error = await _failure(make_model(timeout=0.2, max_retries=0))
    assert error.kind == "timeout"


async def test_garbage_is_malformed(server: FakeChatServer, make_model: ModelFactory) -> None:
    server.push(Reply.garbage())
    error = await _failure(make_model())
    assert error.kind == "malformed"


async def test_the_error_data_carries_the_kind(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.http_error(401, "nope"))
    error = await _failure(make_model())
    assert error.to_dict() == {
        "type": "model_error",
        "kind": "authentication",
        "message": error.message,
    }


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "This model's maximum context length is 4096 tokens. However, you requested 5000"),
        (400, "the request exceeds the available context size, try increasing it"),
        (500, "Requested tokens (5000) exceed context window of 2048"),
    ],
)
async def test_a_request_larger_than_the_server_s_context_is_named_as_such(
    server: FakeChatServer, make_model: ModelFactory, status: int, message: str
) -> None:
    server.push(*[Reply.http_error(status, message)] * 3)
    error = await _failure(make_model())
    assert (error.kind, error.retryable) == ("context_overflow", False)
    assert len(server.requests) == 1
