"""The agent loop: model → tools → model, errors as data, limits, events."""

from __future__ import annotations

import asyncio
import json

import pytest

from hermes import Agent, tool
from hermes.agent.events import (
    ModelCallStarted,
    StateChanged,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)
from hermes.errors import ModelError
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import FunctionModel, ScriptedModel, call, calls, say
from tests.agent.conftest import AgentFactory, add, all_items, assert_pairs_complete, wait_all


def _design_script(request: ModelRequest) -> ModelResponse:
    if request.messages[-1]["role"] == "tool":
        return say("The answer is 5.")
    return call("add", {"a": 2, "b": 3})


async def test_design_example_runs_a_tool_and_replies(make_agent: AgentFactory) -> None:
    agent = make_agent(FunctionModel(_design_script))
    result = await agent.run("what is 2+3?", session_id="session-0001", user_id="u1")
    assert result.reply == "The answer is 5."
    assert result.state == "awaiting_feedback"
    assert len(result.trace_id) == 32
    [tc] = result.tool_calls
    assert (tc.name, tc.arguments, tc.ok) == ("add", {"a": 2, "b": 3}, True)
    assert result.to_json_dict()["tool_calls"] == [
        {"name": "add", "arguments": {"a": 2, "b": 3}, "ok": True}
    ]


async def test_tool_result_reaches_the_model_as_a_paired_tool_message(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("add", {"a": 2, "b": 3}, id="c1"), say("5")])
    agent = make_agent(model)
    await agent.run("2+3?", session_id="session-0002")
    model.assert_complete()
    second = model.requests[1].messages
    assert second[-2]["role"] == "assistant"
    assert second[-2]["tool_calls"][0]["id"] == "c1"
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": json.dumps({"ok": True, "output": 5}),
    }
    assert [s.name for s in model.requests[0].tools] == ["add"]


async def test_invalid_arguments_go_back_to_the_model_which_can_correct_them(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(
        [call("add", {"a": "two", "b": 3}), call("add", {"a": "2", "b": 3}), say("5")]
    )
    result = await make_agent(model).run("2+3?", session_id="session-0003")
    first_result = json.loads(model.requests[1].messages[-1]["content"])
    assert first_result["ok"] is False
    assert first_result["error"]["type"] == "invalid_arguments"
    assert "a" in first_result["error"]["message"]
    assert [c.ok for c in result.tool_calls] == [False, True]
    assert result.tool_calls[1].arguments == {"a": "2", "b": 3}  # as the model sent it
    assert result.reply == "5"


async def test_a_raising_tool_becomes_an_error_result(make_agent: AgentFactory) -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel([call("explode"), say("it failed")])
    result = await make_agent(model, tools=[explode]).run("go", session_id="session-0004")
    payload = json.loads(model.requests[1].messages[-1]["content"])
    assert payload["error"]["type"] == "execution_error"
    assert "disk on fire" in payload["error"]["message"]
    assert result.reply == "it failed"
    assert result.outcome == "ok"


async def test_three_hallucinated_tools_end_the_turn_honestly(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("query_logistics_phone"), call("get_phone"), call("phone_book")])
    agent = make_agent(model)
    result = await agent.run("物流公司电话是多少？", session_id="session-0005")
    model.assert_complete()
    assert result.outcome == "refused"
    assert "不在我的能力范围" in result.reply
    assert [c.ok for c in result.tool_calls] == [False, False, False]
    assert_pairs_complete(await all_items(agent, "session-0005"))


async def test_same_result_twice_is_pointed_out_to_the_model(make_agent: AgentFactory) -> None:
    model = ScriptedModel([call("add", {"a": 1, "b": 1}), call("add", {"a": 1, "b": 1}), say("2")])
    await make_agent(model).run("1+1", session_id="session-0006")
    first = json.loads(model.requests[1].messages[-1]["content"])
    second = json.loads(model.requests[2].messages[-1]["content"])
    assert "note" not in first
    assert "same result" in second["note"]


