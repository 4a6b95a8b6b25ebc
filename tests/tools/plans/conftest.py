"""Plan runs on a real SQLite file, tools through a real ToolExecutor."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.compose import open_plan_runs
from hermes.tools.pipeline import ToolExecutor
from hermes.tools.plan_runs import PlanRuns
from hermes.tools.plans import PlanRunner, PlanSettings
from hermes.tools.policies import PolicyState
from hermes.tools.registry import ToolRegistry


@pytest.fixture
async def plan_runs(tmp_path: Path) -> AsyncIterator[PlanRuns]:
    runs = open_plan_runs(tmp_path / "plans.db")
    yield runs
    await runs.close()


@pytest.fixture
def make_runner(plan_runs: PlanRuns) -> Callable[..., PlanRunner]:
    state = PolicyState()  # in-process idempotency records of this test only

    def make(*tools: Any, concurrency: int = 8, runs: PlanRuns | None = None) -> PlanRunner:
        executor = ToolExecutor(ToolRegistry(tools), state=state)
        settings = PlanSettings(concurrency=concurrency, lease_seconds=5.0)
        return PlanRunner(executor, runs or plan_runs, settings=settings)

    return make
