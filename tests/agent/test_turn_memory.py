"""Memory off is a null TurnMemory (STYLE §13): a turn of an agent without memory stores what
it always stored, its tools see no memory in their extras, and the memory package never loads.

Real SQLite files in tmp_path; FunctionModel scripts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from hermes import tool
from hermes.agent.turn_memory import NO_MEMORY, NO_TURN_MEMORY, TurnMemory
from hermes.models.base import ModelRequest, ModelResponse, ToolCall
from hermes.testing import FunctionModel, call, say
from hermes.tools import ToolContext, ToolRegistry, ToolResult
from tests.agent.conftest import AgentFactory, add, all_items

SEEN_EXTRAS: list[list[str]] = []


@tool
def extras_seen(*, ctx: ToolContext) -> str:
    """Report the ToolContext extras a call gets."""
    SEEN_EXTRAS.append(sorted(ctx.extras))
    return "seen"


def adding(request: ModelRequest) -> ModelResponse:
    if request.messages[-1]["role"] == "tool":
        return say("The answer is 5.")
    return call("add", {"a": 2, "b": 3})


async def test_a_turn_with_memory_off_stores_what_it_always_stored(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(FunctionModel(adding))
    result = await agent.run("remember: what is 2+3?", session_id="s-nomem-01", user_id="u1")
    items = await all_items(agent, "s-nomem-01")
    (record,) = result.tool_calls
    assert record.ok
    assert record.filled_from_memory is None
    assert [(i.role, i.kind, i.tool_name) for i in items] == [
        ("user", "text", None),
        ("assistant", "tool_call", "add"),
        ("tool", "tool_result", "add"),
        ("assistant", "text", None),
    ]
    call_item, result_item = items[1], items[2]
    assert "filled_from_memory" not in (call_item.meta or {})
    assert "memory_note" not in result_item.content
    assert items[-1].content == "The answer is 5."
    assert items[-1].meta is None
    record_state = await agent.store.load_session("s-nomem-01")
    assert record_state is not None
    assert "working_memory" not in record_state.state.scratch


async def test_tools_of_an_agent_without_memory_get_no_memory_extras(
    make_agent: AgentFactory,
) -> None:
    SEEN_EXTRAS.clear()

    def script(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            return say("ok")
        return call("extras_seen", {})

    agent = make_agent(FunctionModel(script), tools=[extras_seen])
    await agent.run("记住这个", session_id="s-nomem-02", user_id="u1")
    (seen,) = SEEN_EXTRAS
    assert not [key for key in seen if "memory" in key]


def test_the_null_turn_memory_does_nothing() -> None:
    response = ModelResponse(tool_calls=[ToolCall("c1", "add", {"a": 1})])
    tm = TurnMemory()
    assert tm.fill(ToolRegistry([add]), response) is response
    assert tm.call_meta() is None
    assert tm.result_notes() is None
    assert tm.filled_for("c1") is None
    assert tm.tool_extras() == {}
    scratch: dict[str, Any] = {"pending": 1}
    tm.observe(response.tool_calls, [ToolResult(ok=True, output=1)])
    tm.finish(scratch)
    assert scratch == {"pending": 1}


async def test_the_null_hook_begins_every_turn_with_the_null_turn_memory(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(FunctionModel(adding))
    assert agent._runtime.memory is NO_MEMORY
    # A turn is a TurnFacts; the null hook reads nothing of it.
    began = await NO_MEMORY.begin(None, "hello", ToolRegistry(), 1000)  # type: ignore[arg-type]
    assert began == (NO_TURN_MEMORY, None)


def test_an_agent_without_memory_never_imports_the_memory_package(tmp_path: Path) -> None:
    # A fresh interpreter: this test process has loaded the memory package for other tests.
    program = textwrap.dedent(
        f"""
        import asyncio, sys
        from hermes import Agent, tool
        from hermes.testing import FunctionModel, call, say

        @tool
        def add(a: int, b: int) -> int:
            '''Add two integers.'''
            return a + b

        def script(request):
            if request.messages[-1]["role"] == "tool":
                return say("5")
            return call("add", {{"a": 2, "b": 3}})

        async def main():
            agent = Agent(model=FunctionModel(script), tools=[add, "calculator"],
                          store={str(tmp_path / "h.db")!r})
            try:
                result = await agent.run("记住 2+3", session_id="s-plain-01", user_id="u1")
                assert result.tool_calls[0].ok, result
            finally:
                await agent.aclose()

        asyncio.run(main())
        loaded = sorted(m for m in sys.modules if m.startswith("hermes.memory"))
        assert not loaded, loaded
        assert "hermes.agent.memory_step" not in sys.modules
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", program],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