async def test_max_iterations_ends_with_an_honest_reply(make_agent: AgentFactory) -> None:
    model = FunctionModel(lambda r: call("add", {"a": len(r.messages), "b": 0}))
    agent = make_agent(model, max_iterations=3)
    result = await agent.run("loop forever", session_id="session-0007")
    assert result.outcome == "max_iterations"
    assert result.iterations == 3
    assert len(model.requests) == 3
    assert "3" in result.reply
    assert result.state == "idle"


async def test_model_failure_gives_a_clear_reply_and_keeps_the_message(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([ModelError("model server http://x/v1 answered HTTP 500")])
    agent = make_agent(model)
    result = await agent.run("hello", session_id="session-0008")
    assert result.outcome == "error"
    # The person gets a plain sentence and the trace id; details stay in the log and error.
    assert "unavailable" in result.reply
    assert result.trace_id[:12] in result.reply
    assert "http://x/v1" not in result.reply
    assert result.error == {
        "type": "model_error",
        "message": "model server http://x/v1 answered HTTP 500",
    }
    assert result.state == "idle"
    items = await all_items(agent, "session-0008")
    assert next((i.role, i.content) for i in items) == ("user", "hello")


async def test_model_failure_after_tool_calls_leaves_no_dangling_call(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([call("add", {"a": 1, "b": 2}), ModelError("down")])
    agent = make_agent(model)
    await agent.run("1+2", session_id="session-0009")
    assert_pairs_complete(await all_items(agent, "session-0009"))
    model.add(say("3"))
    assert (await agent.run("again", session_id="session-0009")).reply == "3"


async def test_turn_timeout_closes_pending_calls_and_next_turn_works(
    make_agent: AgentFactory,
) -> None:
    @tool(timeout=30)
    async def hang() -> str:
        """Never returns in time."""
        await asyncio.sleep(30)
        return "late"

    model = ScriptedModel([call("hang", id="h1")])
    agent = make_agent(model, tools=[hang, add], turn_timeout=0.3)
    result = await agent.run("wait", session_id="session-0010")
    assert result.outcome == "timeout"
    assert result.state == "idle"
    items = await all_items(agent, "session-0010")
    assert_pairs_complete(items)
    [res] = [i for i in items if i.kind == "tool_result"]
    assert json.loads(res.content)["error"]["type"] == "timeout"
    model.add(say("ok now"))
    assert (await agent.run("hi", session_id="session-0010")).reply == "ok now"


async def test_independent_calls_of_one_response_run_concurrently(
    make_agent: AgentFactory,
) -> None:
    barrier = asyncio.Barrier(2)

    @tool
    async def meet(name: str) -> str:
        """Wait until the other call arrives too."""
        await asyncio.wait_for(barrier.wait(), 5)
        return name

    model = ScriptedModel([calls(("meet", {"name": "a"}), ("meet", {"name": "b"})), say("met")])
    result = await make_agent(model, tools=[meet]).run("go", session_id="session-0011")
    assert [c.ok for c in result.tool_calls] == [True, True]


async def test_calls_to_non_parallel_tools_run_in_order(make_agent: AgentFactory) -> None:
    log: list[str] = []

    @tool(parallel_safe=False)
    async def step(name: str, delay: float) -> str:
        """Record start and end."""
        log.append(f"start {name}")
        await asyncio.sleep(delay)
        log.append(f"end {name}")
        return name

    model = ScriptedModel(
        [
            calls(("step", {"name": "a", "delay": 0.05}), ("step", {"name": "b", "delay": 0})),
            say("done"),
        ]
    )
    await make_agent(model, tools=[step]).run("go", session_id="session-0012")
    assert log == ["start a", "end a", "start b", "end b"]


async def test_stream_yields_typed_events_in_order(make_agent: AgentFactory) -> None:
    agent = make_agent(ScriptedModel([call("add", {"a": 1, "b": 2}), say("3")]))
    events = [e async for e in agent.stream("1+2", session_id="session-0013")]
    kinds = [type(e) for e in events]
    assert kinds[0] is TurnStarted
    assert kinds[-1] is TurnFinished
    assert ModelCallStarted in kinds
    assert ToolCallStarted in kinds
    assert ToolCallFinished in kinds
    assert kinds.index(ToolCallStarted) < kinds.index(ToolCallFinished)
    changes = [(e.source, e.dest) for e in events if isinstance(e, StateChanged)]
    assert changes == [
        ("idle", "parsing_intent"),
        ("parsing_intent", "executing_tool"),
        ("executing_tool", "parsing_intent"),
        ("parsing_intent", "awaiting_feedback"),
    ]
    final = events[-1]
    assert isinstance(final, TurnFinished)
    assert final.result.reply == "3"


async def test_turns_of_one_session_never_interleave(make_agent: AgentFactory) -> None:
    @tool
    async def slow(n: int) -> int:
        """Take a while."""
        await asyncio.sleep(0.05)
        return n

    def script(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if last["role"] == "tool":
            return say(f"done {last['content']}")
        return call("slow", {"n": int(last["content"])})

    agent = make_agent(FunctionModel(script), tools=[slow])
    await wait_all(*(agent.run(str(n), session_id="session-0014") for n in range(4)))
    items = await all_items(agent, "session-0014")
    roles = [(i.role, i.kind) for i in items]
    assert (
        roles
        == [
            ("user", "text"),
            ("assistant", "tool_call"),
            ("tool", "tool_result"),
            ("assistant", "text"),
        ]
        * 4
    )


async def test_different_sessions_run_in_parallel(make_agent: AgentFactory) -> None:
    barrier = asyncio.Barrier(2)

    @tool
    async def meet() -> str:
        """Needs both sessions in flight at once."""
        await asyncio.wait_for(barrier.wait(), 5)
        return "met"

    def script(request: ModelRequest) -> ModelResponse:
        return say("ok") if request.messages[-1]["role"] == "tool" else call("meet")

    agent = make_agent(FunctionModel(script), tools=[meet])
    results = await wait_all(
        agent.run("a", session_id="session-0015"), agent.run("b", session_id="session-0016")
    )
    assert [r.tool_calls[0].ok for r in results] == [True, True]


async def test_handle_links_the_reply_to_the_request(make_agent: AgentFactory) -> None:
    from hermes import Message

    agent = make_agent(ScriptedModel([say("pong")]))
    request = Message.request("ping", channel="webhook", session_id="session-0017", user_id="u9")
    reply = await agent.handle(request)
    assert reply.msg_type == "response"
    assert reply.meta["reply_to"] == request.msg_id
    assert reply.meta["trace_id"] == request.trace_id
    assert reply.meta["session_id"] == "session-0017"
    assert reply.content == "pong"


async def test_no_model_means_the_offline_brain_with_builtin_tools(tmp_path: object) -> None:
    agent = Agent(store=f"{tmp_path}/brain.db")
    try:
        first = await agent.run("15乘以27等于多少？", session_id="session-0018")
        second = await agent.run("再加100呢？", session_id="session-0018")
    finally:
        await agent.aclose()
    assert "405" in first.reply
    assert "505" in second.reply
    assert second.tool_calls[0].arguments == {"expression": "405+100"}


def test_unknown_builtin_name_is_a_clear_error(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="unknown built-in tool 'nope'"):
        Agent(tools=["nope"], store=f"{tmp_path}/x.db")


async def test_a_busy_session_can_be_refused_instead_of_queued() -> None:
    from hermes.errors import SessionBusyError
    from hermes.session.locks import LocalSessionLocks

    locks = LocalSessionLocks()
    async with locks.claim("session-0019", wait=0):
        assert locks.busy("session-0019")
        with pytest.raises(SessionBusyError):
            async with locks.claim("session-0019", wait=0):
                pass
    assert not locks.busy("session-0019")
    assert len(locks) == 0  # no entry is kept for an idle session
