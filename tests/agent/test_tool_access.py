"""Issue 3 wired into the agent: permissions, audit, toolsets, plugins, policies through turns."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from hermes import Agent, tool
from hermes.agent.factory import build_authorizer
from hermes.config import load_config
from hermes.config.schema import RbacConfig
from hermes.models.base import ModelRequest, ModelResponse
from hermes.testing import FunctionModel, ScriptedModel, call, say
from hermes.tools.audit import AuditLog, read_audit
from hermes.tools.permissions import Authorizer
from tests.agent.conftest import AgentFactory, add


@tool(permissions=("orders:refund",))
async def refund(order_id: str) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def _authorizer(tmp_path: Path) -> Authorizer:
    rbac = RbacConfig.model_validate(
        {
            "enabled": True,
            "roles": {"agent": {"scopes": ["orders:read"]}, "lead": {"scopes": ["orders:*"]}},
            "users": {"alice": {"roles": ["lead"]}, "bob": {"roles": ["agent"]}},
        }
    )
    return build_authorizer(rbac, audit=AuditLog(tmp_path / "audit.log"))


async def test_a_tool_the_user_may_not_use_is_neither_offered_nor_run(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    model = ScriptedModel([call("refund", {"order_id": "A1"}), say("cannot")])
    agent = make_agent(model, tools=[add, refund], authorizer=_authorizer(tmp_path))
    result = await agent.run("refund A1", session_id="session-0301", user_id="bob")
    assert [s.name for s in model.requests[0].tools] == ["add"]  # not offered to bob
    assert result.tool_calls[0].error_type == "permission_denied"
    payload = json.loads(model.requests[1].messages[-1]["content"])
    assert "orders:refund" in payload["error"]["message"]
    [record] = read_audit(tmp_path / "audit.log")
    assert (record["user"], record["tool"], record["decision"]) == ("bob", "refund", "deny")


async def test_a_user_with_the_scope_is_offered_the_tool_and_audited(
    make_agent: AgentFactory, tmp_path: Path
) -> None:
    model = ScriptedModel([call("refund", {"order_id": "A1"}), say("done")])
    agent = make_agent(model, tools=[add, refund], authorizer=_authorizer(tmp_path))
    result = await agent.run("refund A1", session_id="session-0302", user_id="alice")
    assert {s.name for s in model.requests[0].tools} == {"add", "refund"}
    assert result.tool_calls[0].ok
    [record] = read_audit(tmp_path / "audit.log")
    assert (record["user"], record["decision"]) == ("alice", "allow")


def _many_tools() -> list[object]:
    made: list[object] = []
    for group, words in (("billing", "invoice payment refund"), ("weather", "forecast rain")):
        for i in range(12):

            async def fn(x: int = 0) -> int:
                return x

            fn.__name__ = f"{group}_{i}"
            fn.__doc__ = f"{words} helper {i}"
            made.append(tool(fn, toolset=group))
    return made


async def test_with_many_tools_only_the_relevant_toolsets_are_offered(
    make_agent: AgentFactory,
) -> None:
    model = ScriptedModel([say("ok")])
    agent = make_agent(model, tools=_many_tools(), toolset_limit=20)
    await agent.run("please check the rain forecast", session_id="session-0303")
    offered = [s.name for s in model.requests[0].tools]
    assert 0 < len(offered) <= 20
    assert all(name.startswith("weather_") for name in offered[:12])
    assert "weather_0" in offered


async def test_an_idempotent_tool_runs_once_across_a_restart(db_path: Path) -> None:
    runs: list[str] = []

    @tool(idempotency_key=("order_id",))
    async def ship(order_id: str) -> str:
        """Ship an order (must never ship twice)."""
        runs.append(order_id)
        return f"shipped {order_id}"

    def script(request: ModelRequest) -> ModelResponse:
        if request.messages[-1]["role"] == "tool":
            return say(request.messages[-1]["content"])
        return call("ship", {"order_id": "O-7"})

    for _ in range(2):  # two agents on one store: a restart in between
        agent = Agent(model=FunctionModel(script), tools=[ship], store=db_path)
        result = await agent.run("ship O-7", session_id="session-0304")
        await agent.aclose()
        assert result.tool_calls[0].ok
    assert runs == ["O-7"]
    assert (db_path.parent / "idempotency.db").exists()


def test_plugins_from_the_config_are_loaded_and_a_broken_one_is_reported(
    tmp_path: Path,
) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "greet_plugin.py").write_text(
        textwrap.dedent(
            '''
            from hermes import tool

            @tool
            def greet(name: str) -> str:
                """Greet someone."""
                return f"hello {name}"
            '''
        ),
        encoding="utf-8",
    )
    (plugins / "broken_plugin.py").write_text("def oops(:\n", encoding="utf-8")
    (tmp_path / "hermes.yaml").write_text(
        "tools:\n  plugins_dir: plugins\nstore:\n  path: state/h.db\nlogging:\n  file: null\n",
        encoding="utf-8",
    )
    from hermes.agent.factory import build_agent
    from hermes.storage.sqlite.sessions import SQLiteStore

    agent = build_agent(load_config(tmp_path / "hermes.yaml", cwd=tmp_path))
    try:
        assert "greet" in agent.tools
        [warning] = agent.startup_warnings
        assert "broken_plugin.py" in warning
    finally:
        store = agent.store
        assert isinstance(store, SQLiteStore)
        store.close_sync()
