"""Request limits of ``hermes serve`` (DESIGN.md, HTTP, "Errors": 413 and 429).

:class:`RateLimiter` is the protocol (a Redis implementation shares limits between workers at
scale, DESIGN.md "Scale-out"); :class:`InProcessRateLimiter` is the one-process GCRA
implementation. Both answer "may this caller make one more request now, else in how long".
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Decision:
    """One rate-limit decision: ``allowed``, else ``retry_after`` seconds (>= 1) to wait."""

    allowed: bool
    retry_after: int = 0


class RateLimiter(Protocol):
    """Requests per scope (a key, or a client address) and minute."""

    def hit(self, scope: str) -> Decision:
        """Count one request of ``scope`` when it is allowed; say when to retry otherwise."""
        ...


class InProcessRateLimiter:
    """GCRA (the generic cell rate algorithm): ``per_minute`` requests in any minute, a burst of
    up to ``per_minute`` included, refilled evenly. One theoretical arrival time per scope;
    scopes whose time has passed are dropped, so memory stays bounded by the active callers."""

    def __init__(self, per_minute: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if per_minute < 1:
            raise ValueError(f"per_minute must be >= 1, got {per_minute}")
        self._interval = 60.0 / per_minute
        self._tolerance = 60.0 - self._interval
        self._clock = clock
        self._tat: dict[str, float] = {}
        self._lock = threading.Lock()
        self._next_prune = 0.0

    def hit(self, scope: str) -> Decision:
        with self._lock:
            now = self._clock()
            self._prune(now)
            tat = max(self._tat.get(scope, now), now)
            allowed_at = tat - self._tolerance
            if now < allowed_at:
                return Decision(False, max(1, math.ceil(allowed_at - now)))
            self._tat[scope] = tat + self._interval
            return Decision(True)

    def _prune(self, now: float) -> None:
        if now < self._next_prune:
            return
        self._next_prune = now + 60.0
        for scope in [s for s, tat in self._tat.items() if tat <= now]:
            del self._tat[scope]
