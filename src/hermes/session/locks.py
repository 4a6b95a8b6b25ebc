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

- :class:`FileSessionLocks` — an OS file lock beside a SQLite database: one byte per session of
  ``<db>.lock`` (Linux open-file-description locks), else ``flock`` on one file per session in
  ``<db>.locks/``. The kernel drops the lock the moment its process dies (``kill -9`` included),
  so a claim never outlives its owner: a session found in a working state under a fresh claim
  was left by a dead turn and is repaired at once.
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
import hashlib
import math
import os
import struct
import sys
import time
from collections.abc import AsyncIterator, Callable
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

    def close(self) -> None:
        """Release what the locks keep open (files, connections); no claim may be held."""
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

    def close(self) -> None:
        """Nothing to release."""

    def __len__(self) -> int:
        return len(self._queue)


#: Linux's open-file-description record locks (``F_OFD_SETLK``, Linux >= 3.15): byte-range locks
#: that belong to the open file, like ``flock``, not to the process, like POSIX ``fcntl`` locks.
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None) if sys.platform == "linux" else None
#: ``struct flock`` (short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid) in
#: the platform's native layout, padded: the kernel reads its own size of it.
_FLOCK = struct.Struct("@hhqqi")
_FLOCK_PAD = b"\0" * 8


class FileSessionLocks:
    """Claims as OS file locks beside a SQLite database ``db_path``.

    On Linux: one byte of ``<db>.lock`` per session (its offset a 62-bit hash of the id), locked
    with ``F_OFD_SETLK``. Elsewhere (or ``ranges=False``): ``flock`` on one file per session,
    ``<db>.locks/<session_id>.lock``. Both kinds belong to the *open file*, so two ``Agent``s of
    one process exclude each other as two processes do (POSIX ``fcntl`` record locks belong to
    the process, and a process silently loses them all when it closes any descriptor of the
    file: not used). Both die with their process, ``kill -9`` included. Why byte ranges where
    they exist: a session's first turn would otherwise create a file (~0.1–0.25 ms on ext4, more
    than the rest of the claim), and a directory of one file per session ever seen grows
    without bound. Two session ids hashing onto one byte would wait for each other (about one
    chance in 10^18 per pair; nothing ever runs unlocked).

    Inside one process a claim first takes the session's asyncio lock (waiters in order, and no
    event-loop time spent polling a lock the same process holds), then the OS lock, tried
    without blocking (never a thread stuck in the kernel after the wait ended) every 5–50 ms.
    Tokens: wall-clock nanoseconds, rising within the process; with per-session files also above
    the last token written in the file. (With byte ranges, two processes' turns are ordered by
    the clock: a clock stepped back between two turns in different processes makes the later
    one refused as busy, never interleaved, until the clock has caught up.)
    """

    cross_process = True

    def __init__(self, db_path: str | os.PathLike[str], *, ranges: bool | None = None) -> None:
        base = os.fspath(db_path)
        self.ranges = _OFD_SETLK is not None if ranges is None else ranges
        if self.ranges and _OFD_SETLK is None:
            raise ValueError("byte-range session locks need Linux (F_OFD_SETLK)")
        #: The lock file (byte ranges) or the directory of per-session lock files.
        self.path = Path(base + (".lock" if self.ranges else ".locks"))
        self._queue = _LocalQueue()
        self._fd: int | None = None  # the one descriptor of the byte-range lock file

    @contextlib.asynccontextmanager
    async def claim(self, session_id: str, *, wait: float) -> AsyncIterator[SessionClaim]:
        started = time.monotonic()
        async with self._queue.hold(session_id, wait):
            deadline = started + wait if wait > 0 else started
            if self.ranges:
                offset = _offset(session_id)
                fd = self._range_file()
                await _poll(lambda: _lock_range(fd, offset), session_id, deadline, wait)
                try:
                    yield SessionClaim(session_id, _TOKENS.next(), True)
                finally:
                    _unlock_range(fd, offset)
            else:
                fd = self._session_file(session_id)
                try:
                    await _poll(lambda: _flock(fd), session_id, deadline, wait)
                    token = _TOKENS.next(_read_token(fd) + 1)
                    os.pwrite(fd, str(token).rjust(_TOKEN_WIDTH).encode("ascii"), 0)
                    yield SessionClaim(session_id, token, True)
                finally:
                    os.close(fd)  # releases the flock (as does the process's death)

    def _range_file(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_CLOEXEC: a program a tool runs must not inherit (and so keep) the locks.
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        return self._fd

    def _session_file(self, session_id: str) -> int:
        path = self.path / f"{session_id}.lock"
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        except FileNotFoundError:
            # First claim: the directory may not exist yet (it sits beside the database).
            self.path.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)

    def busy(self, session_id: str) -> bool:
        return self._queue.busy(session_id)

    def close(self) -> None:
        """Close the lock file (no claim may be held: closing it would release them)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __len__(self) -> int:
        return len(self._queue)


#: One token source per process, shared by every lock object (two Agents on one file too).
_TOKENS = _Tokens()


def _offset(session_id: str) -> int:
    """The byte of the range lock file that stands for ``session_id`` (below 2**62)."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def _lock_range(fd: int, offset: int) -> bool:
    """Try to lock one byte for writing; False if another open file holds it."""
    assert _OFD_SETLK is not None
    try:
        fcntl.fcntl(
            fd, _OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0) + _FLOCK_PAD
        )
    except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: held elsewhere
        return False
    return True


def _unlock_range(fd: int, offset: int) -> None:
    assert _OFD_SETLK is not None
    fcntl.fcntl(fd, _OFD_SETLK, _FLOCK.pack(fcntl.F_UNLCK, os.SEEK_SET, offset, 1, 0) + _FLOCK_PAD)


def _flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


async def _poll(attempt: Callable[[], bool], session_id: str, deadline: float, wait: float) -> None:
    """Try ``attempt`` until it succeeds; ``SessionBusyError`` once ``deadline`` has passed."""
    pause = _POLL_FIRST_S
    while not attempt():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise busy_error(session_id, wait, elsewhere=True)
        await asyncio.sleep(min(pause, remaining))
        pause = min(pause * 2, _POLL_MAX_S)


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
