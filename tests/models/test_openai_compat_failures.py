"""OpenAICompatModel failures: what is retried, what is not, and every failure is a ModelError."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.errors import ModelError
from hermes.models.base import ModelRequest
from hermes.models.guard import block_model_requests, model_requests_blocked
from hermes.models.openai_compat import OpenAICompatModel, retry_delay
from hermes.models.stream_relay import TextRelay
from tests.models.conftest import ModelFactory
from tests.models.fake_chat_server import FakeChatServer, Reply

USER = [{"role": "user", "content": "hi"}]


def request() -> ModelRequest:
    return ModelRequest(messages=list(USER))


# retried ----------------------------------------------------------------------------------


async def test_http_500_is_retried_then_succeeds(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.http_error(500), Reply.text("recovered"))
    response = await make_model().complete(request())
    assert response.content == "recovered"
    assert len(server.requests) == 2


async def test_http_429_with_retry_after_is_retried_then_succeeds(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.http_error(429, "slow down", retry_after="0"), Reply.text("recovered"))
    response = await make_model().complete(request())
    assert response.content == "recovered"
    assert len(server.requests) == 2


async def test_persistent_500_ends_as_retryable_model_error_naming_the_attempts(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(*[Reply.http_error(500, "boom")] * 3)
    with pytest.raises(ModelError) as caught:
        await make_model(max_retries=2).complete(request())
    error = caught.value
    assert (
        f"model server {server.base_url} answered HTTP 500 after 3 attempts: boom" == error.message
    )
    assert error.retryable is True
    assert error.status_code == 500
    assert len(server.requests) == 3


async def test_streamed_request_is_retried_before_any_text(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.http_error(503), Reply.text("ok"))
    deltas: list[str] = []
    model = make_model(stream=True)
    response = await model.complete(ModelRequest(messages=list(USER), on_text=deltas.append))
    assert response.content == "ok" == "".join(deltas)


async def test_dropped_connection_is_retried_then_succeeds(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.hang_up(), Reply.text("recovered"))
    response = await make_model().complete(request())
    assert response.content == "recovered"
    assert len(server.requests) == 2


# not retried ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retried(
    server: FakeChatServer, make_model: ModelFactory, status: int
) -> None:
    server.push(Reply.http_error(status, "bad request body"))
    with pytest.raises(ModelError) as caught:
        await make_model().complete(request())
    assert caught.value.status_code == status
    assert caught.value.retryable is False
    assert f"answered HTTP {status}: bad request body" in caught.value.message
    assert len(server.requests) == 1


async def test_unreachable_server_is_a_model_error(closed_port: int) -> None:
    base_url = f"http://127.0.0.1:{closed_port}/v1"
    model = OpenAICompatModel(
        base_url=base_url, model="m", retry_backoff=0.001, retry_backoff_max=0.01
    )
    try:
        with pytest.raises(ModelError) as caught:
            await model.complete(request())
    finally:
        await model.aclose()
    assert caught.value.message.startswith(f"model server {base_url} is unreachable")
    assert "connection refused" in caught.value.message
    assert caught.value.retryable is True


async def test_timeout_is_a_model_error(server: FakeChatServer, make_model: ModelFactory) -> None:
    server.push(Reply.text("too late", delay=2.0))
    with pytest.raises(ModelError) as caught:
        await make_model(timeout=0.2, max_retries=0).complete(request())
    assert "did not answer within 0.2 s" in caught.value.message
    assert caught.value.retryable is True


@pytest.mark.parametrize(
    "reply",
    [
        Reply.garbage(),
        Reply.garbage(b"{not json", "application/json"),
        Reply.garbage(b'{"id": "x"}'),
        Reply.garbage(b'{"choices": []}'),
        Reply.garbage(b'{"choices": ["nonsense"]}'),
        Reply.garbage(b"[1, 2]"),
        Reply.garbage(b'{"choices": [{"message": "hi"}]}'),
    ],
    ids=[
        "html",
        "broken-json",
        "no-choices",
        "empty-choices",
        "choice-not-object",
        "array",
        "message-not-object",
    ],
)
async def test_malformed_body_is_a_model_error(
    server: FakeChatServer, make_model: ModelFactory, reply: Reply
) -> None:
    server.push(reply)
    with pytest.raises(ModelError, match="returned a malformed response") as caught:
        await make_model().complete(request())
    assert caught.value.retryable is False
    assert len(server.requests) == 1


async def test_nonsense_tool_calls_field_is_ignored(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(
        Reply.garbage(b'{"choices": [{"message": {"content": "hi", "tool_calls": "junk"}}]}')
    )
    response = await make_model().complete(request())
    assert response.content == "hi"
    assert response.tool_calls == []


@pytest.mark.parametrize(
    "reply",
    [
        Reply.sse('{"choices": [{"index": 0, "delta": {"content": "hi"}}]}', "{not json"),
        Reply.sse("42"),
        Reply.sse('{"usage": {"prompt_tokens": 1}}'),
        Reply.garbage(),
    ],
    ids=["non-json-chunk", "non-object-chunk", "no-choices", "html-instead-of-sse"],
)
async def test_malformed_stream_is_a_model_error(
    server: FakeChatServer, make_model: ModelFactory, reply: Reply
) -> None:
    server.push(reply)
    with pytest.raises(ModelError, match="returned a malformed response"):
        await make_model(stream=True).complete(request())


async def test_error_event_in_the_stream_is_a_model_error(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.sse('{"error": {"message": "model crashed"}}'))
    with pytest.raises(ModelError, match="reported an error: model crashed"):
        await make_model(stream=True).complete(request())


async def test_stream_dropped_after_text_is_not_retried(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.hang_up(after_text="Partial answer"), Reply.text("never asked"))
    deltas: list[str] = []
    with pytest.raises(ModelError, match="dropped the connection") as caught:
        await make_model(stream=True).complete(
            ModelRequest(messages=list(USER), on_text=deltas.append)
        )
    assert "".join(deltas) == "Partial answer"
    assert caught.value.retryable is False
    assert len(server.requests) == 1


async def test_guard_blocks_requests_when_not_allowed(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    previous = model_requests_blocked()
    block_model_requests(True)
    try:
        with pytest.raises(ModelError, match="blocked"):
            await make_model().complete(request())
    finally:
        block_model_requests(previous)
    assert server.requests == []


# the retry wait ---------------------------------------------------------------------------


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    assert retry_delay(1, base=0.2, cap=5.0, retry_after=2.0) == 2.0
    assert retry_delay(1, base=0.2, cap=5.0, retry_after=120.0) == 5.0
    assert retry_delay(1, base=0.2, cap=5.0, retry_after=-3.0) == 0.0


@given(
    st.integers(min_value=1, max_value=60), st.floats(min_value=0, max_value=1, exclude_max=True)
)
def test_backoff_grows_exponentially_with_jitter_and_stays_under_the_cap(
    attempt: int, draw: float
) -> None:
    delay = retry_delay(attempt, base=0.2, cap=5.0, rng=lambda: draw)
    full = min(5.0, 0.2 * 2 ** (attempt - 1))
    assert full / 2 <= delay <= full


# streamed text relay (hermes mode) ---------------------------------------------------------


no_fences = st.text(alphabet=st.characters(blacklist_characters="`"))


@given(no_fences, no_fences, st.lists(st.integers(min_value=1, max_value=12), max_size=30))
def test_relay_forwards_exactly_the_text_before_the_first_tool_call(
    before: str, after: str, cuts: list[int]
) -> None:
    text = before + "<tool_call>" + after if after else before
    pieces, position = [], 0
    for size in cuts:
        pieces.append(text[position : position + size])
        position += size
    pieces.append(text[position:])
    received: list[str] = []
    relay = TextRelay(received.append, names=frozenset({"get_weather"}))
    for piece in pieces:
        relay.feed(piece)
    relay.flush()
    markers = ("<tool_call>", "<function", "<tools>", "[TOOL_CALLS]", "<|python_tag|>")
    if text.lstrip()[:1] in ("{", "["):
        expected = text  # held to the end (it could be a whole-message call), then released
    else:
        expected = text[: min((i for m in markers if (i := text.find(m)) >= 0), default=len(text))]
    assert "".join(received) == expected


@pytest.mark.parametrize(
    ("pieces", "shown"),
    [
        (["Let me ", "check. <func", "tion=get_weather>{}"], "Let me check. "),
        (['  {"name": ', '"get_weather", "arguments": {}}'], ""),
        (
            ["Sure.\n``", '`json\n{"name": "get_weather", ', '"arguments": {}}\n```', " Done."],
            "Sure.\n Done.",
        ),
        (
            ["Code:\n```py", "thon\nprint(1)\n``", "`\nThat is all."],
            "Code:\n```python\nprint(1)\n```\nThat is all.",
        ),
    ],
)
def test_relay_never_shows_a_call_in_another_shape(pieces: list[str], shown: str) -> None:
    received: list[str] = []
    relay = TextRelay(received.append, names=frozenset({"get_weather"}))
    for piece in pieces:
        relay.feed(piece)
    relay.flush(release=not pieces[0].strip().startswith("{"))
    assert "".join(received) == shown


def test_relay_without_tools_forwards_everything_at_once() -> None:
    received: list[str] = []
    relay = TextRelay(received.append)
    for piece in ["{", "<tool_call>", "```"]:
        relay.feed(piece)
    assert received == ["{", "<tool_call>", "```"]
