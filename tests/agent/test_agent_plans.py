"""Plans from the agent's side: the model's ``run_plan`` tool (templates only), the rule
brain's intent → template mapping, and a finished run fed back into its session (a ``state``
item with the outputs, the outputs in working memory) — DESIGN.md, "Multi-call plans"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent, tool
from hermes.agent.plan_tool import RUN_PLAN, offer_run_plan
from hermes.agent.plans import AgentPlans, PlanSetup, configure_plans
from hermes.errors import PlanInvalidError
from hermes.memory.working import WorkingMemory
from hermes.models.brain import RuleBrain
from hermes.testing import FunctionModel, call, say
from hermes.tools.plans.library import PlanLibrary

BOOKINGS: list[str] = []

TEMPLATE = """
description: Book a meeting room
params:
  city: {type: string}
nodes:
  - id: find
    tool: find_room
    params: {city: "{{params.city}}"}
  - id: book
    tool: book_room
    params: {room_id: "{{find.result.room_id}}"}
    depends_on: [find]
outputs:
  room_id: "{{book.result.room_id}}"
"""

INTENTS = """
version: 1
intents:
  - name: book_meeting
    description: {zh: 预订会议室, en: Book a meeting room}
    priority: 60
    patterns: ['订(一个|个)?会议室']
    plan: book-meeting
    slots:
      - {name: city, from: '在(?P<city>[\\u4e00-\\u9fff]{2,4})订'}
    args: {city: "{city}"}
    reply: {zh: "已预订 {status}", en: "Booked {status}"}
