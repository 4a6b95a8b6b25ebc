"""Route handlers: ``{intent: NAME}`` runs an intent of the offline rule brain with the event's
content; ``{prompt: TEXT}`` gives the model the template filled with the event's fields, in the
system message of that turn only — the session stores the content verbatim either way."""

from __future__ import annotations

import subprocess

import pytest

from hermes.channels.http import event_handlers
from hermes.errors import ConfigError
from hermes.models.base import ModelRequest, ModelResponse
from hermes.models.brain import RuleBrain
from hermes.testing import say
from tests.channels.http.events_support import body, serve_events
from tests.channels.http.serve_fixtures import run_serve, write_config

CALC = """\
webhooks:
  routes:
    calc: {session_id: ops-calc, handler: {intent: calculate}}
"""
INTENT = CALC + "    typo: {session_id: ops-typo, handler: {intent: no-such-intent}}\n"
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
        serve_events(tmp_path, CALC, model=brain, tools=["calculator"]) as served,
        served.client() as client,
    ):
        answer = await client.post("/v1/events/calc", json=body("calc-1", "(25+17)*3"))
        await served.settled("calc", "calc-1")
        items = await served.items("ops-calc")
    assert answer.json()["status"] == "accepted"
    texts = [i.content for i in items if i.kind == "text"]
    assert texts == ["(25+17)*3", "(25+17)*3 = 126"]


async def test_an_intent_the_brain_does_not_have_is_refused_at_start(tmp_path):
    with pytest.raises(ConfigError, match="no-such-intent"):
        async with serve_events(tmp_path, INTENT, model=RuleBrain()):
            pass


async def test_an_intent_handler_with_a_model_configured_is_refused_at_start(tmp_path):
    with pytest.raises(ConfigError, match="rule brain"):
        async with serve_events(tmp_path, CALC):
            pass


def test_hermes_serve_refuses_an_intent_handler_it_cannot_run_with_exit_2(tmp_path):
    config = write_config(tmp_path, INTENT)
    proc = run_serve(config, "--host", "127.0.0.1", "--port", "0")
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("serve did not refuse the route")
    assert proc.returncode == 2, err
    assert "no-such-intent" in err
    assert "Traceback" not in err


async def test_an_app_built_without_the_check_answers_503_and_records_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(event_handlers, "check_routes", lambda agent, settings: None)
    async with serve_events(tmp_path, INTENT, model=RuleBrain()) as served:
        async with served.client() as client:
            answer = await client.post("/v1/events/typo", json=body("typo-1"))
        assert answer.status_code == 503
        assert answer.json()["error"]["type"] == "handler_unavailable"
        assert await served.delivery("typo", "typo-1") is None


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
