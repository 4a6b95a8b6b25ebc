"""Memory's own tools (``hermes.memory.tools``): ``remember``, ``recall_memories`` and
``forget_memory`` bound to one Memory by closure (DESIGN.md, "Layers": memory owns its tools),
for their user only, and their names in ``Agent(tools=[...])`` bound to the agent's memory.

Real SQLite files in tmp_path; FunctionModel scripts; keyword-only recall."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes import Agent, tool
from hermes.memory.facade import Memory
from hermes.memory.tools import MEMORY_TOOLS, memory_tools
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import FunctionModel, call, say
from hermes.tools import ToolContext, ToolRegistry, execute_tool_call
from hermes.tools.builtin import BUILTIN_TOOLS


def open_memory(tmp_path: Path, name: str = "mem", **kw: Any) -> Memory:
    kw.setdefault("semantic", False)
    return Memory.open(tmp_path / name, **kw)


def script(*calls: tuple[str, dict[str, Any]]) -> FunctionModel:
    """A model that makes ``calls`` one per model call, then says "done"."""
    pending = list(calls)

    def respond(request: ModelRequest) -> ModelResponse:
        if not pending:
            return say("done")
        name, arguments = pending.pop(0)
        return call(name, arguments)

    return FunctionModel(respond)


async def test_remember_refuses_clearly_without_a_user_or_a_memory(tmp_path: Path) -> None:
    memory = open_memory(tmp_path)
    try:
        no_memory = await execute_tool_call(
            ToolRegistry(memory_tools(None)),
            call("remember", {"content": "x"}).tool_calls[0],
            ToolContext(user_id="u1"),
        )
        no_user = await execute_tool_call(
            ToolRegistry(memory_tools(memory)),
            call("remember", {"content": "x"}).tool_calls[0],
            ToolContext(),
        )
    finally:
        await memory.aclose()
    assert no_memory.error is not None
    assert no_memory.error.type == "memory_unavailable"
    assert "记忆" in no_memory.error.message
    assert no_user.error is not None
    assert no_user.error.type == "user_required"
    assert "user id" in no_user.error.message
    assert "用户身份" in no_user.error.message


async def test_tools_bound_to_a_memory_without_a_long_term_store_refuse() -> None:
    registry = ToolRegistry(memory_tools(Memory()))  # working memory only
    calls = (("recall_memories", {"query": "x"}), ("forget_memory", {"memory_id": "m"}))
    for name, arguments in calls:
        result = await execute_tool_call(
            registry, call(name, arguments).tool_calls[0], ToolContext(user_id="u1")
        )
        assert result.error is not None
        assert result.error.type == "memory_unavailable"


async def test_memory_tools_work_for_their_user_only(tmp_path: Path) -> None:
    memory = open_memory(tmp_path)
    registry = ToolRegistry(memory_tools(memory))

    async def run(name: str, args: dict[str, Any], user: str) -> Any:
        ctx = ToolContext(user_id=user, session_id="s-tools-1")
        return await execute_tool_call(registry, call(name, args).tool_calls[0], ctx)

    try:
        saved = await run("remember", {"content": "用户的工号是A12。"}, "u1")
        again = await run("remember", {"content": "用户的工号是A12。"}, "u1")
        found = await run("recall_memories", {"query": "我的工号"}, "u1")
        other = await run("recall_memories", {"query": "我的工号"}, "u2")
        stolen = await run("forget_memory", {"memory_id": saved.output["id"]}, "u2")
        forgotten = await run("forget_memory", {"memory_id": saved.output["id"]}, "u1")
        empty = await run("remember", {"content": "   "}, "u1")
    finally:
        await memory.aclose()
    assert saved.ok
    assert again.output["id"] == saved.output["id"]  # not written twice
    assert [m["content"] for m in found.output["memories"]] == ["用户的工号是A12。"]
    assert other.output["memories"] == []
    assert stolen.error is not None
    assert stolen.error.type == "not_found"
    assert forgotten.ok
    assert empty.error is not None
    assert empty.error.type == "invalid_arguments"


async def test_two_agents_with_two_memories_never_see_each_others_memories(
    tmp_path: Path,
) -> None:
    # No extractor: only the tool writes (the extractor would learn the same sentence).
    first = open_memory(tmp_path, "mem-a", extractor=None)
    second = open_memory(tmp_path, "mem-b", extractor=None)
    remembering = ("remember", {"content": "用户喜欢喝美式咖啡。", "kind": "preference"})
    recalling = script(("recall_memories", {"query": "咖啡"}))
    a = Agent(model=script(remembering), store=tmp_path / "a.db", memory=first, tools=[])
    b = Agent(model=recalling, store=tmp_path / "b.db", memory=second, tools=[])
    try:
        saved = await a.run("记住我喜欢喝美式咖啡", session_id="s-bound-a1", user_id="u1")
        found = await b.run("我喜欢喝什么咖啡？", session_id="s-bound-b1", user_id="u1")
        assert await first.drain()
        assert await second.drain()
        assert first.store is not None
        assert second.store is not None
        assert [r.content for r in await first.store.list("u1")] == ["用户喜欢喝美式咖啡。"]
        assert await second.store.list("u1") == []
    finally:
        for agent in (a, b):
            await agent.aclose()
        for memory in (first, second):
            await memory.aclose()
    assert saved.tool_calls[0].ok
    assert found.tool_calls[0].ok
    # Same user, same process: the second agent's tool searched the second memory only.
    (request,) = [r for r in recalling.requests if r.messages[-1]["role"] == "tool"]
    assert "美式" not in request.messages[-1]["content"]
    assert a.tools.get("remember") is not b.tools.get("remember")


async def test_no_live_memory_object_rides_in_the_tool_extras(tmp_path: Path) -> None:
    memory = open_memory(tmp_path)
    agent = Agent(model=script(), store=tmp_path / "h.db", memory=memory)
    try:
        assert "memory" not in agent.tool_extras
    finally:
        await agent.aclose()
        await memory.aclose()


def test_the_tools_function_identity_is_the_same_for_every_memory() -> None:
    """Module and qualified name: what the executor's ``tool_version`` fingerprint reads."""
    bound, unbound = memory_tools(Memory()), memory_tools(None)
    assert [t.name for t in bound] == list(MEMORY_TOOLS)
    for one, other in zip(bound, unbound, strict=True):
        assert one.fn is not other.fn  # two closures ...
        assert one.fn.__module__ == other.fn.__module__ == "hermes.memory.tools"
        assert one.fn.__qualname__ == other.fn.__qualname__  # ... one identity
        assert (one.description, one.parameters) == (other.description, other.parameters)
        assert one.toolset == "memory"


