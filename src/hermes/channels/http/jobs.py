"""``GET /v1/jobs`` and ``POST /v1/jobs/{name}/run`` (DESIGN.md, "Public contracts", HTTP Jobs):
the scheduler ``hermes serve`` runs (``Service.parts["scheduler"]``, started in the lifespan).

    GET  /v1/jobs              → the ``hermes jobs list --json`` list ([] without jobs)
    POST /v1/jobs/{name}/run   → 202 {"run_id", "trace_id"}; 404 ``job_not_found``

A manual run starts at once in the background, overlapping a scheduled one or not (as
``hermes jobs run``); ``GET /v1/turns/{trace_id}/events`` does not follow it (a job's turn is the
scheduler's, not the HTTP service's), ``hermes trace TRACE_ID`` and ``GET /v1/jobs`` do. With
API keys configured, listing needs any key and running a job a key with the ``admin`` role: a
job acts for the users and sessions of its configuration, not for the caller.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, FastAPI
from fastapi.responses import JSONResponse

from hermes.channels.http.auth import Caller, CallerDep
from hermes.channels.http.chat import shutting_down
from hermes.channels.http.errors import ApiError
from hermes.channels.http.health import METRICS_PART
from hermes.channels.http.state import Service, service
from hermes.scheduler.service import JobNotFoundError
from hermes.scheduler.setup import SCHEDULER_PART

if TYPE_CHECKING:
    from hermes.observe.metrics import Metrics
    from hermes.scheduler.service import Scheduler


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Nested inside the application's lifespan: the scheduler is started by now. Its runs,
    # misses and skips feed the metrics (seed 002 §4.3; runs missed silently: Nous #30850).
    svc: Service = app.state.hermes
    scheduler: Scheduler | None = svc.parts.get(SCHEDULER_PART)
    metrics: Metrics | None = svc.parts.get(METRICS_PART)
    if scheduler is not None and metrics is not None:
        scheduler.listeners.append(metrics.job_run)
    yield


router = APIRouter(lifespan=_lifespan)
ServiceDep = Annotated[Service, Depends(service)]


def _admin_only(svc: Service, caller: Caller) -> None:
    if svc.settings.api_keys and not caller.admin:
        raise ApiError(
            403, "forbidden", "jobs need a key with the admin role / 任务接口需要 admin 角色的密钥"
        )


@router.get("/v1/jobs", responses={200: {"description": "The `hermes jobs list --json` list."}})
async def list_jobs(svc: ServiceDep, caller: CallerDep) -> list[dict[str, Any]]:
    """The configured jobs: ``[{name, cron, timezone, next_run, last_run, missed}]``."""
    scheduler: Scheduler | None = svc.parts.get(SCHEDULER_PART)
    if scheduler is None:
        return []
    return await scheduler.list_jobs()


@router.post(
    "/v1/jobs/{name}/run",
    status_code=202,
    responses={
        202: {"description": '`{"run_id", "trace_id"}`'},
        404: {"description": "`job_not_found`"},
        503: {"description": "`shutting_down`"},
    },
)
async def run_job(name: str, svc: ServiceDep, caller: CallerDep) -> JSONResponse:
    """Run job ``name`` now, in the background."""
    _admin_only(svc, caller)
    if svc.stopping:
        raise shutting_down()
    scheduler: Scheduler | None = svc.parts.get(SCHEDULER_PART)
    if scheduler is None:
        raise _not_found(name, "no jobs are configured (scheduler.jobs) / 未配置任何定时任务")
    try:
        started = await scheduler.run_now(name)
    except JobNotFoundError as exc:
        raise _not_found(name, exc.message) from None
    body = {"run_id": started.run_id, "trace_id": started.trace_id}
    return JSONResponse(body, status_code=202, headers={"X-Hermes-Trace-Id": started.trace_id})


def _not_found(name: str, why: str) -> ApiError:
    return ApiError(404, "job_not_found", f"no job {name[:128]!r}: {why}")
