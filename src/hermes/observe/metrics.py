"""Prometheus metrics of ``hermes serve`` (seed 002 §4.3; DESIGN.md "Layers", observe).

One :class:`Metrics` per application, each with its own ``CollectorRegistry`` (never the global
one), so several apps in one process — tests, an embedding program — never collide. What is
measured, all named ``hermes_…``:

- HTTP: requests by route template / method / status and their duration (:class:`MetricsMiddleware`,
  a pure ASGI middleware: ``BaseHTTPMiddleware`` would buffer streamed responses);
- turns: count by outcome and latency; model calls: latency by model, tokens by kind;
- tools: calls by name / outcome and durations — all fed from the agent's events through
  :meth:`Metrics.observe`, a ``Service.observers`` callback;
- read at scrape time: the tools' circuit-breaker states, the turns and sessions running now;
- memory recall: recalls and recalled items (:meth:`Metrics.recalled`, a ``Memory`` listener);
- inbound events: deliveries by answer (duplicates counted) and processed outcomes;
  scheduled jobs: runs by status, misses and skips included (:meth:`Metrics.job_run`).

Label values are bounded: routes are templates (an unmatched path is ``<unmatched>``), tool
names are the registered tools' (anything else is ``<unknown>``), error types are short
identifiers (anything else is ``error``).
"""

from __future__ import annotations

import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from hermes.agent.events import AgentEvent
    from hermes.tools.policies.breaker import BreakerBoard

