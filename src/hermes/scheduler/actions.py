"""What a run does, one function per kind of job (seed 002 §3.2: a timed task is a message
like any other, run by the agent).

- :func:`run_message`: the job's ``message`` as a turn of its session, through the agent. The
  one place a scheduled message enters the agent: when the channels' intake path exists, this
  is the call to switch to it.
- :func:`run_plan`: ``plan`` jobs: the named template of the agent's ``plans.dir`` with the
  job's params, run by the plan runner for the job's session and user; a run that failed or
  was compensated is a failed job run (its reply is the run object as JSON either way).
- :func:`run_function`: an ``@scheduled_job`` function, given the agent.

Each returns an :class:`Outcome`; none raises for the job's own failure (errors are data).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes.errors import HermesError
from hermes.scheduler.jobs import Job

if TYPE_CHECKING:
    from hermes.agent.agent import Agent

__all__ = ["Outcome", "run_action", "run_function", "run_message", "run_plan"]

#: The channel of a scheduled turn (``Message.channel``).
CHANNEL = "scheduler"
_MAX_ERROR_CHARS = 500


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one run ended: ``reply`` (the text to deliver) and ``error`` (``None``: it
    succeeded)."""

    reply: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


async def run_action(job: Job, agent: Agent, *, trace_id: str) -> Outcome:
    """Run ``job`` once with ``agent``; its trace is ``trace_id``."""
    match job.action:
        case "message":
            return await run_message(job, agent, trace_id=trace_id)
        case "plan":
            return await run_plan(job, agent, trace_id=trace_id)
        case "function":
            return await run_function(job, agent, trace_id=trace_id)


async def run_message(job: Job, agent: Agent, *, trace_id: str) -> Outcome:
    """The job's message as one turn of its session. A turn that ended in an honest failure
    (model down, timeout) is a failed run, with the turn's error."""
    assert job.message is not None
    try:
        result = await agent.run(
            job.message,
            session_id=job.session_id,
            user_id=job.user_id,
            channel=CHANNEL,
            trace_id=trace_id,
        )
    except HermesError as exc:  # refused: a busy session past its wait, a store down …
        return Outcome(None, _clip(f"{exc.code}: {exc.message}"))
    if result.error is not None:
        return Outcome(result.reply, f"{result.error['type']}: {result.error['message']}")
    return Outcome(result.reply)


async def run_plan(job: Job, agent: Agent, *, trace_id: str) -> Outcome:
    """A ``plan`` job: its template run to the end; the reply is the ``plan run --json``
    object with the outputs. Refused (unknown template, bad params) or not ``succeeded``:
    a failed run with the reason."""
    import json

    from hermes.agent.plans import AgentPlans  # the plans machinery loads for plan jobs only
    from hermes.tools.plans import run_json

    assert job.plan is not None
    template, params = job.plan["template"], job.plan.get("params") or {}
    try:
        async with AgentPlans(agent) as plans:
            run = await plans.start_template(
                template, params, user_id=job.user_id, session_id=job.session_id,
                trace_id=trace_id,
            )  # fmt: skip
    except HermesError as exc:
        return Outcome(None, _clip(f"{exc.code}: {exc.message}"))
    reply = json.dumps({**run_json(run), "outputs": run.outputs}, ensure_ascii=False, default=str)
    if run.status != "succeeded":
        reason = run.error.message if run.error is not None else run.status
        return Outcome(reply, _clip(f"plan {template} {run.status} (run {run.run_id}): {reason}"))
    return Outcome(reply)


async def run_function(job: Job, agent: Agent, *, trace_id: str) -> Outcome:
    """An ``@scheduled_job`` function; what it raises fails the run, its type and message
    recorded. A result that is not text is refused (the function returns the text to deliver).
    """
    del trace_id
    try:
        value: Any = job.function(agent)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:  # noqa: BLE001 - user code: its failure is the run's, as data
        return Outcome(None, _clip(f"{type(exc).__name__}: {exc}"))
    if value is None:
        return Outcome("")
    if not isinstance(value, str):
        return Outcome(None, f"the job function returned {type(value).__name__}, not text")
    return Outcome(value)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_CHARS else text[: _MAX_ERROR_CHARS - 1] + "…"
