"""Routes: multi-call plans (DESIGN.md, HTTP, "Plans"; seed 003 §2.3, §4.3).

- ``POST /v1/plans`` ``{template, params, session_id?, user_id?}`` → ``text/event-stream`` of the
  run: ``plan_started`` (``{run_id, plan}``), then one ``node`` event per node state change
  (``{run_id, node_id, status, error?}``) and ``compensation`` events, ending in ``event: plan``
  with the ``plan run --json`` object. ``id:`` rises from 1. Refusals come before the stream,
  as JSON errors: an unknown template 404 ``template_not_found``, params or a plan that fail
  validation 400 ``invalid_plan`` (naming the nodes). Only templates may be started unless
  ``plans.allow_freeform`` (then ``{plan: {...}}`` is accepted too). The run goes on when the
  client disconnects; ``GET /v1/plans/{run_id}`` shows it. With an ``Idempotency-Key`` header a
  plan starts once per key: a retry with the same body gets that run's ``plan_started`` and,
  once it ended, its ``plan`` event (``Idempotency-Replayed: true``); another body is 409.
- ``GET /v1/plans/{run_id}`` → the run: the ``plan run --json`` object with ``plan``,
  ``outputs``, ``error``, ``user_id``, ``session_id``, ``trace_id``, ``started_at``,
  ``finished_at``, ``cancel_requested``. 404 for an unknown run (or another user's).
- ``POST /v1/plans/{run_id}/cancel`` → 202 with the run: nodes not started are skipped, the
  running ones end, then the saga runs.

Auth as the other routes: with API keys a caller sees and starts only its own user's runs
(``admin`` may act for others).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.sse import KEEPALIVE_COMMENT, format_sse_event
from pydantic import BaseModel, ConfigDict, Field

from hermes.agent.plans import AgentPlans
from hermes.channels.http.auth import Caller, CallerDep, acting_user
from hermes.channels.http.errors import ApiError
from hermes.channels.http.idempotency import KEY_HEADER, REPLAYED_HEADER, idempotent
from hermes.channels.http.state import Service, service
from hermes.errors import HermesError, PlanInvalidError, PlanTemplateNotFoundError
from hermes.observe import get_logger
from hermes.session.ids import validate_session_id
from hermes.tools.plan_runs import PlanRun
from hermes.tools.plans import PlanEvent, PlanSpec, check_params, parse_plan, run_details, run_json
from hermes.tools.plans.validate import raise_problems

router = APIRouter(tags=["plans"])

ServiceDep = Annotated[Service, Depends(service)]
PART = "plans"
_TASKS = "plans.tasks"
_RUN_ID = re.compile(r"plan-[0-9a-f]{24}")
KEEPALIVE_SECONDS = 15.0
_FOLLOW_POLL_S = 0.2
_INTERNAL = {
    "type": "internal_error",
    "message": "the plan run stopped on an internal error; see the server log / 内部错误",
}

log = get_logger("http")


class PlanStart(BaseModel):
    """The body of ``POST /v1/plans``."""

    model_config = ConfigDict(extra="forbid")

    template: str | None = Field(default=None, description="A template of plans.dir.")
    params: dict[str, Any] = Field(default_factory=dict)
    plan: dict[str, Any] | None = Field(
        default=None, description="A plan as data (only with plans.allow_freeform)."
    )
    session_id: str | None = None
    user_id: str | None = None


def plans_of(svc: Service) -> AgentPlans:
    """The service's plans (one runner: a cancel reaches the run it started at once)."""
    held: AgentPlans | None = svc.parts.get(PART)
    if held is None:
        held = svc.parts[PART] = AgentPlans(svc.agent)
    return held


@router.post("/v1/plans", response_class=StreamingResponse)
async def start_plan(
    body: PlanStart, request: Request, svc: ServiceDep, caller: CallerDep
) -> StreamingResponse:
    """Start a plan template; its node states as server-sent events. / 启动计划模板。"""
    user = acting_user(caller, body.user_id)
    session_id = None if body.session_id is None else validate_session_id(body.session_id)
    plans = plans_of(svc)
    spec = _spec(plans, body)
    try:
        params = check_params(spec, body.params)
        raise_problems(plans.runner.check(spec, params), what=f"plan {spec.name!r}")
    except PlanInvalidError as exc:
        raise ApiError(400, exc.code, exc.message) from None
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def watch(event: PlanEvent) -> None:
        if event.kind == "plan_started" and not started.done():
            started.set_result(event.run_id)
        queue.put_nowait((event.kind, event.to_dict()))

    async def run() -> None:
        try:
            finished = await plans.start(
                spec, params, user_id=user, session_id=session_id, on_event=watch
            )
            queue.put_nowait(("plan", run_json(finished)))
        except HermesError as exc:  # a store down, the run taken over: the stream says so
            _failed_start(started, exc)
            queue.put_nowait(("error", {"error": exc.to_dict()}))
        except Exception as exc:
            log.exception("plan_run_failed", error_type=type(exc).__name__)
            _failed_start(started, exc)
            queue.put_nowait(("error", {"error": _INTERNAL}))

    async def begin() -> tuple[int, dict[str, Any]]:
        task = asyncio.create_task(run())
        tasks: set[asyncio.Task[None]] = svc.parts.setdefault(_TASKS, set())
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return 200, {"run_id": await asyncio.shield(started)}

    if request.headers.get(KEY_HEADER) is None:
        await begin()
        return _sse(_stream(queue))
    # One run per Idempotency-Key: the first request starts it; a retry with the same body
    # follows that run (its final ``plan`` event) instead of starting another.
    answer = await idempotent(
        request, svc, caller, "POST /v1/plans", begin,
        body=body.model_dump(mode="json"), user_id=user,
    )  # fmt: skip
    if answer.headers.get(REPLAYED_HEADER) != "true":
        return _sse(_stream(queue))
    run_id = json.loads(bytes(answer.body))["run_id"]
    return _sse(_follow(plans, run_id), replayed=True)


