"""One asyncio lock per session: two turns of one session never interleave, while turns of
different sessions run in parallel (issue 2 §4). Entries are dropped when nobody holds or waits
for them, so the map does not grow with the number of sessions ever seen.

These locks serialize turns inside one process; several workers sharing a store need a shared
lock (Redis), which the scale-out backends provide behind the same ``hold`` interface.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from hermes.errors import SessionBusyError


@dataclass(slots=True)
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class SessionLocks:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str, *, wait: bool = True) -> AsyncIterator[None]:
        """Hold the session's lock; with ``wait=False`` raise ``SessionBusyError`` if taken.

        Waiters are served first-come first-served, so a message that arrives while a turn
        runs is queued, never lost.
        """
        entry = self._entries.get(session_id)
        if entry is None:
            entry = self._entries[session_id] = _Entry()
        if not wait and entry.lock.locked():
            raise SessionBusyError(f"session '{session_id}' is busy with another turn")
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                self._entries.pop(session_id, None)

    def busy(self, session_id: str) -> bool:
        entry = self._entries.get(session_id)
        return entry is not None and entry.lock.locked()

    def __len__(self) -> int:
        return len(self._entries)
