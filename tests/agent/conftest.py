"""Fixtures for agent-loop tests: real SQLite files in tmp_path and small tools."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes import Agent, tool
from hermes.models.base import Model
from hermes.session.items import Item


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


AgentFactory = Callable[..., Agent]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "hermes.db"


@pytest.fixture
async def make_agent(db_path: Path) -> AsyncIterator[AgentFactory]:
    """Build agents on one SQLite file; all are closed at the end of the test."""
    made: list[Agent] = []

    def factory(model: Model | None = None, tools: Any = None, **kw: Any) -> Agent:
        agent = Agent(model=model, tools=[add] if tools is None else tools, store=db_path, **kw)
        made.append(agent)
        return agent

    yield factory
    for agent in made:
        await agent.aclose()


async def all_items(agent: Agent, session_id: str) -> list[Item]:
    return await agent.store.read_items(session_id, after_seq=0, limit=10_000)


def assert_pairs_complete(items: list[Item]) -> None:
    """Every stored tool_call has exactly one tool_result, stored after it."""
    calls = [i for i in items if i.kind == "tool_call"]
    for c in calls:
        results = [i for i in items if i.kind == "tool_result" and i.tool_call_id == c.tool_call_id]
        assert len(results) == 1, f"call {c.tool_call_id} has {len(results)} results"
        assert results[0].seq > c.seq


async def wait_all(*aws: Any, limit_s: float = 10.0) -> list[Any]:
    return list(await asyncio.wait_for(asyncio.gather(*aws), limit_s))
