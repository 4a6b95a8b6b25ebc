"""How an MCP connection retries: exponential backoff with jitter, behind a circuit breaker.

A server that cannot be reached (at start, or after its connection was lost) is retried in the
background, waiting ``base_delay · 2^(n-1)`` seconds (at most ``max_delay``) after ``n`` failed
attempts in a row — 0.5 s, 1 s, 2 s … 30 s by default — each wait jittered down to between half
and all of it (:func:`hermes.backoff.retry_delay`, the model client's schedule too) so that
several Hermes processes restarted together do not reconnect in lockstep.

After ``breaker_failures`` consecutive failed connects the server's circuit opens (the
breaker of :mod:`hermes.tools.policies.breaker`, one per connection): retries slow to one
every ``breaker_cooldown`` seconds, each a single half-open attempt whose success closes the
circuit again.

A connection counts as a success only once it has stayed up ``stable_after`` seconds: a server
that answers ``initialize`` and the tool listing and then exits (a crash loop) would otherwise
look healthy at every attempt and be restarted forever. A session lost sooner counts as a
failed connect (backoff grows, the breaker counts it); one lost later is retried after the
shortest wait (``base_delay``, jittered).

The numbers are not part of ``ServerConfig``: they are runtime behaviour, the same for every
server, and tests shrink them through :class:`ReconnectPolicy`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from hermes.backoff import retry_delay
from hermes.tools.policies.breaker import BreakerPolicy

__all__ = ["ReconnectPolicy"]


@dataclass(frozen=True, slots=True)
class ReconnectPolicy:
    """Backoff and circuit-breaker numbers of the connections of one :class:`McpManager`."""

    base_delay: float = 0.5
    max_delay: float = 30.0
    breaker_failures: int = 5
    breaker_cooldown: float = 60.0
    #: Seconds a session must stay up before it counts as a successful connect.
    stable_after: float = 10.0
    #: Source of randomness for the jitter, in ``[0, 1)`` (replaceable for tests).
    random: Callable[[], float] = field(default=random.random, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("base_delay", "max_delay", "stable_after"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"ReconnectPolicy.{name} must be a positive number of seconds")
        if self.max_delay < self.base_delay:
            raise ValueError("ReconnectPolicy.max_delay must not be below base_delay")
        # BreakerPolicy checks breaker_failures and breaker_cooldown.
        self.breaker()

    def breaker(self) -> BreakerPolicy:
        return BreakerPolicy(failures=self.breaker_failures, reset_after=self.breaker_cooldown)

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failed attempts: ``base_delay ·
        2^(failures-1)``, at most ``max_delay``, jittered to between half and all of it.
        ``0`` (the loss of a stable session) waits as after one failure.

        Computed here rather than by tenacity's ``wait_*`` objects: those read the attempt
        number from the ``RetryCallState`` of a running ``Retrying`` loop, and this loop also
        waits on a stop event and a breaker, which tenacity's loop cannot.
        """
        return retry_delay(failures, base=self.base_delay, cap=self.max_delay, rng=self.random)
