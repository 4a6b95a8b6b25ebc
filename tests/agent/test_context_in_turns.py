"""What the model sees over a long, tool-heavy session (seed 001 §2.2–2.3): the result it just
asked for arrives whole while older rounds can give way, and what the user asked to keep or
stated as their own stays in every request of the session."""

from __future__ import annotations

import json
from typing import Any

from hermes import tool
from hermes.models.base import ModelRequest, ModelResponse
from hermes.session.context import STICKY_HEADER
from hermes.testing import FunctionModel, call, say
from tests.agent.conftest import AgentFactory


def record(record_id: int) -> dict[str, Any]:
    """A record of ~2,000 tokens."""
    return {
        "id": f"REC-{record_id}",
        "events": [f"event {n}: shipped #{record_id}-{n}" for n in range(300)],
    }


@tool
def get_record(record_id: int) -> dict[str, Any]:
    """One record by id."""
    return record(record_id)


def two_lookups(seen: list[tuple[str, str]]) -> Any:
    """Each turn: look up the two records the user names, one after the other, then answer.
    ``seen`` gets (what the model saw of the newest result, the whole result)."""

    def script(request: ModelRequest) -> ModelResponse:
        messages = request.messages
        start = max(i for i, m in enumerate(messages) if m["role"] == "user")
        results = [m for m in messages[start:] if m["role"] == "tool"]
        if results:
            whole = json.dumps({"ok": True, "output": record(int(results[-1]["tool_call_id"][4:]))})
            seen.append((results[-1]["content"], whole))
        asked = [int(w) for w in str(messages[start]["content"]).split() if w.isdigit()]
        if len(results) < len(asked):
            wanted = asked[len(results)]
            return call("get_record", {"record_id": wanted}, id=f"rec-{wanted}")
        return say("Both look fine.")

    return script


async def test_the_fresh_result_reaches_the_model_whole_in_a_long_tool_heavy_session(
    make_agent: AgentFactory,
) -> None:
    seen: list[tuple[str, str]] = []
    agent = make_agent(FunctionModel(two_lookups(seen)), tools=[get_record])
    for turn in range(10):
        text = f"check records {2 * turn + 1} and {2 * turn + 2}"
        result = await agent.run(text, session_id="s-long-tools", user_id="u1")
        assert result.reply == "Both look fine."
    assert len(seen) == 20
    shortened = [n for n, (got, whole) in enumerate(seen) if got != whole]
    assert shortened == []


async def test_a_fresh_result_over_the_whole_budget_keeps_its_start_and_end(
    make_agent: AgentFactory,
) -> None:
    @tool
    def dump() -> str:
        """A very long text."""
        return "START " + "数据" * 9_000 + " END"

    seen: list[str] = []

    def script(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            seen.append(request.messages[-1]["content"])
            return say("done")
        return call("dump", {})

    agent = make_agent(FunctionModel(script), tools=[dump], context_budget_tokens=3000)
    await agent.run("dump it", session_id="s-huge-result")
    (got,) = seen
    payload = json.loads(got)
    assert payload["output_excerpt"].startswith("START 数据数据")
    assert payload["output_excerpt"].endswith("数据数据 END")
    assert "call the tool again" in payload["note"]


async def test_what_the_user_asked_to_keep_is_in_every_request_of_a_busy_session(
    make_agent: AgentFactory,
) -> None:
    seen: list[tuple[str, str]] = []
    model = FunctionModel(two_lookups(seen))
    agent = make_agent(model, tools=[get_record])
    await agent.run("记住我的订单号是 ORD-77801", session_id="s-sticky-1", user_id="u1")
    for turn in range(20):
        text = f"check records {2 * turn + 1} and {2 * turn + 2}"
        await agent.run(text, session_id="s-sticky-1", user_id="u1")
    last = model.requests[-1].messages
    shown = "\n".join(str(m["content"]) for m in last if m["role"] in ("system", "user"))
    assert "ORD-77801" in shown
    assert any(STICKY_HEADER in str(m["content"]) for m in last if m["role"] == "system")
