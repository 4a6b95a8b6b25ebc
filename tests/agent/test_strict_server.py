"""What Hermes sends is what real OpenAI-compatible servers accept (issue: llama-cpp-python).

The fake server runs ``strict``: like llama-cpp-python (and llama.cpp's server with a strict chat
template) it answers HTTP 500 to an assistant message whose ``content`` is null and to a
``system`` message anywhere but first. Every turn shape Hermes produces — a tool call in native
and Hermes mode, a later turn rebuilt from the stored history, the memory note, the
correction of a proposal, imported history — must pass it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent, tool
from hermes.memory.facade import Memory
from hermes.models.guard import allow_model_requests
from hermes.models.openai_compat import OpenAICompatModel
from tests.agent.conftest import add
from tests.models.fake_chat_server import FakeChatServer, Reply, ScriptedCall, model_settings

SESSION = "session-strict-0001"
Factory = Callable[..., Agent]


@pytest.fixture(autouse=True)
def _model_requests_allowed() -> Iterator[None]:
    with allow_model_requests():
        yield


@pytest.fixture
def strict() -> Iterator[FakeChatServer]:
    with FakeChatServer(strict=True) as fake:
        yield fake


@pytest.fixture
async def make_agent(strict: FakeChatServer, tmp_path: Path) -> AsyncIterator[Factory]:
    made: list[Agent] = []

    def factory(*, model_options: Any = None, **agent_options: Any) -> Agent:
        settings = model_settings(strict, **{"max_retries": 0, **(model_options or {})})
        agent = Agent(
            model=OpenAICompatModel(**settings),
            tools=agent_options.pop("tools", [add]),
            store=tmp_path / "x.db",
            **agent_options,
        )
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.aclose()


def _assert_well_formed(server: FakeChatServer) -> None:
    assert server.refusals == []
    for body in server.requests:
        roles = [m["role"] for m in body["messages"]]
        assert roles.count("system") <= 1
        assert "system" not in roles[1:]
        assert all(m.get("content") is not None for m in body["messages"])


@pytest.mark.parametrize("tool_mode", ["native", "hermes"])
async def test_a_turn_with_a_tool_call_and_the_next_turn_pass_a_strict_server(
    strict: FakeChatServer, make_agent: Factory, tool_mode: str
) -> None:
    call = (
        Reply.calls(ScriptedCall("add", {"a": 2, "b": 3}))
        if tool_mode == "native"
        else Reply.text('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>')
    )
    strict.push(call, Reply.text("The answer is 5."), Reply.text("You asked about 2+3."))
    agent = make_agent(instructions="Be brief.", model_options={"tool_mode": tool_mode})
    first = await agent.run("what is 2+3?", session_id=SESSION)
    assert (first.outcome, first.reply) == ("ok", "The answer is 5.")
    second = await agent.run("what did I ask?", session_id=SESSION)  # history rebuilt
    assert (second.outcome, second.reply) == ("ok", "You asked about 2+3.")
    _assert_well_formed(strict)


async def test_the_memory_note_travels_in_the_one_system_message(
    strict: FakeChatServer, make_agent: Factory, tmp_path: Path
) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False)
    try:
        strict.push(Reply.text("好的，记住了。"), Reply.text("你住在巴黎。"))
        agent = make_agent(instructions="Be brief.", memory=memory)
        await agent.run("记住我住在巴黎。", session_id=SESSION, user_id="u1")
        assert await memory.drain()
        result = await agent.run("我住在哪里？", session_id="session-strict-0002", user_id="u1")
        assert result.outcome == "ok"
        _assert_well_formed(strict)
        system = strict.requests[-1]["messages"][0]
        assert system["role"] == "system"
        assert system["content"].startswith("Be brief.")
        assert "巴黎" in system["content"]  # the recalled memory came with it
    finally:
        await memory.aclose()


async def test_a_correction_note_travels_in_the_one_system_message(
    strict: FakeChatServer, make_agent: Factory
) -> None:
    @tool(requires_approval=True)
    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    strict.push(
        Reply.calls(ScriptedCall("send_email", {"to": "bob@example.com"})),
        Reply.text("Understood, to whom then?"),
    )
    agent = make_agent(instructions="Be brief.", tools=[send_email])
    first = await agent.run("email bob", session_id=SESSION)
    assert first.state == "awaiting_confirmation"
    second = await agent.run("wait, send it to alice instead", session_id=SESSION)
    assert second.outcome == "ok"
    _assert_well_formed(strict)
    system = strict.requests[-1]["messages"][0]["content"]
    assert system.startswith("Be brief.")
    assert "NOT run" in system


async def test_imported_history_with_null_content_and_late_system_messages_passes(
    strict: FakeChatServer, make_agent: Factory
) -> None:
    agent = make_agent()
    agent.import_history(
        SESSION,
        [
            {"role": "system", "content": "You are a calculator."},
            {"role": "user", "content": "2+3?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true, "output": 5}'},
            {"role": "assistant", "content": "5"},
            {"role": "system", "content": "The user prefers short answers."},
        ],
    )
    strict.push(Reply.text("Yes."))
    result = await agent.run("did you get that?", session_id=SESSION)
    assert result.outcome == "ok"
    _assert_well_formed(strict)


async def test_one_refused_request_does_not_poison_the_session(
    strict: FakeChatServer, make_agent: Factory
) -> None:
    strict.push(
        Reply.calls(ScriptedCall("add", {"a": 2, "b": 3})),
        Reply.http_error(500, "1 validation error for Request: Input should be a valid string"),
        Reply.text("Back again."),
    )
    agent = make_agent(model_options={"max_retries": 2})
    failed = await agent.run("what is 2+3?", session_id=SESSION)
    assert failed.outcome == "error"
    assert failed.error is not None
    assert failed.error["kind"] == "request_rejected"
    assert len(strict.requests) == 2  # the refused request was not sent again
    recovered = await agent.run("hello?", session_id=SESSION)
    assert (recovered.outcome, recovered.reply) == ("ok", "Back again.")
    _assert_well_formed(strict)
