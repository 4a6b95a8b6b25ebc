"""When every tool call of a turn failed, the model is told so and the result says so.

seed 002 §2.3: an honest failure beats a wrong success. A model that called a tool that does not
exist and then says "已为您预订" (booked for you) must not be the last word: its next request
carries a plain note that no action succeeded, and ``RunResult.tools_failed`` (``"tools_failed":
true`` in ``run --json``) marks the turn for the program that shows the reply.
"""

from __future__ import annotations

import json
from typing import Any

from hermes import tool
from hermes.agent.tools_step import NOTHING_DONE_NOTE
from hermes.models.base import ModelRequest
from hermes.testing import FunctionModel, ScriptedModel, call, say
from tests.agent.conftest import AgentFactory, add

BOOKING = {"hotel": "Hilton", "nights": 2}


def _tool_messages(request: ModelRequest) -> list[dict[str, Any]]:
    return [m for m in request.messages if m["role"] == "tool"]


def _noted(request: ModelRequest) -> bool:
    return any(
        json.loads(m["content"]).get("turn_note") == NOTHING_DONE_NOTE
        for m in _tool_messages(request)
    )


async def test_a_model_claiming_a_booking_after_an_unknown_tool_is_marked(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("book_hotel", BOOKING), say("已为您预订希尔顿酒店两晚。")])
    agent = make_agent(model)
    result = await agent.run("帮我订希尔顿两晚", session_id="session-tf-0001")
    assert [c.ok for c in result.tool_calls] == [False]
    assert result.tools_failed is True
    assert result.to_json_dict()["tools_failed"] is True
    told = model.requests[1]
    assert _noted(told)
    note = json.loads(_tool_messages(told)[-1]["content"])["turn_note"]
    assert "no action was carried out" in note
    assert "没有执行任何操作" in note


async def test_invalid_arguments_and_tool_errors_count_as_failures(
    make_agent: AgentFactory,
) -> None:
    @tool
    def broken(x: int) -> int:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel(
        [call("add", {"a": "two", "b": 3}), call("broken", {"x": 1}), say("Done!")]
    )
    agent = make_agent(model, tools=[add, broken])
    result = await agent.run("do it", session_id="session-tf-0002")
    assert [c.ok for c in result.tool_calls] == [False, False]
    assert result.tools_failed is True
    assert _noted(model.requests[1])
    assert _noted(model.requests[2])


async def test_a_turn_that_recovers_is_not_marked(make_agent: AgentFactory) -> None:
    model = ScriptedModel(
        [call("add", {"a": "two", "b": 3}), call("add", {"a": 2, "b": 3}), say("It is 5.")]
    )
    agent = make_agent(model)
    result = await agent.run("what is 2+3?", session_id="session-tf-0003")
    assert [c.ok for c in result.tool_calls] == [False, True]
    assert result.tools_failed is False
    assert "tools_failed" not in result.to_json_dict()
    assert _noted(model.requests[1])  # after the first step nothing had succeeded yet
    last = _tool_messages(model.requests[2])[-1]
    assert "turn_note" not in json.loads(last["content"])  # the second call succeeded


async def test_a_turn_without_tool_calls_is_not_marked(make_agent: AgentFactory) -> None:
    result = await make_agent(ScriptedModel([say("Hello.")])).run(
        "hi", session_id="session-tf-0004"
    )
    assert result.tools_failed is False
    assert "tools_failed" not in result.to_json_dict()


async def test_a_call_waiting_for_approval_is_not_a_failure(make_agent: AgentFactory) -> None:
    @tool(requires_approval=True)
    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    agent = make_agent(ScriptedModel([call("send_email", {"to": "a@b.c"})]), tools=[send_email])
    result = await agent.run("email a@b.c", session_id="session-tf-0005")
    assert result.state == "awaiting_confirmation"
    assert result.tools_failed is False


async def test_usage_is_summed_over_the_turn_when_the_model_reports_it(
    make_agent: AgentFactory,
) -> None:
    from hermes.models.base import ModelResponse, Usage

    def script(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            response = say("5")
        else:
            response = call("add", {"a": 2, "b": 3})
        response.usage = Usage(input_tokens=10, output_tokens=3)
        return response

    result = await make_agent(FunctionModel(script)).run("2+3?", session_id="session-tf-0006")
    assert result.usage == {"prompt_tokens": 20, "completion_tokens": 6}
    assert result.to_json_dict()["usage"] == {"prompt_tokens": 20, "completion_tokens": 6}


async def test_no_usage_key_when_the_model_reports_none(make_agent: AgentFactory) -> None:
    result = await make_agent(ScriptedModel([say("hi")])).run("hi", session_id="session-tf-0007")
    assert result.usage is None
    assert "usage" not in result.to_json_dict()
