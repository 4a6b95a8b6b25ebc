"""L1: the in-process cache of the memory tiers (seed 000 §2.4).

Holds what a turn needs again soon and may lose on a restart: session state, working memory,
unconfirmed tool results and recently reused tool results. Values are keyed by a
*namespace* (one of the constants below, or any string) and a key, so ``clear("working")``
empties one kind without touching the others. Every entry expires after its TTL (default
600 s, seed 000 §2.4: "the last 10 minutes") and the cache holds at most ``max_entries``;
when full, the least recently used entry goes first.

Values are stored by reference: store immutable values (str, tuple, frozen dataclasses) or
copies, since a caller that mutates a returned value changes what the next ``get`` sees.

Why hand-written rather than ``cachetools.TLRUCache`` (cachetools 8, well kept, per-item TTL
with LRU eviction): it is not thread-safe, so every call would still need our lock, and it has
no per-namespace clear or hit counters; what is left — an ``OrderedDict`` with
``move_to_end`` — is the ~60 lines below, the same structure as
``hermes.tools.policies.cache.ResultCache``, and a get costs well under a microsecond
(``bench/memory_tiers.py``). A Redis-backed L1 for several workers (DESIGN "Scale-out") would
sit behind the same methods.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = [
    "DEFAULT_TTL_S",
    "SESSION_STATE",
    "TOOL_RESULTS",
    "UNCONFIRMED_RESULTS",
    "WORKING_MEMORY",
    "CacheStats",
    "MemoryCache",
]

#: Seconds an entry lives unless ``put`` says otherwise (seed 000 §2.4: ten minutes).
DEFAULT_TTL_S = 600.0

# The namespaces Hermes itself uses; any other string is a namespace too.
SESSION_STATE = "session_state"
WORKING_MEMORY = "working_memory"
#: Results waiting for a person's or a check's confirmation: never reused as cache answers.
UNCONFIRMED_RESULTS = "unconfirmed_results"
#: Reusable results of ``cache_ttl`` tools (written by ``hermes.memory.tiers``).
TOOL_RESULTS = "tool_results"


class _Entry(NamedTuple):
    expires_at: float
    value: Any


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters since the cache was made (or :meth:`MemoryCache.clear` of everything)."""

    entries: int
    hits: int
    misses: int
    expired: int
    evicted: int


class MemoryCache:
    """At most ``max_entries`` namespaced values, each alive for its TTL. Thread-safe.

    ``clock`` gives monotonic seconds (injectable for tests); ``default_ttl`` is the TTL of a
    ``put`` that names none.
    """

    __slots__ = (
        "_clock",
        "_entries",
        "_evicted",
        "_expired",
        "_hits",
        "_lock",
        "_misses",
        "default_ttl",
        "max_entries",
    )

    def __init__(
        self,
        max_entries: int = 10_000,
        *,
        default_ttl: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"MemoryCache.max_entries must be at least 1, got {max_entries}")
        _check_ttl(default_ttl)
        self.max_entries = max_entries
        self.default_ttl = default_ttl
        self._clock = clock
        self._entries: OrderedDict[tuple[str, Hashable], _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = self._misses = self._expired = self._evicted = 0

    def __len__(self) -> int:
        """Entries held, expired ones not yet dropped included."""
        return len(self._entries)

    def get(self, namespace: str, key: Hashable, default: Any = None) -> Any:
        """The live value of ``(namespace, key)`` — and it becomes the most recently used —
        or ``default``."""
        slot = (namespace, key)
        with self._lock:
            entry = self._entries.get(slot)
            if entry is None:
                self._misses += 1
                return default
            if entry.expires_at <= self._clock():
                del self._entries[slot]
                self._expired += 1
                self._misses += 1
                return default
            self._entries.move_to_end(slot)
            self._hits += 1
            return entry.value

    def put(self, namespace: str, key: Hashable, value: Any, ttl: float | None = None) -> None:
        """Store ``value`` for ``ttl`` seconds (default :attr:`default_ttl`); when the cache is
        full, the least recently used entry is dropped."""
        if ttl is None:
            ttl = self.default_ttl
        else:
            _check_ttl(ttl)
        slot = (namespace, key)
        with self._lock:
            self._entries[slot] = _Entry(self._clock() + ttl, value)
            self._entries.move_to_end(slot)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
                self._evicted += 1

    def pop(self, namespace: str, key: Hashable, default: Any = None) -> Any:
        """Remove ``(namespace, key)`` and return its live value, or ``default``."""
        with self._lock:
            entry = self._entries.pop((namespace, key), None)
            if entry is None or entry.expires_at <= self._clock():
                return default
            return entry.value

    def items(self, namespace: str) -> list[tuple[Hashable, Any]]:
        """The live ``(key, value)`` pairs of a namespace, least recently used first.

        Walks the whole cache (bounded by ``max_entries``): for listing, not for hot paths.
        """
        with self._lock:
            now = self._clock()
            return [
                (key, entry.value)
                for (space, key), entry in self._entries.items()
                if space == namespace and entry.expires_at > now
            ]

    def clear(self, namespace: str | None = None) -> int:
        """Drop a namespace's entries (all entries and the counters when ``None``); returns
        how many entries were dropped."""
        with self._lock:
            if namespace is None:
                dropped = len(self._entries)
                self._entries.clear()
                self._hits = self._misses = self._expired = self._evicted = 0
                return dropped
            doomed = [slot for slot in self._entries if slot[0] == namespace]
            for slot in doomed:
                del self._entries[slot]
            return len(doomed)

    def discard_where(self, namespace: str, predicate: Callable[[Hashable], bool]) -> int:
        """Drop the entries of ``namespace`` whose key satisfies ``predicate`` (e.g. all keys
        of one user when they ask to be forgotten); returns how many."""
        with self._lock:
            doomed = [slot for slot in self._entries if slot[0] == namespace and predicate(slot[1])]
            for slot in doomed:
                del self._entries[slot]
            return len(doomed)

    def purge_expired(self) -> int:
        """Drop every expired entry now (they are otherwise dropped when met); returns how
        many. Walks the whole cache: call it from upkeep, not per request."""
        with self._lock:
            now = self._clock()
            doomed = [slot for slot, entry in self._entries.items() if entry.expires_at <= now]
            for slot in doomed:
                del self._entries[slot]
            self._expired += len(doomed)
            return len(doomed)

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(
                len(self._entries), self._hits, self._misses, self._expired, self._evicted
            )

    def __iter__(self) -> Iterator[tuple[str, Hashable]]:
        """The ``(namespace, key)`` slots held, as a snapshot (expired ones included)."""
        with self._lock:
            return iter(list(self._entries))


def _check_ttl(ttl: float) -> None:
    # ``not ttl > 0`` also refuses NaN, which would make an entry that never expires.
    if not ttl > 0:
        raise ValueError(f"a cache TTL must be a positive number of seconds, got {ttl!r}")
