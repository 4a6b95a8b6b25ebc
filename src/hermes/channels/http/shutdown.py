"""Graceful shutdown of the HTTP service (DESIGN.md, "More CLI": stop within 20 s on SIGTERM,
finishing or checkpointing running turns).

When shutdown begins (:func:`begin_shutdown`: the server got SIGTERM, or the application's
lifespan ends) new turns are refused (503 ``shutting_down``), running ones get
``server.shutdown_grace_seconds`` to finish; the rest are cancelled, which checkpoints them —
the agent closes a cancelled turn cleanly (its calls without results get ``interrupted``, the
state goes back to ``idle``), so nothing is left half-written, and each stream still ends
with its ``reply`` (``error.type`` ``cancelled``).

uvicorn waits for open connections *before* it runs the lifespan shutdown, so a server should
begin the shutdown when the signal arrives: :class:`GracefulServer` does (``hermes serve``
runs one). The lifespan's :func:`drain` covers any other server.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import uvicorn

from hermes.observe import get_logger

if TYPE_CHECKING:
    from fastapi import FastAPI

    from hermes.channels.http.state import Service

log = get_logger("hermes.channels.http")

PART = "shutdown"
#: How long cancelled turns get to write their checkpoint.
SETTLE_SECONDS = 3.0
#: How long an idle keep-alive connection stays open. Longer than the pools of common clients
#: (httpx and Node 5 s, aiohttp 15 s) and of load balancers (60 s), so the client is the one to
#: close it: a server closing first races a request the client is already sending on it,
#: which the client sees as a dropped connection (8 of 4,000 requests under bench/http_load.py
#: with uvicorn's 5 s default).
KEEP_ALIVE_SECONDS = 65


@dataclass(eq=False)
class _Shutdown:
    deadline: float
    task: asyncio.Task[int]


def begin_shutdown(svc: Service) -> None:
    """Refuse new turns and give the running ones their grace (idempotent; in the loop)."""
    if PART in svc.parts:
        return
    svc.stopping = True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + svc.settings.shutdown_grace_seconds
    task = loop.create_task(_finish_or_cancel(svc, deadline), name="hermes-shutdown")
    svc.parts[PART] = _Shutdown(deadline, task)
    log.info("shutdown_started", running=len(svc.running))


async def drain(svc: Service) -> int:
    """Begin the shutdown if nobody did and wait until it is done: every running turn finished
    or checkpointed. How many turns were cancelled."""
    begin_shutdown(svc)
    state: _Shutdown = svc.parts[PART]
    return await asyncio.shield(state.task)


async def _finish_or_cancel(svc: Service, deadline: float) -> int:
    loop = asyncio.get_running_loop()
    while (running := _live(svc)) and (left := deadline - loop.time()) > 0:
        await asyncio.wait(running, timeout=left, return_when=asyncio.FIRST_COMPLETED)
    late = _live(svc)
    for task in late:
        task.cancel()
    if late:
        log.warning("shutdown_cancelled_turns", count=len(late))
        _, stuck = await asyncio.wait(late, timeout=SETTLE_SECONDS)
        if stuck:
            log.error("shutdown_turns_not_settled", count=len(stuck))
    log.info("shutdown_turns_done", cancelled=len(late))
    return len(late)


def _live(svc: Service) -> list[asyncio.Task[Any]]:
    return [task for task in svc.running.all() if not task.done()]


class GracefulServer(uvicorn.Server):
    """A uvicorn server that begins the service's shutdown the moment it is told to stop, so
    streams end with their reply before their connections are closed."""

    def __init__(self, config: uvicorn.Config, svc: Service) -> None:
        super().__init__(config)
        self.svc = svc

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        begin_shutdown(self.svc)
        await super().shutdown(sockets)
        # uvicorn raises the signal again once it has stopped (the default action: the process
        # dies at once); a stop that was asked for and done is a normal exit here, so the
        # caller still closes the agent (stores, MCP servers) and exits 0.
        self._captured_signals.clear()


def graceful_server(app: FastAPI, **config: Any) -> GracefulServer:
    """A :class:`GracefulServer` for ``app`` (``config``: ``uvicorn.Config`` keywords); open
    connections get the turns' grace plus their checkpoint time before they are closed."""
    svc: Service = app.state.hermes
    grace = svc.settings.shutdown_grace_seconds + SETTLE_SECONDS + 1.0
    config.setdefault("timeout_graceful_shutdown", grace)
    config.setdefault("timeout_keep_alive", KEEP_ALIVE_SECONDS)
    return GracefulServer(uvicorn.Config(app, **config), svc)
