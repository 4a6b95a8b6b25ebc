"""The result cache: reuse a recent identical successful call of a read-only tool (``cache_ttl``).

In-process, bounded (least recently used entries go first), keyed by the tool name, the user
and the canonical JSON of the validated arguments — never shared between users, since a
tool may answer each user differently. Entries hold the output as JSON text, so a caller that
mutates a returned output cannot change what the next hit returns.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["CacheKey", "CachedResult", "ResultCache", "canonical_json"]

#: (tool name, id of its function, user id or "", canonical JSON of the arguments)
CacheKey = tuple[str, int, str, str]


def canonical_json(value: Any) -> str:
    """One text per value: sorted keys, no spaces, non-JSON leaves as ``str`` (for keys)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class CachedResult(NamedTuple):
    expires_at: float
    output_json: str
    summary: str | None

    def output(self) -> Any:
        """A fresh copy of the stored output."""
        return json.loads(self.output_json)


class ResultCache:
    """At most ``max_entries`` results, each valid for the TTL it was stored with.

    ``clock`` (monotonic seconds) is injectable for tests. Thread-safe.
    """

    __slots__ = ("_clock", "_entries", "_lock", "max_entries")

    def __init__(self, max_entries: int = 1024, clock: Callable[[], float] = time.monotonic):
        if max_entries < 1:
            raise ValueError("ResultCache.max_entries must be at least 1")
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[CacheKey, CachedResult] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> CachedResult | None:
        """The live entry for ``key`` (and mark it recently used), or ``None``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.expires_at <= self._clock():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def put(self, key: CacheKey, output: Any, summary: str | None, ttl: float) -> None:
        """Store a JSON-safe ``output`` for ``ttl`` seconds, evicting the oldest if full."""
        text = json.dumps(output, ensure_ascii=False, default=str)
        entry = CachedResult(self._clock() + ttl, text, summary)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
