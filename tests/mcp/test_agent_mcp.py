"""MCP servers inside an Agent: tools join the registry per turn, never shadow local ones,
never block a turn, and go away with the server (seed 001 §4.1–4.3)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from hermes import Agent, tool
from hermes.agent.remote_tools import tools_tokens
from hermes.mcp import McpManager, ServerConfig, remote_tool
from hermes.models.base import ToolSpec
from hermes.testing import ScriptedModel, call, say
from hermes.tools.base import Tool, ToolResult
from tests.mcp.conftest import SERVER_SCRIPT, pid_alive, stdio_config


@tool
def calc__add(a: int, b: int) -> int:
    """A local tool whose name a remote one would take."""
    return -1


@tool
def calc__echo(text: str) -> str:
    """A local tool that takes a remote tool's name after the agent was built."""
    return text


async def test_remote_tools_are_offered_and_called_through_the_agent(tmp_path: Path) -> None:
    model = ScriptedModel([call("calc__add", {"a": 2, "b": 3}), say("5")])
    agent = Agent(model=model, store=tmp_path / "h.db", mcp_servers={"calc": stdio_config()})
    async with agent:
        status = await agent.connect_mcp()
        assert [s["state"] for s in status] == ["ready"]
        result = await agent.run("2+3?", session_id="mcp-agent-0001")
    assert result.reply == "5"
    assert [(c.name, c.ok) for c in result.tool_calls] == [("calc__add", True)]
    offered = {spec.name for spec in model.requests[0].tools}
    assert {"calc__add", "calc__echo", "calculator", "current_time"} <= offered


async def test_a_local_tool_is_never_shadowed_by_a_remote_one(tmp_path: Path) -> None:
    model = ScriptedModel([call("calc__add", {"a": 2, "b": 3}), say("done")])
    agent = Agent(
        model=model,
        tools=[calc__add],
        store=tmp_path / "h.db",
        mcp_servers={"calc": stdio_config()},
    )
    async with agent:
        await agent.connect_mcp()
        result = await agent.run("add", session_id="mcp-agent-0002")
        collisions = agent.mcp.manager.collisions if agent.mcp is not None else []
    assert result.tool_calls[0].ok
    local = agent.tools.get("calc__add")
    assert local is not None
    assert local.description.startswith("A local tool")  # the local tool stayed in place
    assert any("calc__add" in c.reason for c in collisions)


