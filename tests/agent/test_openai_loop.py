"""The same agent loop driving an OpenAI-compatible server, through the real client.

Every test runs ``hermes.Agent`` with an ``OpenAICompatModel`` against ``FakeChatServer`` on
127.0.0.1 and checks both sides: what the agent returns and stores, and the exact request
bodies the server received.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent, RunResult
from hermes.agent.events import AgentEvent, TextDelta, TurnFinished
from hermes.models.guard import allow_model_requests
from hermes.models.openai_compat import OpenAICompatModel
from tests.agent.conftest import add, all_items, assert_pairs_complete
from tests.models.fake_chat_server import (
    FakeChatServer,
    Reply,
    ScriptedCall,
    model_settings,
)

SESSION = "session-openai-0001"
ADD_TOOL = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
ADD_RESULT = json.dumps({"ok": True, "output": 5})
HERMES_CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'

OpenAIAgentFactory = Callable[..., Agent]


@pytest.fixture(autouse=True)
def _model_requests_allowed() -> Iterator[None]:
    """These tests talk to a local fake server on purpose; the guard is restored after."""
    with allow_model_requests():
        yield


@pytest.fixture
async def make_agent(server: FakeChatServer, tmp_path: Path) -> AsyncIterator[OpenAIAgentFactory]:
    """Agents on ``tmp_path/x.db`` whose model talks to ``server`` (tiny retry waits)."""
    made: list[Agent] = []

    def factory(*, tools: Any = None, agent_options: Any = None, **model_options: Any) -> Agent:
        settings = model_settings(server, **{"max_retries": 1, **model_options})
        agent = Agent(
            model=OpenAICompatModel(**settings),
            tools=[add] if tools is None else tools,
            store=tmp_path / "x.db",
            **(agent_options or {}),
        )
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.aclose()  # closes the model's HTTP pool too


def _roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"]]


async def _collect(agent: Agent, text: str, **kw: Any) -> tuple[list[AgentEvent], RunResult]:
    events = [event async for event in agent.stream(text, session_id=SESSION, **kw)]
    last = events[-1]
    assert isinstance(last, TurnFinished)
    return events, last.result


# (a) native tools, not streamed ------------------------------------------------------------


async def test_native_tool_call_then_text_reply(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(
        Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}, id="call_add_1")),
        Reply.text("The answer is 5."),
    )
    agent = make_agent()
    result = await agent.run("what is 2+3?", session_id=SESSION, user_id="u1")
    assert result.reply == "The answer is 5."
    assert result.outcome == "ok"
    assert result.state == "awaiting_feedback"
    assert result.model == "openai:fake-model"
    [record] = result.tool_calls
    assert (record.name, record.arguments, record.ok) == ("add", {"a": 2, "b": 3}, True)
    assert record.call_id == "call_add_1"
    assert len(server.requests) == 2
    assert_pairs_complete(await all_items(agent, SESSION))


async def test_second_request_carries_the_call_and_its_paired_result(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(
        Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}, id="call_add_1")),
        Reply.text("The answer is 5."),
    )
    await make_agent().run("what is 2+3?", session_id=SESSION)
    second = server.requests[1]
    assert _roles(second) == ["user", "assistant", "tool"]
    assistant, tool_message = second["messages"][1:]
    assert assistant["content"] == ""  # never null: real servers refuse it
    [sent_call] = assistant["tool_calls"]
    assert sent_call["id"] == "call_add_1"
    assert sent_call["type"] == "function"
    assert sent_call["function"]["name"] == "add"
    assert json.loads(sent_call["function"]["arguments"]) == {"a": 2, "b": 3}
    assert tool_message == {"role": "tool", "tool_call_id": "call_add_1", "content": ADD_RESULT}


async def test_every_native_request_offers_the_tool_schema_at_temperature_0_2(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("add", {"a": 2, "b": 3})), Reply.text("5"))
    await make_agent().run("what is 2+3?", session_id=SESSION)
    for body in server.requests:
        assert body["tools"] == [ADD_TOOL]
        assert body["tool_choice"] == "auto"
        assert body["temperature"] == 0.2
        assert body["model"] == "fake-model"
        assert "stream" not in body


async def test_a_server_call_without_an_id_still_pairs_with_its_result(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}, id=None)), Reply.text("5"))
    result = await make_agent().run("what is 2+3?", session_id=SESSION)
    assistant, tool_message = server.requests[1]["messages"][1:]
    generated = assistant["tool_calls"][0]["id"]
    assert generated
    assert tool_message["tool_call_id"] == generated == result.tool_calls[0].call_id


# (b) native, streamed ----------------------------------------------------------------------


async def test_streamed_reply_arrives_as_text_deltas_that_make_the_reply(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(
        Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}, id="call_s1"), chunk_size=3),
        Reply.text("The answer is 5.", chunk_size=3),
    )
    events, result = await _collect(make_agent(stream=True), "what is 2+3?")
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1  # really streamed, piece by piece
    assert "".join(deltas) == result.reply == "The answer is 5."
    assert [(c.name, c.arguments, c.ok) for c in result.tool_calls] == [
        ("add", {"a": 2, "b": 3}, True)
    ]
    assert all(body["stream"] is True for body in server.requests)
    assert server.requests[1]["messages"][-1]["tool_call_id"] == "call_s1"


async def test_streamed_text_deltas_come_before_the_turn_finishes(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.text("Hello there, friend.", chunk_size=5))
    events, _ = await _collect(make_agent(stream=True), "hi")
    kinds = [e.type for e in events]
    assert kinds[0] == "turn_started"
    assert kinds[-1] == "turn_finished"
    first_delta = kinds.index("text_delta")
    assert kinds.index("model_call_started") < first_delta < kinds.index("model_call_finished")


# (c) hermes prompt mode ----------------------------------------------------------------------


async def test_hermes_mode_parses_a_tool_call_from_the_text(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.text(HERMES_CALL), Reply.text("The answer is 5."))
    result = await make_agent(tool_mode="hermes").run("what is 2+3?", session_id=SESSION)
    assert result.reply == "The answer is 5."
    assert [(c.name, c.arguments, c.ok) for c in result.tool_calls] == [
        ("add", {"a": 2, "b": 3}, True)
    ]


async def test_hermes_mode_sends_tools_in_the_system_prompt_and_no_tools_param(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.text(HERMES_CALL), Reply.text("The answer is 5."))
    agent = make_agent(tool_mode="hermes", agent_options={"instructions": "You are terse."})
    await agent.run("what is 2+3?", session_id=SESSION)
    for body in server.requests:
        assert "tools" not in body
        assert "tool_choice" not in body
        system = body["messages"][0]
        assert system["role"] == "system"
        assert system["content"].startswith("You are terse.")
        offered = system["content"].split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
        assert [json.loads(line) for line in offered.splitlines()] == [ADD_TOOL]


async def test_hermes_mode_returns_the_result_in_a_tool_response_block(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.text(HERMES_CALL), Reply.text("The answer is 5."))
    await make_agent(tool_mode="hermes").run("what is 2+3?", session_id=SESSION)
    second = server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert all("tool_calls" not in m for m in second)
    assert "<tool_call>" in second[2]["content"]
    response = second[3]["content"]
    assert response.startswith("<tool_response>")
    assert response.endswith("</tool_response>")
    inner = response.removeprefix("<tool_response>").removesuffix("</tool_response>")
    assert json.loads(inner) == {"name": "add", "content": {"ok": True, "output": 5}}


async def test_hermes_mode_streaming_never_shows_the_tool_call_tag(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(
        Reply.text("Let me add. " + HERMES_CALL, chunk_size=3),
        Reply.text("The answer is 5.", chunk_size=3),
    )
    agent = make_agent(tool_mode="hermes", stream=True)
    events, result = await _collect(agent, "what is 2+3?")
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "<" not in shown
    assert shown.endswith(result.reply)
    assert result.reply == "The answer is 5."
    assert result.tool_calls[0].ok


# (d), (e) failing servers ------------------------------------------------------------------


async def test_repeated_http_500_ends_the_turn_with_a_clear_error(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.default = Reply.http_error(500, "overloaded")
    agent = make_agent(max_retries=2)
    result = await agent.run("what is 2+3?", session_id=SESSION)
    assert len(server.requests) == 3  # the first attempt and two retries
    assert result.outcome == "error"
    assert result.state == "idle"
    assert result.tool_calls == []
    assert result.reply.startswith("Sorry, the model service is unavailable")
    assert "HTTP 500 after 3 attempts" in result.error["message"]
    assert result.error is not None
    assert result.error["type"] == "model_error"
    assert server.base_url in result.error["message"]


async def test_a_failed_turn_keeps_the_user_message_and_the_next_turn_works(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.default = Reply.http_error(500, "overloaded")
    agent = make_agent()
    await agent.run("remember the number 42", session_id=SESSION)
    items = await all_items(agent, SESSION)
    assert [(i.role, i.kind, i.content) for i in items[:1]] == [
        ("user", "text", "remember the number 42")
    ]
    record = await agent.store.load_session(SESSION)
    assert record is not None
    assert record.state.fsm_state == "idle"

    server.default = None  # the server recovers
    server.push(Reply.text("OK, 42."))
    result = await agent.run("did you get it?", session_id=SESSION)
    assert (result.outcome, result.reply, result.state) == ("ok", "OK, 42.", "awaiting_feedback")
    contents = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "user"]
    assert contents == ["remember the number 42", "did you get it?"]


async def test_a_500_after_a_tool_call_leaves_no_dangling_call(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("add", {"a": 2, "b": 3})))
    server.default = Reply.http_error(503, "restarting")
    agent = make_agent(max_retries=0)
    result = await agent.run("what is 2+3?", session_id=SESSION)
    assert result.outcome == "error"
    assert [c.ok for c in result.tool_calls] == [True]
    assert_pairs_complete(await all_items(agent, SESSION))
    server.default = None
    server.push(Reply.text("It was 5."))
    assert (await agent.run("so?", session_id=SESSION)).reply == "It was 5."


@pytest.mark.parametrize(
    "body",
    [b"{not json", b'{"id": "x", "object": "chat.completion"}', b"<html>502 Bad Gateway</html>"],
    ids=["broken-json", "no-choices", "html"],
)
async def test_a_malformed_answer_ends_the_turn_honestly(
    server: FakeChatServer, make_agent: OpenAIAgentFactory, body: bytes
) -> None:
    server.push(Reply.garbage(body, content_type="application/json"))
    agent = make_agent()
    result = await agent.run("hello", session_id=SESSION)
    assert len(server.requests) == 1  # malformed answers are not retried
    assert result.outcome == "error"
    assert result.state == "idle"
    assert "malformed response" in result.error["message"]
    assert result.reply.startswith("Sorry, the model server's answer could not be read")
    items = await all_items(agent, SESSION)
    assert items[0].content == "hello"
    server.push(Reply.text("Hi!"))
    assert (await agent.run("hello again", session_id=SESSION)).reply == "Hi!"


async def test_a_malformed_stream_ends_the_turn_honestly(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.sse("this is not json"))
    agent = make_agent(stream=True)
    events, result = await _collect(agent, "hello")
    assert result.outcome == "error"
    assert result.state == "idle"
    assert "answer could not be read" in result.reply
    assert not [e for e in events if isinstance(e, TextDelta)]
    server.push(Reply.text("Hi!"))
    _, recovered = await _collect(agent, "hello again")
    assert recovered.reply == "Hi!"


async def test_a_chinese_message_gets_the_error_sentence_in_chinese(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.default = Reply.http_error(500, "overloaded")
    result = await make_agent(max_retries=0).run("你好", session_id=SESSION)
    assert result.reply.startswith("抱歉，模型服务暂时不可用")


# (f) hallucinated tools ----------------------------------------------------------------------


async def test_three_unknown_tools_from_the_server_end_in_an_honest_refusal(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(
        Reply.calls(ScriptedCall("get_phone", {"company": "SF"})),
        Reply.calls(ScriptedCall("phone_book")),
        Reply.calls(ScriptedCall("query_logistics_phone")),
        Reply.text("The number is 955-FAKE."),  # must never be asked for
    )
    agent = make_agent()
    result = await agent.run("what is SF Express's phone number?", session_id=SESSION)
    assert len(server.requests) == 3
    assert server.pending == 1
    assert result.outcome == "refused"
    assert result.reply == "Sorry, I can't do that: I don't have a tool for it."
    assert [(c.name, c.ok, c.error_type) for c in result.tool_calls] == [
        ("get_phone", False, "unknown_tool"),
        ("phone_book", False, "unknown_tool"),
        ("query_logistics_phone", False, "unknown_tool"),
    ]
    assert result.state == "idle"
    assert_pairs_complete(await all_items(agent, SESSION))


async def test_an_unknown_tool_result_tells_the_server_model_what_exists(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("get_phone")), Reply.text("I cannot look that up."))
    result = await make_agent().run("phone?", session_id=SESSION)
    payload = json.loads(server.requests[1]["messages"][-1]["content"])
    assert payload["ok"] is False
    assert payload["error"]["type"] == "unknown_tool"
    assert "add" in payload["error"]["message"]
    assert result.reply == "I cannot look that up."


# (g), (h) instructions and multi-turn context ------------------------------------------------


async def test_instructions_are_the_first_system_message_of_every_request(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.calls(ScriptedCall("add", {"a": 2, "b": 3})), Reply.text("5"))
    agent = make_agent(agent_options={"instructions": "You are a careful calculator."})
    await agent.run("what is 2+3?", session_id=SESSION)
    for body in server.requests:
        assert body["messages"][0] == {"role": "system", "content": "You are a careful calculator."}
        assert _roles(body).count("system") == 1


async def test_without_instructions_no_system_message_is_sent(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.text("hi"))
    await make_agent().run("hello", session_id=SESSION)
    assert _roles(server.requests[0]) == ["user"]


async def test_a_session_keeps_its_context_over_several_turns(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(
        Reply.text("Nice to meet you, Ada."),
        Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}, id="call_t2")),
        Reply.text("2+3 is 5."),
        Reply.text("Your name is Ada."),
    )
    agent = make_agent(agent_options={"instructions": "Be brief."})
    await agent.run("My name is Ada.", session_id=SESSION)
    await agent.run("What is 2+3?", session_id=SESSION)
    result = await agent.run("What is my name?", session_id=SESSION)
    assert result.reply == "Your name is Ada."
    last = server.requests[-1]["messages"]
    assert [(m["role"], m.get("content")) for m in last if m["role"] != "tool"] == [
        ("system", "Be brief."),
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is 2+3?"),
        ("assistant", ""),
        ("assistant", "2+3 is 5."),
        ("user", "What is my name?"),
    ]
    [tool_message] = [m for m in last if m["role"] == "tool"]
    assert tool_message == {"role": "tool", "tool_call_id": "call_t2", "content": ADD_RESULT}
    assert last[4]["tool_calls"][0]["id"] == "call_t2"


async def test_sessions_do_not_see_each_other(
    server: FakeChatServer, make_agent: OpenAIAgentFactory
) -> None:
    server.push(Reply.text("Hi Ada."), Reply.text("I don't know your name."))
    agent = make_agent()
    await agent.run("My name is Ada.", session_id="session-openai-ada")
    await agent.run("What is my name?", session_id="session-openai-bob")
    assert server.requests[1]["messages"] == [{"role": "user", "content": "What is my name?"}]
