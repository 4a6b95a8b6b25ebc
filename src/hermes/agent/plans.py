"""Plans of an agent: the runner on the agent's tool chain and its record of runs, the
templates of ``plans.dir``, and a finished run fed back into its session (DESIGN.md,
"Multi-call plans"; seed 003 §2.3, §4.3, §5).

Every entry point — ``hermes plan``, the ``run_plan`` tool, the rule brain, jobs and
``POST /v1/plans`` — goes through :class:`AgentPlans`::

    plans = AgentPlans(agent)
    run = await plans.start_template("book-meeting", {"city": "北京"}, session_id=..., user_id=...)

A finished run of a session becomes a ``state`` item of that session carrying the plan's
declared ``outputs``, and the outputs go into the session's working memory (as the result of
a ``plan:<name>`` call), so a later "我上次订的会议室" finds the booked room.
"""

from __future__ import annotations

import json
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes.agent.compose import open_plan_runs
from hermes.observe import get_logger
from hermes.session.items import Item, SessionState
from hermes.tools.plan_runs import PlanRun, PlanRuns, PlanRunSummary
from hermes.tools.plans import PlanRunner, PlanSettings, PlanSpec
from hermes.tools.plans.events import EventSink, ignore_events
from hermes.tools.plans.library import PlanLibrary

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.config.plans import PlansConfig

__all__ = ["AgentPlans", "PlanSetup", "configure_plans", "plan_setup"]

log = get_logger("agent")

#: Where a session's working memory lives in ``SessionState.scratch`` (hermes.agent.memory_step).
_WORKING_MEMORY_KEY = "working_memory"
_LOCK_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class PlanSetup:
    """What the ``plans`` section gives an agent: its templates, whether plans given as data
    may be started by the API and models, and how runs go."""

    library: PlanLibrary
    allow_freeform: bool = False
    settings: PlanSettings = field(default_factory=PlanSettings)

    @classmethod
    def from_config(cls, config: PlansConfig, base_dir: Path) -> PlanSetup:
        directory = Path(config.dir).expanduser()
        return cls(
            PlanLibrary(directory if directory.is_absolute() else base_dir / directory),
            config.allow_freeform,
            PlanSettings(concurrency=config.concurrency, lease_seconds=config.lease_seconds),
        )


_setups: weakref.WeakKeyDictionary[Agent, PlanSetup] = weakref.WeakKeyDictionary()


def configure_plans(agent: Agent, setup: PlanSetup) -> None:
    """Give ``agent`` its plan setup (the factory does, from ``plans``; it then offers the
    ``run_plan`` tool: ``hermes.agent.plan_tool``)."""
    _setups[agent] = setup


def plan_setup(agent: Agent) -> PlanSetup:
    """The agent's plan setup (default: templates in ``<workspace>/plans``, templates only)."""
    held = _setups.get(agent)
    return held if held is not None else PlanSetup(PlanLibrary(agent.workspace / "plans"))


class AgentPlans:
    """Start, resume, cancel and read plan runs of ``agent``. ``approved``: tools that need
    a person's approval run (the person who started the run approved them: ``hermes plan run
    --approve``, or the ``run_plan`` call they approved), else a plan holding such a node is
    refused before anything runs. Close with :meth:`aclose` (or ``async with``)."""

    def __init__(self, agent: Agent, *, approved: bool = False) -> None:
        self.agent = agent
        self.setup = plan_setup(agent)
        self.runs: PlanRuns = open_plan_runs(agent.store)
        self.runner = PlanRunner(
            agent.executor,
            self.runs,
            workspace=str(agent.workspace),
            extras=agent.tool_extras,
            settings=self.setup.settings,
            approved=approved,
        )

    async def __aenter__(self) -> AgentPlans:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.runs.close()

    @property
    def library(self) -> PlanLibrary:
        return self.setup.library

    async def start(
        self,
        spec: PlanSpec,
        params: Mapping[str, Any] | None = None,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        trace_id: str | None = None,
        on_event: EventSink = ignore_events,
    ) -> PlanRun:
        """Validate and run ``spec`` (``PlanInvalidError`` naming the nodes); the finished run,
        recorded in its session."""
        run = await self.runner.start(
            spec, params, user_id=user_id, session_id=session_id, trace_id=trace_id,
            on_event=on_event,
        )  # fmt: skip
        await self._record(run)
        return run

    async def start_template(
        self, name: str, params: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> PlanRun:
        """Run template ``name`` (``PlanTemplateNotFoundError`` when there is none)."""
        return await self.start(self.library.load(name), params, **kwargs)

    async def resume(self, run_id: str, *, on_event: EventSink = ignore_events) -> PlanRun:
        """Continue ``run_id`` where it stopped (a finished run is returned as it is)."""
        before = await self.runs.get(run_id)
        run = await self.runner.resume(run_id, on_event=on_event)
        if before is not None and before.status == "running":
            await self._record(run)
        return run

    async def cancel(self, run_id: str) -> PlanRun:
        return await self.runner.cancel(run_id)

    async def get(self, run_id: str) -> PlanRun | None:
        return await self.runs.get(run_id)

    async def list_runs(
        self, *, limit: int = 50, user_id: str | None = None
    ) -> list[PlanRunSummary]:
        return await self.runs.list_runs(limit=limit, user_id=user_id)

    async def _record(self, run: PlanRun) -> None:
        """The finished run as a ``state`` item of its session, its outputs in the session's
        working memory (a help: a failure here is logged, the run stands)."""
        if run.session_id is None or run.status == "running":
            return
        try:
            await _record_in_session(self.agent, run)
        except Exception as exc:  # noqa: BLE001 - the run is recorded in plans.db either way
            log.error("plan_session_record_failed", run_id=run.run_id, error=str(exc)[:200])


async def _record_in_session(agent: Agent, run: PlanRun) -> None:
    assert run.session_id is not None
    outputs = dict(run.outputs or {})
    content = {"plan": run.plan, "run_id": run.run_id, "status": run.status, "outputs": outputs}
    item = Item(
        role="system",
        kind="state",
        content=json.dumps(content, ensure_ascii=False, default=str),
        trace_id=run.trace_id,
        meta={"event": "plan_finished", **content},
    )
    store = agent.store
    await store.ensure_session(run.session_id, run.user_id)
    async with agent.session_claim(run.session_id, wait=_LOCK_WAIT_S) as claim:
        record = await store.load_session(run.session_id)
        state = record.state if record is not None else SessionState()
        if run.status == "succeeded" and outputs:
            _remember_outputs(state, run, outputs)
        await store.append(run.session_id, [item], state, fence=claim.token)


def _remember_outputs(state: SessionState, run: PlanRun, outputs: Mapping[str, Any]) -> None:
    from hermes.memory.working import WorkingMemory  # memory loads only when a plan ends

    working = WorkingMemory.from_dict(state.scratch.get(_WORKING_MEMORY_KEY))
    summary = ", ".join(f"{k}={_short(v)}" for k, v in outputs.items())
    working.observe_tool_call(
        f"plan:{run.plan}",
        dict(run.params),
        ok=True,
        now=datetime.fromtimestamp(run.finished_at or time.time(), UTC),
        output=dict(outputs),
        summary=f"plan {run.plan} {run.status}: {summary}",
    )
    state.scratch[_WORKING_MEMORY_KEY] = working.to_dict()


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"
