"""Circuit breakers: stop calling a tool that keeps failing, then probe it again later.

One breaker per tool name, in-process. States::

    closed ──(``failures`` consecutive failures)──▶ open ──(``reset_after`` s)──▶ half_open
      ▲                                              ▲                               │
      └──────────────(the probe succeeds)────────────┼───────(the probe fails)──────┘

While open, a call is refused at once (the executor returns ``service_unavailable``) without
running. Half-open lets exactly one call through as a probe; the others are refused until it
ends. A call that started while the circuit was closed and ends after it opened changes
nothing (only the probe decides the half-open state).

What counts as a failure (:func:`counts_as_failure`): any exception of the run except the
caller's own mistakes — ``ToolArgumentError`` and HTTP 4xx other than 429 — which say nothing
about the health of the service behind the tool. Values a tool returns (even a
``ToolResult(ok=False)``) are successes of the run; a tool reports an outage by raising.

The clock is injectable (``time.monotonic`` by default) so tests drive the transitions.
Each breaker takes a ``threading.Lock`` for its few field updates, so it is safe from several
event loops or threads; on one loop the lock is never contended.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hermes.errors import HermesError, ToolArgumentError, ToolTimeoutError
from hermes.observe import get_logger
from hermes.tools.policies.retry import status_code_of

__all__ = [
    "BreakerBoard",
    "BreakerPolicy",
    "BreakerState",
    "CircuitBreaker",
    "Ticket",
    "counts_as_failure",
]

BreakerState = Literal["closed", "open", "half_open"]
#: What :meth:`CircuitBreaker.allow` grants: a normal run, or the single half-open probe.
Ticket = Literal["run", "probe"]

logger = get_logger("tools")


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """Open after ``failures`` consecutive failures; probe again after ``reset_after`` s."""

    failures: int = 5
    reset_after: float = 30.0

    def __post_init__(self) -> None:
        if isinstance(self.failures, bool) or not isinstance(self.failures, int):
            raise TypeError("BreakerPolicy.failures must be an integer")
        if self.failures < 1:
            raise ValueError("BreakerPolicy.failures must be at least 1")
        if isinstance(self.reset_after, bool) or not isinstance(self.reset_after, int | float):
            raise TypeError("BreakerPolicy.reset_after must be a number of seconds")
        if not math.isfinite(self.reset_after) or self.reset_after <= 0:
            raise ValueError("BreakerPolicy.reset_after must be a positive number of seconds")


def counts_as_failure(exc: BaseException) -> bool:
    """Whether a run's exception counts against the tool's health (module docstring)."""
    if isinstance(exc, ToolArgumentError):
        return False
    status = status_code_of(exc)
    if status is None and isinstance(exc, HermesError) and not isinstance(exc, ToolTimeoutError):
        # A Hermes error says what kind of failure it is: a 4xx (not found, blocked, denied…)
        # is about this request, not the tool's health, and must not open the breaker for all.
        status = exc.status
    return status is None or status == 429 or not 400 <= status <= 499


class CircuitBreaker:
    """The breaker of one tool. Use: ``ticket = allow()``; ``None`` means refuse the call;
    else run it and report with ``record(ticket, failed=...)``, or ``release(ticket)`` when
    the run ended without a verdict (cancelled, or a caller error)."""

    __slots__ = (
        "_clock",
        "_failures",
        "_lock",
        "_opened_at",
        "_probing",
        "_state",
        "name",
        "policy",
    )

    def __init__(self, name: str, policy: BreakerPolicy, clock: Callable[[], float]) -> None:
        self.name = name
        self.policy = policy
        self._clock = clock
        self._lock = threading.Lock()
        self._state: BreakerState = "closed"
        self._failures = 0
        self._opened_at = 0.0
        self._probing = False

    @property
    def state(self) -> BreakerState:
        """The current state; an open circuit whose wait is over reads as ``half_open``."""
        with self._lock:
            if self._state == "open" and self._wait_left() <= 0:
                return "half_open"
            return self._state

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    def retry_in(self) -> float:
        """Seconds until an open circuit lets a probe through (0 when not open)."""
        with self._lock:
            return max(0.0, self._wait_left()) if self._state == "open" else 0.0

    def allow(self) -> Ticket | None:
        """Permission to run now: ``"run"`` (closed), ``"probe"`` (the one half-open call)
        or ``None`` (open, or another probe is in flight)."""
        with self._lock:
            if self._state == "closed":
                return "run"
            if self._state == "open":
                if self._wait_left() > 0:
                    return None
                self._state = "half_open"
                self._probing = False
                logger.info("circuit_half_open", tool=self.name)
            if self._probing:
                return None
            self._probing = True
            return "probe"

    def record(self, ticket: Ticket, *, failed: bool) -> None:
        """Report how a run that ``allow`` granted ended."""
        with self._lock:
            if ticket == "probe":
                self._probing = False
                if failed:
                    self._open()
                else:
                    self._close()
            elif self._state == "closed":
                if not failed:
                    self._failures = 0
                    return
                self._failures += 1
                if self._failures >= self.policy.failures:
                    self._open()

    def release(self, ticket: Ticket) -> None:
        """A granted run ended without a verdict: free the probe slot, change nothing else."""
        if ticket == "probe":
            with self._lock:
                self._probing = False

    def _wait_left(self) -> float:
        return self._opened_at + self.policy.reset_after - self._clock()

    def _open(self) -> None:
        self._state = "open"
        self._opened_at = self._clock()
        logger.warning(
            "circuit_opened",
            tool=self.name,
            failures=self._failures,
            reset_after_s=self.policy.reset_after,
        )

    def _close(self) -> None:
        self._state = "closed"
        self._failures = 0
        logger.info("circuit_closed", tool=self.name)


class BreakerBoard:
    """The breakers of a process (or of a test), by tool name; created on first use.

    A tool re-registered with another policy gets a fresh breaker.
    """

    __slots__ = ("_breakers", "_clock", "_lock")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._breakers: dict[str, CircuitBreaker] = {}
        self._lock = threading.Lock()

    def get(self, name: str, policy: BreakerPolicy) -> CircuitBreaker:
        breaker = self._breakers.get(name)
        if breaker is not None and breaker.policy == policy:
            return breaker
        with self._lock:
            breaker = self._breakers.get(name)
            if breaker is None or breaker.policy != policy:
                breaker = CircuitBreaker(name, policy, self._clock)
                self._breakers[name] = breaker
            return breaker

    def peek(self, name: str) -> CircuitBreaker | None:
        """The breaker of ``name`` if one exists (for status pages and tests)."""
        return self._breakers.get(name)
