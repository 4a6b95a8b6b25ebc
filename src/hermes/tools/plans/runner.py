"""The plan runner: validate, start, resume and cancel multi-call plans on the tool chain
(DESIGN.md, "Multi-call plans"; seed 003 §2.3, §4.3).

::

    runner = PlanRunner(agent.executor, plan_runs, workspace=..., extras=agent.tool_extras)
    run = await runner.start(spec, {"city": "Beijing"}, user_id="u1", session_id="s-0001")
    run = await runner.resume(run_id)          # after a crash: continues where it stopped
    await runner.cancel(run_id)

A run holds a lease on its record (``PlanRuns``), renewed while it runs; the renewal also
carries a cancel request to the runner. Losing the lease (another runner claimed the run)
stops this one with :class:`~hermes.errors.PlanBusyError`, writing nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hermes.errors import LeaseLostError, PlanBusyError
from hermes.observe import get_logger
from hermes.tools.pipeline import CallContext, ToolExecutor
from hermes.tools.plan_runs import PlanRun, PlanRuns
from hermes.tools.plans.events import EventSink, PlanEvent, ignore_events
from hermes.tools.plans.execution import ENDED, Execution
from hermes.tools.plans.node_key import with_node_keys
from hermes.tools.plans.saga import finish_run
from hermes.tools.plans.spec import PlanSpec, parse_plan
from hermes.tools.plans.validate import (
    PlanProblem,
    approval_problems,
    check_params,
    check_plan,
    raise_problems,
)

__all__ = ["PlanRunner", "PlanSettings"]

log = get_logger("tools")


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """``concurrency``: nodes of one run calling at once; ``lease_seconds``: how long a dead
    runner keeps others from resuming its run (renewed every third of it, at most every
    second, while it runs)."""

    concurrency: int = 8
    lease_seconds: float = 30.0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"plans.concurrency must be >= 1, got {self.concurrency}")
        if self.lease_seconds <= 0:
            raise ValueError(f"plans.lease_seconds must be > 0, got {self.lease_seconds}")

    @property
    def heartbeat_seconds(self) -> float:
        return min(self.lease_seconds / 3, 1.0)


class PlanRunner:
    """Runs plans with ``executor`` (the agent's tool chain; a node-key step is added to it)
    and records them in ``runs``. ``workspace`` and ``extras`` are what every node's call
    context carries (the agent's tool settings); ``approved``: calls of tools that need a
    person's approval run (the person started the run and approved them: ``hermes plan run
    --approve``), else a plan holding such a node is refused before anything runs (start and
    resume: :func:`~hermes.tools.plans.validate.approval_problems`)."""

    def __init__(
        self,
        executor: ToolExecutor,
        runs: PlanRuns,
        *,
        workspace: str = "",
        extras: Mapping[str, Any] | None = None,
        settings: PlanSettings | None = None,
        approved: bool = False,
    ) -> None:
        self.executor = with_node_keys(executor)
        self.runs = runs
        self.workspace = workspace
        self.extras = dict(extras or {})
        self.settings = settings if settings is not None else PlanSettings()
        self.approved = approved
        self._cancel_events: dict[str, asyncio.Event] = {}

    def check(self, spec: PlanSpec, params: Mapping[str, Any] | None = None) -> list[PlanProblem]:
        """Every problem of ``spec`` against the offered tools (``params``, when given, stand
        in for ``{{params.…}}``)."""
        return check_plan(spec, self.executor.registry, params=params, approved=self.approved)

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
        """Validate ``spec`` with ``params`` (``PlanInvalidError`` naming the nodes; nothing is
        recorded then), record a new run and run it to its end; the finished run."""
        coerced = check_params(spec, params or {})
        raise_problems(self.check(spec, coerced), what=f"plan {spec.name!r}")
        claim = await self.runs.create(
            spec.name,
            spec=spec.to_data(),
            params=coerced,
            node_ids=[node.id for node in spec.nodes],
            user_id=user_id,
            session_id=session_id,
            trace_id=trace_id,
            lease=self.settings.lease_seconds,
        )
        on_event(PlanEvent("plan_started", claim.run.run_id, plan=spec.name))
        return await self._drive(spec, claim.run, on_event)

    async def resume(
        self, run_id: str, *, on_event: EventSink = ignore_events, wait: bool = True
    ) -> PlanRun:
        """Claim ``run_id`` and run what is left of it; a finished run is returned as it is.
        A run held by a live lease elsewhere is waited for (until the lease has passed, when
        ``wait``) or refused with ``PlanBusyError``; ``RunNotFoundError`` for an unknown id."""
        claim = await self.runs.claim(run_id, lease=self.settings.lease_seconds)
        if claim.outcome == "held" and wait:
            claim = await self._wait_for_lease(run_id, claim.run)
        if claim.outcome == "finished":
            return claim.run
        if claim.outcome == "held":
            raise PlanBusyError(_held_message(claim.run))
        spec = parse_plan(claim.run.spec, what=f"the plan of run {run_id}")
        if not self.approved:
            await self._refuse_unapproved(spec, claim.run)
        on_event(PlanEvent("plan_started", run_id, plan=claim.run.plan))
        return await self._drive(spec, claim.run, on_event)

    async def _refuse_unapproved(self, spec: PlanSpec, run: PlanRun) -> None:
        """``PlanInvalidError`` (the claim given back) when a node still to run needs an
        approval this runner cannot give."""
        ended = [n for n, held in run.nodes.items() if held.status in ENDED]
        problems = approval_problems(spec, self.executor.registry, skip=ended)
        if problems:
            await self.runs.release(run.run_id, run.token)
            raise_problems(problems, what=f"the rest of plan run {run.run_id}")

    async def cancel(self, run_id: str) -> PlanRun:
        """Ask the run to stop: nodes not started are skipped, running calls end (their
        timeouts bound them), then the saga. Recorded, so a runner elsewhere stops too."""
        run = await self.runs.request_cancel(run_id)
        held = self._cancel_events.get(run_id)
        if held is not None:
            held.set()
        return run

    async def _wait_for_lease(self, run_id: str, run: PlanRun) -> Any:
        deadline = time.monotonic() + self.settings.lease_seconds + 1.0
        claim = None
        while time.monotonic() < deadline:
            left = (run.lease_until or 0.0) - time.time()
            await asyncio.sleep(min(max(left, 0.05) + 0.05, 1.0))
            claim = await self.runs.claim(run_id, lease=self.settings.lease_seconds)
            if claim.outcome != "held":
                return claim
            run = claim.run
        return claim

    async def _drive(self, spec: PlanSpec, run: PlanRun, on_event: EventSink) -> PlanRun:
        execution = Execution(
            spec=spec,
            run=run,
            runs=self.runs,
            executor=self.executor,
            context=self._context(run),
            on_event=on_event,
            concurrency=self.settings.concurrency,
        )
        if run.cancel_requested_at is not None:
            execution.cancelled.set()
        self._cancel_events[run.run_id] = execution.cancelled
        lost: list[LeaseLostError] = []
        main = asyncio.current_task()
        heartbeat = asyncio.create_task(self._heartbeat(execution, lost, main))
        try:
            await execution.execute()
            return await finish_run(execution)
        except LeaseLostError as exc:
            raise PlanBusyError(
                f"plan run {run.run_id} was taken over by another runner: {exc.message}"
            ) from None
        except asyncio.CancelledError:
            if lost:
                raise PlanBusyError(
                    f"plan run {run.run_id} was taken over by another runner: {lost[0].message}"
                ) from None
            raise
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            self._cancel_events.pop(run.run_id, None)

    async def _heartbeat(
        self, execution: Execution, lost: list[LeaseLostError], main: asyncio.Task[Any] | None
    ) -> None:
        interval = self.settings.heartbeat_seconds
        while True:
            await asyncio.sleep(interval)
            try:
                run = await self.runs.renew(
                    execution.run_id, execution.token, lease=self.settings.lease_seconds
                )
            except LeaseLostError as exc:
                lost.append(exc)
                if main is not None:
                    main.cancel()
                return
            if run.cancel_requested_at is not None:
                execution.cancelled.set()

    def _context(self, run: PlanRun) -> CallContext:
        return CallContext(
            session_id=run.session_id or "",
            user_id=run.user_id,
            trace_id=run.trace_id or "",
            workspace=self.workspace,
            approved=self.approved,
            extras=self.extras,
        )


def _held_message(run: PlanRun) -> str:
    left = max((run.lease_until or 0.0) - time.time(), 0.0)
    return (
        f"plan run {run.run_id} is being run by another process (its lease ends in {left:.0f} s); "
        "try again after that / 该计划正在由其他进程执行"
    )
