"""The offline rule brain in whole agent turns: it is offered every tool (it reads no schemas,
so the toolset limit that saves a model's tokens does not apply), several requests of one
message become one reply with all their calls, and memory learns nothing from a message the
brain did not understand."""

from __future__ import annotations

from pathlib import Path

from hermes import Agent, tool
from hermes.memory.facade import Memory
from hermes.tools.base import Tool


def _many_tools() -> list[Tool]:
    made: list[Tool] = []
    for group in ("billing", "weather"):
        for i in range(12):

            async def fn(x: int = 0) -> int:
                return x

            fn.__name__ = f"{group}_{i}"
            fn.__doc__ = f"{group} helper {i}"
            made.append(tool(fn, toolset=group))
    return made


async def test_past_the_toolset_limit_the_brain_still_sees_and_names_every_tool(
    tmp_path: Path,
) -> None:
    agent = Agent(
        tools=["calculator", "current_time", *_many_tools()],
        store=tmp_path / "h.db",
        toolset_limit=20,
    )
    try:
        result = await agent.run("what can you do?", session_id="brain-turn-0001")
    finally:
        await agent.aclose()
    assert "- calculator:" in result.reply
    assert "- current_time:" in result.reply
    # The 24 tools it has no phrasings for are named as needing a model, every one of them.
    assert all(f"{g}_{i}" in result.reply for g in ("billing", "weather") for i in range(12))


async def test_several_requests_are_one_reply_with_every_call(tmp_path: Path) -> None:
    agent = Agent(store=tmp_path / "h.db")
    try:
        result = await agent.run(
            "上海今天多少度？另外帮我算一下 (25+17)*3，还有东京现在几点？",
            session_id="brain-turn-0002",
        )
    finally:
        await agent.aclose()
    lines = result.reply.splitlines()
    assert lines[0].startswith("抱歉，我没有接入天气服务，无法查询上海的天气")
    assert lines[1] == "(25+17)*3 = 126"
    assert lines[2].startswith("东京现在是 ")
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("calculator", {"expression": "(25+17)*3"}),
        ("current_time", {"timezone": "东京"}),
    ]
    assert result.state == "awaiting_feedback"


async def test_memory_learns_nothing_from_a_message_the_brain_did_not_understand(
    tmp_path: Path,
) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False, extractor="rules")
    agent = Agent(store=tmp_path / "h.db", memory=memory)
    try:
        statement = await agent.run("我喜欢喝美式咖啡", session_id="brain-turn-0003", user_id="u1")
        assert "没听懂" in statement.reply
        await memory.drain()
        assert memory.store is not None
        assert await memory.store.list("u1") == []
        asked = await agent.run(
            "请记住我喜欢喝美式咖啡", session_id="brain-turn-0003", user_id="u1"
        )
        await memory.drain()
        assert asked.reply == "好的，我记住了：用户喜欢喝美式咖啡。"
        assert [c.name for c in asked.tool_calls] == ["remember"]
        assert [r.content for r in await memory.store.list("u1")] == ["用户喜欢喝美式咖啡。"]
    finally:
        await agent.aclose()
        await memory.aclose()


async def test_run_this_command_goes_through_the_approval_and_is_phrased_after_it(
    tmp_path: Path,
) -> None:
    agent = Agent(tools=["shell"], store=tmp_path / "h.db", workspace=tmp_path)
    try:
        asked = await agent.run("运行命令：echo hi", session_id="brain-turn-0004")
        assert asked.state == "awaiting_confirmation"
        assert "`echo hi`" in asked.reply
        done = await agent.run("确认", session_id="brain-turn-0004")
    finally:
        await agent.aclose()
    assert done.reply == "命令 `echo hi` 的退出码是 0：\nhi"
    assert [(c.name, c.arguments, c.ok) for c in done.tool_calls] == [
        ("shell", {"command": "echo hi"}, True)
    ]
