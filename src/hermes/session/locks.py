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

Implementations (``hermes.session.open.open_locks`` picks one for a store):

- :class:`FileSessionLocks` — an OS file lock (``flock``) on one file per session beside a
  SQLite database (``<db>.locks/<session_id>.lock``). The kernel drops the lock the moment its
  process dies (``kill -9`` included), so a claim never outlives its owner: a session found in a
  working state under a fresh claim was left by a dead turn and is repaired at once.
- :class:`LocalSessionLocks` — one ``asyncio.Lock`` per session, for a ``:memory:`` store (no
  other process can reach it) or a ``Store`` object handed in (other processes may use it: such
  claims say so with ``cross_process=False`` and recovery keeps its time rule).
- A fenced Redis lease (scale-out, a later backend) implements the same protocol: ``SET NX PX``
  with a renewal task, the token from ``INCR``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import math
import os
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from hermes.errors import SessionBusyError

#: Seconds between two tries of a file lock another process holds (first try, then doubling).
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.05
#: Bytes of the token written in a lock file (decimal, padded: always the same length).
_TOKEN_WIDTH = 20


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


@dataclass(slots=True)
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class _LocalQueue:
    """One asyncio lock per session, dropped when nobody holds or waits for it (so the map does
    not grow with the number of sessions ever seen); the in-process half of every lock here."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    @contextlib.asynccontextmanager
    async def hold(self, session_id: str, wait: float) -> AsyncIterator[None]:
        entry = self._entries.get(session_id)
        if entry is None:
            entry = self._entries[session_id] = _Entry()
        if wait <= 0 and entry.lock.locked():
            raise busy_error(session_id, 0.0)
        entry.users += 1
        try:
            if math.isinf(wait) or wait <= 0:
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


class _Tokens:
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
        self._queue = _LocalQueue()
        self._tokens = _Tokens()
        self.cross_process = cross_process

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *, wait: float) -> AsyncIterator[SessionClaim]:
        async with self._queue.hold(session_id, wait):
            yield SessionClaim(session_id, self._tokens.next(), self.cross_process)

    def busy(self, session_id: str) -> bool:
        return self._queue.busy(session_id)

    def __len__(self) -> int:
        return len(self._queue)


class FileSessionLocks:
    """Claims as OS file locks: ``flock(LOCK_EX)`` on ``<directory>/<session_id>.lock``.

    Why ``flock`` on one file per session rather than byte ranges of one file: ``flock`` locks
    belong to the open file (not the process, as POSIX ``fcntl`` record locks do, which a process
    silently loses when it closes *any* descriptor of the file), work alike on Linux and macOS,
    and need no hashing of ids onto ranges. The cost is one small file per session ever claimed;
    they are never deleted (deleting a lock file races with a process about to lock it).

    Inside one process a claim first takes the session's asyncio lock (waiters in order, and no
    event-loop time spent polling a lock the same process holds), then the file lock, polled
    without blocking (``LOCK_NB``: never a thread stuck in ``flock`` after the wait ended) with
    a short backoff. The lock file holds the last token issued, so tokens rise across processes.
    Session ids (``[A-Za-z0-9._:@-]``, starting with a letter or digit) are safe file names; on a
    case-insensitive file system two ids differing only in case share a lock (they wait for each
    other; nothing is ever run unlocked).
    """

    cross_process = True

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._queue = _LocalQueue()
        self._tokens = _Tokens()
        self._made = False

    def path_for(self, session_id: str) -> Path:
        """The lock file of ``session_id``."""
        return self.directory / f"{session_id}.lock"

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *, wait: float) -> AsyncIterator[SessionClaim]:
        started = time.monotonic()
        async with self._queue.hold(session_id, wait):
            left = wait - (time.monotonic() - started)
            fd = await self._lock_file(session_id, left, wait)
            try:
                token = self._tokens.next(_read_token(fd) + 1)
                os.pwrite(fd, str(token).rjust(_TOKEN_WIDTH).encode("ascii"), 0)
                yield SessionClaim(session_id, token, True)
            finally:
                # Closing the descriptor releases the lock (and so does the process's death).
                os.close(fd)

    async def _lock_file(self, session_id: str, left: float, wait: float) -> int:
        """An open descriptor of the session's lock file, locked; ``SessionBusyError`` when
        another process still holds it after ``left`` seconds."""
        fd = self._open(session_id)
        deadline = time.monotonic() + max(0.0, left)
        pause = _POLL_FIRST_S
        try:
            while True:
                try:
                    # LOCK_NB never waits: the event loop is not blocked, and a wait that ends
                    # leaves no thread behind that could take the lock later.
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    pass
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise busy_error(session_id, wait, elsewhere=True)
                await asyncio.sleep(min(pause, remaining))
                pause = min(pause * 2, _POLL_MAX_S)
        except BaseException:
            os.close(fd)
            raise

    def _open(self, session_id: str) -> int:
        path = self.path_for(session_id)
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:
            if self._made:
                raise
        # First claim: the directory may not exist yet (it sits beside the database).
        self.directory.mkdir(parents=True, exist_ok=True)
        self._made = True
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)

    def busy(self, session_id: str) -> bool:
        return self._queue.busy(session_id)

    def __len__(self) -> int:
        return len(self._queue)


def _read_token(fd: int) -> int:
    """The last token written in a lock file (0 for a new one, or one holding no number)."""
    text = os.pread(fd, _TOKEN_WIDTH + 1, 0).decode("ascii", errors="replace").strip()
    return int(text) if text.isdigit() else 0


def busy_error(session_id: str, waited: float, *, elsewhere: bool = False) -> SessionBusyError:
    """The one sentence a person reads when a session stays busy (English / Chinese)."""
    where = "in another process" if elsewhere else "already"
    after = f" after waiting {waited:g} s" if waited > 0 and not math.isinf(waited) else ""
    return SessionBusyError(
        f"session '{session_id}' is busy with a turn running {where}{after}; try again when it "
        f"has finished / 会话 '{session_id}' 正在处理另一轮对话，请等它结束后再试",
        session_id=session_id,
    )
