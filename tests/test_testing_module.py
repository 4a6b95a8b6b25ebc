"""hermes.testing itself: the scripted models, the step builders and the request guard.

These are what users of Hermes write their own tests with, so they must fail loudly and
clearly, and the guard must never be left open.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from hermes import Agent, ModelError, tool
from hermes.models.base import Model, ModelRequest, ModelResponse
from hermes.models.guard import model_requests_blocked
from hermes.models.openai_compat import OpenAICompatModel
from hermes.testing import (
    FunctionModel,
    ScriptedModel,
    ScriptExhaustedError,
    allow_model_requests,
    block_model_requests,
    call,
    calls,
    say,
)
from tests.models.fake_chat_server import FakeChatServer, Reply

SESSION = "session-testing-0001"
USER_ONLY = [{"role": "user", "content": "hi"}]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
async def agent_on() -> AsyncIterator[list[Agent]]:
    """Agents appended to this list are closed after the test."""
    made: list[Agent] = []
    yield made
    for agent in made:
        await agent.aclose()


def _agent(made: list[Agent], model: Model, tmp_path: Path) -> Agent:
    agent = Agent(model=model, tools=[add], store=tmp_path / "testing.db")
    made.append(agent)
    return agent


@pytest.fixture
def guard_restored() -> Iterator[None]:
    """Tests that flip the guard put it back exactly as they found it."""
    before = model_requests_blocked()
    yield
    block_model_requests(before)


# step builders ------------------------------------------------------------------------------


def test_say_is_a_final_text_answer() -> None:
    step = say("The answer is 5.")
    assert isinstance(step, ModelResponse)
    assert (step.content, step.tool_calls, step.finish_reason) == ("The answer is 5.", [], "stop")


def test_call_is_one_tool_call_with_the_given_id() -> None:
    step = call("add", {"a": 2, "b": 3}, id="c1")
    [tc] = step.tool_calls
    assert (tc.id, tc.name, tc.arguments, tc.arguments_error) == (
        "c1",
        "add",
        {"a": 2, "b": 3},
        None,
    )
    assert step.finish_reason == "tool_calls"
    assert step.content is None


def test_call_without_arguments_sends_an_empty_object_and_text_is_optional() -> None:
    step = call("current_time", text="Let me check.")
    assert step.tool_calls[0].arguments == {}
    assert step.content == "Let me check."


def test_call_copies_the_arguments_it_was_given() -> None:
    arguments = {"a": 1}
    step = call("add", arguments)
    arguments["a"] = 99
    assert step.tool_calls[0].arguments == {"a": 1}


def test_calls_without_ids_get_distinct_ones() -> None:
    first = calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}))
    second = call("add", {"a": 5, "b": 6})
    ids = [tc.id for tc in [*first.tool_calls, *second.tool_calls]]
    assert len(set(ids)) == 3
    assert all(i.startswith("call_") for i in ids)
    assert [tc.arguments for tc in first.tool_calls] == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_calls_use_the_ids_given_and_number_the_rest() -> None:
    step = calls(("add", {}), ("add", {}), ids=["x1"], text="two at once")
    assert step.tool_calls[0].id == "x1"
    assert step.tool_calls[1].id not in ("x1", "")
    assert step.content == "two at once"


# ScriptedModel -------------------------------------------------------------------------------


def test_scripted_model_satisfies_the_model_protocol() -> None:
    assert isinstance(ScriptedModel(), Model)
    assert isinstance(FunctionModel(lambda r: say("x")), Model)
    assert ScriptedModel(name="planner").name == "planner"


async def test_scripted_model_replays_steps_and_records_requests() -> None:
    model = ScriptedModel([say("one"), say("two")])
    first = ModelRequest(messages=USER_ONLY, session_id="s1")
    assert (await model.complete(first)).content == "one"
    assert model.remaining == 1
    assert (await model.complete(ModelRequest(messages=USER_ONLY))).content == "two"
    assert model.requests[0] is first
    assert len(model.requests) == 2
    model.assert_complete()


async def test_a_callable_step_answers_from_the_request() -> None:
    model = ScriptedModel([lambda request: say(request.messages[-1]["content"].upper())])
    assert (await model.complete(ModelRequest(messages=USER_ONLY))).content == "HI"


async def test_an_exception_step_is_raised() -> None:
    model = ScriptedModel([ModelError("server down")])
    with pytest.raises(ModelError, match="server down"):
        await model.complete(ModelRequest(messages=USER_ONLY))


async def test_add_queues_more_steps() -> None:
    model = ScriptedModel()
    model.add(say("late"))
    assert (await model.complete(ModelRequest(messages=USER_ONLY))).content == "late"


def test_assert_complete_fails_while_steps_remain() -> None:
    model = ScriptedModel([say("unused"), say("also unused")], name="greeter")
    with pytest.raises(AssertionError, match=r"'greeter' has 2 unused step\(s\)"):
        model.assert_complete()


async def test_running_out_of_steps_raises_script_exhausted() -> None:
    model = ScriptedModel([say("only")])
    await model.complete(ModelRequest(messages=USER_ONLY))
    with pytest.raises(ScriptExhaustedError, match="no step left for request #2") as caught:
        await model.complete(ModelRequest(messages=USER_ONLY))
    assert isinstance(caught.value, AssertionError)  # pytest reports it as a test failure
    assert "'hi'" in str(caught.value)  # names the message the agent was answering


# running out of steps inside an agent turn --------------------------------------------------


async def test_script_exhaustion_escapes_agent_run_loudly(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    agent = _agent(agent_on, ScriptedModel([call("add", {"a": 2, "b": 3})]), tmp_path)
    with pytest.raises(ScriptExhaustedError):
        await agent.run("what is 2+3?", session_id=SESSION)


async def test_script_exhaustion_escapes_agent_stream_loudly(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    agent = _agent(agent_on, ScriptedModel(), tmp_path)
    with pytest.raises(ScriptExhaustedError):
        async for _ in agent.stream("hello", session_id=SESSION):
            pass


async def test_after_script_exhaustion_the_error_escapes_and_the_session_is_consistent(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    # The exhaustion is not a ModelError, so it escapes agent.run loudly; the loop still leaves
    # the session consistent: state idle, the user message and the finished tool pair stored,
    # no reply.
    agent = _agent(agent_on, ScriptedModel([call("add", {"a": 2, "b": 3}, id="c1")]), tmp_path)
    with pytest.raises(ScriptExhaustedError):
        await agent.run("what is 2+3?", session_id=SESSION)
    record = await agent.store.load_session(SESSION)
    assert record is not None
    assert record.state.fsm_state == "idle"
    items = await agent.store.read_items(SESSION, after_seq=0, limit=100)
    assert [(i.role, i.kind) for i in items] == [
        ("user", "text"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
    ]


async def test_the_turn_after_script_exhaustion_recovers_and_keeps_context(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    model = ScriptedModel([call("add", {"a": 2, "b": 3}, id="c1")])
    agent = _agent(agent_on, model, tmp_path)
    with pytest.raises(ScriptExhaustedError):
        await agent.run("what is 2+3?", session_id=SESSION)
    model.add(say("It is 5."))
    result = await agent.run("well?", session_id=SESSION)
    assert (result.outcome, result.reply, result.state) == ("ok", "It is 5.", "awaiting_feedback")
    sent = model.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[0]["content"] == "what is 2+3?"
    assert sent[2]["tool_call_id"] == "c1"
    model.assert_complete()


async def test_a_model_error_step_ends_the_turn_honestly_not_loudly(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    agent = _agent(agent_on, ScriptedModel([ModelError("HTTP 503 from the model")]), tmp_path)
    result = await agent.run("hello", session_id=SESSION)
    assert result.outcome == "error"
    assert result.state == "idle"
    assert (
        "HTTP 503 from the model" in result.error["message"]
    )  # details for programs, not the person


# FunctionModel -------------------------------------------------------------------------------


async def test_function_model_with_a_sync_function(agent_on: list[Agent], tmp_path: Path) -> None:
    def script(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            return say("The answer is 5.")
        return call("add", {"a": 2, "b": 3})

    model = FunctionModel(script)
    result = await _agent(agent_on, model, tmp_path).run("what is 2+3?", session_id=SESSION)
    assert result.reply == "The answer is 5."
    assert len(model.requests) == 2
    assert [s.name for s in model.requests[0].tools] == ["add"]


async def test_function_model_with_an_async_function(agent_on: list[Agent], tmp_path: Path) -> None:
    async def script(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0)
        if request.messages[-1]["role"] == "tool":
            return say(f"Tool said: {request.messages[-1]['content']}")
        return call("add", {"a": 2, "b": 3})

    result = await _agent(agent_on, FunctionModel(script), tmp_path).run("2+3", session_id=SESSION)
    assert result.reply == 'Tool said: {"ok": true, "output": 5}'


@pytest.mark.parametrize(
    ("answer", "type_name"), [("just text", "str"), (None, "NoneType"), ({"content": "x"}, "dict")]
)
async def test_function_model_wrong_return_type_is_a_clear_type_error(
    answer: object, type_name: str
) -> None:
    model = FunctionModel(lambda request: answer)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match=f"returned {type_name}; return say") as caught:
        await model.complete(ModelRequest(messages=USER_ONLY))
    assert "ModelResponse" in str(caught.value)


async def test_function_model_wrong_return_type_escapes_agent_run(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    agent = _agent(agent_on, FunctionModel(lambda request: "oops"), tmp_path)  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="FunctionModel function returned str"):
        await agent.run("hello", session_id=SESSION)


async def test_function_model_async_wrong_return_type_is_a_type_error() -> None:
    async def script(request: ModelRequest) -> str:
        return "oops"

    model = FunctionModel(script)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="returned str"):
        await model.complete(ModelRequest(messages=USER_ONLY))


# the guard -----------------------------------------------------------------------------------


def test_the_plugin_blocks_model_requests_in_this_suite() -> None:
    assert model_requests_blocked()  # tests/conftest.py loads hermes.testing as a plugin


async def test_a_real_request_outside_allow_fails_with_blocked() -> None:
    with FakeChatServer(default=Reply.text("should not be reached")) as server:
        async with OpenAICompatModel(base_url=server.base_url, model="fake-model") as model:
            with pytest.raises(ModelError, match="blocked") as caught:
                await model.complete(ModelRequest(messages=USER_ONLY))
        assert server.requests == []  # nothing left the process
    assert "openai:fake-model" in caught.value.message


async def test_a_real_request_inside_allow_goes_through() -> None:
    with FakeChatServer([Reply.text("hello from the server")]) as server:
        async with OpenAICompatModel(base_url=server.base_url, model="fake-model") as model:
            with allow_model_requests():
                response = await model.complete(ModelRequest(messages=USER_ONLY))
        assert response.content == "hello from the server"
        assert len(server.requests) == 1
    assert model_requests_blocked()


async def test_a_blocked_request_in_an_agent_is_an_honest_error_turn(
    agent_on: list[Agent], tmp_path: Path
) -> None:
    with FakeChatServer(default=Reply.text("should not be reached")) as server:
        model = OpenAICompatModel(base_url=server.base_url, model="fake-model")
        result = await _agent(agent_on, model, tmp_path).run("hello", session_id=SESSION)
        assert server.requests == []
    assert result.outcome == "error"
    assert "blocked" in result.error["message"]


def _fail_inside_allow(seen: list[bool]) -> None:
    with allow_model_requests():
        seen.append(model_requests_blocked())
        raise RuntimeError("inside")


def test_allow_restores_the_guard_after_an_exception() -> None:
    assert model_requests_blocked()
    seen: list[bool] = []
    with pytest.raises(RuntimeError, match="inside"):
        _fail_inside_allow(seen)
    assert seen == [False]
    assert model_requests_blocked()


def test_allow_restores_the_previous_setting_when_nested(guard_restored: None) -> None:
    with allow_model_requests():
        with allow_model_requests():
            assert not model_requests_blocked()
        assert not model_requests_blocked()
    assert model_requests_blocked()
    block_model_requests(False)
    with allow_model_requests():
        pass
    assert not model_requests_blocked()  # it restores what was there, not "blocked"
