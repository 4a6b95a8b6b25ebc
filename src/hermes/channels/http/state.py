"""What every route reaches: the running service (:class:`Service`) on ``app.state.hermes``.

One ``Service`` per application: the agent, the ``server`` settings and the parts the routes
share — the turns running now (cancel, busy, shutdown), their replayable events, the durable
``Idempotency-Key`` records, the metrics. Routes get it with ``Depends(service)``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request

from hermes.config.server import ServerConfig

if TYPE_CHECKING:
    from hermes.agent.agent import Agent
    from hermes.agent.events import AgentEvent
    from hermes.config import LoadedConfig


@dataclass(eq=False)
class RunningTurns:
    """The turns this process runs now, by session: ``POST /v1/sessions/{id}/cancel`` cancels
    one, shutdown waits for (then checkpoints) them all. A turn is registered by the code that
    starts it and removed when it ends, whatever happened."""

    tasks: dict[str, set[asyncio.Task[Any]]] = field(default_factory=dict)

    def add(self, session_id: str, task: asyncio.Task[Any]) -> None:
        self.tasks.setdefault(session_id, set()).add(task)

        def _done(finished: asyncio.Task[Any]) -> None:
            running = self.tasks.get(session_id)
            if running is not None:
                running.discard(finished)
                if not running:
                    del self.tasks[session_id]

        task.add_done_callback(_done)

    def of(self, session_id: str) -> list[asyncio.Task[Any]]:
        return list(self.tasks.get(session_id, ()))

    def all(self) -> list[asyncio.Task[Any]]:
        return [task for tasks in self.tasks.values() for task in tasks]

    def __len__(self) -> int:
        return sum(len(tasks) for tasks in self.tasks.values())


@dataclass(eq=False)
class Service:
    """The running HTTP service (see the module docstring)."""

    agent: Agent
    settings: ServerConfig
    #: The configuration the agent was built from (``None``: an agent passed in directly).
    loaded: LoadedConfig | None = None
    running: RunningTurns = field(default_factory=RunningTurns)
    #: Set when shutdown starts: new turns are refused (503), running ones finish.
    stopping: bool = False
    #: Called with ``(trace_id, session_id, event)`` for every event of every turn the service
    #: runs (metrics, spans); an observer must not raise or block.
    observers: list[Callable[[str, str, AgentEvent], None]] = field(default_factory=list)
    #: Parts added by their own modules (turn events, request keys, metrics, limiter), by name.
    parts: dict[str, Any] = field(default_factory=dict)


async def service(request: Request) -> Service:
    """The ``Service`` of the application serving ``request`` (a FastAPI dependency).

    ``async`` although it never waits, as every dependency here: FastAPI runs a plain ``def``
    dependency in its thread pool, a thread hop per request for a dictionary lookup."""
    found: Service = request.app.state.hermes
    return found
