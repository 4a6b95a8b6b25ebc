"""Who may run a turn of a session right now: the ``SessionLocks`` protocol (DESIGN "Scale-out").

A turn first *claims* its session; only the claimant reads the state, stores the user's message
and finishes the turn, so two turns of one session never interleave (seed 001 §2.3) — in one
process, across processes on one SQLite file, and (later) across machines::

    async with locks.claim("session-0001", wait=30.0) as claim:
        ...  # every write of the turn carries claim.token (the store's fence)

Each claim carries a **fencing token**: an integer that grows with every claim of the session.
Every write of a turn passes it to ``Store.append(fence=...)``; the store records the highest
token it has seen and refuses a write with a lower one (``ClaimLostError``). A claimant that
lost its claim without knowing it (a Redis lease that expired while its process was paused, a
writer that took no lock at all) can therefore never write over a newer turn's work.

Implementations (``hermes.storage.open.open_locks`` picks one for a store):

- ``FileSessionLocks`` (``hermes.storage.sqlite.session_locks``) — an OS file lock beside a
  SQLite database: one byte per session of ``<db>.lock`` (Linux open-file-description locks),
  else ``flock`` on one file per session in ``<db>.locks/``. The kernel drops the lock the
  moment its process dies (``kill -9`` included), so a claim never outlives its owner: a
  session found in a working state under a fresh claim was left by a dead turn and is repaired
  at once.
- :class:`LocalSessionLocks` — one ``asyncio.Lock`` per session, for a ``:memory:`` store (no
  other process can reach it) or a ``Store`` object handed in (other processes may use it: such
  claims say so with ``cross_process=False`` and recovery keeps its time rule).
- A fenced Redis lease (scale-out, a later backend in ``storage/``) implements the same
  protocol: ``SET NX PX`` with a renewal task, the token from ``INCR``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from hermes.errors import SessionBusyError


@dataclass(frozen=True, slots=True)
class SessionClaim:
    """The right to run one turn of ``session_id`` while the claim is held.

    ``token`` is the fencing token (larger than every earlier claim's of this session).
    ``cross_process`` is True when the claim excludes the turns of every process using the
    store (an OS file lock, a lease): a session found in a working state under it was left by a
    turn whose process died, and is repaired at once. False (a ``Store`` object shared in ways
    the locks cannot see) keeps the older rule: a working state younger than the turn timeout
    may belong to a live turn elsewhere.
    """

    session_id: str
    token: int
    cross_process: bool


@runtime_checkable
class SessionLocks(Protocol):
    """Claims on sessions: at most one holder per session id at a time."""

    def claim(self, session_id: str, *, wait: float) -> AbstractAsyncContextManager[SessionClaim]:
        """Hold ``session_id`` for the ``async with`` block.

        Waits at most ``wait`` seconds (``0``: not at all; ``math.inf``: until free) for a
        holder to finish, then raises ``SessionBusyError``. Waiters of one process are served
        first-come first-served, so a message that arrives while a turn runs is queued.
        """
        ...

    def busy(self, session_id: str) -> bool:
        """Whether this object's process holds or waits for a claim on ``session_id``."""
        ...

    def close(self) -> None:
        """Release what the locks keep open (files, connections); no claim may be held."""
        ...


@dataclass(slots=True)
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class LocalQueue:
    """One asyncio lock per session, dropped when nobody holds or waits for it (so the map does
    not grow with the number of sessions ever seen); the in-process half of every lock
    (``LocalSessionLocks`` and the OS file locks of ``hermes.storage.sqlite.session_locks``)."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str, wait: float) -> AsyncIterator[None]:
        entry = self._entries.get(session_id)
        if entry is None:
            entry = self._entries[session_id] = _Entry()
        if wait <= 0 and entry.users > 0:  # held, or about to be by a waiter ahead
            raise busy_error(session_id, 0.0)
        # Nobody else here holds or waits for it: taken at once, without a timer (the common
        # case, and a timer is half the cost of an uncontended claim).
        free = entry.users == 0
        entry.users += 1
        try:
            if free or math.isinf(wait) or wait <= 0:
                await entry.lock.acquire()
            else:
                try:
                    async with asyncio.timeout(wait):
                        await entry.lock.acquire()
                except TimeoutError:
                    raise busy_error(session_id, wait) from None
            try:
                yield
            finally:
                entry.lock.release()
        finally:
            entry.users -= 1
            if entry.users == 0:
                self._entries.pop(session_id, None)

    def busy(self, session_id: str) -> bool:
        entry = self._entries.get(session_id)
        return entry is not None and entry.lock.locked()

    def __len__(self) -> int:
        return len(self._entries)


class ClaimTokens:
    """Fencing tokens of one process: wall-clock nanoseconds, never repeating nor going back.

    Wall-clock based so that tokens of *different* processes on a lockless shared store still
    order their turns (the newest claim wins); the counter keeps them rising if the clock steps
    back."""

    def __init__(self) -> None:
        self._last = 0

    def next(self, at_least: int = 0) -> int:
        self._last = max(time.time_ns(), self._last + 1, at_least)
        return self._last


class LocalSessionLocks:
    """In-process claims: one ``asyncio.Lock`` per session (turns of different sessions run in
    parallel; waiters are served in order; idle entries are dropped).

    ``cross_process`` says whether the store is private to this process (``:memory:``): then a
    working state found under a claim is a dead turn's, as with file locks.
    """

    def __init__(self, *, cross_process: bool = False) -> None:
        self._queue = LocalQueue()
        self._tokens = ClaimTokens()
        self.cross_process = cross_process

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *, wait: float) -> AsyncIterator[SessionClaim]:
        async with self._queue.hold(session_id, wait):
            yield SessionClaim(session_id, self._tokens.next(), self.cross_process)

    def busy(self, session_id: str) -> bool:
        return self._queue.busy(session_id)

    def close(self) -> None:
        """Nothing to release."""

    def __len__(self) -> int:
        return len(self._queue)


def busy_error(session_id: str, waited: float, *, elsewhere: bool = False) -> SessionBusyError:
    """The one sentence a person reads when a session stays busy (English / Chinese)."""
    where = "in another process" if elsewhere else "already"
    after = f" after waiting {waited:g} s" if waited > 0 and not math.isinf(waited) else ""
    return SessionBusyError(
        f"session '{session_id}' is busy with a turn running {where}{after}; try again when it "
        f"has finished / 会话 '{session_id}' 正在处理另一轮对话，请等它结束后再试",
        session_id=session_id,
    )
