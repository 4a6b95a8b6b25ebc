"""Memory in whole conversations (seed 001 §2.2, §5.3–5.4; seed 004 §5.1): a changed preference
is the one answered from the next turn on; the user's own order is what "我的订单" means after a
busy session, and a bare "那个订单" never silently becomes the last id a tool returned; the
ordinary follow-ups that name only the kind of thing find what the user asked to keep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hermes import Agent, tool
from hermes.agent.memory_step import DATA_HEADER
from hermes.memory.facade import Memory
from hermes.memory.upkeep import run_upkeep
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import FunctionModel, call, say


def the_note(request: ModelRequest) -> str:
    """The memory note of a request, wherever the turn put it ("" when there is none)."""
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str) and DATA_HEADER in content:
            return content[content.index(DATA_HEADER) :]
    return ""


async def test_a_changed_preference_is_the_one_answered_next_with_the_offline_brain(
    tmp_path: Path,
) -> None:
    memory = Memory.open(tmp_path / "mem", semantic=False)
    agent = Agent(store=tmp_path / "hermes.db", memory=memory)
    try:
        await agent.run("记住我喜欢喝美式咖啡", session_id="s-latte-1", user_id="u1")
        await memory.drain()
        await agent.run("记住我现在改喝拿铁了", session_id="s-latte-1", user_id="u1")
        await memory.drain()
        asked = await agent.run("我喝什么咖啡？", session_id="s-latte-2", user_id="u1")
        assert "拿铁" in asked.reply
        assert "美式" not in asked.reply
        assert memory.store is not None
        await run_upkeep(memory.store)  # and after an upkeep run, still without an embedder
        again = await agent.run("我喝什么咖啡？", session_id="s-latte-3", user_id="u1")
        assert "拿铁" in again.reply
        assert "美式" not in again.reply
    finally:
        await agent.aclose()
        await memory.aclose()


@tool
def get_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order_id": order_id, "status": "in transit", "summary": f"{order_id} 运输中"}


def lookups(request: ModelRequest) -> ModelResponse:
    """Looks up the order id the user's message names, if any; else just answers."""
    if request.messages[-1]["role"] == "tool":
        return say("查好了")
    text = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    ids = [word for word in str(text).split() if word.startswith("ORD-")]
    return call("get_order", {"order_id": ids[0]}) if ids else say("好的")


async def test_my_order_after_a_busy_session_is_the_users_own_and_that_order_is_asked_about(
    tmp_path: Path,
) -> None:
    model = FunctionModel(lookups)
    memory = Memory.open(tmp_path / "mem", semantic=False)
    agent = Agent(model=model, tools=[get_order], store=tmp_path / "hermes.db", memory=memory)
    try:
        await agent.run("记住我的订单号是 ORD-1001", session_id="s-own-ids-1", user_id="u1")
        for n in range(25):
            await agent.run(f"帮客户查一下 ORD-{7000 + n}", session_id="s-own-ids-1", user_id="u1")
        await agent.run("我的订单到哪了？", session_id="s-own-ids-1", user_id="u1")
        mine = the_note(model.requests[-1])
        assert "「我的订单」指的是：order_id: ORD-1001" in mine
        await agent.run("那个订单到哪了？", session_id="s-own-ids-1", user_id="u1")
        that = the_note(model.requests[-1])
        assert "指的是：order_id: ORD-7024" not in that
        assert "ORD-1001" in that
        assert "先问用户" in that
    finally:
        await agent.aclose()
        await memory.aclose()


async def test_a_kind_of_thing_finds_what_the_user_asked_to_keep_in_a_later_session(
    tmp_path: Path,
) -> None:
    model = FunctionModel(lambda request: say("好的"))
    memory = Memory.open(tmp_path / "mem", semantic=False)
    agent = Agent(model=model, store=tmp_path / "hermes.db", memory=memory)
    try:
        await agent.run("请记住我的订单号是 ORD-58213", session_id="s-kind-of-1", user_id="u1")
        await memory.drain()
        for n, question in enumerate(["我的快递发货了吗？", "has my package shipped yet?"]):
            await agent.run(question, session_id=f"s-kind-of-{n + 2}", user_id="u1")
            assert "ORD-58213" in the_note(model.requests[-1]), question
        await agent.run("我的快递发货了吗？", session_id="s-kind-of-9", user_id="u2")
        assert "ORD-58213" not in the_note(model.requests[-1])  # never another user's
    finally:
        await agent.aclose()
        await memory.aclose()
