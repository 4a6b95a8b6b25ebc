"""The seed's alert story (seed 002 §3.3 and §4.2), end to end over real HTTP: a monitoring
alert arrives as a webhook; the agent queries the slow queries, kills the long one and posts the
result to the on-call group — configured in ``hermes.yaml`` (a route with a prompt handler),
run by a scripted model with scripted tools, and run exactly once under a storm of duplicate
deliveries (the kill is counted)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from hermes import tool
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import call, say
from tests.channels.http.events_support import SECRET, body, raw, serve_events, signed

CONFIG = f"""\
webhooks:
  secret: {SECRET}
  routes:
    db-alerts:
      session_id: ops-db-alerts
      user_id: ops
      handler:
        prompt: >-
          监控告警（级别 {{meta.level}}，来源 {{meta.source}}）：{{content}}
          处理步骤：先用 query_slow_queries 查出当前的慢查询；
          再用 kill_query 终止运行时间最长的那一个（只终止一个）；
          最后用 post_message 把处理结果发到值班群 oncall。
"""
SLOW_QUERIES = [
    {"id": 4121, "seconds": 38, "sql": "SELECT * FROM orders WHERE status = 'paid'"},
    {"id": 4178, "seconds": 4015, "sql": "SELECT user_id, SUM(amount) FROM refunds GROUP BY 1"},
    {"id": 4190, "seconds": 12, "sql": "UPDATE carts SET touched_at = now()"},
]


class Ops:
    """The scripted tools of the story and what they were asked to do."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.killed: list[int] = []
        self.posted: list[tuple[str, str]] = []

        @tool
        def query_slow_queries(min_seconds: int = 10) -> list[dict[str, Any]]:
            """List the database queries running longer than min_seconds."""
            self.calls["query_slow_queries"] += 1
            return [q for q in SLOW_QUERIES if q["seconds"] >= min_seconds]

        @tool
        def kill_query(query_id: int) -> dict[str, Any]:
            """Terminate the running database query with this id."""
            self.calls["kill_query"] += 1
            self.killed.append(query_id)
            return {"killed": query_id, "ok": True}

        @tool
        def post_message(channel: str, text: str) -> str:
            """Post a message to a chat channel (the on-call group: oncall)."""
            self.calls["post_message"] += 1
            self.posted.append((channel, text))
            return "posted"

        self.tools = [query_slow_queries, kill_query, post_message]


def operator(request: ModelRequest) -> ModelResponse:
    """A scripted model following the route's prompt: look up, kill the longest, post."""
    assert "query_slow_queries" in request.messages[0]["content"]  # the handler's prompt
    done = [
        c["function"]["name"]
        for m in request.messages
        if m["role"] == "assistant"
        for c in m.get("tool_calls") or []
    ]
    last = request.messages[-1]
    if not done:
        return call("query_slow_queries", {"min_seconds": 10})
    if done[-1] == "query_slow_queries":
        queries = json.loads(last["content"])["output"]
        longest = max(queries, key=lambda q: q["seconds"])
        return call("kill_query", {"query_id": longest["id"]})
    if done[-1] == "kill_query":
        text = "已处理：嫌疑慢查询 4178 已终止，建议明天排查该查询语句的索引使用情况"
        return call("post_message", {"channel": "oncall", "text": text})
    return say("已终止运行最久的慢查询（4178），并已通知值班群。")


ALERT = body(
    "alert-001",
    "数据库连接池使用率超过80%阈值，当前值85%，持续10分钟",
    meta={"source": "monitor", "level": "warning"},
)


async def _deliver(client, payload: bytes):
    return await client.post("/v1/events/db-alerts", content=payload, headers=signed(payload))


async def test_the_alert_is_handled_once_under_a_storm_of_duplicate_deliveries(tmp_path):
    ops = Ops()
    payload = raw(ALERT)
    async with (
        serve_events(tmp_path, CONFIG, model=operator, tools=ops.tools) as served,
        served.client() as client,
    ):
        storm = await asyncio.gather(*(_deliver(client, payload) for _ in range(30)))
        done = await served.settled("db-alerts", "alert-001")
        later = [await _deliver(client, payload) for _ in range(10)]  # the sender retries
        items = await served.items("ops-db-alerts")
    answers = [a.json() for a in storm + later]
    assert [a["status"] for a in answers].count("accepted") == 1
    assert {a["trace_id"] for a in answers} == {done.trace_id}
    assert done.status == "done"
    assert ops.calls == {"query_slow_queries": 1, "kill_query": 1, "post_message": 1}
    assert ops.killed == [4178]  # the long one, and only it
    assert ops.posted == [
        ("oncall", "已处理：嫌疑慢查询 4178 已终止，建议明天排查该查询语句的索引使用情况")
    ]
    texts = [(i.role, i.content) for i in items if i.kind == "text"]
    assert texts == [
        ("user", "数据库连接池使用率超过80%阈值，当前值85%，持续10分钟"),
        ("assistant", "已终止运行最久的慢查询（4178），并已通知值班群。"),
    ]
    assert [i.tool_name for i in items if i.kind == "tool_call"] == [
        "query_slow_queries", "kill_query", "post_message",
    ]  # fmt: skip


async def test_an_unsigned_storm_runs_nothing(tmp_path):
    ops = Ops()
    payload = raw(ALERT)
    async with (
        serve_events(tmp_path, CONFIG, model=operator, tools=ops.tools) as served,
        served.client() as client,
    ):
        answers = await asyncio.gather(
            *(
                client.post("/v1/events/db-alerts", content=payload,
                            headers={"Content-Type": "application/json"})
                for _ in range(10)
            )
        )  # fmt: skip
    assert {a.status_code for a in answers} == {401}
    assert ops.calls == {}
