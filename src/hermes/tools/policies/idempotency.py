"""Idempotency keys: what makes a call's key, the per-key locks of one process, and the
in-process records a bare executor keeps its keys in.

The records protocol and its contract are in :mod:`hermes.tools.pipeline.idempotency_records`
(beside the step that uses them); the durable SQLite records are in
``hermes.storage.sqlite.idempotency`` (an agent gets them from its composition root).
:class:`LocalIdempotencyRecords` is the default of a :class:`~hermes.tools.pipeline.ToolExecutor`
built without records: exactly-once within this process, gone when it ends (not durable, not
shared with other processes).

Within one process, a per-key asyncio lock (:class:`KeyLocks`) makes same-key callers queue
instead of polling the records.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from time import time as wall_clock

from hermes.observe import get_logger

logger = get_logger("tools")

__all__ = ["KeyLocks", "LocalIdempotencyRecords", "idempotency_key", "new_owner"]

#: How often a caller re-reads a key another owner has claimed (seconds).
POLL_S = 0.05


def idempotency_key(user_id: str | None, arguments_json: str) -> str:
    """The key of a call: a hash of the user and the canonical JSON of the key's arguments.

    The user is part of it: the same order id sent by two users must not hand one of them the
    other's stored result.
    """
    user = user_id or ""
    # The length prefix keeps (user, arguments) pairs apart whatever characters they hold.
    return hashlib.sha256(f"{len(user)}:{user}:{arguments_json}".encode()).hexdigest()


def new_owner() -> str:
    """A token naming one claim (the process id helps reading the table by hand)."""
    return f"{os.getpid()}-{os.urandom(6).hex()}"


class _Slot:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class KeyLocks:
    """Per-key asyncio locks that exist only while someone holds or waits for them.

    Keys are scoped by event loop, so several loops (threads) can share one instance.
    """

    __slots__ = ("_guard", "_slots")

    def __init__(self) -> None:
        self._slots: dict[tuple[int, Hashable], _Slot] = {}
        self._guard = threading.Lock()

    def __len__(self) -> int:
        return len(self._slots)

    @asynccontextmanager
    async def hold(self, key: Hashable) -> AsyncIterator[None]:
        scoped = (id(asyncio.get_running_loop()), key)
        with self._guard:
            slot = self._slots.get(scoped)
            if slot is None:
                slot = self._slots[scoped] = _Slot()
            slot.users += 1
        try:
            async with slot.lock:
                yield
        finally:
            with self._guard:
                slot.users -= 1
                if slot.users == 0:
                    del self._slots[scoped]


@dataclass(slots=True)
class _Record:
    state: str  # "pending" | "done"
    owner: str
    result: str | None
    expires_at: float


class LocalIdempotencyRecords:
    """In-process idempotency records (the protocol's contract, without durability): the
    default of an executor built without records (``ToolExecutor(registry)``,
    ``execute_tool_call``).

    Exactly-once holds among the coroutines and threads of this process; another process
    sees none of it, and everything is gone when the process ends — an agent gets durable
    records from its composition root instead. ``clock`` gives wall-clock seconds (injectable
    for tests). Expired records are dropped every ``purge_every`` changes, so the table stays
    bounded by the live keys.
    """

    def __init__(self, *, clock: Callable[[], float] = wall_clock, purge_every: int = 1024):
        self.clock = clock
        self._records: dict[tuple[str, str], _Record] = {}
        self._lock = threading.Lock()
        self._purge_every = purge_every
        self._changes = 0
        self._warned = False

    def __len__(self) -> int:
        return len(self._records)

    async def claim(self, tool: str, key: str, *, owner: str, lease: float) -> str | None:
        if not self._warned:  # once: keys kept here do not survive the process
            self._warned = True
            logger.warning(
                "idempotency_in_process",
                tool=tool,
                reason="this executor keeps idempotency keys in this process only; build it "
                "with durable records (ToolExecutor(idempotency=...)) or run the tool through "
                "an Agent, whose keys live in idempotency.db",
            )
        while True:
            now = self.clock()
            with self._lock:
                held = self._records.get((tool, key))
                if held is None or held.expires_at <= now:
                    self._records[(tool, key)] = _Record("pending", owner, None, now + lease)
                    self._changed(now)
                    return None
                if held.state == "done":
                    return str(held.result)
                lease_end = held.expires_at
            await asyncio.sleep(min(POLL_S, max(0.001, lease_end - now)))

    async def complete(
        self, tool: str, key: str, *, owner: str, result_json: str, ttl: float
    ) -> bool:
        return self._complete(tool, key, owner, result_json, ttl)

    async def release(self, tool: str, key: str, *, owner: str) -> None:
        self._release(tool, key, owner)

    def complete_soon(
        self, tool: str, key: str, *, owner: str, result_json: str, ttl: float
    ) -> None:
        self._complete(tool, key, owner, result_json, ttl)

    def release_soon(self, tool: str, key: str, *, owner: str) -> None:
        self._release(tool, key, owner)

    def clear(self) -> None:
        """Forget every record (what the end of the process does)."""
        with self._lock:
            self._records.clear()

    def _complete(self, tool: str, key: str, owner: str, result_json: str, ttl: float) -> bool:
        now = self.clock()
        with self._lock:
            held = self._records.get((tool, key))
            if held is None or held.state != "pending" or held.owner != owner:
                return False
            self._records[(tool, key)] = _Record("done", owner, result_json, now + ttl)
            self._changed(now)
            return True

    def _release(self, tool: str, key: str, owner: str) -> None:
        with self._lock:
            held = self._records.get((tool, key))
            if held is not None and held.state == "pending" and held.owner == owner:
                del self._records[(tool, key)]

    def _changed(self, now: float) -> None:
        """Count a change (holding the lock); every ``purge_every``, drop what has expired."""
        self._changes += 1
        if self._changes % self._purge_every == 0:
            expired = [k for k, r in self._records.items() if r.expires_at <= now]
            for k in expired:
                del self._records[k]