def _failed_start(started: asyncio.Future[str], exc: BaseException) -> None:
    if not started.done():
        started.set_exception(exc)


def _sse(body: AsyncIterator[bytes], *, replayed: bool = False) -> StreamingResponse:
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    if replayed:
        headers[REPLAYED_HEADER] = "true"
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)


async def _follow(plans: AgentPlans, run_id: str) -> AsyncIterator[bytes]:
    """A retry's stream: ``plan_started`` of the first request's run, then its ``plan`` event
    once it has ended (polled; keep-alive comments meanwhile)."""
    run = await plans.get(run_id)
    plan = run.plan if run is not None else None
    yield _event("plan_started", 1, {"run_id": run_id, "plan": plan})
    waited = 0.0
    while run is not None and run.status == "running":
        await asyncio.sleep(_FOLLOW_POLL_S)
        waited += _FOLLOW_POLL_S
        if waited >= KEEPALIVE_SECONDS:
            waited = 0.0
            yield KEEPALIVE_COMMENT
        run = await plans.get(run_id)
    if run is None:
        yield _event(
            "error", 2, {"error": {"type": "run_not_found", "message": f"no plan run {run_id!r}"}}
        )
        return
    yield _event("plan", 2, run_json(run))


def _event(kind: str, number: int, data: dict[str, Any]) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return format_sse_event(data_str=text, event=kind, id=str(number))


async def _stream(queue: asyncio.Queue[tuple[str, dict[str, Any]]]) -> AsyncIterator[bytes]:
    number = 0
    while True:
        try:
            kind, data = await asyncio.wait_for(queue.get(), timeout=KEEPALIVE_SECONDS)
        except TimeoutError:
            yield KEEPALIVE_COMMENT
            continue
        if kind == "plan_finished":
            continue  # the ``plan`` event that follows carries the whole run
        number += 1
        yield _event(kind, number, data)
        if kind in ("plan", "error"):
            return


def _spec(plans: AgentPlans, body: PlanStart) -> PlanSpec:
    if (body.template is None) == (body.plan is None):
        raise ApiError(400, "invalid_request", "send either 'template' or 'plan' / 需要 template")
    try:
        if body.template is not None:
            return plans.library.load(body.template)
        if not plans.setup.allow_freeform:
            raise ApiError(
                403,
                "forbidden",
                "only plan templates may be started here (plans.allow_freeform is false) "
                "/ 只允许启动计划模板",
            )
        assert body.plan is not None
        return parse_plan(body.plan)
    except PlanTemplateNotFoundError as exc:
        raise ApiError(404, exc.code, exc.message) from None
    except PlanInvalidError as exc:
        raise ApiError(400, exc.code, exc.message) from None


@router.get("/v1/plans/{run_id}")
async def get_plan(run_id: str, svc: ServiceDep, caller: CallerDep) -> dict[str, Any]:
    """A plan run and its nodes. / 查看计划运行。"""
    return run_details(await _owned(svc, caller, run_id))


@router.post("/v1/plans/{run_id}/cancel", status_code=202)
async def cancel_plan(run_id: str, svc: ServiceDep, caller: CallerDep) -> JSONResponse:
    """Stop a plan run (the saga undoes what it did). / 取消计划运行。"""
    await _owned(svc, caller, run_id)
    run = await plans_of(svc).cancel(run_id)
    return JSONResponse(run_details(run), status_code=202)


async def _owned(svc: Service, caller: Caller, run_id: str) -> PlanRun:
    if not _RUN_ID.fullmatch(run_id):
        raise ApiError(
            400, "invalid_id", f"invalid plan run id {run_id[:60]!r} / 计划运行 id 不合法"
        )
    run = await plans_of(svc).get(run_id)
    if run is None or not _may_see(caller, run):
        raise ApiError(404, "run_not_found", f"no plan run {run_id!r} / 没有这个计划运行")
    return run


def _may_see(caller: Caller, run: PlanRun) -> bool:
    return caller.user_id is None or caller.admin or run.user_id == caller.user_id
