"""The OpenAI-compatible façade (DESIGN.md, HTTP, "OpenAI-compatible") with the real
``openai`` client against a real uvicorn server on 127.0.0.1: plain and streamed completions,
the side channel of Hermes's own tools, the client's tools round trip, the whole history
resent, unknown parameters, and bad requests as the client's typed errors."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hermes import Agent
from hermes.errors import ModelError
from hermes.testing import FunctionModel, ScriptedModel
from tests.channels.http.chat_support import assert_consistent, items_of
from tests.channels.http.openai_support import WEATHER_TOOL, make_agent, served


@pytest.fixture
async def scripted(tmp_path: Path) -> AsyncIterator[tuple[Agent, FunctionModel]]:
    agent, model = make_agent(tmp_path / "hermes.db")
    yield agent, model
    await agent.aclose()


async def test_models_lists_the_agent_as_its_one_model(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    async with served(scripted[0]) as (_, client):
        listed = await client.models.list()
        assert [m.id for m in listed.data] == ["hermes"]
        assert (await client.models.retrieve("hermes")).owned_by == "hermes"
        with pytest.raises(openai.NotFoundError):
            await client.models.retrieve("gpt-4o")


async def test_a_plain_completion_is_one_turn_of_a_session(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, _ = scripted
    async with served(agent) as (_, client):
        raw = await client.chat.completions.with_raw_response.create(
            model="any-model-name", messages=[{"role": "user", "content": "hello"}]
        )
        done = raw.parse()
    choice = done.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == "echo: hello (users seen: 1)"
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert done.object == "chat.completion"
    assert done.model == "any-model-name"
    assert done.usage is not None
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (11, 7)
    assert done.usage.total_tokens == 18
    session_id = raw.headers["X-Hermes-Session-Id"]
    items = await items_of(agent, session_id)
    assert [(i.role, i.content) for i in items] == [
        ("user", "hello"),
        ("assistant", "echo: hello (users seen: 1)"),
    ]


async def test_a_stream_sends_role_content_finish_and_the_usage_chunk(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    async with served(scripted[0]) as (_, client):
        stream = await client.chat.completions.create(
            model="hermes",
            messages=[{"role": "user", "content": "stream me"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [c async for c in stream]
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "echo: stream me (users seen: 1)"
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    pieces = [d.content for d in deltas if d.content]
    assert len(pieces) == 2  # the model's own deltas, as they came
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert finishes.count("stop") == 1
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (11, 7)
    assert len({c.id for c in chunks}) == 1


async def test_a_stream_without_include_usage_has_no_usage_chunk(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    async with served(scripted[0]) as (_, client):
        stream = await client.chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        chunks = [c async for c in stream]
    assert all(c.choices for c in chunks)
    assert all(c.usage is None for c in chunks)


async def test_hermes_tools_run_here_and_show_only_in_the_side_channel(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    async with served(scripted[0]) as (_, client):
        stream = await client.chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "add 2 and 3"}], stream=True
        )
        chunks = [c async for c in stream]
        plain = await client.chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "add 4 and 5"}]
        )
    assert all(not c.choices or c.choices[0].delta.tool_calls is None for c in chunks)
    side = [c.model_extra["hermes"] for c in chunks if c.model_extra and "hermes" in c.model_extra]
    events = [s.get("event") for s in side]
    assert "tool_call_started" in events
    assert "tool_call_finished" in events
    started = next(s for s in side if s.get("event") == "tool_call_started")
    assert (started["name"], started["arguments"]) == ("add", {"a": 2, "b": 3})
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content.startswith("the tool said: ")
    assert '"output":5' in content.replace(" ", "")
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert plain.choices[0].message.tool_calls is None
    assert plain.choices[0].finish_reason == "stop"
    extra = plain.model_extra or {}
    assert [c["name"] for c in extra["hermes"]["tool_calls"]] == ["add"]


def _assembled_calls(chunks: list[Any]) -> list[dict[str, str]]:
    """The tool calls of a stream, put together from their deltas as a client does."""
    calls: dict[int, dict[str, str]] = {}
    for c in chunks:
        for delta in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            entry = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
            entry["id"] += delta.id or ""
            if delta.function is not None:
                entry["name"] += delta.function.name or ""
                entry["arguments"] += delta.function.arguments or ""
    return [calls[i] for i in sorted(calls)]


async def test_client_tools_round_trip_through_the_session(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, model = scripted
    session = {"X-Hermes-Session-Id": "owned-session-1"}
    question = {"role": "user", "content": "what is the weather?"}
    async with served(agent) as (_, client):
        stream = await client.chat.completions.create(
            model="hermes",
            messages=[question],
            tools=[WEATHER_TOOL],  # type: ignore[list-item]
            stream=True,
            extra_headers=session,
        )
        chunks = [c async for c in stream]
        (asked,) = _assembled_calls(chunks)
        assert asked["name"] == "get_weather"
        assert json.loads(asked["arguments"]) == {"city": "Paris"}
        assert chunks[-1].choices[0].finish_reason == "tool_calls"
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Let me look."
        answered = await client.chat.completions.create(
            model="hermes",
            messages=[
                question,
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "tool_calls": [
                        {
                            "id": asked["id"],
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": asked["arguments"]},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": asked["id"], "content": "sunny, 21 °C"},
            ],
            tools=[WEATHER_TOOL],  # type: ignore[list-item]
            extra_headers=session,
        )
    assert answered.choices[0].message.content == "the tool said: sunny, 21 °C"
    assert answered.choices[0].finish_reason == "stop"
    items = await items_of(agent, "owned-session-1")
    assert_consistent(items)
    assert [(i.role, i.kind) for i in items] == [
        ("user", "text"),
        ("assistant", "text"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "text"),
    ]
    result = items[3]
    assert (result.tool_call_id, result.tool_name) == (asked["id"], "get_weather")
    # The model saw its call and the client's result, in order, once each.
    seen = model.requests[-1].messages
    assert [m["role"] for m in seen if m["role"] != "system"] == ["user", "assistant", "tool"]


async def test_client_tool_results_may_seed_a_new_session(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    """Without a session header every request is a new session seeded from its messages: a
    round trip still works, the call coming from the seed."""
    async with served(scripted[0]) as (_, client):
        done = await client.chat.completions.create(
            model="hermes",
            messages=[
                {"role": "user", "content": "weather?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_abc",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_abc", "content": "snow"},
            ],
            tools=[WEATHER_TOOL],  # type: ignore[list-item]
        )
    assert done.choices[0].message.content == "the tool said: snow"


async def test_the_whole_history_resent_is_stored_once(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, model = scripted
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    session = {"X-Hermes-Session-Id": "resent-history-1"}
    async with served(agent) as (_, client):
        for text in ("one", "two", "three"):
            history.append({"role": "user", "content": text})
            done = await client.chat.completions.create(
                model="hermes",
                messages=history,  # type: ignore[arg-type]
                extra_headers=session,
            )
            history.append({"role": "assistant", "content": done.choices[0].message.content})
    assert history[-1]["content"] == "echo: three (users seen: 3)"
    items = await items_of(agent, "resent-history-1")
    users = [i.content for i in items if i.role == "user"]
    assert users == ["one", "two", "three"]
    assert [i.content for i in items if i.role == "system"] == ["Be brief."]
    assert len([i for i in items if i.role == "assistant"]) == 3
    assert _users(model.requests[-1].messages) == 3


def _users(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m["role"] == "user")


async def test_without_a_session_each_request_is_a_new_session_seeded_from_messages(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, _ = scripted
    history = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "answer one"},
        {"role": "user", "content": "second"},
    ]
    async with served(agent) as (_, client):
        a = await client.chat.completions.with_raw_response.create(model="m", messages=history)  # type: ignore[arg-type]
        b = await client.chat.completions.with_raw_response.create(model="m", messages=history)  # type: ignore[arg-type]
    assert a.parse().choices[0].message.content == "echo: second (users seen: 2)"
    first, second = a.headers["X-Hermes-Session-Id"], b.headers["X-Hermes-Session-Id"]
    assert first != second
    items = await items_of(agent, first)
    assert [i.content for i in items if i.role == "user"] == ["first", "second"]


async def test_unknown_and_unused_openai_parameters_are_accepted(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    async with served(scripted[0]) as (_, client):
        done = await client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "developer", "content": "Be kind."},
                {"role": "user", "content": "hi"},
            ],
            temperature=0.2,
            top_p=0.9,
            max_tokens=50,
            max_completion_tokens=50,
            presence_penalty=0.1,
            frequency_penalty=0.1,
            seed=7,
            stop=["\n\n"],
            logit_bias={"50256": -100},
            response_format={"type": "text"},
            parallel_tool_calls=False,
            n=1,
            metadata={"k": "v"},
            store=False,
            extra_body={"not_an_openai_parameter": {"x": 1}, "reasoning_effort": "low"},
        )
    assert done.choices[0].message.content == "echo: hi (users seen: 1)"


@pytest.mark.parametrize(
    ("messages", "extra", "param"),
    [
        ([{"role": "user", "content": "hi"}], {"n": 2}, "n"),
        ([], {}, "messages"),
        ([{"role": "wizard", "content": "hi"}], {}, "messages[0].role"),
        (["just a string"], {}, "messages[0]"),
        ([{"role": "user", "content": 42}], {}, "messages[0].content"),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}],
            {},
            "messages[1].role",
        ),
        ([{"role": "tool", "content": "x"}], {}, "messages[0].tool_call_id"),
        ([{"role": "user", "content": "   "}], {}, "messages[0].content"),
        ([{"role": "user", "content": "hi"}], {"tools": [{"type": "function"}]}, "tools[0]"),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "what is in this picture?"},
                        {
                            "type": "image_url",
                            "image_url": {"url": "data:image/png;base64,iVBORw0K"},
                        },
                    ],
                }
            ],
            {},
            "messages[0].content",
        ),
    ],
)
async def test_bad_requests_are_the_clients_bad_request_error(
    scripted: tuple[Agent, FunctionModel],
    messages: list[Any],
    extra: dict[str, Any],
    param: str,
) -> None:
    async with served(scripted[0]) as (_, client):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(
                model="hermes",
                messages=messages,
                extra_body=extra,
            )
    error = caught.value
    assert error.param == param
    assert isinstance(error.body, dict)
    assert set(error.body) >= {"type", "message", "param", "code"}
    assert error.body["message"]


async def test_a_result_for_no_waiting_call_is_refused_and_stores_nothing(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    agent, _ = scripted
    session = {"X-Hermes-Session-Id": "no-calls-waiting"}
    async with served(agent) as (_, client):
        await client.chat.completions.create(
            model="hermes", messages=[{"role": "user", "content": "hi"}], extra_headers=session
        )
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(
                model="hermes",
                messages=[{"role": "tool", "tool_call_id": "call_nope", "content": "x"}],
                extra_headers=session,
            )
    assert "call_nope" in caught.value.message
    assert len(await items_of(agent, "no-calls-waiting")) == 2


async def test_a_client_tool_named_as_an_agent_tool_is_refused(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    clash = {"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}
    async with served(scripted[0]) as (_, client):
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(
                model="hermes",
                messages=[{"role": "user", "content": "hi"}],
                tools=[clash],  # type: ignore[list-item]
            )
    assert caught.value.param == "tools"


async def test_a_bad_session_header_is_a_bad_request(
    scripted: tuple[Agent, FunctionModel],
) -> None:
    async with served(scripted[0]) as (_, client):
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(
                model="hermes",
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"X-Hermes-Session-Id": "bad id!"},
            )


async def test_a_model_that_is_down_is_a_server_error_the_client_does_not_retry(
    tmp_path: Path,
) -> None:
    model = ScriptedModel([ModelError("the model server refused", retryable=True)] * 2)
    agent = Agent(model=model, tools=[], store=tmp_path / "down.db")
    try:
        async with served(agent) as (url, _):
            client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="x", max_retries=2)
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(
                    model="hermes", messages=[{"role": "user", "content": "hi"}]
                )
            assert caught.value.status_code == 503
            assert len(model.requests) == 1  # stored once: x-should-retry: false
            stream = await client.chat.completions.create(
                model="hermes", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            with pytest.raises(openai.APIError):
                async for _ in stream:
                    pass
            await client.close()
    finally:
        await agent.aclose()
