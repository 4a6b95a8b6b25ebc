"""OpenAICompatModel against a local fake chat server, through the real openai client."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes.errors import ConfigError
from hermes.models.base import Model, ModelRequest, ToolSpec
from hermes.models.openai_compat import OpenAICompatModel
from tests.models.conftest import ModelFactory
from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall

ADD = ToolSpec(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
USER = [{"role": "user", "content": "what is 2+3?"}]
AFTER_TOOL: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a calculator."},
    *USER,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": '{"ok": true, "output": 5}'},
]


def test_model_satisfies_the_model_protocol(make_model: ModelFactory) -> None:
    model = make_model()
    assert isinstance(model, Model)
    assert model.name == "openai:fake-model"


def test_unknown_tool_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tool_mode"):
        OpenAICompatModel(base_url="http://127.0.0.1:1/v1", model="m", tool_mode="xml")  # type: ignore[arg-type]


# native mode, not streamed ----------------------------------------------------------------


async def test_native_text_answer(server: FakeChatServer, make_model: ModelFactory) -> None:
    server.push(Reply.text("The answer is 5.", usage=(30, 6)))
    response = await make_model().complete(ModelRequest(messages=USER))
    assert response.content == "The answer is 5."
    assert response.tool_calls == []
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 6)  # type: ignore[union-attr]
    assert response.model_name == "fake-model"


async def test_request_carries_model_messages_and_default_temperature(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text("hi"))
    await make_model().complete(ModelRequest(messages=USER))
    body = server.requests[0]
    assert body["model"] == "fake-model"
    assert body["messages"] == USER
    assert body["temperature"] == 0.2
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "max_tokens" not in body


async def test_api_key_defaults_to_empty_and_extra_headers_are_sent(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text("hi"))
    await make_model(extra_headers={"X-Tenant": "t1"}).complete(ModelRequest(messages=USER))
    headers = server.request_headers[0]
    assert headers["authorization"] == "Bearer EMPTY"
    assert headers["x-tenant"] == "t1"


async def test_native_tools_are_offered_with_tool_choice_auto(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text("hi"))
    await make_model(max_tokens=64).complete(ModelRequest(messages=USER, tools=[ADD]))
    body = server.requests[0]
    assert body["tools"] == [ADD.to_openai()]
    assert body["tool_choice"] == "auto"
    assert body["max_tokens"] == 64


async def test_native_tool_calls_are_parsed(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(
        Reply.calls(
            ScriptedCall("add", {"a": 2, "b": 3}, id="call_x"),
            ScriptedCall("add", {"a": 4, "b": 5}, id="call_y"),
            content="Computing.",
        )
    )
    response = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_x", "add", {"a": 2, "b": 3}),
        ("call_y", "add", {"a": 4, "b": 5}),
    ]
    assert response.content == "Computing."
    assert response.finish_reason == "tool_calls"


async def test_native_sloppy_arguments_are_repaired(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("add", "{'a': 2, 'b': 3,}")))
    response = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    assert response.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert response.tool_calls[0].arguments_error is None


@pytest.mark.parametrize("arguments", ['{"a": 2, "b"', "[1, 2]", '"two"'])
async def test_native_unusable_arguments_are_flagged_not_dropped(
    server: FakeChatServer, make_model: ModelFactory, arguments: str
) -> None:
    server.push(Reply.calls(ScriptedCall("add", arguments)))
    response = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    call = response.tool_calls[0]
    assert call.name == "add"
    assert call.arguments == {}
    assert call.arguments_error


async def test_native_missing_and_duplicate_call_ids_are_generated(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(
        Reply.calls(
            ScriptedCall("add", {"a": 1, "b": 1}, id=None),
            ScriptedCall("add", {"a": 2, "b": 2}, id="same"),
            ScriptedCall("add", {"a": 3, "b": 3}, id="same"),
        )
    )
    response = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    ids = [call.id for call in response.tool_calls]
    assert ids[0].startswith("call_")
    assert ids[1] == "same"
    assert ids[2].startswith("call_")
    assert len(set(ids)) == 3


async def test_native_call_without_a_name_is_skipped_and_reported(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("", {}), ScriptedCall("add", {"a": 1, "b": 2})))
    response = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    assert [call.name for call in response.tool_calls] == ["add"]
    assert response.meta["tool_call_errors"]


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("eos_token", "stop"),
        ("function_call", "tool_calls"),
    ],
)
async def test_finish_reason_is_mapped(
    server: FakeChatServer, make_model: ModelFactory, reported: str, expected: str
) -> None:
    server.push(Reply.text("x", finish_reason=reported))
    response = await make_model().complete(ModelRequest(messages=USER))
    assert response.finish_reason == expected


# native mode, streamed --------------------------------------------------------------------


async def test_streamed_text_deltas_reach_on_text(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text("The answer is 5.", chunk_size=3, usage=(20, 5)))
    deltas: list[str] = []
    response = await make_model(stream=True).complete(
        ModelRequest(messages=USER, on_text=deltas.append)
    )
    assert len(deltas) > 1
    assert "".join(deltas) == "The answer is 5." == response.content
    assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 5)  # type: ignore[union-attr]
    body = server.requests[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_streamed_tool_calls_accumulate(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(
        Reply.calls(
            ScriptedCall("add", {"a": 2, "b": 3}),
            ScriptedCall("add", {"a": 40, "b": 2}),
            chunk_size=2,
        )
    )
    response = await make_model(stream=True).complete(ModelRequest(messages=USER, tools=[ADD]))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("add", {"a": 2, "b": 3}),
        ("add", {"a": 40, "b": 2}),
    ]
    assert all(c.id.startswith("call_") for c in response.tool_calls)
    assert response.finish_reason == "tool_calls"


async def test_streamed_answer_equals_the_non_streamed_one(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    reply = Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}, id="call_1"), content="Let me add.")
    server.push(reply, reply)
    whole = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    streamed = await make_model(stream=True).complete(ModelRequest(messages=USER, tools=[ADD]))
    assert streamed == whole


async def test_server_rejecting_stream_options_is_asked_again_without_them(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text("hello", reject_stream_options=True), Reply.text("again"))
    model = make_model(stream=True)
    response = await model.complete(ModelRequest(messages=USER))
    assert response.content == "hello"
    assert response.usage is None
    assert "stream_options" in server.requests[0]
    assert "stream_options" not in server.requests[1]
    await model.complete(ModelRequest(messages=USER))
    assert "stream_options" not in server.requests[2]


# hermes mode ------------------------------------------------------------------------------


async def test_hermes_mode_sends_tools_in_the_system_prompt_and_converts_history(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text("The answer is 5."))
    response = await make_model(tool_mode="hermes").complete(
        ModelRequest(messages=AFTER_TOOL, tools=[ADD])
    )
    assert response.content == "The answer is 5."
    body = server.requests[0]
    assert "tools" not in body
    assert "tool_choice" not in body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    system = body["messages"][0]["content"]
    assert system.startswith("You are a calculator.")
    assert "<tools>" in system
    assert '"add"' in system
    assert "<tool_call>" in body["messages"][2]["content"]
    response_block = body["messages"][3]["content"]
    assert response_block.startswith("<tool_response>")
    assert json.loads(response_block.split("\n")[1]) == {
        "name": "add",
        "content": {"ok": True, "output": 5},
    }


async def test_hermes_mode_parses_tool_call_blocks(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(
        Reply.text(
            'I will add.\n<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'
        )
    )
    response = await make_model(tool_mode="hermes").complete(
        ModelRequest(messages=USER, tools=[ADD])
    )
    assert response.content == "I will add."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert response.tool_calls[0].id.startswith("call_")
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    "text",
    [
        '<function=add>{"a": 2, "b": 3}</function>',
        '```json\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n```',
        '{"name": "add", "arguments": {"a": 2, "b": 3}}',
        '<tools>{"name": "add", "arguments": {"a": 2, "b": 3}}</tools>',
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_hermes_mode_reads_the_other_call_shapes_of_offered_tools(
    server: FakeChatServer, make_model: ModelFactory, text: str, stream: bool
) -> None:
    server.push(Reply.text(text, chunk_size=5))
    deltas: list[str] = []
    response = await make_model(tool_mode="hermes", stream=stream).complete(
        ModelRequest(messages=USER, tools=[ADD], on_text=deltas.append)
    )
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert response.finish_reason == "tool_calls"
    assert deltas == []  # the call was never shown to the user as text


async def test_native_mode_reads_a_call_written_as_text_by_a_server_without_a_parser(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'))
    response = await make_model().complete(ModelRequest(messages=USER, tools=[ADD]))
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert response.content is None


async def test_a_json_answer_naming_no_offered_tool_stays_text(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    answer = '{"name": "Paris", "country": "France"}'
    server.push(Reply.text(answer))
    response = await make_model(tool_mode="hermes").complete(
        ModelRequest(messages=USER, tools=[ADD])
    )
    assert response.tool_calls == []
    assert response.content == answer


async def test_hermes_mode_reports_unusable_blocks(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    server.push(Reply.text('<tool_call>{"arguments": {}}</tool_call>'))
    response = await make_model(tool_mode="hermes").complete(
        ModelRequest(messages=USER, tools=[ADD])
    )
    assert response.tool_calls == []
    assert response.meta["tool_call_errors"] == ["tool call block 1: missing tool name"]


async def test_hermes_mode_streamed_stops_forwarding_at_the_tool_call_tag(
    server: FakeChatServer, make_model: ModelFactory
) -> None:
    text = 'Adding now.<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'
    server.push(Reply.text(text, chunk_size=3))
    deltas: list[str] = []
    model = make_model(tool_mode="hermes", stream=True)
    response = await model.complete(ModelRequest(messages=USER, tools=[ADD], on_text=deltas.append))
    assert "".join(deltas) == "Adding now."
    assert response.content == "Adding now."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("add", {"a": 2, "b": 3})]
    assert "<tools>" in server.requests[0]["messages"][0]["content"]