def test_memory_tools_are_not_built_ins() -> None:
    assert not set(MEMORY_TOOLS) & set(BUILTIN_TOOLS)


async def test_a_named_memory_tool_works_on_the_agents_memory(tmp_path: Path) -> None:
    # Named explicitly, it is bound even when the memory does not offer its tools itself.
    memory = open_memory(tmp_path, offer_tools=False)
    model = script(("remember", {"content": "用户住在上海。"}))
    agent = Agent(model=model, store=tmp_path / "h.db", memory=memory, tools=["remember"])
    try:
        assert agent.tools.names() == ["remember"]
        result = await agent.run("记住我住在上海", session_id="s-named-1", user_id="u1")
        assert memory.store is not None
        assert [r.content for r in await memory.store.list("u1")] == ["用户住在上海。"]
    finally:
        await agent.aclose()
        await memory.aclose()
    assert result.tool_calls[0].ok


async def test_a_named_memory_tool_without_a_memory_refuses(tmp_path: Path) -> None:
    agent = Agent(
        model=script(("recall_memories", {"query": "咖啡"})),
        store=tmp_path / "h.db",
        tools=["calculator", "recall_memories"],
    )
    try:
        assert agent.tools.names() == ["calculator", "recall_memories"]
        result = await agent.run("我喜欢什么咖啡？", session_id="s-named-2", user_id="u1")
    finally:
        await agent.aclose()
    assert result.tool_calls[0].error_type == "memory_unavailable"


async def test_a_programs_own_tool_of_a_memory_tools_name_is_kept(tmp_path: Path) -> None:
    @tool
    def remember(content: str) -> str:
        """A program's own remember."""
        return "kept"

    memory = open_memory(tmp_path)
    agent = Agent(model=script(), store=tmp_path / "h.db", memory=memory, tools=[remember])
    try:
        held = agent.tools.get("remember")
        assert held is not None
        assert held.description == "A program's own remember."
        assert {"recall_memories", "forget_memory"} <= set(agent.tools.names())
    finally:
        await agent.aclose()
        await memory.aclose()


async def test_remember_still_needs_the_users_request_when_memory_fails_to_begin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise RuntimeError("upkeep scheduler down")

    memory = open_memory(tmp_path, extractor=None)
    monkeypatch.setattr(memory, "start", broken)

    def remembering(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            return say("done")
        return call("remember", {"content": "用户住在上海。"})

    model = FunctionModel(remembering)
    agent = Agent(model=model, store=tmp_path / "h.db", memory=memory)
    try:
        # The turn goes on without its memory note, and the flag still comes from the user.
        refused = await agent.run("summarise this page", session_id="s-broken-1", user_id="u1")
        saved = await agent.run("记住我住在上海", session_id="s-broken-1", user_id="u1")
    finally:
        await agent.aclose()
        await memory.aclose()
    assert refused.tool_calls[0].error_type == "not_requested"
    assert saved.tool_calls[0].ok
