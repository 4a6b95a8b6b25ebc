"""Per-tool execution policies (declared with ``@tool(...)``) and the state they keep.

- :class:`RetryPolicy` — retries with exponential backoff and jitter (``retry=``).
- :class:`BreakerPolicy` — a circuit breaker per tool name (``circuit_breaker=``).
- :class:`ResultCache` — reuse a recent identical successful result (``cache_ttl=``).
- :class:`LocalIdempotencyRecords` — same key, same stored result (``idempotency_key=``), in
  this process; durable records come from the storage layer (the protocol:
  ``hermes.tools.pipeline.idempotency_records``).

Breakers, the cache, the per-key locks and the in-process idempotency records live in a
:class:`PolicyState`. An executor uses
the process-wide :data:`DEFAULT_POLICY_STATE` unless it is built with another one
(``ToolExecutor(registry, state=...)``: tests use that for fake clocks and isolation); its
steps get their part of it (breakers, cache, idempotency records) when they are built.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hermes.tools.policies.breaker import (
    BreakerBoard,
    BreakerPolicy,
    BreakerState,
    CircuitBreaker,
    counts_as_failure,
)
from hermes.tools.policies.cache import ResultCache, canonical_json
from hermes.tools.policies.idempotency import (
    KeyLocks,
    LocalIdempotencyRecords,
    idempotency_key,
    new_owner,
)
from hermes.tools.policies.retry import RetryPolicy, is_retryable

__all__ = [
    "DEFAULT_POLICY_STATE",
    "BreakerBoard",
    "BreakerPolicy",
    "BreakerState",
    "CircuitBreaker",
    "KeyLocks",
    "LocalIdempotencyRecords",
    "PolicyState",
    "ResultCache",
    "RetryPolicy",
    "canonical_json",
    "counts_as_failure",
    "idempotency_key",
    "is_retryable",
    "new_owner",
]


class PolicyState:
    """Breakers, the result cache, per-key locks and the in-process idempotency records.

    ``clock`` (monotonic seconds) drives breakers and the cache; ``wall_clock`` (epoch
    seconds) drives idempotency expiry, which must mean the same after a restart.
    ``idempotency`` is what an executor built without records keeps its keys in (in this
    process only; an agent's executor gets durable records instead).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        cache_entries: int = 1024,
    ) -> None:
        self.clock = clock
        self.wall_clock = wall_clock
        self.breakers = BreakerBoard(clock)
        self.cache = ResultCache(cache_entries, clock)
        self.key_locks = KeyLocks()
        self.idempotency = LocalIdempotencyRecords(clock=wall_clock)

    async def close(self) -> None:
        """Forget the in-process idempotency records (what a process exit does); the state
        stays usable. Records handed to an executor are their opener's to close."""
        self.idempotency.clear()

    def close_sync(self) -> None:
        """:meth:`close` outside an event loop."""
        self.idempotency.clear()


#: The state of every executor built without one (see the module docstring).
DEFAULT_POLICY_STATE = PolicyState()
