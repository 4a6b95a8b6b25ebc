"""The agent's tool pipeline (``Agent.executor``): one chain per agent, a step of your own
sees every call of a turn, and approvals travel as the approval step's signal."""

from __future__ import annotations

from typing import Any

from hermes import tool
from hermes.testing import ScriptedModel, call, calls, say
from hermes.tools import ToolResult
from hermes.tools.pipeline import Call, CallContext, Next
from tests.agent.conftest import AgentFactory, add

SENT: list[str] = []


@tool(requires_approval=True)
async def send_email(to: str) -> str:
    """Send an email to someone."""
    SENT.append(to)
    return f"sent to {to}"


class Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], CallContext]] = []

    async def __call__(self, call: Call, next: Next) -> ToolResult:
        self.seen.append((call.tool.name, dict(call.arguments), call.context))
        return await next(call)


async def test_a_custom_step_sees_each_call_of_a_turn_with_its_context(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel(
        [calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}), ids=["c1", "c2"]), say("ok")]
    )
    agent = make_agent(model, [add])
    recorder = Recorder()
    agent.executor.insert(recorder)
    result = await agent.run("add", session_id="session-pipe1", user_id="u1")
    assert [r.ok for r in result.tool_calls] == [True, True]
    seen = sorted(recorder.seen, key=lambda s: s[2].call_id)
    assert [(name, args) for name, args, _ in seen] == [
        ("add", {"a": 1, "b": 2}),
        ("add", {"a": 3, "b": 4}),
    ]
    for (_, _, ctx), call_id in zip(seen, ["c1", "c2"], strict=True):
        assert (ctx.session_id, ctx.user_id, ctx.trace_id, ctx.call_id) == (
            "session-pipe1",
            "u1",
            result.trace_id,
            call_id,
        )
        assert ctx.approved is False
        ctx.to_dict()  # what a queue worker would get: JSON data only


async def test_a_call_waiting_for_approval_never_reaches_the_steps_after_the_gate(
    make_agent: AgentFactory,
) -> None:
    SENT.clear()
    model = ScriptedModel([call("send_email", {"to": "bob@example.com"}, id="c1"), say("done")])
    agent = make_agent(model, [send_email])
    recorder = Recorder()
    agent.executor.insert(recorder)  # just before the run: after the approval gate
    asked = await agent.run("email bob", session_id="session-pipe2", user_id="u1")
    assert asked.approval_id is not None
    assert (recorder.seen, SENT) == ([], [])
    done = await agent.approve(asked.approval_id, session_id="session-pipe2", user_id="u1")
    assert SENT == ["bob@example.com"]
    assert done.tool_calls[0].ok
    ((name, arguments, ctx),) = recorder.seen
    assert (name, arguments, ctx.approved) == ("send_email", {"to": "bob@example.com"}, True)