"""


@tool
def find_room(city: str) -> dict[str, Any]:
    """Find a free room in a city."""
    return {"room_id": f"{city}-R2"}


@tool
def book_room(room_id: str) -> dict[str, Any]:
    """Book a room."""
    BOOKINGS.append(room_id)
    return {"room_id": room_id, "booking": f"b-{room_id}"}


def _templates(tmp_path: Path) -> PlanLibrary:
    directory = tmp_path / "plans"
    directory.mkdir(exist_ok=True)
    (directory / "book-meeting.yaml").write_text(TEMPLATE, encoding="utf-8")
    return PlanLibrary(directory)


def _agent(tmp_path: Path, model: Any, library: PlanLibrary) -> Agent:
    agent = Agent(model=model, tools=[find_room, book_room], store=tmp_path / "hermes.db")
    setup = PlanSetup(library)
    configure_plans(agent, setup)
    offer_run_plan(agent, setup)
    return agent


async def test_run_plan_is_offered_only_when_templates_exist(tmp_path: Path) -> None:
    empty = PlanLibrary(tmp_path / "none")
    agent = _agent(tmp_path, FunctionModel(lambda r: say("hi")), empty)
    assert RUN_PLAN not in agent.tools
    await agent.aclose()
    agent = _agent(tmp_path, FunctionModel(lambda r: say("hi")), _templates(tmp_path))
    assert RUN_PLAN in agent.tools
    schema = agent.tools.get(RUN_PLAN).parameters  # type: ignore[union-attr]
    assert schema["properties"]["template"]["enum"] == ["book-meeting"]
    await agent.aclose()


async def test_a_model_starts_a_template_through_run_plan(tmp_path: Path) -> None:
    BOOKINGS.clear()
    seen: list[dict[str, Any]] = []

    def script(request: Any) -> Any:
        last = request.messages[-1]
        if last["role"] == "tool":
            seen.append(json.loads(last["content"]))
            return say("booked")
        return call(RUN_PLAN, {"template": "book-meeting", "params": {"city": "北京"}})

    agent = _agent(tmp_path, FunctionModel(script), _templates(tmp_path))
    result = await agent.run("book a room", session_id="session-plan-1", user_id="u1")
    await agent.aclose()
    assert result.reply == "booked"
    assert seen[0]["ok"] is True
    assert seen[0]["output"]["status"] == "succeeded"
    assert seen[0]["output"]["outputs"] == {"room_id": "北京-R2"}
    assert BOOKINGS == ["北京-R2"]


async def test_a_model_cannot_start_a_plan_that_is_not_a_template(tmp_path: Path) -> None:
    BOOKINGS.clear()
    seen: list[dict[str, Any]] = []

    def script(request: Any) -> Any:
        last = request.messages[-1]
        if last["role"] == "tool":
            seen.append(json.loads(last["content"]))
            return say("no")
        return call(RUN_PLAN, {"template": "../secret", "params": {}})

    agent = _agent(tmp_path, FunctionModel(script), _templates(tmp_path))
    await agent.run("book", session_id="session-plan-2", user_id="u1")
    await agent.aclose()
    assert seen[0]["ok"] is False
    assert seen[0]["error"]["type"] == "invalid_arguments"  # not one of the templates
    assert BOOKINGS == []


async def test_the_rule_brain_maps_an_intent_to_a_template(tmp_path: Path) -> None:
    BOOKINGS.clear()
    intents = tmp_path / "intents.yaml"
    intents.write_text(INTENTS, encoding="utf-8")
    agent = _agent(tmp_path, RuleBrain([intents]), _templates(tmp_path))
    result = await agent.run("帮我在上海订个会议室", session_id="session-plan-3", user_id="u1")
    await agent.aclose()
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        (RUN_PLAN, {"template": "book-meeting", "params": {"city": "上海"}})
    ]
    assert BOOKINGS == ["上海-R2"]
    assert "succeeded" in result.reply


async def test_a_finished_run_is_a_state_item_and_its_outputs_reach_working_memory(
    tmp_path: Path,
) -> None:
    agent = _agent(tmp_path, FunctionModel(lambda r: say("ok")), _templates(tmp_path))
    async with AgentPlans(agent) as plans:
        run = await plans.start_template(
            "book-meeting", {"city": "广州"}, session_id="session-plan-4", user_id="u1"
        )
    assert run.status == "succeeded"
    items = await agent.store.read_items("session-plan-4")
    [item] = [i for i in items if i.kind == "state"]
    content = json.loads(item.content)
    assert content == {
        "plan": "book-meeting", "run_id": run.run_id, "status": "succeeded",
        "outputs": {"room_id": "广州-R2"},
    }  # fmt: skip
    record = await agent.store.load_session("session-plan-4")
    assert record is not None
    working = WorkingMemory.from_dict(record.state.scratch["working_memory"])
    last = working.last_call("plan:book-meeting")
    assert last is not None
    assert "广州-R2" in (last.summary or "")
    assert any(fact.value == "广州-R2" for fact in working.facts)
    assert "广州-R2" in working.render(lang="zh")
    reference = working.resolve("我上次订的会议室")
    assert reference is not None
    assert reference.fact is not None
    assert reference.fact.value == "广州-R2"
    await agent.aclose()


async def test_a_failed_run_is_recorded_without_touching_working_memory(tmp_path: Path) -> None:
    library = _templates(tmp_path)
    (tmp_path / "plans" / "broken.yaml").write_text(
        "nodes: [{id: n1, tool: find_room, params: {city: x}},\n"
        "        {id: n2, tool: find_room, params: {}, depends_on: [n1]}]\n",
        encoding="utf-8",
    )
    agent = _agent(tmp_path, FunctionModel(lambda r: say("ok")), library)
    async with AgentPlans(agent) as plans:
        with pytest.raises(PlanInvalidError, match="n2"):
            await plans.start_template("broken", {}, session_id="session-plan-5", user_id="u1")
        (tmp_path / "plans" / "broken.yaml").write_text(
            "nodes: [{id: n1, tool: find_room, params: {city: '{{params.c}}'}}]\n"
            "params: {c: {type: string}}\n",
            encoding="utf-8",
        )
        run = await plans.start_template(
            "broken", {"c": "x"}, session_id="session-plan-5", user_id="u1"
        )
        assert run.status == "succeeded"
    record = await agent.store.load_session("session-plan-5")
    assert record is not None
    items = await agent.store.read_items("session-plan-5")
    assert [i.kind for i in items] == ["state"]  # the refused start left nothing
    await agent.aclose()


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("我上次订的会议室是哪个？", "你说的「上次订的会议室」是：room_id: 深圳-R2"),
        ("what was the room I booked last time?", 'By "the room I booked" I understand: room_id'),
    ],
)
async def test_the_offline_brain_answers_what_the_plan_booked_from_the_session(
    tmp_path: Path, question: str, expected: str
) -> None:
    """Seed 003 §5: "我上次订的会议室" finds the room a finished plan booked — with the offline
    brain too, from the session's working memory (not long-term memory, which holds nothing)."""
    agent = Agent(
        model=RuleBrain(),
        tools=[find_room, book_room],
        store=tmp_path / "hermes.db",
        memory=tmp_path / "memory",
    )
    setup = PlanSetup(_templates(tmp_path))
    configure_plans(agent, setup)
    async with AgentPlans(agent) as plans:
        run = await plans.start_template(
            "book-meeting", {"city": "深圳"}, session_id="session-plan-6", user_id="u1"
        )
    assert run.status == "succeeded"
    answer = await agent.run(question, session_id="session-plan-6", user_id="u1")
    elsewhere = await agent.run(question, session_id="session-plan-7", user_id="u1")
    await agent.aclose()
    assert expected in answer.reply
    assert "深圳-R2" in answer.reply
    assert answer.tool_calls == []  # answered from the session, no memory search
    assert "深圳-R2" not in elsewhere.reply  # another session holds no such booking