async def test_a_turn_never_waits_for_a_server_and_a_late_one_joins_later(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    # The server starts only once the test opens the gate: until then it is "connecting".
    script = tmp_path / "late.sh"
    script.write_text(
        f'#!/bin/sh\nwhile [ ! -f "{gate}" ]; do sleep 0.05; done\n'
        f'exec "{sys.executable}" "{SERVER_SCRIPT}"\n'
    )
    script.chmod(0o755)
    config = ServerConfig(command=str(script), connect_timeout=60)
    model = ScriptedModel([say("first"), say("second")])
    agent = Agent(model=model, store=tmp_path / "h.db", mcp_servers={"late": config})
    async with agent:
        first = await agent.run("hi", session_id="mcp-agent-0003")
        assert first.reply == "first"
        assert agent.mcp is not None
        # The turn is over while the server is still held back: it did not wait for it.
        assert agent.mcp.manager.connection("late").state == "connecting"
        assert not any(s.name.startswith("late__") for s in model.requests[0].tools)
        gate.touch()
        await agent.connect_mcp()
        await agent.run("again", session_id="mcp-agent-0003")
    assert any(s.name == "late__add" for s in model.requests[1].tools)


async def test_a_local_tool_registered_later_is_kept_and_reported(tmp_path: Path) -> None:
    agent = Agent(
        model=ScriptedModel([]), store=tmp_path / "h.db", mcp_servers={"calc": stdio_config()}
    )
    local = agent.tools.register(calc__add)
    async with agent:
        await agent.connect_mcp()
        assert agent.tools.get("calc__add") is local
        assert "calc__echo" in agent.tools
        assert agent.mcp is not None
        assert any("calc__add" in c.reason for c in agent.mcp.manager.collisions)
        # A local tool that takes a remote tool's name later survives the next sync, which
        # removes the remote tools of a server that went away.
        echo = agent.tools.register(calc__echo, replace=True)
        await agent.mcp.manager.connection("calc").aclose()
        agent.mcp.sync()
        assert agent.tools.get("calc__echo") is echo
        assert agent.tools.get("calc__add") is local
        assert "calc__fail" not in agent.tools


async def test_a_failed_server_leaves_the_agent_working(tmp_path: Path) -> None:
    broken = ServerConfig(command="hermes-no-such-mcp-server-xyz", connect_timeout=3)
    model = ScriptedModel([call("calculator", {"expression": "6*7"}), say("42")])
    agent = Agent(
        model=model,
        store=tmp_path / "h.db",
        mcp_servers={"broken": broken, "calc": stdio_config()},
    )
    async with agent:
        status = {s["name"]: s for s in await agent.connect_mcp()}
        result = await agent.run("6*7", session_id="mcp-agent-0004")
    assert status["calc"]["state"] == "ready"
    assert status["broken"]["error"]
    assert "broken" in status["broken"]["error"]
    assert result.reply == "42"
    assert result.tool_calls[0].ok


async def test_aclose_stops_the_server_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    agent = Agent(
        model=ScriptedModel([]),
        store=tmp_path / "h.db",
        mcp_servers={"calc": stdio_config("--pid-file", str(pid_file))},
    )
    await agent.connect_mcp()
    pid = int(pid_file.read_text())
    assert pid_alive(pid)
    await agent.aclose()
    for _ in range(50):
        if not pid_alive(pid):
            break
        await asyncio.sleep(0.1)
    assert not pid_alive(pid)


async def test_a_manager_passed_in_stays_open_for_its_owner(tmp_path: Path) -> None:
    manager = McpManager({"calc": stdio_config()})
    try:
        agent = Agent(model=ScriptedModel([]), store=tmp_path / "h.db", mcp_servers=manager)
        await agent.connect_mcp()
        await agent.aclose()
        assert manager.connection("calc").state == "ready"
    finally:
        await manager.aclose()


async def test_remote_tools_leave_the_registry_when_their_server_is_gone(tmp_path: Path) -> None:
    agent = Agent(
        model=ScriptedModel([]), store=tmp_path / "h.db", mcp_servers={"calc": stdio_config()}
    )
    async with agent:
        await agent.connect_mcp()
        assert "calc__add" in agent.tools
        assert agent.mcp is not None
        await agent.mcp.manager.connection("calc").aclose()
        agent.mcp.sync()
        assert "calc__add" not in agent.tools
        assert "calculator" in agent.tools


class _Manager(McpManager):
    """A manager without servers whose offered tools and version the test sets."""

    def __init__(self, offered: list[Tool]) -> None:
        super().__init__({})
        self.offered = offered
        self.bumps = 0

    @property
    def version(self) -> int:
        return self.bumps

    def tools(self, *, reserved: Collection[str] = ()) -> list[Tool]:
        return [t for t in self.offered if t.name not in reserved]


async def _unused(name: str, arguments: dict[str, Any]) -> ToolResult:
    raise AssertionError("no call expected")


async def test_a_state_change_alone_does_not_reserialise_the_tool_schemas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    add = remote_tool("calc", "calc", types.Tool(name="add", input_schema=schema), _unused)
    manager = _Manager([add])
    agent = Agent(model=ScriptedModel([]), store=tmp_path / "h.db", mcp_servers=manager)
    assert agent.mcp is not None
    serialised: list[str] = []
    to_openai = ToolSpec.to_openai

    def counting(spec: ToolSpec) -> dict[str, Any]:
        serialised.append(spec.name)
        return to_openai(spec)

    monkeypatch.setattr(ToolSpec, "to_openai", counting)
    agent.mcp.sync()
    assert agent.tools.get("calc__add") is add
    assert "calc__add" in serialised  # the tool joined: the schemas' tokens were recounted
    assert agent._runtime.tools_tokens == tools_tokens(agent.tools)
    serialised.clear()
    manager.bumps += 1  # a state change alone (ready ↔ reconnecting): the same tools
    agent.mcp.sync()
    assert serialised == []
    manager.offered, manager.bumps = [], manager.bumps + 1  # the server is gone
    agent.mcp.sync()
    assert "calc__add" not in agent.tools
    assert agent._runtime.tools_tokens == tools_tokens(agent.tools)
    await agent.aclose()
