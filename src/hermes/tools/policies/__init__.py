"""Per-tool execution policies (declared with ``@tool(...)``) and the state they keep.

- :class:`RetryPolicy` — retries with exponential backoff and jitter (``retry=``).
- :class:`BreakerPolicy` — a circuit breaker per tool name (``circuit_breaker=``).
- :class:`ResultCache` — reuse a recent identical successful result (``cache_ttl=``).
- :class:`IdempotencyStore` — same key, same stored result, durable (``idempotency_key=``).

Breakers, the cache and the idempotency files live in a :class:`PolicyState`. An executor uses
the process-wide :data:`DEFAULT_POLICY_STATE` unless it is built with another one
(``ToolExecutor(registry, state=...)``: tests use that for fake clocks and isolation); its
steps get their part of it (breakers, cache, idempotency records) when they are built.
"""

from __future__ import annotations

import os
import threading
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
from hermes.tools.policies.idempotency import IdempotencyStore, KeyLocks, idempotency_key
from hermes.tools.policies.retry import RetryPolicy, is_retryable

__all__ = [
    "DEFAULT_POLICY_STATE",
    "BreakerBoard",
    "BreakerPolicy",
    "BreakerState",
    "CircuitBreaker",
    "IdempotencyStore",
    "KeyLocks",
    "PolicyState",
    "ResultCache",
    "RetryPolicy",
    "canonical_json",
    "counts_as_failure",
    "idempotency_key",
    "is_retryable",
]


class PolicyState:
    """Breakers, the result cache, per-key locks and the open idempotency files.

    ``clock`` (monotonic seconds) drives breakers and the cache; ``wall_clock`` (epoch
    seconds) drives idempotency expiry, which must mean the same after a restart.
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
        self._stores: dict[str, IdempotencyStore] = {}
        self._stores_lock = threading.Lock()

    def idempotency_store(self, path: str | os.PathLike[str]) -> IdempotencyStore:
        """The store of the file at ``path`` (one per file; opened on first use)."""
        key = os.fspath(path)
        store = self._stores.get(key)
        if store is None:
            with self._stores_lock:
                store = self._stores.get(key)
                if store is None:
                    store = IdempotencyStore(key, clock=self.wall_clock)
                    self._stores[key] = store
        return store

    async def close(self) -> None:
        """Close the idempotency files (what a process exit does); the state stays usable —
        the next call opens them again."""
        with self._stores_lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            await store.close()

    def close_sync(self) -> None:
        """:meth:`close` outside an event loop."""
        with self._stores_lock:
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close_sync()


#: The state of every executor built without one (see the module docstring).
DEFAULT_POLICY_STATE = PolicyState()
