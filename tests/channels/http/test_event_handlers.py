"""Route handlers: ``{intent: NAME}`` runs an intent of the offline rule brain with the event's
content; ``{prompt: TEXT}`` gives the model the template filled with the event's fields, in the
system message of that turn only — the session stores the content verbatim either way."""

from __future__ import annotations

from hermes.models.base import ModelRequest, ModelResponse
from hermes.models.brain import RuleBrain
from hermes.testing import say
from tests.channels.http.events_support import body, serve_events

INTENT = """\
webhooks:
  routes:
    calc: {session_id: ops-calc, handler: {intent: calculate}}
    typo: {session_id: ops-typo, handler: {intent: no-such-intent}}
"""
PROMPT = """\
webhooks:
  routes:
    db-alerts:
      session_id: ops-db-alerts
      handler:
        prompt: "告警（{meta.level}，{type}，{msg_id}@{route}）：{content} {{不是占位符}}"
"""


async def test_an_intent_handler_runs_that_intent_with_the_events_content(tmp_path):
    brain = RuleBrain()
    async with (
        serve_events(tmp_path, INTENT, model=brain, tools=["calculator"]) as served,
        served.client() as client,
    ):
        answer = await client.post("/v1/events/calc", json=body("calc-1", "(25+17)*3"))
        await served.settled("calc", "calc-1")
        items = await served.items("ops-calc")
    assert answer.json()["status"] == "accepted"
    texts = [i.content for i in items if i.kind == "text"]
    assert texts == ["(25+17)*3", "(25+17)*3 = 126"]


async def test_an_intent_the_brain_does_not_have_is_refused_before_anything_is_seen(tmp_path):
    async with serve_events(tmp_path, INTENT, model=RuleBrain()) as served:
        async with served.client() as client:
            answer = await client.post("/v1/events/typo", json=body("typo-1"))
        assert answer.status_code == 500
        assert answer.json()["error"]["type"] == "handler_unavailable"
        assert await served.delivery("typo", "typo-1") is None


async def test_an_intent_handler_with_a_model_configured_is_refused(tmp_path):
    async with serve_events(tmp_path, INTENT) as served, served.client() as client:
        answer = await client.post("/v1/events/calc", json=body("calc-2"))
    assert answer.status_code == 500
    assert "rule brain" in answer.json()["error"]["message"]


async def test_a_prompt_handler_fills_the_template_into_the_system_message(tmp_path):
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> ModelResponse:
        seen.append(request)
        return say("已处理")

    event = body("alert-001", meta={"level": "warning"})
    async with serve_events(tmp_path, PROMPT, model=model) as served, served.client() as client:
        await client.post("/v1/events/db-alerts", json=event)
        await served.settled("db-alerts", "alert-001")
        await client.post("/v1/events/db-alerts", json=body("alert-002", "下一条"))
        await served.settled("db-alerts", "alert-002")
        items = await served.items("ops-db-alerts")
    system = seen[0].messages[0]
    assert system["role"] == "system"
    assert system["content"].endswith(
        "告警（warning，alert，alert-001@db-alerts）：数据库连接池使用率超过80% {不是占位符}"
    )
    assert seen[0].directive is not None
    assert seen[0].messages[-1] == {"role": "user", "content": "数据库连接池使用率超过80%"}
    # The next event's turn has its own prompt; the first one's is not kept in the session.
    assert "alert-002@db-alerts" in seen[1].messages[0]["content"]
    assert "alert-001" not in seen[1].messages[0]["content"]
    assert [i.content for i in items if i.role == "user"] == ["数据库连接池使用率超过80%", "下一条"]
