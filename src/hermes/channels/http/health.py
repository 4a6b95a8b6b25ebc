"""Routes: health and metrics (DESIGN.md, HTTP: ``/healthz``, ``/readyz``, ``/metrics``).

- ``GET /healthz``: liveness — the process answers; 200 ``{"status": "ok"}``, nothing checked.
- ``GET /readyz``: ``{"ready", "checks": {"store", "model", "mcp"}}``, each ``"ok"`` or
  ``"down"``; 503 with ``down`` (the names) and ``detail`` (why, one sentence each) when any is
  down. store: a real indexed read through the Store protocol; model: the offline brain and
  scripted models are always ok, an OpenAI-compatible endpoint is asked ``GET {base_url}/models``
  (any answer below 500 means reachable), at most once per :data:`MODEL_CHECK_TTL` seconds;
  mcp: every configured server connected (or none configured). Every check is bounded by
  :data:`CHECK_TIMEOUT` seconds. While the service shuts down it is not ready either
  (``down: ["service"]``), so a load balancer stops sending it traffic.
- ``GET /metrics``: the Prometheus text exposition of this app's registry
  (:mod:`hermes.observe.metrics`).

None of them needs an API key: probes and scrapers run without one.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Annotated, Any

import httpx2 as httpx  # the project's HTTP client (pyproject: httpx2, same API)
from fastapi import APIRouter, Depends, Response
from fastapi.responses import JSONResponse

from hermes.channels.http.auth import CallerDep
from hermes.channels.http.state import Service, service
from hermes.observe.metrics import CONTENT_TYPE, Metrics

router = APIRouter(tags=["health"])
ServiceDep = Annotated[Service, Depends(service)]

CHECK_TIMEOUT = 2.0
MODEL_CHECK_TTL = 5.0
#: A session id no session has (valid, so the store runs its ordinary indexed lookup).
PROBE_SESSION = "hermes-readyz-probe"
METRICS_PART = "metrics"
_MODEL_CHECK_PART = "readyz_model"


@dataclass(slots=True)
class _CachedCheck:
    at: float
    problem: str | None


# HEAD too (uptime checkers and load balancers probe with it), out of the schema: one
# documented operation per probe.
@router.head("/healthz", include_in_schema=False)
@router.get("/healthz", summary="Liveness / 存活检查")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.head("/readyz", include_in_schema=False, response_model=None)
@router.get("/readyz", summary="Readiness: store, model, MCP / 就绪检查", response_model=None)
async def readyz(svc: ServiceDep) -> JSONResponse:
    problems = dict(
        zip(
            ("store", "model", "mcp"),
            await asyncio.gather(_store_problem(svc), _model_problem(svc), _mcp_problem(svc)),
            strict=True,
        )
    )
    checks = {name: "down" if problem else "ok" for name, problem in problems.items()}
    if svc.stopping:  # draining: finish running turns, take no new traffic
        problems["service"] = "shutting down / 正在停止服务"
    down = [name for name, problem in problems.items() if problem is not None]
    body: dict[str, Any] = {"ready": not down, "checks": checks}
    if down:
        body["down"] = down
        body["detail"] = {name: problems[name] for name in down}
    return JSONResponse(body, status_code=503 if down else 200)


@router.get("/metrics", summary="Prometheus metrics / 监控指标", response_class=Response)
async def metrics(svc: ServiceDep, caller: CallerDep) -> Response:
    """The Prometheus text; with ``server.api_keys`` a scraper sends a key like every client
    (Prometheus: ``authorization: {credentials: KEY}``) — liveness and readiness need none."""
    del caller  # authenticated by the dependency
    found = svc.parts.get(METRICS_PART)
    body = found.render() if isinstance(found, Metrics) else b""
    return Response(content=body, media_type=CONTENT_TYPE)


async def _store_problem(svc: Service) -> str | None:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            await svc.agent.store.load_session(PROBE_SESSION)
    except TimeoutError:
        return f"the store did not answer within {CHECK_TIMEOUT:g} s / 存储未在时限内响应"
    except Exception as exc:  # noqa: BLE001 - any failure of the probe means "not ready"
        return f"the store cannot be read ({type(exc).__name__}) / 存储无法读取"
    return None


async def _model_problem(svc: Service) -> str | None:
    base_url = getattr(svc.agent.model, "base_url", None)
    if not isinstance(base_url, str) or not base_url:
        return None  # in-process models (offline brain, scripted): always ready
    cached = svc.parts.get(_MODEL_CHECK_PART)
    now = time.monotonic()
    if isinstance(cached, _CachedCheck) and now - cached.at < MODEL_CHECK_TTL:
        return cached.problem
    problem = await _probe_model(base_url)
    svc.parts[_MODEL_CHECK_PART] = _CachedCheck(time.monotonic(), problem)
    return problem


async def _probe_model(base_url: str) -> str | None:
    try:
        async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as client:
            response = await client.get(base_url.rstrip("/") + "/models")
    except httpx.HTTPError as exc:
        return f"the model endpoint is unreachable ({type(exc).__name__}) / 模型服务不可达"
    if response.status_code >= 500:
        return f"the model endpoint answered {response.status_code} / 模型服务返回错误"
    return None


async def _mcp_problem(svc: Service) -> str | None:
    if svc.agent.mcp is None:
        return None
    rows = svc.agent.mcp.status()
    waiting = [
        str(row.get("name")) for row in rows if row.get("state") not in ("ready", "disabled")
    ]
    if waiting:
        return f"MCP servers not connected: {', '.join(waiting)} / MCP 服务未连接"
    return None
