"""The FastAPI application of ``hermes serve`` (DESIGN.md, HTTP).

``create_app(agent, settings)`` wires the error shape, the middleware (auth limits, body size,
CORS, trace ids, metrics) and every route module's router around one :class:`Service`. The
agent is the caller's: the app never closes it (``hermes serve`` does, after shutdown).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI

from hermes import __version__
from hermes.channels.http import (
    approvals,
    chat,
    event_handlers,
    events,
    health,
    jobs,
    memory,
    openai_compat,
    plans,
    sessions,
    turns,
)
from hermes.channels.http.errors import install_error_handlers
from hermes.channels.http.idempotency import close_request_keys
from hermes.channels.http.middleware import install_middleware
from hermes.channels.http.observe import install_observability
from hermes.channels.http.shutdown import drain
from hermes.channels.http.state import Service
from hermes.config.server import ServerConfig

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.config import LoadedConfig

#: Route modules in the order their routes are matched.
ROUTERS = (chat, turns, sessions, approvals, memory, plans, health, events, jobs, openai_compat)


def create_app(
    agent: Agent,
    settings: ServerConfig | None = None,
    *,
    loaded: LoadedConfig | None = None,
) -> FastAPI:
    """The HTTP API over ``agent`` with ``settings`` (default: ``ServerConfig()``)."""
    svc = Service(agent=agent, settings=settings or ServerConfig(), loaded=loaded)
    if loaded is not None:  # a route whose handler cannot run is refused before serving
        event_handlers.check_routes(agent, loaded.config.webhooks)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if agent.mcp is not None:
            agent.mcp.start()
        # --- sched: the scheduler runs while the app serves (hermes.scheduler.setup) ---
        from hermes.scheduler.setup import SCHEDULER_PART, start_scheduler

        scheduler = await start_scheduler(loaded, agent)  # None without jobs
        if scheduler is not None:
            svc.parts[SCHEDULER_PART] = scheduler
        # --- end sched ---
        yield
        # Graceful shutdown (DESIGN.md, "More CLI": SIGTERM): the scheduler stops firing and
        # its runs finish within a short grace (or are recorded interrupted) while running
        # turns finish or are checkpointed; then the Idempotency-Key records are closed.
        stopping: list[Awaitable[object]] = [drain(svc)]
        if scheduler is not None:
            stopping.append(scheduler.stop(grace=min(5.0, svc.settings.shutdown_grace_seconds)))
        await asyncio.gather(*stopping)
        await close_request_keys(svc)

    app = FastAPI(
        title="Hermes",
        version=__version__,
        description="A strict, fast, message-driven agent runtime. / 消息驱动的智能体运行时。",
        lifespan=lifespan,
    )
    app.state.hermes = svc
    install_error_handlers(app)
    # Limits, CORS and trace ids (channels/http/middleware.py), then metrics and spans
    # (seed 002 §4.3) outermost, so refused requests (413, 429) are counted too.
    install_middleware(app, svc.settings)
    install_observability(app, svc)
    for module in ROUTERS:
        app.include_router(module.router)
    return app
