"""Wires observability into the app (seed 002 §4.3): metrics and, when installed, spans.

One :class:`~hermes.observe.metrics.Metrics` per app (``Service.parts["metrics"]``), fed by the
request middleware, the turn events (``Service.observers``) and the memory's recall listener;
a :class:`~hermes.observe.otel.SpanObserver` joins the observers when OpenTelemetry is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.channels.http.health import METRICS_PART
from hermes.observe.metrics import Metrics, MetricsMiddleware
from hermes.observe.otel import span_observer
from hermes.tools.pipeline.breaker import BreakerStep

if TYPE_CHECKING:
    from fastapi import FastAPI

    from hermes.channels.http.state import Service
    from hermes.tools.policies.breaker import BreakerBoard

__all__ = ["install_observability"]


def install_observability(app: FastAPI, svc: Service) -> Metrics:
    """Create the app's metrics, mount the middleware and register the observers."""
    agent = svc.agent

    def breaker_board() -> BreakerBoard | None:
        step = agent.executor.step("breaker")
        return step.board if isinstance(step, BreakerStep) else None

    metrics = Metrics(
        tool_names=agent.tools.names,
        known_tool=agent.tools.__contains__,
        breaker_board=breaker_board,
        running=lambda: (len(svc.running), len(svc.running.tasks)),
    )
    svc.parts[METRICS_PART] = metrics
    svc.observers.append(metrics.observe)
    spans = span_observer()
    if spans is not None:
        svc.observers.append(spans)
    if agent.memory is not None:
        # Removed by nobody: the listener lives as long as the agent's memory, one per app.
        agent.memory.recall_listeners.append(metrics.recalled)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return metrics