__all__ = ["CONTENT_TYPE", "UNKNOWN_TOOL", "UNMATCHED_ROUTE", "Metrics", "MetricsMiddleware"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
UNMATCHED_ROUTE = "<unmatched>"
UNKNOWN_TOOL = "<unknown>"
#: Turns whose start was seen and whose end was not yet (a turn that raised never ends):
#: beyond this many the oldest are forgotten, so the map stays bounded.
MAX_OPEN_TURNS = 10_000
_ERROR_TYPE = re.compile(r"[a-z][a-z0-9_]{0,39}")
#: Latency buckets in seconds: tool calls and HTTP requests are milliseconds, turns seconds.
_FAST_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_SLOW_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Gauge values of a breaker state (``hermes_tool_breaker_state``).
BREAKER_VALUES = {"closed": 0.0, "half_open": 1.0, "open": 2.0}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _outcome(ok: bool, error_type: str | None) -> str:
    if ok:
        return "ok"
    if error_type and _ERROR_TYPE.fullmatch(error_type):
        return error_type
    return "error"


class _LiveCollector(Collector):
    """What is read when Prometheus scrapes: breaker states, running turns and sessions."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Metric]:
        m = self._metrics
        breakers = GaugeMetricFamily(
            "hermes_tool_breaker_state",
            "Circuit-breaker state of a tool: 0 closed, 1 half_open, 2 open.",
            labels=["tool"],
        )
        board, names = m.breaker_board(), m.tool_names()
        if board is not None:
            for name in names:
                breaker = board.peek(name)
                if breaker is not None:
                    breakers.add_metric([name], BREAKER_VALUES.get(breaker.state, 0.0))
        yield breakers
        turns, sessions = m.running()
        yield GaugeMetricFamily(
            "hermes_turns_running", "Turns running now in this process.", value=turns
        )
        yield GaugeMetricFamily(
            "hermes_sessions_active", "Sessions with a turn running now.", value=sessions
        )

    def describe(self) -> Iterable[Metric]:
        return ()  # collected on every scrape; nothing to check at registration


class Metrics:
    """The metrics of one application (see the module docstring).

    ``tool_names``: the tools a label may name (else ``<unknown>``; ``known_tool``, when given,
    answers the same question for one name, faster); ``breaker_board``: where
    the breakers live (``None``: none); ``running``: ``(turns, sessions)`` running now. All
    three are called at scrape or event time, so they may change while the app runs.
    """

    def __init__(
        self,
        *,
        tool_names: Callable[[], Iterable[str]] = tuple,
        known_tool: Callable[[str], bool] | None = None,
        breaker_board: Callable[[], BreakerBoard | None] = lambda: None,
        running: Callable[[], tuple[int, int]] = lambda: (0, 0),
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._tool_names = tool_names
        self._known_tool = known_tool
        self.breaker_board = breaker_board
        self.running = running
        r = self.registry
        self.http_requests = Counter(
            "hermes_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=r,
        )
        self.http_duration = Histogram(
            "hermes_http_request_duration_seconds",
            "HTTP request duration (until the response ended) by route template and method.",
            ["route", "method"],
            buckets=_FAST_BUCKETS,
            registry=r,
        )
        self.turns = Counter("hermes_turns", "Turns by outcome.", ["outcome"], registry=r)
        self.turn_duration = Histogram(
            "hermes_turn_duration_seconds",
            "Turn latency by outcome.",
            ["outcome"],
            buckets=_SLOW_BUCKETS,
            registry=r,
        )
        self.model_duration = Histogram(
            "hermes_model_call_duration_seconds",
            "Model call latency by model.",
            ["model"],
            buckets=_SLOW_BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "hermes_model_tokens",
            "Tokens the model reported, by model and kind (prompt|completion).",
            ["model", "kind"],
            registry=r,
        )
        self.tool_calls = Counter(
            "hermes_tool_calls",
            "Tool calls by tool and outcome (ok or the error type).",
            ["tool", "outcome"],
            registry=r,
        )
        self.tool_duration = Histogram(
            "hermes_tool_call_duration_seconds",
            "Tool call duration by tool.",
            ["tool"],
            buckets=_FAST_BUCKETS,
            registry=r,
        )
        self.recalls = Counter("hermes_memory_recalls", "Long-term memory recalls run.", registry=r)
        self.recall_hits = Counter(
            "hermes_memory_recall_hits", "Memories recalled into turns.", registry=r
        )
        self._add_event_and_job_metrics(r)
        self.info = Gauge("hermes_up", "1 while the service runs.", registry=r)
        self.info.set(1)
        r.register(_LiveCollector(self))
        self._open_turns: OrderedDict[str, float] = OrderedDict()

    def _add_event_and_job_metrics(self, r: CollectorRegistry) -> None:
        # Inbound events (channels/http/events.py): every delivery's answer, then each
        # processed event's outcome; routes are configured names (bounded).
        self.webhook_events = Counter(
            "hermes_webhook_events",
            "Event deliveries by route and answer (accepted|duplicate|conflict).",
            ["route", "outcome"],
            registry=r,
        )
        self.webhook_processed = Counter(
            "hermes_webhook_processed",
            "Accepted events whose turn ended, by route and outcome (done|failed).",
            ["route", "status"],
            registry=r,
        )
        # Scheduled jobs (hermes.scheduler): runs by job and status, missed and skipped too.
        self.job_runs = Counter(
            "hermes_job_runs",
            "Job runs by job and status (succeeded|failed|missed|skipped).",
            ["job", "status"],
            registry=r,
        )

    def tool_names(self) -> frozenset[str]:
        """The tool names a label may carry now."""
        return frozenset(self._tool_names())

    def is_tool(self, name: str) -> bool:
        """Whether ``name`` is a tool a label may carry (``known_tool``, else ``tool_names``)."""
        if self._known_tool is not None:
            return self._known_tool(name)
        return name in self.tool_names()

    # -- feeding ------------------------------------------------------------------------------
    def observe(self, trace_id: str, session_id: str, event: AgentEvent) -> None:
        """A ``Service.observers`` callback: count one event of a turn. Never raises."""
        if event.type == "turn_started":
            self._open_turns[trace_id] = time.perf_counter()
            while len(self._open_turns) > MAX_OPEN_TURNS:
                self._open_turns.popitem(last=False)
        elif event.type == "model_call_finished":
            self.model_duration.labels(event.model or "unknown").observe(event.cost_ms / 1000)
        elif event.type == "tool_call_finished":
            tool = event.name if self.is_tool(event.name) else UNKNOWN_TOOL
            self.tool_calls.labels(tool, _outcome(event.ok, event.error_type)).inc()
            self.tool_duration.labels(tool).observe(event.cost_ms / 1000)
        elif event.type == "turn_finished":
            result = event.result
            started = self._open_turns.pop(trace_id, None)
            self.turns.labels(result.outcome).inc()
            if started is not None:
                self.turn_duration.labels(result.outcome).observe(time.perf_counter() - started)
            usage = result.usage or {}
            model = result.model or "unknown"
            for key, label in (("prompt_tokens", "prompt"), ("completion_tokens", "completion")):
                count = usage.get(key)
                if isinstance(count, int) and count > 0:
                    self.model_tokens.labels(model, label).inc(count)

    def job_run(self, job: str, status: str) -> None:
        """A scheduler listener: one run of ``job`` ended (or was recorded) as ``status``."""
        self.job_runs.labels(job, status if _ERROR_TYPE.fullmatch(status) else "error").inc()

    def recalled(self, hits: int) -> None:
        """A memory recall listener: one recall that brought ``hits`` memories."""
        self.recalls.inc()
        if hits > 0:
            self.recall_hits.inc(hits)

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.http_requests.labels(route, method, str(status)).inc()
        self.http_duration.labels(route, method).observe(seconds)

    # -- exposition ---------------------------------------------------------------------------
    def render(self) -> bytes:
        """The Prometheus text exposition of every metric (``GET /metrics``)."""
        return generate_latest(self.registry)


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class MetricsMiddleware:
    """Pure ASGI middleware counting HTTP requests by route template (streaming-safe).

    The route is the template FastAPI matched (``/v1/sessions/{session_id}``), read from the
    scope once the app ran; a path no route matched is ``<unmatched>``. The duration runs
    until the last body chunk was sent, so a stream counts its whole length.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def sending(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            method = scope.get("method", "GET")
            self.metrics.request(
                _route_of(scope),
                method if method in _METHODS else "OTHER",
                status,
                time.perf_counter() - start,
            )


def _route_of(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED_ROUTE
