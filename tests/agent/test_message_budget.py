"""A message too large for the model's context is refused up front, naming the setting to raise,
and the size limit the documentation states is the real one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hermes.agent.factory import build_agent
from hermes.config import load_config
from hermes.errors import InvalidInputError
from hermes.testing import ScriptedModel, say
from tests.agent.conftest import AgentFactory

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


async def test_the_refusal_names_agent_context_budget_tokens_in_both_languages(
    make_agent: AgentFactory,
) -> None:
    agent = make_agent(ScriptedModel(), context_budget_tokens=1000)
    with pytest.raises(InvalidInputError) as caught:
        await agent.run("长" * 2000, session_id="session-budget-01")
    message = caught.value.message
    assert message.count("agent.context_budget_tokens") >= 2  # en and zh
    assert "raise agent.context_budget_tokens" in message
    assert "调高 agent.context_budget_tokens" in message


async def test_the_system_prompt_and_tool_schemas_take_their_share(
    make_agent: AgentFactory,
) -> None:
    text = "长" * 900  # fits 1,000 tokens alone
    alone = make_agent(ScriptedModel([say("ok")]), tools=[], context_budget_tokens=1000)
    assert (await alone.run(text, session_id="session-budget-02")).reply == "ok"
    crowded = make_agent(
        ScriptedModel([say("ok")]), context_budget_tokens=1000, instructions="规" * 200
    )
    with pytest.raises(InvalidInputError, match="context_budget_tokens"):
        await crowded.run(text, session_id="session-budget-03")


async def test_a_message_that_is_accepted_fits_the_request_budget(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([say("ok")])
    agent = make_agent(model, context_budget_tokens=1000, instructions="Be brief.")
    room = agent._runtime.message_room
    text = "长" * (room - 4)  # a user message costs 4 tokens besides its text
    await agent.run(text, session_id="session-budget-04")
    record = await agent.store.load_session("session-budget-04")
    assert record is not None
    assert model.requests[0].messages[-1]["content"] == text  # sent whole
    with pytest.raises(InvalidInputError):
        await agent.run(text + "长", session_id="session-budget-05")


def _documented_chinese_limit() -> int:
    found = re.search(r"about ([\d,]+)\s+Chinese\s+characters", DOCS.read_text(encoding="utf-8"))
    assert found is not None, "docs/configuration.md states the message size limit"
    return int(found.group(1).replace(",", ""))


@pytest.mark.parametrize("with_model", [False, True])
async def test_the_documented_message_limit_is_the_real_one(
    tmp_path: Path, with_model: bool
) -> None:
    if with_model:
        (tmp_path / "hermes.yaml").write_text(
            "model:\n  base_url: http://127.0.0.1:9/v1\n  model: m\n", encoding="utf-8"
        )
    agent = build_agent(load_config(cwd=tmp_path, environ={}), store=":memory:")
    try:
        limit = _documented_chinese_limit()
        real = agent._runtime.message_room - 4
        # "about": within 2 % of the real figure, and the real one for these defaults.
        assert abs(real - limit) <= limit * 0.02, (real, limit)
    finally:
        await agent.aclose()
